/* resize.c - Pillow's 8-bit BICUBIC resample (Resample.c), byte for byte, as a row stream.
 *
 * Coefficients (docs/PREPROCESSING.md §6.1-§6.2): computed in double in Pillow's order (this file
 * is built with -ffp-contract=off), quantised to 22-bit fixed point, not renormalised. Each pass
 * computes clip8((2^21 + sum p*q) >> 22) and stores uint8, so the intermediate image is rounded and
 * clipped exactly as Pillow does. A pass whose length is unchanged is skipped (its weights would be
 * 0, 1, 0: an exact copy). Pillow >= 12.2 runs the vertical pass first when h > 100*w and the
 * height shrinks (two box resizes that equal plain V-then-H passes).
 *
 * Streaming: source rows are pushed one at a time. The horizontal pass works on strips of 8 rows
 * at once (one SIMD lane per row, kernels/resize.h); the vertical pass keeps a ring of just the
 * rows its next outputs need and emits each output row as soon as they are present. Rows may
 * also arrive bottom-up (EXIF orientations 3, 4, 6, 7 while decoding), and the pass order can be
 * that of the transposed image (orientations 5..8). Memory is O(width * taps).
 */
#include "image/image_internal.h"

#include "base/alloc.h"
#include "kernels/dispatch.h"

#include <math.h>
#include <string.h>

#define PRECISION_BITS 22

static double bicubic(double x) {
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

void g4v_coeffs_free(g4v_coeffs *c) {
    if (!c) return;
    g4v_free(c->lo);
    g4v_free(c->cnt);
    g4v_free(c->q);
    memset(c, 0, sizeof *c);
}

/* torch's weight precision (UpSampleKernel.cpp, _compute_index_ranges_int16_weights): the
 * largest p <= 22 with round(wmax * 2^p) < 2^15, wmax the largest normalised weight of the axis. */
static int torch_precision(double wmax) {
    int p;
    for (p = 0; p < PRECISION_BITS; p++)
        if ((int)(0.5 + wmax * (double)(1 << (p + 1))) >= (1 << 15)) break;
    return p;
}

int g4v_coeffs_build(int n_in, int n_out, g4v_resize_order rule, g4v_coeffs *c, g4v_err *err) {
    memset(c, 0, sizeof *c);
    if (n_in <= 0 || n_out <= 0)
        return g4v_fail(err, G4V_ERR_ARG, "resize: sizes must be positive (%d -> %d)", n_in, n_out);
    /* Pillow: scale = (double)(in1 - in0) / outSize with a float32 box; exact for our sizes.
     * torch: (double)in / out (area_pixel_compute_scale): the same value. */
    double scale = (double)(float)n_in / n_out;
    double filterscale = scale < 1.0 ? 1.0 : scale;
    double support = 2.0 * filterscale;
    int ksize = (int)ceil(support) * 2 + 1;
    c->n_in = n_in;
    c->n_out = n_out;
    c->ksize = ksize;
    c->lo = g4v_malloc_array((size_t)n_out, sizeof *c->lo);
    c->cnt = g4v_malloc_array((size_t)n_out, sizeof *c->cnt);
    c->q = g4v_malloc_array((size_t)n_out * ksize, sizeof *c->q);
    /* the normalised weights of every output: torch needs their maximum before quantising */
    double *w = g4v_malloc_array((size_t)n_out * ksize, sizeof *w);
    if (!c->lo || !c->cnt || !c->q || !w) {
        g4v_free(w);
        g4v_coeffs_free(c);
        return g4v_fail(err, G4V_ERR_NOMEM, "resize: cannot allocate coefficients %d -> %d", n_in,
                        n_out);
    }
    double wmax = 0.0;
    for (int i = 0; i < n_out; i++) {
        double center = 0.0 + (i + 0.5) * scale;
        double ww = 0.0, ss = 1.0 / filterscale;
        int xmin = (int)(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        int xmax = (int)(center + support + 0.5);
        if (xmax > n_in) xmax = n_in;
        xmax -= xmin;
        if (xmax > ksize) xmax = ksize; /* cannot happen (|taps| <= 2*support+1); stay in bounds */
        double *wi = w + (size_t)i * ksize;
        for (int x = 0; x < xmax; x++) {
            double v = bicubic((x + xmin - center + 0.5) * ss);
            wi[x] = v;
            ww += v;
        }
        for (int x = 0; x < ksize; x++) {
            wi[x] = x < xmax ? (ww != 0.0 ? wi[x] / ww : wi[x]) : 0.0;
            /* torch takes the maximum over normalised rows only */
            if (x < xmax && ww != 0.0 && wi[x] > wmax) wmax = wi[x];
        }
        c->lo[i] = xmin;
        c->cnt[i] = xmax;
    }
    /* Pillow: 22 bits. torch: fewer (int16 weights), then widened to 22 bits so that the same
     * kernels compute torch's (2^(p-1) + sum) >> p exactly: (2^21 + sum * 2^(22-p)) >> 22. */
    int bits = rule == G4V_RESIZE_TORCH ? torch_precision(wmax) : PRECISION_BITS;
    int32_t widen = (int32_t)1 << (PRECISION_BITS - bits);
    c->bits = bits;
    for (size_t k = 0; k < (size_t)n_out * ksize; k++) {
        double v = w[k] * (double)(1 << bits);
        int32_t q = v < 0 ? (int32_t)(-0.5 + v) : (int32_t)(0.5 + v);
        if (rule == G4V_RESIZE_TORCH) q = (int16_t)q; /* stored as int16 (in range: |q| < 2^15) */
        c->q[k] = q * widen;
    }
    g4v_free(w);
    return G4V_OK;
}

/* ---- the streaming resizer ------------------------------------------------------------------ */

enum { TO_H, TO_V, TO_DST };

struct g4v_resizer {
    int in_w, in_h, out_w, out_h;
    int reverse, vfirst, do_h, do_v;
    int src_to;            /* where source rows go: TO_H, TO_V or TO_DST */
    int h_to_v, v_to_h;    /* HV: H feeds V; VH: V feeds H */
    g4v_coeffs cx, cy;
    const g4v_resize_kernel *k;
    uint8_t *dst;
    size_t dst_stride;
    int pushed;            /* source rows pushed so far */
    /* horizontal stage: a strip of up to LANES rows of in_w pixels */
    const uint8_t *strip[G4V_RS_LANES];
    int strip_y[G4V_RS_LANES];
    int strip_n;
    uint8_t *slots;        /* LANES rows of 3*in_w bytes */
    uint8_t *t;            /* interleaved strip */
    uint8_t *u;            /* interleaved result of the horizontal pass */
    uint8_t *spare;        /* where the unused lanes of a partial strip go */
    /* vertical stage: ring of the rows the next outputs need */
    uint8_t *ring;
    int cap;
    size_t ring_w;
    const uint8_t **vrows; /* the taps of one output row */
    int next_out;
};

static uint8_t *dst_row(g4v_resizer *r, int y) { return r->dst + (size_t)y * r->dst_stride; }
static uint8_t *ring_row(g4v_resizer *r, int y) { return r->ring + (size_t)(y % r->cap) * r->ring_w; }

static void h_add(g4v_resizer *r, const uint8_t *row, int y);

/* Emits vertical output i from the ring. */
static void v_emit(g4v_resizer *r, int i) {
    const uint8_t **rp = r->vrows;
    int lo = r->cy.lo[i], cnt = r->cy.cnt[i];
    for (int j = 0; j < cnt; j++) rp[j] = ring_row(r, lo + j);
    const int32_t *q = r->cy.q + (size_t)i * r->cy.ksize;
    if (r->v_to_h) {
        uint8_t *out = r->slots + (size_t)r->strip_n * r->in_w * 3;
        r->k->vpass(rp, q, cnt, (size_t)r->in_w * 3, out);
        h_add(r, out, i);
    } else {
        r->k->vpass(rp, q, cnt, (size_t)r->out_w * 3, dst_row(r, i));
    }
}

/* Row y of the vertical stage's input is in the ring: emit every output that is now complete. */
static void v_received(g4v_resizer *r, int y) {
    if (!r->reverse) {
        while (r->next_out < r->out_h && r->cy.lo[r->next_out] + r->cy.cnt[r->next_out] - 1 <= y)
            v_emit(r, r->next_out++);
    } else {
        while (r->next_out >= 0 && r->cy.lo[r->next_out] >= y) v_emit(r, r->next_out--);
    }
}

static void h_flush(g4v_resizer *r) {
    int n = r->strip_n;
    if (!n) return;
    const uint8_t *rows[G4V_RS_LANES];
    uint8_t *outs[G4V_RS_LANES];
    for (int l = 0; l < G4V_RS_LANES; l++) rows[l] = r->strip[l < n ? l : n - 1];
    g4v_rs_interleave(rows, (size_t)r->in_w * 3, r->t);
    r->k->hpass(r->t, &r->cx, r->u);
    for (int l = 0; l < G4V_RS_LANES; l++)
        outs[l] = l >= n ? r->spare
                  : r->h_to_v ? ring_row(r, r->strip_y[l]) : dst_row(r, r->strip_y[l]);
    g4v_rs_deinterleave(r->u, (size_t)r->out_w * 3, outs);
    r->strip_n = 0;
    if (r->h_to_v)
        for (int l = 0; l < n; l++) v_received(r, r->strip_y[l]);
}

static void h_add(g4v_resizer *r, const uint8_t *row, int y) {
    r->strip[r->strip_n] = row;
    r->strip_y[r->strip_n] = y;
    if (++r->strip_n == G4V_RS_LANES) h_flush(r);
}

static int next_y(const g4v_resizer *r) {
    return r->reverse ? r->in_h - 1 - r->pushed : r->pushed;
}

uint8_t *g4v_resizer_slot(g4v_resizer *r) {
    int y = next_y(r);
    switch (r->src_to) {
    case TO_H: return r->slots + (size_t)r->strip_n * r->in_w * 3;
    case TO_V: return ring_row(r, y);
    default: return dst_row(r, y);
    }
}

static void after_push(g4v_resizer *r) {
    r->pushed++;
    if (r->pushed == r->in_h) h_flush(r); /* the last rows of a partial strip */
}

void g4v_resizer_push_slot(g4v_resizer *r) {
    if (r->pushed >= r->in_h) return;
    int y = next_y(r);
    if (r->src_to == TO_H)
        h_add(r, r->slots + (size_t)r->strip_n * r->in_w * 3, y);
    else if (r->src_to == TO_V)
        v_received(r, y);
    after_push(r);
}

void g4v_resizer_push_ref(g4v_resizer *r, const uint8_t *row) {
    if (r->pushed >= r->in_h) return;
    int y = next_y(r);
    if (r->src_to == TO_H) {
        h_add(r, row, y);
    } else {
        memcpy(g4v_resizer_slot(r), row, (size_t)r->in_w * 3);
        if (r->src_to == TO_V) v_received(r, y);
    }
    after_push(r);
}

void g4v_resizer_free(g4v_resizer *r) {
    if (!r) return;
    g4v_coeffs_free(&r->cx);
    g4v_coeffs_free(&r->cy);
    g4v_free_large(r->slots);
    g4v_free_large(r->t);
    g4v_free_large(r->u);
    g4v_free(r->spare);
    g4v_free_large(r->ring);
    g4v_free(r->vrows);
    g4v_free(r);
}

/* Whether Pillow runs the vertical pass first, for an image of w x h (as Pillow holds it) going to
 * ow x oh (docs/PREPROCESSING.md §6.4):
 * - Pillow 9.0 - 12.1: never;
 * - Pillow 12.2 (Image.resize, PR #9524): very tall images that shrink (h > 100 w, oh < h);
 * - Pillow >= 13.0 (ImagingResampleInner): when the height loses more than twice as many pixels
 *   as the width does (h - oh > 0 and h - oh > 2 (w - ow)). */
static int vertical_first(g4v_resize_order order, int w, int h, int ow, int oh) {
    switch (order) {
    case G4V_RESIZE_PILLOW_12_2: return (long long)h > 100LL * w && oh < h;
    case G4V_RESIZE_PILLOW_13: return h - oh > 0 && (long long)(h - oh) > 2LL * (w - ow);
    default: return 0;
    }
}

int g4v_resizer_new(int in_w, int in_h, int out_w, int out_h, g4v_resize_order order, int flags,
                    uint8_t *dst, size_t dst_stride, g4v_resizer **out, g4v_err *err) {
    *out = NULL;
    if (in_w <= 0 || in_h <= 0 || out_w <= 0 || out_h <= 0)
        return g4v_fail(err, G4V_ERR_ARG, "resize: sizes must be positive (%dx%d -> %dx%d)", in_w,
                        in_h, out_w, out_h);
    g4v_resizer *r = g4v_calloc(1, sizeof *r);
    if (!r) return g4v_fail(err, G4V_ERR_NOMEM, "resize: out of memory");
    r->in_w = in_w, r->in_h = in_h, r->out_w = out_w, r->out_h = out_h;
    r->reverse = (flags & G4V_RS_REVERSE) != 0;
    r->do_h = out_w != in_w;
    r->do_v = out_h != in_h;
    if (flags & G4V_RS_TRANSPOSED) /* Pillow resizes the transposed image: swap the roles */
        r->vfirst = !vertical_first(order, in_h, in_w, out_h, out_w);
    else
        r->vfirst = vertical_first(order, in_w, in_h, out_w, out_h);
    r->dst = dst;
    r->dst_stride = dst_stride;
    r->k = g4v_kernels_current()->use[G4V_KF_RESIZE].resize;
    int st = G4V_OK;
    if (r->do_h) st = g4v_coeffs_build(in_w, out_w, order, &r->cx, err);
    if (!st && r->do_v) st = g4v_coeffs_build(in_h, out_h, order, &r->cy, err);
    if (st) {
        g4v_resizer_free(r);
        return st;
    }
    if (r->vfirst) {
        r->src_to = r->do_v ? TO_V : TO_H;
        r->v_to_h = r->do_h;
    } else {
        r->src_to = r->do_h ? TO_H : r->do_v ? TO_V : TO_DST;
        r->h_to_v = r->do_v;
    }
    if (!r->do_h && !r->do_v) r->src_to = TO_DST;
    size_t row = (size_t)in_w * 3;
    int nomem = 0;
    if (r->do_h) {
        r->slots = g4v_malloc_large(row * G4V_RS_LANES);
        r->t = g4v_malloc_large(row * G4V_RS_LANES);
        r->u = g4v_malloc_large((size_t)out_w * 3 * G4V_RS_LANES);
        r->spare = g4v_malloc((size_t)out_w * 3);
        nomem |= !r->slots || !r->t || !r->u || !r->spare;
    }
    if (r->do_v) {
        int maxcnt = 0;
        for (int i = 0; i < out_h; i++)
            if (r->cy.cnt[i] > maxcnt) maxcnt = r->cy.cnt[i];
        r->cap = maxcnt + G4V_RS_LANES;
        if (r->cap > in_h) r->cap = in_h;
        r->ring_w = r->vfirst ? row : (size_t)out_w * 3;
        r->ring = g4v_malloc_large(r->ring_w * r->cap);
        nomem |= !r->ring;
        r->next_out = r->reverse ? out_h - 1 : 0;
        r->vrows = g4v_malloc_array((size_t)maxcnt + 1, sizeof *r->vrows);
        nomem |= !r->vrows;
    }
    if (nomem) {
        g4v_resizer_free(r);
        return g4v_fail(err, G4V_ERR_NOMEM, "resize: cannot allocate buffers for %dx%d -> %dx%d",
                        in_w, in_h, out_w, out_h);
    }
    *out = r;
    return G4V_OK;
}

int g4v_image_resize(const uint8_t *src, int width, int height, size_t src_stride, int out_width,
                     int out_height, g4v_resize_order order, g4v_image *dst, g4v_err *err) {
    dst->rgb = NULL;
    dst->width = dst->height = 0;
    if (!src || width <= 0 || height <= 0 || src_stride < (size_t)width * 3)
        return g4v_fail(err, G4V_ERR_ARG, "resize: bad source (%dx%d, stride %zu)", width, height,
                        src_stride);
    if (out_width <= 0 || out_height <= 0 || out_width > 1 << 20 || out_height > 1 << 20)
        return g4v_fail(err, G4V_ERR_ARG, "resize: bad output size %dx%d", out_width, out_height);
    uint8_t *buf = g4v_malloc_large((size_t)out_width * out_height * 3);
    if (!buf) return g4v_fail(err, G4V_ERR_NOMEM, "resize: cannot allocate %dx%d RGB", out_width,
                              out_height);
    g4v_resizer *r;
    int st = g4v_resizer_new(width, height, out_width, out_height, order, 0, buf,
                             (size_t)out_width * 3, &r, err);
    if (st) {
        g4v_free_large(buf);
        return st;
    }
    for (int y = 0; y < height; y++) g4v_resizer_push_ref(r, src + (size_t)y * src_stride);
    g4v_resizer_free(r);
    dst->rgb = buf;
    dst->width = out_width;
    dst->height = out_height;
    return G4V_OK;
}
