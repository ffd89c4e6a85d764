/* test_gemm_amx.c - the AMX GEMM kernels (src/kernels/x86_amx/), run on the tile emulator in the
 * SIMDe build, against a scalar model of the same instruction order, bit for bit; and the tile
 * traffic their blocking promises, read from the emulator's counters.
 *
 * The model is written here from the definition (docs/NUMERICS.md §13), not from the kernels:
 * x' = bf16(clamp(x)); for each output, K in steps of 32 (zero-padded), per step an fp32 FMA
 * chain over the even products and one over the odd products, each from +0, then
 * C = C + (even + odd); bf16 inputs and C that are subnormal count as zero, subnormal results
 * are flushed; then the epilogue (output clamp, accumulate, the fused GeGLU with the table's row
 * kernel, as every GEMM applies it). Every blocking (K chunks, tasks, the allocation-free
 * path), 1 and 2 threads, packed and in place, must give exactly the model's bits: the
 * instruction's sums are whole 32-steps that continue from the stored C.
 * Data: random reals (a few exact zeros), values that cancel, subnormal activations and weights
 * (DAZ), products that underflow (FTZ); shapes with every tail (M % 16, N % 16, K % 32, the
 * 26B/31B down projection's K = 4304 = 134·32 + 16).
 * The INT8 kernels (amx-q8, amx-q8b) equal the portable INT8 kernels bit for bit: test_gemm_q8_simde
 * runs them as it runs every registered INT8 kernel; here only their tile traffic.
 * Counters: in the GEMM's main loop at most ~1 tile load per tile product (2 x 2 C tiles per
 * 32-step: 4 loads, 4 products, plus the C tiles of each K chunk), and one configuration load per
 * thread per call (released at its end).
 */
#include "base/dtype.h"
#include "base/pool.h"
#include "kernels/amx_emu.h"
#include "kernels/dispatch.h"
#include "kernels/gemm.h"
#include "kernels/gemm_kernel.h"
#include "test_util.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KT g4v_kernels_current()

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}
static float frand(float lo, float hi) {
    return lo + (hi - lo) * (float)(rnd() >> 8) / 16777216.0f;
}

/* ---- the model ---- */

static float daz(float v) {
    return fpclassify(v) == FP_SUBNORMAL ? copysignf(0.0f, v) : v;
}
static float ftz(float v) {
    return daz(v);
}

/* One output: x' row (already rounded, length kpad, zero past K) . W row (bf16 values, zero
 * past K), in the instruction's order. */
static float model_dot(const float *xr, const float *wr, int kpad) {
    float c = 0.0f;
    for (int k0 = 0; k0 < kpad; k0 += 32) {
        float even = 0.0f, odd = 0.0f;
        for (int p = 0; p < 16; p++) {
            int k = k0 + 2 * p;
            even = ftz(fmaf(daz(xr[k]), daz(wr[k]), even));
            odd = ftz(fmaf(daz(xr[k + 1]), daz(wr[k + 1]), odd));
        }
        c = ftz(daz(c) + ftz(even + odd));
    }
    return c;
}

static void model_gemm(const float *x, size_t ldx, const float *wv, float *y, size_t ldy, int m,
                       int n, int k, const g4v_gemm_epi *e) {
    int kpad = (k + 31) / 32 * 32;
    float *xr = calloc((size_t)kpad, sizeof(float)), *wr = calloc((size_t)kpad, sizeof(float));
    float *row = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < m; i++) {
        for (int t = 0; t < k; t++) {
            float v = x[(size_t)i * ldx + t];
            v = v < e->in_lo ? e->in_lo : v > e->in_hi ? e->in_hi : v;
            xr[t] = g4v_round_bf16(v);
        }
        for (int j = 0; j < n; j++) {
            memcpy(wr, wv + (size_t)j * k, sizeof(float) * (size_t)k);
            float v = model_dot(xr, wr, kpad);
            row[j] = v < e->out_lo ? e->out_lo : v > e->out_hi ? e->out_hi : v;
        }
        if (e->gelu_gate)
            KT->use[G4V_KF_GEGLU_ROW].geglu_row(e->gelu_gate + (size_t)i * e->ldg, row, row, n);
        for (int j = 0; j < n; j++) {
            float *d = y + (size_t)i * ldy + j;
            *d = e->accumulate ? *d + row[j] : row[j];
        }
    }
    free(xr);
    free(wr);
    free(row);
}

/* ---- data ---- */

enum { DATA_REAL, DATA_CANCEL, DATA_TINY, N_DATA };

static float rand_x(int kind) {
    switch (kind) {
    case DATA_CANCEL: /* large values of both signs whose sums cancel */
        return (rnd() % 2 ? 1.0f : -1.0f) * ldexpf(frand(1.0f, 2.0f), (int)(rnd() % 20));
    case DATA_TINY: /* subnormal and near-underflow activations among normal ones */
        return rnd() % 3 ? frand(-2.0f, 2.0f) : ldexpf(frand(-1.0f, 1.0f), -120 - (int)(rnd() % 16));
    default:
        return rnd() % 16 ? frand(-2.0f, 2.0f) : 0.0f;
    }
}
static float rand_w(int kind) {
    float v = kind == DATA_TINY && rnd() % 4 == 0 ? ldexpf(frand(-1.0f, 1.0f), -126 - (int)(rnd() % 6))
                                                  : frand(-1.0f, 1.0f);
    return g4v_round_bf16(v);
}

static const g4v_gemm_kernel *by_name(const char *name) {
    int nv;
    const g4v_kernel_variant *v = g4v_kernel_variants(&nv);
    for (int i = 0; i < nv; i++)
        if (v[i].family == G4V_KF_GEMM && !strcmp(v[i].impl.gemm->name, name)) return v[i].impl.gemm;
    return NULL;
}

static g4v_gemm_epi epi_of(int i, float *gate, size_t ldg) {
    g4v_gemm_epi e = g4v_gemm_epi_none();
    if (i == 1) {
        e.in_lo = -1.5f;
        e.in_hi = 1.25f;
        e.out_lo = -3.0f;
        e.out_hi = 2.5f;
    } else if (i == 2) {
        e.accumulate = 1;
    } else if (i == 3) {
        e.gelu_gate = gate;
        e.ldg = ldg;
        e.out_lo = -4.0f;
        e.out_hi = 3.5f;
    }
    return e;
}

/* One shape and data kind: both bf16 kernels, four epilogues, four blockings, pool or not. */
static void check_shape(int m, int n, int k, int kind, g4v_pool *pool) {
    static const char *names[] = {"amx-bf16", "amx-bf16-inplace"};
    static const g4v_gemm_cfg cfgs[] = {
        {0, 0, 0, 0, 0}, {0, 0, 0, 1, 0}, {1, 1, 0, 3, 0}, {0, 0, 1, 0, 0}};
    size_t ldx = (size_t)k + 5, ldy = (size_t)n + 3;
    float *x = malloc(sizeof(float) * (size_t)m * ldx), *wv = malloc(sizeof(float) * n * k);
    float *y0 = malloc(sizeof(float) * (size_t)m * ldy), *gate = malloc(sizeof(float) * m * ldy);
    float *ym = malloc(sizeof(float) * (size_t)m * ldy), *yo = malloc(sizeof(float) * m * ldy);
    for (size_t i = 0; i < (size_t)m * ldx; i++)
        x[i] = rand_x(kind);
    for (size_t i = 0; i < (size_t)n * k; i++)
        wv[i] = rand_w(kind);
    for (size_t i = 0; i < (size_t)m * ldy; i++) {
        y0[i] = frand(-1.0f, 1.0f);
        gate[i] = frand(-5.0f, 5.0f);
    }
    if (kind == DATA_TINY) { /* rows near 2^-112 times columns near 2^-16: products and sums
                                  in the subnormal range, which the tiles flush */
        for (int i = 0; i < m; i += 3)
            for (int t = 0; t < k; t++)
                x[(size_t)i * ldx + t] = ldexpf(x[(size_t)i * ldx + t], -112);
        for (int j = 0; j < n; j += 2)
            for (int t = 0; t < k; t++)
                wv[(size_t)j * k + t] = ldexpf(wv[(size_t)j * k + t], -16);
    }
    uint16_t *w = malloc(sizeof(uint16_t) * (size_t)n * k);
    for (size_t i = 0; i < (size_t)n * k; i++)
        w[i] = g4v_f32_to_bf16(wv[i]);
    for (int e = 0; e < 4; e++) {
        g4v_gemm_epi epi = epi_of(e, gate, ldy);
        memcpy(ym, y0, sizeof(float) * (size_t)m * ldy);
        model_gemm(x, ldx, wv, ym, ldy, m, n, k, &epi);
        for (int s = 0; s < 2; s++) {
            const g4v_gemm_kernel *kern = by_name(names[s]);
            REQUIRE(kern != NULL);
            g4v_wmat *W = NULL;
            g4v_err err;
            REQUIRE(g4v_wmat_create_with(KT, kern, w, G4V_DT_BF16, n, k, G4V_MATH_FAST, &W,
                                         &err) == G4V_OK);
            for (int c = 0; c < 4; c++) {
                if ((e + c) % 2 && c && m * n * k > 2000000) continue; /* big: half the grid */
                memcpy(yo, y0, sizeof(float) * (size_t)m * ldy);
                g4v_gemm_cfg_run(pool, x, ldx, W, yo, ldy, (size_t)m, &epi, c ? &cfgs[c] : NULL);
                int bad = -1;
                for (int i = 0; i < m && bad < 0; i++)
                    for (size_t j = 0; j < ldy; j++)
                        if (memcmp(&yo[(size_t)i * ldy + j], &ym[(size_t)i * ldy + j], 4)) {
                            bad = (int)((size_t)i * ldy + j);
                            break;
                        }
                CHECK_MSG(bad < 0,
                          "%s M=%d N=%d K=%d data %d epi %d cfg %d threads %d: Y[%zu][%zu] = "
                          "%.9g, model %.9g",
                          kern->name, m, n, k, kind, e, c, g4v_pool_size(pool),
                          bad < 0 ? 0 : (size_t)bad / ldy, bad < 0 ? 0 : (size_t)bad % ldy,
                          bad < 0 ? 0.0 : (double)yo[bad], bad < 0 ? 0.0 : (double)ym[bad]);
            }
            g4v_wmat_free(W);
        }
    }
    free(w);
    free(x);
    free(wv);
    free(y0);
    free(gate);
    free(ym);
    free(yo);
}

static void test_against_model(g4v_pool *pool2) {
    static const int shapes[][3] = {
        {1, 1, 1},    {5, 7, 33},   {16, 16, 32}, {17, 31, 64},  {32, 32, 32}, {33, 48, 100},
        {31, 33, 96}, {64, 40, 65}, {3, 70, 290}, {40, 24, 4304}, {70, 96, 768}};
    int ns = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < ns; s++)
        for (int kind = 0; kind < N_DATA; kind++) {
            if (s == ns - 1 && kind) continue; /* the largest shape: real data only */
            check_shape(shapes[s][0], shapes[s][1], shapes[s][2], kind, kind % 2 ? pool2 : NULL);
        }
    for (int r = 0; r < 6; r++) /* random shapes */
        check_shape(1 + (int)(rnd() % 90), 1 + (int)(rnd() % 90), 1 + (int)(rnd() % 300),
                    (int)(rnd() % N_DATA), r % 2 ? pool2 : NULL);
}

/* The model itself tells the SDM order from the others (docs/NUMERICS.md §13): C = 0, pairs
 * (2^24, 1)·(1, 1) and (-2^24, 0)·(1, 0) give 1 (a C-first or pair-first order gives 0); and the
 * kernel agrees on that vector, placed in a real GEMM. */
static void test_discriminating(void) {
    float xr[32] = {0}, wr[32] = {0};
    xr[0] = 16777216.0f, xr[1] = 1.0f, wr[0] = 1.0f, wr[1] = 1.0f;
    xr[2] = -16777216.0f, xr[3] = 0.0f, wr[2] = 1.0f, wr[3] = 0.0f;
    CHECK(model_dot(xr, wr, 32) == 1.0f);
    const g4v_gemm_kernel *kern = by_name("amx-bf16");
    REQUIRE(kern != NULL);
    uint16_t w[4];
    for (int i = 0; i < 4; i++)
        w[i] = g4v_f32_to_bf16(wr[i]);
    g4v_wmat *W = NULL;
    REQUIRE(g4v_wmat_create_with(KT, kern, w, G4V_DT_BF16, 1, 4, G4V_MATH_FAST, &W, NULL) ==
            G4V_OK);
    float y = -1.0f;
    g4v_gemm(NULL, xr, 4, W, &y, 1, 1, NULL);
    CHECK_MSG(y == 1.0f, "amx-bf16 gave %g on the discriminating vector, the SDM order gives 1",
              (double)y);
    g4v_wmat_free(W);
}

/* Tile traffic of one call: counters summed over the threads that ran it. */
static g4v_amx_emu_counters total;
static void add_counters(void) {
    g4v_amx_emu_counters c;
    g4v_amx_emu_counters_get(&c);
    total.products += c.products, total.loads += c.loads, total.configs += c.configs;
    total.stores += c.stores;
    g4v_amx_emu_counters_reset();
}
static void count_task(void *arg, int t, int worker) {
    (void)arg, (void)t, (void)worker;
}

static void test_counters(g4v_pool *pool2) {
    static const char *names[] = {"amx-bf16", "amx-bf16-inplace", "amx-q8", "amx-q8b"};
    const int m = 256, n = 256, k = 768;
    float *x = malloc(sizeof(float) * m * k), *y = malloc(sizeof(float) * m * n);
    uint16_t *w = malloc(sizeof(uint16_t) * n * k);
    for (int i = 0; i < m * k; i++)
        x[i] = frand(-1.0f, 1.0f);
    for (int i = 0; i < n * k; i++)
        w[i] = g4v_f32_to_bf16(frand(-1.0f, 1.0f));
    for (int s = 0; s < 4; s++) {
        const g4v_gemm_kernel *kern = by_name(names[s]);
        REQUIRE(kern != NULL);
        g4v_math_mode mode = s < 2 ? G4V_MATH_FAST : s == 2 ? G4V_MATH_INT8 : G4V_MATH_INT8_BLOCKS;
        g4v_wmat *W = NULL;
        REQUIRE(g4v_wmat_create_with(KT, kern, w, G4V_DT_BF16, n, k, mode, &W, NULL) == G4V_OK);
        for (int p = 0; p < 2; p++) {
            g4v_pool *pool = p ? pool2 : NULL;
            memset(&total, 0, sizeof total);
            g4v_pool_run_then(pool, g4v_pool_size(pool), count_task, NULL, add_counters);
            memset(&total, 0, sizeof total); /* every thread's counters now start at zero */
            for (int call = 0; call < 2; call++)
                g4v_gemm(pool, x, (size_t)k, W, y, (size_t)n, (size_t)m, NULL);
            g4v_pool_run_then(pool, g4v_pool_size(pool), count_task, NULL, add_counters);
            int kstep = s == 2 ? 64 : 32;
            uint64_t products = 2ull * (m / 16) * (n / 16) * (k / kstep);
            double per = (double)total.loads / (double)total.products;
            printf("%-17s threads %d: %llu products, %.3f tile loads per product, %llu stores, "
                   "%llu config loads in 2 calls\n",
                   kern->name, g4v_pool_size(pool), (unsigned long long)total.products, per,
                   (unsigned long long)total.stores, (unsigned long long)total.configs);
            CHECK_MSG(total.products == products, "%s: %llu products, %llu expected", kern->name,
                      (unsigned long long)total.products, (unsigned long long)products);
            /* the blocked INT8 kernel loads A and B once per product (one block per
             * instruction); the others 1 + the C tiles of each K chunk */
            CHECK_MSG(per <= (s == 3 ? 1.01 : 1.2), "%s: %.3f tile loads per product", kern->name,
                      per);
            CHECK_MSG(total.configs >= 2 && total.configs <= 2u * (unsigned)g4v_pool_size(pool),
                      "%s: %llu config loads in 2 calls on %d threads", kern->name,
                      (unsigned long long)total.configs, g4v_pool_size(pool));
        }
        g4v_wmat_free(W);
    }
    free(x);
    free(y);
    free(w);
}

int main(void) {
    g4v_pool *pool2 = NULL;
    if (g4v_pool_create(2, &pool2, NULL) != G4V_OK) return 1;
    test_discriminating();
    test_against_model(pool2);
    test_counters(pool2);
    g4v_pool_destroy(pool2);
    return test_summary("test_gemm_amx");
}
