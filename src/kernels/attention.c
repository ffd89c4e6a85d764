/* attention.c - the attention front ends every ISA goes through: the per-worker scratch size,
 * the call to the variant of the caller's kernel table, and the optional prepared K/V form
 * (g4v_attention_kernel, kernels.h). Nothing here knows a particular variant: each says in its
 * descriptor what scratch it needs and whether it has a K/V form of its own. */
#include "dispatch.h"

/* The chosen variant: the FAST choice for a FAST model (it may be a FAST-only variant). */
static const g4v_attention_kernel *chosen(const g4v_kernels *k, int fast_math) {
    return (fast_math ? k->use_fast : k->use)[G4V_KF_ATTENTION].attention;
}

/* The largest need of any registered variant, so one workspace serves whichever a table runs
 * (a FAST and a PRECISE model may share a pool). */
size_t g4v_attention_scratch_floats(int d) {
    int n;
    const g4v_kernel_variant *v = g4v_kernel_variants(&n);
    size_t most = 0;
    for (int i = 0; i < n; i++)
        if (v[i].family == G4V_KF_ATTENTION) {
            size_t f = v[i].impl.attention->scratch_floats(d);
            if (f > most) most = f;
        }
    return most;
}

void g4v_attention(const g4v_kernels *k, g4v_pool *pool, const g4v_attn_args *a) {
    chosen(k, a->fast_math)->run(pool, a);
}

size_t g4v_attention_kv_bytes(const g4v_kernels *k, int fast_math, int nk, int Hkv, int d) {
    const g4v_attention_kernel *v = chosen(k, fast_math);
    return v->kv_bytes ? v->kv_bytes(nk, Hkv, d) : 0;
}

void g4v_attention_prepare_kv(const g4v_kernels *k, g4v_pool *pool, const g4v_attn_args *a, int j0,
                              int nk_all, void *dst) {
    const g4v_attention_kernel *v = chosen(k, a->fast_math);
    if (v->prepare_kv) v->prepare_kv(pool, a, j0, nk_all, dst);
}
