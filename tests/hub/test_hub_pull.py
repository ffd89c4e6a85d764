#!/usr/bin/python3
"""test_hub_pull.py - `g4v pull` and `hf:` model names (common/hub.h) against a local fake
Hub (fake_hub.py: the API on 127.0.0.1, its "CDN" on 127.0.0.2): the Hugging Face cache layout of a
whole pull and its reuse, the vision-only checkpoint (fetched bytes against the whole, bit-identical
soft tokens), hf: names in encode without the network once pulled, HF_HUB_OFFLINE, gating and the
token (never to the CDN, never printed), and each fault: a dropped connection, 429 and 503 with
Retry-After, sizes and sha256 that lie (or are fractional), a body longer than the listing, names
that escape the folder, a safetensors header beyond its file (or with fractional offsets, a name
twice, a __metadata__ that is no object), a full disk, Ctrl-C then resume (whole files and
vision-only ranges), two pulls at once.
Everything happens on loopback addresses in a temporary HOME.

usage: ctest -R test_hub_pull   (env G4V_BIN: the g4v binary)
"""
import hashlib
import json
import os
import resource
import signal
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import pyutil  # noqa: E402
from fake_hub import Hub, Repo  # noqa: E402

check = pyutil.check
COMMIT = "c0mm17".replace("m", "0").replace("7", "1") + "a" * 34


def files_of(folder):
    out = {}
    for root, _, names in os.walk(folder):
        for n in names:
            p = os.path.join(root, n)
            out[os.path.relpath(p, folder)] = open(p, "rb").read()
    return out


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("ck") / "tiny")
    pyutil.gen_checkpoint(d, "--config", "tiny", "--shards", "2", quiet=True)
    return d


@pytest.fixture
def hub():
    h = Hub()
    yield h
    h.close()


@pytest.fixture
def env(tmp_path, hub):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith(("HF_", "G4V_HUB", "XDG_")):
            del e[k]
    e.update(HOME=str(tmp_path / "home"), HF_ENDPOINT=hub.endpoint, NO_PROXY="*",
             no_proxy="*")
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        e.pop(k, None)
    os.makedirs(e["HOME"])
    return e


def g4v(env, *args, **kw):
    return subprocess.run([pyutil.BIN, *args], capture_output=True, text=True, env=env, **kw)


def hf_repo_dir(env, repo):
    return os.path.join(env["HOME"], ".cache/huggingface/hub",
                        "models--" + repo.replace("/", "--"))


def gguf_repo():
    return {"README.md": b"# a GGUF repo\n",
            "model-Q4_K_M.gguf": os.urandom(300 * 1024),
            "model-Q8_0.gguf": os.urandom(200 * 1024),
            "mmproj-model-f16.gguf": os.urandom(100 * 1024)}


def test_whole_layout_and_reuse(hub, env):
    files = gguf_repo()
    hub.add("org/m-GGUF", Repo(files, commit=COMMIT))
    env["HF_TOKEN"] = hub.token
    r = g4v(env, "pull", "org/m-GGUF", "--whole")
    check(r.returncode == 0, f"pull --whole: {r.stderr}")
    d = hf_repo_dir(env, "org/m-GGUF")
    check(open(os.path.join(d, "refs/main")).read() == COMMIT, "refs/main holds the commit")
    snap = os.path.join(d, "snapshots", COMMIT)
    for p, b in files.items():
        link = os.path.join(snap, p)
        check(os.path.islink(link), f"{p} is a link")
        tgt = os.readlink(link)
        etag = hashlib.sha256(b).hexdigest() if p.endswith(".gguf") else \
            hashlib.sha1(b"blob %d\0" % len(b) + b).hexdigest()
        check(tgt == "../../blobs/" + etag, f"{p} -> {tgt}")
        check(open(link, "rb").read() == b, f"{p}: the bytes")
    check(not any(n.endswith(".incomplete") for n in os.listdir(os.path.join(d, "blobs"))),
          "no .incomplete left")
    # the token went to the endpoint only: never to the CDN host
    cdn = [x for x in hub.log if x["host"] == "127.0.0.2"]
    check(cdn and all(x["auth"] is None for x in cdn), "no Authorization to the CDN host")
    api = [x for x in hub.log if x["host"] == "127.0.0.1"]
    check(all(x["auth"] == "Bearer " + hub.token for x in api), "the token to the endpoint")
    check(hub.token not in r.stdout + r.stderr, "the token is not printed")
    # again: nothing fetched
    n = len(hub.log)
    r = g4v(env, "pull", "org/m-GGUF", "--whole", "--json")
    check(r.returncode == 0, f"second pull: {r.stderr}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    check(res["fetched"] == 0 and res["files_present"] == 4, f"reused: {res}")
    check(all(not x["path"].startswith(("/blob", "/org/m-GGUF/resolve")) for x in hub.log[n:]),
          "no file requested again")
    # g4v models sees it
    r = g4v(env, "models", "--all", "--json")
    check("org/m-GGUF" in r.stdout, "g4v models lists the pulled repo")


def test_quant_picks_files(hub, env):
    hub.add("org/m-GGUF", Repo(gguf_repo(), commit=COMMIT))
    r = g4v(env, "pull", "org/m-GGUF:Q8_0")
    check(r.returncode == 0, f"pull :Q8_0: {r.stderr}")
    snap = os.path.join(hf_repo_dir(env, "org/m-GGUF"), "snapshots", COMMIT)
    check(sorted(os.listdir(snap)) == ["README.md", "mmproj-model-f16.gguf", "model-Q8_0.gguf"],
          f"only Q8_0 and the mmproj: {os.listdir(snap)}")
    r = g4v(env, "pull", "org/m-GGUF:IQ1_XX")
    check(r.returncode == 3 and "no GGUF file of quantization IQ1_XX" in r.stderr, r.stderr)


def text_shard(nbytes):
    """A safetensors file of one language-model tensor, as the big shards of a real checkpoint."""
    h = {"model.language_model.layers.0.mlp.up_proj.weight":
         {"dtype": "BF16", "shape": [nbytes // 2], "data_offsets": [0, nbytes]}}
    raw = json.dumps(h).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    return struct.pack("<Q", len(raw)) + raw + os.urandom(nbytes)


def ck_repo(checkpoint, **kw):
    files = files_of(checkpoint)
    files["model-text-extra.safetensors"] = text_shard(4 << 20)
    return Repo(files, commit=COMMIT, **kw)


def encode(env, model, img, out):
    r = g4v(env, "encode", "--model", model, img, "-o", out)
    check(r.returncode == 0, f"encode --model {model}: {r.stderr}")
    return np.load(out) if r.returncode == 0 else None


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    from PIL import Image
    p = str(tmp_path_factory.mktemp("img") / "x.png")
    rng = np.random.default_rng(5)
    Image.fromarray(rng.integers(0, 255, (60, 90, 3), dtype=np.uint8)).save(p)
    return p


def test_vision_only_bit_identical(hub, env, checkpoint, image, tmp_path):
    repo = ck_repo(checkpoint)
    hub.add("google/tiny-it", repo)
    r = g4v(env, "pull", "google/tiny-it", "--json")
    check(r.returncode == 0, f"pull: {r.stderr}")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    res = lines[-1]
    check(res["vision_only"] and res["fetched"] < res["whole_bytes"] / 4,
          f"vision only fetched {res['fetched']} of {res['whole_bytes']}")
    check(any(x["event"] == "progress" or x["event"] == "done" for x in lines[:-1]),
          "--json progress lines")
    path = res["path"]
    check(path.startswith(os.path.join(env["HOME"], ".cache/g4v/hub")), f"in g4v's cache: {path}")
    check(not os.path.exists(hf_repo_dir(env, "google/tiny-it")), "nothing in the HF cache")
    # byte ranges only: every weight request asked for a Range
    st = [x for x in hub.log if x["host"] == "127.0.0.2"]
    check(st and all(x["range"] for x in st), "weights only by Range")
    for f in os.listdir(path):
        if f.endswith(".safetensors"):
            names = [k for k in pyutil.st_header(os.path.join(path, f))[0] if k != "__metadata__"]
            check(names and all(k.split(".")[1 if k.startswith("model.") else 0] in
                                ("vision_tower", "embed_vision") for k in names),
                  f"{f}: only vision tensors ({len(names)})")
    src = json.load(open(os.path.join(path, "g4v-source.json")))
    check(src["commit"] == COMMIT and all(v["etag"] for v in src["files"].values()),
          "commit and ETags recorded")
    a = encode(env, checkpoint, image, str(tmp_path / "a.npy"))
    b = encode(env, path, image, str(tmp_path / "b.npy"))
    check(a is not None and b is not None and a.tobytes() == b.tobytes(),
          "vision-only encodes bit-identically to the whole checkpoint")
    # by name, from disk: no request
    n = len(hub.log)
    c = encode(env, "hf:google/tiny-it", image, str(tmp_path / "c.npy"))
    check(c is not None and c.tobytes() == a.tobytes(), "hf: name encodes the same")
    check(len(hub.log) == n, "a model on disk: no network")
    env2 = dict(env, HF_HUB_OFFLINE="1")
    c = encode(env2, "hf:google/tiny-it", image, str(tmp_path / "d.npy"))
    check(c is not None, "offline with the model on disk works")
    r = g4v(env2, "encode", "--model", "hf:google/other", image, "-o", str(tmp_path / "e.npy"))
    check(r.returncode != 0 and "HF_HUB_OFFLINE" in r.stderr, f"offline refuses: {r.stderr}")
    check(len(hub.log) == n, "offline: no request")
    r = g4v(env2, "pull", "google/tiny-it")
    check(r.returncode == 3 and "HF_HUB_OFFLINE" in r.stderr, "pull offline refused")


def test_hf_name_pulls(hub, env, checkpoint, image, tmp_path):
    hub.add("google/tiny-it", ck_repo(checkpoint))
    a = encode(env, checkpoint, image, str(tmp_path / "a.npy"))
    b = encode(env, "hf:google/tiny-it@main", image, str(tmp_path / "b.npy"))
    check(a is not None and b is not None and a.tobytes() == b.tobytes(), "encode hf: pulls")


def test_whole_checkpoint_loads(hub, env, checkpoint, image, tmp_path):
    hub.add("google/tiny-it", ck_repo(checkpoint))
    r = g4v(env, "pull", "google/tiny-it", "--whole")
    check(r.returncode == 0, r.stderr)
    r = g4v(env, "info", "--model", "google/tiny-it")
    check(r.returncode == 0, f"the HF cache lookup finds it: {r.stderr}")


def test_gated(hub, env, checkpoint):
    hub.add("google/gated", ck_repo(checkpoint, gated=True))
    r = g4v(env, "pull", "google/gated")
    check(r.returncode == 3 and "licence" in r.stderr and "HF_TOKEN" in r.stderr
          and "hf auth login" in r.stderr, f"401: {r.stderr}")
    env["HF_TOKEN"] = "hf_wrong"
    r = g4v(env, "pull", "google/gated")
    check(r.returncode == 3 and "403" in r.stderr and "hf_wrong" not in r.stderr, r.stderr)
    del env["HF_TOKEN"]
    tok = os.path.join(env["HOME"], ".cache/huggingface/token")
    os.makedirs(os.path.dirname(tok), exist_ok=True)
    open(tok, "w").write(hub.token + "\n")
    r = g4v(env, "pull", "google/gated")
    check(r.returncode == 0, f"the token file of `hf auth login`: {r.stderr}")
    check(hub.token not in r.stdout + r.stderr, "token not printed")
    check(all(x["auth"] is None for x in hub.log if x["host"] == "127.0.0.2"),
          "token never sent to the CDN")


def whole_blob_state(env, repo):
    d = os.path.join(hf_repo_dir(env, repo), "blobs")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


@pytest.mark.parametrize("fault", ["drop", "429", "503"])
def test_transient_faults_retried(hub, env, fault):
    files = gguf_repo()
    hub.add("org/m-GGUF", Repo(files, commit=COMMIT))
    hub.faults[fault] = 2
    hub.drop_at = 50000
    t = time.time()
    r = g4v(env, "pull", "org/m-GGUF", "--whole")
    check(r.returncode == 0, f"{fault}: recovered: {r.stderr}")
    check(hub.faults[fault] == 0, f"{fault}: the fault happened")
    if fault == "drop":
        starts = [x["range"] for x in hub.log if x["range"]]
        check("bytes=50000-%d" % (len(files["model-Q4_K_M.gguf"]) - 1) in starts or
              any(s and s.startswith("bytes=50000-") for s in starts),
              f"resumed with Range from the byte it stopped at: {starts}")
    check(time.time() - t < 30, "Retry-After 0 honoured (no long wait)")
    snap = os.path.join(hf_repo_dir(env, "org/m-GGUF"), "snapshots", COMMIT)
    for p, b in files.items():
        check(open(os.path.join(snap, p), "rb").read() == b, f"{fault}: {p} intact")


def test_retries_run_out(hub, env):
    hub.add("org/m-GGUF", Repo(gguf_repo(), commit=COMMIT))
    hub.faults["503"] = 100
    r = g4v(env, "pull", "org/m-GGUF", "--whole")
    check(r.returncode == 3 and "503" in r.stderr, f"503 for ever: {r.stderr}")


def test_retry_after_waits(hub, env):
    hub.add("org/m-GGUF", Repo(gguf_repo(), commit=COMMIT))
    hub.faults["429"] = 1
    hub.retry_after = "2"
    t = time.time()
    r = g4v(env, "pull", "org/m-GGUF", "--whole")
    check(r.returncode == 0 and time.time() - t >= 2, "waited Retry-After seconds")


@pytest.mark.parametrize("lie", ["size", "size_bigger", "sha", "overlong", "corrupt"])
def test_lies_refused(hub, env, lie):
    files = gguf_repo()
    repo = Repo(files, commit=COMMIT)
    if lie == "size":
        repo.size_lie["model-Q8_0.gguf"] = len(files["model-Q8_0.gguf"]) - 10
    elif lie == "size_bigger":
        repo.size_lie["model-Q8_0.gguf"] = len(files["model-Q8_0.gguf"]) + 10
    elif lie == "sha":
        repo.sha_lie["model-Q8_0.gguf"] = "0" * 64
    elif lie == "corrupt":  # only the sha256 can tell
        hub.faults["corrupt"] = 100
    else:
        hub.faults["overlong"] = 100
    hub.add("org/m-GGUF", repo)
    r = g4v(env, "pull", "org/m-GGUF:Q8_0")
    check(r.returncode == 3 and "refused" in r.stderr, f"{lie}: {r.stderr}")
    snap = os.path.join(hf_repo_dir(env, "org/m-GGUF"), "snapshots", COMMIT)
    check(not os.path.exists(os.path.join(snap, "model-Q8_0.gguf")), f"{lie}: no file in place")
    bad = hashlib.sha256(files["model-Q8_0.gguf"]).hexdigest()
    check(bad not in whole_blob_state(env, "org/m-GGUF"), f"{lie}: no blob under its name")


@pytest.mark.parametrize("name", ["../evil", "/abs/evil", "a/../../evil", "a//b", "a\\b"])
def test_traversal_refused(hub, env, name):
    repo = Repo(gguf_repo(), commit=COMMIT)
    repo.extra_siblings.append({"rfilename": name, "size": 4, "blobId": "1" * 40})
    hub.add("org/m-GGUF", repo)
    r = g4v(env, "pull", "org/m-GGUF", "--whole")
    check(r.returncode == 3 and "outside" in r.stderr, f"{name!r}: {r.stderr}")
    check(not os.path.exists(os.path.join(env["HOME"], ".cache/huggingface/evil")), "nothing out")


def test_header_beyond_file(hub, env, checkpoint):
    files = files_of(checkpoint)
    shard = sorted(p for p in files if p.endswith(".safetensors"))[0]
    b = bytearray(files[shard])
    b[0:8] = struct.pack("<Q", len(b) * 2)
    files[shard] = bytes(b)
    hub.add("google/tiny-it", Repo(files, commit=COMMIT))
    r = g4v(env, "pull", "google/tiny-it")
    check(r.returncode == 3 and "header" in r.stderr and "refused" in r.stderr, r.stderr)
    check(not os.path.exists(os.path.join(env["HOME"], ".cache/g4v/hub/models--google--tiny-it",
                                          "vision")), "no vision folder")


def test_vision_total_lies(hub, env, checkpoint):
    """Range answers whose Content-Range total is not the listed size: refused, no folder."""
    hub.add("google/tiny-it", ck_repo(checkpoint))
    hub.faults["overlong206"] = 100
    r = g4v(env, "pull", "google/tiny-it")
    check(r.returncode == 3 and "Content-Range" in r.stderr and "refused" in r.stderr, r.stderr)
    check(not os.path.exists(os.path.join(env["HOME"], ".cache/g4v/hub/models--google--tiny-it",
                                          "vision")), "no vision folder")


def test_tensor_range_beyond_file(hub, env, checkpoint):
    files = files_of(checkpoint)
    shard = sorted(p for p in files if p.endswith(".safetensors"))[0]
    b = files[shard]
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    k = next(k for k in h if k != "__metadata__")
    h[k]["data_offsets"][1] += len(b)
    raw = json.dumps(h).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    files[shard] = struct.pack("<Q", len(raw)) + raw + b[8 + n:]
    hub.add("google/tiny-it", Repo(files, commit=COMMIT))
    r = g4v(env, "pull", "google/tiny-it")
    check(r.returncode == 3 and "data_offsets" in r.stderr, r.stderr)


@pytest.mark.parametrize("lie", ["offset-fraction", "name-twice", "metadata-number"])
def test_header_lies_refused(hub, env, checkpoint, lie):
    """Headers the parser (common/hub_parse.c) refuses before a tensor byte is asked for."""
    files = files_of(checkpoint)
    shard = sorted(p for p in files if p.endswith(".safetensors"))[0]
    b = files[shard]
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    k = next(k for k in h if k != "__metadata__")
    if lie == "offset-fraction":  # was taken as [0, end - 1] by a cast
        h[k]["data_offsets"] = [h[k]["data_offsets"][0] + 0.5, h[k]["data_offsets"][1] + 0.5]
        raw = json.dumps(h).encode()
    elif lie == "metadata-number":
        h["__metadata__"] = 7
        raw = json.dumps(h).encode()
    else:  # the first tensor again at the end: two entries, one name
        raw = json.dumps(h).encode()[:-1] + b", " + json.dumps(k).encode() + b": " + \
            json.dumps(h[k]).encode() + b"}"
    raw += b" " * ((8 - len(raw) % 8) % 8)
    files[shard] = struct.pack("<Q", len(raw)) + raw + b[8 + n:]
    hub.add("google/tiny-it", Repo(files, commit=COMMIT))
    r = g4v(env, "pull", "google/tiny-it")
    want = {"offset-fraction": "data_offsets", "name-twice": "twice",
            "metadata-number": "__metadata__"}[lie]
    check(r.returncode == 3 and want in r.stderr and "refused" in r.stderr, f"{lie}: {r.stderr}")
    st = [x for x in hub.log if x["host"] == "127.0.0.2" and x["range"] and
          int(x["range"].split("=")[1].split("-")[0]) > 8]
    check(not st, f"{lie}: no tensor byte asked for: {st}")


def test_listing_size_fraction_refused(hub, env):
    repo = Repo(gguf_repo(), commit=COMMIT)
    repo.size_lie["model-Q8_0.gguf"] = len(repo.files["model-Q8_0.gguf"]) + 0.5
    hub.add("org/m-GGUF", repo)
    r = g4v(env, "pull", "org/m-GGUF:Q8_0")
    check(r.returncode == 3 and "no size" in r.stderr and "refused" in r.stderr, r.stderr)
    check(not any("/resolve/" in x["path"] for x in hub.log), "no file asked for")


def test_disk_full(hub, env):
    hub.add("org/m-GGUF", Repo(gguf_repo(), commit=COMMIT))

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100 * 1024, 100 * 1024))

    r = subprocess.run([pyutil.BIN, "pull", "org/m-GGUF", "--whole"], capture_output=True,
                       text=True, env=env, preexec_fn=limit)
    check(r.returncode == 4 and "disk is full" in r.stderr, f"disk full: {r.stderr}")
    snap = os.path.join(hf_repo_dir(env, "org/m-GGUF"), "snapshots", COMMIT)
    check(not os.path.exists(os.path.join(snap, "model-Q4_K_M.gguf")), "no half model in place")
    r = g4v(env, "pull", "org/m-GGUF", "--whole")
    check(r.returncode == 0, f"then it resumes: {r.stderr}")


def test_interrupt_then_resume(hub, env):
    files = gguf_repo()
    hub.add("org/m-GGUF", Repo(files, commit=COMMIT))
    hub.throttle = 0.2  # ~0.2 s between 64 KiB pieces: the SIGINT lands mid-file under load too
    size_of = {hashlib.sha256(b).hexdigest(): len(b) for b in files.values()}
    p = subprocess.Popen([pyutil.BIN, "pull", "org/m-GGUF:Q4_K_M"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    blobs = os.path.join(hf_repo_dir(env, "org/m-GGUF"), "blobs")

    def midway(n):  # a blob past its first 64 KiB, not yet whole (a whole one is being renamed)
        try:
            k = os.path.getsize(os.path.join(blobs, n))
        except OSError:
            return False
        return n.endswith(".incomplete") and 64 * 1024 < k < size_of[n[:-len(".incomplete")]]

    t = time.time()
    while time.time() - t < 20:
        if any(midway(n) for n in (os.listdir(blobs) if os.path.isdir(blobs) else [])):
            break
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=20)
    inc = [n for n in os.listdir(blobs) if n.endswith(".incomplete")]
    check(inc, "Ctrl-C leaves the .incomplete")
    partial = {n: os.path.getsize(os.path.join(blobs, n)) for n in inc}
    partial = {n: k for n, k in partial.items() if 0 < k < size_of[n[:-len(".incomplete")]]}
    check(partial, "a partial file to resume: %s" %
          [(n, os.path.getsize(os.path.join(blobs, n))) for n in inc])
    hub.throttle = 0
    n = len(hub.log)
    r = g4v(env, "pull", "org/m-GGUF:Q4_K_M")
    check(r.returncode == 0, f"resumed: {r.stderr}")
    for have in partial.values():
        check(any(x["range"] and x["range"].startswith("bytes=%d-" % have) for x in hub.log[n:]),
              f"resumed from byte {have}")
    snap = os.path.join(hf_repo_dir(env, "org/m-GGUF"), "snapshots", COMMIT)
    check(open(os.path.join(snap, "model-Q4_K_M.gguf"), "rb").read() == files["model-Q4_K_M.gguf"],
          "resumed file intact")


def st_vision_ranges(blob):
    """The vision tensors of a safetensors file as (file offset begin, end), in file order."""
    n = struct.unpack("<Q", blob[:8])[0]
    h = json.loads(blob[8:8 + n])
    return sorted((8 + n + v["data_offsets"][0], 8 + n + v["data_offsets"][1])
                  for k, v in h.items() if k != "__metadata__" and
                  k.split(".")[1 if k.startswith("model.") else 0] in
                  ("vision_tower", "vision_embedder", "embed_vision"))


def data_requests(log, blobs):
    """path of each file fetched from the CDN -> [(range start, bytes sent)] of its tensor-data
    requests (not the two header requests, which start at byte 0 and 8)."""
    out = {p: [] for p in blobs}
    for x in log:
        m = x["path"].split("?")[0]
        for p, b in blobs.items():
            if x["host"] == "127.0.0.2" and m == "/blob/" + hashlib.sha256(b).hexdigest() and \
                    x["range"]:
                start = int(x["range"].split("=")[1].split("-")[0])
                if start not in (0, 8):
                    out[p].append((start, x["sent"]))
    return out


@pytest.mark.parametrize("how", ["sigint", "drop"])
def test_vision_interrupt_then_resume(hub, env, checkpoint, image, tmp_path, how):
    """A vision-only pull stopped half-way (Ctrl-C, or a dropped connection whose retries run out)
    leaves partial/COMMIT; the next pull asks only for the bytes it lacks, from the source byte
    where the shard stopped, and the result is the uninterrupted pull's, bit for bit."""
    repo = ck_repo(checkpoint)
    hub.add("google/tiny-it", repo)
    shards = {p: b for p, b in repo.files.items() if p.endswith(".safetensors")}
    # the reference: an uninterrupted pull into another cache, and what it asked for
    ref_env = dict(env, G4V_HUB_CACHE=str(tmp_path / "ref-cache"))
    r = g4v(ref_env, "pull", "google/tiny-it", "--json")
    check(r.returncode == 0, f"reference pull: {r.stderr}")
    ref = json.loads(r.stdout.splitlines()[-1])
    ref_data = data_requests(hub.log, shards)
    big = max(shards, key=lambda p: sum(e - b for b, e in st_vision_ranges(shards[p])))
    vision_big = sum(e - b for b, e in st_vision_ranges(shards[big]))
    check(len(ref_data[big]) == 1 and vision_big > 200 * 1024,
          f"{big}: one request of {vision_big} vision bytes: {ref_data[big]}")
    run_start = ref_data[big][0][0]
    # the interrupted pull
    vd = os.path.join(env["HOME"], ".cache/g4v/hub/models--google--tiny-it")
    part = os.path.join(vd, "partial", COMMIT, big)
    n0 = len(hub.log)
    if how == "sigint":
        hub.throttle = 0.2
        p = subprocess.Popen([pyutil.BIN, "pull", "google/tiny-it"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        t = time.time()
        while time.time() - t < 30 and p.poll() is None:
            if os.path.exists(part) and os.path.getsize(part) >= 8:
                hl = struct.unpack("<Q", open(part, "rb").read(8))[0]
                if 64 * 1024 <= os.path.getsize(part) - 8 - hl < vision_big:
                    break
            time.sleep(0.01)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=20)
        hub.throttle = 0
        check(p.returncode != 0, "interrupted before it finished")
    else:
        hub.drop_at = 100000
        hub.faults["drop"] = 1
        hub.after_drop = {"drop": 100, "drop_at": 0}  # then no byte more: the retries run out
        r = g4v(env, "pull", "google/tiny-it")
        check(r.returncode == 3 and "it resumes" in r.stderr, f"gave up: {r.stderr}")
        hub.faults.clear()
        hub.after_drop = {}
    check(not os.path.exists(os.path.join(vd, "vision", COMMIT)), "no vision folder yet")
    check(os.path.exists(part), f"the partial shard is kept: {part}")
    raw = open(part, "rb").read()
    hl = struct.unpack("<Q", raw[:8])[0]
    have = len(raw) - 8 - hl
    check(0 < have < vision_big, f"{big}: {have} of {vision_big} vision bytes kept")
    if how == "drop":
        check(have == 100000, f"every byte received before the drop kept: {have}")
    # where in the source file those bytes end
    left, resume = have, None
    for b, e in st_vision_ranges(shards[big]):
        if left < e - b:
            resume = b + left
            break
        left -= e - b
    # again: only the rest
    n1 = len(hub.log)
    r = g4v(env, "pull", "google/tiny-it", "--json")
    check(r.returncode == 0, f"resumed: {r.stderr}")
    res = json.loads(r.stdout.splitlines()[-1])
    got = data_requests(hub.log[n1:], shards)
    check([s for s, _ in got[big]] == [resume],
          f"{big}: asked from byte {resume}, where it stopped: {got[big]}")
    for q in shards:
        if q != big:
            check(not got[q], f"{q}: whole before the interruption, not asked again: {got[q]}")
    sent2 = sum(k for v in got.values() for _, k in v)
    ref_sent = sum(k for v in ref_data.values() for _, k in v)
    check(sent2 == ref_data[big][0][1] - (resume - run_start),
          f"the second pull fetched only the rest: {sent2} bytes, the whole run is "
          f"{ref_data[big][0][1]} from byte {run_start}, resumed at {resume}")
    check(sent2 <= ref_sent - have, f"nothing fetched twice: {sent2} + {have} > {ref_sent}")
    check(res["fetched"] < ref["fetched"], f"fetched {res['fetched']} < {ref['fetched']}")
    # the result: the uninterrupted pull's files, and the whole checkpoint's soft tokens
    path = res["path"]
    check(files_of(path) == files_of(ref["path"]), "the same files as the uninterrupted pull")
    check(not os.path.exists(os.path.join(vd, "partial", COMMIT)) and
          not os.path.exists(os.path.join(vd, "partial", COMMIT + ".lock")),
          "the partial folder and its lock are gone")
    a = encode(env, checkpoint, image, str(tmp_path / "a.npy"))
    b = encode(env, path, image, str(tmp_path / "b.npy"))
    check(a is not None and b is not None and a.tobytes() == b.tobytes(),
          "the resumed vision-only checkpoint encodes bit-identically to the whole one")


def test_concurrent(hub, env, checkpoint):
    files = gguf_repo()
    hub.add("org/m-GGUF", Repo(files, commit=COMMIT))
    hub.add("google/tiny-it", ck_repo(checkpoint))
    hub.throttle = 0.01
    ps = [subprocess.Popen([pyutil.BIN, "pull", repo, *extra], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
          for repo, extra in [("org/m-GGUF", ["--whole"])] * 2 + [("google/tiny-it", [])] * 2]
    outs = [p.communicate(timeout=120) for p in ps]
    check(all(p.returncode == 0 for p in ps), f"both pulls succeed: {[o[1] for o in outs]}")
    snap = os.path.join(hf_repo_dir(env, "org/m-GGUF"), "snapshots", COMMIT)
    for p, b in files.items():
        check(open(os.path.join(snap, p), "rb").read() == b, f"{p} intact")
    check(not [n for n in whole_blob_state(env, "org/m-GGUF") if ".incomplete" in n],
          "no .incomplete left")
    vd = os.path.join(env["HOME"], ".cache/g4v/hub/models--google--tiny-it")
    check(os.listdir(os.path.join(vd, "vision")) == [COMMIT] and
          not [n for n in os.listdir(vd) if n.startswith("tmp.")], "one vision copy, no tmp")


def test_progress_only_where_asked(hub, env):
    hub.add("org/m-GGUF", Repo(gguf_repo(), commit=COMMIT))
    r = g4v(env, "pull", "org/m-GGUF:Q8_0")
    check(r.returncode == 0 and "\r" not in r.stderr and "ETA" not in r.stderr,
          "no progress bar on a pipe")
    r = g4v(env, "pull", "org/m-GGUF:Q8_0", "--quiet")
    check(r.stdout.strip().endswith(COMMIT) and not r.stderr, f"--quiet: {r.stdout!r}")


def test_usage(env):
    r = g4v(env, "pull", "--help")
    check(r.returncode == 0 and "HF_TOKEN" in r.stdout and "--whole" in r.stdout, "--help")
    for bad in ("noslash", "a/b/c", "../x", "a/b@", "hf:a/.."):
        r = g4v(env, "pull", bad)
        check(r.returncode == 1, f"{bad!r}: usage error ({r.stderr})")


def test_python_model_by_name(hub, env, checkpoint, image):
    lib = os.path.join(pyutil.BUILD, "libg4v.so")
    if not os.path.exists(lib):
        pytest.skip("no libg4v.so in the build")
    hub.add("google/tiny-it", ck_repo(checkpoint))
    code = ("import sys, numpy as np, gemma4_vision as g\n"
            "a = g.Model(sys.argv[1]).encode(sys.argv[3]).features\n"
            "b = g.Model(sys.argv[2]).encode(sys.argv[3]).features\n"
            "print('same' if np.array_equal(a, b) else 'differ')\n")
    e = dict(env, PYTHONPATH=os.path.join(pyutil.SRC, "python"), G4V_LIBRARY=lib,
             G4V_BIN=pyutil.BIN)
    r = subprocess.run([sys.executable, "-c", code, "hf:google/tiny-it", checkpoint, image],
                       capture_output=True, text=True, env=e)
    check(r.returncode == 0 and r.stdout.strip() == "same",
          f"Model('hf:...') pulls and encodes as the whole checkpoint: {r.stdout} {r.stderr}")
    e["HF_HUB_OFFLINE"] = "1"
    r = subprocess.run([sys.executable, "-c", "import gemma4_vision as g; g.Model('hf:x/y')"],
                       capture_output=True, text=True, env=e)
    check(r.returncode != 0 and "HF_HUB_OFFLINE" in r.stderr, f"offline: {r.stderr[-300:]}")


def test_lm_by_name_picks_quant(hub, env, checkpoint, tmp_path):
    sys.path.insert(0, os.path.join(pyutil.SRC, "tools"))
    import gguf_from_checkpoint as gfc
    files = {}
    for q in ("Q4_K_M", "Q8_0"):
        p = str(tmp_path / q)
        gfc.write_standalone(p, [("general.architecture", gfc.STRING, "gemma4"),
                                 ("tokenizer.chat_template", gfc.STRING, "{{ x }}")],
                             [("token_embd.weight", gfc.F32, (4,), bytes(16))])
        files["gemma-4-E4B-it-%s.gguf" % q] = open(p, "rb").read()
    hub.add("ggml-org/gemma-4-E4B-it-GGUF", Repo(files, commit=COMMIT))
    # serve resolves --model and --lm first (then, without libllama, refuses --lm; with it, fails
    # to load the header-only GGUF): the name was pulled either way
    args = ("serve", "--model", checkpoint, "--lm", "hf:ggml-org/gemma-4-E4B-it-GGUF:Q8_0",
            "--port", "0")
    r = g4v(env, *args, timeout=120)
    snap = os.path.join(hf_repo_dir(env, "ggml-org/gemma-4-E4B-it-GGUF"), "snapshots", COMMIT)
    check(r.returncode != 0 and os.path.isdir(snap) and
          sorted(os.listdir(snap)) == ["gemma-4-E4B-it-Q8_0.gguf"],
          f"--lm hf:REPO:QUANT pulled only that GGUF: {r.stderr}")
    n = len(hub.log)
    r = g4v(env, *args, timeout=120)
    check(len(hub.log) == n, "on disk: no request")


def test_progress_bar_on_a_terminal(hub, env):
    import pty
    hub.add("org/m-GGUF", Repo(gguf_repo(), commit=COMMIT))
    master, slave = pty.openpty()
    p = subprocess.Popen([pyutil.BIN, "pull", "org/m-GGUF:Q8_0"], env=env, stdout=subprocess.PIPE,
                         stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait(timeout=60)
    os.close(master)
    text = out.decode(errors="replace")
    check(p.returncode == 0 and "ETA" in text and "%" in text and "/s" in text
          and "model-Q8_0.gguf" in text, f"a progress bar on a terminal: {text[-300:]!r}")
