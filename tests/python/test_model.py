"""The gemma4_vision package (Model, Result, G4VError) against the g4v CLI: bit-identical features
for every input kind, the result's fields, model.info, the errors with their library statuses,
Python threads sharing one model (the GIL released during the C call), and the imports running
one way (_lib -> _errors)."""
import json
import os
import pickle
import subprocess
import threading
import time

import numpy as np
import pytest
from PIL import Image

import conftest
import gemma4_vision as g4
from conftest import cli_encode, g4v, same_bits, write_images


@pytest.fixture(scope="module")
def model(tiny):
    with g4.Model(tiny, threads=1) as m:
        yield m


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("img")
    return write_images(str(d), 5, sizes=[(100, 150), (64, 90), (120, 80), (57, 61), (48, 200)])


def test_library_found():
    assert os.path.exists(g4.library_path())
    assert g4.library_version().count(".") == 2


def test_imports_run_one_way():
    """The package's modules import each other without a circle: _errors imports nothing of the
    package (_lib imports it and hands it the library's status names)."""
    import ast
    src = os.path.join(os.path.dirname(g4.__file__), "_errors.py")
    tree = ast.parse(open(src, encoding="utf-8").read())
    local = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 0]
    assert not local, [ast.dump(n) for n in local]
    assert g4.status_name(3) == "G4V_ERR_MODEL"
    assert g4.G4VError(4, "x").status_name == "G4V_ERR_IMAGE"


@pytest.mark.parametrize("tokens", [70, 140])
def test_files_match_cli(model, images, tmp_path, tokens):
    """Every format by path: features, sizes, grid and prompt ids as `g4v encode` gives them."""
    for p in images:
        ref, js = cli_encode(model.path, p, tmp_path / "x.npy", "--tokens", tokens)
        r = model.encode(p, tokens=tokens)
        assert same_bits(r.features, ref), p
        assert r.features.dtype == np.float32 and r.features.shape == (r.n_tokens, r.dim)
        assert list(r.grid) == js["grid"] and r.n_tokens == js["tokens"] == r.grid[0] * r.grid[1]
        assert list(r.original_size) == js["original_size"]
        assert list(r.target_size) == js["target_size"]
        assert r.budget == js["budget"] == tokens and r.dim == js["dim"]
        ids = js["prompt_ids"]
        assert r.prompt_ids.tolist() == [ids["boi"]] + [ids["image"]] * r.n_tokens + [ids["eoi"]]
        assert r.prompt == "<|image>" + "<|image|>" * r.n_tokens + "<image|>"


def test_every_input_kind_matches_cli(model, images, tmp_path):
    """path, bytes, bytearray, memoryview, uint8 array (also a strided view), PIL image (also a
    non-RGB mode), and a .npy path: all the same bits as the CLI."""
    png = images[0]
    ref, _ = cli_encode(model.path, png, tmp_path / "ref.npy", "--tokens", 70)
    data = open(png, "rb").read()
    pixels = np.asarray(Image.open(png).convert("RGB"))
    npy = tmp_path / "pixels.npy"
    np.save(npy, pixels)
    ref_npy, _ = cli_encode(model.path, npy, tmp_path / "ref2.npy", "--tokens", 70)
    assert same_bits(ref_npy, ref)  # the CLI itself: .npy pixels == the PNG
    wide = np.zeros((pixels.shape[0], pixels.shape[1] + 5, 4), np.uint8)
    wide[:, :pixels.shape[1], :3] = pixels
    strided = wide[:, :pixels.shape[1], :3]  # not contiguous: copied before the call
    kinds = {"str path": png, "PathLike": type(tmp_path)(png), "bytes": data,
             "bytearray": bytearray(data), "memoryview": memoryview(data), "array": pixels,
             "strided array": strided, "PIL RGB": Image.open(png),
             "PIL RGBA": Image.open(png).convert("RGBA"), ".npy path": str(npy)}
    for kind, image in kinds.items():
        r = model.encode(image, tokens=70)
        assert same_bits(r.features, ref), kind
        assert r.original_size == (pixels.shape[1], pixels.shape[0]), kind


def test_encode_batch_matches_encode(model, images):
    """encode_batch on paths, bytes, arrays and PIL images of several sizes, mixed: each result
    bit-identical to encode() on that image, in order; a bad image raises naming its index, or
    (errors="return") takes its place as a G4VError while the others are encoded."""
    pixels = [np.asarray(Image.open(p).convert("RGB")) for p in images]
    inputs = [pixels[0], images[1], open(images[2], "rb").read(), pixels[3],
              Image.open(images[4])]
    batch = model.encode_batch(inputs, tokens=70, bf16=True)
    assert len(batch) == 5
    for p, r in zip(images, batch):
        one = model.encode(p, tokens=70, bf16=True)
        assert same_bits(r.features, one.features) and (r.features_bf16 == one.features_bf16).all()
        assert r.grid == one.grid and r.original_size == one.original_size
    assert model.encode_batch([]) == []
    with pytest.raises(TypeError) as e:
        model.encode_batch([pixels[0], 42])
    assert "image 1" in str(e.value)
    bad = [pixels[0], b"not an image", images[1]]
    with pytest.raises(g4.G4VError) as e:
        model.encode_batch(bad, tokens=70)
    assert "image 1 of the batch" in str(e.value) and e.value.status_name == "G4V_ERR_UNSUPPORTED"
    got = model.encode_batch(bad, tokens=70, errors="return")
    assert isinstance(got[1], g4.G4VError) and got[1].status_name == "G4V_ERR_UNSUPPORTED"
    assert same_bits(got[2].features, model.encode(images[1], tokens=70).features)
    with pytest.raises(ValueError):
        model.encode_batch(bad, errors="ignore")


def test_results_own_their_arrays(model, tiny, tmp_path):
    """Two different images of one size, encoded one after the other (and as a batch) and all
    kept: their features (float32 and bf16) differ, and each equals a fresh encode of its image
    by a second model (no result shares memory with another or with the library's buffers)."""
    rng = np.random.default_rng(21)
    pics = [rng.integers(0, 256, (96, 144, 3), dtype=np.uint8) for _ in range(2)]
    kept = [model.encode(a, tokens=70, bf16=True) for a in pics]
    kept += model.encode_batch(pics, tokens=70, bf16=True)
    paths = []
    for i, a in enumerate(pics):
        paths.append(str(tmp_path / f"same-size-{i}.png"))
        Image.fromarray(a).save(paths[-1])
    kept += [model.encode(p, tokens=70, bf16=True) for p in paths]
    with g4.Model(tiny, threads=1) as fresh_model:
        fresh = [fresh_model.encode(a, tokens=70, bf16=True) for a in pics]
    for k, r in enumerate(kept):
        i = k % 2
        assert not np.shares_memory(r.features, kept[k ^ 1].features), k
        assert not (r.features == kept[k ^ 1].features).all(), f"result {k}: same as its pair"
        assert not (r.features_bf16 == kept[k ^ 1].features_bf16).all(), k
        assert same_bits(r.features, fresh[i].features), f"result {k}: not image {i}'s features"
        assert same_bits(r.features_bf16, fresh[i].features_bf16), k


def test_int8_matches_cli(tiny, images, tmp_path):
    """int8=True is the INT8 mode of `g4v encode --int8`, bit for bit, and not the default."""
    p = images[2]
    with g4.Model(tiny, threads=2, int8=True, budget=140) as m:
        ref, _ = cli_encode(tiny, p, tmp_path / "i.npy", "--tokens", 140, "--int8")
        r = m.encode(p)
        assert m.info.int8 == 1 and same_bits(r.features, ref)
    with g4.Model(tiny, threads=2, budget=140) as m:
        assert m.info.int8 == 0 and not same_bits(m.encode(p).features, ref)
    with pytest.raises(ValueError, match="two math modes"):
        g4.Model(tiny, precise=True, int8=True)


def test_int8_blocks_matches_cli(tiny, images, tmp_path):
    """int8="blocks" is `g4v encode --int8=blocks`, bit for bit, and neither INT8 nor FAST."""
    p = images[2]
    with g4.Model(tiny, threads=2, int8="blocks", budget=140) as m:
        ref, _ = cli_encode(tiny, p, tmp_path / "b.npy", "--tokens", 140, "--int8=blocks")
        r = m.encode(p)
        assert m.info.int8 == 2 and same_bits(r.features, ref)
    with g4.Model(tiny, threads=2, int8=True, budget=140) as m:
        assert not same_bits(m.encode(p).features, ref)
    with pytest.raises(ValueError, match="'blocks'"):
        g4.Model(tiny, int8="rows")
    with pytest.raises(ValueError, match="two math modes"):
        g4.Model(tiny, precise=True, int8="blocks")


def test_math_matches_cli(tiny, images, tmp_path):
    """math= names each mode as `g4v encode --math` does, bit for bit; info.math is its name and
    info.precise / info.int8 read as they did before math existed; precise= and int8= are aliases
    of math=, and two different modes or an unknown name are refused."""
    assert g4.MATH_MODES == ("fast", "precise", "int8", "int8-blocks")
    p = images[1]
    legacy = {"fast": (0, 0), "precise": (1, 0), "int8": (0, 1), "int8-blocks": (0, 2)}
    aliases = {"fast": {}, "precise": {"precise": True}, "int8": {"int8": True},
               "int8-blocks": {"int8": "blocks"}}
    refs = {}
    for name in g4.MATH_MODES:
        refs[name], _ = cli_encode(tiny, p, tmp_path / f"{name}.npy", "--tokens", 70, "--math", name)
        for kw in ({"math": name}, aliases[name], {"math": name, **aliases[name]}):
            with g4.Model(tiny, threads=1, budget=70, **kw) as m:
                assert same_bits(m.encode(p).features, refs[name]), kw
                assert m.info.math == name and (m.info.precise, m.info.int8) == legacy[name], kw
                assert "legacy_int8" not in m.info.as_dict()
    assert len({r.tobytes() for r in refs.values()}) == 4  # four modes, four outputs
    for kw in ({"math": "int8", "precise": True}, {"math": "fast", "int8": "blocks"},
               {"math": "int8-blocks", "int8": True}):
        with pytest.raises(ValueError, match="two math modes"):
            g4.Model(tiny, **kw)
    with pytest.raises(ValueError, match="unknown math mode 'INT8'"):
        g4.Model(tiny, math="INT8")
    with pytest.raises(TypeError, match="math must be a str"):
        g4.Model(tiny, math=2)


def test_bf16_and_precise_match_cli(tiny, images, tmp_path):
    p = images[2]
    with g4.Model(tiny, threads=2, precise=True, budget=140) as m:
        ref, _ = cli_encode(tiny, p, tmp_path / "p.npy", "--tokens", 140, "--precise")
        r = m.encode(p)  # the model's budget
        assert r.budget == 140 and same_bits(r.features, ref)
        ref16, _ = cli_encode(tiny, p, tmp_path / "b.npy", "--tokens", 140, "--precise", "--bf16")
        r = m.encode(p, bf16=True)
        assert r.features_bf16.dtype == np.uint16 and same_bits(r.features_bf16, ref16)
        assert same_bits(r.features, ref)
        assert m.encode(p).features_bf16 is None


def test_exif(model, tmp_path):
    """An EXIF-rotated JPEG: applied by default (as the CLI), not with exif=False (--no-exif)."""
    a = np.random.default_rng(3).integers(0, 256, (60, 100, 3), dtype=np.uint8)
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    p = tmp_path / "rot.jpg"
    Image.fromarray(a).save(p, exif=exif.tobytes(), quality=95)
    ref, js = cli_encode(model.path, p, tmp_path / "r.npy", "--tokens", 70)
    r = model.encode(p, tokens=70)
    assert r.original_size == (60, 100) and js["original_size"] == [60, 100]
    assert same_bits(r.features, ref)
    ref2, _ = cli_encode(model.path, p, tmp_path / "r2.npy", "--tokens", 70, "--no-exif")
    r2 = model.encode(p, tokens=70, exif=False)
    assert r2.original_size == (100, 60) and same_bits(r2.features, ref2)


def test_resize(model, tiny, images, tmp_path):
    """resize="torchvision" (per call, or the model's default) matches `g4v encode --resize
    torchvision`, differs from the default Pillow resize, and the feature cache keeps the two
    apart."""
    p = str(tmp_path / "r.png")
    a = np.random.default_rng(5).integers(0, 256, (157, 233, 3), dtype=np.uint8)
    Image.fromarray(a).save(p)
    pil = model.encode(p, tokens=70)
    assert same_bits(pil.features, model.encode(p, tokens=70, resize="pillow").features)
    ref, _ = cli_encode(model.path, p, tmp_path / "t.npy", "--tokens", 70, "--resize",
                        "torchvision")
    tv = model.encode(p, tokens=70, resize="torchvision")
    assert same_bits(tv.features, ref) and not same_bits(tv.features, pil.features)
    assert same_bits(model.encode(a, tokens=70, resize="torchvision").features, ref)
    assert same_bits(model.encode_batch([a], tokens=70, resize="torchvision")[0].features, ref)
    with g4.Model(tiny, threads=1, resize="torchvision") as m:
        assert m.info.resize == 1 and model.info.resize == 0
        assert same_bits(m.encode(p, tokens=70).features, ref)
        assert same_bits(m.encode(p, tokens=70, resize="pillow").features, pil.features)
    for bad in ("bilinear", 1, None):
        with pytest.raises(ValueError if isinstance(bad, str) else TypeError):
            g4.Model(tiny, resize=bad)
    with pytest.raises(ValueError, match="torch"):
        model.encode(p, resize="torch")
    cache = str(tmp_path / "cache")
    _, j1 = cli_encode(model.path, p, tmp_path / "c1.npy", "--tokens", 70, "--cache", cache)
    f2, j2 = cli_encode(model.path, p, tmp_path / "c2.npy", "--tokens", 70, "--cache", cache,
                        "--resize", "torchvision")
    f3, j3 = cli_encode(model.path, p, tmp_path / "c3.npy", "--tokens", 70, "--cache", cache,
                        "--resize", "torchvision")
    assert (j1["cache"], j2["cache"], j3["cache"]) == ("miss", "miss", "hit")
    assert same_bits(f2, ref) and same_bits(f3, ref)
    bad = g4v("encode", "--model", model.path, p, "--resize", "lanczos", "-o", str(tmp_path / "x"),
              check=False)
    assert bad.returncode == 1 and "lanczos" in bad.stderr


def test_info_matches_cli(model):
    js = json.loads(g4v("info", "--model", model.path, "--json").stdout)
    info = model.info.as_dict()
    assert info["dim"] == model.encode(np.zeros((48, 48, 3), np.uint8)).dim
    flat = {}
    for k, v in js.items():  # compare every scalar the CLI prints under the same name
        if k == "llama_cpu_backend":  # the text model's library, not the vision model
            continue
        if isinstance(v, dict):
            flat.update(v)
        else:
            flat[k] = v
    common = [k for k in info if k in flat and not isinstance(flat[k], (dict, list))]
    assert len(common) >= 10, common
    for k in common:
        assert info[k] == flat[k], k
    # the kernel table: the same line in the API and the CLI; G4V_ISA caps it
    assert "kernels" in common and " gemm=" in info["kernels"] and " attention=" in info["kernels"]
    env = dict(os.environ, G4V_ISA="portable")
    r = subprocess.run([conftest.BIN, "info", "--model", model.path, "--json"],
                       capture_output=True, text=True, env=env)
    ks = json.loads(r.stdout)["kernels"]
    assert "gemm=portable-bf16w-inplace attention=portable " in ks and "avx" not in ks, ks
    assert model.plan(150, 100, 70) == (480, 288, 60)
    # the CPU side: the BF16 kernel rule, and AMX's answer as the CLI gives it. Asked here, under
    # pytest (whose faulthandler installs a sigaltstack): on a CPU with AMX the tile permission
    # must not be refused in this process (docs/ARCHITECTURE.md §3 "AMX (groundwork)")
    assert info["kernel_rule"] == js["kernel_rule"] and info["kernel_rule"].startswith("bf16=")
    assert info["amx"] == js["amx"]["reason"] and bool(info["amx_usable"]) == js["amx"]["usable"]
    assert info["amx_self_test"] == js["amx"]["self_test"]
    # sharp layers (docs/NUMERICS.md §6.5): one entry per layer, as the CLI lists them
    assert len(info["layer_sharpness"]) == len(info["layer_precise"]) == info["num_layers"]
    assert [round(x, 5) for x in info["layer_sharpness"]] == \
        [round(lr["sharpness"], 5) for lr in js["sharpness"]["layers"]]
    assert info["layer_precise"] == [lr["runs_precise"] for lr in js["sharpness"]["layers"]]
    assert info["n_precise"] == js["sharpness"]["precise_layers"]
    flags = next((ln for ln in open("/proc/cpuinfo") if ln.startswith("flags")), "") \
        if os.path.exists("/proc/cpuinfo") else ""
    if " amx_tile" in flags and " amx_bf16" in flags:
        assert "refused" not in info["amx"], info["amx"]
    elif flags:
        assert info["amx"].startswith("this CPU has no AMX"), info["amx"]
    # the fingerprint is the CLI's (same model, same mode), and stable across calls
    assert js["fingerprint_mode"] in ("fast", "FAST")
    assert model.fingerprint == js["fingerprint"] == model.fingerprint
    assert len(model.fingerprint) == 64 and int(model.fingerprint, 16) >= 0


def status(name):
    return ["G4V_OK", "G4V_ERR_ARG", "G4V_ERR_IO", "G4V_ERR_MODEL", "G4V_ERR_IMAGE",
            "G4V_ERR_LIMIT", "G4V_ERR_NOMEM", "G4V_ERR_UNSUPPORTED"].index(name)


def test_errors(model, tiny, images, tmp_path):
    png = open(images[0], "rb").read()
    (tmp_path / "trunc.png").write_bytes(png[: len(png) // 2])
    np.save(tmp_path / "f32.npy", np.zeros((10, 10, 3), np.float32))
    np.save(tmp_path / "gray.npy", np.zeros((10, 10), np.uint8))
    np.save(tmp_path / "fortran.npy", np.asfortranarray(np.zeros((10, 10, 3), np.uint8)))
    npy = np.lib.format.open_memmap(tmp_path / "trunc.npy", "w+", np.uint8, (50, 50, 3))
    del npy
    raw = (tmp_path / "trunc.npy").read_bytes()
    (tmp_path / "trunc.npy").write_bytes(raw[:-100])
    (tmp_path / "junk.png").write_bytes(b"not an image at all")
    cases = [
        (str(tmp_path / "missing.png"), {}, "G4V_ERR_IO", "missing.png"),
        (str(tmp_path / "trunc.png"), {}, "G4V_ERR_IMAGE", "trunc.png"),
        (str(tmp_path / "junk.png"), {}, "G4V_ERR_UNSUPPORTED", "unknown image format"),
        (b"", {}, None, "memory buffer"),
    ]
    # argument errors are Python's: TypeError for a type, ValueError for a value
    arg_cases = [
        (png, {"tokens": 300}, ValueError, "unsupported token budget 300"),
        (png, {"tokens": "280"}, TypeError, "tokens must be an integer"),
        (png, {"tokens": 280.0}, TypeError, "tokens must be an integer"),
        (np.zeros((10, 10), np.uint8), {}, ValueError, "uint8 [H, W, 3]"),
        (np.zeros((10, 10, 3), np.float32), {}, TypeError, "float32"),
        (np.zeros((0, 10, 3), np.uint8), {}, ValueError, "empty"),
        (12345, {}, TypeError, "not int"),
        (png, {"resize": 1}, TypeError, "resize"),
    ]
    for image, kw, exc, text in arg_cases:
        with pytest.raises(exc) as ei:
            model.encode(image, **kw)
        assert not isinstance(ei.value, g4.G4VError) and text in str(ei.value), (text, ei.value)
    for bad in ("f32.npy", "gray.npy", "fortran.npy", "trunc.npy"):  # as the CLI says
        r = g4v("encode", "--model", model.path, tmp_path / bad, "--json", "-o",
                tmp_path / "o.npy", check=False)
        js = json.loads(r.stdout)
        cases.append((str(tmp_path / bad), {}, js["status"], js["error"]))
    for image, kw, name, text in cases:
        with pytest.raises(g4.G4VError) as ei:
            model.encode(image, **kw)
        e = ei.value
        if name:
            assert e.status_name == name and e.status == status(name), (text, e)
        assert text in e.message and e.status_name in str(e), (text, e)
        again = pickle.loads(pickle.dumps(e))  # crosses process boundaries (Dask)
        assert (again.status, again.message) == (e.status, e.message)
    # the model works after every error
    assert model.encode(images[0], tokens=70).n_tokens > 0


def test_load_errors_and_limits(tiny, images, tmp_path):
    with pytest.raises(g4.G4VError) as ei:
        g4.Model(tmp_path / "nope")
    assert ei.value.status_name == "G4V_ERR_IO" and "nope" in ei.value.message
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{ this is not json")
    with pytest.raises(g4.G4VError) as ei:
        g4.Model(bad)
    assert ei.value.status_name == "G4V_ERR_MODEL"
    with pytest.raises(ValueError, match="100"):
        g4.Model(tiny, budget=100)
    with pytest.raises(TypeError):
        g4.Model(tiny, max_nonsense=1)
    for kw, exc in (({"threads": -1}, ValueError), ({"threads": "2"}, TypeError),
                    ({"threads": 1.5}, TypeError), ({"max_pixels": -5}, ValueError),
                    ({"max_pixels": "many"}, TypeError), ({"budget": "280"}, TypeError)):
        with pytest.raises(exc):
            g4.Model(tiny, **kw)
    with pytest.raises(TypeError):
        g4.Model(12345)
    with g4.Model(tiny, max_pixels=1000) as m:
        assert m.info.max_pixels == 1000
        with pytest.raises(g4.G4VError) as ei:
            m.encode(images[0])
        assert ei.value.status_name == "G4V_ERR_LIMIT" and "max_pixels" in ei.value.message
    m = g4.Model(tiny)
    m.close()
    m.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        m.encode(images[0])


def test_threads_share_one_model(tiny, images):
    """6 Python threads x 3 rounds over the images on one Model: every result equals the serial
    one; the pool grows to at most one context per concurrent call."""
    with g4.Model(tiny, threads=1) as m:
        serial = {p: m.encode(p, tokens=140).features for p in images}
        errors, start = [], threading.Barrier(6)

        def work(k):
            try:
                start.wait()
                for i in range(3 * len(images)):
                    p = images[(k + i) % len(images)]
                    assert same_bits(m.encode(p, tokens=140).features, serial[p]), p
            except BaseException as e:  # noqa: B036 - reported below
                errors.append(e)

        ts = [threading.Thread(target=work, args=(k,)) for k in range(6)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors
        assert 1 <= m.contexts <= 6


def test_gil_released_during_encode(tiny):
    """While one thread is inside a long encode, another Python thread keeps running. If the
    call held the GIL, the counting thread would stop for the whole call."""
    big = np.random.default_rng(5).integers(0, 256, (900, 1200, 3), dtype=np.uint8)
    with g4.Model(tiny, threads=1) as m:
        m.encode(big, tokens=70)  # create the context outside the measurement
        t0 = time.perf_counter()
        n = 0
        while time.perf_counter() - t0 < 0.2:
            n += 1
        alone = n / (time.perf_counter() - t0)  # iterations per second with nothing else running
        state = {"inside": False, "t": 0.0}

        def encode():
            state["inside"] = True
            t = time.perf_counter()
            m.encode(big, tokens=1120)
            state["t"] = time.perf_counter() - t
            state["inside"] = False

        th = threading.Thread(target=encode)
        th.start()
        while not state["inside"]:
            time.sleep(0)
        count = 0
        while state["inside"]:
            count += 1
        th.join()
        share = count / (alone * state["t"])
        # Released: the counter runs for most of the call (>= 0.5 on an idle machine). Held: it
        # could only run in a switch interval or two (5 ms each) of a call of ~1 s: 0.04 measured.
        print("GIL share", share, state)
        assert state["t"] > 0.2, state
        assert share > 0.3, (share, state)


def test_video_allocation_cap(model):
    """A hostile MP4 (its stss claims 2^28 key frames: FFmpeg asks for 805 MB at once) fails
    under cap_video_allocations with the cause named; the cap is process-wide FFmpeg state, so
    the test puts FFmpeg's default back."""
    src = os.environ.get("G4V_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    mov = open(os.path.join(src, "fuzz", "regressions", "video", "mov-stss-count-oom.mov"),
               "rb").read()
    with pytest.raises(ValueError):
        g4.cap_video_allocations(-1)
    g4.cap_video_allocations()
    try:
        with pytest.raises(g4.G4VError) as ei:
            model.encode_video(mov)
        assert ei.value.status_name == "G4V_ERR_IMAGE"
        assert "g4v_video_cap_allocations" in ei.value.message
    finally:
        g4.cap_video_allocations(0)
    with pytest.raises(g4.G4VError) as ei:  # uncapped it is still refused, as bad data
        model.encode_video(mov)
    assert "g4v_video_cap_allocations" not in ei.value.message


def test_argument_errors_elsewhere(model, images):
    with pytest.raises(ValueError):
        model.plan(0, 10)
    with pytest.raises(TypeError):
        model.plan("640", 480)
    with pytest.raises(ValueError, match="unsupported token budget"):
        model.plan(640, 480, tokens=100)
    assert model.plan(640, 480, tokens=70)[2] > 0
    with pytest.raises(TypeError):
        model.encode_batch("not a list")
    with pytest.raises(TypeError):
        model.encode_video(12345)
    with pytest.raises(ValueError):
        model.encode_video(b"x", frames=0)
    with pytest.raises(TypeError):
        model.encode_video(b"x", frames="32")
    with pytest.raises(TypeError):
        g4.cap_video_allocations("big")
    with pytest.raises(g4.G4VError) as ei:  # not an argument error: the library's verdict
        model.encode_video(b"not a video at all")
    assert ei.value.status_name in ("G4V_ERR_IMAGE", "G4V_ERR_UNSUPPORTED")


def test_constants_come_from_the_library():
    import ctypes
    lib = ctypes.CDLL(g4.library_path())
    lib.g4v_budgets.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    n = lib.g4v_budgets(None, 0)
    arr = (ctypes.c_int * n)()
    lib.g4v_budgets(arr, n)
    assert g4.BUDGETS == tuple(arr) == (70, 140, 280, 560, 1120)
    assert g4.DEFAULT_BUDGET == lib.g4v_default_budget() == 280
    assert g4.DEFAULT_VIDEO_BUDGET == 70
    lib.g4v_video_alloc_cap.restype = ctypes.c_size_t
    assert g4.VIDEO_ALLOC_CAP == lib.g4v_video_alloc_cap() == 256 << 20
    from gemma4_vision import model as m
    assert m.BUDGETS == g4.BUDGETS and m.DEFAULT_BUDGET == 280
    src = open(m.__file__).read() + open(g4.__file__).read()
    assert "70, 140, 280" not in src and "256 << 20" not in src  # not copied


def test_del_never_blocks(tiny, images):
    """__del__ neither waits for the pool's lock nor frees contexts itself (freeing one joins
    its threads): a collected Model's handles go to the reaper thread."""
    import gc
    from gemma4_vision import model as mm
    m = g4.Model(tiny, threads=2)
    m.encode(images[0], tokens=70)
    assert m.contexts == 1
    m._cond.acquire()  # another thread holding the lock: __del__ must return at once
    done = threading.Event()
    threading.Thread(target=lambda: (m.__del__(), done.set()), daemon=True).start()
    assert done.wait(5), "__del__ blocked on the lock"
    m._cond.release()
    assert m._model is not None  # left alone (a leak beats a hang)
    before = mm._reap_queue.qsize()
    t = time.time()
    m.__del__()
    assert time.time() - t < 0.5 and m._model is None and m._idle == []
    for _ in range(100):  # the reaper frees the context and the model
        if mm._reap_queue.qsize() <= before:
            break
        time.sleep(0.05)
    assert mm._reap_queue.qsize() <= before
    m2 = g4.Model(tiny, threads=1)
    m2.encode(images[0], tokens=70)
    del m2
    gc.collect()
    assert g4.Model(tiny, threads=1).encode(images[0], tokens=70).n_tokens > 0


def test_pack_weights(model, tiny, images):
    """Model packs its BF16 weights at load by default (a model kept for many encodes; the files
    tests above compare it with the CLI, which reads them in place: the same bits);
    pack_weights=False reads them where they lie in the checkpoint (x86-64: an in-place GEMM
    kernel exists), with the same features; anything but a bool is a TypeError."""
    assert model.info.weights_in_place == 0
    with g4.Model(tiny, threads=1, pack_weights=False) as m:
        if os.uname().machine == "x86_64" and os.environ.get("G4V_PACK_WEIGHTS", "") in ("", "0"):
            assert m.info.weights_in_place == 1
        for p in images[:2]:
            assert same_bits(m.encode(p).features, model.encode(p).features)
    with pytest.raises(TypeError, match="pack_weights"):
        g4.Model(tiny, pack_weights=1)

_SMALL_ALTSTACK_CHILD = r'''
import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
class stack_t(ctypes.Structure):  # x86-64 / aarch64 Linux: void *ss_sp; int ss_flags; size_t ss_size
    _fields_ = [("ss_sp", ctypes.c_void_p), ("ss_flags", ctypes.c_int), ("ss_size", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(8192)
st = stack_t(ctypes.cast(buf, ctypes.c_void_p), 0, 8192)
assert libc.sigaltstack(ctypes.byref(st), None) == 0, ctypes.get_errno()
import gemma4_vision as g4
with g4.Model(sys.argv[1], threads=1) as m:
    i = m.info
    now = stack_t()
    libc.sigaltstack(None, ctypes.byref(now))
    print(json.dumps({"usable": bool(i.amx_usable), "amx": i.amx, "self_test": i.amx_self_test,
                      "altstack": now.ss_size}))
'''


def test_amx_permission_under_a_small_sigaltstack(tiny):
    """AMX's tile permission where a sigaltstack is installed first (docs/ARCHITECTURE.md §3
    "AMX"): pytest's faulthandler (on in this process) installs one, and one smaller than the
    signal frame with tile data makes the kernel refuse the permission (ENOSPC); CPython before
    3.11 used 8 KiB. A child installs an 8 KiB stack on its main thread before libg4v's first
    call, then loads a model. On a CPU with AMX the probe's retry (a larger stack in its place)
    must win the permission; elsewhere the kernel is never asked, the stack stays as it was, and
    the reason says the CPU has no AMX (the hardware part is then not exercised: said below)."""
    import faulthandler
    import sys
    assert faulthandler.is_enabled()  # pytest's, in this very process: the path users meet
    r = subprocess.run([sys.executable, "-c", _SMALL_ALTSTACK_CHILD, tiny], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    flags = next((ln for ln in open("/proc/cpuinfo") if ln.startswith("flags")), "") \
        if os.path.exists("/proc/cpuinfo") else ""
    if " amx_tile" in flags and " amx_bf16" in flags:
        assert "refused" not in got["amx"], got
        if "enlarged" in got["amx"]:
            assert got["altstack"] >= 65536, got
    else:
        assert not got["usable"] and got["altstack"] == 8192, got
        assert got["amx"].startswith(("this CPU has no AMX", "no AMX")), got
        assert got["self_test"].startswith("not run"), got
        print("hardware part not exercised: this CPU has no AMX, so the kernel is never asked "
              f"for the tile permission ({got['amx']})")
