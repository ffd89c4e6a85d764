"""model.py - Model, Result and G4VError: libg4v's encode API for Python.

A Model owns one g4v_model (loaded once, immutable, shared) and a pool of g4v_ctx. An encode call
takes an idle context from the pool, or creates one when every context is busy, runs the C call
(ctypes releases the GIL for the whole foreign call, so other Python threads run and encode at
the same time), copies the features into new numpy arrays and puts the context back. The pool
therefore holds as many contexts as there were concurrent calls at the peak, each with its own
thread pool (`threads` workers) and workspace; they are freed by close(). Because results are
copied out, a Result never depends on a context that another call is reusing.
"""
import os
import threading
from ctypes import byref, c_int, c_void_p, create_string_buffer, memmove

import numpy as np

from . import _lib
from ._lib import lib

BUDGETS = (70, 140, 280, 560, 1120)  # G4V_BUDGETS
DEFAULT_BUDGET = 280


def status_name(status):
    """The C constant's name for a status number ("G4V_ERR_IMAGE")."""
    return lib.g4v_status_name(int(status)).decode()


class G4VError(Exception):
    """A libg4v failure: .status (the g4v_status number), .status_name and .message (the
    library's text, which names the file or field at fault)."""

    def __init__(self, status, message):
        self.status = int(status)
        self.status_name = status_name(status)
        self.message = message
        super().__init__(f"{self.status_name}: {message}")

    def __reduce__(self):  # picklable (Dask sends exceptions between processes)
        return (G4VError, (self.status, self.message))


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

    @property
    def prompt_ids(self):
        ids = np.full(self.n_tokens + 2, self.image_token_id, dtype=np.int32)
        ids[0], ids[-1] = self.boi_token_id, self.eoi_token_id
        return ids

    @property
    def prompt(self):
        """The prompt span as text: <|image>, N x <|image|>, <image|>."""
        return "<|image>" + "<|image|>" * self.n_tokens + "<image|>"

    def __repr__(self):
        return (f"Result(n_tokens={self.n_tokens}, dim={self.dim}, grid={self.grid}, "
                f"original_size={self.original_size}, target_size={self.target_size}, "
                f"budget={self.budget})")


class ModelInfo:
    """What `g4v info` shows (g4v_model_info): every field as an attribute; as_dict()."""

    def __init__(self, c):
        for name, _ in _lib.ModelInfo._fields_:
            v = getattr(c, name)
            setattr(self, name, v.decode() if isinstance(v, bytes) else v)

    def as_dict(self):
        return dict(vars(self))

    def __repr__(self):
        return f"ModelInfo(variant={self.variant!r}, dim={self.dim}, layers={self.num_layers})"


class VideoResult:
    """One encoded video (Model.encode_video): the rows of every sampled frame, in order."""

    @classmethod
    def _from_c(cls, r, bf16):
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

    def __repr__(self):
        return (f"VideoResult(frames={self.n_frames}, rows={self.n_tokens}, dim={self.dim}, "
                f"fps={self.fps:g}, size={self.target_size})")


def _budget(b, what):
    if b is None or b == 0:
        return 0
    if not lib.g4v_budget_valid(int(b)):
        buf = create_string_buffer(256)
        st = lib.g4v_budget_check(int(b), buf, len(buf))
        raise G4VError(st, f"{what}: {buf.value.decode()}")
    return int(b)


def _rgb_array(a, what):
    """a as a uint8 [H, W, 3] array whose pixels are 3 bytes apart and rows evenly spaced."""
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3:
        raise G4VError(_lib.ERR_ARG, f"{what}: expected a uint8 [H, W, 3] array, "
                                     f"got {a.dtype} {list(a.shape)}")
    if a.shape[0] < 1 or a.shape[1] < 1:
        raise G4VError(_lib.ERR_ARG, f"{what}: empty image {list(a.shape)}")
    if a.strides[2] != 1 or a.strides[1] != 3 or a.strides[0] < 3 * a.shape[1]:
        a = np.ascontiguousarray(a)
    return a


def _npy_rgb(path):
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
    # the CLI's rule and message (tools/g4v/npy.c)
    if (not isinstance(a, np.ndarray) or a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3
            or not a.flags.c_contiguous or a.shape[0] < 1 or a.shape[1] < 1):
        raise G4VError(_lib.ERR_IMAGE, f"{path}: a .npy image must be C-ordered uint8 "
                                       "[H, W, 3] (and complete)")
    return np.asarray(a)


_RESIZES = {"pillow": _lib.RESIZE_PILLOW, "torchvision": _lib.RESIZE_TORCHVISION}


def _resize(name):
    """"pillow" / "torchvision" -> G4V_RESIZE_*; anything else is G4V_ERR_ARG."""
    if name not in _RESIZES:
        raise G4VError(_lib.ERR_ARG, f"resize must be 'pillow' or 'torchvision', got {name!r}")
    return _RESIZES[name]


class Model:
    """A Gemma 4 vision tower loaded from a checkpoint directory.

    Model(path, threads=0, precise=False, budget=280, exif=True, resize="pillow", **limits)
      threads   worker threads per encode call (0: one per CPU)
      precise   f32 GEMM inputs (~1e-6 relative error) instead of bf16 (~3e-3), slower
      budget    default soft-token budget, one of BUDGETS
      exif      apply the EXIF orientation of image files (as transformers does)
      resize    "pillow" (default): Pillow's BICUBIC, as transformers' Gemma4ImageProcessorPil;
                "torchvision": torch's antialiased bicubic, as its torchvision backend
                (Gemma4ImageProcessor, transformers' default when torchvision is installed, and
                the 12B's Gemma4UnifiedImageProcessor); docs/PREPROCESSING.md §6.6
      limits    any max_* field of g4v_model_options (max_pixels, max_dimension,
                max_file_bytes, max_header_bytes, max_config_bytes, max_tensor_count)

    Raises G4VError (status G4V_ERR_IO, G4V_ERR_MODEL, ...) when the checkpoint cannot be loaded.
    Safe to share between threads; use as a context manager or call close() to free it early.
    """

    def __init__(self, path, threads=0, precise=False, budget=DEFAULT_BUDGET, exif=True,
                 resize="pillow", **limits):
        self._model = None
        self._idle = []
        self._busy = 0
        self._cond = threading.Condition()
        self._threads = int(threads)
        if self._threads < 0:
            raise G4VError(_lib.ERR_ARG, f"threads must be >= 0, got {threads}")
        opts = _lib.ModelOptions()
        lib.g4v_model_options_init(byref(opts))
        opts.budget = _budget(budget, "budget") or DEFAULT_BUDGET
        opts.apply_exif = 1 if exif else 0
        opts.precise = 1 if precise else 0
        opts.resize = _resize(resize)
        for k, v in limits.items():
            if not k.startswith("max_") or not hasattr(opts, k):
                raise TypeError(f"Model() got an unexpected keyword argument {k!r}")
            setattr(opts, k, int(v))
        self.path = os.fspath(path)
        msg = create_string_buffer(1024)
        handle = c_void_p()
        st = lib.g4v_model_load(os.fsencode(self.path), byref(opts), byref(handle), msg, len(msg))
        if st:
            raise G4VError(st, msg.value.decode(errors="replace"))
        self._model = handle
        info = _lib.ModelInfo()
        st = lib.g4v_model_get_info(self._model, byref(info))
        if st:
            self.close()
            raise G4VError(st, "g4v_model_get_info failed")
        self.info = ModelInfo(info)

    # -- contexts -------------------------------------------------------------------------------
    def _acquire(self):
        with self._cond:
            if self._model is None:
                raise G4VError(_lib.ERR_ARG, "the model is closed")
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

    def _release(self, ctx):
        with self._cond:
            if ctx is not None:
                self._idle.append(ctx)
            self._busy -= 1
            self._cond.notify_all()

    @property
    def contexts(self):
        """How many g4v_ctx the pool holds (the peak number of concurrent encode calls)."""
        with self._cond:
            return len(self._idle) + self._busy

    def close(self):
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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    @property
    def fingerprint(self):
        """The model's identity (g4v_model_fingerprint): 64 hex digits of SHA-256 over the vision
        configuration, the numerics mode and version, and every vision tensor used; the same for
        any file layout of one checkpoint. Computed on first use (~0.5 s for e4b), then kept."""
        buf = create_string_buffer(65)
        st = lib.g4v_model_fingerprint(self._model, buf, len(buf))
        if st:
            raise G4VError(st, "cannot compute the model fingerprint")
        return buf.value.decode()

    # -- encoding -------------------------------------------------------------------------------
    def plan(self, width, height, tokens=None):
        """(target_width, target_height, n_tokens) for a width x height image, encoding nothing."""
        tw, th, n = c_int(), c_int(), c_int()
        st = lib.g4v_model_plan(self._model, int(width), int(height), _budget(tokens, "tokens"),
                                byref(tw), byref(th), byref(n))
        if st:
            raise G4VError(st, f"cannot plan a {width}x{height} image at budget {tokens}")
        return tw.value, th.value, n.value

    def encode(self, image, tokens=None, bf16=False, exif=None, resize=None):
        """Encodes one image into soft tokens; returns a Result.

        image   a path (str / os.PathLike; JPEG, PNG, WebP, GIF, BMP by content, or a raw uint8
                [H, W, 3] .npy as `g4v encode` takes it), bytes / bytearray / memoryview (an
                encoded image file in memory), a uint8 [H, W, 3] numpy array (RGB pixels), or a
                PIL image (converted to RGB as transformers does; no EXIF rotation applied)
        tokens  soft-token budget (one of BUDGETS); None: the model's
        bf16    also return features_bf16 (uint16 bf16 bits)
        exif    None: the model's setting; True / False: apply the EXIF orientation or not
                (files and bytes only; arrays and PIL images are taken as they are)
        resize  None: the model's; "pillow" or "torchvision" (see Model)
        Raises G4VError with the library's status and message (G4V_ERR_IMAGE for a corrupt
        image, G4V_ERR_IO for a missing file, G4V_ERR_ARG for a bad budget or array, ...).
        """
        eo = _lib.EncodeOptions()
        lib.g4v_encode_options_init(byref(eo))
        eo.budget = _budget(tokens, "tokens")
        eo.bf16 = 1 if bf16 else 0
        if exif is not None:
            eo.exif = 1 if exif else 0
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

    def encode_batch(self, images, tokens=None, bf16=False, resize=None):
        """Encodes several decoded images in one pass through the tower; returns a list of
        Results, each bit-identical to encode() on that image alone, faster for many small
        images (video frames, thumbnails).

        images  a sequence of uint8 [H, W, 3] numpy arrays or PIL images (any sizes)
        tokens, bf16, resize as for encode(). The feature cache is not consulted.
        """
        prepared = []
        for i, image in enumerate(images):
            kind, arg = self._prepare(image)
            if kind != "rgb":
                raise G4VError(_lib.ERR_ARG, f"encode_batch: image {i} must be a uint8 [H, W, 3] "
                                             f"numpy array or a PIL image")
            prepared.append(arg)
        if not prepared:
            return []
        eo = _lib.EncodeOptions()
        lib.g4v_encode_options_init(byref(eo))
        eo.budget = _budget(tokens, "tokens")
        eo.bf16 = 1 if bf16 else 0
        if resize is not None:
            eo.resize = _resize(resize)
        n = len(prepared)
        ims = (_lib.RgbImage * n)()
        for i, a in enumerate(prepared):
            ims[i].rgb, ims[i].width, ims[i].height = a.ctypes.data, a.shape[1], a.shape[0]
            ims[i].stride = a.strides[0]
        rs = (_lib.Result * n)()
        ctx = self._acquire()
        try:
            st = lib.g4v_encode_rgb_batch(ctx, ims, n, byref(eo), rs)
            if st:
                raise G4VError(st, lib.g4v_ctx_error(ctx).decode(errors="replace"))
            return [self._copy_out(r, bool(bf16)) for r in rs]
        finally:
            self._release(ctx)

    def encode_video(self, video, tokens=None, frames=None, bf16=False, resize=None):
        """Encodes a video (a path, or bytes of a video file) as Gemma 4 does: `frames` (default
        32) frames sampled evenly, each at the per-frame budget `tokens` (default 70), encoded
        together. Returns a VideoResult: features [rows, T] frame after frame, per-frame index,
        timestamp, "MM:SS" label and token count, the prompt text and ids. docs/VIDEO.md.
        resize: None (the model's), "pillow" or "torchvision", as for encode().
        """
        vo = _lib.VideoOptions()
        lib.g4v_video_options_init(byref(vo))
        vo.budget = 0 if tokens is None else _budget(tokens, "tokens")
        vo.num_frames = 0 if frames is None else int(frames)
        vo.bf16 = 1 if bf16 else 0
        if resize is not None:
            vo.resize = _resize(resize)
        r = _lib.VideoResult()
        ctx = self._acquire()
        try:
            if isinstance(video, (str, os.PathLike)):
                st = lib.g4v_encode_video_file(ctx, os.fsencode(os.fspath(video)), byref(vo),
                                               byref(r))
            elif isinstance(video, (bytes, bytearray, memoryview)):
                buf = np.frombuffer(memoryview(video).tobytes() or b"\0", dtype=np.uint8)
                st = lib.g4v_encode_video_memory(ctx, buf.ctypes.data, len(memoryview(video)),
                                                 byref(vo), byref(r))
            else:
                raise G4VError(_lib.ERR_ARG, "video must be a path or bytes, not "
                                             f"{type(video).__name__}")
            if st:
                raise G4VError(st, lib.g4v_ctx_error(ctx).decode(errors="replace"))
            return VideoResult._from_c(r, bool(bf16))
        finally:
            self._release(ctx)

    @staticmethod
    def _prepare(image):
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
        raise G4VError(_lib.ERR_ARG, "image must be a path, bytes, a uint8 [H, W, 3] numpy array "
                                     f"or a PIL image, not {type(image).__name__}")

    @staticmethod
    def _copy_out(r, bf16):
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
