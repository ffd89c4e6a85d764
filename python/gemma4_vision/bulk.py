"""bulk.py - encode many images on a Dask distributed cluster into safetensors shards + a manifest.

    python3 -m gemma4_vision.bulk IMAGES... --model DIR --out DIR [--tokens N] [--bf16]
            [--math fast|precise|int8|int8-blocks]
            [--scheduler tcp://host:8786 | --workers N --threads-per-worker T] ...

    from gemma4_vision import bulk
    summary = bulk.encode(["photos/"], model="gemma-4-e4b-it", out="tokens/", tokens=280)
    ds = bulk.open_output("tokens/")          # the manifest; features memory-mapped on demand

How it works (Dask does all the scheduling; nothing here queues or talks to workers itself):
- The inputs (files, directories, globs, @lists) are expanded on the client into one ordered list,
  cut into shards of --shard-size images (by default the size follows the dataset and the
  cluster: auto_shard_size). Shard i always holds the same images for the same inputs and shard
  size, and a rerun into the same output reuses the size recorded there, so it finds the same
  shards.
- One Dask task per shard. A task encodes its images one after another and writes
  OUT/shard-NNNNN.safetensors atomically (temporary file + rename): one tensor per encoded image,
  and in the file's metadata the shard's manifest rows (encoded images and failed ones alike)
  and its key (a hash of the options and the shard's paths).
- Each worker process loads the model once: a worker plugin loads it when the worker starts (or
  joins, or is restarted), into a per-process cache that every task on that worker uses. Task
  threads of one worker share the model, each encoding on its own g4v context (Model's pool).
- A shard whose file exists with the right key is done: a rerun skips it without sending a task,
  and a task that finds its shard already written (its earlier attempt finished writing just
  before its worker died) returns at once. When a worker dies, the scheduler sends its tasks to
  another worker; since a shard appears only by an atomic rename of a complete file with a fixed
  name, a retried shard is neither lost nor written twice.
- A bad image becomes a manifest row with its status and error; the shard goes on.
- At the end the client reads the rows of every shard, in input order, into OUT/manifest.jsonl
  (one JSON object per image) and writes OUT/summary.json.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from . import safetensors as st

IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp", ".tif", ".tiff", ".npy")  # as `g4v encode`
SHARD_FMT = "shard-{:05d}.safetensors"
MANIFEST = "manifest.jsonl"
SUMMARY = "summary.json"
FORMAT_VERSION = 1
MAX_SHARD_SIZE = 64    # images per shard at most when the size is chosen (memory per task)
SHARDS_PER_SLOT = 4    # shards per task slot when the size is chosen (load balance)


class BulkError(Exception):
    """A bulk run could not start or could not finish (the message says what to do)."""


# ------------------------------------------------------------------------------------------------
# Inputs and plan

def expand_inputs(args: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Files, directories (their image files, sorted; not recursive, as `g4v encode`), globs
    (sorted, ** recursive) and @LIST files (one path per line, # comments) -> absolute paths, in
    the order given. A path that does not exist is kept: it becomes a failed manifest row."""
    out = []
    for arg in args:
        arg = os.fspath(arg)
        if arg.startswith("@"):
            try:
                with open(arg[1:], encoding="utf-8") as f:
                    lines = [ln.rstrip("\r\n") for ln in f]
            except OSError as e:
                raise BulkError(f"cannot read list {arg[1:]}: {e.strerror}") from None
            out += [os.path.abspath(ln) for ln in lines if ln.strip() and not ln.startswith("#")]
        elif os.path.isdir(arg):
            names = sorted(n for n in os.listdir(arg)
                           if not n.startswith(".") and n.lower().endswith(IMAGE_EXTS))
            out += [os.path.abspath(os.path.join(arg, n)) for n in names
                    if os.path.isfile(os.path.join(arg, n))]
        elif not os.path.exists(arg) and glob.has_magic(arg):
            hits = sorted(p for p in glob.glob(arg, recursive=True) if os.path.isfile(p))
            if not hits:
                raise BulkError(f"no files match {arg}")
            out += [os.path.abspath(p) for p in hits]
        else:
            out.append(os.path.abspath(arg))
    return out


def _options(model, tokens, bf16, math, exif):
    """The options that make a shard's key. The two modes bulk always had are the key's
    "precise" (so the keys of earlier runs, and their resume, stay the same); the INT8 modes add
    "math"."""
    o = {"model": os.path.abspath(os.fspath(model)), "tokens": int(tokens), "bf16": bool(bf16),
         "precise": math == "precise", "exif": bool(exif)}
    if math not in ("fast", "precise"):
        o["math"] = math
    return o


def _options_math(options):
    return options.get("math", "precise" if options["precise"] else "fast")


def plan_shards(paths: list[str], options: dict[str, Any],
                shard_size: int) -> list[dict[str, Any]]:
    """[{index, key, items: [(image index, path)]}]: deterministic for the same inputs."""
    shards = []
    for s, begin in enumerate(range(0, len(paths), shard_size)):
        items = [(i, paths[i]) for i in range(begin, min(begin + shard_size, len(paths)))]
        blob = json.dumps([FORMAT_VERSION, options, s, items], sort_keys=True).encode()
        shards.append({"index": s, "key": hashlib.sha256(blob).hexdigest(), "items": items})
    return shards


def auto_shard_size(n_images: int, slots: int) -> int:
    """The shard size when none is given: enough shards that every task slot of the cluster
    (workers x threads per worker) gets SHARDS_PER_SLOT of them, so no worker idles while
    another holds several shards and a slow shard at the end delays the run little; at most
    MAX_SHARD_SIZE images (a task holds its shard's features in memory), at least 1.
    41 images on 2 slots: 6 per shard, 7 shards; 100,000 images: 64."""
    n, slots = max(1, int(n_images)), max(1, int(slots))
    return max(1, min(MAX_SHARD_SIZE, -(-n // (slots * SHARDS_PER_SLOT))))


def previous_shard_size(out: str) -> int | None:
    """The shard size an earlier run wrote into out (summary.json, else the first shard's
    metadata; shards of runs before it was recorded: 64, the old default, or the first shard's
    row count when larger), or None when out holds no earlier run."""
    try:
        with open(os.path.join(out, SUMMARY), encoding="utf-8") as f:
            v = json.load(f).get("shard_size")
        if isinstance(v, int) and v >= 1:
            return v
    except (OSError, ValueError, AttributeError):
        pass
    try:
        header, _ = st.read_header(os.path.join(out, SHARD_FMT.format(0)))
        meta = header.get("__metadata__", {})
        if "g4v.shard_size" in meta:
            return max(1, int(meta["g4v.shard_size"]))
        return max(64, len(json.loads(meta["g4v.rows"])))
    except (OSError, ValueError, KeyError):
        return None


def shard_rows(path: str, key: str | None = None) -> list[dict[str, Any]] | None:
    """The manifest rows stored in a shard file, or None if it is missing, unreadable, or (with
    key) belongs to another plan."""
    try:
        header, _ = st.read_header(path)
        meta = header.get("__metadata__", {})
        if key is not None and meta.get("g4v.key") != key:
            return None
        return json.loads(meta["g4v.rows"])
    except (OSError, ValueError, KeyError):
        return None


# ------------------------------------------------------------------------------------------------
# Worker side: the per-process model cache, the plugin that fills it, and the shard task

_models: dict[str, Any] = {}
_models_lock = threading.Lock()
_model_loads: dict[str, int] = {}


def _model_spec(options, threads):
    return {"path": options["model"], "tokens": options["tokens"], "math": _options_math(options),
            "exif": options["exif"], "threads": int(threads)}


def _spec_name(spec):
    return "gemma4_vision-" + hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def _auto_threads():
    """Encode threads per task when not given: this machine's CPUs over the worker's task
    threads (a machine is assumed to run one worker; pass --encode-threads otherwise)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    try:
        from distributed import get_worker
        nthreads = get_worker().state.nthreads
    except Exception:
        nthreads = 1
    return max(1, cpus // max(1, nthreads))


def get_model(spec):
    """This process's Model for spec, loaded on first use (once per process, whichever task or
    plugin asks first)."""
    name = _spec_name(spec)
    with _models_lock:
        m = _models.get(name)
        if m is None:
            from .model import Model
            m = Model(spec["path"], threads=spec["threads"] or _auto_threads(),
                      math=spec["math"], budget=spec["tokens"], exif=spec["exif"])
            _models[name] = m
            _model_loads[name] = _model_loads.get(name, 0) + 1
        return m


def model_loads() -> dict[str, int]:
    """{spec name: times loaded} in this process (the tests check it is 1 per worker)."""
    with _models_lock:
        return dict(_model_loads)


class ModelPlugin:
    """Dask worker plugin: loads the model when a worker starts, joins or is restarted (setup),
    so the first tasks do not wait for it, and frees it when the worker closes or when encode()
    removes the plugin at the end of a run on a cluster it did not start (teardown). A load
    failure is kept for encode() to report before any task is sent."""

    def __init__(self, spec):
        self.spec = spec
        self.name = _spec_name(spec)
        self.error = None

    def setup(self, worker):
        try:
            get_model(self.spec)
        except Exception as e:  # reported through load_errors(); tasks raise it again
            self.error = f"{type(e).__name__}: {e}"

    def teardown(self, worker):
        with _models_lock:
            m = _models.pop(self.name, None)
        if m is not None:
            m.close()


def _load_error(spec, dask_worker=None):
    p = dask_worker.plugins.get(_spec_name(spec)) if dask_worker is not None else None
    return getattr(p, "error", None)


def encode_shard(task: dict[str, Any]) -> dict[str, Any]:
    """Dask task: encodes one shard and writes it atomically. Returns its counts."""
    t0 = time.time()
    path = os.path.join(task["out"], SHARD_FMT.format(task["index"]))
    rows = shard_rows(path, task["key"])
    if rows is not None:  # an earlier attempt finished it
        return _counts(task["index"], rows, skipped=True, seconds=time.time() - t0)
    from .model import G4VError
    model = get_model(task["model"])
    dtype = "BF16" if task["bf16"] else "F32"
    shard = os.path.basename(path)
    tensors, rows, meta = [], [], {}
    for index, src in task["items"]:
        name = f"{index:09d}"
        try:
            r = model.encode(src, bf16=task["bf16"])
        except G4VError as e:
            rows.append({"index": index, "source": src, "ok": False, "status": e.status_name,
                         "error": e.message})
            continue
        tensors.append((name, dtype, r.features_bf16 if task["bf16"] else r.features))
        row = {"index": index, "source": src, "ok": True, "shard": shard, "tensor": name,
               "dtype": dtype, "tokens": r.n_tokens, "dim": r.dim, "grid": list(r.grid),
               "original_size": list(r.original_size), "target_size": list(r.target_size),
               "budget": r.budget, "prompt_ids": {"boi": r.boi_token_id,
                                                  "image": r.image_token_id,
                                                  "eoi": r.eoi_token_id}}
        rows.append(row)
        # the same per-tensor metadata as `g4v encode -o x.safetensors`
        for k, v in (("tokens", r.n_tokens), ("grid", "%dx%d" % r.grid),
                     ("budget", r.budget), ("source", src),
                     ("original_size", "%dx%d" % r.original_size),
                     ("target_size", "%dx%d" % r.target_size), ("dim", r.dim)):
            meta[f"{name}.{k}"] = str(v)
    meta.update({"g4v.format": str(FORMAT_VERSION), "g4v.key": task["key"],
                 "g4v.shard": str(task["index"]), "g4v.rows": json.dumps(rows),
                 "g4v.shard_size": str(task.get("shard_size", len(task["items"]))),
                 "g4v.worker": f"{socket.gethostname()}:{os.getpid()}"})
    st.write_atomic(path, tensors, meta)
    return _counts(task["index"], rows, skipped=False, seconds=time.time() - t0)


def _counts(index, rows, skipped, seconds):
    ok = [r for r in rows if r["ok"]]
    return {"shard": index, "images": len(rows), "failed": len(rows) - len(ok),
            "tokens": sum(r["tokens"] for r in ok), "skipped": skipped, "seconds": seconds}


# ------------------------------------------------------------------------------------------------
# Client side

class Summary(dict):
    """The run's numbers (also written to OUT/summary.json): images, encoded (this run), resumed
    (images of shards found done), failed (images with an error row), tokens, seconds (from
    sending the first task to the last shard written), images_per_s (images encoded this run /
    seconds), wall_seconds (the whole call: cluster start and stop, manifest), shards,
    shard_size, manifest (its path), options."""

    __getattr__ = dict.__getitem__

    def line(self) -> str:
        return (f"{self['images']} images ({self['encoded']} encoded, {self['resumed']} resumed), "
                f"{self['tokens']} tokens, {self['failed']} failed, {self['seconds']:.1f} s, "
                f"{self['images_per_s']:.2f} images/s -> {self['manifest']}")


class _Progress:
    def __init__(self, total_images, total_shards, enabled, stream=sys.stderr):
        self.total, self.shards, self.enabled, self.stream = total_images, total_shards, enabled, stream
        self.tty = enabled and hasattr(stream, "isatty") and stream.isatty()
        self.t0 = time.time()
        self.last = 0.0

    def update(self, images, shards, failed, encoded, final=False):
        if not self.enabled:
            return
        now = time.time()
        if not final and now - self.last < (0.2 if self.tty else 5.0):
            return
        self.last = now
        el = now - self.t0
        rate = encoded / el if el > 0 else 0.0
        width = 30
        fill = width * images // self.total if self.total else width
        eta = (self.total - images) / rate if rate > 0 and images < self.total else 0
        msg = (f"[{'#' * fill}{'-' * (width - fill)}] {images}/{self.total} images, "
               f"{shards}/{self.shards} shards, {failed} failed, {rate:.1f} images/s"
               + (f", ETA {eta:.0f}s" if eta else ""))
        self.stream.write(("\r" + msg + "   ") if self.tty else (msg + "\n"))
        if self.tty and final:
            self.stream.write("\n")
        self.stream.flush()


def _start_client(scheduler, client, workers, threads_per_worker, quiet):
    """(client, cluster or None, owned): an existing client, a scheduler address, or a new
    LocalCluster with worker processes."""
    from distributed import Client, LocalCluster
    if client is not None:
        return client, None, False
    if scheduler:
        return Client(scheduler), None, True
    import logging
    cluster = LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker,
                           processes=True, dashboard_address=":0",
                           silence_logs=logging.ERROR if quiet else logging.WARNING)
    return Client(cluster), cluster, True


def encode(inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
           model: str | os.PathLike[str], out: str | os.PathLike[str], tokens: int = 280,
           bf16: bool = False, precise: bool = False, exif: bool = True,
           scheduler: str | None = None, client: Any = None, workers: int = 1,
           threads_per_worker: int = 1, encode_threads: int = 0, shard_size: int | None = None,
           retries: int = 2, progress: bool = True, stream: TextIO = sys.stderr,
           math: str | None = None) -> Summary:
    """Encodes every image of inputs with the checkpoint at model into shards under out.

    inputs       paths, directories, globs or "@list.txt" (see expand_inputs)
    math         the math mode, as Model's: "fast" (None), "precise", "int8" or "int8-blocks";
                 precise=True is math="precise" (a different math too is a ValueError)
    scheduler    a Dask scheduler address ("tcp://host:8786"); or client, a distributed.Client;
                 neither: a LocalCluster of `workers` processes x `threads_per_worker` threads
    encode_threads  g4v threads per encoding task (0: the CPUs divided among the tasks that run
                 at once: on a LocalCluster over all its tasks, on a remote worker over its own)
    shard_size   images per shard / task (memory per task: shard_size x tokens x T x 4 bytes);
                 None (default): the size an earlier run into out used, else
                 auto_shard_size(images, task slots of the cluster) (at most 64)
    retries      extra attempts of a shard task that raised (a worker that died is handled by
                 the scheduler: its tasks go to the other workers)
    Returns a Summary; raises BulkError if shards are missing at the end (rerun to resume).
    Paths must be valid on every worker (see python/README.md for clusters of several machines).
    """
    from distributed import as_completed
    from .model import BUDGETS, _math_name
    math = _math_name(math, precise)
    if int(tokens) not in BUDGETS:
        raise BulkError(f"unsupported token budget {tokens} (use one of "
                        f"{', '.join(map(str, BUDGETS))})")
    if shard_size is not None and int(shard_size) < 1:
        raise BulkError("shard_size must be >= 1")
    if progress and not os.path.isfile(os.path.join(model, "config.json")):
        print(f"bulk: note: {model}/config.json is not visible here; the workers must see it",
              file=stream)
    paths = expand_inputs([inputs] if isinstance(inputs, (str, os.PathLike)) else inputs)
    if not paths:
        raise BulkError("no input images")
    out = os.path.abspath(os.fspath(out))
    os.makedirs(out, exist_ok=True)
    options = _options(model, tokens, bf16, math, exif)
    local = client is None and not scheduler
    c, cluster, owned, spec = None, None, False, None
    counts = {"images": 0, "shards": 0, "failed": 0, "encoded": 0}
    failures = []
    t_call = t0 = t_end = time.time()
    try:
        if shard_size is None:
            shard_size = previous_shard_size(out)
        if shard_size is None:
            if local:
                slots = int(workers) * int(threads_per_worker)
            else:  # a cluster that exists: its size decides, so connect first
                c, cluster, owned = _start_client(scheduler, client, int(workers),
                                                  int(threads_per_worker), not progress)
                slots = sum(c.nthreads().values())
            shard_size = auto_shard_size(len(paths), slots)
        shard_size = int(shard_size)
        shards = plan_shards(paths, options, shard_size)
        done = {s["index"] for s in shards
                if shard_rows(os.path.join(out, SHARD_FMT.format(s["index"])), s["key"])
                is not None}
        todo = [s for s in shards if s["index"] not in done]
        resumed_images = sum(len(s["items"]) for s in shards if s["index"] in done)
        if todo:
            if local and not encode_threads:
                cpus = len(os.sched_getaffinity(0))
                encode_threads = max(1, cpus // (int(workers) * int(threads_per_worker)))
            if c is None:
                c, cluster, owned = _start_client(scheduler, client, int(workers),
                                                  int(threads_per_worker), not progress)
            spec = _model_spec(options, encode_threads)
            try:
                c.register_worker_plugin(ModelPlugin(spec), name=_spec_name(spec))
                errors = {w: e for w, e in c.run(_load_error, spec).items() if e}
            except Exception as e:  # e.g. a worker without this package or libg4v
                raise BulkError(f"cannot set up the workers (is gemma4_vision installed and "
                                f"importable there?): {type(e).__name__}: {e}") from None
            if errors:
                raise BulkError("the model did not load on the workers: " +
                                "; ".join(f"{w}: {e}" for w, e in errors.items()))
            bar = _Progress(len(paths), len(shards), progress, stream)
            counts["images"], counts["shards"] = resumed_images, len(done)
            t0 = time.time()
            tasks = [{"index": s["index"], "key": s["key"], "items": s["items"], "out": out,
                      "bf16": bool(bf16), "model": spec, "shard_size": shard_size}
                     for s in todo]
            futures = c.map(encode_shard, tasks, retries=retries, pure=False,
                            key=[f"g4v-shard-{s['index']:05d}-{s['key'][:12]}" for s in todo])
            by_key = {f.key: t for f, t in zip(futures, tasks)}
            for fut in as_completed(futures):
                # result() rather than the status seen here: a result held by a worker that
                # dies right after the task finished is "lost" for a moment, and the scheduler
                # runs the task again (which finds its shard written); result() waits for that.
                try:
                    r = fut.result()
                except Exception as e:
                    failures.append((by_key[fut.key]["index"], f"{type(e).__name__}: {e}"))
                else:
                    counts["images"] += r["images"]
                    counts["shards"] += 1
                    counts["failed"] += r["failed"]
                    counts["encoded"] += r["images"]
                bar.update(counts["images"], counts["shards"], counts["failed"], counts["encoded"])
                fut.release()
            t_end = time.time()
            bar.update(counts["images"], counts["shards"], counts["failed"], counts["encoded"],
                       final=True)
    finally:
        if c is not None and spec is not None and cluster is None:
            try:  # a cluster that lives on: free the model on its workers
                c.unregister_worker_plugin(_spec_name(spec))
            except Exception:
                pass
        if c is not None and owned:
            c.close()
            if cluster is not None:
                cluster.close()
    seconds = t_end - t0
    if failures:
        raise BulkError(f"{len(failures)} of {len(shards)} shards failed (rerun the same command "
                        "to resume; finished shards are kept): " +
                        "; ".join(f"shard {i}: {e}" for i, e in failures[:5]))
    return _finish(out, shards, options, counts["encoded"], resumed_images, seconds,
                   time.time() - t_call, shard_size)


def _finish(out, shards, options, encoded, resumed, seconds, wall_seconds, shard_size):
    """Writes manifest.jsonl (every shard's rows in input order) and summary.json, atomically."""
    t_start = time.time()
    manifest = os.path.join(out, MANIFEST)
    tmp = f"{manifest}.tmp-{os.getpid()}"
    n = failed = tokens = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for s in shards:
            shard = SHARD_FMT.format(s["index"])
            rows = shard_rows(os.path.join(out, shard), s["key"])
            if rows is None or [r["index"] for r in rows] != [i for i, _ in s["items"]]:
                os.unlink(tmp)
                raise BulkError(f"{shard} is missing or does not match the plan; rerun to resume")
            for r in rows:
                r.setdefault("shard", shard)
                f.write(json.dumps(r) + "\n")
                n += 1
                failed += not r["ok"]
                tokens += r.get("tokens", 0) if r["ok"] else 0
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, manifest)
    for name in os.listdir(out):  # temporary files of attempts killed before their rename
        if name.startswith(".shard-") and ".tmp-" in name:
            try:
                os.unlink(os.path.join(out, name))
            except OSError:
                pass
    summary = Summary(images=n, encoded=encoded, resumed=resumed, failed=failed, tokens=tokens,
                      seconds=seconds, images_per_s=encoded / seconds if seconds > 0 else 0.0,
                      wall_seconds=wall_seconds + (time.time() - t_start), shards=len(shards),
                      shard_size=shard_size, manifest=manifest, options=options)
    tmp = os.path.join(out, f"{SUMMARY}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    os.replace(tmp, os.path.join(out, SUMMARY))
    return summary


# ------------------------------------------------------------------------------------------------
# Reading the output

class BulkOutput:
    """A bulk output directory: rows from manifest.jsonl (read when opened; small), features
    memory-mapped from the shards only when asked for.

        ds = open_output("tokens/")
        for row in ds:                      # dicts: index, source, ok, shard, tensor, tokens, ...
            if row["ok"]:
                x = ds.features(row)        # float32 [N, T] (BF16 shards: as_float32=False
                                            # gives the uint16 bits)
        ds.by_source["/data/cat.jpg"]       # the row of one image
    """

    def __init__(self, out):
        self.out = os.fspath(out)
        path = os.path.join(self.out, MANIFEST)
        if not os.path.isfile(path):
            raise BulkError(f"{path} not found (an unfinished run: rerun it to complete)")
        with open(path, encoding="utf-8") as f:
            self.rows = [json.loads(line) for line in f if line.strip()]
        self._headers = {}

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.rows[i]

    @property
    def by_source(self):
        return {r["source"]: r for r in self.rows}

    @property
    def failed(self):
        return [r for r in self.rows if not r["ok"]]

    def features(self, row: dict[str, Any] | int, as_float32: bool = True) -> Any:
        row = self.rows[row] if isinstance(row, int) else row
        if not row["ok"]:
            raise BulkError(f"{row['source']} failed: {row['status']}: {row['error']}")
        path = os.path.join(self.out, row["shard"])
        if path not in self._headers:
            self._headers[path] = st.read_header(path)
        header, offset = self._headers[path]
        a = st.tensor(path, row["tensor"], header, offset)
        return st.bf16_to_f32(a) if as_float32 and a.dtype == st.DTYPES["BF16"] else a


def open_output(out: str | os.PathLike[str]) -> BulkOutput:
    """Opens a finished bulk output directory (see BulkOutput)."""
    return BulkOutput(out)


# ------------------------------------------------------------------------------------------------
# Command line

def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python3 -m gemma4_vision.bulk",
        description="Encode many images into Gemma 4 soft tokens on a Dask cluster: safetensors "
                    "shards + manifest.jsonl in OUT. Rerunning the same command resumes.")
    p.add_argument("images", nargs="+", metavar="IMAGE",
                   help="image files, directories, globs ('data/**/*.jpg', quoted) or @LIST")
    p.add_argument("--model", required=True, help="checkpoint directory (seen by every worker)")
    p.add_argument("--out", required=True, help="output directory (seen by every worker)")
    p.add_argument("--tokens", type=int, default=280, help="soft-token budget (default 280)")
    p.add_argument("--bf16", action="store_true", help="store BF16 instead of F32")
    p.add_argument("--math", help="the math mode: fast (default), precise (f32 GEMM inputs, "
                                  "slower), int8 or int8-blocks (docs/NUMERICS.md §12)")
    p.add_argument("--precise", action="store_true", help="the same as --math precise")
    p.add_argument("--no-exif", action="store_true", help="ignore EXIF orientation")
    p.add_argument("--scheduler", help="Dask scheduler address (tcp://host:8786); default: "
                                       "start a LocalCluster")
    p.add_argument("--workers", type=int, default=1, help="LocalCluster worker processes (1)")
    p.add_argument("--threads-per-worker", type=int, default=1,
                   help="LocalCluster tasks at once per worker (1)")
    p.add_argument("--encode-threads", type=int, default=0,
                   help="g4v threads per task (default: CPUs / tasks at once)")
    p.add_argument("--shard-size", type=int, default=None,
                   help="images per shard and task (default: an earlier run's in OUT, else "
                        "enough shards for 4 per task slot of the cluster, at most 64)")
    p.add_argument("--quiet", action="store_true", help="no progress, no summary")
    a = p.parse_args(argv)
    from .model import _math_name
    try:
        _math_name(a.math, a.precise)
    except ValueError as e:
        p.error(str(e).replace("math=", "--math ").replace("precise=True", "--precise"))
    if a.scheduler and (a.workers != 1 or a.threads_per_worker != 1):
        print("bulk: --workers and --threads-per-worker apply to a LocalCluster; ignored with "
              "--scheduler", file=sys.stderr)
    try:
        s = encode(a.images, a.model, a.out, tokens=a.tokens, bf16=a.bf16, precise=a.precise,
                   math=a.math, exif=not a.no_exif, scheduler=a.scheduler, workers=a.workers,
                   threads_per_worker=a.threads_per_worker, encode_threads=a.encode_threads,
                   shard_size=a.shard_size, progress=not a.quiet)
    except BulkError as e:
        print(f"bulk: {e}", file=sys.stderr)
        return 2
    if not a.quiet:
        print("bulk: " + s.line(), file=sys.stderr)
    print(json.dumps({k: v for k, v in s.items() if k != "options"}))
    return 1 if s["failed"] else 0


if __name__ == "__main__":
    # Run as `python3 -m gemma4_vision.bulk`, this file is __main__; the functions and the plugin
    # sent to the workers must be the importable module's (by reference), not __main__'s (which
    # cloudpickle would copy by value, with this module's locks and caches).
    from gemma4_vision.bulk import main as _main
    sys.exit(_main())
