"""safetensors.py - the two things bulk encoding needs from the safetensors format, in plain
Python + numpy (Debian has no safetensors package): an atomic writer and a lazy reader.

Format: an 8-byte little-endian header length, a JSON header (padded with spaces to a multiple of
8 bytes), then the tensors' raw little-endian bytes. The header maps each tensor name to dtype,
shape and [begin, end) byte offsets into the data; "__metadata__" holds string -> string pairs.

write_atomic() writes to a temporary file in the same directory, fsyncs it and renames it over
the final name, so a reader (or a resumed run) sees either the whole file or none of it, even if
the writing process is killed. read_header() reads the header only; tensor() memory-maps one
tensor, so loading a manifest touches no feature bytes until they are asked for.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import uuid
from typing import Any

import numpy as np

DTYPES = {"F32": np.dtype("<f4"), "BF16": np.dtype("<u2")}  # BF16 is returned as its uint16 bits
MAX_HEADER = 100_000_000


def write_atomic(path: str, tensors: list[tuple[str, str, np.ndarray]],
                 metadata: dict[str, str]) -> None:
    """tensors: [(name, dtype "F32" | "BF16", 2-D array)] in order; metadata: {str: str}."""
    header: dict[str, Any] = {"__metadata__": {str(k): str(v) for k, v in metadata.items()}}
    offset = 0
    blobs = []
    for name, dtype, arr in tensors:
        a = np.ascontiguousarray(arr, dtype=DTYPES[dtype])
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a)
    js = json.dumps(header, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 8)
    d = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(d, f".{os.path.basename(path)}.tmp-{socket.gethostname()}-{os.getpid()}-"
                          f"{uuid.uuid4().hex[:8]}")
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(js)))
            f.write(js)
            for a in blobs:
                f.write(memoryview(a).cast("B"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable; not every filesystem lets a directory be fsynced
        fd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def read_header(path: str) -> tuple[dict, int]:
    """(header dict, byte offset of the data) of a safetensors file; ValueError if malformed."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: not a safetensors file (shorter than 8 bytes)")
        (n,) = struct.unpack("<Q", raw)
        if n > MAX_HEADER:
            raise ValueError(f"{path}: header of {n} bytes is over {MAX_HEADER}")
        js = f.read(n)
        if len(js) != n:
            raise ValueError(f"{path}: truncated header")
    try:
        header = json.loads(js)
    except ValueError as e:
        raise ValueError(f"{path}: header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not a JSON object")
    return header, 8 + n


def tensor(path: str, name: str, header: dict | None = None,
           data_offset: int | None = None) -> np.ndarray:
    """One tensor of a safetensors file, memory-mapped read-only (F32: float32, BF16: uint16)."""
    if header is None:
        header, data_offset = read_header(path)
    t = header[name]
    a, b = t["data_offsets"]
    dt = DTYPES[t["dtype"]]
    shape = tuple(t["shape"])
    if b - a != int(np.prod(shape)) * dt.itemsize:
        raise ValueError(f"{path}: tensor {name}: offsets do not match its shape")
    if b == a:
        return np.zeros(shape, dtype=dt)
    return np.memmap(path, dtype=dt, mode="r", offset=data_offset + a, shape=shape)


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16) -> float32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
