"""preprocess.py - preprocessing alone (g4v_preprocess_file, `g4v preprocess`): the pixels and
patches an encode would feed the vision tower, without a model.

    from gemma4_vision import preprocess
    p = preprocess("cat.jpg", tokens=280)
    p.rgb        # uint8 [H, W, 3], the image resized to the budget's target size
    p.patches    # float32 [L, 768]: 16x16 patches, (row, column, channel) order, values u / 255
    p.positions  # int32 [L, 2]: (column, row) of each patch

Byte for byte what transformers' load_image + Gemma 4 image processor produce (docs/PREPROCESSING.md).
"""
from __future__ import annotations

import ctypes
import os
from ctypes import byref, c_char_p

import numpy as np

from . import _lib
from ._errors import G4VError
from .model import _budget, _resize

_PILLOW_VERSIONS = {"13": 13, "12.2": 122, "9": 9}


class Pixels:
    """A preprocessed image (numpy arrays of its own; nothing refers to library memory).

    rgb              uint8 [height, width, 3]: the resized image
    patches          float32 [L, 768]: per patch (row, column, channel), values u / 255
    positions        int32 [L, 2]: (x = patch column, y = patch row)
    width, height    the target size (multiples of 48)
    format           "JPEG", "PNG", "WebP", "GIF", "BMP" or "TIFF"
    src_size         (width, height) as stored in the file
    orientation      the EXIF orientation applied, 1..8 (1: none)
    oriented_size    (width, height) after it: what the target size is computed from
    streamed         True when rows went from the decoder straight into the resize
    """

    def __init__(self, c: _lib.Pixels):
        h, w, n = c.height, c.width, c.n_patches
        self.width, self.height = w, h
        self.rgb = np.ctypeslib.as_array(c.rgb, shape=(h, w, 3)).copy()
        self.patches = np.ctypeslib.as_array(c.patches, shape=(n, 768)).copy()
        self.positions = np.ctypeslib.as_array(c.positions, shape=(n, 2)).copy()
        self.format = c.format.decode()
        self.src_size = (c.src_width, c.src_height)
        self.orientation = c.orientation
        self.oriented_size = (c.oriented_width, c.oriented_height)
        self.streamed = bool(c.streamed)

    @property
    def n_patches(self) -> int:
        return self.patches.shape[0]

    def __repr__(self) -> str:
        return (f"Pixels({self.format} {self.src_size[0]}x{self.src_size[1]} -> "
                f"{self.width}x{self.height}, {self.n_patches} patches, "
                f"orientation {self.orientation})")


def preprocess(path: str | os.PathLike[str], tokens: int | None = None, exif: bool = True,
               resize: str = "pillow", pillow: str = "13", max_pixels: int = 0,
               max_dimension: int = 0) -> Pixels:
    """Decodes, orients, resizes and patchifies the image file at path as an encode would.

    tokens         soft-token budget, one of BUDGETS (None: 280)
    exif           apply the EXIF orientation (as load_image does); False: ignore it
    resize         "pillow" (Pillow's BICUBIC, the PIL backend) or "torchvision"
    pillow         with "pillow": the Pillow whose order of the two resize passes to follow,
                   "13" (Pillow >= 13), "12.2" or "9" (Pillow 9.0 - 12.1)
    max_pixels, max_dimension  limits as in Model (0: the library's defaults)
    Raises G4VError (G4V_ERR_IO for a missing file, G4V_ERR_IMAGE for a corrupt one,
    G4V_ERR_LIMIT over a limit, G4V_ERR_ARG for a combination the library refuses), ValueError
    / TypeError for a bad budget, resize or pillow value.
    """
    lib = _lib.lib
    o = _lib.PreprocessOptions()
    lib.g4v_preprocess_options_init(byref(o))
    if tokens is not None:
        o.budget = _budget(tokens, "tokens")
    o.apply_exif = 1 if exif else 0
    o.resize = _resize(resize)
    if pillow not in _PILLOW_VERSIONS:
        raise ValueError(f"pillow must be one of {sorted(_PILLOW_VERSIONS)}, got {pillow!r}")
    o.pillow_version = _PILLOW_VERSIONS[pillow]
    if max_pixels < 0 or max_dimension < 0:
        raise ValueError("max_pixels and max_dimension must be >= 0")
    o.max_pixels = max_pixels
    o.max_dimension = max_dimension
    out = ctypes.POINTER(_lib.Pixels)()
    msg = ctypes.create_string_buffer(1024)
    st = lib.g4v_preprocess_file(c_char_p(os.fsencode(path)), byref(o), byref(out), msg,
                                 len(msg))
    if st:
        raise G4VError(st, msg.value.decode(errors="replace"))
    try:
        return Pixels(out.contents)
    finally:
        lib.g4v_pixels_free(out)
