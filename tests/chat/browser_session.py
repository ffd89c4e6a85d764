"""browser_session.py - what the chat tests that drive headless Chromium share: the browser
(Debian's chromium, G4V_CHROMIUM to override), the synthetic-model server they run against, and
one node + puppeteer-core session (tests/chat/webui/*.cjs) whose JSON lines are checks.

need_browser()        asserts chromium is there; returns NODE_PATH for puppeteer-core (skips, as
                      openai_node does, when the npm registry cannot be reached)
LmServer(tmp, name, fx_dir, *args)   g4v serve --lm on the e2b fixtures, 2 LM threads
run_session(script, spec, node_path, timeout, checks)   runs webui/SCRIPT with spec as JSON;
                      each {"check": bool, "what": ...} line is a check, {"done": N} ends it,
                      {"numbers": ...} is printed; the session must exit 0 after `checks` checks
"""
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "service"))
import openai_node  # noqa: E402
from pyutil import check  # noqa: E402
from serveutil import ServeProcess  # noqa: E402

G4V = os.environ.get("G4V_BIN", "g4v")
HERE = os.path.dirname(os.path.abspath(__file__))
CHROMIUM = os.environ.get("G4V_CHROMIUM", "/usr/bin/chromium")


def need_browser():
    assert os.access(CHROMIUM, os.X_OK), (
        f"{CHROMIUM} is missing: the chat page is tested in Debian's chromium; install it with "
        f"scripts/install-deps.sh --test (or set G4V_CHROMIUM to a Chromium binary)")
    return openai_node.node_path()  # skips when the npm registry cannot be reached


class LmServer(ServeProcess):
    def __init__(self, tmp, name, fx_dir, *args):
        super().__init__(tmp, name, [G4V, "serve", "--port", "0",
                                     "--model", os.path.join(fx_dir, "vis-e2b"),
                                     "--lm", os.path.join(fx_dir, "lm-e2b.gguf"),
                                     "--lm-threads", "2", "--threads", "1", *args],
                         stop_timeout=120)


def run_session(script, spec, node_path, timeout, checks):
    # its own process group: on a timeout the browser goes with node
    p = subprocess.Popen(["node", os.path.join(HERE, "webui", script), json.dumps(spec)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, NODE_PATH=node_path), start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err = f"timed out after {timeout} s; " + err
    done, n = None, 0
    for line in out.splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            print(line)
            continue
        if "check" in o:
            n += 1
            check(o["check"], o["what"])
        elif "done" in o:
            done = o["done"]
        elif "numbers" in o:  # measurements the session reports (the Markdown stalls)
            print(f"{script}:", json.dumps(o["numbers"]))
    check(p.returncode == 0 and done == n == checks,
          f"the browser session ran to the end: exit {p.returncode}, {n} of {checks} checks "
          f"({err[-1500:]})")
