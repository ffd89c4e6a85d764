/* test_gemm_q8.c - the INT8 modes' GEMM (kernels/gemm_q8.h): every INT8 kernel this CPU runs
 * (from the registry, capped by G4V_ISA) against g4v_gemm_ref's INT8 branch, bit for bit; all of
 * it twice, for INT8 (per-channel / per-row scales) and INT8_BLOCKS (per-32-block scales, whose
 * random shapes include K below, at and past multiples of 32 and zero blocks inside a row).
 *
 *  - random real data over awkward shapes (M, N, K not multiples of any tile; K below, at and
 *    past multiples of 4 and 16, odd multiples of 4), every weight dtype and every epilogue;
 *  - the extreme codes: rows and columns quantizing to ±127 everywhere (the vpmaddubsw pair
 *    bound of the AVX2 kernel and the +128 correction of the VNNI ones at their limits), with
 *    the expected value computed here in int64, independently of the reference;
 *  - zero rows/columns (scale 0), NaN and Inf inputs (the same codes in every kernel);
 *  - the same bits for 1, 2 and 3 threads, any blocking and the allocation-free path;
 *  - a sanity bound against float64 on Gaussian data (INT8 is ~1% off, not garbage);
 *  - dispatch, memory size and the K limit.
 */
#include "base/cpu.h"
#include "base/pool.h"
#include "kernels/dispatch.h"
#include "kernels/gemm.h"
#include "kernels/gemm_kernel.h"
#include "kernels/gemm_q8.h"
#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KT g4v_kernels_current()

/* The mode under test: G4V_MATH_INT8 or G4V_MATH_INT8_BLOCKS (main runs both). */
static g4v_math_mode MODE = G4V_MATH_INT8;

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}
static float frand(float lo, float hi) {
    return lo + (hi - lo) * (float)(rnd() >> 8) / 16777216.0f;
}

/* The INT8 kernels this build and CPU run, best first. */
static const g4v_gemm_kernel *const *q8_kernels(int *count) {
    static const g4v_gemm_kernel *list[16];
    int nv, n = 0;
    const g4v_kernel_variant *v = g4v_kernel_variants(&nv);
    for (int i = 0; i < nv && n < 16; i++)
        if (v[i].family == G4V_KF_GEMM && v[i].impl.gemm->int8 &&
            !v[i].impl.gemm->q8_blocks == (MODE == G4V_MATH_INT8) &&
            !(v[i].needs & ~g4v_kernel_features()))
            list[n++] = v[i].impl.gemm;
    *count = n;
    return list;
}

/* Weight values as dtype dt stores them (f32 array) and the raw weight. */
static void *make_weight(float *v, size_t count, g4v_dtype dt) {
    void *w = malloc(count * g4v_dtype_size(dt));
    for (size_t i = 0; i < count; i++) {
        if (dt == G4V_DT_F32)
            ((float *)w)[i] = v[i];
        else if (dt == G4V_DT_BF16)
            ((uint16_t *)w)[i] = g4v_f32_to_bf16(v[i]);
        else { /* F16: values kept to 10 mantissa bits within the normal range by fill */
            float f = v[i];
            uint32_t u;
            memcpy(&u, &f, 4);
            uint32_t s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
            uint16_t h = a < 0x38800000u ? (uint16_t)s
                                         : (uint16_t)(s | ((a + 0xfffu + ((a >> 13) & 1u) -
                                                            0x38000000u) >> 13));
            ((uint16_t *)w)[i] = h;
        }
        v[i] = g4v_load_elem(w, dt, i);
    }
    return w;
}

static g4v_gemm_epi epi_case(int i) {
    g4v_gemm_epi e = g4v_gemm_epi_none();
    if (i == 1 || i == 4) {
        e.in_lo = -1.5f;
        e.in_hi = 1.25f;
    }
    if (i == 2 || i == 4) {
        e.out_lo = -3.0f;
        e.out_hi = 2.5f;
    }
    if (i == 3 || i == 4) e.accumulate = 1;
    return e;
}
enum { N_EPI = 6, EPI_GEGLU = 5 };

/* Every INT8 kernel on one case against the reference; returns the number of kernels run. */
static int run_case(int m, int n, int k, g4v_dtype dt, int epi_i, const float *x, size_t ldx,
                    void *w, g4v_pool *pool, const char *label) {
    size_t ldy = (size_t)n + 3;
    float *y0 = malloc(sizeof(float) * (size_t)m * ldy), *yr = malloc(sizeof(float) * m * ldy);
    float *yo = malloc(sizeof(float) * (size_t)m * ldy), *gate = NULL;
    for (size_t i = 0; i < (size_t)m * ldy; i++)
        y0[i] = frand(-2.0f, 2.0f);
    g4v_gemm_epi e = epi_case(epi_i);
    if (epi_i == EPI_GEGLU) {
        gate = malloc(sizeof(float) * (size_t)m * ldy);
        for (size_t i = 0; i < (size_t)m * ldy; i++)
            gate[i] = frand(-5.0f, 5.0f);
        e.gelu_gate = gate;
        e.ldg = ldy;
        e.out_lo = -4.0f;
        e.out_hi = 3.5f;
    }
    memcpy(yr, y0, sizeof(float) * (size_t)m * ldy);
    g4v_gemm_ref(KT, x, ldx, w, dt, yr, ldy, (size_t)m, n, k, MODE, &e);
    int count, ran = 0;
    const g4v_gemm_kernel *const *all = q8_kernels(&count);
    for (int i = 0; i < count; i++) {
        g4v_wmat *W = NULL;
        g4v_err err;
        if (g4v_wmat_create_with(KT, all[i], w, dt, n, k, MODE, &W, &err) != G4V_OK) {
            CHECK_MSG(0, "create %s: %s", all[i]->name, err.msg);
            continue;
        }
        memcpy(yo, y0, sizeof(float) * (size_t)m * ldy);
        g4v_gemm(pool, x, ldx, W, yo, ldy, (size_t)m, &e);
        int bad = 0;
        for (size_t t = 0; t < (size_t)m * ldy; t++)
            if (memcmp(&yo[t], &yr[t], 4)) {
                if (!bad)
                    fprintf(stderr, "  first difference at row %zu col %zu: %.9g vs ref %.9g\n",
                            t / ldy, t % ldy, yo[t], yr[t]);
                bad++;
            }
        CHECK_MSG(!bad, "%s %s %s epi=%d M=%d N=%d K=%d: %d values differ from the reference",
                  all[i]->name, label, g4v_dtype_name(dt), epi_i, m, n, k, bad);
        g4v_wmat_free(W);
        ran++;
    }
    free(y0);
    free(yr);
    free(yo);
    free(gate);
    return ran;
}

static void test_shapes(g4v_pool *pool) {
    static const int ms[] = {1, 5, 13, 25};
    static const int ns[] = {1, 17, 33, 70};
    static const int ks[] = {1, 3, 4, 12, 17, 20, 31, 32, 36, 64, 67, 100, 260};
    static const g4v_dtype dts[] = {G4V_DT_BF16, G4V_DT_F16, G4V_DT_F32};
    int cases = 0;
    for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
        for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
            for (size_t c = 0; c < sizeof ks / sizeof *ks; c++) {
                int m = ms[a], n = ns[b], k = ks[c];
                g4v_dtype dt = dts[(a + b + c) % 3];
                int epi_i = (int)((a * 7 + b * 3 + c) % N_EPI);
                size_t ldx = (size_t)k + (size_t)(m % 3);
                float *x = malloc(sizeof(float) * (size_t)m * ldx);
                float *wv = malloc(sizeof(float) * (size_t)n * k);
                for (size_t i = 0; i < (size_t)m * ldx; i++)
                    x[i] = frand(-2.0f, 2.0f) * (rnd() % 8 ? 1.0f : 8.0f);
                for (size_t i = 0; i < (size_t)n * k; i++)
                    wv[i] = rnd() % 16 ? frand(-1.0f, 1.0f) : 0.0f;
                if (k > 64 && m > 1) /* a zero 32-block inside row 1 (block scale 0) */
                    memset(x + ldx + 32, 0, sizeof(float) * 32);
                void *w = make_weight(wv, (size_t)n * k, dt);
                cases += run_case(m, n, k, dt, epi_i, x, ldx, w, pool, "random");
                free(w);
                free(wv);
                free(x);
            }
    printf("random shapes: %d kernel runs\n", cases);
}

/* Codes ±127 everywhere: x = ±s and w = ±t with signs from a pattern, so every code is ±127
 * and the sum is 127²·(agreements - disagreements), checked in int64 here. */
static void test_extremes(g4v_pool *pool) {
    static const int ks[] = {4, 12, 252, 4096};
    for (size_t c = 0; c < sizeof ks / sizeof *ks; c++) {
        int m = 7, n = 19, k = ks[c];
        float *x = malloc(sizeof(float) * (size_t)m * k), *wv = malloc(sizeof(float) * n * k);
        for (int r = 0; r < m; r++)
            for (int t = 0; t < k; t++)
                x[(size_t)r * k + t] = (r == 0 || (r != 1 && (t * 7 + r) % 5 < 2)) ? -3.0f : 3.0f;
        for (int j = 0; j < n; j++)
            for (int t = 0; t < k; t++)
                wv[(size_t)j * k + t] =
                    (j == 0 || (j != 1 && (t * 3 + j) % 4 == 0)) ? 0.5f : -0.5f;
        void *w = make_weight(wv, (size_t)n * k, G4V_DT_F32);
        run_case(m, n, k, G4V_DT_F32, 0, x, (size_t)k, w, pool, "extreme");
        /* the reference itself against int64 arithmetic */
        float *yr = malloc(sizeof(float) * (size_t)m * n);
        g4v_gemm_ref(KT, x, (size_t)k, w, G4V_DT_F32, yr, (size_t)n, (size_t)m, n, k, MODE,
                     NULL);
        int bad = 0;
        for (int r = 0; r < m; r++)
            for (int j = 0; j < n; j++) {
                int64_t s = 0, sb = 0;
                float want = 0.0f, scale = (3.0f / 127.0f) * (0.5f / 127.0f);
                for (int t = 0; t < k; t++) {
                    int64_t p = (x[(size_t)r * k + t] < 0 ? -127 : 127) *
                                (wv[(size_t)j * k + t] < 0 ? -127 : 127);
                    s += p;
                    sb += p;
                    /* blocks: every scale is the same */
                    if (t % G4V_Q8_BLOCK == G4V_Q8_BLOCK - 1 || t == k - 1) {
                        want = fmaf((float)(int32_t)sb, scale, want);
                        sb = 0;
                    }
                }
                if (MODE == G4V_MATH_INT8) want = (float)(int32_t)s * scale;
                if (memcmp(&want, &yr[(size_t)r * n + j], 4)) bad++;
            }
        CHECK_MSG(!bad, "extreme K=%d: the reference differs from int64 arithmetic in %d values",
                  k, bad);
        free(yr);
        free(w);
        free(wv);
        free(x);
    }
}

/* Zero rows and columns (scale 0), NaN and Inf inputs: the same bits everywhere. */
static void test_special(g4v_pool *pool) {
    int m = 9, n = 35, k = 45;
    float *x = malloc(sizeof(float) * (size_t)m * k), *wv = malloc(sizeof(float) * n * k);
    for (int i = 0; i < m * k; i++)
        x[i] = frand(-1.0f, 1.0f);
    for (int i = 0; i < n * k; i++)
        wv[i] = frand(-1.0f, 1.0f);
    memset(x + 2 * k, 0, sizeof(float) * k);    /* a zero row */
    memset(wv + 3 * k, 0, sizeof(float) * k);   /* a zero column */
    x[4 * k + 5] = NAN;                         /* NaN inside a row */
    x[5 * k + 1] = INFINITY;                    /* an infinite row */
    x[6 * k + 7] = 1e-42f;                      /* a subnormal among normal values */
    for (int t = 0; t < k; t++) x[7 * k + t] = 1e-40f; /* an all-subnormal row: scale 0 */
    void *w = make_weight(wv, (size_t)n * k, G4V_DT_F32);
    for (int e = 0; e < N_EPI; e++)
        run_case(m, n, k, G4V_DT_F32, e, x, (size_t)k, w, pool, "special");
    free(w);
    free(wv);
    free(x);
}

/* Thread counts, blockings and the allocation-free path give the same bits. */
static void test_determinism(void) {
    int m = 203, n = 150, k = 300;
    float *x = malloc(sizeof(float) * (size_t)m * k), *wv = malloc(sizeof(float) * n * k);
    for (int i = 0; i < m * k; i++)
        x[i] = frand(-3.0f, 3.0f);
    for (int i = 0; i < n * k; i++)
        wv[i] = frand(-1.0f, 1.0f);
    void *w = make_weight(wv, (size_t)n * k, G4V_DT_BF16);
    float *y1 = malloc(sizeof(float) * (size_t)m * n), *y2 = malloc(sizeof(float) * m * n);
    float *gate = malloc(sizeof(float) * (size_t)m * n);
    for (int i = 0; i < m * n; i++)
        gate[i] = frand(-3.0f, 3.0f);
    int count;
    const g4v_gemm_kernel *const *all = q8_kernels(&count);
    for (int i = 0; i < count; i++) {
        g4v_wmat *W = NULL;
        REQUIRE(g4v_wmat_create_with(KT, all[i], w, G4V_DT_BF16, n, k, MODE, &W, NULL) == G4V_OK);
        g4v_gemm(NULL, x, (size_t)k, W, y1, (size_t)n, (size_t)m, NULL);
        for (int t = 2; t <= 3; t++) {
            g4v_pool *p = NULL;
            REQUIRE(g4v_pool_create(t, &p, NULL) == G4V_OK);
            g4v_gemm(p, x, (size_t)k, W, y2, (size_t)n, (size_t)m, NULL);
            CHECK_MSG(!memcmp(y1, y2, sizeof(float) * (size_t)m * n), "%s: %d threads differ",
                      all[i]->name, t);
            g4v_pool_destroy(p);
        }
        static const g4v_gemm_cfg cfgs[] = {
            {1, 1, 0, 0, 0}, {3, 2, 0, 1, 1}, {0, 0, 1, 0, -1}, {2, 0, 1, 0, 0}};
        /* the epilogues too: none; clamps + accumulate; clamps + fused GeGLU (the cfgs with
         * no_scratch take the allocation-free paths, whose row epilogue is their own) */
        g4v_gemm_epi epis[3] = {g4v_gemm_epi_none(), g4v_gemm_epi_none(), g4v_gemm_epi_none()};
        epis[1].in_lo = epis[2].in_lo = -2.0f;
        epis[1].in_hi = epis[2].in_hi = 2.5f;
        epis[1].out_lo = epis[2].out_lo = -4.0f;
        epis[1].out_hi = epis[2].out_hi = 3.0f;
        epis[1].accumulate = 1;
        epis[2].gelu_gate = gate;
        epis[2].ldg = (size_t)n;
        for (int e = 0; e < 3; e++) {
            for (size_t t = 0; t < (size_t)m * n; t++)
                y1[t] = 0.25f * (float)(t % 7);
            g4v_gemm(NULL, x, (size_t)k, W, y1, (size_t)n, (size_t)m, &epis[e]);
            for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; c++) {
                for (size_t t = 0; t < (size_t)m * n; t++)
                    y2[t] = 0.25f * (float)(t % 7);
                g4v_gemm_cfg_run(NULL, x, (size_t)k, W, y2, (size_t)n, (size_t)m, &epis[e],
                                 &cfgs[c]);
                CHECK_MSG(!memcmp(y1, y2, sizeof(float) * (size_t)m * n),
                          "%s: blocking %zu, epilogue %d differs", all[i]->name, c, e);
            }
        }
        g4v_wmat_free(W);
    }
    free(gate);
    free(y1);
    free(y2);
    free(w);
    free(wv);
    free(x);
}

/* INT8 is an approximation: within a few 1e-3 relative RMS of float64 on Gaussian data. */
static void test_accuracy(void) {
    int m = 64, n = 96, k = 768;
    float *x = malloc(sizeof(float) * (size_t)m * k), *wv = malloc(sizeof(float) * n * k);
    for (int i = 0; i < m * k; i++) /* Box-Muller */
        x[i] = sqrtf(-2.0f * logf(frand(1e-7f, 1.0f))) * cosf(6.2831853f * frand(0.0f, 1.0f));
    for (int i = 0; i < n * k; i++)
        wv[i] = 0.05f * sqrtf(-2.0f * logf(frand(1e-7f, 1.0f))) *
                cosf(6.2831853f * frand(0.0f, 1.0f));
    void *w = make_weight(wv, (size_t)n * k, G4V_DT_F32);
    float *y = malloc(sizeof(float) * (size_t)m * n);
    g4v_wmat *W = NULL;
    REQUIRE(g4v_wmat_create(KT, w, G4V_DT_F32, n, k, MODE, &W, NULL) == G4V_OK);
    g4v_gemm(NULL, x, (size_t)k, W, y, (size_t)n, (size_t)m, NULL);
    double se = 0, ss = 0;
    for (int r = 0; r < m; r++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int t = 0; t < k; t++)
                s += (double)x[(size_t)r * k + t] * wv[(size_t)j * k + t];
            double d = y[(size_t)r * n + j] - s;
            se += d * d;
            ss += s * s;
        }
    double rel = sqrt(se / ss);
    printf("INT8 GEMM (%s) relative RMS error vs float64 on Gaussian data, K=%d: %.3g\n",
           g4v_wmat_kernel_name(W), k, rel);
    /* per channel ~9e-3 here; per 32-block ~7e-3 (bench/q8_granularity.py: 1.09e-2 / 7.6e-3) */
    double bound = MODE == G4V_MATH_INT8 ? 1.5e-2 : 8.5e-3;
    CHECK_MSG(rel < bound && rel > 1e-4, "relative RMS error %.3g (bound %.3g)", rel, bound);
    g4v_wmat_free(W);
    free(y);
    free(w);
    free(wv);
    free(x);
}

/* f32 -> f16 bits, round to nearest even, for values in f16's normal range (or 0). */
static uint16_t to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sgn = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a < 0x38800000u) return (uint16_t)sgn;
    return (uint16_t)(sgn | ((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13));
}

/* Q8_0 blocks for an [n, k] weight. llama = 1: every block as llama.cpp's quantizer writes it
 * (d = amax / 127 stored as f16, codes round(v / d), so a nonzero block's largest |code| is 127;
 * every 7th block all zero). llama = 0: hand-made blocks too: codes -128..127 with the largest
 * below 127, and d = 0 over nonzero codes. wf gets the widened weight d·q. */
static unsigned char *make_q8_0(int n, int k, int llama, float *wf) {
    int nb = k / G4V_Q8_BLOCK;
    unsigned char *blocks = malloc((size_t)n * nb * G4V_Q8_0_BLOCK_BYTES);
    for (int j = 0; j < n; j++)
        for (int b = 0; b < nb; b++) {
            unsigned char *blk = blocks + ((size_t)j * nb + b) * G4V_Q8_0_BLOCK_BYTES;
            int kind = llama ? ((j + 2 * b) % 7 == 0 ? 4 : 0) : (j * 3 + b) % 6;
            float v[G4V_Q8_BLOCK], amax = 0.0f;
            float scale = kind == 1 ? 1e-3f : kind == 2 ? 30.0f : 0.5f;
            int8_t q[G4V_Q8_BLOCK];
            for (int t = 0; t < G4V_Q8_BLOCK; t++) {
                v[t] = kind == 4 ? 0.0f : frand(-1.0f, 1.0f) * scale;
                amax = fabsf(v[t]) > amax ? fabsf(v[t]) : amax;
            }
            float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
            for (int t = 0; t < G4V_Q8_BLOCK; t++)
                q[t] = (int8_t)roundf(v[t] * id);
            if (kind == 3) { /* hand-made: -128 present, largest positive 100 */
                d = 0.01f;
                for (int t = 0; t < G4V_Q8_BLOCK; t++) {
                    int c = t == 0 ? -128 : (int)(rnd() % 229) - 128;
                    q[t] = (int8_t)(c > 100 ? 100 : c);
                }
            }
            if (kind == 5) d = 0.0f; /* a zero scale over nonzero codes */
            uint16_t h = to_f16(d);
            memcpy(blk, &h, 2);
            memcpy(blk + 2, q, G4V_Q8_BLOCK);
            float dw = g4v_load_elem(&h, G4V_DT_F16, 0);
            for (int t = 0; t < G4V_Q8_BLOCK; t++)
                wf[(size_t)j * k + b * G4V_Q8_BLOCK + t] = dw * (float)q[t];
        }
    return blocks;
}

/* Q8_0 weights used directly (INT8_BLOCKS only): (a) every blocked kernel's packed codes and
 * scales are the file's codes and its d as f32, bit for bit; (b) its GEMM equals gemm_q8.h's
 * definition computed here from the file's codes and scales (activations quantized per block with
 * gemm_q8.h's primitives, int64 sums, the fixed fmaf order); (c) for blocks as llama.cpp
 * quantizes them, the direct panels equal the panels of the widened f32 weight requantized,
 * byte for byte (so the encode is the same both ways); hand-made blocks (largest code < 127,
 * -128) are where the two differ, and only the direct path keeps the file's weights. */
static void test_q8_0(g4v_pool *pool) {
    if (MODE != G4V_MATH_INT8_BLOCKS) return;
    int m = 13, n = 37, k = 160, nb = k / G4V_Q8_BLOCK;
    float *wf = malloc(sizeof(float) * (size_t)n * k), *x = malloc(sizeof(float) * (size_t)m * k);
    float *y = malloc(sizeof(float) * (size_t)m * n), *want = malloc(sizeof(float) * m * n);
    for (int i = 0; i < m * k; i++)
        x[i] = frand(-2.0f, 2.0f) * (rnd() % 8 ? 1.0f : 8.0f);
    int count;
    const g4v_gemm_kernel *const *all = q8_kernels(&count);
    for (int llama = 0; llama < 2; llama++) {
        unsigned char *blocks = make_q8_0(n, k, llama, wf);
        for (int r = 0; r < m; r++) /* the definition, from the file's codes and scales */
            for (int j = 0; j < n; j++) {
                float acc = 0.0f;
                for (int b = 0; b < nb; b++) {
                    const float *xb = x + (size_t)r * k + b * 32;
                    const unsigned char *blk =
                        blocks + ((size_t)j * nb + b) * G4V_Q8_0_BLOCK_BYTES;
                    float amax = 0.0f, inv;
                    for (int t = 0; t < 32; t++)
                        amax = fabsf(xb[t]) > amax ? fabsf(xb[t]) : amax;
                    float sa = g4v_q8_scale(amax, &inv), sw = g4v_load_elem(blk, G4V_DT_F16, 0);
                    int64_t s = 0;
                    for (int t = 0; t < 32; t++)
                        s += (int64_t)g4v_q8_code(xb[t], inv) * (int8_t)blk[2 + t];
                    acc = fmaf((float)s, sa * sw, acc);
                }
                want[(size_t)r * n + j] = acc;
            }
        for (int i = 0; i < count; i++) {
            g4v_wmat *W = NULL;
            g4v_err err;
            REQUIRE(g4v_wmat_create_q8_0_with(KT, all[i], blocks, n, k, &W, &err) == G4V_OK);
            int nr = all[i]->nr, bad = 0;
            for (int j = 0; j < n; j++) {
                const unsigned char *panel =
                    (const unsigned char *)W->b + (size_t)(j / nr) * W->panel_bytes;
                const float *sc = (const float *)(panel + (size_t)W->kpad * nr);
                for (int b = 0; b < nb; b++) {
                    const unsigned char *blk =
                        blocks + ((size_t)j * nb + b) * G4V_Q8_0_BLOCK_BYTES;
                    float d = g4v_load_elem(blk, G4V_DT_F16, 0);
                    bad += memcmp(&sc[(size_t)b * nr + j % nr], &d, 4) != 0;
                    for (int t = 0; t < 32; t++) {
                        int kk = b * 32 + t;
                        bad += panel[((size_t)(kk / 4) * nr + j % nr) * 4 + kk % 4] != blk[2 + t];
                    }
                }
            }
            CHECK_MSG(!bad, "%s Q8_0 (llama=%d): %d packed codes or scales differ from the file's",
                      all[i]->name, llama, bad);
            g4v_gemm(pool, x, (size_t)k, W, y, (size_t)n, (size_t)m, NULL);
            CHECK_MSG(!memcmp(y, want, sizeof(float) * (size_t)m * n),
                      "%s Q8_0 (llama=%d): the GEMM differs from the definition", all[i]->name,
                      llama);
            g4v_wmat *Wf = NULL;
            REQUIRE(g4v_wmat_create_with(KT, all[i], wf, G4V_DT_F32, n, k, MODE, &Wf, NULL) ==
                    G4V_OK);
            int same = g4v_wmat_bytes(W) == g4v_wmat_bytes(Wf) &&
                       !memcmp(W->b, Wf->b, g4v_wmat_bytes(W));
            if (llama)
                CHECK_MSG(same, "%s: llama.cpp-style Q8_0 packs differently from its f32 widening",
                          all[i]->name);
            else
                CHECK_MSG(!same, "%s: hand-made Q8_0 blocks should differ from requantizing",
                          all[i]->name);
            g4v_wmat_free(Wf);
            g4v_wmat_free(W);
        }
        free(blocks);
    }
    /* refused outside INT8_BLOCKS' shape rule: K not whole blocks */
    g4v_wmat *W = (g4v_wmat *)1;
    g4v_err err;
    unsigned char dummy[G4V_Q8_0_BLOCK_BYTES * 2] = {0};
    CHECK(g4v_wmat_create_q8_0_in(KT, dummy, 1, 48, NULL, &W, &err) == G4V_ERR_ARG);
    CHECK(W == NULL);
    CHECK_CONTAINS(err.msg, "Q8_0");
    printf("Q8_0 direct: %d kernels\n", count);
    free(wf);
    free(x);
    free(y);
    free(want);
}

static void test_api(void) {
    int count;
    const g4v_gemm_kernel *const *all = q8_kernels(&count);
    REQUIRE(count >= 1);
    int n = 70, k = 130;
    float *wv = calloc((size_t)n * k, sizeof(float));
    g4v_wmat *W = NULL;
    g4v_err err;
    REQUIRE(g4v_wmat_create(KT, wv, G4V_DT_F32, n, k, MODE, &W, &err) == G4V_OK);
    CHECK(g4v_wmat_kernel(W) == all[0]);
    int nr = all[0]->nr, kg = all[0]->kg, kpad = (k + kg - 1) / kg * kg, np = (n + nr - 1) / nr;
    /* per channel: a scale and a correction per column; per block: both per column and block */
    size_t extra = MODE == G4V_MATH_INT8 ? 8 * (size_t)nr
                                         : 8 * (size_t)nr * (size_t)(kpad / G4V_Q8_BLOCK);
    CHECK(g4v_wmat_bytes(W) == (size_t)np * ((size_t)kpad * nr + extra));
    CHECK(g4v_wmat_packed_bytes(KT, NULL, G4V_DT_F32, n, k, MODE, 0) == g4v_wmat_bytes(W));
    printf("dispatch (%s): %s -> %s\n", g4v_cpu_isa_name(),
           MODE == G4V_MATH_INT8 ? "INT8" : "INT8_BLOCKS", g4v_wmat_kernel_name(W));
    g4v_wmat_free(W);
    /* float kernels never take INT8, INT8 kernels never take FAST/PRECISE */
    int nv;
    const g4v_kernel_variant *v = g4v_kernel_variants(&nv);
    for (int i = 0; i < nv; i++)
        if (v[i].family == G4V_KF_GEMM) {
            const g4v_gemm_kernel *g = v[i].impl.gemm;
            CHECK(g4v_gemm_kernel_fits(g, G4V_DT_F32, G4V_MATH_INT8) ==
                  (g->int8 && !g->q8_blocks));
            CHECK(g4v_gemm_kernel_fits(g, G4V_DT_F32, G4V_MATH_INT8_BLOCKS) ==
                  (g->int8 && g->q8_blocks));
            if (g->int8) CHECK(!g4v_gemm_kernel_fits(g, G4V_DT_BF16, G4V_MATH_FAST));
            if (g->int8) CHECK(!g4v_gemm_kernel_fits(g, G4V_DT_F32, G4V_MATH_PRECISE));
        }
    float *big = calloc((size_t)(G4V_Q8_MAX_K + 4), sizeof(float));
    W = (g4v_wmat *)1;
    CHECK(g4v_wmat_create(KT, big, G4V_DT_F32, 1, G4V_Q8_MAX_K + 4, MODE, &W, &err) ==
          G4V_ERR_UNSUPPORTED);
    CHECK(W == NULL);
    CHECK_CONTAINS(err.msg, "INT8");
    free(big);
    free(wv);
}

int main(void) {
    g4v_pool *pool = NULL;
    if (g4v_pool_create(2, &pool, NULL) != G4V_OK) return 1;
    static const g4v_math_mode modes[] = {G4V_MATH_INT8, G4V_MATH_INT8_BLOCKS};
    for (int mi = 0; mi < 2; mi++) {
        MODE = modes[mi];
        int count;
        const g4v_gemm_kernel *const *all = q8_kernels(&count);
        printf("%s kernels:", MODE == G4V_MATH_INT8 ? "INT8" : "INT8_BLOCKS");
        for (int i = 0; i < count; i++)
            printf(" %s", all[i]->name);
        printf("\n");
        test_api();
        test_shapes(NULL);
        test_shapes(pool);
        test_extremes(pool);
        test_special(pool);
        test_determinism();
        test_accuracy();
        test_q8_0(pool);
    }
    g4v_pool_destroy(pool);
    return test_summary("test_gemm_q8");
}
