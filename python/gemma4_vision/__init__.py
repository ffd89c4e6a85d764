"""gemma4_vision - Gemma 4 vision soft tokens from Python, over libg4v (the C library).

    from gemma4_vision import Model
    with Model("gemma-4-e4b-it", threads=4) as m:
        r = m.encode("cat.jpg", tokens=280)
        r.features        # float32 [N, T]
        r.prompt_ids      # int32 [N + 2]: boi, image x N, eoi

Bulk encoding of many images on a Dask cluster: gemma4_vision.bulk (python3 -m
gemma4_vision.bulk --help). See python/README.md.

Importing never fails for want of the library: libg4v is loaded on first use, and a missing one
raises LibraryNotFoundError (a G4VError) saying where it was looked for.
"""
from __future__ import annotations

from typing import Any

from . import _lib
from ._errors import G4VError
from ._lib import LibraryNotFoundError, status_name
from .model import ImageInput, Model, ModelInfo, Result, VideoResult
from .preprocess import Pixels, preprocess

__all__ = ["Model", "Result", "VideoResult", "ModelInfo", "G4VError", "LibraryNotFoundError",
           "BUDGETS", "DEFAULT_BUDGET", "DEFAULT_VIDEO_BUDGET", "VIDEO_ALLOC_CAP", "MATH_MODES",
           "ImageInput",
           "status_name", "library_version", "library_path", "cap_video_allocations",
           "preprocess", "Pixels"]


def __getattr__(name: str) -> Any:
    """The library's constants, read from it on first use (PEP 562): BUDGETS (G4V_BUDGETS),
    DEFAULT_BUDGET, DEFAULT_VIDEO_BUDGET, VIDEO_ALLOC_CAP (what `g4v encode` and `g4v serve`
    cap every single FFmpeg allocation at), and MATH_MODES (the names Model's math= takes, in
    g4v_math_mode order)."""
    if name == "BUDGETS":
        return _lib.budgets()
    if name == "DEFAULT_BUDGET":
        return _lib.default_budget()
    if name == "DEFAULT_VIDEO_BUDGET":
        return _lib.default_video_budget()
    if name == "VIDEO_ALLOC_CAP":
        return _lib.video_alloc_cap()
    if name == "MATH_MODES":
        return _lib.math_modes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def library_version() -> str:
    """The version of the libg4v actually loaded ("0.2.0")."""
    return _lib.lib.g4v_version().decode()


def library_path() -> str:
    """Where libg4v was loaded from."""
    return _lib.lib.g4v_path


def cap_video_allocations(max_bytes: int | None = None) -> None:
    """Caps every single allocation FFmpeg makes in this process at max_bytes (None: the
    library's VIDEO_ALLOC_CAP, as `g4v encode` uses; 0: FFmpeg's default, 2 GiB - 1). A hostile
    video's header can otherwise make FFmpeg ask for a gigabyte at once; with the cap such a
    file fails with G4VError (G4V_ERR_IMAGE). Process-wide (every FFmpeg user of the process,
    PyAV included): call it once, in programs that decode untrusted videos."""
    if max_bytes is None:
        max_bytes = _lib.video_alloc_cap()
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError(f"max_bytes must be an integer, not {type(max_bytes).__name__}")
    if max_bytes < 0:
        raise ValueError("max_bytes must be >= 0")
    _lib.lib.g4v_video_cap_allocations(max_bytes)
