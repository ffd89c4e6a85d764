#!/usr/bin/env python3
"""g4v_client.py - a small client for `g4v serve` (docs/SERVICE.md): standard library + numpy.

    python3 examples/g4v_client.py http://127.0.0.1:8080 cat.jpg [--tokens 280]

prints the soft tokens' shape, the grid and the prompt ids. As a module:

    from g4v_client import encode
    features, meta = encode("http://127.0.0.1:8080", open("cat.jpg", "rb").read(), tokens=280)
    # features: numpy float32 [N, T] (uint16 bf16 bit patterns with dtype="bf16")
    # meta: tokens, dim, grid, original_size, target_size, budget, prompt_ids, cache
"""
import io
import sys
import urllib.error
import urllib.request

import numpy as np


class G4VError(Exception):
    """The service answered an error: .status (HTTP code) and the library's message."""

    def __init__(self, status, message):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


def encode(base_url, image_bytes, tokens=None, dtype="f32", timeout=600):
    """POSTs image_bytes to /v1/encode and returns (features, meta), asking for .npy."""
    query = [f"dtype={dtype}"] + ([f"tokens={tokens}"] if tokens else [])
    req = urllib.request.Request(base_url.rstrip("/") + "/v1/encode?" + "&".join(query),
                                 data=image_bytes, method="POST",
                                 headers={"Accept": "application/x-npy",
                                          "Content-Type": "application/octet-stream"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body, h = r.read(), r.headers
    except urllib.error.HTTPError as e:  # the body is {"error": ..., "status": ...}
        import json
        try:
            msg = json.loads(e.read())["error"]
        except ValueError:
            msg = e.reason
        raise G4VError(e.code, msg) from None
    features = np.load(io.BytesIO(body))
    boi, image, eoi = h["X-G4V-Prompt-Ids"].split()  # "255999 258880x266 258882"
    img_id, n = image.split("x")
    pair = lambda v: tuple(int(x) for x in v.split("x"))  # noqa: E731
    meta = {"tokens": int(h["X-G4V-Tokens"]), "dim": int(h["X-G4V-Dim"]),
            "grid": pair(h["X-G4V-Grid"]), "original_size": pair(h["X-G4V-Original-Size"]),
            "target_size": pair(h["X-G4V-Target-Size"]), "budget": int(h["X-G4V-Budget"]),
            "prompt_ids": [int(boi)] + [int(img_id)] * int(n) + [int(eoi)],
            "cache": h["X-G4V-Cache"]}
    return features, meta


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2].strip())
        return 1
    tokens = int(argv[argv.index("--tokens") + 1]) if "--tokens" in argv else None
    with open(argv[2], "rb") as f:
        features, meta = encode(argv[1], f.read(), tokens=tokens)
    print(f"{argv[2]}: {features.dtype} {features.shape}, grid {meta['grid']}, "
          f"cache {meta['cache']}, prompt ids {meta['prompt_ids'][:2]}...{meta['prompt_ids'][-1:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
