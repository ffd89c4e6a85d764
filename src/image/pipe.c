/* pipe.c - the row pipe between the decoders and the resize (the entry points that pick a
 * decoder and run it through here, g4v_pipe_run, are decode.c's).
 *
 * A decoder calls g4v_pipe_begin(w, h, orientation) and then fills rows top to bottom. Two modes:
 *  - full: rows land in a whole RGB image; at the end it is oriented (EXIF) and, for
 *    g4v_image_load, resized. Used for plain decoding and when the decoder learns the
 *    orientation only after the pixels (PNG: eXIf may follow IDAT).
 *  - streaming (g4v_image_load with the orientation known up front, e.g. JPEG): each row goes
 *    straight into the row-streaming resizer: mirrored for orientations 2, 3, 7, 8, pushed
 *    bottom-up for 3, 4, 6, 7. For the transposing orientations 5..8 the resizer runs Pillow's
 *    pass order of the transposed image and the small result is transposed at the end. Flips
 *    only reorder whole rows or pixels within a row and transposing commutes with each 1-D
 *    pass, so the bytes equal orienting first and resizing after (tests check all eight).
 * Limits (pixels, longest side) are checked in g4v_pipe_begin before anything is allocated.
 */
#include "image/image_internal.h"

#include "base/alloc.h"

#include <string.h>

struct g4v_pipe {
    struct g4v_pipe_view view;
    int budget;            /* 0: decode only */
    int begun, w, h, y;
    int orientation;       /* raw value; G4V_ORIENT_LATER until known */
    int streaming;
    g4v_image full;        /* full mode */
    uint8_t *scratch;      /* streaming with a mirrored row */
    int mirror, transposed;
    g4v_resizer *rs;
    g4v_image out;         /* streaming: the resized image (before the final transpose) */
    int ow, oh;            /* oriented size */
};

void g4v_image_free(g4v_image *img) {
    if (!img) return;
    g4v_free_large(img->rgb);
    img->rgb = NULL;
    img->width = img->height = 0;
}

const struct g4v_pipe_view *g4v_pipe_view(const g4v_pipe *p) { return &p->view; }

int g4v_image_check_size(long long w, long long h, const g4v_image_opts *o, const char *fmt,
                         g4v_err *err) {
    if (w <= 0 || h <= 0)
        return g4v_fail(err, G4V_ERR_IMAGE, "%s: invalid image size %lldx%lld", fmt, w, h);
    if (w > o->max_dimension || h > o->max_dimension)
        return g4v_fail(err, G4V_ERR_LIMIT,
                        "%s: image is %lldx%lld, over the maximum dimension %d (max_dimension)",
                        fmt, w, h, o->max_dimension);
    if ((unsigned long long)w * (unsigned long long)h > o->max_pixels)
        return g4v_fail(err, G4V_ERR_LIMIT,
                        "%s: image is %lldx%lld = %llu pixels, over the limit of %llu pixels "
                        "(max_pixels, a decompression-bomb guard)",
                        fmt, w, h, (unsigned long long)w * (unsigned long long)h,
                        (unsigned long long)o->max_pixels);
    return G4V_OK;
}

static int effective_orientation(const g4v_pipe *p, int raw) {
    if (!p->view.opts->apply_exif) return 1;
    return raw >= 2 && raw <= 8 ? raw : 1;
}

int g4v_pipe_begin(g4v_pipe *p, int w, int h, int orientation, g4v_err *err) {
    if (p->begun) return g4v_fail(err, G4V_ERR_INTERNAL, "%s: decoder began twice", p->view.format);
    int st = g4v_image_check_size(w, h, p->view.opts, p->view.format, err);
    if (st) return st;
    p->begun = 1;
    p->w = w, p->h = h, p->y = 0;
    p->orientation = orientation;
    int o = orientation == G4V_ORIENT_LATER ? 0 : effective_orientation(p, orientation);
    if (p->budget && o >= 1) {
        p->transposed = o >= 5;
        p->ow = p->transposed ? h : w, p->oh = p->transposed ? w : h;
        int th, tw;
        st = g4v_target_size(p->oh, p->ow, p->budget, &th, &tw, err);
        if (st) return st;
        /* the resize works in the source's layout: a transposed target */
        int rw = p->transposed ? th : tw, rh = p->transposed ? tw : th;
        p->out.rgb = g4v_malloc_large((size_t)rw * rh * 3);
        if (!p->out.rgb)
            return g4v_fail(err, G4V_ERR_NOMEM, "%s: cannot allocate the %dx%d output",
                            p->view.format, rw, rh);
        p->out.width = rw, p->out.height = rh;
        int flags = (o == 3 || o == 4 || o == 6 || o == 7 ? G4V_RS_REVERSE : 0) |
                    (p->transposed ? G4V_RS_TRANSPOSED : 0);
        st = g4v_resizer_new(w, h, rw, rh, p->view.opts->resize_order, flags, p->out.rgb,
                             (size_t)rw * 3, &p->rs, err);
        if (st) return st;
        p->mirror = o == 2 || o == 3 || o == 7 || o == 8;
        if (p->mirror) {
            p->scratch = g4v_malloc((size_t)w * 3);
            if (!p->scratch)
                return g4v_fail(err, G4V_ERR_NOMEM, "%s: out of memory", p->view.format);
        }
        p->streaming = 1;
        return G4V_OK;
    }
    p->full.rgb = g4v_malloc_large((size_t)w * h * 3);
    if (!p->full.rgb)
        return g4v_fail(err, G4V_ERR_NOMEM, "%s: cannot allocate %dx%d RGB (%zu bytes)",
                        p->view.format, w, h, (size_t)w * h * 3);
    p->full.width = w, p->full.height = h;
    return G4V_OK;
}

uint8_t *g4v_pipe_row(g4v_pipe *p) {
    if (p->y >= p->h) return NULL; /* decoders push exactly h rows */
    if (!p->streaming) return p->full.rgb + (size_t)p->y * p->w * 3;
    return p->mirror ? p->scratch : g4v_resizer_slot(p->rs);
}

void g4v_pipe_push(g4v_pipe *p) {
    if (p->y >= p->h) return;
    if (p->streaming) {
        if (p->mirror) {
            uint8_t *d = g4v_resizer_slot(p->rs);
            const uint8_t *s = p->scratch;
            for (int x = 0, w = p->w; x < w; x++) memcpy(d + 3 * x, s + 3 * (w - 1 - x), 3);
        }
        g4v_resizer_push_slot(p->rs);
    }
    p->y++;
}

void g4v_pipe_set_orientation(g4v_pipe *p, int orientation) { p->orientation = orientation; }

static void pipe_release(g4v_pipe *p) {
    g4v_image_free(&p->full);
    g4v_image_free(&p->out);
    g4v_free(p->scratch);
    g4v_resizer_free(p->rs);
    p->scratch = NULL;
    p->rs = NULL;
}

/* Streaming mode: the resize already happened row by row; transposing orientations (5..8) still
 * need the small result transposed. Moves the image to out. */
static int finish_streamed(g4v_pipe *p, g4v_image *out, g4v_err *err) {
    if (p->transposed) {
        g4v_image t;
        int st = g4v_orient(&p->out, 5, &t, err); /* 5 = transpose */
        if (st) return st;
        g4v_image_free(&p->out);
        p->out = t;
    }
    *out = p->out;
    p->out.rgb = NULL;
    return G4V_OK;
}

/* Full mode: orients the whole image by o and, with a budget, resizes it to its target size.
 * Moves the image to out. */
static int finish_full(g4v_pipe *p, int o, g4v_image *out, g4v_err *err) {
    g4v_image oriented;
    int st = g4v_orient(&p->full, o, &oriented, err);
    if (st) return st;
    if (oriented.rgb != p->full.rgb) {
        g4v_image_free(&p->full);
        p->full = oriented;
    }
    if (p->budget) {
        int th, tw;
        st = g4v_target_size(p->full.height, p->full.width, p->budget, &th, &tw, err);
        if (st) return st;
        if (th != p->full.height || tw != p->full.width) {
            g4v_image resized;
            st = g4v_image_resize(p->full.rgb, p->full.width, p->full.height,
                                  (size_t)p->full.width * 3, tw, th, p->view.opts->resize_order,
                                  &resized, err);
            if (st) return st;
            g4v_image_free(&p->full);
            p->full = resized;
        }
    }
    *out = p->full;
    p->full.rgb = NULL;
    return G4V_OK;
}

/* image_internal.h. Every exit after the decoder ran releases the pipe in one place. */
int g4v_pipe_run(const uint8_t *bytes, size_t n, g4v_decoder_fn *dec, const char *format,
                 int budget, const g4v_image_opts *opts, g4v_image *out, g4v_image_info *info,
                 g4v_err *err) {
    g4v_pipe p;
    memset(&p, 0, sizeof p);
    p.view.opts = opts;
    p.view.format = format;
    p.budget = budget;
    p.orientation = G4V_ORIENT_LATER;
    int st = dec(bytes, n, &p, err);
    if (!st && (!p.begun || p.y != p.h))
        st = g4v_fail(err, G4V_ERR_INTERNAL, "%s: decoder delivered %d of %d rows", format, p.y,
                      p.h);
    if (!st) {
        int o = effective_orientation(&p, p.orientation == G4V_ORIENT_LATER ? 1 : p.orientation);
        if (info) {
            info->format = format;
            info->src_width = p.w, info->src_height = p.h;
            info->orientation = o;
            info->width = o >= 5 ? p.h : p.w;
            info->height = o >= 5 ? p.w : p.h;
            info->streamed = p.streaming;
        }
        st = p.streaming ? finish_streamed(&p, out, err) : finish_full(&p, o, out, err);
    }
    pipe_release(&p);
    return st;
}
