"""serveutil.py - one `g4v serve` process for the service and chat tests.

ServeProcess(tmp, name, argv, env=None) starts BINARY serve --port 0 ARGS..., reads the port
from the line it prints ("listening on http://ADDR:PORT"), keeps its stderr in tmp/NAME.stderr,
and offers request() (a dict or list body is sent as JSON), metrics() (the /metrics lines as a
dict), wait_metric() and stop() (SIGTERM, then the exit status). The tests subclass it for
their own calls (chat streams, uploads).

raw_request(port, head, body) sends a request as raw bytes (headers a client library would
rewrite: Host, Origin, a missing Content-Type) and returns (status, headers, body).

sse_events(response, stop_after=None) reads a chat stream's server-sent events (each data: line's
JSON, "[DONE]" as the string).

route_table_checks(server, endpoints) holds the answers of the service's route table
(tools/service/core/routes.c) against the endpoints a server should have: every other method on
each is 405 with the right Allow header, and an unknown path is 404 with a text that names every
endpoint (and no other).
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time


class ServeProcess:
    def __init__(self, tmp, name, argv, env=None, stop_timeout=60):
        self.err_path = os.path.join(tmp, name + ".stderr")
        self.err = open(self.err_path, "w")
        self.stop_timeout = stop_timeout
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err, text=True,
                                  env=env)
        line = self.p.stdout.readline()  # "g4v serve: listening on http://ADDR:PORT ..."
        m = re.search(r"http://[^ ]*:(\d+)", line)
        if not m:
            self.p.wait()
            raise RuntimeError(f"server did not start: {line!r} {open(self.err_path).read()}")
        self.line = line
        self.port = int(m.group(1))
        self.url = f"http://127.0.0.1:{self.port}"

    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        c = self.conn(timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
                headers = {"Content-Type": "application/json", **(headers or {})}
            elif isinstance(body, bytes) and method == "POST":
                # raw bytes are an image (POST /v1/encode's type); a "Content-Type": None in
                # headers sends none (core/doors.c refuses that with 415)
                headers = {"Content-Type": "application/octet-stream", **(headers or {})}
            headers = {k: v for k, v in (headers or {}).items() if v is not None}
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def metrics(self):
        _, _, body = self.request("GET", "/metrics")
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def wait_metric(self, name, value, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if self.metrics().get(name) == value:
                return True
            time.sleep(0.01)
        return False

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.err.close()
        return self.p.returncode


def raw_request(port, head, body=b"", timeout=30):
    """One request sent as bytes, its headers exactly as given (head: the request line and
    header lines joined by CRLF, without the blank line); (status, {lowercase header: value},
    body)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(head + b"\r\n\r\n" + body)
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    finally:
        s.close()
    head, _, rest = out.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    hd = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hd[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), hd, rest


def with_servers(prefix, run):
    """run(tmp, servers) in a fresh temporary directory; every server it appended to servers is
    stopped and the directory removed afterwards, whatever happened."""
    import shutil
    import tempfile
    tmp = tempfile.mkdtemp(prefix=prefix)
    servers = []
    try:
        run(tmp, servers)
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)


METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")
ALL_ENDPOINTS = {"/v1/encode": "POST", "/v1/info": "GET", "/health": "GET", "/metrics": "GET",
                 "/v1/chat/completions": "POST", "/v1/responses": "POST", "/v1/models": "GET",
                 "/": "GET"}


def sse_events(r, stop_after=None):
    """The server-sent events of http.client response r, up to "[DONE]" (kept as that string)
    or the first stop_after events."""
    events = []
    while True:
        line = r.readline()
        if not line:
            break
        if line.startswith(b"data: "):
            d = line[6:].strip()
            events.append("[DONE]" if d == b"[DONE]" else json.loads(d))
            if d == b"[DONE]" or (stop_after and len(events) >= stop_after):
                break
    return events


def route_table_checks(server, endpoints, headers=None):
    """[(ok, what)] for the route table's answers; endpoints: {path: "GET" or "POST"} that the
    server must answer (any other of ALL_ENDPOINTS must not be listed)."""
    out = []
    for path, allowed in endpoints.items():
        for m in METHODS:
            if m == allowed:
                continue
            st, h, raw = server.request(m, path, b"x" if m != "GET" else None, headers)
            try:
                err = json.loads(raw)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                err = raw[:80]
            out.append((st == 405 and h.get("Allow") == allowed and f"use {allowed}" in err,
                        f"{m} {path}: 405, Allow: {allowed} ({st}, Allow {h.get('Allow')!r}, {err!r})"))
    st, h, raw = server.request("GET", "/no/such/path", None, headers)
    try:
        err = json.loads(raw)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        err = raw[:80]
    named = [f"{m} {p}" for p, m in endpoints.items()]
    absent = [f"{m} {p}" for p, m in ALL_ENDPOINTS.items() if p not in endpoints]
    # the list in the message's last parentheses, item by item ("GET /" is in "GET /v1/info")
    listed = err[err.rfind("(") + 1:err.rfind(")")].split(", ") if "(" in err else []
    out.append((st == 404 and "no such endpoint: /no/such/path" in err
                and all(n in listed for n in named) and not any(a in listed for a in absent),
                f"unknown path: 404 naming {', '.join(named)} ({st}, {err!r})"))
    return out
