/* workspace.c - per-caller scratch for the forward pass.
 * One block, grown (never shrunk) to the largest pass (image or batch of images) seen and then
 * reused, so the hot path does not allocate (fresh pages are slow to fault in, docs/ARCHITECTURE.md
 * §5). Only the residual stream and one layer's keys and values hold every patch; the rest holds
 * one chunk of rows, the attention and MLP halves sharing it, so memory grows with L only as D + 2
 * Hkv d floats per patch (9.2 KB for e4b, 13.8 KB for the 31B tower), or, where the FAST attention
 * keeps the keys and values in its own bf16 form instead of an f32 copy, D floats + 2 Hkv d bf16
 * (6.1 KB, 9.2 KB). Sizes are computed with overflow checks before anything is allocated. */
#include "encoder_internal.h"

#include "base/alloc.h"
#include "kernels/kernels.h"

#include <stdint.h>

struct g4v_workspace {
    void *buf;
    size_t cap; /* bytes */
};

g4v_workspace *g4v_workspace_create(void) {
    return g4v_calloc(1, sizeof(g4v_workspace));
}

void g4v_workspace_free(g4v_workspace *ws) {
    if (!ws) return;
    g4v_free_large(ws->buf);
    g4v_free(ws);
}

void *g4v_workspace_block(g4v_workspace *ws, size_t bytes) {
    if (bytes > ws->cap) {
        g4v_free_large(ws->buf);
        ws->cap = 0;
        ws->buf = g4v_malloc_large(bytes);
        if (!ws->buf) return NULL;
        ws->cap = bytes;
    }
    return ws->buf;
}

/* Running byte offset with overflow detection; every piece starts 64-byte aligned. */
typedef struct {
    size_t off;
    int overflow;
} layout;

static size_t mul3(size_t a, size_t b, size_t c, int *overflow) {
    size_t r;
    if (__builtin_mul_overflow(a, b, &r) || __builtin_mul_overflow(r, c, &r)) {
        *overflow = 1;
        return 0;
    }
    return r;
}

static size_t take(layout *lo, size_t bytes) {
    size_t start = lo->off, end;
    if (__builtin_add_overflow(start, bytes, &end) || __builtin_add_overflow(end, 63, &end)) {
        lo->overflow = 1;
        return 0;
    }
    lo->off = end & ~(size_t)63;
    return start;
}

int g4v_workspace_reserve(g4v_workspace *ws, const g4v_vision_config *c, const enc_shape *sh,
                          int nworkers, int chunk_rows, enc_buffers *b, g4v_err *err) {
    int of = 0;
    size_t L = sh->rows, N = sh->tokens, nseg = sh->images;
    size_t D = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    size_t qd = (size_t)c->num_heads * (size_t)c->head_dim;
    size_t kvd = (size_t)c->num_kv_heads * (size_t)c->head_dim;
    size_t pdim = (size_t)3 * (size_t)c->patch_size * (size_t)c->patch_size;
    size_t f = sizeof(float);

    /* Chunk rows: at most chunk_rows, equal chunks, rounded up to whole 96-query attention
     * blocks when chunks are that large. The chunk region holds a [C, D], then the largest of the
     * phases' buffers. */
    size_t cmax = chunk_rows > 0 ? (size_t)chunk_rows : 1;
    size_t nchunks = L ? (L + cmax - 1) / cmax : 1;
    size_t C = L ? (L + nchunks - 1) / nchunks : 1, up = (C + 95) / 96 * 96;
    if (nchunks > 1 && up <= cmax) C = up;
    size_t width = 2 * qd;
    if (2 * kvd > width) width = 2 * kvd;
    if (2 * I > width) width = 2 * I;
    if (pdim > width) width = pdim;
    size_t maxside = (size_t)sh->max_side;
    size_t rope_b = mul3(maxside, (size_t)c->head_dim / 4, f, &of);

    layout lo = {0, 0};
    size_t o_h = take(&lo, mul3(L, D, f, &of));
    /* the f32 keys and values of all patches, unless the attention keeps its own form of them */
    size_t kv_f32 = sh->kv_bytes && !sh->kv_f32 ? 0 : mul3(L, kvd, f, &of);
    size_t o_keys = take(&lo, kv_f32);
    size_t o_values = take(&lo, kv_f32);
    size_t o_a = take(&lo, mul3(C, D, f, &of));
    size_t o_chunk = take(&lo, mul3(C, width, f, &of));
    size_t o_pooled = take(&lo, mul3(N, D, f, &of));
    size_t o_pos = take(&lo, mul3(L, 2, sizeof(int32_t), &of));
    size_t o_cos = take(&lo, rope_b);
    size_t o_sin = take(&lo, rope_b);
    size_t o_scr =
        take(&lo, mul3((size_t)nworkers, g4v_attention_scratch_floats(c->head_dim), f, &of));
    size_t o_seg = take(&lo, mul3(nseg, sizeof(enc_segment), 1, &of));
    size_t o_kvp = take(&lo, sh->kv_bytes);
    if (of || lo.overflow)
        return g4v_fail(err, G4V_ERR_NOMEM,
                        "encoder workspace: %zu patches need more memory than can be addressed", L);

    char *base = g4v_workspace_block(ws, lo.off);
    if (!base)
        return g4v_fail(err, G4V_ERR_NOMEM,
                        "encoder workspace: out of memory allocating %zu MB for %zu patches",
                        lo.off >> 20, L);
    b->h = (float *)(base + o_h);
    b->keys = kv_f32 ? (float *)(base + o_keys) : NULL;
    b->values = kv_f32 ? (float *)(base + o_values) : NULL;
    b->chunk_rows = C;
    b->a = (float *)(base + o_a);
    float *ch = (float *)(base + o_chunk);
    b->q = ch;
    b->att = b->q + C * qd;
    b->k = ch;
    b->v = b->k + C * kvd;
    b->gate = ch;
    b->up = b->gate + C * I;
    b->patches = ch;
    b->pooled = (float *)(base + o_pooled);
    b->pos = (int32_t *)(base + o_pos);
    b->rope_cos = (float *)(base + o_cos);
    b->rope_sin = (float *)(base + o_sin);
    b->attn_scratch = (float *)(base + o_scr);
    b->seg = (enc_segment *)(base + o_seg);
    b->kv_prepared = sh->kv_bytes ? base + o_kvp : NULL;
    return G4V_OK;
}
