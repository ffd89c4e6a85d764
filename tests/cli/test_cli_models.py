#!/usr/bin/python3
"""test_cli_models.py - models already on disk (common/model_store.h): `g4v models` and the
names --model, --lm, --ollama and --revision accept, on synthetic stores laid out exactly as their
programs lay them out, in a temporary HOME (so the default locations are the ones exercised):

  Hugging Face  ~/.cache/huggingface/hub/models--{org}--{name}/{refs/REF, snapshots/COMMIT/FILE ->
                ../../blobs/ETAG, blobs/ETAG[.incomplete]}: google/gemma-4-E4B-it with two
                snapshots (refs main and v1), google/gemma-4-E2B-it whose weights are an
                unfinished blob, ggml-org/gemma-4-E4B-it-GGUF (two quants and an mmproj), a
                "gemma-4" repo whose config says llama, and a repo that is not Gemma at all
  Ollama        ~/.ollama/models/{manifests/registry.ollama.ai/NS/MODEL/TAG, blobs/sha256-HEX}:
                a tag with model + projector + template + params layers, a text-only tag, an
                ollama-native tag (vision tensors inside the model, no projector), a tag whose
                model blob is missing, one with a malformed digest, one in a user namespace
  LM Studio     ~/.lmstudio/models/lmstudio-community/gemma-4-E4B-it-GGUF/*.gguf

The models are the tiny synthetic ones (tools/gen_checkpoint.py, tools/gguf_from_checkpoint.py; the
text GGUFs are header-only, written with the latter's GGUF writer), so `g4v info` really loads
through the cache. g4v chat and serve are run only as far as resolving (their errors name the
files the names resolved to). Nothing touches the network. One test writes an ollama-native model
blob with the vision tensor names of a real one (the fragment in G4V_REAL_FILES, else
$G4V_REAL_FILES; skipped where absent).

usage: ctest -R test_cli_models   (env G4V_BIN: the g4v binary)
"""
import hashlib
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import pyutil  # noqa: E402

sys.path.insert(0, os.path.join(pyutil.SRC, "tools"))
import gguf_from_checkpoint as gfc  # noqa: E402

check = pyutil.check

COMMIT_OLD = "a1b2c3d4" + "0" * 32
COMMIT_MAIN = "f00dfeed" + "1" * 32
COMMIT_E2B = "c0ffee00" + "2" * 32
COMMIT_GGUF = "decade00" + "3" * 32
TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}\n"  # our own, tiny
GO_TEMPLATE = "{{ .System }}{{ .Prompt }}"


def text_gguf(path, arch="gemma4", vision_tensors=False, template=True):
    """A header-only text GGUF: general.architecture, tokenizer.chat_template (and, ollama-native,
    a v.* tensor)."""
    tensors = [("token_embd.weight", gfc.F32, (4,), bytes(16))]
    if vision_tensors:
        tensors.append(("v.blk.0.attn_q.weight", gfc.F32, (4,), bytes(16)))
    kv = [("general.architecture", gfc.STRING, arch), ("general.name", gfc.STRING, "synthetic")]
    if template:
        kv.append(("tokenizer.chat_template", gfc.STRING, TEMPLATE))
    gfc.write_standalone(path, kv, tensors)
    return path


def put_blob(repo, data):
    """huggingface_hub's blob: blobs/ETAG (the sha256 of an LFS file), its etag returned."""
    etag = hashlib.sha256(data).hexdigest()
    os.makedirs(os.path.join(repo, "blobs"), exist_ok=True)
    with open(os.path.join(repo, "blobs", etag), "wb") as f:
        f.write(data)
    return etag


def hf_snapshot(repo, commit, files, refs=()):
    """snapshots/COMMIT/NAME -> ../../blobs/ETAG for each file; refs/REF holding the commit."""
    snap = os.path.join(repo, "snapshots", commit)
    os.makedirs(snap, exist_ok=True)
    for name, data in files.items():
        etag = put_blob(repo, data)
        os.symlink(os.path.join("..", "..", "blobs", etag), os.path.join(snap, name))
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    for r in refs:
        with open(os.path.join(repo, "refs", r), "w") as f:
            f.write(commit)  # huggingface_hub writes the bare commit, no newline
    return snap


def read(p):
    with open(p, "rb") as f:
        return f.read()


def ollama_layer(root, media, data, write=True):
    hexd = hashlib.sha256(data).hexdigest()
    if write:
        os.makedirs(os.path.join(root, "blobs"), exist_ok=True)
        with open(os.path.join(root, "blobs", "sha256-" + hexd), "wb") as f:
            f.write(data)
    return {"mediaType": "application/vnd.ollama.image." + media, "digest": "sha256:" + hexd,
            "size": len(data)}


def ollama_manifest(root, ns, model, tag, layers, host="registry.ollama.ai"):
    d = os.path.join(root, "manifests", host, ns, model)
    os.makedirs(d, exist_ok=True)
    config = ollama_layer(root, "config", b'{"model_format":"gguf"}')
    config["mediaType"] = "application/vnd.docker.container.image.v1+json"
    with open(os.path.join(d, tag), "w") as f:
        json.dump({"schemaVersion": 2,
                   "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                   "config": config, "layers": layers}, f)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    t = str(tmp_path_factory.mktemp("stores"))
    home = os.path.join(t, "home")
    ck = os.path.join(t, "ck")
    pyutil.gen_checkpoint(ck, "--config", "tiny", "--text-hidden", "2560", quiet=True)
    mmproj = os.path.join(t, "mmproj.gguf")
    subprocess.run([sys.executable, os.path.join(pyutil.SRC, "tools", "gguf_from_checkpoint.py"),
                    ck, mmproj, "--outtype", "f16"], check=True, capture_output=True)
    text = read(text_gguf(os.path.join(t, "text.gguf")))
    text8 = read(text_gguf(os.path.join(t, "text8.gguf"), template=False))
    native = read(text_gguf(os.path.join(t, "native.gguf"), vision_tensors=True))
    llama_cfg = json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"]}).encode()
    cfg, weights, proj = read(os.path.join(ck, "config.json")), read(
        os.path.join(ck, "model.safetensors")), read(mmproj)

    hub = os.path.join(home, ".cache", "huggingface", "hub")
    e4b = os.path.join(hub, "models--google--gemma-4-E4B-it")
    snap_old = hf_snapshot(e4b, COMMIT_OLD, {"config.json": cfg, "model.safetensors": weights},
                           refs=["v1"])
    snap_main = hf_snapshot(e4b, COMMIT_MAIN, {"config.json": cfg, "model.safetensors": weights,
                                                "chat_template.jinja": TEMPLATE.encode()},
                            refs=["main"])
    e2b = os.path.join(hub, "models--google--gemma-4-E2B-it")
    snap_e2b = hf_snapshot(e2b, COMMIT_E2B, {"config.json": cfg}, refs=["main"])
    etag = hashlib.sha256(weights).hexdigest()  # the weights' download stopped half-way
    with open(os.path.join(e2b, "blobs", etag + ".incomplete"), "wb") as f:
        f.write(weights[: len(weights) // 2])
    gg = os.path.join(hub, "models--ggml-org--gemma-4-E4B-it-GGUF")
    snap_gguf = hf_snapshot(gg, COMMIT_GGUF, {"gemma-4-E4B-it-Q4_K_M.gguf": text,
                                              "gemma-4-E4B-it-Q8_0.gguf": text8,
                                              "mmproj-gemma-4-E4B-it-f16.gguf": proj},
                            refs=["main"])
    hf_snapshot(os.path.join(hub, "models--someone--gemma-4-imposter"), COMMIT_OLD,
                {"config.json": llama_cfg, "model.safetensors": weights}, refs=["main"])
    hf_snapshot(os.path.join(hub, "models--google--bert-base"), COMMIT_OLD,
                {"config.json": llama_cfg}, refs=["main"])
    os.makedirs(os.path.join(hub, ".locks"), exist_ok=True)  # huggingface_hub's lock folder

    om = os.path.join(home, ".ollama", "models")
    lay_text = ollama_layer(om, "model", text)
    lay_proj = ollama_layer(om, "projector", proj)
    lay_tmpl = ollama_layer(om, "template", GO_TEMPLATE.encode())
    lay_params = ollama_layer(om, "params", b'{"temperature":1}')
    ollama_manifest(om, "library", "gemma4", "e4b", [lay_text, lay_proj, lay_tmpl, lay_params])
    ollama_manifest(om, "library", "gemma4", "e2b-text", [lay_text, lay_tmpl])
    lay_native = ollama_layer(om, "model", native)
    ollama_manifest(om, "library", "gemma4", "native", [lay_native, lay_tmpl])
    lay_gone = ollama_layer(om, "model", b"GGUF never downloaded", write=False)
    ollama_manifest(om, "library", "gemma4", "broken", [lay_gone, lay_tmpl])
    bad = dict(lay_text, digest="sha256:not-a-digest")
    ollama_manifest(om, "library", "gemma4", "garbled", [bad])
    ollama_manifest(om, "someuser", "gemma4-custom", "latest", [lay_text, lay_proj])
    ollama_manifest(om, "library", "llama3", "latest", [lay_text])  # not Gemma 4 by name

    lms = os.path.join(home, ".lmstudio", "models", "lmstudio-community", "gemma-4-E4B-it-GGUF")
    os.makedirs(lms)
    for name, data in (("gemma-4-E4B-it-Q4_K_M.gguf", text), ("mmproj-model-f16.gguf", proj)):
        with open(os.path.join(lms, name), "wb") as f:
            f.write(data)

    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "OLLAMA_MODELS")}
    env["HOME"] = home
    blob = lambda layer: os.path.join(om, "blobs", layer["digest"].replace(":", "-"))  # noqa
    return dict(t=t, home=home, env=env, hub=hub, ck=ck, om=om, lms=lms, snap_old=snap_old,
                snap_main=snap_main, snap_e2b=snap_e2b, snap_gguf=snap_gguf, e2b=e2b,
                text_blob=blob(lay_text), proj_blob=blob(lay_proj), tmpl_blob=blob(lay_tmpl),
                gone_blob=blob(lay_gone),
                e4b_bytes=sum(x["size"] for x in (lay_text, lay_proj, lay_tmpl, lay_params)))


def g4v(s, *args, **env):
    e = dict(s["env"], **env)
    return subprocess.run([pyutil.BIN, *args], capture_output=True, text=True, env=e,
                          cwd=s["t"])


def info_model(s, *args):
    r = g4v(s, "info", "--json", *args)
    return r, (json.loads(r.stdout)["model"] if r.returncode == 0 else None)


def test_info_through_the_hf_cache(stores):
    s = stores
    r, model = info_model(s, "--model", "google/gemma-4-e4b-it")  # typed in lower case
    check(r.returncode == 0 and model == s["snap_main"],
          f"info google/gemma-4-e4b-it loads snapshots/main's commit: {model} {r.stderr}")
    for rev in ("v1", COMMIT_OLD[:8], COMMIT_OLD):
        r, model = info_model(s, "--model", "google/gemma-4-E4B-it", "--revision", rev)
        check(r.returncode == 0 and model == s["snap_old"], f"--revision {rev}: {model} {r.stderr}")
    r = g4v(s, "info", "--model", "google/gemma-4-E4B-it", "--revision", "nope")
    check(r.returncode == 3 and "revision nope" in r.stderr and "main, v1" in r.stderr,
          f"--revision nope: exit 3 naming the refs there: {r.stderr.strip()}")
    r = g4v(s, "info", "--model", "google/gemma-4-e2b-it")
    check(r.returncode == 3 and "incomplete" in r.stderr and ".incomplete" in r.stderr,
          f"unfinished download: exit 3, says incomplete: {r.stderr.strip()}")
    r, model = info_model(s, "--model", "ggml-org/gemma-4-e4b-it-gguf")
    check(r.returncode == 0 and model == os.path.join(s["snap_gguf"],
                                                      "mmproj-gemma-4-E4B-it-f16.gguf"),
          f"a GGUF repo as --model: its mmproj: {model} {r.stderr}")
    r, model = info_model(s, "--model", "lmstudio-community/gemma-4-e4b-it-gguf")
    check(r.returncode == 0 and model == os.path.join(s["lms"], "mmproj-model-f16.gguf"),
          f"an LM Studio repo as --model: its mmproj: {model} {r.stderr}")
    r = g4v(s, "info", "--model", s["proj_blob"])
    check(r.returncode == 0, f"an Ollama projector blob (no .gguf name) loads as an mmproj: "
                             f"{r.stderr.strip()}")
    r, model = info_model(s, "--model", s["ck"])
    check(r.returncode == 0 and model == s["ck"], f"a path that exists wins: {model}")
    r = g4v(s, "info", "--model", "nobody/gemma-4-nothing")
    check(r.returncode == 3 and s["hub"] in r.stderr
          and "models--nobody--gemma-4-nothing" in r.stderr and "g4v pull nobody/gemma-4-nothing" in r.stderr
          and ".lmstudio/models" in r.stderr,
          f"not anywhere: exit 3, names where it looked and what to do: {r.stderr.strip()}")
    r = g4v(s, "info", "--model", "./nonexistent/dir")
    check(r.returncode == 3 and "G4V_ERR_IO" in r.stderr and "Hugging Face" not in r.stderr,
          f"a path is only a path, the loader's error as before: {r.stderr.strip()}")
    r = g4v(s, "info", "--model", "someone/gemma-4-imposter")
    check(r.returncode == 3 and "not Gemma 4" in r.stderr and '"llama"' in r.stderr,
          f"a llama config: not Gemma 4: {r.stderr.strip()}")


def by_name(j):
    return {(m["source"], m["name"], m["revision"]): m for m in j["models"]}


def test_models_json(stores):
    s = stores
    r = g4v(s, "models", "--json")
    check(r.returncode == 0 and r.stderr == "", f"models --json: exit 0 ({r.stderr.strip()})")
    j = json.loads(r.stdout)
    check(j["stores"]["huggingface"] == [s["hub"]], f"HF store from HOME: {j['stores']}")
    check(j["stores"]["ollama"][0] == s["om"], f"ollama store from HOME: {j['stores']}")
    check(j["stores"]["lmstudio"][0] == os.path.join(s["home"], ".lmstudio", "models"),
          f"LM Studio store from HOME: {j['stores']}")
    m = by_name(j)
    print("\n".join(f"{k}: usable={v['usable']} {v.get('why') or v.get('note') or ''}"
                    for k, v in m.items()))

    def get(source, name, rev):
        x = m.get((source, name, rev))
        check(x is not None, f"listed: {source} {name} {rev}")
        return x or {}

    x = get("huggingface", "google/gemma-4-E4B-it", COMMIT_MAIN)
    check(x.get("usable") is True and x.get("refs") == "main" and x.get("vision") == s["snap_main"]
          and x.get("vision_kind") == "checkpoint" and x.get("text") is None
          and x.get("template") == os.path.join(s["snap_main"], "chat_template.jinja")
          and x.get("template_kind") == "jinja" and x.get("bytes", 0) > 1000000,
          f"E4B main: {x}")
    x = get("huggingface", "google/gemma-4-E4B-it", COMMIT_OLD)
    check(x.get("usable") is True and x.get("refs") == "v1" and x.get("template") is None,
          f"E4B v1: {x}")
    x = get("huggingface", "google/gemma-4-E2B-it", COMMIT_E2B)
    check(x.get("usable") is False and x.get("why", "").startswith("incomplete download")
          and ".incomplete" in x.get("why", "")
          and "hf download google/gemma-4-E2B-it" in x.get("why", ""),
          f"E2B with an unfinished blob: {x}")
    for q, f, tk in (("Q4_K_M", "gemma-4-E4B-it-Q4_K_M.gguf", "gguf"),
                     ("Q8_0", "gemma-4-E4B-it-Q8_0.gguf", None)):  # no tokenizer.chat_template
        x = get("huggingface", "ggml-org/gemma-4-E4B-it-GGUF:" + q, COMMIT_GGUF)
        check(x.get("usable") is True and x.get("text") == os.path.join(s["snap_gguf"], f)
              and x.get("vision") == os.path.join(s["snap_gguf"], "mmproj-gemma-4-E4B-it-f16.gguf")
              and x.get("vision_kind") == "mmproj" and x.get("template_kind") == tk
              and x.get("template") == (x.get("text") if tk else None), f"GGUF repo {q}: {x}")
    x = get("huggingface", "someone/gemma-4-imposter", COMMIT_OLD)
    check(x.get("usable") is False and "not Gemma 4" in x.get("why", ""), f"imposter: {x}")
    check(not any(k[1] == "google/bert-base" for k in m), "a repo that is not Gemma: not listed")

    x = get("ollama", "gemma4:e4b", "e4b")
    check(x.get("usable") is True and x.get("text") == s["text_blob"]
          and x.get("vision") == s["proj_blob"] and x.get("vision_kind") == "mmproj"
          and x.get("template") == s["tmpl_blob"]
          and x.get("template_kind") == "ollama-go-template"
          and x.get("bytes") == s["e4b_bytes"], f"ollama gemma4:e4b: {x}")
    x = get("ollama", "gemma4:e2b-text", "e2b-text")
    check(x.get("usable") is True and x.get("vision") is None and "text only" in x.get("note", ""),
          f"ollama text-only tag: {x}")
    x = get("ollama", "gemma4:native", "native")
    check(x.get("usable") is False and "ollama-native" in x.get("why", ""),
          f"ollama-native layout: {x}")
    x = get("ollama", "gemma4:broken", "broken")
    check(x.get("usable") is False and s["gone_blob"] in x.get("why", "")
          and "ollama pull gemma4:broken" in x.get("why", ""), f"missing blob: {x}")
    x = get("ollama", "gemma4:garbled", "garbled")
    check(x.get("usable") is False and "sha256:not-a-digest" in x.get("why", ""),
          f"malformed digest: {x}")
    x = get("ollama", "someuser/gemma4-custom:latest", "latest")
    check(x.get("usable") is True, f"a user namespace: {x}")
    check(not any(k[1].startswith("llama3") for k in m), "llama3: not listed")

    x = get("lmstudio", "lmstudio-community/gemma-4-E4B-it-GGUF:Q4_K_M", None)
    check(x.get("usable") is True and x.get("vision") == os.path.join(s["lms"],
                                                                      "mmproj-model-f16.gguf"),
          f"LM Studio: {x}")

    r = g4v(s, "models", "--json", "--all")
    a = by_name(json.loads(r.stdout))
    x = a.get(("huggingface", "google/bert-base", COMMIT_OLD), {})
    check(x.get("usable") is False and "not Gemma 4" in x.get("why", ""), f"--all: bert: {x}")
    check(("ollama", "llama3:latest", "latest") in a, "--all: llama3 listed")
    r = g4v(s, "models", "--json", "--source", "ollama")
    o = json.loads(r.stdout)["models"]
    check(o and all(x["source"] == "ollama" for x in o), "--source ollama: ollama only")
    r = g4v(s, "models")
    check(r.returncode == 0 and "google/gemma-4-E4B-it" in r.stdout and "ollama-native" in
          r.stdout, "models: the text form lists them too")


def test_store_locations_from_the_environment(stores):
    s, t = stores, stores["t"]
    cases = [({"XDG_CACHE_HOME": t + "/xdg"}, t + "/xdg/huggingface/hub"),
             ({"XDG_CACHE_HOME": t + "/xdg", "HF_HOME": t + "/hfh"}, t + "/hfh/hub"),
             ({"HF_HOME": t + "/hfh", "HF_HUB_CACHE": t + "/hc"}, t + "/hc")]
    for env, want in cases:
        j = json.loads(g4v(s, "models", "--json", **env).stdout)
        check(j["stores"]["huggingface"] == [want]
              and not any(x["source"] == "huggingface" for x in j["models"]),
              f"{env}: the HF cache is {want}: {j['stores']['huggingface']}")
    j = json.loads(g4v(s, "models", "--json", HF_HUB_CACHE=s["hub"], HOME=t).stdout)
    check(any(x["name"] == "google/gemma-4-E4B-it" for x in j["models"]),
          "HF_HUB_CACHE names the cache whatever HOME is")
    j = json.loads(g4v(s, "models", "--json", OLLAMA_MODELS=t + "/om").stdout)
    check(j["stores"]["ollama"] == [t + "/om"]
          and not any(x["source"] == "ollama" for x in j["models"]),
          f"OLLAMA_MODELS names the one Ollama store: {j['stores']['ollama']}")


def chat_built(s):
    r = g4v(s, "chat", "--help")
    return r.returncode == 0


def test_chat_and_serve_resolve(stores):
    s = stores
    r = g4v(s, "serve", "--ollama", "gemma4:native", "--port", "0")
    check(r.returncode == 3 and "ollama-native" in r.stderr, f"serve --ollama native: {r.stderr}")
    r = g4v(s, "serve", "--model", "nobody/gemma-4-nothing", "--port", "0")
    check(r.returncode == 3 and "models--nobody--gemma-4-nothing" in r.stderr,
          f"serve --model not anywhere: {r.stderr}")
    r = g4v(s, "serve", "--port", "0")
    check(r.returncode == 1 and "--model DIR is required" in r.stderr, f"serve without --model: {r.stderr}")
    if not chat_built(s):
        print("g4v chat: built without libllama, not checked")
        return
    r = g4v(s, "chat", "--ollama", "gemma4:e4b", "-p", "hi")
    check(r.returncode == 3 and s["text_blob"] in r.stderr,
          f"chat --ollama: the model layer is the LM (it fails to load: header only): {r.stderr}")
    r = g4v(s, "chat", "--ollama", "gemma4:broken", "-p", "hi")
    check(r.returncode == 3 and "ollama pull gemma4:broken" in r.stderr, f"broken tag: {r.stderr}")
    r = g4v(s, "chat", "--ollama", "gemma4:e2b-text", "-p", "hi")
    check(r.returncode == 3 and "text only" in r.stderr, f"text-only tag, no --model: {r.stderr}")
    r = g4v(s, "chat", "--ollama", "gemma4:nope", "-p", "hi")
    check(r.returncode == 3 and "ollama pull gemma4:nope" in r.stderr
          and "manifests/registry.ollama.ai/library/gemma4/nope" in r.stderr,
          f"absent tag: {r.stderr}")
    r = g4v(s, "chat", "--model", "google/gemma-4-e4b-it", "--lm",
            "ggml-org/gemma-4-e4b-it-gguf:q8_0", "-p", "hi")
    check(r.returncode == 3 and os.path.join(s["snap_gguf"], "gemma-4-E4B-it-Q8_0.gguf")
          in r.stderr, f"--lm REPO:QUANT picks the tagged file: {r.stderr}")
    r = g4v(s, "chat", "--model", "google/gemma-4-e4b-it", "--lm",
            "ggml-org/gemma-4-E4B-it-GGUF:Q2_K", "-p", "hi")
    check(r.returncode == 3 and "ggml-org/gemma-4-E4B-it-GGUF: no text GGUF tagged Q2_K" in r.stderr
          and "Q4_K_M, Q8_0" in r.stderr, f"--lm with an absent quant: {r.stderr}")
    r = g4v(s, "chat", "--model", "google/gemma-4-e4b-it", "--lm", "google/gemma-4-e4b-it",
            "-p", "hi")
    check(r.returncode == 3 and "no text GGUF" in r.stderr, f"--lm a checkpoint repo: {r.stderr}")
    r = g4v(s, "chat", "--model", "google/gemma-4-e4b-it", "-p", "hi")
    check(r.returncode == 1 and "--lm FILE is required" in r.stderr, f"chat without --lm: {r.stderr}")


def real_files():
    return os.environ.get("G4V_REAL_FILES") or os.path.join(pyutil.SRC, "..", "shared",
                                                            "real-files")


def test_ollama_native_real_tensor_names(stores, tmp_path):
    """An Ollama tag whose model blob carries the vision tensors of a real ollama-native Gemma 4
    GGUF (their names from the collected fragment; no weights), without a projector: unusable,
    for that reason. Skipped where the real-files folder is absent."""
    frag = os.path.join(real_files(), "gemma-4-e2b.ollama-native-gguf.vision-tensors.fragment.txt")
    if not os.path.exists(frag):
        pytest.skip(f"{frag} absent (set G4V_REAL_FILES)")
    import re
    names = sorted({m.group(1) for m in re.finditer(r"^\s+(v\.\S+)\s+F(?:16|32)\s+\[",
                                                    open(frag).read(), re.M)})
    check(len(names) > 20, f"vision tensor names read from the fragment: {len(names)}")
    tensors = [(n, gfc.F32, (1,), bytes(4)) for n in names]
    tensors.append(("token_embd.weight", gfc.F32, (1,), bytes(4)))
    blob = str(tmp_path / "native.gguf")
    gfc.write_standalone(blob, [("general.architecture", gfc.STRING, "gemma4")], tensors)
    om = str(tmp_path / "om")
    ollama_manifest(om, "library", "gemma4", "e2b", [ollama_layer(om, "model", read(blob))])
    r = g4v(stores, "models", "--json", OLLAMA_MODELS=om)
    got = [x for x in json.loads(r.stdout)["models"] if x["source"] == "ollama"]
    check(len(got) == 1 and got[0]["name"] == "gemma4:e2b" and got[0]["usable"] is False
          and "ollama-native" in got[0]["why"] and f"{len(names)} v.* tensors" in got[0]["why"],
          f"real ollama-native tensor names: unusable, ollama-native: {got}")
