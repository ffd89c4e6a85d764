#!/usr/bin/python3
"""test_serve_auth.py - who may call `g4v serve`, and the HTTP limits (docs/SERVICE.md,
"Security"), with http.client, raw sockets and curl against servers started on 127.0.0.1.

Access: with a key (from --api-key-file, --api-key or G4V_API_KEY) every endpoint but /health
answers 401 without it: the same body and WWW-Authenticate: Bearer whatever was wrong (no
header, another scheme, a wrong key, a prefix of the key, the key plus a byte), before anything
else (an unknown path, an oversized body); the key gives the very bytes `g4v encode` writes.
The key's sources and their usage errors; a --host other machines can reach is refused without
a key, allowed with one or with --insecure-no-auth.
Limits: --max-body-bytes N takes a body of N bytes and refuses N + 1 (Content-Length and
chunked) with 413 naming the flag; --max-header-bytes answers 431 to larger headers;
--max-connections leaves connections beyond it waiting until one closes; the server keeps serving after each.
"""
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyutil import BIN, check, g4v, gen_checkpoint  # noqa: E402
from serveutil import ServeProcess, with_servers  # noqa: E402

KEY = "g4v-test-0123456789abcdef0123456789"
UNAUTHORIZED = {"error": {"message": "missing or wrong API key (Authorization: Bearer)",
                          "type": "authentication_error", "param": None,
                          "code": "SERVE_UNAUTHORIZED"}}


class Server(ServeProcess):
    def __init__(self, tmp, name, *args, env=None):
        super().__init__(tmp, name, [BIN, "serve", "--port", "0", *args], env=env)


def raw(port, data, timeout=10):
    """Sends bytes on a fresh connection; returns what comes back until the server closes."""
    c = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        c.sendall(data)
        out = b""
        while (part := c.recv(65536)):
            out += part
        return out
    except (ConnectionResetError, socket.timeout):
        return b""
    finally:
        c.close()


def curl(*args):
    r = subprocess.run(["curl", "-s", "-S", "-o", "-", "-w", "\n%{http_code}", *args],
                       capture_output=True, timeout=60)
    body, _, code = r.stdout.decode(errors="replace").rpartition("\n")
    return int(code or 0), body


def test_serve_auth():
    with_servers("g4v_serve_auth_", run)


def run(tmp, servers):
    model = os.path.join(tmp, "tiny")
    gen_checkpoint(model, "--config", "tiny", "--seed", "3", quiet=True)
    img = os.path.join(tmp, "a.png")
    y, x = np.mgrid[0:60, 0:80]  # smooth: a small PNG, under the body limit below
    Image.fromarray(np.stack([x * 3, y * 4, x + y], -1).astype(np.uint8)).save(img)
    png = open(img, "rb").read()
    ref = os.path.join(tmp, "ref.npy")
    check(g4v("encode", "--model", model, img, "--tokens", "70", "-o", ref).returncode == 0, "g4v encode (reference)")
    ref = open(ref, "rb").read()
    keyfile = os.path.join(tmp, "key")
    with open(keyfile, "w") as f:
        f.write(KEY + "\n")
    os.chmod(keyfile, 0o600)

    limit = 4000
    check(len(png) < limit, f"the test image ({len(png)} bytes) is under the body limit")
    s = Server(tmp, "key", "--model", model, "--threads", "1", "--api-key-file", keyfile,
               "--max-body-bytes", str(limit), "--max-header-bytes", "8192", "--max-connections", "3",
               "--http-threads", "1", "--timeout", "5")  # one thread: the connection limit is all its own
    servers.append(s)
    check("API key required" in s.line, "the start line says a key is required")
    good = {"Authorization": "Bearer " + KEY}

    # -- without the key: 401, one body, nothing else told --------------------------------------
    st, h, body = s.request("GET", "/health")
    check(st == 200 and body == b"ok\n", "GET /health: open without the key")
    wrong = {
        "no header": {},
        "wrong key": {"Authorization": "Bearer " + KEY[:-1] + "x"},
        "prefix of the key": {"Authorization": "Bearer " + KEY[:-1]},
        "the key and a byte": {"Authorization": "Bearer " + KEY + "0"},
        "empty token": {"Authorization": "Bearer "},
        "Basic scheme": {"Authorization": "Basic " + KEY},
        "the key without a scheme": {"Authorization": KEY},
        "in X-API-Key": {"X-API-Key": KEY},
    }
    for what, hdr in wrong.items():
        for method, path, b in (("GET", "/v1/info", None), ("GET", "/metrics", None),
                                ("POST", "/v1/encode", png), ("GET", "/nope", None),
                                ("GET", "/v1/models", None), ("POST", "/v1/chat/completions", b"{}")):
            st, h, body = s.request(method, path, b, hdr)
            try:
                j = json.loads(body)
            except ValueError:
                j = body
            if not (st == 401 and j == UNAUTHORIZED and h.get("WWW-Authenticate") == "Bearer"):
                check(False, f"{what}: {method} {path}: 401 ({st} {body[:100]!r} {h.get('WWW-Authenticate')})")
                break
        else:
            check(True, f"{what}: 401, WWW-Authenticate: Bearer, the fixed body, on every endpoint")
    # an oversized body without the key: 401, not 413 (the limit is told to callers only)
    out = raw(s.port, b"POST /v1/encode HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: image/png\r\nContent-Length: 50000000\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 401"), f"oversized body without the key: 401 first ({out[:20]!r})")

    # -- with the key ----------------------------------------------------------------------------
    st, h, body = s.request("GET", "/v1/info", None, good)
    check(st == 200 and json.loads(body)["service"]["api_key"] is True, "GET /v1/info with the key: 200")
    st, h, body = s.request("POST", "/v1/encode?tokens=70&format=npy", png, good)
    check(st == 200 and body == ref, "POST /v1/encode with the key: the bytes of g4v encode")
    st, h, body = s.request("GET", "/v1/info", None, {"Authorization": "bearer  " + KEY + " "})
    check(st == 200, "the scheme in any case, spaces around the token: accepted")
    st, h, body = s.request("GET", "/metrics", None, good)
    check(st == 200 and re.search(rb'g4v_http_requests_total\{code="401"\} (\d+)', body)
          and int(re.search(rb'code="401"\} (\d+)', body).group(1)) == 49, "/metrics counts the 401s (49)")

    # curl, as documented
    code, body = curl(s.url + "/v1/info")
    check(code == 401 and json.loads(body) == UNAUTHORIZED, f"curl without the key: 401 ({code})")
    code, body = curl("-H", "Authorization: Bearer wrong", s.url + "/v1/info")
    check(code == 401, f"curl with a wrong key: 401 ({code})")
    code, body = curl("-H", "Authorization: Bearer " + KEY, "-H", "Content-Type: image/png",
                      "--data-binary", "@" + img,
                      s.url + "/v1/encode?tokens=70&format=npy")
    check(code == 200, f"curl with the key: 200 ({code})")

    # -- body limit: N bytes taken, N + 1 refused ------------------------------------------------
    at = b"\0" * limit
    st, h, body = s.request("POST", "/v1/encode", at, good)
    check(st == 415, f"a body of exactly --max-body-bytes {limit}: read and decoded (415: not an image) ({st})")
    st, h, body = s.request("POST", "/v1/encode", at + b"\0", good)
    j = json.loads(body)["error"]
    check(st == 413 and f"limit of {limit} bytes" in j["message"] and "--max-body-bytes" in j["message"]
          and f"{limit + 1} bytes" in j["message"] and j["type"] == "invalid_request_error", f"{limit + 1} bytes: 413 naming the limit and the flag ({st} {j})")

    def chunked(n):
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
        c.request("POST", "/v1/encode", body=iter([b"\0" * (n // 2), b"\0" * (n - n // 2)]),
                  encode_chunked=True, headers={"Transfer-Encoding": "chunked",
                                                    "Content-Type": "image/png", **good})
        r = c.getresponse()
        b = r.read()
        c.close()
        return r.status, b
    st, b = chunked(limit)
    check(st == 415, f"chunked, exactly {limit} bytes: taken ({st})")
    st, b = chunked(limit + 1)
    check(st == 413 and b"--max-body-bytes" in b, f"chunked, {limit + 1} bytes: 413 ({st})")

    # -- header limit: 431, then still serving ---------------------------------------------------
    st, h, body = s.request("GET", "/v1/info", None, {**good, "X-Pad": "a" * 2000})
    check(st == 200, f"2 kB of headers under --max-header-bytes 8192: 200 ({st})")
    out = raw(s.port, b"GET /v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + KEY.encode()
              + b"\r\nX-Pad: " + b"a" * 12000 + b"\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 431"), f"12 kB of headers: 431 ({out[:40]!r})")
    st, h, body = s.request("GET", "/v1/info", None, good)
    check(st == 200, "after the 431: still serving")

    # -- connection limit: with 3 open a 4th waits unanswered (in the kernel's backlog), and is
    # served once they close
    held = []
    for _ in range(3):
        held.append(socket.create_connection(("127.0.0.1", s.port), timeout=10))
        held[-1].sendall(b"GET /v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # half a request: it stays
        time.sleep(0.1)
    time.sleep(0.3)
    fourth = socket.create_connection(("127.0.0.1", s.port), timeout=1.5)
    fourth.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    try:
        out = fourth.recv(100)
    except socket.timeout:
        out = None
    check(out is None, f"a 4th connection with --max-connections 3: not served while 3 are open ({out!r})")
    for c in held:
        c.close()
    fourth.settimeout(10)
    try:
        out = fourth.recv(100)
    except OSError as e:
        out = repr(e).encode()
    fourth.close()
    check(out.startswith(b"HTTP/1.1 200"), f"the 3 closed: the 4th is served ({out[:20]!r})")
    check(s.stop() == 0, "SIGTERM: exit 0")

    # -- the key's other sources ----------------------------------------------------------------
    s2 = Server(tmp, "flag", "--model", model, "--api-key", KEY)
    servers.append(s2)
    check(s2.request("GET", "/v1/info")[0] == 401 and s2.request("GET", "/v1/info", None, good)[0] == 200,
          "--api-key KEY: 401 without, 200 with")
    s2.stop()
    env = dict(os.environ, G4V_API_KEY=KEY)
    s3 = Server(tmp, "env", "--model", model, env=env)
    servers.append(s3)
    check(s3.request("GET", "/v1/info")[0] == 401 and s3.request("GET", "/v1/info", None, good)[0] == 200,
          "G4V_API_KEY: 401 without, 200 with")
    s3.stop()

    def usage(*args, env=None):
        r = subprocess.run([BIN, "serve", "--model", model, "--port", "0", *args], capture_output=True,
                           text=True, env=env, timeout=60)
        return r.returncode, r.stderr
    rc, err = usage("--api-key", KEY, "--api-key-file", keyfile)
    check(rc == 1 and "not both" in err, f"--api-key and --api-key-file: usage error ({rc} {err.strip()})")
    empty = os.path.join(tmp, "empty")
    open(empty, "w").close()
    rc, err = usage("--api-key-file", empty)
    check(rc == 1 and "empty" in err, f"an empty key file: usage error ({rc} {err.strip()})")
    rc, err = usage("--api-key-file", os.path.join(tmp, "nonexistent"))
    check(rc == 1 and "No such file" in err, f"a missing key file: usage error ({rc} {err.strip()})")
    rc, err = usage("--api-key", "two words")
    check(rc == 1 and "visible ASCII" in err, f"a key with a space: usage error ({rc} {err.strip()})")
    two = os.path.join(tmp, "two")
    with open(two, "w") as f:
        f.write(KEY + "\nsecond line\n")
    rc, err = usage("--api-key-file", two)
    check(rc == 1 and "one line" in err, f"a key file of two lines: usage error ({rc} {err.strip()})")

    # -- the listening rule ---------------------------------------------------------------------
    noenv = {k: v for k, v in os.environ.items() if k != "G4V_API_KEY"}
    rc, err = usage("--host", "0.0.0.0", env=noenv)
    check(rc == 1 and "refusing --host 0.0.0.0 without an API key" in err and "--api-key-file" in err
          and "--insecure-no-auth" in err, f"--host 0.0.0.0 without a key: refused, saying what to do ({rc} {err.strip()[-200:]})")
    check("fingerprint" not in err, "refused before the model loads")
    s4 = Server(tmp, "open", "--model", model, "--host", "0.0.0.0", "--insecure-no-auth", env=noenv)
    servers.append(s4)
    check(s4.request("GET", "/v1/info")[0] == 200, "--host 0.0.0.0 --insecure-no-auth: serves without a key")
    s4.stop()
    check("anyone who can reach it can use it" in open(s4.err_path).read(), "--insecure-no-auth: warned on stderr")
    s5 = Server(tmp, "public", "--model", model, "--host", "0.0.0.0", "--api-key-file", keyfile)
    servers.append(s5)
    check(s5.request("GET", "/v1/info")[0] == 401 and s5.request("GET", "/v1/info", None, good)[0] == 200,
          "--host 0.0.0.0 with a key: serves, with the key only")
    s5.stop()
    s6 = Server(tmp, "local", "--model", model, "--host", "127.0.0.1", env=noenv)
    servers.append(s6)
    check(s6.request("GET", "/v1/info")[0] == 200, "127.0.0.1 without a key: serves anyone on this machine")
    s6.stop()
    r = g4v("serve", "--help")
    check(all(f in r.stdout for f in ("--api-key-file", "--api-key", "G4V_API_KEY", "--insecure-no-auth",
                                      "--max-header-bytes", "--max-connections")), "g4v serve --help: the new options")
