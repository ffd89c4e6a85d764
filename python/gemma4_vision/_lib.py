"""_lib.py - the ctypes view of include/g4v.h: structures, prototypes, and finding libg4v.so.

Only this file knows the C layouts. The structures mirror g4v.h field for field. They may lag
behind the header safely for the structs g4v.h lets grow (g4v_*_options, g4v_model_info,
g4v_cache_stats): every option struct carries its own size (struct_size, set by the init call) and
the info / stats calls are passed ctypes.sizeof of the mirror, so a newer libg4v reads and writes
only the fields declared here. The header's inline helpers (g4v_model_options_init,
g4v_model_get_info, ...) are mirrored as Python functions of the same names on the loaded library
(_INLINE). The frozen structs (g4v_result, g4v_rgb_image, g4v_video_frame, g4v_video_result) must
match exactly.

The library is loaded on first use, not at import: `import gemma4_vision` always works, and the
first call that needs libg4v raises LibraryNotFoundError (a G4VError) naming every place looked
at when it cannot be loaded. Where libg4v.so is looked for, first match wins:
  1. $G4V_LIBRARY: the path of the library file itself (an explicit override; nothing else is
     tried when it is set);
  2. inside the package, found through importlib.resources: gemma4_vision/libg4v.so, which the
     wheel carries (pip install, python3 -m build);
  3. the prefix `cmake --install` / `make install` installed the package into: _paths.py, written
     there, holds the library directory relative to the package (a moved prefix still works).
No build directory is guessed and the dynamic linker's search path is not used: a stale copy
elsewhere is never picked up by accident.
"""
import ctypes
import importlib.resources
import os
import threading

from . import _errors
from ._errors import G4VError

c_int, c_int32, c_size_t, c_uint16, c_uint64 = (ctypes.c_int, ctypes.c_int32, ctypes.c_size_t,
                                                  ctypes.c_uint16, ctypes.c_uint64)
c_char_p, c_void_p, c_double, c_float = (ctypes.c_char_p, ctypes.c_void_p, ctypes.c_double,
                                         ctypes.c_float)
POINTER = ctypes.POINTER

# Status codes (g4v.h, stable numbers).
OK, ERR_ARG, ERR_IO, ERR_MODEL, ERR_IMAGE, ERR_LIMIT, ERR_NOMEM, ERR_UNSUPPORTED, ERR_INTERNAL = range(9)


# g4v.h G4V_RESIZE_*: which transformers image processor's resize to reproduce
RESIZE_PILLOW = 0
RESIZE_TORCHVISION = 1


class ModelOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("budget", c_int), ("apply_exif", c_int),
                ("legacy_precise", c_int),  # ABI only (g4v.h): 0; the mode is `math`
                ("max_pixels", c_uint64), ("max_dimension", c_int),
                ("max_header_bytes", c_uint64), ("max_file_bytes", c_uint64),
                ("max_config_bytes", c_uint64), ("max_tensor_count", c_uint64),
                # video input (g4v.h "Video"): must mirror the C struct, which init fills whole
                ("max_video_frames", c_uint64), ("max_video_seconds", ctypes.c_double),
                ("read_weights", c_int),
                ("resize", c_int),  # RESIZE_PILLOW / RESIZE_TORCHVISION
                ("metadata_only", c_int),
                ("legacy_int8", c_int),  # ABI only (g4v.h): 0
                ("math", c_int),  # a g4v_math_mode (math_mode_parse)
                ("pack_weights", c_int)]  # 1: BF16 weights packed at load (Model's default)


class DtypeCount(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 8), ("tensors", ctypes.c_int64), ("bytes", c_uint64)]


INFO_MAX_LAYERS = 128  # G4V_INFO_MAX_LAYERS


class ModelInfo(ctypes.Structure):
    _fields_ = [("variant", ctypes.c_char * 32),
                ("hidden_size", c_int), ("intermediate_size", c_int), ("num_layers", c_int),
                ("num_heads", c_int), ("num_kv_heads", c_int), ("head_dim", c_int),
                ("patch_size", c_int), ("pooling_kernel_size", c_int),
                ("position_embedding_size", c_int),
                ("dim", c_int), ("default_budget", c_int), ("config_output_length", c_int),
                ("use_clipped_linears", c_int), ("standardize", c_int),
                ("legacy_precise", c_int),  # ABI only: math == PRECISE
                ("apply_exif", c_int),
                ("image_token_id", c_int32), ("boi_token_id", c_int32), ("eoi_token_id", c_int32),
                ("video_token_id", c_int32),
                ("param_count", ctypes.c_int64), ("weight_bytes", c_uint64),
                ("naming", ctypes.c_char * 8), ("source", ctypes.c_char * 512),
                ("max_pixels", c_uint64), ("max_dimension", c_int),
                ("max_file_bytes", c_uint64), ("max_header_bytes", c_uint64),
                ("max_config_bytes", c_uint64), ("max_tensor_count", c_uint64),
                ("kind", ctypes.c_char * 16),  # "tower" or "unified" (the 12B embedder)
                ("max_video_frames", c_uint64), ("max_video_seconds", ctypes.c_double),
                ("kernels", ctypes.c_char * 512),
                ("resize", c_int),
                ("rope_theta", c_double), ("rms_norm_eps", c_double),
                ("layer_norm_eps", c_double), ("numerics_version", c_int),
                ("n_dtypes", c_int), ("dtypes", DtypeCount * 4),
                ("legacy_int8", c_int),  # ABI only: 1 INT8, 2 INT8_BLOCKS
                ("math", c_int),  # a g4v_math_mode (math_mode_name)
                ("kernel_rule", ctypes.c_char * 256),  # the BF16 kernel rule (NUMERICS.md §6.6)
                ("amx_usable", c_int), ("amx", ctypes.c_char * 256),  # AMX and why not
                ("amx_self_test", ctypes.c_char * 256),  # its start-up self-test's verdict
                # sharp attention (NUMERICS.md §6.5): per layer, and which run as PRECISE
                ("sharp_threshold", c_double), ("n_layers_listed", c_int),
                ("n_sharp", c_int), ("n_precise", c_int),
                ("layer_sharpness", ctypes.c_float * INFO_MAX_LAYERS),
                ("layer_precise", ctypes.c_ubyte * INFO_MAX_LAYERS),
                ("weights_in_place", c_int)]  # 1: read in the checkpoint; 0: packed at load


class CtxOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("threads", c_int)]


class EncodeOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("budget", c_int), ("apply_exif", c_int),
                ("bf16", c_int), ("resize", c_int)]


class Result(ctypes.Structure):
    _fields_ = [("n_tokens", c_int), ("dim", c_int), ("grid_w", c_int), ("grid_h", c_int),
                ("src_width", c_int), ("src_height", c_int), ("width", c_int), ("height", c_int),
                ("budget", c_int), ("features", POINTER(c_float)),
                ("features_bf16", POINTER(c_uint16)),
                ("boi_token_id", c_int32), ("image_token_id", c_int32), ("eoi_token_id", c_int32),
                ("seconds", c_double)]


class PreprocessOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("budget", c_int), ("apply_exif", c_int),
                ("resize", c_int), ("pillow_version", c_int), ("max_pixels", ctypes.c_uint64),
                ("max_dimension", c_int)]


class Pixels(ctypes.Structure):
    _fields_ = [("width", c_int), ("height", c_int), ("rgb", POINTER(ctypes.c_uint8)),
                ("n_patches", c_int), ("patches", POINTER(c_float)),
                ("positions", POINTER(c_int32)), ("format", ctypes.c_char * 16),
                ("src_width", c_int), ("src_height", c_int), ("orientation", c_int),
                ("oriented_width", c_int), ("oriented_height", c_int), ("streamed", c_int)]


class RgbImage(ctypes.Structure):
    _fields_ = [("rgb", c_void_p), ("width", c_int), ("height", c_int), ("stride", c_size_t)]


class BatchItem(ctypes.Structure):
    _fields_ = [("path", c_char_p), ("bytes", c_void_p), ("size", c_size_t), ("rgb", c_void_p),
                ("width", c_int), ("height", c_int), ("stride", c_size_t),
                ("opts", POINTER(EncodeOptions)), ("status", c_int), ("cache_hit", c_int),
                ("error", c_char_p), ("result", Result)]


class VideoOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("budget", c_int), ("num_frames", c_int),
                ("bf16", c_int), ("resize", c_int)]


class VideoFrame(ctypes.Structure):
    _fields_ = [("index", ctypes.c_int64), ("timestamp", c_double), ("mmss", ctypes.c_char * 16),
                ("n_tokens", c_int), ("grid_w", c_int), ("grid_h", c_int),
                ("first_row", c_size_t)]


class VideoResult(ctypes.Structure):
    _fields_ = [("n_frames", c_int), ("n_tokens", c_int), ("dim", c_int),
                ("total_frames", ctypes.c_int64), ("fps", c_double), ("duration", c_double),
                ("src_width", c_int), ("src_height", c_int), ("width", c_int), ("height", c_int),
                ("budget", c_int), ("frames", POINTER(VideoFrame)),
                ("features", POINTER(c_float)), ("features_bf16", POINTER(c_uint16)),
                ("boi_token_id", c_int32), ("video_token_id", c_int32), ("eoi_token_id", c_int32),
                ("codec", ctypes.c_char * 32), ("container", ctypes.c_char * 32),
                ("seconds", c_double)]


_PROTOTYPES = {
    # name: (restype, argtypes)
    "g4v_status_name": (c_char_p, [c_int]),
    "g4v_version": (c_char_p, []),
    "g4v_budget_valid": (c_int, [c_int]),
    "g4v_budget_check": (c_int, [c_int, c_char_p, c_size_t]),
    "g4v_math_mode_name": (c_char_p, [c_int]),
    "g4v_math_mode_parse": (c_int, [c_char_p, POINTER(c_int), c_char_p, c_size_t]),
    "g4v_model_options_init_sized": (None, [POINTER(ModelOptions), c_size_t]),
    "g4v_model_load": (c_int, [c_char_p, POINTER(ModelOptions), POINTER(c_void_p), c_char_p,
                               c_size_t]),
    "g4v_model_free": (None, [c_void_p]),
    "g4v_model_get_info_sized": (c_int, [c_void_p, POINTER(ModelInfo), c_size_t, c_char_p,
                                         c_size_t]),
    "g4v_model_fingerprint": (c_int, [c_void_p, c_char_p, c_size_t, c_char_p, c_size_t]),
    "g4v_model_plan": (c_int, [c_void_p, c_int, c_int, c_int, POINTER(c_int), POINTER(c_int),
                               POINTER(c_int), c_char_p, c_size_t]),
    "g4v_ctx_options_init_sized": (None, [POINTER(CtxOptions), c_size_t]),
    "g4v_ctx_create": (c_int, [c_void_p, POINTER(CtxOptions), POINTER(c_void_p), c_char_p,
                               c_size_t]),
    "g4v_ctx_free": (None, [c_void_p]),
    "g4v_ctx_error": (c_char_p, [c_void_p]),
    "g4v_encode_options_init_sized": (None, [POINTER(EncodeOptions), c_size_t]),
    "g4v_encode_file": (c_int, [c_void_p, c_char_p, POINTER(EncodeOptions), POINTER(Result)]),
    "g4v_encode_memory": (c_int, [c_void_p, c_void_p, c_size_t, POINTER(EncodeOptions),
                                  POINTER(Result)]),
    "g4v_encode_rgb": (c_int, [c_void_p, c_void_p, c_int, c_int, c_size_t,
                               POINTER(EncodeOptions), POINTER(Result)]),
    "g4v_video_options_init_sized": (None, [POINTER(VideoOptions), c_size_t]),
    "g4v_video_cap_allocations": (None, [c_size_t]),
    "g4v_encode_video_file": (c_int, [c_void_p, c_char_p, POINTER(VideoOptions),
                                      POINTER(VideoResult)]),
    "g4v_encode_video_memory": (c_int, [c_void_p, c_void_p, c_size_t, POINTER(VideoOptions),
                                        POINTER(VideoResult)]),
    "g4v_video_prompt_text": (c_size_t, [POINTER(VideoResult), c_char_p, c_size_t]),
    "g4v_video_prompt_tokens": (c_size_t, [POINTER(VideoResult), c_int, POINTER(c_int32),
                                           c_size_t]),
    "g4v_encode_rgb_batch": (c_int, [c_void_p, POINTER(RgbImage), c_int, POINTER(EncodeOptions),
                                     POINTER(Result)]),
    "g4v_encode_batch_sized": (c_int, [c_void_p, POINTER(BatchItem), c_int, c_size_t]),
    "g4v_preprocess_options_init_sized": (None, [POINTER(PreprocessOptions), c_size_t]),
    "g4v_preprocess_file": (c_int, [c_char_p, POINTER(PreprocessOptions),
                                    POINTER(POINTER(Pixels)), c_char_p, c_size_t]),
    "g4v_pixels_free": (None, [POINTER(Pixels)]),
    "g4v_budgets": (c_int, [POINTER(c_int), c_int]),
    "g4v_default_budget": (c_int, []),
    "g4v_default_video_budget": (c_int, []),
    "g4v_video_alloc_cap": (c_size_t, []),
}


def _inline_helpers(lib):
    """g4v.h's static inline helpers, which a shared library cannot export: each passes the
    sizeof of the struct as this module declares it to the exported *_sized function."""
    sz = ctypes.sizeof
    return {
        "g4v_model_options_init": lambda p: lib.g4v_model_options_init_sized(p, sz(ModelOptions)),
        "g4v_ctx_options_init": lambda p: lib.g4v_ctx_options_init_sized(p, sz(CtxOptions)),
        "g4v_encode_options_init":
            lambda p: lib.g4v_encode_options_init_sized(p, sz(EncodeOptions)),
        "g4v_video_options_init": lambda p: lib.g4v_video_options_init_sized(p, sz(VideoOptions)),
        "g4v_preprocess_options_init":
            lambda p: lib.g4v_preprocess_options_init_sized(p, sz(PreprocessOptions)),
        "g4v_model_get_info":
            lambda m, info, errbuf, n: lib.g4v_model_get_info_sized(m, info, sz(ModelInfo),
                                                                    errbuf, n),
    }


class LibraryNotFoundError(G4VError):
    """libg4v could not be loaded (raised on first use, not at import). .tried lists each
    place looked at and why it did not work."""

    def __init__(self, message, tried=()):
        super().__init__(ERR_IO, message, "G4V_ERR_IO")
        self.tried = list(tried)

    def __reduce__(self):
        return (LibraryNotFoundError, (self.message, self.tried))


def _candidates():
    """[(path, where it comes from)] in the order tried."""
    env = os.environ.get("G4V_LIBRARY")
    if env:
        return [(env, "$G4V_LIBRARY")]  # explicit: no silent fallback to another copy
    out = []
    try:
        res = importlib.resources.files(__package__).joinpath("libg4v.so")
        out.append((os.fspath(res), "the package (wheel)"))
    except (TypeError, ValueError):  # not a file system package (zip): nothing bundled
        pass
    try:
        from . import _paths  # written by `cmake --install`
        here = os.path.dirname(os.path.abspath(__file__))
        out.append((os.path.normpath(os.path.join(here, _paths.LIBDIR_FROM_PACKAGE,
                                                  "libg4v.so.0")), "the install prefix"))
    except ImportError:
        pass
    return out


def _load():
    tried = []
    for path, origin in _candidates():
        if not os.path.exists(path):
            tried.append(f"{path} ({origin}: not found)")
            continue
        try:
            lib = ctypes.CDLL(path)  # CDLL, not PyDLL: calls release the GIL
        except OSError as e:
            tried.append(f"{path} ({origin}: {e})")
            continue
        missing = [name for name in _PROTOTYPES if not hasattr(lib, name)]
        if missing:
            tried.append(f"{path} ({origin}: an older libg4v without {', '.join(missing[:3])})")
            continue
        for name, (res, args) in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        for name, fn in _inline_helpers(lib).items():
            setattr(lib, name, fn)
        lib.g4v_path = path
        return lib
    raise LibraryNotFoundError(
        "gemma4_vision: cannot load libg4v: tried " + ("; ".join(tried) or "nothing") +
        ". Install the package with its library (`pip install .` in the repository, or a "
        "wheel from `python3 -m build`), or install libg4v and the package with `make install`"
        " / `cmake --install build`, or set G4V_LIBRARY=/path/to/libg4v.so.", tried)


class _LazyLib:
    """Stands for the loaded CDLL: the first attribute looked up loads libg4v (once)."""

    _lock = threading.Lock()
    _real = None

    def __getattr__(self, name):
        real = _LazyLib._real
        if real is None:
            with _LazyLib._lock:
                if _LazyLib._real is None:
                    _LazyLib._real = _load()
                real = _LazyLib._real
        return getattr(real, name)


lib = _LazyLib()


def status_name(status: int) -> str:
    """The C constant's name for a status number ("G4V_ERR_IMAGE"), from the library."""
    return lib.g4v_status_name(int(status)).decode()


_errors._set_status_namer(status_name)


_constants = {}


def budgets():
    """G4V_BUDGETS, read from the library (g4v_budgets)."""
    if "budgets" not in _constants:
        n = lib.g4v_budgets(None, 0)
        arr = (c_int * n)()
        lib.g4v_budgets(arr, n)
        _constants["budgets"] = tuple(arr)
    return _constants["budgets"]


def math_mode_parse(name):
    """The g4v_math_mode named name ("fast", "precise", "int8", "int8-blocks";
    g4v_math_mode_parse); ValueError with the library's message for any other str."""
    if not isinstance(name, str):
        raise TypeError(f"math must be a str, not {type(name).__name__}")
    mode, msg = c_int(), ctypes.create_string_buffer(256)
    if lib.g4v_math_mode_parse(name.encode(errors="replace"), ctypes.byref(mode), msg, len(msg)):
        raise ValueError(msg.value.decode(errors="replace"))
    return mode.value


def math_mode_name(mode):
    """The name of a g4v_math_mode (g4v_math_mode_name)."""
    return lib.g4v_math_mode_name(mode).decode()


def math_modes():
    """Every math mode's name, in g4v_math_mode order, read from the library."""
    if "math_modes" not in _constants:
        names = []
        while math_mode_name(len(names)) != "unknown":
            names.append(math_mode_name(len(names)))
        _constants["math_modes"] = tuple(names)
    return _constants["math_modes"]


def default_budget():
    """G4V_DEFAULT_BUDGET, read from the library."""
    return lib.g4v_default_budget()


def default_video_budget():
    """G4V_DEFAULT_VIDEO_BUDGET, read from the library."""
    return lib.g4v_default_video_budget()


def video_alloc_cap():
    """G4V_VIDEO_ALLOC_CAP, read from the library."""
    return lib.g4v_video_alloc_cap()
