/* g4v.h - the public API of libg4v: Gemma 4 vision embeddings ("soft tokens") on the CPU.
 *
 * This header is the whole public surface. Everything under src/ is internal.
 *
 *   g4v_model  a checkpoint directory loaded once (weights memory-mapped and packed); immutable,
 *              shared by any number of threads.
 *   g4v_ctx    one per calling thread: a thread pool and a workspace that grows to the largest
 *              image seen and is reused, so encoding allocates nothing in the steady state.
 *
 * Typical use:
 *     g4v_model_options mo; g4v_model_options_init(&mo);
 *     char msg[512]; g4v_model *m;
 *     if (g4v_model_load("gemma-4-e4b-it", &mo, &m, msg, sizeof msg)) { puts(msg); ... }
 *     g4v_ctx *ctx; g4v_ctx_create(m, NULL, &ctx, msg, sizeof msg);
 *     g4v_result r;
 *     if (g4v_encode_file(ctx, "cat.jpg", NULL, &r)) puts(g4v_ctx_error(ctx));
 *     // r.features: r.n_tokens rows of r.dim floats, valid until the next encode on ctx
 *     g4v_ctx_free(ctx); g4v_model_free(m);
 *
 * Errors (docs/API.md "Errors"): every call that can fail returns a g4v_status (G4V_OK is 0) and
 * says why in one of two places, by one rule: a call on a g4v_ctx leaves its message in
 * g4v_ctx_error(ctx); every other one takes `char *errbuf, size_t errbuf_size` as its last two
 * parameters and writes its message there ("" on success; errbuf may be NULL). Nothing here
 * prints, exits or aborts on bad input. There is no global mutable state.
 *
 * Versions (docs/API.md "Growing structs"): fields may be appended to the option structs
 * (g4v_*_options) and to g4v_model_info / g4v_cache_stats in later versions without breaking a
 * program built against this header. Each option struct begins with `size_t struct_size`, which
 * its g4v_*_options_init sets to the caller's sizeof; the library reads only the fields that fit
 * in it (the others keep their defaults). g4v_model_get_info and g4v_cache_get_stats are passed
 * the caller's sizeof and write only that many bytes. g4v_result, g4v_rgb_image, g4v_video_frame
 * and g4v_video_result are frozen: they never change layout (a change would be new names).
 *
 * Threads: a g4v_model may be used by any number of threads at once (it is never written after
 * load). A g4v_ctx must be used by one thread at a time; give each thread its own. Results are
 * bit-identical for any thread count and any number of concurrent contexts.
 *
 * Using the output with a language model (docs/NUMERICS.md §5): for an image with N soft tokens,
 * the prompt holds boi, N x image, eoi token ids (g4v_prompt_tokens). Embed the text tokens as the
 * model does (Gemma 4 multiplies text embeddings by bf16(sqrt(T))), then copy the N feature rows
 * unscaled into the N image-token positions, in order. See examples/splice.c.
 */
#ifndef G4V_H
#define G4V_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define G4V_VERSION_MAJOR 0
#define G4V_VERSION_MINOR 2
#define G4V_VERSION_PATCH 0

#if defined(G4V_BUILDING_LIBRARY)
#define G4V_API __attribute__((visibility("default")))
#else
#define G4V_API
#endif

/* Status codes. Stable numbers: callers may switch on them.
 * G4V_ERR_LIMIT means exactly one thing: an input went over a limit the caller can set (a max_*
 * field of g4v_model_options; the message names the field, the value found and the limit), so
 * raising that field admits the input. Fixed caps of the library or of the model (JPEG scans,
 * the position table, sizes the host cannot address) are G4V_ERR_UNSUPPORTED or G4V_ERR_NOMEM;
 * sizes that can only come from a corrupt file are G4V_ERR_IMAGE or G4V_ERR_MODEL. */
typedef enum g4v_status {
    G4V_OK = 0,
    G4V_ERR_ARG = 1,         /* a caller argument is invalid (NULL, unsupported budget, ...) */
    G4V_ERR_IO = 2,          /* a file cannot be opened, read or mapped */
    G4V_ERR_MODEL = 3,       /* the checkpoint is malformed or disagrees with its config */
    G4V_ERR_IMAGE = 4,       /* the image cannot be decoded (corrupt, truncated, unsupported) */
    G4V_ERR_LIMIT = 5,       /* an input exceeds a limit the caller sets (g4v_model_options) */
    G4V_ERR_NOMEM = 6,       /* an allocation failed */
    G4V_ERR_UNSUPPORTED = 7, /* a valid input that this library (or model) does not handle */
    G4V_ERR_INTERNAL = 8     /* a bug: please report it */
} g4v_status;

/* Short constant name of a status ("G4V_ERR_MODEL"); never NULL ("G4V_ERR_UNKNOWN" otherwise). */
G4V_API const char *g4v_status_name(g4v_status status);

/* Library version as "MAJOR.MINOR.PATCH" (of the library actually linked). */
G4V_API const char *g4v_version(void);

/* Soft-token budgets: the max_soft_tokens values Gemma 4's image processors accept, ascending.
 * Every budget argument (g4v_model_options, g4v_encode_options, g4v_model_plan) must be one of
 * them, else G4V_ERR_ARG. Usable as an initializer: static const int b[] = {G4V_BUDGETS}; */
#define G4V_BUDGETS 70, 140, 280, 560, 1120
#define G4V_DEFAULT_BUDGET 280

/* 1 if budget is one of G4V_BUDGETS, else 0. */
G4V_API int g4v_budget_valid(int budget);

/* G4V_OK for a valid budget, else G4V_ERR_ARG with the message every budget check in libg4v
 * gives ("unsupported token budget 300 (use one of 70, 140, 280, 560, 1120)") in errbuf ("" on
 * success; errbuf may be NULL; truncated to errbuf_size). */
G4V_API g4v_status g4v_budget_check(int budget, char *errbuf, size_t errbuf_size);

/* Which transformers image processor's resize to reproduce (g4v_model_options.resize,
 * g4v_encode_options.resize, g4v_video_options.resize; docs/PREPROCESSING.md §6.6). */
#define G4V_RESIZE_PILLOW 0      /* Gemma4ImageProcessorPil: Pillow's BICUBIC in the pass order of
                                    Pillow >= 13 (the default) */
#define G4V_RESIZE_TORCHVISION 1 /* Gemma4ImageProcessor / Gemma4UnifiedImageProcessor, the
                                    torchvision backend transformers picks when torchvision is
                                    installed: torch's uint8 antialiased bicubic. Differs from
                                    Pillow's by 1-2 levels in ~0.3-0.5% of the resized bytes */

/* The math mode of a model (g4v_model_options.math, g4v_model_info.math; docs/NUMERICS.md): how
 * the encoder rounds at its matrix products. The outputs, the fingerprint and the cache keys of
 * each mode are its own. */
typedef enum g4v_math_mode {
    G4V_MATH_FAST = 0,       /* the default: bf16 GEMM inputs, ~3e-3 relative error vs float64 */
    G4V_MATH_PRECISE = 1,    /* f32 GEMM inputs, ~1e-6 relative error, slower */
    G4V_MATH_INT8 = 2,       /* opt-in: the vision blocks' linear layers as int8 x int8 -> int32
                                (VNNI, AVX2 elsewhere), weights quantized once at load per output
                                channel, activations per row; ~2e-2 relative error, faster
                                (docs/NUMERICS.md §12) */
    G4V_MATH_INT8_BLOCKS = 3 /* opt-in: INT8 with weights and activations scaled per block of 32
                                inputs (llama.cpp's Q8_0 layout; Q8_0 GGUF weights are used as
                                stored), more accurate than INT8, slower (docs/NUMERICS.md §12.4) */
} g4v_math_mode;

/* The mode's name, the one the fingerprint, the cache key, `g4v info`, `--math` and the service's
 * /v1/info use: "fast", "precise", "int8" or "int8-blocks"; "unknown" for any other value (never
 * NULL). */
G4V_API const char *g4v_math_mode_name(g4v_math_mode mode);

/* The mode named name (one of g4v_math_mode_name's four names, exactly) into *out. G4V_ERR_ARG
 * for any other text or NULL (*out untouched), with the message ("unknown math mode 'x' (use
 * fast, precise, int8 or int8-blocks)") in errbuf ("" on success; errbuf may be NULL; truncated
 * to errbuf_size). */
G4V_API g4v_status g4v_math_mode_parse(const char *name, g4v_math_mode *out, char *errbuf,
                                       size_t errbuf_size);

/* ---------------------------------------------------------------------------------------------
 * Model
 */
typedef struct g4v_model g4v_model;

/* Options for g4v_model_load. Always fill with g4v_model_options_init first, then change what
 * you need: fields may be added at the end in later versions. */
typedef struct g4v_model_options {
    size_t struct_size; /* set by g4v_model_options_init: sizeof the caller's struct */
    int budget;      /* default soft-token budget: one of G4V_BUDGETS, or 0 (the default): the
                        checkpoint's own, from processor_config.json / config.json, else 280
                        (docs/GUIDE.md "Default budget"); G4V_ERR_UNSUPPORTED if that is not
                        one of G4V_BUDGETS */
    int apply_exif;  /* 1 (default): rotate/flip by the EXIF orientation, as transformers does;
                        0: ignore it */
    int legacy_precise; /* ABI only, never set by new code (use math): the slot of 0.2's
                           `precise`, so that a program built against that header, which sets
                           precise = 1 here, still loads the PRECISE model (docs/API.md
                           "Growing structs"). Must be 0 when math is not G4V_MATH_FAST. */
    uint64_t max_pixels;       /* decoded image pixels; default 178,956,970 (0 = default) */
    int max_dimension;         /* longest side of an image; default 65,500 (0 = default) */
    uint64_t max_header_bytes; /* safetensors JSON header; default 100 MB (0 = default) */
    uint64_t max_file_bytes;   /* image file / buffer size for encode; default 1 GiB (0 = default) */
    uint64_t max_config_bytes; /* config.json, index.json; default 16 MB (0 = default) */
    uint64_t max_tensor_count; /* entries in a safetensors header; default 1,000,000 (0 = def.) */
    /* Video input (g4v_encode_video_*): frames decoded from one video, and its duration; a video
     * frame is also held to max_pixels / max_dimension, the file to max_file_bytes. */
    uint64_t max_video_frames; /* default 216,000 (an hour at 60 fps) (0 = default) */
    double max_video_seconds;  /* default 3,600 (0 = default) */
    int read_weights; /* 0 (default): memory-map the vision weights; a checkpoint file truncated
                         while the model is loaded can then raise SIGBUS (docs/LIMITS.md).
                         1: read them into memory at load; nothing refers to the files after
                         g4v_model_load returns (costs their size in RAM: 340 MB for e4b) */
    int resize;       /* G4V_RESIZE_PILLOW (0, default) or G4V_RESIZE_TORCHVISION: the default
                         resize of every encode on this model (images and video frames) */
    int metadata_only; /* 0 (default): a model that encodes. 1: check the checkpoint as a load
                          does (config, every tensor's shape) without packing the weights:
                          g4v_model_get_info, _fingerprint and _plan work, g4v_ctx_create
                          refuses (G4V_ERR_ARG). What `g4v info` uses: a fraction of the time
                          and memory of a full load. */
    int legacy_int8; /* ABI only, never set by new code (use math): the slot of 0.2's `int8`
                        (1: G4V_MATH_INT8, 2: G4V_MATH_INT8_BLOCKS), read as legacy_precise is.
                        Both legacy slots set is G4V_ERR_ARG, as it always was. */
    g4v_math_mode math; /* G4V_MATH_FAST (default), G4V_MATH_PRECISE, G4V_MATH_INT8 or
                           G4V_MATH_INT8_BLOCKS: the one way to choose the math mode */
    int pack_weights; /* 0 (default): BF16 weights are read where they lie, in the checkpoint's
                         mapped pages, on CPUs with in-place GEMM kernels (x86-64, portable):
                         nothing packed, the fastest load, no copy in memory. 1: packed at load
                         into the kernels' panels: the same bits, faster warm encodes, their
                         size in memory; what a process that keeps the model wants (g4v serve
                         and the Python package set it). G4V_PACK_WEIGHTS=1 packs in every
                         model of the process (docs/GUIDE.md "Packed weights"). */
} g4v_model_options;

/* Every g4v_X_options_init(opts) is an inline call of the exported g4v_X_options_init_sized(opts,
 * sizeof *opts): it zeroes the struct_size bytes at opts, sets the defaults of the fields that fit
 * and sets opts->struct_size. A call that takes options answers G4V_ERR_ARG for a struct_size
 * below sizeof(size_t) or above 65536 (options never initialized). */
G4V_API void g4v_model_options_init_sized(g4v_model_options *opts, size_t struct_size);
static inline void g4v_model_options_init(g4v_model_options *opts) {
    g4v_model_options_init_sized(opts, sizeof *opts);
}

/* Loads the checkpoint directory dir (config.json plus model.safetensors, a sharded
 * model.safetensors.index.json, or an optiq_vision.safetensors sidecar; Hugging Face or MLX
 * names), or a llama.cpp mmproj GGUF file (F32/F16/BF16/Q8_0; dir may also be a directory
 * without config.json holding exactly one mmproj*.gguf; docs/GGUF.md). Only the vision tensors
 * are read. opts may be NULL (defaults). On failure *out is NULL
 * and errbuf (if not NULL, errbuf_size > 0) receives a message naming the file/tensor and cause.
 * Status: G4V_ERR_IO (missing dir/file), G4V_ERR_MODEL (malformed), G4V_ERR_LIMIT (over
 * max_header_bytes, max_config_bytes or max_tensor_count), G4V_ERR_UNSUPPORTED (e.g. quantized
 * safetensors weights, a GGUF tensor type other than those four), G4V_ERR_ARG (also for an
 * environment variable G4V_ISA that is not auto, avx512, avx512-nobf16, avx2, neon-bf16, neon or
 * portable; the same from g4v_ctx_create and g4v_preprocess_file), G4V_ERR_NOMEM. */
G4V_API g4v_status g4v_model_load(const char *dir, const g4v_model_options *opts,
                                  g4v_model **out, char *errbuf, size_t errbuf_size);

/* Frees the model. Every ctx created on it must have been freed first. NULL is a no-op. */
G4V_API void g4v_model_free(g4v_model *model);

/* A count of the vision tensors of one element type, as stored (g4v_model_info.dtypes). */
typedef struct g4v_dtype_count {
    char name[8];   /* "BF16", "F16" or "F32" (the type the tensors are read as) */
    int64_t tensors;
    uint64_t bytes;
} g4v_dtype_count;

/* What `g4v info` shows. Strings are NUL-terminated copies. Fields may be appended in later
 * versions (g4v_model_get_info writes only the caller's sizeof; a newer caller's extra fields
 * read 0 from an older library). */
/* The most layers g4v_model_info lists one by one (layer_sharpness, layer_precise). */
#define G4V_INFO_MAX_LAYERS 128

typedef struct g4v_model_info {
    char variant[32];  /* "e2b", "e4b", "26b-a4b", "31b", "12b" or "custom" */
    int hidden_size, intermediate_size, num_layers, num_heads, num_kv_heads, head_dim;
    int patch_size, pooling_kernel_size, position_embedding_size;
    int dim;           /* T: floats per soft token (the language model's hidden size) */
    int default_budget;      /* the budget from the load options, or the checkpoint's */
    int config_output_length; /* default_output_length in config.json (280) */
    int use_clipped_linears, standardize;
    int legacy_precise; /* ABI only (read math): 1 when math is G4V_MATH_PRECISE, else 0, in the
                           slot of 0.2's `precise` */
    int apply_exif;
    int32_t image_token_id, boi_token_id, eoi_token_id, video_token_id;
    int64_t param_count;  /* vision parameters loaded */
    uint64_t weight_bytes; /* their bytes as stored */
    char naming[8];       /* "hf", "mlx" or "mixed" */
    char source[512];     /* which files held the tensors */
    /* The limits in force (the load options' max_* fields, defaults filled in): an input over
     * one of them is G4V_ERR_LIMIT. */
    uint64_t max_pixels;
    int max_dimension;
    uint64_t max_file_bytes, max_header_bytes, max_config_bytes, max_tensor_count;
    /* Which vision path the checkpoint has: "tower" (the vision transformer of e2b, e4b,
     * 26B-A4B, 31B) or "unified" (the 12B's encoder-free patch embedder: one soft token per
     * 48x48 patch, no layers; num_layers, intermediate_size and the head fields are then 0,
     * hidden_size is its width mm_embed_dim and position_embedding_size its mm_posemb_size). */
    char kind[16];
    uint64_t max_video_frames;
    double max_video_seconds;
    /* The kernel table this model runs ("features=0x.. gemm=avx512-bf16dp attention=... "):
     * the CPU features it was chosen for and the variant of each kernel family. FAST outputs
     * are bit-reproducible only between machines that print the same table; PRECISE ones agree
     * to ~1e-6 across tables (docs/NUMERICS.md §6.3). G4V_ISA caps the choice. */
    char kernels[512];
    int resize; /* the load options' resize: G4V_RESIZE_PILLOW or G4V_RESIZE_TORCHVISION */
    /* More of config.json (0 where the kind has no such value: rope_theta for "unified",
     * layer_norm_eps for "tower") and the version of libg4v's numerics (part of the fingerprint) */
    double rope_theta, rms_norm_eps, layer_norm_eps;
    int numerics_version;
    /* The vision tensors by element type as stored, dtypes[0 .. n_dtypes-1], in the order BF16,
     * F16, F32 (types with no tensor left out) */
    int n_dtypes;
    g4v_dtype_count dtypes[4];
    int legacy_int8; /* ABI only (read math): 1 for G4V_MATH_INT8, 2 for G4V_MATH_INT8_BLOCKS,
                        else 0, in the slot of 0.2's `int8` */
    g4v_math_mode math; /* the model's math mode (the load options' math) */
    /* The BF16 kernel rule's answer for this CPU when the kernels were chosen (docs/NUMERICS.md
     * §6.6): "bf16=vdpbf16ps vendor=AMD family=0x19 model=0x11: <why>", or bf16=fma (Intel: the
     * FMA kernels, whose FAST bits are those of G4V_ISA=avx512-nobf16). */
    char kernel_rule[256];
    /* Whether Intel AMX (tile) kernels could run in this process (1) or not (0), and why
     * (docs/ARCHITECTURE.md §3 "AMX"): "this CPU has no AMX (...)", "the kernel refused the tile
     * permission: ...", "no AMX kernels in this build yet (...)". Asked once per process. */
    int amx_usable;
    char amx[256];
    /* The AMX start-up self-test's verdict (a tile GEMM and an attention block against their
     * emulated twins, bit for bit, and tile data held across a sched_yield and a sleep):
     * "passed: ...", "failed: ..." or "not run: ..." (no AMX, or G4V_ISA leaves it out).
     * amx_usable and amx above already account for it. */
    char amx_self_test[256];
    /* Sharp attention (docs/NUMERICS.md §6.5): each layer's sharpness, sqrt(sum_i (q_norm_i *
     * k_norm_i)^2), the standard deviation of its logits for unrelated unit-RMS q and k; a layer
     * above sharp_threshold runs as PRECISE in a FAST or INT8 model (its seven projections and
     * its attention in f32), so FAST's speed depends on the checkpoint. layer_precise[i] is 1 for
     * a layer that runs as PRECISE (every layer of a PRECISE model). Layers past
     * G4V_INFO_MAX_LAYERS are counted in n_sharp / n_precise but not listed; 0 layers for the
     * "unified" kind. */
    double sharp_threshold;
    int n_layers_listed; /* min(num_layers, G4V_INFO_MAX_LAYERS) */
    int n_sharp, n_precise;
    float layer_sharpness[G4V_INFO_MAX_LAYERS];
    unsigned char layer_precise[G4V_INFO_MAX_LAYERS];
    /* 1: the BF16 weights are read where they lie in the checkpoint (in place); 0: packed at
     * load (g4v_model_options.pack_weights, G4V_PACK_WEIGHTS, or a CPU without in-place kernels,
     * or weights of another dtype or mode) */
    int weights_in_place;
} g4v_model_info;

/* Fills info (info_size: the caller's sizeof, at most that many bytes written; bytes past the
 * library's own struct are zeroed). g4v_model_get_info passes sizeof *info. G4V_ERR_ARG for NULL
 * arguments or an info_size below sizeof(size_t). */
G4V_API g4v_status g4v_model_get_info_sized(const g4v_model *model, g4v_model_info *info,
                                            size_t info_size, char *errbuf, size_t errbuf_size);
static inline g4v_status g4v_model_get_info(const g4v_model *model, g4v_model_info *info,
                                            char *errbuf, size_t errbuf_size) {
    return g4v_model_get_info_sized(model, info, sizeof *info, errbuf, errbuf_size);
}

/* Target size and soft-token count for a width x height image at budget (0 = the model's
 * default), without encoding anything: *n_tokens = (target_w/48) * (target_h/48).
 * Any out pointer may be NULL. G4V_ERR_ARG for an unsupported budget or a non-positive size. */
G4V_API g4v_status g4v_model_plan(const g4v_model *model, int width, int height, int budget,
                                  int *target_w, int *target_h, int *n_tokens, char *errbuf,
                                  size_t errbuf_size);

/* The model's identity: 64 lower-case hex digits of a SHA-256 over a format tag, the version of
 * libg4v's numerics, the math mode's name (g4v_math_mode_name), the vision configuration values
 * that change the computation, and the content of every vision tensor the encoder uses (canonical
 * name, dtype, shape, bytes), in a canonical order. The same checkpoint gives the same fingerprint
 * in any layout (one file, shards, with or without "model.", MLX names, a sidecar); changing any
 * used tensor byte or any of those settings changes it. Token ids, file names and the max_* limits
 * are not part of it (they change no feature bit). docs/SERVICE.md "Model identity". Cost: the
 * first call reads every vision tensor once (in parallel, one thread per CPU: see docs/SERVICE.md
 * for the e4b time); the model remembers the result, so later calls are free. Thread-safe. hex
 * receives G4V_FINGERPRINT_HEX bytes (NUL included); hex_size smaller is G4V_ERR_ARG. */
#define G4V_FINGERPRINT_HEX 65
G4V_API g4v_status g4v_model_fingerprint(const g4v_model *model, char *hex, size_t hex_size,
                                         char *errbuf, size_t errbuf_size);

/* ---------------------------------------------------------------------------------------------
 * Preprocessing alone (`g4v preprocess`; docs/PREPROCESSING.md): decode, orient, resize to the
 * budget's target size and cut into 16x16 patches, exactly as an encode does before the model
 * runs. Needs no model.
 */
typedef struct g4v_preprocess_options {
    size_t struct_size; /* set by g4v_preprocess_options_init */
    int budget;         /* one of G4V_BUDGETS (default 280) */
    int apply_exif;     /* 1 (default): apply the EXIF orientation; 0: ignore it */
    int resize;         /* G4V_RESIZE_PILLOW (default) or G4V_RESIZE_TORCHVISION */
    int pillow_version; /* with G4V_RESIZE_PILLOW, the Pillow whose order of the two resize
                           passes to follow: 13 (default, Pillow >= 13), 122 (Pillow 12.2) or 9
                           (Pillow 9.0 - 12.1). Not 13 with G4V_RESIZE_TORCHVISION is G4V_ERR_ARG */
    uint64_t max_pixels; /* as g4v_model_options (0 = default) */
    int max_dimension;   /* as g4v_model_options (0 = default) */
} g4v_preprocess_options;

G4V_API void g4v_preprocess_options_init_sized(g4v_preprocess_options *opts, size_t struct_size);
static inline void g4v_preprocess_options_init(g4v_preprocess_options *opts) {
    g4v_preprocess_options_init_sized(opts, sizeof *opts);
}

/* A preprocessed image, allocated by the library (so fields may be appended; free it with
 * g4v_pixels_free). */
typedef struct g4v_pixels {
    int width, height;   /* the target size (multiples of 48) */
    const uint8_t *rgb;  /* [height, width, 3] RGB8, the resized image */
    int n_patches;       /* L = (height / 16) * (width / 16) */
    const float *patches;    /* [L, 768] float32: per patch (row, column, channel), values u/255 */
    const int32_t *positions; /* [L, 2]: (x = patch column, y = patch row) */
    char format[16];     /* "JPEG", "PNG", "WebP", "GIF", "BMP", "TIFF" */
    int src_width, src_height; /* as stored in the file */
    int orientation;     /* the EXIF orientation applied, 1..8 (1: none) */
    int oriented_width, oriented_height; /* after it: what the target size is computed from */
    int streamed;        /* 1 when rows went straight from the decoder into the resize */
} g4v_pixels;

/* Preprocesses the image file at path (its content picks the format). Errors: G4V_ERR_ARG (bad
 * options or budget), G4V_ERR_IO, G4V_ERR_IMAGE, G4V_ERR_UNSUPPORTED, G4V_ERR_LIMIT (max_pixels,
 * max_dimension), G4V_ERR_NOMEM; *out is NULL on failure. */
G4V_API g4v_status g4v_preprocess_file(const char *path, const g4v_preprocess_options *opts,
                                       g4v_pixels **out, char *errbuf, size_t errbuf_size);
G4V_API void g4v_pixels_free(g4v_pixels *pixels); /* NULL is a no-op */

/* ---------------------------------------------------------------------------------------------
 * Context (one per thread)
 */
typedef struct g4v_ctx g4v_ctx;

typedef struct g4v_ctx_options {
    size_t struct_size; /* set by g4v_ctx_options_init */
    int threads; /* worker threads incl. the caller; 0 (default) = one per online CPU */
} g4v_ctx_options;

G4V_API void g4v_ctx_options_init_sized(g4v_ctx_options *opts, size_t struct_size);
static inline void g4v_ctx_options_init(g4v_ctx_options *opts) {
    g4v_ctx_options_init_sized(opts, sizeof *opts);
}

/* Creates a context on model (which must outlive it). opts may be NULL. Errors as for
 * g4v_model_load (errbuf may be NULL). */
G4V_API g4v_status g4v_ctx_create(const g4v_model *model, const g4v_ctx_options *opts,
                                  g4v_ctx **out, char *errbuf, size_t errbuf_size);
G4V_API void g4v_ctx_free(g4v_ctx *ctx); /* NULL is a no-op */

/* The message of the last failed call on ctx ("" after a success); valid until the next call on
 * ctx. Never NULL (a NULL ctx gives a fixed message). */
G4V_API const char *g4v_ctx_error(const g4v_ctx *ctx);

/* ---------------------------------------------------------------------------------------------
 * Encoding
 */
typedef struct g4v_encode_options {
    size_t struct_size; /* set by g4v_encode_options_init */
    int budget; /* 0 (default): the model's budget; else one of G4V_BUDGETS */
    int apply_exif; /* -1 (default): the model's apply_exif; 0: ignore EXIF; 1: apply it */
    int bf16;   /* 1: also fill g4v_result.features_bf16 (default 0) */
    int resize; /* -1 (default): the model's resize; else G4V_RESIZE_PILLOW or
                   G4V_RESIZE_TORCHVISION */
} g4v_encode_options;

G4V_API void g4v_encode_options_init_sized(g4v_encode_options *opts, size_t struct_size);
static inline void g4v_encode_options_init(g4v_encode_options *opts) {
    g4v_encode_options_init_sized(opts, sizeof *opts);
}

/* One encoded image. The pointers are owned by the ctx and stay valid until the next encode call
 * on that ctx (successful or not) or g4v_ctx_free; copy them out (g4v_result_copy) to keep them. */
typedef struct g4v_result {
    int n_tokens;            /* N = grid_w * grid_h */
    int dim;                 /* T: floats per token */
    int grid_w, grid_h;      /* pooled grid; rows are in row-major grid order */
    int src_width, src_height; /* the image as decoded, after EXIF orientation */
    int width, height;       /* the target size it was resized to (multiples of 48) */
    int budget;              /* the budget used */
    const float *features;   /* [N, T] float32, row-major */
    const uint16_t *features_bf16; /* [N, T] bf16 bits (round to nearest even); NULL unless asked */
    int32_t boi_token_id, image_token_id, eoi_token_id; /* from config.json */
    double seconds;          /* wall time of the call (decode + resize + encode) */
} g4v_result;

/* Encodes an image file (JPEG, PNG, WebP, GIF, BMP, TIFF; chosen by content). Errors name the path:
 * G4V_ERR_IO (cannot read), G4V_ERR_IMAGE (corrupt/truncated), G4V_ERR_UNSUPPORTED (format),
 * G4V_ERR_LIMIT (over max_file_bytes, max_pixels or max_dimension), G4V_ERR_ARG (bad budget /
 * arguments), G4V_ERR_NOMEM.
 * opts may be NULL. On failure *out is zeroed. */
G4V_API g4v_status g4v_encode_file(g4v_ctx *ctx, const char *path, const g4v_encode_options *opts,
                            g4v_result *out);

/* The same for an encoded image held in memory (bytes need only live during the call). */
G4V_API g4v_status g4v_encode_memory(g4v_ctx *ctx, const void *bytes, size_t size,
                              const g4v_encode_options *opts, g4v_result *out);

/* The same for already-decoded pixels: RGB8, 3 bytes per pixel, rows stride bytes apart
 * (stride >= 3 * width). The image is resized (BICUBIC, opts->resize) to the budget's target size like
 * any decoded image; EXIF does not apply. */
G4V_API g4v_status g4v_encode_rgb(g4v_ctx *ctx, const uint8_t *rgb, int width, int height, size_t stride,
                           const g4v_encode_options *opts, g4v_result *out);

/* One decoded image for g4v_encode_rgb_batch: RGB8, rows stride bytes apart. */
typedef struct g4v_rgb_image {
    const uint8_t *rgb;
    int width, height;
    size_t stride;
} g4v_rgb_image;

/* Encodes n decoded images (any sizes) in one pass through the tower: each is resized to the
 * budget's target size as g4v_encode_rgb does, then the rows of all of them go through every
 * GEMM together while attention stays within each image, so out[i] is bit-identical to
 * g4v_encode_rgb on image i alone -- and faster for many small images (video frames, thumbnails).
 * out holds n results; their features lie one after another in one ctx buffer, valid until the
 * next encode on ctx. Every out[i].seconds is the whole call's wall time. The cache
 * (g4v_ctx_set_cache) is not consulted. Errors as for g4v_encode_rgb, naming the image's index;
 * on failure every out[i] is zeroed (all or nothing: g4v_encode_batch fails entries alone). */
G4V_API g4v_status g4v_encode_rgb_batch(g4v_ctx *ctx, const g4v_rgb_image *images, int n,
                                 const g4v_encode_options *opts, g4v_result *out);

/* One entry of g4v_encode_batch: an image, given as exactly one of a file path, encoded bytes
 * or decoded RGB8 pixels, with options of its own; the call fills the rest. Zero it (= {0}),
 * then set the input (and opts): every other field may stay 0. */
typedef struct g4v_batch_item {
    const char *path;    /* an image file, as g4v_encode_file; or */
    const void *bytes;   /* an encoded image of size bytes in memory, as g4v_encode_memory; or */
    size_t size;
    const uint8_t *rgb;  /* RGB8 pixels, rows stride bytes apart, as g4v_encode_rgb */
    int width, height;
    size_t stride;
    const g4v_encode_options *opts; /* NULL: the defaults */
    /* filled by the call */
    g4v_status status;   /* G4V_OK, or the status the single call would have returned */
    int cache_hit;       /* 1: served from the ctx's cache */
    const char *error;   /* "" or the message the single call would have left (owned by ctx,
                            valid until the next encode call on it) */
    g4v_result result;   /* zeroed unless status is G4V_OK */
} g4v_batch_item;

/* Encodes n images, each exactly as the single call for its input would (g4v_encode_file,
 * _memory or _rgb with its own opts; the ctx's cache looked up and filled), bit for bit the same
 * features, status and message -- but the images the tower must encode go through it together,
 * as g4v_encode_rgb_batch does, in passes of up to 8192 patch rows. One bad image fails its own
 * entry only. The entries' features lie in entry order in one ctx buffer, valid until the next
 * encode call on ctx; every result.seconds is the whole call's time. The pixels of the images
 * waiting for a pass are held meanwhile (at most about one pass: ~6 MB).
 * Returns G4V_OK when every entry succeeded, else the first failed entry's status, with
 * g4v_ctx_error naming how many failed and the first one's message. G4V_ERR_ARG (no entry
 * touched) for a NULL items, n < 1 or an item_size below this header's sizeof(g4v_batch_item).
 * g4v_ctx_cache_hit(ctx) is then 1 when every entry came from the cache.
 * item_size is the caller's sizeof(g4v_batch_item) (g4v_encode_batch passes it): the entries are
 * item_size bytes apart, and a later version may append fields. */
G4V_API g4v_status g4v_encode_batch_sized(g4v_ctx *ctx, g4v_batch_item *items, int n,
                                          size_t item_size);
static inline g4v_status g4v_encode_batch(g4v_ctx *ctx, g4v_batch_item *items, int n) {
    return g4v_encode_batch_sized(ctx, items, n, sizeof *items);
}

/* ---------------------------------------------------------------------------------------------
 * Feature cache: a directory of encoded images, shared by any number of threads and processes
 * (docs/SERVICE.md "The feature cache").
 *
 * An entry's key is a SHA-256 over the image's content (its bytes, or for g4v_encode_rgb its
 * pixels and size), the budget, the EXIF choice, the resize (torchvision only: Pillow keys are
 * unchanged from earlier versions), the math mode, the model fingerprint and the
 * kernel path (the SIMD variants in use, which may change last bits). Its value is a safetensors
 * file holding the float32 features and their sizes, with a checksum. Writes go to a temporary
 * file renamed into place, so a reader sees a whole entry or none; an entry that fails its checks
 * (truncated, corrupted, not ours) is never served: it is recomputed and rewritten. Above
 * max_bytes the least recently used entries (by modification time, which a hit refreshes) are
 * removed. A hit fills g4v_result with bytes identical to those a fresh encode would give.
 */
typedef struct g4v_cache g4v_cache;

typedef struct g4v_cache_options {
    size_t struct_size; /* set by g4v_cache_options_init */
    uint64_t max_bytes; /* bound on the entries' total size; 0 = default 1 GiB */
} g4v_cache_options;

G4V_API void g4v_cache_options_init_sized(g4v_cache_options *opts, size_t struct_size);
static inline void g4v_cache_options_init(g4v_cache_options *opts) {
    g4v_cache_options_init_sized(opts, sizeof *opts);
}

/* Opens (creating it if needed, as mkdir -p) the cache directory dir, which must be writable.
 * Errors: G4V_ERR_IO (cannot create or write dir), G4V_ERR_ARG, G4V_ERR_NOMEM. */
G4V_API g4v_status g4v_cache_open(const char *dir, const g4v_cache_options *opts, g4v_cache **out,
                           char *errbuf, size_t errbuf_size);
/* Every ctx it is attached to must have been detached or freed first. NULL is a no-op. */
G4V_API void g4v_cache_close(g4v_cache *cache);

/* Counters since g4v_cache_open (this process only; thread-safe). Fields may be appended. */
typedef struct g4v_cache_stats {
    uint64_t hits, misses;  /* lookups served / not served from the directory */
    uint64_t stores;        /* entries written */
    uint64_t corrupt;       /* entries found damaged (recomputed, never served) */
    uint64_t evictions;     /* entries removed to stay under max_bytes */
    uint64_t errors;        /* failed writes or scans (the encode itself still succeeded) */
} g4v_cache_stats;

/* Fills stats (stats_size: the caller's sizeof, as g4v_model_get_info_sized).
 * G4V_ERR_ARG for NULL arguments. */
G4V_API g4v_status g4v_cache_get_stats_sized(const g4v_cache *cache, g4v_cache_stats *stats,
                                             size_t stats_size, char *errbuf, size_t errbuf_size);
static inline g4v_status g4v_cache_get_stats(const g4v_cache *cache, g4v_cache_stats *stats,
                                             char *errbuf, size_t errbuf_size) {
    return g4v_cache_get_stats_sized(cache, stats, sizeof *stats, errbuf, errbuf_size);
}

/* Attaches cache to ctx (NULL detaches): from then on g4v_encode_file, _memory and _rgb on ctx look
 * the image up first and store what they encode; g4v_encode_video_file and _memory do so for each
 * sampled frame (keyed by its pixels at the target size, so only new frames are encoded). One
 * cache may be attached to any number of contexts. The first lookup computes the model
 * fingerprint if nothing has yet. G4V_ERR_ARG for a NULL ctx (message: g4v_ctx_error(NULL)). */
G4V_API g4v_status g4v_ctx_set_cache(g4v_ctx *ctx, g4v_cache *cache);

/* 1 if the last successful encode on ctx was served from its cache (a video: every frame), else 0. */
G4V_API int g4v_ctx_cache_hit(const g4v_ctx *ctx);

/* Copies r's features (n_tokens * dim floats) into dst, which holds dst_count floats.
 * G4V_ERR_ARG if it is too small or an argument is NULL. */
G4V_API g4v_status g4v_result_copy(const g4v_result *r, float *dst, size_t dst_count,
                                   char *errbuf, size_t errbuf_size);

/* The prompt span for r: boi, image x n_tokens, eoi. Writes up to cap ids into ids (may be NULL
 * with cap 0) and returns the count needed, n_tokens + 2. */
G4V_API size_t g4v_prompt_tokens(const g4v_result *r, int32_t *ids, size_t cap);

/* ---------------------------------------------------------------------------------------------
 * Video (docs/VIDEO.md)
 *
 * Gemma 4 reads a video as still frames: num_frames (default 32) frames sampled evenly by index
 * from the T decoded frames (frame k is floor(k * T / num_frames); every frame when T is
 * smaller), each resized with the image rule at the per-frame budget (default 70) and encoded by
 * the unchanged tower. Frame k is stamped index / fps seconds (fps: the stream's average rate,
 * T / its duration). In the prompt, the chat template's one <|video|> is replaced by, per frame,
 * "MM:SS <|image>" + n x "<|video|>" + "<image|>", frames joined by one space
 * (g4v_video_prompt_text); the rows go, in order, into the <|video|> positions (video_token_id).
 */
#define G4V_DEFAULT_VIDEO_BUDGET 70
#define G4V_DEFAULT_VIDEO_FRAMES 32

typedef struct g4v_video_options {
    size_t struct_size; /* set by g4v_video_options_init */
    int budget;     /* per-frame soft-token budget: 0 (default) = the checkpoint's
                       video_processor.max_soft_tokens, else 70; or one of G4V_BUDGETS */
    int num_frames; /* frames to sample: 0 (default) = the checkpoint's
                       video_processor.num_frames, else 32; or 1..1024 */
    int bf16;       /* 1: also fill features_bf16 (default 0) */
    int resize;     /* -1 (default): the model's resize; else G4V_RESIZE_PILLOW or
                       G4V_RESIZE_TORCHVISION (transformers' video processor uses torchvision) */
} g4v_video_options;

G4V_API void g4v_video_options_init_sized(g4v_video_options *opts, size_t struct_size);
static inline void g4v_video_options_init(g4v_video_options *opts) {
    g4v_video_options_init_sized(opts, sizeof *opts);
}

/* One sampled frame. All frames of a video share one target size, hence one token count. */
typedef struct g4v_video_frame {
    int64_t index;    /* its index among the video's decoded frames, 0-based */
    double timestamp; /* seconds: index / fps */
    char mmss[16];    /* its label in the prompt, "MM:SS" (minutes not capped) */
    int n_tokens;     /* soft tokens of this frame */
    int grid_w, grid_h;
    size_t first_row; /* its first row in features */
} g4v_video_frame;

/* One encoded video. Pointers are owned by the ctx, valid until the next encode call on it. */
typedef struct g4v_video_result {
    int n_frames;             /* frames sampled and encoded */
    int n_tokens;             /* rows in features: the sum of the frames' n_tokens */
    int dim;                  /* T: floats per row */
    int64_t total_frames;     /* frames in the video stream (every frame decoded and counted) */
    double fps;               /* total_frames / duration */
    double duration;          /* seconds spanned by the stream's frames */
    int src_width, src_height; /* decoded frame size */
    int width, height;        /* the frames' target size (multiples of 48) */
    int budget;               /* per-frame budget used */
    const g4v_video_frame *frames; /* [n_frames] */
    const float *features;    /* [n_tokens, T] float32: frame 0's rows, then frame 1's, ... */
    const uint16_t *features_bf16; /* same as bf16 bits; NULL unless asked */
    int32_t boi_token_id, video_token_id, eoi_token_id; /* from config.json */
    char codec[32], container[32]; /* FFmpeg's names of the decoder and the demuxer */
    double seconds;           /* wall time of the call */
} g4v_video_result;

/* Encodes a video file / buffer (MP4/MOV, MKV/WebM, AVI, MPEG-TS, FLV, Ogg with any codec
 * FFmpeg decodes). opts may be NULL. Errors name the path ("memory buffer"): G4V_ERR_IO,
 * G4V_ERR_IMAGE (not a video, corrupt or truncated, no video stream, no frame, decoder error),
 * G4V_ERR_LIMIT (max_file_bytes, max_video_frames, max_video_seconds, max_pixels,
 * max_dimension: the container's claims are checked before decoding), G4V_ERR_UNSUPPORTED (no
 * decoder, frame size changing mid-stream), G4V_ERR_ARG, G4V_ERR_NOMEM. On failure *out is
 * zeroed. */
G4V_API g4v_status g4v_encode_video_file(g4v_ctx *ctx, const char *path, const g4v_video_options *opts,
                                  g4v_video_result *out);
G4V_API g4v_status g4v_encode_video_memory(g4v_ctx *ctx, const void *bytes, size_t size,
                                    const g4v_video_options *opts, g4v_video_result *out);

/* The prompt text that replaces the video's <|video|> placeholder: per frame
 * "MM:SS <|image>" + n_tokens x "<|video|>" + "<image|>", joined by single spaces. Writes at
 * most cap bytes into buf (NUL-terminated when cap > 0; buf may be NULL with cap 0) and returns
 * the text's length without the NUL, like snprintf. */
G4V_API size_t g4v_video_prompt_text(const g4v_video_result *r, char *buf, size_t cap);

/* The token ids of frame `frame`'s special span (boi, video x n_tokens, eoi), or with frame -1
 * every frame's span one after another (the "MM:SS " text and the spaces between frames are
 * ordinary text for the tokenizer). Writes up to cap ids; returns the count needed (0 for a
 * frame out of range). */
G4V_API size_t g4v_video_prompt_tokens(const g4v_video_result *r, int frame, int32_t *ids,
                                       size_t cap);

/* FFmpeg's demuxers size some tables from a header's claim before reading them: a 1 KB MP4 can
 * make FFmpeg ask for a gigabyte in one allocation (address space it reserves but never fills).
 * This caps every single allocation FFmpeg makes in the process (its av_max_alloc) at max_bytes,
 * so such a file fails with G4V_ERR_IMAGE instead; 0 restores FFmpeg's default (2 GiB - 1).
 * Process-wide, for every FFmpeg user of the process, so libg4v never calls it on its own: a
 * program that decodes untrusted videos calls it once at start. `g4v encode` and `g4v serve` set
 * G4V_VIDEO_ALLOC_CAP; real videos need far less (the largest FFmpeg allocation is a decoded
 * plane: 32 MB for a 16-bit 4096x4096 frame). */
#define G4V_VIDEO_ALLOC_CAP ((size_t)256 << 20)
G4V_API void g4v_video_cap_allocations(size_t max_bytes);

/* Silences FFmpeg's own messages on stderr (its av_log level, process-wide like the cap above;
 * libg4v's errors already say what failed). `g4v encode` and `g4v chat` call it.
 * libg4v loads FFmpeg's libraries only when the first video is decoded (a process that never
 * decodes one does not pay their ~40 ms of loading); both settings, made before that, are applied
 * then, and at once to an FFmpeg the program has already loaded itself. A video on a machine
 * without FFmpeg's runtime libraries fails with G4V_ERR_UNSUPPORTED naming the one missing. */
G4V_API void g4v_video_quiet_ffmpeg(void);

/* 1 if bytes begin like a video container (ISO-BMFF/QuickTime, Matroska/WebM, AVI), else 0: a
 * hint for telling a video from an image before choosing the call. */
G4V_API int g4v_video_sniff(const void *bytes, size_t size);

/* ---- What programs around libg4v share with it ------------------------------------------------
 * g4v's front ends (the CLI, g4v serve, g4v chat) are clients of this header only; these are the
 * library's own code that they use too, rather than a second copy of each. */

/* Strict UTF-8 (RFC 3629: shortest form, no surrogates, at most U+10FFFF): the length (1-4) of
 * the valid sequence at s[0..n), 0 if s starts none (n = 0, a stray continuation byte, an
 * overlong form, a surrogate, above U+10FFFF, cut short). libg4v's check of PNG text; the front
 * ends' check of text they print as JSON. */
G4V_API size_t g4v_utf8_seq_len(const char *s, size_t n);

/* SHA-256 (FIPS 180-4): libg4v's, the one behind g4v_model_fingerprint and the feature cache's
 * keys, with the CPU's SHA instructions where it has them (G4V_ISA=portable: plain C). The digest
 * is the standard one. g4v_hash_state is storage the caller owns and never reads; its size is
 * frozen like g4v_result's. g4v_hash_init, then g4v_hash_update any number of times, then
 * g4v_hash_final (which writes G4V_HASH_BYTES bytes; init again to reuse the state). */
#define G4V_HASH_BYTES 32
typedef struct g4v_hash_state {
    uint64_t opaque[20];
} g4v_hash_state;
G4V_API void g4v_hash_init(g4v_hash_state *state);
G4V_API void g4v_hash_update(g4v_hash_state *state, const void *data, size_t n);
G4V_API void g4v_hash_final(g4v_hash_state *state, uint8_t digest[G4V_HASH_BYTES]);

/* libg4v parses JSON (config.json, index files, the feature cache's entries) with the system's
 * cJSON, whose every parse writes one process-wide variable (cJSON_GetErrorPtr). A program that
 * parses with cJSON in threads while libg4v may be loading a model or reading its cache holds
 * this lock around each of its own cJSON_Parse* calls (libg4v holds it around its own), so the
 * two never race. Hold it for the parse only: no g4v call may be made while holding it. */
G4V_API void g4v_json_lock(void);
G4V_API void g4v_json_unlock(void);

/* What a GGUF file says about itself, from its header only (no tensor is read), through the
 * reader g4v_model_load reads an mmproj with, at g4v_model_options' default limits. For choosing
 * files: is this an mmproj or a language model, and a Gemma 4 one (g4v's model stores ask it).
 * Strings are NUL-terminated copies, "" when the key is absent, not a string, or too long for
 * the field. Fields may be appended in later versions (g4v_gguf_read_info_sized writes only the
 * caller's sizeof, as g4v_model_get_info_sized does). */
typedef struct g4v_gguf_info {
    char architecture[64];   /* general.architecture: "clip" for an mmproj, "gemma4" for Gemma 4 */
    char type[32];           /* general.type ("model", "mmproj", ...) */
    char projector_type[64]; /* clip.projector_type, else clip.vision.projector_type ("gemma4v") */
    int64_t tensors;         /* the tensors the file holds */
    int64_t vision_tensors;  /* of them, those named v.* (a vision tower's) */
    int has_chat_template;   /* 1 if it carries tokenizer.chat_template */
} g4v_gguf_info;

/* Fills info for the GGUF file at path. G4V_ERR_IO when it cannot be read, G4V_ERR_MODEL when it
 * is not a well-formed GGUF, G4V_ERR_LIMIT over the default header limits, G4V_ERR_ARG for NULL
 * arguments or an info_size of 0. */
G4V_API g4v_status g4v_gguf_read_info_sized(const char *path, g4v_gguf_info *info,
                                            size_t info_size, char *errbuf, size_t errbuf_size);
static inline g4v_status g4v_gguf_read_info(const char *path, g4v_gguf_info *info, char *errbuf,
                                            size_t errbuf_size) {
    return g4v_gguf_read_info_sized(path, info, sizeof *info, errbuf, errbuf_size);
}

/* ---- Constants as functions, for bindings that cannot read macros (Python's ctypes) ---------- */

/* Copies the budgets (G4V_BUDGETS, ascending) into out[0 .. max-1] (out may be NULL when max is
 * 0) and returns how many there are (5). */
G4V_API int g4v_budgets(int *out, int max);
/* G4V_DEFAULT_BUDGET (280) and G4V_DEFAULT_VIDEO_BUDGET (70). */
G4V_API int g4v_default_budget(void);
G4V_API int g4v_default_video_budget(void);
/* G4V_VIDEO_ALLOC_CAP: what `g4v encode` and `g4v serve` pass to g4v_video_cap_allocations. */
G4V_API size_t g4v_video_alloc_cap(void);

#ifdef __cplusplus
}
#endif
#endif
