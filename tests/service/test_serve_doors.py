#!/usr/bin/python3
"""test_serve_doors.py - the doors of `g4v serve` (tools/service/core/doors.c, docs/SERVICE.md
"Security", "Browsers") with raw requests, as a browser on another site would send them:

- a POST whose Content-Type a browser sends cross-site without a preflight (text/plain,
  application/x-www-form-urlencoded, multipart/form-data, none), or any type that is not its
  endpoint's, is 415, with or without a key, and nothing is encoded;
- an Origin that is not the server's own is 403 (also "null", another port, another scheme's
  host), before the key; the server's own origin (by the Host the request names), no Origin, and
  an --allowed-origin pass; an allowed origin gets Access-Control-Allow-Origin and a 204 to its
  preflight; '*' is warned about at start;
- a Host header naming another host than the bound address, localhost, 127.0.0.1, [::1] or an
  --allowed-host is 421 on every path (a DNS-rebinding page), before the key;
- /v1/info names the model without its directory on a keyless server, whole with a key;
- bad --allowed-origin / --allowed-host values are usage errors, and --help documents both.
"""
import http.client
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402
from pyutil import BIN, check, gen_checkpoint  # noqa: E402
from serveutil import ServeProcess, raw_request as raw, with_servers  # noqa: E402

KEY = "doors-test-key-0123456789abcdef"
SIMPLE = [None, "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
          "multipart/form-data; boundary=xyz", "TEXT/PLAIN", ""]


def get(s, path, **headers):
    """A GET with exactly these headers (Host included: http.client's own is skipped)."""
    lines = [f"GET {path} HTTP/1.1", "Connection: close"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    if "Host" not in headers:
        lines.append(f"Host: 127.0.0.1:{s.port}")
    return raw(s.port, "\r\n".join(lines).encode())


def post(s, path, body, ctype, **headers):
    lines = [f"POST {path} HTTP/1.1", "Connection: close", f"Content-Length: {len(body)}"]
    if ctype is not None:
        lines.append(f"Content-Type: {ctype}")
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    if "Host" not in headers:
        lines.append(f"Host: 127.0.0.1:{s.port}")
    return raw(s.port, "\r\n".join(lines).encode(), body)


def encodes(s):
    return s.metrics().get("g4v_encodes_total")


def run(tmp, servers):
    model = os.path.join(tmp, "tiny")
    gen_checkpoint(model, "--config", "tiny", "--seed", "3", quiet=True)
    img = os.path.join(tmp, "a.png")
    y, x = np.mgrid[0:30, 0:40]
    Image.fromarray(np.stack([x * 3, y * 4, x + y], -1).astype(np.uint8)).save(img)
    png = open(img, "rb").read()
    base = [BIN, "serve", "--model", model, "--port", "0", "--threads", "1"]

    # -- keyless, the default ------------------------------------------------------------------
    s = ServeProcess(tmp, "plain", base)
    servers.append(s)
    n0 = encodes(s)
    for ct in SIMPLE:
        st, h, body = post(s, "/v1/encode", png, ct)
        check(st == 415 and b"POST /v1/encode takes" in body,
              f"POST /v1/encode, Content-Type {ct!r}: 415 ({st} {body[:120]!r})")
    for ct in ("application/json", "video/mp4", "image", "imagex/png"):
        st, h, body = post(s, "/v1/encode", png, ct)
        check(st == 415, f"POST /v1/encode, Content-Type {ct!r} (not its type): 415 ({st})")
    check(encodes(s) == n0, f"nothing encoded for the refused POSTs ({n0} -> {encodes(s)})")
    for ct in ("image/png", "IMAGE/PNG; x=1", "application/octet-stream", "image/jpeg"):
        st, h, body = post(s, "/v1/encode?tokens=70", png, ct)
        check(st == 200 and json.loads(body)["tokens"] > 0, f"POST /v1/encode, {ct!r}: 200 ({st})")
    # the attack of issue 49 on the encode endpoint: a no-cors POST from another site
    st, h, body = post(s, "/v1/encode", png, "text/plain", Origin="http://evil.example")
    e = json.loads(body).get("error") if st == 403 else None
    check(st == 403 and b"evil.example" in body and b"--allowed-origin" in body and
          isinstance(e, dict) and set(e) == {"message", "type", "param", "code"} and
          e["type"] == "permission_error",
          f"a cross-site POST: 403 naming the origin and --allowed-origin, in OpenAI's error "
          f"object ({st} {body[:160]!r})")
    st, h, body = post(s, "/v1/encode", png, "image/png", Origin="http://evil.example")
    check(st == 403, f"a cross-site POST with an image type: 403 ({st})")
    for origin in ("http://evil.example", "null", f"http://127.0.0.1:{s.port + 1}",
                   f"http://localhost:{s.port}", "https://127.0.0.1:1", "file://",
                   f"http://127.0.0.1:{s.port}.evil.example", f"http://127.0.0.1:{s.port}/x"):
        for path in ("/v1/info", "/health", "/metrics", "/nope"):
            st, h, body = get(s, path, Origin=origin)
            check(st == 403 and "access-control-allow-origin" not in h,
                  f"GET {path}, Origin {origin!r} (Host 127.0.0.1:{s.port}): 403 ({st})")
    st, h, body = raw(s.port, f"OPTIONS /v1/encode HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n"
                      "Origin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\n"
                      "Connection: close".encode())
    check(st == 403 and "access-control-allow-origin" not in h,
          f"a preflight from another site: 403, no CORS header ({st})")
    # the server's own origin and no origin: answered
    for host, origin in ((f"127.0.0.1:{s.port}", f"http://127.0.0.1:{s.port}"),
                         (f"localhost:{s.port}", f"http://LOCALHOST:{s.port}"),
                         (f"[::1]:{s.port}", f"http://[::1]:{s.port}"),
                         ("localhost.", "http://localhost:80"), ("127.0.0.1", None)):
        hd = {"Host": host} | ({"Origin": origin} if origin else {})
        st, h, body = get(s, "/v1/info", **hd)
        check(st == 200 and "access-control-allow-origin" not in h,
              f"Host {host}, Origin {origin}: the server's own, 200 ({st} {body[:100]!r})")
        st, h, body = post(s, "/v1/encode?tokens=70", png, "image/png", **hd)
        check(st == 200, f"Host {host}, Origin {origin}: POST /v1/encode 200 ({st})")
    # the Host: a rebinding page names its own domain
    for host in ("evil.example", f"evil.example:{s.port}", "127.0.0.1.nip.io",
                 "localhost.evil.example", "10.0.0.1", "[::2]", "a b", "127.0.0.1:x",
                 "localhost@evil.example"):
        for path in ("/v1/info", "/health", "/", "/nope"):
            st, h, body = get(s, path, Host=host)
            e = json.loads(body).get("error") if st == 421 else None
            check(st == 421 and b"--allowed-host" in body and isinstance(e, dict) and
                  e.get("code") == "SERVE_WRONG_HOST" and "param" in e,
                  f"GET {path}, Host {host!r}: 421 ({st} {body[:120]!r})")
    st, h, body = post(s, "/v1/encode", png, "image/png", Host="evil.example")
    check(st == 421, f"POST /v1/encode, Host evil.example: 421 ({st})")
    check(encodes(s) == n0 + 4 + 5, f"only the allowed POSTs encoded ({encodes(s) - n0})")
    st, h, body = get(s, "/v1/info")
    info = json.loads(body)
    check(st == 200 and info["model"] == "tiny" and "/" not in json.dumps(info["model"]),
          f"keyless /v1/info: the model named without its directory ({info['model']!r})")
    m = s.metrics()
    check(m.get('g4v_http_requests_total{code="421"}', 0) >= 36
          and m.get('g4v_http_requests_total{code="415"}', 0) >= 11
          and m.get('g4v_http_requests_total{code="403"}', 0) >= 33,
          "/metrics counts the 403, 415 and 421 answers")

    # -- with a key, an allowed origin and host --------------------------------------------------
    k = ServeProcess(tmp, "key", base + ["--api-key", KEY, "--allowed-origin", "http://app.example",
                                         "--allowed-origin", "https://other.example:8443",
                                         "--allowed-host", "g4v.example"])
    servers.append(k)
    auth = {"Authorization": "Bearer " + KEY}
    for ct in SIMPLE:
        st, h, body = post(k, "/v1/encode", png, ct, **auth)
        check(st == 415, f"with the key, Content-Type {ct!r}: 415 ({st})")
    st, h, body = get(k, "/v1/info", Origin="http://evil.example", **auth)
    check(st == 403, f"with the key, another origin: 403 ({st})")
    st, h, body = get(k, "/v1/info", Origin="http://evil.example")
    check(st == 403, f"without the key, another origin: 403 before the 401 ({st})")
    st, h, body = get(k, "/v1/info", Host="evil.example")
    check(st == 421, f"without the key, another host: 421 before the 401 ({st})")
    st, h, body = get(k, "/v1/info", Host="g4v.example:8080", **auth)
    check(st == 200, f"--allowed-host g4v.example: Host g4v.example:8080 answered ({st})")
    st, h, body = get(k, "/v1/info", Host="G4V.EXAMPLE", Origin="http://g4v.example", **auth)
    check(st == 200, f"--allowed-host: its own origin too ({st})")
    for origin in ("http://app.example", "https://other.example:8443"):
        st, h, body = get(k, "/v1/info", Origin=origin, **auth)
        check(st == 200 and h.get("access-control-allow-origin") == origin
              and h.get("vary") == "Origin",
              f"--allowed-origin {origin}: 200 with Access-Control-Allow-Origin ({st} {h})")
        st, h, body = raw(k.port, f"OPTIONS /v1/encode HTTP/1.1\r\nHost: 127.0.0.1:{k.port}\r\n"
                          f"Origin: {origin}\r\nAccess-Control-Request-Method: POST\r\n"
                          "Access-Control-Request-Headers: authorization, content-type\r\n"
                          "Connection: close".encode())
        check(st == 204 and h.get("access-control-allow-origin") == origin
              and h.get("access-control-allow-methods") == "POST"
              and "Authorization" in h.get("access-control-allow-headers", ""),
              f"--allowed-origin {origin}: the preflight without the key is 204 ({st} {h})")
    st, h, body = get(k, "/v1/info", Origin="http://app.example")
    check(st == 401 and h.get("access-control-allow-origin") == "http://app.example",
          f"an allowed origin without the key: 401, readable by its page ({st})")
    st, h, body = post(k, "/v1/encode?tokens=70", png, "image/png", Origin="http://app.example",
                       **auth)
    check(st == 200 and h.get("access-control-allow-origin") == "http://app.example",
          f"an allowed origin with the key: POST /v1/encode 200 ({st})")
    st, h, body = get(k, "/v1/info", **auth)
    check(st == 200 and json.loads(body)["model"] == model,
          f"with the key /v1/info names the model's path ({json.loads(body)['model']!r})")

    # -- '*' ----------------------------------------------------------------------------------------
    w = ServeProcess(tmp, "star", base + ["--allowed-origin", "*"])
    servers.append(w)
    st, h, body = get(w, "/v1/info", Origin="http://evil.example")
    check(st == 200 and h.get("access-control-allow-origin") == "*",
          f"--allowed-origin '*': any origin, Access-Control-Allow-Origin: * ({st})")
    st, h, body = post(w, "/v1/encode", png, "text/plain", Origin="http://evil.example")
    check(st == 415, f"--allowed-origin '*': a text/plain POST is still 415 ({st})")
    st, h, body = get(w, "/v1/info", Host="evil.example")
    check(st == 421, f"--allowed-origin '*': the Host is still checked ({st})")
    for srv in servers:
        check(srv.stop() == 0, f"{srv.err_path}: SIGTERM, exit 0")
    warn = open(w.err_path).read()
    check("warning: --allowed-origin '*'" in warn, f"'*' is warned about at start ({warn[-300:]!r})")

    # -- bound to a wildcard: any IP literal, not a name -----------------------------------------
    a = ServeProcess(tmp, "any", base[:2] + ["--model", model, "--port", "0", "--threads", "1",
                                             "--host", "0.0.0.0", "--api-key", KEY])
    servers.append(a)
    for host, want in (("192.168.7.7:1234", 200), ("10.1.2.3", 200), ("[fd00::1]", 200),
                       ("myhost.lan", 421)):
        st, h, body = get(a, "/health", Host=host)
        check(st == want, f"--host 0.0.0.0: Host {host} is {want} ({st})")
    check(a.stop() == 0, "the wildcard server stops")

    # -- options ------------------------------------------------------------------------------------
    for opt, val, what in (("--allowed-origin", "http://app.example/", "no path"),
                           ("--allowed-origin", "app.example", "http://HOST"),
                           ("--allowed-origin", "ftp://x", "http://HOST"),
                           ("--allowed-origin", "http://x:y", "http://HOST"),
                           ("--allowed-host", "g4v.example:8080", "without a port"),
                           ("--allowed-host", "a/b", "host name")):
        r = subprocess.run(base + [opt, val], capture_output=True, text=True, timeout=60)
        check(r.returncode == 1 and what in r.stderr,
              f"{opt} {val}: usage error saying {what!r} ({r.returncode} {r.stderr[-200:]!r})")
    r = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and "--allowed-origin ORIGIN" in r.stdout
          and "--allowed-host NAME" in r.stdout and "421" in r.stdout and "415" in r.stdout,
          "g4v serve --help documents --allowed-origin, --allowed-host and the answers")


def test_serve_doors():
    with_servers("g4v_serve_doors_", run)
