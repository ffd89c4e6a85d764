/* image_internal.h - the pieces of src/image that talk to each other (not a public contract).
 *
 * Decoders (jpeg.c, png.c, webp.c, gif.c, bmp.c, tiff.c) turn bytes into RGB8 rows and hand them, top to
 * bottom, to a g4v_pipe (pipe.c). The pipe either keeps the whole image (then orients and resizes
 * it) or, when the EXIF orientation is known before the pixels and does not transpose, streams
 * each row straight into the row-streaming resizer (resize.c), so the full-size image is never
 * stored. The entry points (decode.c) pick the decoder and run it through the pipe
 * (g4v_pipe_run), so calls go one way: decode.c -> decoders -> pipe.c. Everything here is
 * reentrant; all allocations go through base/alloc.h.
 */
#ifndef G4V_IMAGE_INTERNAL_H
#define G4V_IMAGE_INTERNAL_H

#include "image/image.h"
#include "kernels/resize.h"

#include <stddef.h>
#include <stdint.h>

/* ---- formats (format.c) ------------------------------------------------------------------ */
typedef enum g4v_image_format {
    G4V_FMT_UNKNOWN = 0,
    G4V_FMT_JPEG,
    G4V_FMT_PNG,
    G4V_FMT_GIF,
    G4V_FMT_WEBP,
    G4V_FMT_BMP,
    G4V_FMT_OTHER, /* recognised but not decoded (AVIF, HEIF, ...); see *name */
    G4V_FMT_TIFF   /* TIFF or BigTIFF (libtiff); added last: the values above are unchanged */
} g4v_image_format;

/* Sniffs the format from the first bytes. *name gets a static display name ("TIFF",
 * "AVIF/HEIF (ISO BMFF)", ...), or "unknown". */
g4v_image_format g4v_image_sniff(const uint8_t *p, size_t n, const char **name);

/* ---- limits (pipe.c) ----------------------------------------------------------------------- */
/* G4V_ERR_LIMIT (or G4V_ERR_IMAGE for 0 sizes) when w x h is over opts' max_dimension or
 * max_pixels; the message names the setting. */
int g4v_image_check_size(long long w, long long h, const g4v_image_opts *opts, const char *fmt,
                         g4v_err *err);

/* ---- the row pipe (pipe.c) ----------------------------------------------------------------- */
typedef struct g4v_pipe g4v_pipe;

/* Orientation passed to g4v_pipe_begin when the decoder learns it only after the pixels (PNG:
 * eXIf may follow IDAT). The decoder then reports it with g4v_pipe_set_orientation. */
#define G4V_ORIENT_LATER (-100)

struct g4v_pipe_view {
    const g4v_image_opts *opts; /* never NULL */
    const char *format;         /* display name for messages */
};
const struct g4v_pipe_view *g4v_pipe_view(const g4v_pipe *p);

/* Called once by a decoder when it knows the size; checks limits and allocates. `orientation`
 * is the raw EXIF value as Pillow sees it (values other than 2..8 mean none) or
 * G4V_ORIENT_LATER. */
int g4v_pipe_begin(g4v_pipe *p, int width, int height, int orientation, g4v_err *err);
/* Buffer (3*width bytes) for the next row; rows come in order 0 .. height-1. */
uint8_t *g4v_pipe_row(g4v_pipe *p);
/* The row returned by g4v_pipe_row is complete. */
void g4v_pipe_push(g4v_pipe *p);
void g4v_pipe_set_orientation(g4v_pipe *p, int orientation);

/* ---- decoders: each calls g4v_pipe_begin once, then pushes every row ---------------------- */
typedef int g4v_decoder_fn(const uint8_t *b, size_t n, g4v_pipe *p, g4v_err *err);

/* Runs dec over bytes[0..n) through a pipe of its own, resizing to budget's target size unless
 * budget is 0 (format names the format in messages and info), and moves the image to out; info
 * (optional) gets what was found. For the entry points (decode.c): the pipe never names a
 * decoder. */
int g4v_pipe_run(const uint8_t *bytes, size_t n, g4v_decoder_fn *dec, const char *format,
                 int budget, const g4v_image_opts *opts, g4v_image *out, g4v_image_info *info,
                 g4v_err *err);

int g4v_decode_jpeg(const uint8_t *b, size_t n, g4v_pipe *p, g4v_err *err);
int g4v_decode_png(const uint8_t *b, size_t n, g4v_pipe *p, g4v_err *err);
int g4v_decode_webp(const uint8_t *b, size_t n, g4v_pipe *p, g4v_err *err);
int g4v_decode_gif(const uint8_t *b, size_t n, g4v_pipe *p, g4v_err *err);
int g4v_decode_bmp(const uint8_t *b, size_t n, g4v_pipe *p, g4v_err *err);
int g4v_decode_tiff(const uint8_t *b, size_t n, g4v_pipe *p, g4v_err *err);

/* ---- EXIF / XMP orientation (exif.c) ------------------------------------------------------- */
#define G4V_EXIF_ABSENT (-1)
/* The value Pillow 9.4's Image.getexif().get(0x0112) compares equal to, from an EXIF blob (with
 * or without the "Exif\0\0" prefix): 1..8 for those integers, 0 when the tag is present but is
 * no integer in 1..8 (so no transform and no XMP fallback), G4V_EXIF_ABSENT when IFD0 does not
 * hold the tag or the blob is not readable TIFF. Fully bounds-checked. */
int g4v_exif_orientation(const uint8_t *p, size_t n);
/* Pillow 9.4's XMP fallback: the digit after the first `tiff:Orientation="` or
 * `tiff:Orientation>`, or G4V_EXIF_ABSENT. */
int g4v_xmp_orientation(const char *s, size_t n);
/* ImageMagick "Raw profile type exif" text: lines after the third hold hex; decodes into out
 * (allocated, g4v_free) and returns its length, -1 when the text is not valid hex, or -2 when
 * out of memory. */
long g4v_raw_profile_decode(const char *s, size_t n, uint8_t **out);

/* ---- orientation transform (orient.c) ------------------------------------------------------ */
/* out = Pillow's exif_transpose of in for orientation o in 2..8 (new buffer); o elsewhere
 * copies nothing and returns in's buffer in out (out->rgb == in->rgb). */
int g4v_orient(const g4v_image *in, int o, g4v_image *out, g4v_err *err);

/* ---- Pillow mode -> RGB conversions (convert.c); n = pixels -------------------------------- */
void g4v_cvt_gray(const uint8_t *in, uint8_t *out, int n);
void g4v_cvt_gray16be(const uint8_t *in, uint8_t *out, int n);       /* I: min(v, 255) */
void g4v_cvt_gray_alpha(const uint8_t *in, uint8_t *out, int n, int bytes_per_sample);
void g4v_cvt_rgba(const uint8_t *in, uint8_t *out, int n);           /* drop alpha */
void g4v_cvt_rgb16be(const uint8_t *in, uint8_t *out, int n, int channels); /* high byte */
void g4v_cvt_cmyk_inverted(const uint8_t *in, uint8_t *out, int n);  /* JPEG "CMYK;I" */
/* 256-entry palette as Pillow 9.4 builds it: entries [0, count) from src (stride bytes each,
 * order "RGB" or "BGR"), the rest a gray ramp (i, i, i). */
void g4v_palette_build(uint8_t pal[768], const uint8_t *src, int count, int stride, int bgr);
void g4v_cvt_indexed(const uint8_t *idx, uint8_t *out, int n, const uint8_t pal[768]);

/* ---- Pillow's resampler (resize.c) --------------------------------------------------------- */
/* Coefficients g4v_coeffs (kernels/resize.h): per output index, the taps and 22-bit weights;
 * rule G4V_RESIZE_TORCH gives torch's int16 weights (widened to 22 bits), any other Pillow's. */
int g4v_coeffs_build(int n_in, int n_out, g4v_resize_order rule, g4v_coeffs *c, g4v_err *err);
void g4v_coeffs_free(g4v_coeffs *c);

/* Row-streaming resize into dst (out_h rows of 3*out_w bytes, stride dst_stride, caller's
 * memory). Flags: G4V_RS_REVERSE: source rows are pushed in order in_h-1..0 instead of
 * 0..in_h-1. G4V_RS_TRANSPOSED: the caller will transpose the result (EXIF orientations 5..8),
 * so Pillow's pass order is that of the transposed image: its horizontal pass, which runs
 * first, is our vertical one. Transposing commutes with each 1-D pass, so the transposed result
 * is byte-identical to resizing the transposed source. */
#define G4V_RS_REVERSE 1
#define G4V_RS_TRANSPOSED 2
typedef struct g4v_resizer g4v_resizer;
int g4v_resizer_new(int in_w, int in_h, int out_w, int out_h, g4v_resize_order order, int flags,
                    uint8_t *dst, size_t dst_stride, g4v_resizer **out, g4v_err *err);
/* A buffer the caller fills with the next source row, then g4v_resizer_push_slot. */
uint8_t *g4v_resizer_slot(g4v_resizer *r);
void g4v_resizer_push_slot(g4v_resizer *r);
/* Pushes a row that stays valid and unchanged until g4v_resizer_free. */
void g4v_resizer_push_ref(g4v_resizer *r, const uint8_t *row);
void g4v_resizer_free(g4v_resizer *r);

/* ---- the inner loops are kernels (kernels/resize.h), chosen per resizer from the kernel table;
 * resize_interleave.c moves rows into and out of their interleaved layout. */
/* Interleaves LANES rows of n bytes: t[k*LANES + l] = rows[l][k]; and back. */
void g4v_rs_interleave(const uint8_t *const *rows, size_t n, uint8_t *t);
void g4v_rs_deinterleave(const uint8_t *t, size_t n, uint8_t *const *rows);

#endif
