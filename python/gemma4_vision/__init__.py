"""gemma4_vision - Gemma 4 vision soft tokens from Python, over libg4v (the C library).

    from gemma4_vision import Model
    with Model("gemma-4-e4b-it", threads=4) as m:
        r = m.encode("cat.jpg", tokens=280)
        r.features        # float32 [N, T]
        r.prompt_ids      # int32 [N + 2]: boi, image x N, eoi

Bulk encoding of many images on a Dask cluster: gemma4_vision.bulk (python3 -m
gemma4_vision.bulk --help). See python/README.md.
"""
from ._lib import lib as _clib
from .model import (BUDGETS, DEFAULT_BUDGET, G4VError, Model, ModelInfo, Result, VideoResult,
                    status_name)

__all__ = ["Model", "Result", "VideoResult", "ModelInfo", "G4VError", "BUDGETS", "DEFAULT_BUDGET",
           "status_name", "library_version", "library_path", "cap_video_allocations",
           "VIDEO_ALLOC_CAP"]

# What `g4v encode` and `g4v serve` cap every single FFmpeg allocation at (G4V_VIDEO_ALLOC_CAP).
VIDEO_ALLOC_CAP = 256 << 20


def library_version():
    """The version of the libg4v actually loaded ("0.1.0")."""
    return _clib.g4v_version().decode()


def library_path():
    """Where libg4v was loaded from."""
    return _clib.g4v_path


def cap_video_allocations(max_bytes=VIDEO_ALLOC_CAP):
    """Caps every single allocation FFmpeg makes in this process at max_bytes (0: FFmpeg's
    default, 2 GiB - 1). A hostile video's header can otherwise make FFmpeg ask for a gigabyte
    at once; with the cap such a file fails with G4VError (G4V_ERR_IMAGE). Process-wide (every
    FFmpeg user of the process, PyAV included): call it once, in programs that decode untrusted
    videos."""
    if max_bytes < 0:
        raise ValueError("max_bytes must be >= 0")
    _clib.g4v_video_cap_allocations(max_bytes)
