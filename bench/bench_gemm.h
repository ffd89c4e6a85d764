/* bench_gemm.h - pieces of the GEMM benchmark (bench_gemm.c drives them). */
#ifndef G4V_BENCH_GEMM_H
#define G4V_BENCH_GEMM_H

#include "base/pool.h"

/* Measured peaks in GFLOP/s on `threads` threads at once (0 when the CPU lacks the instruction):
 * FMA on the widest vectors the CPU has (zmm with AVX-512, else ymm), and vdpbf16ps. */
double bench_peak_fma(g4v_pool *pool, int threads, int *width_bits);
double bench_peak_dpbf16(g4v_pool *pool, int threads);
/* FMA on vectors of `bits` (256 or 512) bits; 0 when the CPU lacks them. */
double bench_peak_fma_bits(g4v_pool *pool, int threads, int bits);
/* (The table the benchmarks divide by, best of N per thread count, is bench_peaks.h.) */

/* oneDNN matmul Y[M,N] = X[M,K]·W[K,N] with weights prepacked once (format_tag any), src in
 * bf16 or f32, f32 dst, on `threads` OpenMP threads. create returns NULL when oneDNN is not built
 * in, has no kernel for this type here, or only its reference loops (*impl says which). */
typedef struct bench_dnnl bench_dnnl;
bench_dnnl *bench_dnnl_create(int m, int n, int k, int bf16, int threads, const char **impl);
double bench_dnnl_run(bench_dnnl *b); /* seconds of one execute */
void bench_dnnl_free(bench_dnnl *b);

#endif
