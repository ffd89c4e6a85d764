"""gemma4_vision.bulk on a real Dask LocalCluster with worker processes: every image's tensor
bit-identical to `g4v encode` of the same file, one manifest row per input (a bad image in the
middle is a row with its error), the model loaded once per worker, a rerun that encodes nothing
(and a partial one that redoes only the missing shard), a shard writer killed mid-write (the
resumed run rewrites that shard whole), a worker process killed mid-run with no image lost or
doubled, and the command line (inputs as directory, glob and @list; exit codes)."""
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from conftest import g4v, same_bits, write_images
from gemma4_vision import bulk
from gemma4_vision import safetensors as st

from distributed import Client, LocalCluster  # not importorskip: a missing Dask must fail


def cluster(n=2):
    c = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                     silence_logs=logging.ERROR)
    return c, Client(c)


@pytest.fixture(scope="module")
def client():
    c, cl = cluster(2)
    yield cl
    cl.close()
    c.close()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """11 images of 5 formats + a raw .npy, and a corrupt file in the middle (index 6)."""
    d = str(tmp_path_factory.mktemp("data"))
    write_images(d, 11)
    np.save(os.path.join(d, "img011.npy"),
            np.random.default_rng(9).integers(0, 256, (70, 52, 3), dtype=np.uint8))
    with open(os.path.join(d, "img005b.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n broken")
    return d


def cli_reference(model, inputs, tmp, *opts):
    """{absolute source: (tensor, metadata)} from one `g4v encode ... -o x.safetensors` run."""
    out = os.path.join(tmp, "cli.safetensors")
    g4v("encode", "--model", model, *inputs, "--quiet", *opts, "-o", out, check=False)
    header, _ = st.read_header(out)
    meta = header["__metadata__"]
    ref = {}
    for name in header:
        if name != "__metadata__":
            m = {k[len(name) + 1:]: v for k, v in meta.items() if k.startswith(name + ".")}
            ref[os.path.abspath(m["source"])] = (st.tensor(out, name), m)
    return ref


def check_against_cli(out, ref, n_inputs, bad):
    ds = bulk.open_output(out)
    assert [r["index"] for r in ds] == list(range(n_inputs)), "one row per input, in order"
    for row in ds:
        if os.path.basename(row["source"]) in bad:
            assert not row["ok"] and row["status"] == "G4V_ERR_IMAGE" and row["error"], row
            continue
        assert row["ok"], row
        tensor, meta = ref[row["source"]]
        assert same_bits(ds.features(row, as_float32=False), tensor), row["source"]
        assert row["tokens"] == int(meta["tokens"]) and "%dx%d" % tuple(row["grid"]) == meta["grid"]
        assert "%dx%d" % tuple(row["original_size"]) == meta["original_size"]
        assert "%dx%d" % tuple(row["target_size"]) == meta["target_size"]
        # the shard's own per-tensor metadata is the CLI's
        header, _ = st.read_header(os.path.join(out, row["shard"]))
        for k in ("tokens", "grid", "budget", "source", "original_size", "target_size", "dim"):
            assert header["__metadata__"][f"{row['tensor']}.{k}"] == meta[k], k
    return ds


def test_bulk_matches_cli(client, tiny, dataset, tmp_path):
    out = str(tmp_path / "out")
    s = bulk.encode([dataset], tiny, out, tokens=70, client=client, shard_size=3, progress=False)
    n = len(bulk.expand_inputs([dataset]))
    assert n == 13
    ref = cli_reference(tiny, [dataset], str(tmp_path), "--tokens", "70")
    ds = check_against_cli(out, ref, n, bad={"img005b.png"})
    assert (s.images, s.encoded, s.resumed, s.failed, s.shards) == (n, n, 0, 1, 5)
    assert s.tokens == sum(r["tokens"] for r in ds if r["ok"])
    assert json.load(open(os.path.join(out, "summary.json")))["images"] == n
    assert ds.failed[0]["index"] == 6 and "img005b.png" in ds.failed[0]["error"]
    # each worker process loaded this model once, however many tasks it ran
    loads = client.run(bulk.model_loads)
    assert len(loads) == 2 and all(v == {k: 1 for k in v} and v for v in loads.values()), loads
    # as_float32 on F32 shards is the same array
    assert same_bits(ds.features(0), ds.features(0, as_float32=False))


def test_bulk_bf16_matches_cli(client, tiny, dataset, tmp_path):
    out = str(tmp_path / "out16")
    bulk.encode([dataset], tiny, out, tokens=140, bf16=True, client=client, shard_size=4,
                progress=False)
    ref = cli_reference(tiny, [dataset], str(tmp_path), "--tokens", "140", "--bf16")
    ds = check_against_cli(out, ref, 13, bad={"img005b.png"})
    row = ds[0]
    bits = ds.features(row, as_float32=False)
    assert bits.dtype == np.uint16 and row["dtype"] == "BF16"
    assert same_bits(ds.features(row), st.bf16_to_f32(bits))


def _plugins_and_models(dask_worker):
    return [n for n in dask_worker.plugins if n.startswith("gemma4_vision-")], len(bulk._models)


def test_bulk_math(client, tiny, dataset, tmp_path):
    """math= reaches the workers: every tensor is `g4v encode --math int8-blocks`'s. The shard
    keys of fast and precise are those of the runs before math= (their options unchanged), and
    a math that disagrees with precise= is refused."""
    out = str(tmp_path / "outq")
    s = bulk.encode([dataset], tiny, out, tokens=70, client=client, shard_size=7, progress=False,
                    math="int8-blocks")
    assert (s.images, s.failed) == (13, 1) and s.options["math"] == "int8-blocks"
    ref = cli_reference(tiny, [dataset], str(tmp_path), "--tokens", "70", "--int8=blocks")
    check_against_cli(out, ref, 13, bad={"img005b.png"})
    m = os.path.abspath(tiny)
    for math in ("fast", "precise"):
        o = bulk._options(m, 70, False, math, True)
        assert o == {"model": m, "tokens": 70, "bf16": False, "precise": math == "precise",
                     "exif": True} and bulk._options_math(o) == math
    with pytest.raises(ValueError, match="two math modes"):
        bulk.encode([dataset], tiny, out, tokens=70, client=client, precise=True, math="int8")


def test_scheduler_address(client, tiny, dataset, tmp_path):
    """--scheduler: a cluster that lives on. The run connects by address, and at its end removes
    its plugin so that the workers free the model."""
    out = str(tmp_path / "out")
    s = bulk.encode([dataset], tiny, out, tokens=70, shard_size=5, progress=False,
                    scheduler=client.scheduler.address)
    assert (s.images, s.encoded, s.failed) == (13, 13, 1)
    assert all(v == ([], 0) for v in client.run(_plugins_and_models).values())
    assert client.status == "running"  # not closed by the run


def shard_stats(out):
    return {n: (os.stat(os.path.join(out, n)).st_ino, os.stat(os.path.join(out, n)).st_mtime_ns)
            for n in os.listdir(out) if n.startswith("shard-")}


def test_resume(client, tiny, dataset, tmp_path, monkeypatch):
    out = str(tmp_path / "out")
    first = bulk.encode([dataset], tiny, out, tokens=70, client=client, shard_size=4,
                        progress=False)
    manifest = open(os.path.join(out, "manifest.jsonl")).read()
    before = shard_stats(out)
    assert len(before) == 4

    def no_cluster(*a, **k):
        raise AssertionError("a finished run started a cluster")

    # everything done: nothing encoded, no cluster, no shard rewritten, the same manifest
    monkeypatch.setattr(bulk, "_start_client", no_cluster)
    again = bulk.encode([dataset], tiny, out, tokens=70, shard_size=4, progress=False)
    assert (again.encoded, again.resumed, again.failed) == (0, first.images, first.failed)
    assert shard_stats(out) == before
    assert open(os.path.join(out, "manifest.jsonl")).read() == manifest
    monkeypatch.undo()

    # one shard lost, and a temporary file of a killed attempt: only that shard is encoded
    os.unlink(os.path.join(out, "shard-00002.safetensors"))
    open(os.path.join(out, ".shard-00001.safetensors.tmp-host-1-x"), "wb").write(b"partial")
    part = bulk.encode([dataset], tiny, out, tokens=70, client=client, shard_size=4,
                       progress=False)
    assert (part.encoded, part.resumed) == (4, first.images - 4)
    after = shard_stats(out)
    assert {k: v for k, v in after.items() if k != "shard-00002.safetensors"} == \
        {k: v for k, v in before.items() if k != "shard-00002.safetensors"}
    assert open(os.path.join(out, "manifest.jsonl")).read() == manifest
    assert not [n for n in os.listdir(out) if ".tmp-" in n]

    # other options: other shard keys, so every shard is encoded again
    other = bulk.encode([dataset], tiny, out, tokens=140, client=client, shard_size=4,
                        progress=False)
    assert other.encoded == first.images and other.resumed == 0


# Run in a child process: bulk.encode on an in-process cluster (threads), so the shard writer
# runs here, with open() wrapped so that the process SIGKILLs itself while writing shard 1's data
# (its header and half of its first tensor written): a writer killed between writing a shard
# and publishing it.
KILL_WRITER = r"""
import builtins, os, signal, sys
from distributed import Client, LocalCluster
from gemma4_vision import bulk

data, model, out = sys.argv[1:4]
real_open = builtins.open


class Dies:
    def __init__(self, f):
        self.f, self.writes = f, 0

    def write(self, b):
        self.writes += 1
        if self.writes == 3:  # length, header, then the first tensor's bytes
            b = memoryview(b).cast("B")
            self.f.write(b[:len(b) // 2])
            self.f.flush()
            os.fsync(self.f.fileno())
            os.kill(os.getpid(), signal.SIGKILL)
        return self.f.write(b)

    def __getattr__(self, k):
        return getattr(self.f, k)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return self.f.__exit__(*a)


def dying_open(path, mode="r", *a, **k):
    f = real_open(path, mode, *a, **k)
    if "w" in mode and "shard-00001" in os.path.basename(str(path)):
        return Dies(f)
    return f


builtins.open = dying_open
cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
bulk.encode([data], model, out, tokens=70, client=Client(cluster), shard_size=4, progress=False)
print("not killed")
"""


def test_writer_killed_before_publishing(client, tiny, dataset, tmp_path):
    """A shard writer killed mid-write leaves no shard that a resumed run takes as done: the
    resumed run rewrites it, and every shard is whole and every image as the CLI encodes it."""
    out = str(tmp_path / "out")
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", KILL_WRITER, dataset, tiny, out], env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stdout, r.stderr[-2000:])
    assert os.path.exists(os.path.join(out, "shard-00000.safetensors"))
    s = bulk.encode([dataset], tiny, out, tokens=70, client=client, shard_size=4,
                    progress=False)
    assert (s.images, s.failed) == (13, 1)
    assert s.resumed == 4, "only shard 0 was complete when the writer died"
    shards = sorted(n for n in os.listdir(out) if n.startswith("shard-"))
    assert len(shards) == 4 and not [n for n in os.listdir(out) if ".tmp-" in n]
    for n in shards:  # each file ends where its header says its last tensor ends
        path = os.path.join(out, n)
        header, base = st.read_header(path)
        end = max((e["data_offsets"][1] for k, e in header.items() if k != "__metadata__"),
                  default=0)
        assert os.path.getsize(path) == base + end, n
    ref = cli_reference(tiny, [dataset], str(tmp_path), "--tokens", "70")
    check_against_cli(out, ref, 13, bad={"img005b.png"})


def test_worker_killed_mid_run(tiny, tmp_path):
    """SIGKILL a worker process that holds tasks, once the first shards are written: the
    scheduler gives its tasks to the other worker (and the restarted one); the run completes
    with every image exactly once, each as the CLI encodes it."""
    d = str(tmp_path / "many")
    n = 48
    write_images(d, n, seed=11, formats=("png", "jpg"), sizes=[(150 + i, 200) for i in range(n)])
    out = str(tmp_path / "out")
    c, cl = cluster(2)
    try:
        pids = cl.run(os.getpid)
        result, killed = {}, {}

        def run():
            try:
                result["s"] = bulk.encode([d], tiny, out, tokens=140, client=cl, shard_size=2,
                                          progress=False)
            except BaseException as e:  # noqa: B036 - reported below
                result["e"] = e

        th = threading.Thread(target=run)
        th.start()
        deadline = time.time() + 120
        while time.time() < deadline and th.is_alive() and not killed:
            written = [x for x in os.listdir(out) if x.startswith("shard-")] \
                if os.path.isdir(out) else []
            if written:
                busy = [w for w, keys in cl.processing().items() if keys]
                if busy:
                    killed["shards_written"] = len(written)
                    killed["at"] = time.time()
                    killed["pid"] = pids[busy[0]]
                    os.kill(pids[busy[0]], signal.SIGKILL)
            time.sleep(0.01)
        th.join(180)
        killed["run_ended_after_s"] = time.time() - killed.get("at", time.time())
        assert killed, "the run ended before a worker could be killed"
        print("killed", killed)
        assert killed["shards_written"] < n // 2, killed  # work was left when it died
        assert "e" not in result, result.get("e")
        s = result["s"]
        assert (s.images, s.failed) == (n, 0)
        new_pids = cl.run(os.getpid)
        assert killed["pid"] not in new_pids.values()
    finally:
        t = time.time()
        cl.close()
        c.close()
        print("cluster closed in %.1f s" % (time.time() - t))
    ds = bulk.open_output(out)
    assert sorted(r["index"] for r in ds) == list(range(n)), "every image exactly once"
    assert len({r["source"] for r in ds}) == n
    ref = cli_reference(tiny, [d], str(tmp_path), "--tokens", "140")
    check_against_cli(out, ref, n, bad=set())


def test_auto_shard_size():
    assert bulk.auto_shard_size(41, 2) == 6      # 7 shards: 3-4 per worker thread
    assert bulk.auto_shard_size(41, 1) == 11     # 4 shards
    assert bulk.auto_shard_size(3, 8) == 1       # fewer images than slots: one image each
    assert bulk.auto_shard_size(100_000, 4) == bulk.MAX_SHARD_SIZE == 64


def test_shard_size_follows_the_cluster(tiny, tmp_path):
    """A newcomer's run: 41 photos, --workers 2, no --shard-size. Before, that was one shard of
    64, one task, and one of the two workers idle; now there are several shards, and both worker
    processes write some of them. A rerun (on another cluster size) keeps the recorded size, so
    it resumes instead of re-planning."""
    d = str(tmp_path / "photos")
    write_images(d, 41, seed=5, formats=("png", "jpg", "tif"))
    out = str(tmp_path / "out")
    s = bulk.encode([d], tiny, out, tokens=70, workers=2, progress=False)
    assert (s.images, s.failed, s.shard_size, s.shards) == (41, 0, 6, 7), dict(s)
    writers = set()
    for i in range(s.shards):
        header, _ = st.read_header(os.path.join(out, bulk.SHARD_FMT.format(i)))
        writers.add(header["__metadata__"]["g4v.worker"])
        assert header["__metadata__"]["g4v.shard_size"] == "6"
    assert len(writers) == 2, f"both workers wrote shards: {writers}"
    assert bulk.previous_shard_size(out) == 6
    again = bulk.encode([d], tiny, out, tokens=70, workers=1, progress=False)
    assert (again.encoded, again.resumed, again.shard_size) == (0, 41, 6)


def test_expand_inputs(dataset, tmp_path):
    files = bulk.expand_inputs([dataset])
    assert files == sorted(files) and all(os.path.isabs(f) for f in files)
    lst = tmp_path / "list.txt"
    lst.write_text("# a comment\n\n" + "\n".join(files[:3]) + "\n")
    assert bulk.expand_inputs([f"@{lst}", os.path.join(dataset, "img00[01].*")]) == \
        files[:3] + files[:2]
    assert bulk.expand_inputs([str(tmp_path / "missing.png")]) == [str(tmp_path / "missing.png")]
    with pytest.raises(bulk.BulkError, match="no files match"):
        bulk.expand_inputs([str(tmp_path / "*.nothing")])
    with pytest.raises(bulk.BulkError, match="cannot read list"):
        bulk.expand_inputs([f"@{tmp_path}/nolist.txt"])


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "gemma4_vision.bulk", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_command_line(tiny, dataset, tmp_path):
    out = tmp_path / "out"
    lst = tmp_path / "list.txt"
    files = bulk.expand_inputs([dataset])
    lst.write_text("\n".join(files[6:]) + "\n")  # starts with the bad image
    r = run_cli(os.path.join(dataset, "img00[0-5].*"), f"@{lst}", "--model", tiny, "--out", out,
                "--tokens", "70", "--shard-size", "5", "--workers", "1")
    assert r.returncode == 1, r.stderr  # 1: some images failed, the rest written
    summary = json.loads(r.stdout.splitlines()[-1])
    assert (summary["images"], summary["failed"], summary["encoded"]) == (13, 1, 13)
    assert "13 images (13 encoded, 0 resumed)" in r.stderr and "1 failed" in r.stderr
    assert "images/s" in r.stderr
    assert [row["source"] for row in bulk.open_output(out)] == files
    r = run_cli(dataset, "--model", tiny, "--out", out, "--tokens", "70", "--shard-size", "5")
    assert r.returncode == 1 and json.loads(r.stdout)["encoded"] == 0, r.stderr
    r = run_cli(dataset, "--model", tiny, "--out", out, "--tokens", "300")
    assert r.returncode == 2 and "unsupported token budget 300" in r.stderr
    r = run_cli(dataset, "--model", tiny, "--out", out, "--math", "int4")
    assert r.returncode == 2 and "unknown math mode 'int4'" in r.stderr, r.stderr
    r = run_cli(dataset, "--model", tiny, "--out", out, "--math", "int8", "--precise")
    assert r.returncode == 2 and "two math modes" in r.stderr, r.stderr
    r = run_cli(dataset, "--model", tmp_path / "nomodel", "--out", tmp_path / "o2", "--tokens",
                "70", "--quiet")
    assert r.returncode == 2 and "did not load" in r.stderr and "nomodel" in r.stderr, r.stderr
