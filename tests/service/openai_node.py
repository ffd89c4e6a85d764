"""openai_node.py - the official OpenAI client for Node (npm `openai`, pinned in
tests/service/node/package-lock.json) for the service's tests: installed when missing by
scripts/install-node-client.sh (idempotent; outside the repository), then run through
tests/service/node/openai_client.cjs with one JSON spec.

  node_path()   the client's node_modules; skips the calling test, saying why, only when the npm
                registry cannot be reached (exit 75 of the install script); any other failure
                to install fails the test
  call(spec)    runs one spec, returns the JSON objects the script printed
"""
import json
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(HERE, "node", "openai_client.cjs")
_path = None


def node_path():
    global _path
    if _path is None:
        r = subprocess.run([os.path.join(SRC, "scripts", "install-node-client.sh")],
                           capture_output=True, text=True, timeout=600)
        if r.returncode == 75:
            pytest.skip("the npm registry cannot be reached: the OpenAI Node client cannot be "
                        "installed (scripts/install-node-client.sh): " + r.stderr.strip()[-300:])
        assert r.returncode == 0, f"scripts/install-node-client.sh failed ({r.returncode}): {r.stderr[-500:]}"
        _path = r.stdout.strip().splitlines()[-1]
    return _path


def call(spec, timeout=600):
    env = dict(os.environ, NODE_PATH=node_path())
    r = subprocess.run(["node", SCRIPT, json.dumps(spec)], capture_output=True, text=True,
                       env=env, timeout=timeout)
    assert r.returncode == 0, f"node {SCRIPT} exited {r.returncode}: {r.stderr[-800:]}"
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
