"""fake_hub.py - a local stand-in for the Hugging Face Hub, for tests/hub/test_hub_pull.py: the API
listing (GET /api/models/ORG/NAME/revision/REV?blobs=true), `resolve` (a non-LFS file answered
directly, an LFS file redirected with X-Repo-Commit, X-Linked-Etag and X-Linked-Size to a second
server on ANOTHER loopback host name, 127.0.0.2, as the Hub redirects to its CDN), Range requests,
ETags, gated repositories (401 without the right Bearer token), and faults on demand: a connection
dropped mid-file, 429 and 503 answers with Retry-After, a listing that lies about a size or a
sha256, a body longer than the listing says, a name that escapes the folder. Every request is
logged (host, path, Range, whether an Authorization header came, and the body bytes handed to the
socket) for the tests to read. Loopback only: nothing here reaches the internet.
"""
import hashlib
import http.server
import json
import re
import socketserver
import threading
import time


class Repo:
    def __init__(self, files, commit=None, gated=False, lfs_min=64):
        self.files = dict(files)  # path -> bytes
        self.commit = commit or hashlib.sha1(repr(sorted(self.files)).encode()).hexdigest()
        self.gated = gated
        self.lfs = {p for p, b in self.files.items()
                    if p.endswith((".safetensors", ".gguf")) or len(b) >= lfs_min * 1024}
        self.extra_siblings = []  # raw sibling dicts appended to the listing (hostile names)
        self.size_lie = {}        # path -> size the listing says
        self.sha_lie = {}         # path -> sha256 the listing says


def git_blob_id(b):
    return hashlib.sha1(b"blob %d\0" % len(b) + b).hexdigest()


class Hub:
    """The two servers and their state. faults: name -> count left (each answer of that kind
    uses one): drop (cut the body after drop_at bytes), 429, 503, overlong (send more than the
    listing says; overlong206: only in Range answers), corrupt (one byte changed, the size kept).
    after_drop: faults (and drop_at) armed when a drop happens: {"drop": 100, "drop_at": 0} drops
    every later answer before its first byte, so the client's retries run out."""

    def __init__(self):
        self.repos = {}
        self.token = "hf_secret_token_for_tests"
        self.log = []
        self.faults = {}
        self.drop_at = 1000
        self.after_drop = {}
        self.retry_after = "0"
        self.throttle = 0.0  # seconds per 64 KiB chunk of file bodies
        self.blobs = {}
        self.lock = threading.Lock()
        self.api = self._serve("127.0.0.1")
        self.cdn = self._serve("127.0.0.2")
        self.endpoint = "http://127.0.0.1:%d" % self.api.server_address[1]
        self.cdn_base = "http://127.0.0.2:%d" % self.cdn.server_address[1]

    def add(self, name, repo):
        self.repos[name] = repo
        for b in repo.files.values():
            self.blobs[hashlib.sha256(b).hexdigest()] = b

    def fault(self, kind):
        with self.lock:
            n = self.faults.get(kind, 0)
            if n:
                self.faults[kind] = n - 1
            return n > 0

    def close(self):
        for s in (self.api, self.cdn):
            s.shutdown()
            s.server_close()

    def _serve(self, host):
        hub = self

        class H(Handler):
            pass

        H.hub = hub
        s = socketserver.ThreadingTCPServer((host, 0), H)
        s.daemon_threads = True
        threading.Thread(target=s.serve_forever, daemon=True).start()
        return s


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hub = None

    def log_message(self, *a):
        pass

    def send(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self):
        self.send(405)

    def do_GET(self):
        hub = self.hub
        host = self.server.server_address[0]
        auth = self.headers.get("Authorization")
        self.entry = {"host": host, "path": self.path, "range": self.headers.get("Range"),
                      "auth": auth, "sent": 0}
        hub.log.append(self.entry)
        if hub.fault("429"):
            return self.send(429, b"slow down", [("Retry-After", hub.retry_after)])
        if hub.fault("503"):
            return self.send(503, b"busy", [("Retry-After", hub.retry_after)])
        if host == "127.0.0.2":
            m = re.match(r"^/blob/([0-9a-f]{64})", self.path)
            if not m or m.group(1) not in hub.blobs:
                return self.send(404)
            return self.body(hub.blobs[m.group(1)], m.group(1))
        m = re.match(r"^/api/models/([^/]+/[^/]+)/revision/([^?]+)", self.path)
        if m:
            repo = hub.repos.get(m.group(1))
            if repo is None:
                return self.send(404, b'{"error":"Repository not found"}')
            if repo.gated and auth != "Bearer " + hub.token:
                return self.send(401 if not auth else 403, b'{"error":"gated"}')
            sib = []
            for p, b in sorted(repo.files.items()):
                e = {"rfilename": p, "size": repo.size_lie.get(p, len(b)), "blobId": git_blob_id(b)}
                if p in repo.lfs:
                    e["lfs"] = {"sha256": repo.sha_lie.get(p, hashlib.sha256(b).hexdigest()),
                                "size": repo.size_lie.get(p, len(b)), "pointerSize": 134}
                sib.append(e)
            sib += repo.extra_siblings
            body = json.dumps({"id": m.group(1), "sha": repo.commit, "siblings": sib}).encode()
            return self.send(200, body, [("Content-Type", "application/json")])
        m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", self.path)
        if m:
            from urllib.parse import unquote
            repo = hub.repos.get(m.group(1))
            path = unquote(m.group(3))
            if repo is None or path not in repo.files:
                return self.send(404)
            if repo.gated and auth != "Bearer " + hub.token:
                return self.send(401 if not auth else 403)
            b = repo.files[path]
            common = [("X-Repo-Commit", repo.commit)]
            if path in repo.lfs:
                sha = hashlib.sha256(b).hexdigest()
                return self.send(302, b"", common + [
                    ("Location", "%s/blob/%s?expires=1" % (hub.cdn_base, sha)),
                    ("X-Linked-Etag", '"%s"' % sha), ("X-Linked-Size", str(len(b))),
                    ("ETag", '"%s"' % git_blob_id(b))])
            return self.body(b, git_blob_id(b), common)
        self.send(404)

    def body(self, data, etag, extra=()):
        hub = self.hub
        total = len(data)
        a, b = 0, total - 1
        status = 200
        r = self.headers.get("Range")
        if r:
            m = re.match(r"^bytes=(\d+)-(\d*)$", r)
            if not m or int(m.group(1)) >= total:
                return self.send(416, b"", [("Content-Range", "bytes */%d" % total)])
            a = int(m.group(1))
            b = min(int(m.group(2)), total - 1) if m.group(2) else total - 1
            status = 206
        chunk = data[a:b + 1]
        if len(chunk) > 10 and hub.fault("corrupt"):  # the same size, one byte changed
            chunk = chunk[:10] + bytes([chunk[10] ^ 1]) + chunk[11:]
        if hub.fault("overlong") or (status == 206 and hub.fault("overlong206")):
            chunk = chunk + b"X" * 4096
            b = a + len(chunk) - 1
        self.send_response(status)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("ETag", '"%s"' % etag)
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (a, b, max(total, b + 1)))
        self.send_header("Content-Length", str(len(chunk)))
        self.end_headers()
        if len(chunk) > hub.drop_at and hub.fault("drop"):
            self.entry["sent"] += hub.drop_at
            self.wfile.write(chunk[:hub.drop_at])
            self.wfile.flush()
            with hub.lock:
                for k, v in hub.after_drop.items():
                    if k == "drop_at":
                        hub.drop_at = v
                    else:
                        hub.faults[k] = v
            self.close_connection = True
            self.connection.shutdown(2)
            return
        for i in range(0, len(chunk), 65536):
            if hub.throttle:
                time.sleep(hub.throttle)
            # counted before the write: a client that has every byte may exit (and the test read
            # the log) before this thread runs again
            self.entry["sent"] += len(chunk[i:i + 65536])
            try:
                self.wfile.write(chunk[i:i + 65536])
            except (BrokenPipeError, ConnectionResetError):
                return
