/* png.c - PNG via libpng, mapped to RGB the way Pillow 9.4 maps its own PNG modes.
 *
 * Pillow decodes PNG itself; libpng gives the same samples when asked for nothing but unpacking
 * (docs/PREPROCESSING.md §2.3, §3): gray 1/2/4-bit expanded by bit replication, 16-bit samples kept
 * and then converted as Pillow does (gray saturates, colour keeps the high byte), palette indices
 * looked up in a Pillow 9.4 palette (gray ramp past the PLTE), tRNS/gAMA/iCCP/sBIT ignored, alpha
 * dropped. Orientation (Pillow 9.4 exif_transpose on a freshly opened PNG): the EXIF is the last
 * eXIf chunk, else an ImageMagick "Raw profile type exif" text chunk; failing a tag there, XMP
 * `tiff:Orientation` in a "XML:com.adobe.xmp" text chunk. Pillow reads the chunks after IDAT only
 * when no eXIf came before it (getexif() loads the image only then), so an eXIf before IDAT hides
 * every chunk after IDAT. A file cut after its last IDAT still decodes (Pillow reads that tail
 * leniently too).
 * Not replicated: a tEXt chunk keyed "exif" (Pillow uses it as raw EXIF; vanishingly rare).
 * Errors: libpng's png_error longjmps back here; running out of bytes is an error. libpng's own
 * allocations go through base/alloc.h too (png_create_read_struct_2), so they obey fault
 * injection and a failed one is reported as G4V_ERR_NOMEM.
 */
#include "image/image_internal.h"

#include "base/alloc.h"
#include "base/utf8.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <png.h>

typedef struct {
    const uint8_t *b;
    size_t n, pos;
    g4v_pipe *pipe;
    g4v_err *err;
    int status;          /* set when we fail ourselves (limits, memory) */
    int in_tail;         /* reading the chunks after IDAT */
    char msg[256];
    uint8_t *exif[2];    /* last eXIf payload before [0] and after [1] the image data */
    size_t exif_len[2];
    int n_text_before;   /* text chunks seen before the image data */
    uint8_t *raw, *row;  /* interlaced image / one row */
    png_bytep *rows;
    size_t alloc_max;    /* the largest allocation libpng may make (see on_malloc) */
} png_ctx;

static void on_error(png_structp png, png_const_charp msg) {
    png_ctx *c = png_get_error_ptr(png);
    snprintf(c->msg, sizeof c->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg; /* ancillary-chunk trouble: Pillow ignores it as well */
}

/* libpng's allocator. png_malloc errors out on NULL, png_malloc_warn goes on without the chunk;
 * either way the status says why, and an out-of-memory decode fails (g4v_decode_png). libpng
 * needs at most a row (8 bytes x the widest side allowed) or one ancillary chunk (1 MB,
 * png_set_chunk_malloc_max) at once, but it allocates a text chunk's buffer from its length
 * field before reading it (the "too large" check there is only a warning): a 248-byte file whose
 * zTXt claimed 1.6 GB made it ask for 1.6 GB (found by fuzz_image). Such requests are refused
 * here; libpng then skips the chunk, or fails with this status (G4V_ERR_IMAGE: no caller
 * setting raises the cap, and a real chunk that large has no pixels in it). */
static png_voidp on_malloc(png_structp png, png_alloc_size_t n) {
    png_ctx *c = png_get_mem_ptr(png);
    if (c && n > c->alloc_max) {
        if (!c->status)
            c->status = g4v_fail(c->err, G4V_ERR_IMAGE,
                                 "PNG: a chunk needs %zu bytes, over the %zu-byte limit (corrupt "
                                 "or hostile chunk length)",
                                 (size_t)n, c->alloc_max);
        return NULL;
    }
    void *p = g4v_malloc(n);
    if (!p && c && !c->status)
        c->status = g4v_fail(c->err, G4V_ERR_NOMEM, "PNG: out of memory (%zu bytes for libpng)",
                             (size_t)n);
    return p;
}

static void on_free(png_structp png, png_voidp p) {
    (void)png;
    g4v_free(p);
}

static void on_read(png_structp png, png_bytep out, size_t len) {
    png_ctx *c = png_get_io_ptr(png);
    if (len > c->n - c->pos) png_error(png, "unexpected end of data (truncated file?)");
    memcpy(out, c->b + c->pos, len);
    c->pos += len;
}

static int on_chunk(png_structp png, png_unknown_chunkp ch) {
    png_ctx *c = png_get_user_chunk_ptr(png);
    if (memcmp(ch->name, "eXIf", 4) != 0) return 0; /* libpng's default handling */
    uint8_t *copy = g4v_malloc(ch->size ? ch->size : 1);
    if (!copy) { /* the orientation would be lost: fail once the pixels are read */
        if (!c->status)
            c->status = g4v_fail(c->err, G4V_ERR_NOMEM, "PNG: out of memory for an eXIf chunk");
        return 1;
    }
    if (ch->size) memcpy(copy, ch->data, ch->size);
    int k = c->in_tail;
    g4v_free(c->exif[k]);
    c->exif[k] = copy; /* Pillow: every eXIf overwrites info["exif"]; the last one wins */
    c->exif_len[k] = ch->size;
    return 1;
}

static int png_orientation(png_ctx *c, png_structp png, png_infop info) {
    png_textp text = NULL;
    int n = 0;
    png_get_text(png, info, &text, &n);
    int pre = c->exif[0] != NULL; /* then Pillow never looks past IDAT */
    if (pre && n > c->n_text_before) n = c->n_text_before;
    const png_text *xmp = NULL, *raw = NULL;
    for (int i = 0; i < n; i++) {
        if (!text[i].key) continue;
        /* Pillow decodes iTXt as strict UTF-8 and drops the chunk when that fails. */
        int itxt = text[i].compression >= PNG_ITXT_COMPRESSION_NONE;
        if (itxt && !g4v_utf8_valid(text[i].text, text[i].itxt_length)) continue;
        if (!strcmp(text[i].key, "XML:com.adobe.xmp")) xmp = &text[i];
        if (!strcmp(text[i].key, "Raw profile type exif")) raw = &text[i];
    }
    int o = G4V_EXIF_ABSENT;
    if (pre || c->exif[1]) {
        o = g4v_exif_orientation(c->exif[!pre], c->exif_len[!pre]);
    } else if (raw) {
        size_t len = raw->compression >= PNG_ITXT_COMPRESSION_NONE ? raw->itxt_length
                                                                   : raw->text_length;
        uint8_t *blob = NULL;
        long m = g4v_raw_profile_decode(raw->text, len, &blob);
        if (m == -2 && !c->status)
            c->status = g4v_fail(c->err, G4V_ERR_NOMEM, "PNG: out of memory for a raw profile");
        if (m > 0) o = g4v_exif_orientation(blob, (size_t)m);
        g4v_free(blob);
    }
    if (o == G4V_EXIF_ABSENT && xmp) {
        size_t len = xmp->compression >= PNG_ITXT_COMPRESSION_NONE ? xmp->itxt_length
                                                                   : xmp->text_length;
        o = g4v_xmp_orientation(xmp->text, len);
    }
    return o;
}

static void convert_row(const uint8_t *in, uint8_t *out, int w, int color, int depth,
                        const uint8_t pal[768]) {
    switch (color) {
    case PNG_COLOR_TYPE_GRAY:
        if (depth == 16)
            g4v_cvt_gray16be(in, out, w);
        else
            g4v_cvt_gray(in, out, w);
        break;
    case PNG_COLOR_TYPE_GRAY_ALPHA: g4v_cvt_gray_alpha(in, out, w, depth / 8); break;
    case PNG_COLOR_TYPE_RGB:
        if (depth == 16)
            g4v_cvt_rgb16be(in, out, w, 3);
        else
            memcpy(out, in, (size_t)w * 3);
        break;
    case PNG_COLOR_TYPE_RGB_ALPHA:
        if (depth == 16)
            g4v_cvt_rgb16be(in, out, w, 4);
        else
            g4v_cvt_rgba(in, out, w);
        break;
    default: g4v_cvt_indexed(in, out, w, pal); break; /* palette */
    }
}

/* Everything that may longjmp; resources live in *c so the caller can free them. */
static int decode(png_ctx *c, png_structp png, png_infop info) {
    const struct g4v_pipe_view *v = g4v_pipe_view(c->pipe);
    png_set_read_fn(png, c, on_read);
    /* Our own limits give the clearer message; libpng's defaults (1e6 px) would fire first. */
    png_set_user_limits(png, 0x7fffffffL, 0x7fffffffL);
    /* Text bombs: libpng's defaults (8 MB per ancillary chunk, 1000 of them) let a 771 KB file of
     * 100 zTXt chunks take 790 MB and 10 s. Pillow decompresses at most 1 MB per text chunk
     * (MAX_TEXT_CHUNK; larger refuses the file) and keeps at most 64 MB of text; 1 MB x 64
     * chunks bounds us the same way. libpng drops a text chunk that inflates past 1 MB (Pillow
     * refuses the file) and any ancillary chunk past the 64th; a chunk stored larger than 1 MB
     * (a huge eXIf or tEXt) is an error. */
    png_set_chunk_malloc_max(png, (png_alloc_size_t)1 << 20);
    png_set_chunk_cache_max(png, 64);
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_ALWAYS, (png_const_bytep) "eXIf", 1);
    png_set_read_user_chunk_fn(png, c, on_chunk);
    png_read_info(png, info);
    png_textp text;
    c->n_text_before = png_get_text(png, info, &text, NULL);
    png_uint_32 w32, h32;
    int depth, color, interlace;
    png_get_IHDR(png, info, &w32, &h32, &depth, &color, &interlace, NULL, NULL);
    int st = g4v_image_check_size(w32, h32, v->opts, "PNG", c->err);
    if (st) return c->status = st;
    int w = (int)w32, h = (int)h32;
    uint8_t pal[768];
    if (color == PNG_COLOR_TYPE_PALETTE) {
        png_colorp plte = NULL;
        int count = 0;
        png_get_PLTE(png, info, &plte, &count);
        g4v_palette_build(pal, plte ? (const uint8_t *)plte : pal, plte ? count : 0, 3, 0);
        if (depth < 8) png_set_packing(png);
    } else if (color == PNG_COLOR_TYPE_GRAY && depth < 8) {
        png_set_expand_gray_1_2_4_to_8(png);
    }
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    st = g4v_pipe_begin(c->pipe, w, h, G4V_ORIENT_LATER, c->err);
    if (st) return c->status = st;
    if (passes > 1) {
        c->raw = g4v_malloc_large(rowbytes * h);
        c->rows = g4v_malloc_array((size_t)h, sizeof *c->rows);
        if (!c->raw || !c->rows)
            return c->status = g4v_fail(c->err, G4V_ERR_NOMEM,
                                        "PNG: cannot allocate %zu bytes for an interlaced image",
                                        rowbytes * h);
        for (int y = 0; y < h; y++) c->rows[y] = c->raw + rowbytes * y;
        png_read_image(png, c->rows);
        for (int y = 0; y < h; y++) {
            convert_row(c->rows[y], g4v_pipe_row(c->pipe), w, color, depth, pal);
            g4v_pipe_push(c->pipe);
        }
    } else {
        c->row = g4v_malloc(rowbytes);
        if (!c->row) return c->status = g4v_fail(c->err, G4V_ERR_NOMEM, "PNG: out of memory");
        for (int y = 0; y < h; y++) {
            png_read_row(png, c->row, NULL);
            convert_row(c->row, g4v_pipe_row(c->pipe), w, color, depth, pal);
            g4v_pipe_push(c->pipe);
        }
    }
    c->in_tail = 1;
    png_read_end(png, info);
    return G4V_OK;
}

int g4v_decode_png(const uint8_t *b, size_t n, g4v_pipe *p, g4v_err *err) {
    png_ctx c;
    memset(&c, 0, sizeof c);
    c.b = b, c.n = n, c.pipe = p, c.err = err;
    c.alloc_max = ((size_t)2 << 20) + (size_t)8 * (size_t)g4v_pipe_view(p)->opts->max_dimension;
    png_structp png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &c, on_error, on_warning,
                                               &c, on_malloc, on_free);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int st;
    if (!png || !info) {
        st = g4v_fail(err, G4V_ERR_NOMEM, "PNG: cannot create the libpng decoder");
    } else if (setjmp(png_jmpbuf(png))) {
        if (c.status)
            st = c.status;
        else if (c.in_tail) /* every row is decoded; only trailing chunks are damaged */
            st = G4V_OK;
        else
            st = g4v_fail(err, G4V_ERR_IMAGE, "PNG: %s", c.msg);
    } else {
        st = decode(&c, png, info);
    }
    if (!st) g4v_pipe_set_orientation(p, png_orientation(&c, png, info));
    /* libpng goes on without a chunk it could not allocate (and so do we for eXIf): the pixels
     * are complete but the orientation may be missing, so a decode that ran out of memory fails
     * rather than return a differently oriented image. */
    if (!st && c.status == G4V_ERR_NOMEM) st = c.status;
    png_destroy_read_struct(png ? &png : NULL, info ? &info : NULL, NULL);
    g4v_free(c.exif[0]);
    g4v_free(c.exif[1]);
    g4v_free(c.row);
    g4v_free(c.rows);
    g4v_free_large(c.raw);
    return st;
}
