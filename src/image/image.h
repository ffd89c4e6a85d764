/* image.h - from image bytes to the patches the encoder eats, exactly as transformers + Pillow.
 *
 * Pipeline (docs/PREPROCESSING.md):
 *   g4v_image_decode   bytes -> (format by magic bytes) -> decode -> EXIF orientation -> RGB8
 *   g4v_target_size    (h, w, budget) -> (th, tw), multiples of 48, doubles in transformers' order
 *   g4v_image_resize   Pillow's 8-bit BICUBIC, byte for byte (skipped when the size matches), or
 *                      torch's uint8 antialiased bicubic (G4V_RESIZE_TORCH, the torchvision backend)
 *   g4v_patchify       RGB8 (th x tw) -> patches [L, 768] f32 + positions [L, 2] (x, y)
 * g4v_image_load does the first three in one call and, where it can (every format but PNG, whose
 * orientation may follow the pixels), streams decoded rows through the resize so the full-size
 * image never exists in memory; the bytes are identical to decode + target_size + resize.
 * The reference is Pillow 9.4 (Debian 12); docs/PREPROCESSING.md §9 lists what differs.
 * Limits are checked before any pixel buffer is allocated. All functions are reentrant.
 */
#ifndef G4V_IMAGE_IMAGE_H
#define G4V_IMAGE_IMAGE_H

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

/* Tightly packed RGB8 (row stride 3*width), owned: release with g4v_image_free. */
typedef struct g4v_image {
    int width, height;
    uint8_t *rgb;
} g4v_image;

/* Whose resize to reproduce (and, for g4v_patchify, whose rescale): Pillow in the pass order of
 * one of its versions (the order changes the result: docs/PREPROCESSING.md §6.4), or torch. */
typedef enum g4v_resize_order {
    G4V_RESIZE_PILLOW_9 = 0,    /* horizontal pass first always (Pillow 9.0 - 12.1) */
    G4V_RESIZE_PILLOW_12_2 = 1, /* Pillow 12.2: vertical first when h > 100*w and h shrinks */
    G4V_RESIZE_TORCH = 2,       /* torch's uint8 antialiased bicubic, as transformers' torchvision
                                   backend calls it: Pillow's weights rounded to int16 at a
                                   precision of its own; horizontal pass first always */
    G4V_RESIZE_PILLOW_13 = 3    /* Pillow >= 13.0 (default): vertical first when the height loses
                                   more than twice as many pixels as the width */
} g4v_resize_order;

typedef struct g4v_image_opts {
    uint64_t max_pixels;  /* default 178,956,970 (Pillow's decompression-bomb limit x2) */
    int max_dimension;    /* longest side; default 65,500 */
    int apply_exif;       /* default 1, as transformers' load_image */
    g4v_resize_order resize_order;
} g4v_image_opts;

void g4v_image_opts_default(g4v_image_opts *o);

/* What g4v_image_load found (optional output). */
typedef struct g4v_image_info {
    const char *format;   /* "JPEG", "PNG", "WebP", "GIF", "BMP" (static string) */
    int src_width, src_height; /* as stored in the file */
    int orientation;      /* EXIF orientation applied, 1..8 (1 when none or apply_exif == 0) */
    int width, height;    /* after orientation: the size the target size is computed from */
    int streamed;         /* 1 when rows went straight from the decoder into the resize */
} g4v_image_info;

/* Decodes JPEG/PNG/WebP/GIF/BMP (chosen by content), applies EXIF orientation if asked, converts
 * to RGB with Pillow's rules. On failure out->rgb is NULL and err says why: G4V_ERR_IMAGE for
 * corrupt or truncated data, G4V_ERR_UNSUPPORTED for a format or variant we do not decode (the
 * message names the format detected, or a fixed cap such as JPEG's 100 scans), G4V_ERR_LIMIT
 * for images over opts' max_pixels / max_dimension.
 * opts may be NULL (defaults); info may be NULL. */
int g4v_image_decode(const void *bytes, size_t n, const g4v_image_opts *opts, g4v_image *out,
                     g4v_err *err);

/* Decode + orientation + g4v_target_size(budget) + resize (opts->resize_order), byte-identical
 * to calling those in turn, with less memory and time. out receives the target-size image. */
int g4v_image_load(const void *bytes, size_t n, int budget, const g4v_image_opts *opts,
                   g4v_image *out, g4v_image_info *info, g4v_err *err);

/* Target size for a budget in G4V_BUDGETS (g4v.h); anything else is G4V_ERR_ARG. */
int g4v_target_size(int height, int width, int budget, int *th, int *tw, g4v_err *err);

/* BICUBIC resize of src (RGB8, row stride src_stride bytes) to dst (allocated here), Pillow's or
 * torch's (order). */
int g4v_image_resize(const uint8_t *src, int width, int height, size_t src_stride, int out_width,
                     int out_height, g4v_resize_order order, g4v_image *dst, g4v_err *err);

/* Patches in (dy, dx, c) order, row-major over the (height/16) x (width/16) grid; positions[l] =
 * (x, y). height, width multiples of 16. Values: the Pillow backend's (float)((double)u * (1/255.))
 * for the Pillow orders, the torchvision backend's float32 (float)u * (float)(1/255.) for
 * G4V_RESIZE_TORCH (126 of the 256 values are one ulp apart). */
void g4v_patchify(const uint8_t *rgb, int width, int height, size_t stride, g4v_resize_order rule,
                  float *patches, int32_t *positions);

void g4v_image_free(g4v_image *img);

#endif
