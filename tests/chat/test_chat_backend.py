#!/usr/bin/python3
"""test_chat_backend.py (pytest --arg=FIXTURES --arg=LLAMA_LIBDIR) - the CPU backend llama.cpp runs
g4v chat's text model on (chat/chat_backend.c, docs/CHAT.md §6), as `g4v chat --version`
and `g4v info` name it: the backend is there, every instruction-set feature it names is one this
CPU has (/proc/cpuinfo), and with llama.cpp's run-time variants (libggml-cpu-<level>.so beside
libllama) the level chosen is one this CPU runs and no better level was passed over; the modules
are loaded from libllama's directory, and without one for this CPU the chat refuses with a clear
message (exit 3)."""
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check  # noqa: E402

G4V = os.environ.get("G4V_BIN", "g4v")
FX = pyutil.arg(1)
LIBDIR = pyutil.arg(2)

# ggml's feature names (ggml_backend_get_features of the CPU backend) -> /proc/cpuinfo flags;
# names that are not instruction-set extensions (LLAMAFILE, OPENMP, REPACK, ...) are not here
CPUINFO = {
    "SSE3": ["pni"], "SSSE3": ["ssse3"], "AVX": ["avx"], "AVX2": ["avx2"], "F16C": ["f16c"],
    "FMA": ["fma"], "BMI2": ["bmi2"], "AVX_VNNI": ["avx_vnni"],
    "AVX512": ["avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"],
    "AVX512_VBMI": ["avx512vbmi"], "AVX512_VNNI": ["avx512_vnni"], "AVX512_BF16": ["avx512_bf16"],
    "AMX_INT8": ["amx_int8"],
    "NEON": ["asimd"], "ARM_FMA": ["asimd"], "FP16_VA": ["asimdhp"], "DOTPROD": ["asimddp"],
    "MATMUL_INT8": ["i8mm"], "SVE": ["sve"], "SME": ["sme"],
}
# llama.cpp's variants (ggml/src/CMakeLists.txt, GGML_CPU_ALL_VARIANTS) -> the features each
# needs, in ggml's names
VARIANTS = {
    "x64": [], "sse42": ["SSE42"], "sandybridge": ["SSE42", "AVX"],
    "ivybridge": ["SSE42", "AVX", "F16C"], "piledriver": ["SSE42", "AVX", "F16C", "FMA"],
    "haswell": ["SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2"],
    "skylakex": ["SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512"],
    "cannonlake": ["SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VBMI"],
    "cascadelake": ["SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VNNI"],
    "icelake": ["SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VBMI",
                "AVX512_VNNI"],
    "cooperlake": ["SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VNNI",
                   "AVX512_BF16"],
    "zen4": ["SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VBMI", "AVX512_VNNI",
             "AVX512_BF16"],
    "alderlake": ["SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX_VNNI"],
    "sapphirerapids": ["SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VBMI",
                       "AVX512_VNNI", "AVX512_BF16", "AMX_TILE", "AMX_INT8"],
    "armv8.0_1": [], "armv8.2_1": ["DOTPROD"], "armv8.2_2": ["DOTPROD", "FP16_VA"],
    "armv8.2_3": ["DOTPROD", "FP16_VA", "SVE"],
    "armv8.6_1": ["DOTPROD", "FP16_VA", "SVE", "MATMUL_INT8"],
    "armv8.6_2": ["DOTPROD", "FP16_VA", "SVE", "MATMUL_INT8", "SVE2"],
    "armv9.2_1": ["DOTPROD", "FP16_VA", "SVE", "MATMUL_INT8", "SME"],
    "armv9.2_2": ["DOTPROD", "FP16_VA", "SVE", "MATMUL_INT8", "SVE2", "SME"],
}
EXTRA_FLAGS = {"SSE42": ["sse4_2"], "AMX_TILE": ["amx_tile"], "SVE2": ["sve2"]}


def cpu_flags():
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            key = line.split(":")[0].strip()
            if key in ("flags", "Features"):
                flags.update(line.split(":", 1)[1].split())
    return flags


def has(flags, feature):
    need = CPUINFO.get(feature) or EXTRA_FLAGS.get(feature)
    return need is None or all(n in flags for n in need)


def runs(flags, variant):
    return all(has(flags, f) for f in VARIANTS[variant])


def version_json(env=None):
    p = subprocess.run([G4V, "chat", "--version", "--json"], capture_output=True, text=True,
                       timeout=120, env=env)
    return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else {}), p.stderr


def test_chat_backend():
    flags = cpu_flags()
    modules = sorted(glob.glob(os.path.join(LIBDIR, "libggml-cpu-*.so")))
    offered = [os.path.basename(m)[len("libggml-cpu-"):-len(".so")] for m in modules]

    # 1. g4v chat --version --json names the backend in use
    rc, j, err = version_json()
    b = j.get("llama_cpu_backend") or {}
    check(rc == 0 and j.get("version") and b.get("features"),
          f"g4v chat --version --json: a version and the CPU backend's features ({rc}: {err[-200:]})")
    feats = b.get("features", [])
    for f in feats:
        check(has(flags, f.split("=")[0]), f"the backend's feature {f} is one this CPU has",
              show_ok=False)
    check(os.path.isfile(b.get("path", "")), f"its file exists ({b.get('path')})")

    # 2. with the run-time variants: a level this CPU runs, and none better passed over
    if modules:
        v = b.get("variant")
        check(b.get("loaded_at_run_time") is True and v in offered,
              f"a variant loaded at run time, one of the {len(offered)} beside libllama ({v})")
        check(os.path.dirname(b.get("path", "")) == os.path.realpath(LIBDIR) or
              os.path.dirname(b.get("path", "")) == LIBDIR, "loaded from libllama's directory")
        if v in VARIANTS:
            check(runs(flags, v), f"{v}: this CPU has every feature it needs")
            better = [o for o in offered if o in VARIANTS and runs(flags, o) and
                      set(VARIANTS[v]) < set(VARIANTS[o])]
            check(not better, f"no level this CPU runs has more than {v} ({better})")
            named = [f for f in VARIANTS[v] if f in CPUINFO]
            check(all(f in feats for f in named), f"its features include what {v} is built for")
        # the best this CPU has among the usual levels is what the kernels use
        for f in ("AVX2", "AVX512", "DOTPROD"):
            if has(flags, f) and any(f in VARIANTS.get(o, []) for o in offered):
                check(f in feats, f"this CPU has {f}: the backend chosen uses it")
    else:
        check(b.get("loaded_at_run_time") is False and b.get("variant") is None,
              "no variants beside libllama: the CPU backend is linked in")

    # 3. the text forms say the same
    p = subprocess.run([G4V, "chat", "--version"], capture_output=True, text=True, timeout=120)
    want = b.get("variant") or "linked into libggml"
    check(p.returncode == 0 and "llama.cpp CPU backend: " + want in p.stdout,
          f"g4v chat --version names '{want}'")
    p = subprocess.run([G4V, "info", "--model", os.path.join(FX, "vis-e2b"), "--json"],
                       capture_output=True, text=True, timeout=300)
    info = json.loads(p.stdout) if p.returncode == 0 else {}
    check(info.get("llama_cpu_backend") == b, "g4v info --json: the same llama_cpu_backend")
    p = subprocess.run([G4V, "info", "--model", os.path.join(FX, "vis-e2b")], capture_output=True,
                       text=True, timeout=300)
    check(p.returncode == 0 and "llama.cpp cpu " + want in p.stdout, "g4v info names it too")

    if not modules:
        return
    # 4. the modules come from libllama's directory: a copy of the libraries with one module
    # loads that one; a copy with none (or none this CPU runs) refuses with a clear message
    tmp = tempfile.mkdtemp(prefix="g4v-chat-backend-")
    try:
        for so in glob.glob(os.path.join(LIBDIR, "lib*.so*")):
            if not os.path.basename(so).startswith("libggml-cpu-"):
                shutil.copy(so, tmp, follow_symlinks=False)
        base = "x64" if platform.machine() in ("x86_64", "AMD64") else "armv8.0_1"
        env = dict(os.environ, LD_LIBRARY_PATH=tmp)
        rc, j, err = version_json(env)
        check(rc == 3 and "no CPU backend" in json.dumps(j) and tmp in json.dumps(j),
              f"no module beside libllama: --version exits 3 naming the directory ({rc}: {err})")
        p = subprocess.run([G4V, "chat", "--lm", os.path.join(FX, "lm-e2b.gguf"), "--model",
                            os.path.join(FX, "vis-e2b"), "-p", "Hi", "--max-tokens", "1"],
                           capture_output=True, text=True, timeout=300, env=env)
        check(p.returncode == 3 and "no CPU backend" in p.stderr and "build-llama.sh" in p.stderr,
              f"g4v chat without a module: exit 3 and what to do ({p.returncode}: {p.stderr[-300:]})")
        if base in offered:
            shutil.copy(os.path.join(LIBDIR, f"libggml-cpu-{base}.so"), tmp)
            rc, j, err = version_json(env)
            b = j.get("llama_cpu_backend") or {}
            check(rc == 0 and b.get("variant") == base and
                  os.path.dirname(b.get("path", "")) == tmp,
                  f"only {base} beside the copied libllama: {base} from there ({b.get('path')})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
