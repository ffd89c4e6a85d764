/* bench_gemm_peak.c - instruction throughput peaks, measured in the same run as the GEMMs.
 *
 * Each thread runs enough independent accumulator chains to cover latency x throughput (24 for
 * zmm FMA and vdpbf16ps, as measured on Zen 5, docs/ARCHITECTURE.md §3; 12 for ymm FMA, all 16
 * registers minus operands) for a fixed number of iterations; GFLOP/s = total FLOPs / wall time.
 * Functions carry their own target attributes, so this file needs no ISA flags. Each measurement is
 * short so that the shared table (bench_peaks.c) can take the best of several per thread count.
 */
#include "bench_gemm.h"
#include "bench_util.h"

#include "base/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define G4V_BENCH_X86 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#define G4V_BENCH_ARM64 1
#endif
#include <time.h>

enum { ITERS = 4 * 1000 * 1000 }; /* ~10-20 ms per measurement */

static volatile float sink;

/* Every task waits here until all `threads` tasks have started, so the measurement never runs
 * them one after another on one thread (the pool hands tasks out from a shared counter, and a
 * ~15 ms task can finish before a sleeping worker wakes up: the 2-thread "peak" then read as the
 * 1-thread one). One task per pool thread, so the spin cannot deadlock. */
static int started, expected;

static void start_together(void) {
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < expected)
#if G4V_BENCH_X86
        __builtin_ia32_pause();
#elif G4V_BENCH_ARM64
        __asm__ volatile("yield");
#endif
}

#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define CHAINS24(X)                                                                                \
    CHAINS(X) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)

#if G4V_BENCH_X86
__attribute__((target("avx2,fma"))) static void fma_ymm(void *arg, int task, int worker) {
    (void)arg, (void)task, (void)worker;
    start_together();
    __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
#define DECL(i) __m256 a##i = _mm256_set1_ps((float)(i));
#define STEP(i) a##i = _mm256_fmadd_ps(a##i, b, c);
#define SUM(i) s = _mm256_add_ps(s, a##i);
    CHAINS(DECL)
    for (int it = 0; it < ITERS; it++) {
        CHAINS(STEP)
    }
    __m256 s = _mm256_setzero_ps();
    CHAINS(SUM)
    sink = _mm256_cvtss_f32(s);
#undef DECL
#undef STEP
#undef SUM
}

__attribute__((target("avx512f"))) static void fma_zmm(void *arg, int task, int worker) {
    (void)arg, (void)task, (void)worker;
    start_together();
    __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
#define DECL(i) __m512 a##i = _mm512_set1_ps((float)(i));
#define STEP(i) a##i = _mm512_fmadd_ps(a##i, b, c);
#define SUM(i) s = _mm512_add_ps(s, a##i);
    CHAINS24(DECL)
    for (int it = 0; it < ITERS / 2; it++) {
        CHAINS24(STEP)
    }
    __m512 s = _mm512_setzero_ps();
    CHAINS24(SUM)
    sink = _mm512_reduce_add_ps(s);
#undef DECL
#undef STEP
#undef SUM
}

__attribute__((target("avx512f,avx512bf16"))) static void dp_zmm(void *arg, int task, int worker) {
    (void)arg, (void)task, (void)worker;
    start_together();
    __m512bh x = (__m512bh)_mm512_set1_epi32(0x3c003c00),
             y = (__m512bh)_mm512_set1_epi32(0x3c003c00);
#define DECL(i) __m512 a##i = _mm512_set1_ps((float)(i));
#define STEP(i) a##i = _mm512_dpbf16_ps(a##i, x, y);
#define SUM(i) s = _mm512_add_ps(s, a##i);
    CHAINS24(DECL)
    for (int it = 0; it < ITERS / 4; it++) {
        CHAINS24(STEP)
    }
    __m512 s = _mm512_setzero_ps();
    CHAINS24(SUM)
    sink = _mm512_reduce_add_ps(s);
#undef DECL
#undef STEP
#undef SUM
}

#endif

#if G4V_BENCH_ARM64
/* ARM64: 128-bit NEON FMA (fmla v.4s) and BFDOT (bfdot v.4s, 2 bf16 products per lane), 24
 * chains each: latency 4 x 4 pipes (Neoverse V1/V2, Apple M1) and some. */
static void fma_q(void *arg, int task, int worker) {
    (void)arg, (void)task, (void)worker;
    start_together();
    float32x4_t b = vdupq_n_f32(0.999999f), c = vdupq_n_f32(1e-7f);
#define DECL(i) float32x4_t a##i = vdupq_n_f32((float)(i));
#define STEP(i) a##i = vfmaq_f32(c, a##i, b);
#define SUM(i) s = vaddq_f32(s, a##i);
    CHAINS24(DECL)
    for (int it = 0; it < ITERS / 2; it++) {
        CHAINS24(STEP)
    }
    float32x4_t s = vdupq_n_f32(0.0f);
    CHAINS24(SUM)
    sink = vaddvq_f32(s);
#undef DECL
#undef STEP
#undef SUM
}

__attribute__((target("arch=armv8.2-a+bf16"))) static void bfdot_q(void *arg, int task,
                                                                    int worker) {
    (void)arg, (void)task, (void)worker;
    start_together();
    bfloat16x8_t x = vreinterpretq_bf16_u32(vdupq_n_u32(0x3c003c00u)), y = x;
#define DECL(i) float32x4_t a##i = vdupq_n_f32((float)(i));
#define STEP(i) a##i = vbfdotq_f32(a##i, x, y);
#define SUM(i) s = vaddq_f32(s, a##i);
    CHAINS24(DECL)
    for (int it = 0; it < ITERS / 4; it++) {
        CHAINS24(STEP)
    }
    float32x4_t s = vdupq_n_f32(0.0f);
    CHAINS24(SUM)
    sink = vaddvq_f32(s);
#undef DECL
#undef STEP
#undef SUM
}
#endif

static double run(g4v_pool *pool, int threads, g4v_task_fn fn, double flops_per_thread) {
    if (threads > g4v_pool_size(pool)) threads = g4v_pool_size(pool);
    __atomic_store_n(&started, 0, __ATOMIC_SEQ_CST);
    expected = threads;
    double t0 = bench_now();
    g4v_pool_run(pool, threads, fn, NULL);
    return flops_per_thread * threads / (bench_now() - t0) * 1e-9;
}

double bench_peak_fma_bits(g4v_pool *pool, int threads, int bits) {
    unsigned f = g4v_cpu_features();
#if G4V_BENCH_X86
    if (bits == 512 && (f & G4V_CPU_AVX512))
        return run(pool, threads, fma_zmm, (double)(ITERS / 2) * 24 * 32);
    if (bits == 256 && (f & G4V_CPU_AVX2))
        return run(pool, threads, fma_ymm, (double)ITERS * 12 * 16);
#elif G4V_BENCH_ARM64
    if (bits == 128 && (f & G4V_CPU_NEON))
        return run(pool, threads, fma_q, (double)(ITERS / 2) * 24 * 8);
#else
    (void)f, (void)pool, (void)threads, (void)bits;
#endif
    return 0.0;
}

double bench_peak_fma(g4v_pool *pool, int threads, int *width_bits) {
    unsigned f = g4v_cpu_features();
    *width_bits = f & G4V_CPU_AVX512 ? 512 : f & G4V_CPU_AVX2 ? 256 : f & G4V_CPU_NEON ? 128 : 0;
    return bench_peak_fma_bits(pool, threads, *width_bits);
}

/* vdpbf16ps on x86, BFDOT on ARM64: the bf16 dot-product peak (0 without it). */
double bench_peak_dpbf16(g4v_pool *pool, int threads) {
#if G4V_BENCH_X86
    if (!(g4v_cpu_features() & G4V_CPU_AVX512BF16)) return 0.0;
    return run(pool, threads, dp_zmm, (double)(ITERS / 4) * 24 * 64);
#elif G4V_BENCH_ARM64
    if (!(g4v_cpu_features() & G4V_CPU_ARM_BF16)) return 0.0;
    return run(pool, threads, bfdot_q, (double)(ITERS / 4) * 24 * 16);
#else
    (void)pool, (void)threads;
    return 0.0;
#endif
}
