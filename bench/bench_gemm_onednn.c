/* bench_gemm_onednn.c - the peer: oneDNN matmul with weights prepacked once (the bar for our GEMM,
 * docs/ARCHITECTURE.md §3).
 *
 * Compiled with oneDNN only when CMake finds it (Debian libdnnl-dev) and OpenMP; otherwise the
 * stubs at the end report "not built". Only the execute call is timed: src already in the
 * matmul's type (bf16 or f32), weights reordered once into oneDNN's preferred layout, f32 dst.
 */
#include "bench_gemm.h"
#include "bench_util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef G4V_BENCH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

struct bench_dnnl {
    dnnl_engine_t eng;
    dnnl_stream_t st;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t src, w, dst;
    int threads;
};


static void fill(dnnl_memory_t mem, size_t bytes, unsigned char hi) {
    unsigned char *p = NULL;
    if (dnnl_memory_get_data_handle(mem, (void **)&p) != dnnl_success || !p) return;
    for (size_t i = 0; i + 1 < bytes; i += 2)
        p[i] = 0, p[i + 1] = hi; /* small normal values */
}

#define TRY(call)                                                                                  \
    do {                                                                                           \
        if ((call) != dnnl_success) goto fail;                                                     \
    } while (0)

bench_dnnl *bench_dnnl_create(int m, int n, int k, int bf16, int threads, const char **impl) {
    static char name[2][128];
    *impl = "no kernel";
    bench_dnnl *b = calloc(1, sizeof *b);
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_memory_t w_plain = NULL;
    if (!b) return NULL;
    b->threads = threads;
    omp_set_num_threads(threads);
    dnnl_data_type_t dt = bf16 ? dnnl_bf16 : dnnl_f32;
    size_t es = bf16 ? 2 : 4;
    dnnl_memory_desc_t src_md, w_any, w_md_plain, dst_md;
    dnnl_dims_t sd = {m, k}, wd = {k, n}, dd = {m, n};
    TRY(dnnl_engine_create(&b->eng, dnnl_cpu, 0));
    TRY(dnnl_stream_create(&b->st, b->eng, dnnl_stream_default_flags));
    TRY(dnnl_memory_desc_init_by_tag(&src_md, 2, sd, dt, dnnl_ab));
    TRY(dnnl_memory_desc_init_by_tag(&w_any, 2, wd, dt, dnnl_format_tag_any));
    TRY(dnnl_memory_desc_init_by_tag(&w_md_plain, 2, wd, dt, dnnl_ba)); /* [N, K] as stored */
    TRY(dnnl_memory_desc_init_by_tag(&dst_md, 2, dd, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t md;
    TRY(dnnl_matmul_desc_init(&md, &src_md, &w_any, NULL, &dst_md));
    TRY(dnnl_primitive_desc_create(&b->pd, &md, NULL, b->eng, NULL));
    const char *info = NULL;
    TRY(dnnl_primitive_desc_query(b->pd, dnnl_query_impl_info_str, 0, &info));
    strncpy(name[bf16], info ? info : "?", sizeof name[0] - 1);
    *impl = name[bf16];
    if (strstr(name[bf16], "ref")) goto fail; /* reference loops: not a meaningful peer */
    const dnnl_memory_desc_t *w_md = dnnl_primitive_desc_query_md(b->pd, dnnl_query_weights_md, 0);
    TRY(dnnl_memory_create(&b->src, &src_md, b->eng, DNNL_MEMORY_ALLOCATE));
    TRY(dnnl_memory_create(&w_plain, &w_md_plain, b->eng, DNNL_MEMORY_ALLOCATE));
    TRY(dnnl_memory_create(&b->w, w_md, b->eng, DNNL_MEMORY_ALLOCATE));
    TRY(dnnl_memory_create(&b->dst, &dst_md, b->eng, DNNL_MEMORY_ALLOCATE));
    fill(b->src, (size_t)m * k * es, 0x3c);
    fill(w_plain, (size_t)n * k * es, 0x3b);
    TRY(dnnl_reorder_primitive_desc_create(&rpd, &w_md_plain, b->eng, w_md, b->eng, NULL));
    TRY(dnnl_primitive_create(&reorder, rpd));
    dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, w_plain}, {DNNL_ARG_TO, b->w}};
    TRY(dnnl_primitive_execute(reorder, b->st, 2, rargs));
    TRY(dnnl_stream_wait(b->st));
    TRY(dnnl_primitive_create(&b->prim, b->pd));
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(w_plain);
    if (bench_dnnl_run(b) < 0) goto fail_b; /* warm-up: first touch, JIT */
    return b;
fail:
    if (reorder) dnnl_primitive_destroy(reorder);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (w_plain) dnnl_memory_destroy(w_plain);
fail_b:
    bench_dnnl_free(b);
    return NULL;
}

double bench_dnnl_run(bench_dnnl *b) {
    omp_set_num_threads(b->threads);
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, b->src}, {DNNL_ARG_WEIGHTS, b->w}, {DNNL_ARG_DST, b->dst}};
    double t0 = bench_now();
    if (dnnl_primitive_execute(b->prim, b->st, 3, args) != dnnl_success) return -1.0;
    if (dnnl_stream_wait(b->st) != dnnl_success) return -1.0;
    return bench_now() - t0;
}

void bench_dnnl_free(bench_dnnl *b) {
    if (!b) return;
    if (b->prim) dnnl_primitive_destroy(b->prim);
    if (b->pd) dnnl_primitive_desc_destroy(b->pd);
    if (b->src) dnnl_memory_destroy(b->src);
    if (b->w) dnnl_memory_destroy(b->w);
    if (b->dst) dnnl_memory_destroy(b->dst);
    if (b->st) dnnl_stream_destroy(b->st);
    if (b->eng) dnnl_engine_destroy(b->eng);
    free(b);
}
#else
bench_dnnl *bench_dnnl_create(int m, int n, int k, int bf16, int threads, const char **impl) {
    (void)m, (void)n, (void)k, (void)bf16, (void)threads;
    *impl = "not built (install libdnnl-dev)";
    return NULL;
}
double bench_dnnl_run(bench_dnnl *b) {
    (void)b;
    return -1.0;
}
void bench_dnnl_free(bench_dnnl *b) {
    (void)b;
}
#endif
