/* workspace.c - per-caller scratch for the forward pass.
 * One large block, grown (never shrunk) to the largest image seen and then reused, so the hot path
 * does not allocate: a 10,080-patch image needs a few hundred MB that are slow to fault in the
 * first time (docs/ARCHITECTURE.md §5), and the attention and MLP halves of a layer share one
 * region. Sizes are computed with overflow checks before anything is allocated. */
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

int g4v_workspace_reserve(g4v_workspace *ws, const g4v_vision_config *c, int gh, int gw,
                          int nworkers, enc_buffers *b, g4v_err *err) {
    int of = 0;
    size_t L = mul3((size_t)gh, (size_t)gw, 1, &of);
    size_t k2 = (size_t)c->pooling_kernel_size * (size_t)c->pooling_kernel_size;
    size_t N = L / k2, D = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    size_t qd = (size_t)c->num_heads * (size_t)c->head_dim;
    size_t kvd = (size_t)c->num_kv_heads * (size_t)c->head_dim;
    size_t pdim = (size_t)3 * (size_t)c->patch_size * (size_t)c->patch_size;
    size_t f = sizeof(float);

    /* The shared region: patches, then q/k/v/att + the attention's head-major copy of k and v
     * (g4v_attention_kv_floats), then gate/up; the largest decides (gate/up for every Gemma 4
     * variant: 2I >= 2 qd + 4 kvd). */
    size_t attn_b = mul3(L, 2 * qd + 2 * kvd, f, &of), kv_b = 0;
    if (__builtin_mul_overflow(g4v_attention_kv_floats((int)L, c->num_kv_heads, c->head_dim), f,
                               &kv_b) ||
        __builtin_add_overflow(attn_b, kv_b, &attn_b))
        of = 1;
    size_t mlp_b = mul3(L, 2 * I, f, &of);
    size_t patch_b = mul3(L, pdim, f, &of);
    size_t shared_b = attn_b > mlp_b ? attn_b : mlp_b;
    if (patch_b > shared_b) shared_b = patch_b;
    size_t maxside = (size_t)(gh > gw ? gh : gw);
    size_t rope_b = mul3(maxside, (size_t)c->head_dim / 4, f, &of);

    layout lo = {0, 0};
    size_t o_h = take(&lo, mul3(L, D, f, &of));
    size_t o_a = take(&lo, mul3(L, D, f, &of));
    size_t o_shared = take(&lo, shared_b);
    size_t o_pooled = take(&lo, mul3(N, D, f, &of));
    size_t o_pos = take(&lo, mul3(L, 2, sizeof(int32_t), &of));
    size_t o_cos = take(&lo, rope_b);
    size_t o_sin = take(&lo, rope_b);
    size_t o_scr =
        take(&lo, mul3((size_t)nworkers, g4v_attention_scratch_floats(c->head_dim), f, &of));
    if (of || lo.overflow)
        return g4v_fail(err, G4V_ERR_NOMEM,
                        "encoder workspace: a %dx%d patch grid needs more memory than can be "
                        "addressed",
                        gw, gh);

    if (lo.off > ws->cap) {
        g4v_free_large(ws->buf);
        ws->buf = NULL;
        ws->cap = 0;
        ws->buf = g4v_malloc_large(lo.off);
        if (!ws->buf)
            return g4v_fail(err, G4V_ERR_NOMEM,
                            "encoder workspace: out of memory allocating %zu MB for a %dx%d "
                            "patch grid",
                            lo.off >> 20, gw, gh);
        ws->cap = lo.off;
    }
    char *base = ws->buf;
    b->h = (float *)(base + o_h);
    b->a = (float *)(base + o_a);
    float *sh = (float *)(base + o_shared);
    b->q = sh;
    b->k = b->q + L * qd;
    b->v = b->k + L * kvd;
    b->att = b->v + L * kvd;
    b->kv = b->att + L * qd;
    b->gate = sh;
    b->up = b->gate + L * I;
    b->patches = sh;
    b->pooled = (float *)(base + o_pooled);
    b->pos = (int32_t *)(base + o_pos);
    b->rope_cos = (float *)(base + o_cos);
    b->rope_sin = (float *)(base + o_sin);
    b->attn_scratch = (float *)(base + o_scr);
    return G4V_OK;
}
