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
           "status_name", "library_version", "library_path"]


def library_version():
    """The version of the libg4v actually loaded ("0.1.0")."""
    return _clib.g4v_version().decode()


def library_path():
    """Where libg4v was loaded from."""
    return _clib.g4v_path
