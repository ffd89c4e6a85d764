"""model.py - Model, Result and G4VError: libg4v's encode API for Python.

A Model owns one g4v_model (loaded once, immutable, shared) and a pool of g4v_ctx. An encode call
takes an idle context from the pool, or creates one when every context is busy, runs the C call
(ctypes releases the GIL for the whole foreign call, so other Python threads run and encode at
the same time), copies the features into new numpy arrays and puts the context back. The pool
therefore holds as many contexts as there were concurrent calls at the peak, each with its own
thread pool (`threads` workers) and workspace; they are freed by close(). Because results are
copied out, a Result never depends on a context that another call is reusing.

Errors: a wrong argument type raises TypeError, a bad argument value ValueError (both before any
library call); what the library reports (a corrupt image, a missing file, a limit) raises
G4VError with its status and message. The constants (BUDGETS, DEFAULT_BUDGET) are the library's
own (g4v_budgets, g4v_default_budget), read on first use.
"""
from __future__ import annotations

import operator
import os
import queue
import sys
import threading
from collections.abc import Sequence
import ctypes
from ctypes import byref, c_int, c_void_p, create_string_buffer, memmove
from typing import Any, Union

import numpy as np

from . import _lib
from ._errors import G4VError
from ._lib import lib, status_name

__all__ = ["Model", "Result", "VideoResult", "ModelInfo", "G4VError", "status_name", "BUDGETS",
           "DEFAULT_BUDGET", "MATH_MODES", "ImageInput"]

# What encode() takes: a path, the bytes of an image file, RGB pixels, or a PIL image.
ImageInput = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, np.ndarray, Any]


def __getattr__(name: str) -> Any:
    """BUDGETS, DEFAULT_BUDGET and MATH_MODES, read from the library on first use (PEP 562)."""
    if name == "BUDGETS":
        return _lib.budgets()
    if name == "MATH_MODES":
        return _lib.math_modes()
    if name == "DEFAULT_BUDGET":
        return _lib.default_budget()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _math_name(math: str | None = None, precise: bool = False, int8: bool | str = False) -> str:
    """The math mode's name ("fast", "precise", "int8" or "int8-blocks") that math= and the
    older keywords name together: precise=True is math="precise", int8=True math="int8",
    int8="blocks" math="int8-blocks". ValueError for an unknown name or two different modes,
    TypeError for a math that is not a str."""
    named = []  # (what the caller wrote, the mode's name)
    if math is not None:
        _lib.math_mode_parse(math)  # TypeError / ValueError with the library's message
        named.append((f"math={math!r}", math))
    if precise:
        named.append(("precise=True", "precise"))
    if isinstance(int8, str):
        if int8 != "blocks":
            raise ValueError(f"int8 must be True, False or 'blocks', got {int8!r}")
        named.append(("int8='blocks'", "int8-blocks"))
    elif int8:
        named.append(("int8=True", "int8"))
    for what, name in named[1:]:
        if name != named[0][1]:
            raise ValueError(f"{named[0][0]} and {what} are two math modes: choose one")
    return named[0][1] if named else "fast"


def _int_arg(v: Any, what: str) -> int:
    """v as an int (any integer type, numpy's too; not bool, float or str): TypeError else."""
    if isinstance(v, bool):
        raise TypeError(f"{what} must be an integer, not bool")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {type(v).__name__}") from None


class Result:
    """One encoded image.

    features        float32 [N, T]: row k is the input embedding of the k-th image token
    features_bf16   uint16 [N, T] bf16 bit patterns (round to nearest even), or None unless the
                    encode asked for bf16=True
    n_tokens, dim   N and T
    grid            (grid_w, grid_h), N = grid_w * grid_h, rows row-major over it
    original_size   (width, height) as decoded (after EXIF orientation)
    target_size     (width, height) it was resized to (multiples of 48)
    budget          the soft-token budget used
    prompt_ids      int32 [N + 2]: boi, image x N, eoi (the prompt span)
    boi_token_id, image_token_id, eoi_token_id
    seconds         wall time of the C call (decode + resize + encode)
    """

    __slots__ = ("features", "features_bf16", "n_tokens", "dim", "grid", "original_size",
                 "target_size", "budget", "boi_token_id", "image_token_id", "eoi_token_id",
                 "seconds")
    features: np.ndarray
    features_bf16: np.ndarray | None
    n_tokens: int
    dim: int
    grid: tuple[int, int]
    original_size: tuple[int, int]
    target_size: tuple[int, int]
    budget: int
    boi_token_id: int
    image_token_id: int
    eoi_token_id: int
    seconds: float

    @property
    def prompt_ids(self) -> np.ndarray:
        ids = np.full(self.n_tokens + 2, self.image_token_id, dtype=np.int32)
        ids[0], ids[-1] = self.boi_token_id, self.eoi_token_id
        return ids

    @property
    def prompt(self) -> str:
        """The prompt span as text: <|image>, N x <|image|>, <image|>."""
        return "<|image>" + "<|image|>" * self.n_tokens + "<image|>"

    def __repr__(self) -> str:
        return (f"Result(n_tokens={self.n_tokens}, dim={self.dim}, grid={self.grid}, "
                f"original_size={self.original_size}, target_size={self.target_size}, "
                f"budget={self.budget})")


class ModelInfo:
    """What `g4v info` shows (g4v_model_info): every field as an attribute; as_dict(). math is
    the mode's name ("fast", "precise", "int8", "int8-blocks"); precise (0/1) and int8 (0, 1,
    2 for int8-blocks) are the same mode in the form of earlier versions. layer_sharpness and
    layer_precise are lists, one entry per layer (docs/NUMERICS.md §6.5: a layer whose
    sharpness is above sharp_threshold runs as PRECISE in the fast and int8 modes)."""

    variant: str
    kind: str
    dim: int
    num_layers: int

    def __init__(self, c: _lib.ModelInfo):
        for field in _lib.ModelInfo._fields_:
            name = field[0]
            v = getattr(c, name)
            if name.startswith("legacy_"):  # the ABI-only slots: under their former names
                name = name[len("legacy_"):]
            elif name == "math":
                v = _lib.math_mode_name(v)
            elif name == "dtypes":  # {"BF16": {"tensors": n, "bytes": b}, ...}
                v = {d.name.decode(): {"tensors": d.tensors, "bytes": d.bytes}
                     for d in v[:c.n_dtypes]}
            elif name == "layer_sharpness":  # per layer (NUMERICS.md §6.5)
                v = [float(x) for x in v[:c.n_layers_listed]]
            elif name == "layer_precise":  # per layer: runs as PRECISE
                v = [bool(x) for x in v[:c.n_layers_listed]]
            setattr(self, name, v.decode() if isinstance(v, bytes) else v)

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))

    def __repr__(self) -> str:
        return f"ModelInfo(variant={self.variant!r}, dim={self.dim}, layers={self.num_layers})"


class VideoResult:
    """One encoded video (Model.encode_video): the rows of every sampled frame, in order."""

    features: np.ndarray
    features_bf16: np.ndarray | None
    n_tokens: int
    dim: int
    n_frames: int
    frames: list[dict[str, Any]]
    total_frames: int
    fps: float
    duration: float
    original_size: tuple[int, int]
    target_size: tuple[int, int]
    budget: int
    seconds: float
    codec: str
    container: str
    prompt: str
    prompt_ids: np.ndarray

    @classmethod
    def _from_c(cls, r: _lib.VideoResult, bf16: bool) -> VideoResult:
        v = cls()
        n, t = r.n_tokens, r.dim
        v.features = np.empty((n, t), dtype=np.float32)
        memmove(v.features.ctypes.data, r.features, n * t * 4)
        v.features_bf16 = None
        if bf16:
            v.features_bf16 = np.empty((n, t), dtype=np.uint16)
            memmove(v.features_bf16.ctypes.data, r.features_bf16, n * t * 2)
        v.n_tokens, v.dim, v.n_frames = n, t, r.n_frames
        v.frames = [{"index": f.index, "timestamp": f.timestamp, "mmss": f.mmss.decode(),
                     "tokens": f.n_tokens, "grid": (f.grid_w, f.grid_h),
                     "first_row": f.first_row} for f in r.frames[:r.n_frames]]
        v.total_frames, v.fps, v.duration = r.total_frames, r.fps, r.duration
        v.original_size, v.target_size = (r.src_width, r.src_height), (r.width, r.height)
        v.budget, v.seconds = r.budget, r.seconds
        v.codec, v.container = r.codec.decode(), r.container.decode()
        need = lib.g4v_video_prompt_text(byref(r), None, 0)
        buf = create_string_buffer(need + 1)
        lib.g4v_video_prompt_text(byref(r), buf, need + 1)
        v.prompt = buf.value.decode()
        count = lib.g4v_video_prompt_tokens(byref(r), -1, None, 0)
        ids = np.empty(count, dtype=np.int32)
        lib.g4v_video_prompt_tokens(byref(r), -1, ids.ctypes.data_as(_lib.POINTER(_lib.c_int32)),
                                    count)
        v.prompt_ids = ids  # each frame's boi, video x n, eoi, frame after frame
        return v

    def __repr__(self) -> str:
        return (f"VideoResult(frames={self.n_frames}, rows={self.n_tokens}, dim={self.dim}, "
                f"fps={self.fps:g}, size={self.target_size})")


def _budget(b: int | None, what: str) -> int:
    """0 for None (the model's default), else b when it is one of the library's budgets;
    TypeError / ValueError otherwise (with the library's message)."""
    if b is None:
        return 0
    b = _int_arg(b, what)
    if b == 0:
        return 0
    if not lib.g4v_budget_valid(b):
        buf = create_string_buffer(256)
        lib.g4v_budget_check(b, buf, len(buf))
        raise ValueError(f"{what}: {buf.value.decode()}")
    return b


def _rgb_array(a: np.ndarray, what: str) -> np.ndarray:
    """a as a uint8 [H, W, 3] array whose pixels are 3 bytes apart and rows evenly spaced."""
    if a.dtype != np.uint8:
        raise TypeError(f"{what}: expected a uint8 [H, W, 3] array, got {a.dtype} "
                        f"{list(a.shape)}")
    if a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"{what}: expected a uint8 [H, W, 3] array, got {a.dtype} "
                         f"{list(a.shape)}")
    if a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"{what}: empty image {list(a.shape)}")
    if a.strides[2] != 1 or a.strides[1] != 3 or a.strides[0] < 3 * a.shape[1]:
        a = np.ascontiguousarray(a)
    return a


def _npy_rgb(path: str) -> np.ndarray | None:
    """The uint8 [H, W, 3] pixels of a .npy file, as `g4v encode` takes them, or None when the
    file is not a .npy at all (then it is decoded by content, like any image file)."""
    try:
        with open(path, "rb") as f:
            if f.read(6) != b"\x93NUMPY":
                return None
    except OSError:
        return None  # encode_file reports the unreadable file with its own message
    try:
        a = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError):
        a = None
    # the CLI's rule and message (common/npy.c)
    if (not isinstance(a, np.ndarray) or a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3
            or not a.flags.c_contiguous or a.shape[0] < 1 or a.shape[1] < 1):
        raise G4VError(_lib.ERR_IMAGE, f"{path}: a .npy image must be C-ordered uint8 "
                                       "[H, W, 3] (and complete)")
    return np.asarray(a)


_RESIZES = {"pillow": _lib.RESIZE_PILLOW, "torchvision": _lib.RESIZE_TORCHVISION}


def _resize(name: str) -> int:
    """"pillow" / "torchvision" -> G4V_RESIZE_*; TypeError / ValueError otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"resize must be 'pillow' or 'torchvision', not {type(name).__name__}")
    if name not in _RESIZES:
        raise ValueError(f"resize must be 'pillow' or 'torchvision', got {name!r}")
    return _RESIZES[name]


# Handles of Models collected by the garbage collector go here, and a daemon thread frees them:
# freeing a context joins its worker threads, which __del__ must never wait for.
_reap_queue: queue.SimpleQueue = queue.SimpleQueue()  # put() is reentrant: safe in __del__
_reaper_started = False
_reaper_lock = threading.Lock()


def _reaper() -> None:
    while True:
        ctxs, model = _reap_queue.get()
        try:
            for ctx in ctxs:
                lib.g4v_ctx_free(ctx)
            if model is not None:
                lib.g4v_model_free(model)
        except Exception:  # noqa: BLE001 - interpreter shutdown; the OS frees the memory
            pass


def _start_reaper() -> None:
    """Starts the reaper thread once (from Model.__init__: starting a thread waits for it to
    run, which __del__ must not do)."""
    global _reaper_started
    if _reaper_started:
        return
    with _reaper_lock:
        if not _reaper_started:
            threading.Thread(target=_reaper, name="gemma4_vision-reaper", daemon=True).start()
            _reaper_started = True


def _hub_model(name: str) -> str:
    """An hf:ORG/NAME[@REV] model name into its folder through the g4v tool (docs/GUIDE.md
    "Models by name"): on disk first (the Hugging Face cache, g4v's vision-only copies), else its
    vision tower fetched from the Hub; HF_HUB_OFFLINE, HF_TOKEN and HF_ENDPOINT as the tool reads
    them. The tool is $G4V_BIN, else `g4v` on PATH."""
    import json
    import shutil
    import subprocess
    tool = os.environ.get("G4V_BIN") or shutil.which("g4v")
    if not tool:
        raise G4VError(_lib.ERR_MODEL, f"{name}: a Hub model name needs the g4v tool (on PATH, "
                       "or G4V_BIN=/path/to/g4v) to fetch it; or give the model's folder")
    r = subprocess.run([tool, "info", "--model", name, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        msg = r.stderr.strip().splitlines()
        raise G4VError(_lib.ERR_MODEL, msg[-1] if msg else f"{name}: g4v info failed")
    return json.loads(r.stdout)["model"]


class Model:
    """A Gemma 4 vision tower loaded from a checkpoint directory.

    Model(path, threads=0, precise=False, budget=None, exif=True, resize="pillow", int8=False,
          math=None, pack_weights=True, **limits)
      threads   worker threads per encode call (0: one per CPU)
      math      the math mode (MATH_MODES; None: "fast", bf16 GEMM inputs, ~3e-3 relative
                error): "precise", f32 GEMM inputs (~1e-6), slower; "int8", int8 x int8 linear
                layers, ~1.3-1.5x faster than fast at 256 tokens, ~2e-2 (docs/NUMERICS.md §12);
                "int8-blocks", int8 with scales per block of 32 inputs (llama.cpp's Q8_0; a
                Q8_0 GGUF's weights used as stored), more accurate than int8, slower (§12.4)
      precise   True: math="precise"; int8 True: math="int8", "blocks": math="int8-blocks"
                (the older spellings; naming two different modes is a ValueError)
      budget    default soft-token budget, one of BUDGETS (None: the checkpoint's own, from its
                processor_config.json / config.json, else DEFAULT_BUDGET, 280)
      exif      apply the EXIF orientation of image files (as transformers does)
      resize    "pillow" (default): Pillow's BICUBIC, as transformers' Gemma4ImageProcessorPil;
                "torchvision": torch's antialiased bicubic, as its torchvision backend
                (Gemma4ImageProcessor, transformers' default when torchvision is installed, and
                the 12B's Gemma4UnifiedImageProcessor); docs/PREPROCESSING.md §6.6
      pack_weights  True (default): the BF16 weights are packed at load into the GEMM kernels'
                panels (a model kept for many encodes: faster warm encodes, the same bits,
                their size in memory); False: read where they lie in the
                checkpoint's mapped pages (less memory, faster load). info.weights_in_place says
                which (docs/GUIDE.md "Packed weights")
      limits    any max_* field of g4v_model_options (max_pixels, max_dimension,
                max_file_bytes, max_header_bytes, max_config_bytes, max_tensor_count)

    Raises G4VError (status G4V_ERR_IO, G4V_ERR_MODEL, ...) when the checkpoint cannot be loaded,
    TypeError / ValueError for a bad argument.
    Safe to share between threads; use as a context manager or call close() to free it early.
    """

    path: str
    info: ModelInfo

    def __init__(self, path: str | os.PathLike[str], threads: int = 0, precise: bool = False,
                 budget: int | None = None, exif: bool = True, resize: str = "pillow",
                 int8: bool | str = False, math: str | None = None, pack_weights: bool = True,
                 **limits: int | float) -> None:
        self._model = None
        self._idle: list[c_void_p] = []
        self._busy = 0
        self._cond = threading.Condition()
        _start_reaper()
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}")
        self._threads = _int_arg(threads, "threads")
        if self._threads < 0:
            raise ValueError(f"threads must be >= 0, got {threads}")
        budget = _budget(budget, "budget")
        resize_id = _resize(resize)
        opts = _lib.ModelOptions()
        lib.g4v_model_options_init(byref(opts))
        if budget:
            opts.budget = budget
        opts.apply_exif = 1 if exif else 0
        opts.math = _lib.math_mode_parse(_math_name(math, precise, int8))
        opts.resize = resize_id
        if not isinstance(pack_weights, bool):
            raise TypeError(f"pack_weights must be a bool, not {type(pack_weights).__name__}")
        opts.pack_weights = 1 if pack_weights else 0
        for k, v in limits.items():
            if not k.startswith("max_") or not hasattr(opts, k):
                raise TypeError(f"Model() got an unexpected keyword argument {k!r}")
            if k == "max_video_seconds":
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise TypeError(f"{k} must be a number, not {type(v).__name__}")
            else:
                v = _int_arg(v, k)
            if v < 0:
                raise ValueError(f"{k} must be >= 0, got {v}")
            setattr(opts, k, v)
        self.path = os.fspath(path)
        if isinstance(self.path, str) and self.path.startswith("hf:") and \
                not os.path.exists(self.path):
            self.path = _hub_model(self.path)
        msg = create_string_buffer(1024)
        handle = c_void_p()
        st = lib.g4v_model_load(os.fsencode(self.path), byref(opts), byref(handle), msg, len(msg))
        if st:
            raise G4VError(st, msg.value.decode(errors="replace"))
        self._model = handle
        info = _lib.ModelInfo()
        st = lib.g4v_model_get_info(self._model, byref(info), msg, len(msg))
        if st:
            self.close()
            raise G4VError(st, msg.value.decode(errors="replace"))
        self.info = ModelInfo(info)

    # -- contexts -------------------------------------------------------------------------------
    def _acquire(self) -> c_void_p:
        with self._cond:
            if self._model is None:
                raise ValueError("the model is closed")
            self._busy += 1
            if self._idle:
                return self._idle.pop()
        ctx = c_void_p()
        copts = _lib.CtxOptions()
        lib.g4v_ctx_options_init(byref(copts))
        copts.threads = self._threads
        msg = create_string_buffer(1024)
        st = lib.g4v_ctx_create(self._model, byref(copts), byref(ctx), msg, len(msg))
        if st:
            self._release(None)
            raise G4VError(st, msg.value.decode(errors="replace"))
        return ctx

    def _release(self, ctx: c_void_p | None) -> None:
        with self._cond:
            if ctx is not None:
                self._idle.append(ctx)
            self._busy -= 1
            self._cond.notify_all()

    @property
    def contexts(self) -> int:
        """How many g4v_ctx the pool holds (the peak number of concurrent encode calls)."""
        with self._cond:
            return len(self._idle) + self._busy

    def close(self) -> None:
        """Frees the contexts and the model; waits for encode calls in progress. Idempotent."""
        with self._cond:
            while self._busy:
                self._cond.wait()
            idle, self._idle = self._idle, []
            model, self._model = self._model, None
        for ctx in idle:
            lib.g4v_ctx_free(ctx)
        if model is not None:
            lib.g4v_model_free(model)

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # Never blocks: no waiting for the lock or for calls (there can be none: a call holds a
        # reference to the model), and the handles are freed by the reaper thread, since
        # freeing a context joins its worker threads.
        if sys.is_finalizing():
            return  # interpreter exit: the process's memory goes with it
        cond = getattr(self, "_cond", None)
        if cond is None or not cond.acquire(blocking=False):
            return  # __init__ failed early, or the lock is held: leave it (leak, not hang)
        try:
            if self._busy:
                return
            idle, self._idle = self._idle, []
            model, self._model = self._model, None
        finally:
            cond.release()
        if idle or model is not None:
            _reap_queue.put((idle, model))  # SimpleQueue.put: reentrant, never blocks

    @property
    def fingerprint(self) -> str:
        """The model's identity (g4v_model_fingerprint): 64 hex digits of SHA-256 over the vision
        configuration, the numerics mode and version, and every vision tensor used; the same for
        any file layout of one checkpoint. Computed on first use (~0.5 s for e4b), then kept."""
        if self._model is None:
            raise ValueError("the model is closed")
        buf, msg = create_string_buffer(65), create_string_buffer(1024)
        st = lib.g4v_model_fingerprint(self._model, buf, len(buf), msg, len(msg))
        if st:
            raise G4VError(st, "cannot compute the model fingerprint: " +
                           msg.value.decode(errors="replace"))
        return buf.value.decode()

    # -- encoding -------------------------------------------------------------------------------
    def plan(self, width: int, height: int, tokens: int | None = None) -> tuple[int, int, int]:
        """(target_width, target_height, n_tokens) for a width x height image, encoding nothing."""
        width, height = _int_arg(width, "width"), _int_arg(height, "height")
        if width < 1 or height < 1:
            raise ValueError(f"width and height must be >= 1, got {width}x{height}")
        budget = _budget(tokens, "tokens")
        if self._model is None:
            raise ValueError("the model is closed")
        tw, th, n, msg = c_int(), c_int(), c_int(), create_string_buffer(512)
        st = lib.g4v_model_plan(self._model, width, height, budget, byref(tw), byref(th),
                                byref(n), msg, len(msg))
        if st:
            raise G4VError(st, f"cannot plan a {width}x{height} image at budget {tokens}: " +
                           msg.value.decode(errors="replace"))
        return tw.value, th.value, n.value

    def encode(self, image: ImageInput, tokens: int | None = None, bf16: bool = False,
               exif: bool | None = None, resize: str | None = None) -> Result:
        """Encodes one image into soft tokens; returns a Result.

        image   a path (str / os.PathLike; JPEG, PNG, WebP, GIF, BMP, TIFF by content, or a raw
                uint8 [H, W, 3] .npy as `g4v encode` takes it), bytes / bytearray / memoryview (an
                encoded image file in memory), a uint8 [H, W, 3] numpy array (RGB pixels), or a
                PIL image (converted to RGB as transformers does; no EXIF rotation applied)
        tokens  soft-token budget (one of BUDGETS); None: the model's
        bf16    also return features_bf16 (uint16 bf16 bits)
        exif    None: the model's setting; True / False: apply the EXIF orientation or not
                (files and bytes only; arrays and PIL images are taken as they are)
        resize  None: the model's; "pillow" or "torchvision" (see Model)
        Raises G4VError with the library's status and message (G4V_ERR_IMAGE for a corrupt
        image, G4V_ERR_IO for a missing file, G4V_ERR_LIMIT over a limit, ...); TypeError for
        an image of another type or an array of another dtype, ValueError for a bad budget,
        resize or array shape.
        """
        eo = _lib.EncodeOptions()
        lib.g4v_encode_options_init(byref(eo))
        eo.budget = _budget(tokens, "tokens")
        eo.bf16 = 1 if bf16 else 0
        if exif is not None:
            eo.apply_exif = 1 if exif else 0
        if resize is not None:
            eo.resize = _resize(resize)
        kind, arg = self._prepare(image)
        r = _lib.Result()
        ctx = self._acquire()
        try:
            if kind == "file":
                st = lib.g4v_encode_file(ctx, arg, byref(eo), byref(r))
            elif kind == "memory":
                buf = (np.frombuffer(arg, dtype=np.uint8) if len(arg) else
                       np.zeros(1, dtype=np.uint8))
                st = lib.g4v_encode_memory(ctx, buf.ctypes.data, len(arg), byref(eo), byref(r))
            else:
                h, w = arg.shape[:2]
                st = lib.g4v_encode_rgb(ctx, arg.ctypes.data, w, h, arg.strides[0], byref(eo),
                                        byref(r))
            if st:
                raise G4VError(st, lib.g4v_ctx_error(ctx).decode(errors="replace"))
            return self._copy_out(r, bool(bf16))
        finally:
            self._release(ctx)

    def encode_batch(self, images: Sequence[ImageInput], tokens: int | None = None,
                     bf16: bool = False, exif: bool | None = None, resize: str | None = None,
                     errors: str = "raise") -> list[Any]:
        """Encodes several images in one call (g4v_encode_batch); returns a list, in order, of
        Results, each bit for bit what encode() gives on that image alone. The images that need
        the tower go through it together (every GEMM over all of their rows, attention within
        each image), which makes many small images (video frames, thumbnails) faster.

        images  a sequence of anything encode() takes: paths, bytes, uint8 [H, W, 3] arrays,
                PIL images, mixed
        tokens, bf16, exif, resize as for encode(), for every image
        errors  "raise" (default): a G4VError for the first image that failed, naming its index
                (the others were still encoded); "return": that image's place in the list holds
                its G4VError instead of a Result
        """
        if isinstance(images, (str, bytes, bytearray, memoryview, np.ndarray)) or \
                not hasattr(images, "__iter__"):
            raise TypeError("encode_batch: images must be a sequence (of paths, bytes, arrays or "
                            f"PIL images), not {type(images).__name__}")
        if errors not in ("raise", "return"):
            raise ValueError(f'errors must be "raise" or "return", got {errors!r}')
        eo = _lib.EncodeOptions()
        lib.g4v_encode_options_init(byref(eo))
        eo.budget = _budget(tokens, "tokens")
        eo.bf16 = 1 if bf16 else 0
        if exif is not None:
            eo.apply_exif = 1 if exif else 0
        if resize is not None:
            eo.resize = _resize(resize)
        prepared = []
        for i, image in enumerate(images):
            try:
                prepared.append(self._prepare(image))
            except (TypeError, ValueError) as e:
                raise type(e)(f"encode_batch: image {i}: {e}") from None
        if not prepared:
            return []
        n = len(prepared)
        items = (_lib.BatchItem * n)()
        keep = []  # the buffers the entries point into, alive until the call returns
        for it, (kind, arg) in zip(items, prepared):
            it.opts = ctypes.pointer(eo)
            if kind == "file":
                it.path = arg
            elif kind == "memory":
                buf = (np.frombuffer(arg, dtype=np.uint8) if len(arg) else
                       np.zeros(1, dtype=np.uint8))
                keep.append(buf)
                it.bytes, it.size = buf.ctypes.data, len(arg)
            else:
                keep.append(arg)
                it.rgb, it.width, it.height = arg.ctypes.data, arg.shape[1], arg.shape[0]
                it.stride = arg.strides[0]
        ctx = self._acquire()
        try:
            lib.g4v_encode_batch_sized(ctx, items, n, ctypes.sizeof(_lib.BatchItem))
            out: list[Any] = []
            for i, it in enumerate(items):
                if it.status:
                    msg = (it.error or b"").decode(errors="replace")
                    if errors == "raise":
                        raise G4VError(it.status, f"image {i} of the batch: {msg}")
                    out.append(G4VError(it.status, msg))
                else:
                    out.append(self._copy_out(it.result, bool(bf16)))
            return out
        finally:
            self._release(ctx)

    def encode_video(self, video: str | os.PathLike[str] | bytes | bytearray | memoryview,
                     tokens: int | None = None, frames: int | None = None, bf16: bool = False,
                     resize: str | None = None) -> VideoResult:
        """Encodes a video (a path, or bytes of a video file) as Gemma 4 does: `frames` (default
        32) frames sampled evenly, each at the per-frame budget `tokens` (default 70), encoded
        together. Returns a VideoResult: features [rows, T] frame after frame, per-frame index,
        timestamp, "MM:SS" label and token count, the prompt text and ids. docs/VIDEO.md.
        resize: None (the model's), "pillow" or "torchvision", as for encode().
        """
        vo = _lib.VideoOptions()
        lib.g4v_video_options_init(byref(vo))
        vo.budget = 0 if tokens is None else _budget(tokens, "tokens")
        if frames is not None:
            frames = _int_arg(frames, "frames")
            if not 1 <= frames <= 1024:
                raise ValueError(f"frames must be 1..1024, got {frames}")
            vo.num_frames = frames
        vo.bf16 = 1 if bf16 else 0
        if resize is not None:
            vo.resize = _resize(resize)
        if not isinstance(video, (str, os.PathLike, bytes, bytearray, memoryview)):
            raise TypeError(f"video must be a path or bytes, not {type(video).__name__}")
        r = _lib.VideoResult()
        ctx = self._acquire()
        try:
            if isinstance(video, (str, os.PathLike)):
                st = lib.g4v_encode_video_file(ctx, os.fsencode(os.fspath(video)), byref(vo),
                                               byref(r))
            else:
                buf = np.frombuffer(memoryview(video).tobytes() or b"\0", dtype=np.uint8)
                st = lib.g4v_encode_video_memory(ctx, buf.ctypes.data, len(memoryview(video)),
                                                 byref(vo), byref(r))
            if st:
                raise G4VError(st, lib.g4v_ctx_error(ctx).decode(errors="replace"))
            return VideoResult._from_c(r, bool(bf16))
        finally:
            self._release(ctx)

    @staticmethod
    def _prepare(image: Any) -> tuple[str, Any]:
        if isinstance(image, (str, os.PathLike)):
            path = os.fspath(image)
            if path.lower().endswith(".npy"):
                rgb = _npy_rgb(path)
                if rgb is not None:
                    return "rgb", rgb
            return "file", os.fsencode(path)
        if isinstance(image, (bytes, bytearray, memoryview)):
            mv = memoryview(image)
            if not mv.contiguous:
                mv = memoryview(mv.tobytes())
            return "memory", mv.cast("B")
        if isinstance(image, np.ndarray):
            return "rgb", _rgb_array(image, "image array")
        if hasattr(image, "convert") and hasattr(image, "mode") and hasattr(image, "size"):
            img = image if image.mode == "RGB" else image.convert("RGB")
            return "rgb", _rgb_array(np.asarray(img), "PIL image")
        raise TypeError("image must be a path, bytes, a uint8 [H, W, 3] numpy array or a PIL "
                        f"image, not {type(image).__name__}")

    @staticmethod
    def _copy_out(r: _lib.Result, bf16: bool) -> Result:
        n, t = r.n_tokens, r.dim
        res = Result()
        res.features = np.empty((n, t), dtype=np.float32)
        memmove(res.features.ctypes.data, r.features, n * t * 4)
        res.features_bf16 = None
        if bf16:
            res.features_bf16 = np.empty((n, t), dtype=np.uint16)
            memmove(res.features_bf16.ctypes.data, r.features_bf16, n * t * 2)
        res.n_tokens, res.dim = n, t
        res.grid = (r.grid_w, r.grid_h)
        res.original_size = (r.src_width, r.src_height)
        res.target_size = (r.width, r.height)
        res.budget = r.budget
        res.boi_token_id, res.image_token_id = r.boi_token_id, r.image_token_id
        res.eoi_token_id = r.eoi_token_id
        res.seconds = r.seconds
        return res
