"""conftest.py - llama.cpp's own server tests against `g4v serve --lm` (make chat-compat,
docs/TESTING.md "llama.cpp's server tests").

The tests are llama.cpp's, unedited, from the pinned source (server/tests/unit/*.py in the tools
folder of scripts/build-llama.sh's tree); their conftest.py is not loaded (pytest --noconftest,
python -P so that the current folder, theirs, is not on sys.path) and this file is loaded instead
as a plugin (-p conftest, this folder first on PYTHONPATH). It adapts their
utils.ServerProcess, the one class through which every test starts a server, and nothing else:

- start() runs `g4v serve --lm` on the synthetic e2b models (tests/chat/make_fixtures.py) in
  place of llama-server: the settings a test gives that we have map to our options (n_slots ->
  --lm-slots, n_ctx -> --lm-ctx, api_key -> --api-key, chat_template_file -> --chat-template);
  the ones that only tune llama-server (batch sizes, threads, seed, temperature, n_predict, jinja,
  the alias, verbose logs) are dropped; a setting we do not claim (router mode, embeddings,
  named built-in templates, CORS lists, server tools, ...) raises NotClaimed, so the test fails at
  once, with the setting's name, and its entry in expected_failures.tsv says so.
- One server per command line: a test whose settings give the command line the server running
  has gets that server (its port); another line stops it and starts the new one. stop() is a
  no-op; the last server stops at the end of the session. A start costs ~10 s on 2 cores, so
  llama.cpp's one-server-per-test would take half an hour.
- make_url(): llama-server answers OpenAI's routes without the /v1 prefix too
  (/chat/completions, /models); ours are under /v1 (OpenAI's base URL), where those paths go.
- No test reaches the internet: http(s)_proxy points at a closed port for every host but this
  one, and their utils' `wget` is a stub (tests/chat/compat/wget.py) that refuses to download;
  the tests that fetch images from huggingface.co fail the same everywhere.

expected_failures.tsv (G4V_COMPAT_LIST overrides the path) lists the tests that fail and why:
one line each, `node id<TAB>reason`; a node id may end in `*` for every test whose id starts
with the rest (a test function's parameter sets: `unit/test_x.py::test_y[*`); the first entry
that matches a test is its entry. Each listed test is marked xfail(strict=True): one that
passes fails the run with a message to remove its entry, as does a failure not listed; with
--compat-full (the full run of make chat-compat) an entry that matches no test fails it too.
"""
import atexit
import os
import re
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.environ.get("G4V_COMPAT_LIST", os.path.join(HERE, "expected_failures.tsv"))

# no test downloads: every host but this one goes to a closed port (requests and the openai
# client read these), and SLOW_TESTS (llama.cpp's real-model tests) stays off
os.environ["http_proxy"] = os.environ["https_proxy"] = "http://127.0.0.1:9"
os.environ["HTTP_PROXY"] = os.environ["HTTPS_PROXY"] = "http://127.0.0.1:9"
os.environ["no_proxy"] = os.environ["NO_PROXY"] = "127.0.0.1,localhost"
os.environ.pop("SLOW_TESTS", None)
os.environ.pop("DEBUG_EXTERNAL", None)

import utils  # noqa: E402  (llama.cpp's server/tests/utils.py, on PYTHONPATH)


class NotClaimed(Exception):
    """A llama-server setting g4v serve does not have."""


# the small models llama.cpp's presets download; our synthetic e2b pair stands in for both
PRESET_MODELS = {"ggml-org/test-model-stories260K", "ggml-org/tinygemma3-GGUF:Q8_0"}

# settings we do not claim: attribute -> what it is in llama-server
NOT_CLAIMED = {
    "model_draft": "--model-draft (speculative decoding)",
    "spec_type": "--spec-type (speculative decoding)",
    "server_embeddings": "--embedding (/embeddings)",
    "server_reranking": "--reranking (/rerank)",
    "server_slots": "--slots (/slots)",
    "pooling": "--pooling",
    "slot_save_path": "--slot-save-path",
    "lora_files": "--lora",
    "n_ga": "--grp-attn-n (group attention)",
    "enable_ctx_shift": "--context-shift",
    "models_dir": "--models-dir (router mode)",
    "models_preset": "--models-preset (router mode)",
    "reasoning_format": "--reasoning-format",
    "reasoning": "--reasoning",
    "chat_template": "--chat-template NAME (llama.cpp's named built-in templates)",
    "cors_origins": "--cors-origins",
    "media_path": "--media-path",
    "server_tools": "--tools (built-in server tools)",
    "mcp_servers_config": "--mcp-servers-config",
    "mcp_servers_json": "--mcp-servers-json",
    "ui_mcp_proxy": "--ui-mcp-proxy",
    "sleep_idle_seconds": "--sleep-idle-seconds",
    "gcp_compat": "AIP_MODE (Vertex AI prediction routes)",
    "no_mmproj": "--no-mmproj",
    "mmproj_url": "--mmproj-url",
}


def g4v_argv(s):
    """The `g4v serve` command line for ServerProcess s's settings, or NotClaimed."""
    fx = os.environ["G4V_COMPAT_FIXTURES"]
    if not (s.model_hf_repo or s.model_file or s.model_url):
        raise NotClaimed("router mode (llama-server without a model, --models-dir) is not claimed")
    if s.model_hf_repo not in PRESET_MODELS or s.model_hf_file or s.model_file or s.model_url:
        raise NotClaimed(f"model {s.model_hf_repo or s.model_file or s.model_url}"
                         f"{'/' + s.model_hf_file if s.model_hf_file else ''}: only llama.cpp's "
                         "preset test models are stood in for (by the synthetic e2b pair)")
    for attr, what in NOT_CLAIMED.items():
        if getattr(s, attr, None):
            raise NotClaimed(f"llama-server's {what} (ServerProcess.{attr}={getattr(s, attr)!r}) "
                             "is not claimed by g4v serve")
    argv = [os.environ["G4V_BIN"], "serve", "--port", "0", "--model", os.path.join(fx, "vis-e2b"),
            "--lm", os.path.join(fx, "lm-e2b.gguf"), "--lm-threads", "1", "--threads", "1"]
    if s.n_slots:
        argv += ["--lm-slots", str(s.n_slots)]
    if s.n_ctx:
        argv += ["--lm-ctx", str(s.n_ctx)]
    if s.api_key:
        argv += ["--api-key", s.api_key]
    if s.chat_template_file:
        path = os.path.abspath(s.chat_template_file)  # theirs are relative to their tests folder
        if not os.path.isfile(path):
            raise NotClaimed(f"chat template file {s.chat_template_file} does not exist")
        argv += ["--chat-template", path]
    return argv


class Running:
    """The one g4v serve process: its command line, process, port and stderr log."""
    argv = None
    proc = None
    port = None
    log = None
    starts = 0


def _stop_running():
    p = Running.proc
    if p is not None and p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if Running.log:
        Running.log.close()
    Running.argv = Running.proc = Running.port = Running.log = None


atexit.register(_stop_running)


def _start(self, timeout_seconds=utils.DEFAULT_HTTP_TIMEOUT):
    argv = g4v_argv(self)
    alive = Running.proc is not None and Running.proc.poll() is None
    if not alive or Running.argv != argv:
        if Running.proc is not None and not alive:
            print(f"g4v serve (pid {Running.proc.pid}) had exited with {Running.proc.returncode}",
                  file=sys.stderr)
        _stop_running()
        base = os.environ.get("G4V_COMPAT_LOGS", ".")
        Running.starts += 1
        log_path = os.path.join(base, f"g4v-serve-{Running.starts}.log")
        Running.log = open(log_path, "w")
        print("g4v-compat: starting " + " ".join(argv), file=sys.stderr)
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=Running.log, text=True)
        line = p.stdout.readline()  # "g4v serve: listening on http://ADDR:PORT ..." once loaded
        m = re.search(r"http://[^ ]*:(\d+)", line)
        if not m:
            p.wait()
            raise RuntimeError(f"g4v serve did not start ({p.returncode}): see {log_path}")
        Running.argv, Running.proc, Running.port = argv, p, int(m.group(1))
    self.server_port = Running.port
    self.process = Running.proc
    self.ready = True
    utils.server_instances.add(self)
    deadline = time.time() + timeout_seconds
    while True:  # the server answers before the test's first request
        try:
            if utils.requests.get(self.make_url("/health"), timeout=5).status_code == 200:
                return
        except utils.requests.RequestException:
            pass
        if time.time() > deadline:
            raise TimeoutError(f"g4v serve did not answer /health in {timeout_seconds} s")
        time.sleep(0.05)


def _stop(self):
    utils.server_instances.discard(self)
    self.process = None  # the process stays for the next test with the same command line


V1_ROUTES = ("/chat/completions", "/models", "/responses")
_make_url = utils.ServerProcess.make_url


def _url(self, path, host=None):
    if path.split("?")[0] in V1_ROUTES or path.startswith("/models/"):
        path = "/v1" + path
    return _make_url(self, path, host)


utils.ServerProcess.start = _start
utils.ServerProcess.stop = _stop
utils.ServerProcess.make_url = _url


def pytest_addoption(parser):
    parser.addoption("--compat-full", action="store_true",
                     help="the full run: an expected-failure entry matching no test fails it")


def _read_list():
    entries = []
    with open(LIST, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            node, sep, reason = line.partition("\t")
            if not sep or not reason.strip():
                raise pytest.UsageError(f"{LIST}:{n}: want `node id<TAB>reason`: {line!r}")
            entries.append((node, reason.strip(), n))
    return entries


def _matches(node, nodeid):
    return nodeid.startswith(node[:-1]) if node.endswith("*") else nodeid == node


def pytest_collection_modifyitems(session, config, items):
    entries = _read_list()
    used = set()
    for item in items:
        for node, reason, n in entries:
            if _matches(node, item.nodeid):
                item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
                item.user_properties.append(("compat_entry", n))
                used.add(n)
                break
    config._compat_stale = [(node, n) for node, _, n in entries if n not in used]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    out = yield
    rep = out.get_result()
    if rep.when == "call" and rep.failed and str(rep.longrepr).startswith("[XPASS(strict)]"):
        n = dict(item.user_properties).get("compat_entry")
        rep.longrepr = (f"passes now, but {os.path.basename(LIST)}:{n} expects it to fail "
                        f"({str(rep.longrepr)[len('[XPASS(strict)] '):]}): remove that entry")


def pytest_sessionfinish(session, exitstatus):
    _stop_running()
    stale = getattr(session.config, "_compat_stale", [])
    if session.config.getoption("--compat-full") and stale:
        for node, n in stale:
            print(f"\n{LIST}:{n}: {node} matches no test: remove the entry", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"g4v-compat: {Running.starts} g4v serve start(s)")
