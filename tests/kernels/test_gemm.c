/* test_gemm.c - every GEMM kernel this CPU can run (G4V_ISA caps them) against g4v_gemm_ref.
 *
 * Two kinds of data:
 *  - integer-valued X and W (|x|, |w| <= 4, clamp bounds on half-integers): every product and
 *    partial sum is exact in f32, so every kernel must match the reference bit for bit, whatever
 *    its summation order. This catches any packing, indexing, edge or epilogue mistake exactly.
 *  - random real values: kernels that sum in the reference's order with exact products (portable
 *    always; FMA kernels in FAST mode with BF16/F16 weights) must match bit for bit; the others
 *    (FMA with inexact products, vdpbf16ps pairs) must be within the rigorous bound
 *        |ours - ref| <= 2·γ(K+1)·(Σ_k |x'_k·w_k| + |Y_old|),   γ(n) = n·u / (1 - n·u), u = 2⁻²⁴,
 *    since each of the two results is within γ(K+1)·(...) of the exact value for any summation
 *    order. Measured errors are far smaller (the test prints the worst ratio to the bound).
 * Also: NaN/Inf propagation, strides and untouched padding, the same bits for 1, 2 and 3 threads
 * and for any blocking (including the allocation-free path), kernel dispatch, memory size and
 * argument errors. The kernels come from the registry (kernels/variants.def): every GEMM variant
 * the CPU runs, so a new one is tested by being registered. Built a second time against SIMDe
 * (test_gemm_simde) to run the AVX-512 kernels on CPUs without AVX-512.
 */
#include "base/cpu.h"
#include "base/pool.h"
#include "kernels/dispatch.h"
#include "kernels/gemm.h"
#include "kernels/gemm_kernel.h"
#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The kernel table the weights are prepared with (its GeGLU row kernel serves the fused epilogue
 * of every GEMM kernel and of the reference alike). */
#define KT g4v_kernels_current()

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}
static float frand(float lo, float hi) {
    return lo + (hi - lo) * (float)(rnd() >> 8) / 16777216.0f;
}
static int irand(int lo, int hi) {
    return lo + (int)(rnd() % (uint32_t)(hi - lo + 1));
}

/* f32 -> f16 bits, round to nearest even, normal range only (test data stays inside it). */
static uint16_t f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u, abs = u & 0x7fffffffu;
    if (abs < 0x38800000u) return (uint16_t)sign; /* below 2^-14: zero (not generated) */
    uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u);
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

/* A weight in dtype dt holding the values v (already representable in dt), and back as f32. */
static void *make_weight(const float *v, size_t count, g4v_dtype dt) {
    void *w = malloc(count * g4v_dtype_size(dt));
    for (size_t i = 0; i < count; i++) {
        if (dt == G4V_DT_F32) {
            ((float *)w)[i] = v[i];
        } else {
            uint16_t h = dt == G4V_DT_BF16 ? g4v_f32_to_bf16(v[i]) : f32_to_f16(v[i]);
            ((uint16_t *)w)[i] = h;
        }
    }
    return w;
}

typedef enum { DATA_INT, DATA_REAL } data_kind;

static void fill_weight_values(float *v, size_t count, g4v_dtype dt, data_kind kind) {
    for (size_t i = 0; i < count; i++) {
        float x = kind == DATA_INT ? (float)irand(-4, 4) : frand(-1.0f, 1.0f);
        if (kind == DATA_REAL && rnd() % 16 == 0) x = 0.0f;
        if (dt == G4V_DT_BF16) x = g4v_round_bf16(x);
        if (dt == G4V_DT_F16) x = g4v_f16_to_f32(f32_to_f16(x));
        v[i] = x;
    }
}

static void fill_x(float *x, size_t count, data_kind kind) {
    for (size_t i = 0; i < count; i++)
        x[i] = kind == DATA_INT ? (float)irand(-4, 4) : frand(-2.0f, 2.0f) * (rnd() % 8 ? 1 : 8);
}

typedef struct {
    const char *name;
    g4v_gemm_epi epi;
} epi_case;

static epi_case epi_cases(int i, data_kind kind) {
    epi_case c = {"none", g4v_gemm_epi_none()};
    float h = kind == DATA_INT ? 0.5f : 0.0f; /* half-integer bounds keep integer data exact */
    switch (i) {
    case 1:
        c.name = "in-clamp";
        c.epi.in_lo = -1.5f - h;
        c.epi.in_hi = 1.25f + h;
        break;
    case 2:
        c.name = "out-clamp";
        c.epi.out_lo = -3.0f - h;
        c.epi.out_hi = 2.5f;
        break;
    case 3:
        c.name = "accumulate";
        c.epi.accumulate = 1;
        break;
    case 5: /* the fused GeGLU (gelu_gate is set by check_case) with both clamps */
        c.name = "geglu";
        c.epi.in_lo = -2.0f - h;
        c.epi.in_hi = 1.5f;
        c.epi.out_lo = -4.0f - h;
        c.epi.out_hi = 3.5f;
        break;
    case 4:
        c.name = "all";
        c.epi.in_lo = -2.0f - h;
        c.epi.in_hi = 1.5f;
        c.epi.out_lo = -4.0f;
        c.epi.out_hi = INFINITY;
        c.epi.accumulate = 1;
        break;
    default:
        break;
    }
    return c;
}
enum { N_EPI = 6, EPI_GEGLU = 5 };

static double gamma_n(int n) {
    double u = ldexp(1.0, -24);
    return n * u / (1.0 - n * u);
}

static float prep_x(float v, const g4v_gemm_epi *e, g4v_math_mode mode) {
    v = v < e->in_lo ? e->in_lo : v > e->in_hi ? e->in_hi : v;
    return mode == G4V_MATH_FAST ? g4v_round_bf16(v) : v;
}

static double worst_ratio; /* largest |ours - ref| / bound seen, reported at the end */

/* Compares ours with ref element by element; tolerance 0 when `exact`. */
static int compare(const float *ours, const float *ref, const float *y0, const float *x,
                   const float *wv, int m, int n, int k, size_t ldx, size_t ldy,
                   const g4v_gemm_epi *e, g4v_math_mode mode, int exact, const char *what) {
    int bad = 0;
    for (int i = 0; i < m && bad < 3; i++)
        for (int j = 0; j < n && bad < 3; j++) {
            float o = ours[(size_t)i * ldy + j], r = ref[(size_t)i * ldy + j];
            if (isnan(o) || isnan(r) || isinf(o) || isinf(r)) {
                if (!(o == r || (isnan(o) && isnan(r)))) bad++;
                continue;
            }
            double tol = 0.0;
            if (!exact) {
                double s = e->accumulate ? fabs((double)y0[(size_t)i * ldy + j]) : 0.0;
                for (int t = 0; t < k; t++)
                    s += fabs((double)prep_x(x[(size_t)i * ldx + t], e, mode) *
                              (double)wv[(size_t)j * k + t]);
                tol = 2.0 * gamma_n(k + 1) * s;
                if (e->gelu_gate) /* scaled by |gelu(g)|, plus the product's own rounding */
                    tol = tol * fabs((double)g4v_gelu_tanh(e->gelu_gate[(size_t)i * e->ldg + j])) *
                              1.001 +
                          ldexp(fabs((double)r), -23);
                if (tol > 0 && fabs((double)o - r) / tol > worst_ratio)
                    worst_ratio = fabs((double)o - r) / tol;
            }
            if (!(fabs((double)o - (double)r) <= tol)) {
                if (!bad)
                    fprintf(stderr, "  %s: Y[%d][%d] = %.9g, reference %.9g (tolerance %.3g)\n",
                            what, i, j, o, r, tol);
                bad++;
            }
        }
    return bad == 0;
}

/* Whether the kernel is a portable one (registered with needs == 0): the specification in code. */
static int is_portable(const g4v_gemm_kernel *kern) {
    int nv;
    const g4v_kernel_variant *v = g4v_kernel_variants(&nv);
    for (int i = 0; i < nv; i++)
        if (v[i].family == G4V_KF_GEMM && v[i].impl.gemm == kern) return v[i].needs == 0;
    return 0;
}

/* Whether kernel `kern` must reproduce the reference exactly for this data. */
static int exact_expected(const g4v_gemm_kernel *kern, g4v_dtype dt, g4v_math_mode mode,
                          data_kind kind) {
    if (kind == DATA_INT || is_portable(kern)) return 1;
    if (kern->a_bf16) return 0;                       /* vdpbf16ps sums pairs */
    return mode == G4V_MATH_FAST && dt != G4V_DT_F32; /* exact products: FMA == mul + add */
}

/* The GEMM kernels this build and CPU run (capped by G4V_ISA), best first, from the registry. */
static const g4v_gemm_kernel *const *kernels(int *count) {
    static const g4v_gemm_kernel *list[32];
    int nv, n = 0;
    const g4v_kernel_variant *v = g4v_kernel_variants(&nv);
    for (int i = 0; i < nv && n < 32; i++)
        if (v[i].family == G4V_KF_GEMM && !(v[i].needs & ~g4v_kernel_features()))
            list[n++] = v[i].impl.gemm;
    *count = n;
    return list;
}

/* Runs every fitting kernel on one shape / dtype / mode / epilogue against the reference. */
static void check_case(int m, int n, int k, g4v_dtype dt, g4v_math_mode mode, int epi_i,
                       data_kind kind, g4v_pool *pool) {
    size_t ldx = (size_t)k + (size_t)(m % 3), ldy = (size_t)n + (size_t)(n % 2) * 5;
    float *x = malloc(sizeof(float) * (size_t)m * ldx);
    float *wv = malloc(sizeof(float) * (size_t)n * k);
    float *y0 = malloc(sizeof(float) * (size_t)m * ldy);
    float *yr = malloc(sizeof(float) * (size_t)m * ldy);
    float *yo = malloc(sizeof(float) * (size_t)m * ldy);
    fill_x(x, (size_t)m * ldx, kind);
    fill_weight_values(wv, (size_t)n * k, dt, kind);
    fill_x(y0, (size_t)m * ldy, kind);
    void *w = make_weight(wv, (size_t)n * k, dt);
    epi_case ec = epi_cases(epi_i, kind);
    float *gate = NULL;
    if (epi_i == EPI_GEGLU) { /* gates across GELU's range: ~0, linear and curved parts */
        gate = malloc(sizeof(float) * (size_t)m * ldy);
        for (size_t i = 0; i < (size_t)m * ldy; i++)
            gate[i] = frand(-5.0f, 5.0f);
        ec.epi.gelu_gate = gate;
        ec.epi.ldg = ldy;
    }
    memcpy(yr, y0, sizeof(float) * (size_t)m * ldy);
    g4v_gemm_ref(KT, x, ldx, w, dt, yr, ldy, (size_t)m, n, k, mode, &ec.epi);
    int count;
    const g4v_gemm_kernel *const *all = kernels(&count);
    for (int i = 0; i < count; i++) {
        const g4v_gemm_kernel *kern = all[i];
        if (!g4v_gemm_kernel_fits(kern, dt, mode)) continue;
        g4v_wmat *W = NULL;
        g4v_err err;
        if (g4v_wmat_create_with(KT, kern, w, dt, n, k, mode, &W, &err) != G4V_OK) {
            CHECK_MSG(0, "create %s: %s", kern->name, err.msg);
            continue;
        }
        memcpy(yo, y0, sizeof(float) * (size_t)m * ldy);
        g4v_gemm(pool, x, ldx, W, yo, ldy, (size_t)m, &ec.epi);
        char what[160];
        snprintf(what, sizeof what, "%s %s %s %s %s M=%d N=%d K=%d", kern->name, g4v_dtype_name(dt),
                 mode == G4V_MATH_FAST ? "FAST" : "PRECISE", ec.name,
                 kind == DATA_INT ? "int" : "real", m, n, k);
        int ok = compare(yo, yr, y0, x, wv, m, n, k, ldx, ldy, &ec.epi, mode,
                         exact_expected(kern, dt, mode, kind), what);
        /* padding columns between N and ldy are never written */
        for (int r = 0; r < m && ok; r++)
            for (size_t c = (size_t)n; c < ldy; c++)
                if (memcmp(&yo[(size_t)r * ldy + c], &y0[(size_t)r * ldy + c], 4)) ok = 0;
        CHECK_MSG(ok, "%s", what);
        g4v_wmat_free(W);
    }
    free(gate);
    free(w);
    free(x);
    free(wv);
    free(y0);
    free(yr);
    free(yo);
}

static const g4v_dtype dtypes[] = {G4V_DT_BF16, G4V_DT_F16, G4V_DT_F32};
static const g4v_math_mode modes[] = {G4V_MATH_FAST, G4V_MATH_PRECISE};

/* Small and awkward shapes: every dtype, mode and epilogue with integer data (exact), and two
 * epilogues per shape (rotating) with real data. */
static void test_small_shapes(g4v_pool *pool) {
    static const int fixed[][3] = {{1, 1, 1},    {1, 1, 17}, {12, 32, 16}, {6, 16, 8}, {13, 33, 17},
                                   {24, 64, 32}, {5, 7, 3},  {37, 41, 43}, {2, 97, 2}, {61, 3, 67}};
    int n_fixed = (int)(sizeof fixed / sizeof fixed[0]);
    for (int s = 0; s < n_fixed + 4; s++) {
        int m, n, k;
        if (s < n_fixed) {
            m = fixed[s][0], n = fixed[s][1], k = fixed[s][2];
        } else {
            m = irand(1, 70), n = irand(1, 70), k = irand(1, 70);
        }
        for (int d = 0; d < 3; d++)
            for (int md = 0; md < 2; md++)
                for (int e = 0; e < N_EPI; e++) {
                    check_case(m, n, k, dtypes[d], modes[md], e, DATA_INT, pool);
                    if ((e + s) % N_EPI < 2)
                        check_case(m, n, k, dtypes[d], modes[md], e, DATA_REAL, pool);
                }
    }
}

/* Larger and prime shapes up to ~300, and real N/K with few rows: two dtype/mode combinations
 * per shape (rotating), one with real data and one with integer data. */
static void test_larger_shapes(g4v_pool *pool) {
    static const int shapes[][3] = {{127, 257, 263}, {300, 96, 64},  {97, 101, 103},
                                    {251, 128, 299}, {13, 768, 768}, {5, 3072, 768},
                                    {4, 768, 3072},  {25, 1152, 96}, {2, 4304, 1152}};
    int count = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < count; s++)
        for (int c = 0; c < 2; c++) {
            int combo = (s + 3 * c) % 6, d = combo / 2, md = combo % 2, e = (s + c) % N_EPI;
            check_case(shapes[s][0], shapes[s][1], shapes[s][2], dtypes[d], modes[md], e,
                       c ? DATA_INT : DATA_REAL, pool);
        }
}

/* NaN and Inf in X reach Y as the reference says. */
static void test_special_values(void) {
    int m = 14, n = 35, k = 40;
    float *x = malloc(sizeof(float) * m * k), *wv = malloc(sizeof(float) * n * k);
    float *yr = calloc((size_t)m * n, sizeof(float)), *yo = calloc((size_t)m * n, sizeof(float));
    fill_x(x, (size_t)m * k, DATA_REAL);
    x[1 * k + 5] = NAN;
    uint32_t snan = 0x7f800001u; /* signalling NaN: truncating it to bf16 would give infinity */
    memcpy(&x[2 * k + 7], &snan, 4);
    x[3 * k + 0] = INFINITY;
    x[4 * k + 39] = -INFINITY;
    x[13 * k + 20] = INFINITY;
    x[13 * k + 21] = -INFINITY;
    for (int d = 0; d < 3; d++) {
        fill_weight_values(wv, (size_t)n * k, dtypes[d], DATA_REAL);
        wv[7 * k + 0] = 0.0f; /* inf * 0 = NaN in column 7 of row 3 */
        void *w = make_weight(wv, (size_t)n * k, dtypes[d]);
        for (int md = 0; md < 2; md++) {
            g4v_gemm_ref(KT, x, (size_t)k, w, dtypes[d], yr, (size_t)n, (size_t)m, n, k, modes[md],
                         NULL);
            int count;
            const g4v_gemm_kernel *const *all = kernels(&count);
            for (int i = 0; i < count; i++) {
                if (!g4v_gemm_kernel_fits(all[i], dtypes[d], modes[md])) continue;
                g4v_wmat *W = NULL;
                REQUIRE(g4v_wmat_create_with(KT, all[i], w, dtypes[d], n, k, modes[md], &W, NULL) ==
                        G4V_OK);
                g4v_gemm(NULL, x, (size_t)k, W, yo, (size_t)n, (size_t)m, NULL);
                int ok = 1;
                for (int r = 0; r < m * n; r++)
                    if (isnan(yr[r]) != isnan(yo[r]) || (isinf(yr[r]) && yr[r] != yo[r])) ok = 0;
                CHECK_MSG(ok && isnan(yo[1 * n]) && isnan(yo[2 * n + 3]) && isnan(yo[3 * n + 7]),
                          "%s %s: NaN/Inf pattern differs", all[i]->name,
                          g4v_dtype_name(dtypes[d]));
                g4v_wmat_free(W);
            }
        }
        free(w);
    }
    free(x);
    free(wv);
    free(yr);
    free(yo);
}

/* Rounding to bf16 while packing A: with W = identity, Y = x' exactly in any summation order,
 * so FAST mode must give g4v_round_bf16(clamp(x)) for ties, near-ties and carries into the
 * exponent (infinity is left out: inf * 0 would make every output NaN). (Subnormals are left out:
 * vdpbf16ps treats subnormal inputs as zero.) */
static void test_rounding(void) {
    int m = 37, n = 67;
    float *x = malloc(sizeof(float) * m * n), *y = malloc(sizeof(float) * m * n);
    float *wv = calloc((size_t)n * n, sizeof(float));
    static const uint32_t low[] = {0x8000, 0x7fff, 0x8001, 0x0000, 0xffff, 0x18000, 0x17fff};
    for (int i = 0; i < m * n; i++) {
        uint32_t u = (rnd() & 0x83fe0000u) | 0x3c000000u; /* 2^-7 <= |x| < 2^8 */
        u = (u & ~0x1ffffu) + low[i % 7];
        memcpy(&x[i], &u, 4);
    }
    for (int i = 0; i < n; i++)
        wv[(size_t)i * n + i] = 1.0f;
    g4v_gemm_epi clampy = g4v_gemm_epi_none();
    clampy.in_lo = -3.0000002f;
    clampy.in_hi = 1.00390625f; /* halfway between two bf16 values */
    for (int d = 0; d < 3; d++) {
        void *w = make_weight(wv, (size_t)n * n, dtypes[d]);
        for (int c = 0; c < 2; c++) {
            const g4v_gemm_epi *e = c ? &clampy : NULL;
            int count;
            const g4v_gemm_kernel *const *all = kernels(&count);
            for (int i = 0; i < count; i++) {
                if (!g4v_gemm_kernel_fits(all[i], dtypes[d], G4V_MATH_FAST)) continue;
                g4v_wmat *W = NULL;
                REQUIRE(g4v_wmat_create_with(KT, all[i], w, dtypes[d], n, n, G4V_MATH_FAST, &W,
                                             NULL) == G4V_OK);
                g4v_gemm(NULL, x, (size_t)n, W, y, (size_t)n, (size_t)m, e);
                int bad = 0;
                for (int r = 0; r < m * n; r++) {
                    float want = prep_x(x[r], e ? e : &clampy, G4V_MATH_FAST);
                    if (!e) want = g4v_round_bf16(x[r]);
                    if (y[r] != want) bad++;
                }
                CHECK_MSG(!bad, "%s %s clamp=%d: %d values rounded wrongly", all[i]->name,
                          g4v_dtype_name(dtypes[d]), c, bad);
                g4v_wmat_free(W);
            }
        }
        free(w);
    }
    free(x);
    free(y);
    free(wv);
}

/* The same bits for 1, 2, 3 threads and for any task grid, including the no-scratch path. */
static void test_determinism(void) {
    int m = 151, n = 100, k = 170;
    float *x = malloc(sizeof(float) * m * k), *wv = malloc(sizeof(float) * n * k);
    float *y1 = malloc(sizeof(float) * m * n), *y2 = malloc(sizeof(float) * m * n);
    fill_x(x, (size_t)m * k, DATA_REAL);
    fill_weight_values(wv, (size_t)n * k, G4V_DT_BF16, DATA_REAL);
    void *w = make_weight(wv, (size_t)n * k, G4V_DT_BF16);
    g4v_pool *pools[3] = {NULL, NULL, NULL};
    for (int t = 0; t < 3; t++)
        REQUIRE(g4v_pool_create(t + 1, &pools[t], NULL) == G4V_OK);
    float *gate = malloc(sizeof(float) * m * n);
    for (int r = 0; r < m * n; r++)
        gate[r] = frand(-5.0f, 5.0f);
    g4v_gemm_epi epis[2] = {epi_cases(4, DATA_REAL).epi, epi_cases(EPI_GEGLU, DATA_REAL).epi};
    epis[1].gelu_gate = gate;
    epis[1].ldg = (size_t)n;
    /* {tiles per task, panels per task, no scratch, K chunk in groups, output prefetch (1 on,
     * -1 off, 0 the default: off here, N < K)} */
    static const g4v_gemm_cfg cfgs[] = {{1, 0, 0, 0, 0},  {0, 1, 0, 0, 1}, {3, 2, 0, 0, -1},
                                        {0, 0, 0, 2, 1},  {4, 2, 0, 5, 0}, {0, 0, 1, 0, 0},
                                        {0, 0, 1, 1, -1}, {2, 3, 1, 3, 0}};
    int count;
    const g4v_gemm_kernel *const *all = kernels(&count);
    for (int q = 0; q < 2 * count; q++) /* both epilogues x every kernel */
        for (int md = 0; md < 2; md++) {
            int i = q % count;
            const g4v_gemm_epi epi = epis[q / count];
            if (!g4v_gemm_kernel_fits(all[i], G4V_DT_BF16, modes[md])) continue;
            g4v_wmat *W = NULL;
            REQUIRE(g4v_wmat_create_with(KT, all[i], w, G4V_DT_BF16, n, k, modes[md], &W, NULL) ==
                    G4V_OK);
            for (int r = 0; r < m * n; r++)
                y1[r] = (float)(r % 7);
            g4v_gemm(pools[0], x, (size_t)k, W, y1, (size_t)n, (size_t)m, &epi);
            for (int t = 1; t < 3; t++) {
                for (int r = 0; r < m * n; r++)
                    y2[r] = (float)(r % 7);
                g4v_gemm(pools[t], x, (size_t)k, W, y2, (size_t)n, (size_t)m, &epi);
                CHECK_MSG(!memcmp(y1, y2, sizeof(float) * m * n), "%s: %d threads differ",
                          all[i]->name, t + 1);
            }
            for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
                for (int r = 0; r < m * n; r++)
                    y2[r] = (float)(r % 7);
                g4v_gemm_cfg_run(pools[c % 3], x, (size_t)k, W, y2, (size_t)n, (size_t)m, &epi,
                                 &cfgs[c]);
                CHECK_MSG(!memcmp(y1, y2, sizeof(float) * m * n), "%s: blocking %zu differs",
                          all[i]->name, c);
            }
            g4v_wmat_free(W);
        }
    for (int t = 0; t < 3; t++)
        g4v_pool_destroy(pools[t]);
    free(w);
    free(x);
    free(wv);
    free(y1);
    free(y2);
    free(gate);
}

/* Each in-place kernel against its packed twin (the next kernel of the table that fits the same
 * BF16 weight and mode and packs it): the same micro-kernel arithmetic with the operands' roles
 * swapped, so the same bits, on real-valued data, awkward shapes (ragged tiles, odd K, K over
 * several chunks), every epilogue and both the scratch and the allocation-free paths. */
static void test_in_place_twins(g4v_pool *pool) {
    static const int shapes[][3] = {{1, 1, 1},    {13, 7, 33},   {37, 29, 250}, {64, 48, 768},
                                    {95, 130, 9}, {33, 13, 1537}, {200, 25, 96}};
    static const g4v_gemm_cfg small_chunks = {0, 0, 0, 1, 0}, no_scratch = {0, 0, 1, 0, 0};
    int count, tested = 0;
    const g4v_gemm_kernel *const *all = kernels(&count);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        size_t ldx = (size_t)k + 3, ldy = (size_t)n + 2;
        float *x = malloc(sizeof(float) * (size_t)m * ldx), *wv = malloc(sizeof(float) * n * k);
        float *y0 = malloc(sizeof(float) * (size_t)m * ldy);
        float *gate = malloc(sizeof(float) * (size_t)m * ldy);
        float *yi = malloc(sizeof(float) * (size_t)m * ldy), *yp = malloc(sizeof(float) * m * ldy);
        fill_x(x, (size_t)m * ldx, DATA_REAL);
        fill_x(y0, (size_t)m * ldy, DATA_REAL);
        for (size_t r = 0; r < (size_t)m * ldy; r++)
            gate[r] = frand(-5.0f, 5.0f);
        fill_weight_values(wv, (size_t)n * k, G4V_DT_BF16, DATA_REAL);
        void *w = make_weight(wv, (size_t)n * k, G4V_DT_BF16);
        for (int md = 0; md < 2; md++)
            for (int i = 0; i < count; i++) {
                if (!all[i]->inner || !g4v_gemm_kernel_fits(all[i], G4V_DT_BF16, modes[md]))
                    continue;
                const g4v_gemm_kernel *twin = NULL;
                for (int t = i + 1; t < count && !twin; t++)
                    if (!all[t]->inner && g4v_gemm_kernel_fits(all[t], G4V_DT_BF16, modes[md]))
                        twin = all[t];
                REQUIRE(twin != NULL);
                g4v_wmat *Wi = NULL, *Wp = NULL;
                REQUIRE(g4v_wmat_create_with(KT, all[i], w, G4V_DT_BF16, n, k, modes[md], &Wi,
                                             NULL) == G4V_OK);
                REQUIRE(g4v_wmat_create_with(KT, twin, w, G4V_DT_BF16, n, k, modes[md], &Wp,
                                             NULL) == G4V_OK);
                CHECK(g4v_wmat_in_place(Wi) && !g4v_wmat_in_place(Wp));
                for (int e = 0; e < N_EPI; e++)
                    for (int c = 0; c < 3; c++) {
                        g4v_gemm_epi epi = epi_cases(e, DATA_REAL).epi;
                        if (e == EPI_GEGLU) {
                            epi.gelu_gate = gate;
                            epi.ldg = ldy;
                        }
                        const g4v_gemm_cfg *cfg =
                            c == 1 ? &small_chunks : c == 2 ? &no_scratch : NULL;
                        memcpy(yi, y0, sizeof(float) * (size_t)m * ldy);
                        memcpy(yp, y0, sizeof(float) * (size_t)m * ldy);
                        g4v_gemm_cfg_run(pool, x, ldx, Wi, yi, ldy, (size_t)m, &epi, cfg);
                        g4v_gemm(pool, x, ldx, Wp, yp, ldy, (size_t)m, &epi);
                        CHECK_MSG(!memcmp(yi, yp, sizeof(float) * (size_t)m * ldy),
                                  "%s vs %s %s epi %d cfg %d M=%d N=%d K=%d differ", all[i]->name,
                                  twin->name, modes[md] == G4V_MATH_FAST ? "FAST" : "PRECISE", e,
                                  c, m, n, k);
                        tested++;
                    }
                g4v_wmat_free(Wi);
                g4v_wmat_free(Wp);
            }
        free(w);
        free(x);
        free(wv);
        free(y0);
        free(gate);
        free(yi);
        free(yp);
    }
    CHECK_MSG(tested > 0, "no in-place kernel on this CPU");
    printf("in place vs packed twin: %d cases bit-identical\n", tested);
}

/* An F32 weight whose values are all bf16 values takes the BF16 kernels and gives the BF16
 * weight's bits, on every table this CPU runs (portable, AVX2, AVX-512, AVX-512 BF16), in FAST and
 * PRECISE, read in place (from its bf16 copy) and packed (G4V_PACK_WEIGHTS=1), prepared in the
 * caller's storage and in its own; one value off the bf16 grid and it takes the F32 kernel. */
static void test_f32_of_bf16(g4v_pool *pool) {
    const int m = 37, n = 77, k = 131; /* tails in every dimension */
    float *wv = malloc(sizeof(float) * n * k), *x = malloc(sizeof(float) * m * k);
    float *y16 = malloc(sizeof(float) * m * n), *y32 = malloc(sizeof(float) * m * n);
    fill_weight_values(wv, (size_t)n * k, G4V_DT_BF16, DATA_REAL);
    fill_x(x, (size_t)m * k, DATA_REAL);
    uint16_t *w16 = make_weight(wv, (size_t)n * k, G4V_DT_BF16);
    float *w32 = make_weight(wv, (size_t)n * k, G4V_DT_F32);
    const unsigned levels[] = {0, G4V_CPU_AVX2, G4V_CPU_AVX2 | G4V_CPU_AVX512,
                               G4V_CPU_AVX2 | G4V_CPU_AVX512 | G4V_CPU_AVX512BF16,
                               G4V_CPU_NEON, G4V_CPU_NEON | G4V_CPU_ARM_BF16};
    unsigned have = g4v_kernel_features();
    int tested = 0;
    for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
        if ((levels[l] & have) != levels[l] || (l && !(levels[l] & G4V_KERNEL_KNOWN_FEATURES)))
            continue;
        const g4v_kernels *kt = g4v_kernels_for(levels[l]);
        for (int md = 0; md < 2; md++)
            for (int packed = 0; packed < 2; packed++)
                for (int in_storage = 0; in_storage < 2; in_storage++) {
                    if (packed) setenv("G4V_PACK_WEIGHTS", "1", 1);
                    g4v_wmat *W16 = NULL, *W32 = NULL;
                    size_t sb = g4v_wmat_packed_bytes(kt, w32, G4V_DT_F32, n, k, modes[md], 0);
                    void *storage = in_storage && sb ? aligned_alloc(64, (sb + 63) / 64 * 64) : NULL;
                    REQUIRE(g4v_wmat_create(kt, w16, G4V_DT_BF16, n, k, modes[md], &W16, NULL) ==
                            G4V_OK);
                    REQUIRE(g4v_wmat_create_in(kt, w32, G4V_DT_F32, n, k, modes[md], 0, storage, &W32,
                                               NULL) == G4V_OK);
                    unsetenv("G4V_PACK_WEIGHTS");
                    const char *k16 = g4v_wmat_kernel_name(W16), *k32 = g4v_wmat_kernel_name(W32);
                    CHECK_MSG(!strcmp(k16, k32), "features 0x%x %s: F32 of bf16 values takes %s, "
                              "BF16 %s", levels[l], modes[md] == G4V_MATH_FAST ? "FAST" : "PRECISE",
                              k32, k16);
                    CHECK(!g4v_wmat_in_place(W32)); /* its copy, not the caller's array */
                    g4v_gemm(pool, x, (size_t)k, W16, y16, (size_t)n, (size_t)m, NULL);
                    g4v_gemm(pool, x, (size_t)k, W32, y32, (size_t)n, (size_t)m, NULL);
                    CHECK_MSG(!memcmp(y16, y32, sizeof(float) * m * n),
                              "features 0x%x %s %s: F32 of bf16 values not bit-identical to BF16 "
                              "(%s)", levels[l], modes[md] == G4V_MATH_FAST ? "FAST" : "PRECISE",
                              packed ? "packed" : "in place", k32);
                    g4v_wmat_free(W16);
                    g4v_wmat_free(W32);
                    free(storage);
                    tested++;
                }
        /* one value off the bf16 grid: the F32 kernels (f32 panels), in both modes */
        float keep = w32[(size_t)n * k - 1];
        w32[(size_t)n * k - 1] = nextafterf(keep == 0.0f ? 1.0f : keep, 2.0f);
        for (int md = 0; md < 2; md++) {
            g4v_wmat *W = NULL;
            REQUIRE(g4v_wmat_create(kt, w32, G4V_DT_F32, n, k, modes[md], &W, NULL) == G4V_OK);
            CHECK_MSG(!g4v_wmat_kernel(W)->b_bf16 && strstr(g4v_wmat_kernel_name(W), "-f32"),
                      "features 0x%x: an F32 weight off the bf16 grid takes %s", levels[l],
                      g4v_wmat_kernel_name(W));
            g4v_wmat_free(W);
        }
        w32[(size_t)n * k - 1] = keep;
    }
    CHECK(tested > 0);
    printf("F32 weights of bf16 values: %d cases bit-identical to BF16\n", tested);
    free(wv);
    free(x);
    free(y16);
    free(y32);
    free(w16);
    free(w32);
}

/* The dispatcher picks the first fitting kernel, honouring G4V_ISA; sizes; argument errors. */
static void test_api(void) {
    int n = 768, k = 768;
    float *wv = malloc(sizeof(float) * n * k);
    fill_weight_values(wv, (size_t)n * k, G4V_DT_BF16, DATA_REAL);
    unsigned f = g4v_kernel_features();
    for (int d = 0; d < 3; d++) {
        void *w = make_weight(wv, (size_t)n * k, dtypes[d]);
        for (int md = 0; md < 2; md++) {
            g4v_wmat *W = NULL;
            REQUIRE(g4v_wmat_create(KT, w, dtypes[d], n, k, modes[md], &W, NULL) == G4V_OK);
            int count;
            /* wv holds bf16 values, so the F32 weight is taken as its BF16 form (gemm.h) */
            g4v_dtype as = dtypes[d] == G4V_DT_F32 ? G4V_DT_BF16 : dtypes[d];
            const g4v_gemm_kernel *const *all = kernels(&count), *want = NULL;
            for (int i = 0; i < count && !want; i++)
                if (g4v_gemm_kernel_fits(all[i], as, modes[md])) want = all[i];
            CHECK(g4v_wmat_kernel(W) == want);
            CHECK(!strcmp(g4v_wmat_kernel_name(W), want->name));
            CHECK(g4v_wmat_n(W) == n && g4v_wmat_k(W) == k);
            size_t esize = as == G4V_DT_BF16 ? 2 : 4;
            /* BF16 weights in FAST and PRECISE are read where they lie: nothing held (an F32
             * one's bf16 copy is the weight's own) */
            int in_place = dtypes[d] == G4V_DT_BF16 && want->inner;
            CHECK(g4v_wmat_in_place(W) == in_place);
            CHECK_MSG(g4v_wmat_bytes(W) == (in_place ? 0 : (size_t)n * k * esize), "%s: %zu bytes",
                      want->name, g4v_wmat_bytes(W));
            CHECK(g4v_wmat_packed_bytes(KT, w, dtypes[d], n, k, modes[md], 0) ==
                  (dtypes[d] == G4V_DT_F32 && want->inner ? (size_t)n * k * 2
                   : in_place                             ? 0
                                                          : (size_t)n * k * esize));
#if defined(__x86_64__) /* every x86 table has in-place kernels (ARM64: not yet) */
            CHECK_MSG(dtypes[d] != G4V_DT_BF16 || in_place, "%s: BF16 %s weight packed",
                      want->name, modes[md] == G4V_MATH_FAST ? "FAST" : "PRECISE");
#endif
            if (d == 0 && md == 0)
                printf("dispatch (%s): BF16 FAST -> %s\n", g4v_cpu_isa_name(), want->name);
            g4v_wmat_free(W);
        }
        free(w);
    }
    /* G4V_PACK_WEIGHTS=1 opts out of reading BF16 weights in place: the packed twin */
    {
        void *w = make_weight(wv, (size_t)n * k, G4V_DT_BF16);
        g4v_wmat *Wi = NULL, *Wp = NULL;
        REQUIRE(g4v_wmat_create(KT, w, G4V_DT_BF16, n, k, G4V_MATH_FAST, &Wi, NULL) == G4V_OK);
        setenv("G4V_PACK_WEIGHTS", "1", 1);
        REQUIRE(g4v_wmat_create(KT, w, G4V_DT_BF16, n, k, G4V_MATH_FAST, &Wp, NULL) == G4V_OK);
        unsetenv("G4V_PACK_WEIGHTS");
#if defined(__x86_64__)
        CHECK(g4v_wmat_in_place(Wi));
#endif
        CHECK(!g4v_wmat_in_place(Wp) && !g4v_wmat_kernel(Wp)->inner);
        CHECK(g4v_wmat_bytes(Wp) == (size_t)n * k * 2);
        g4v_wmat_free(Wi);
        g4v_wmat_free(Wp);
        free(w);
    }
    const char *isa = getenv("G4V_ISA");
    if (isa && !strcmp(isa, "portable")) CHECK((f & (G4V_CPU_AVX2 | G4V_CPU_AVX512)) == 0);
    g4v_wmat *W = (g4v_wmat *)1;
    g4v_err err;
    CHECK(g4v_wmat_create(KT, wv, G4V_DT_BF16, 0, 5, G4V_MATH_FAST, &W, &err) == G4V_ERR_ARG);
    CHECK(W == NULL);
    CHECK_CONTAINS(err.msg, "0x5");
    CHECK(g4v_wmat_create(KT, wv, G4V_DT_BF16, 5, -1, G4V_MATH_FAST, &W, &err) == G4V_ERR_ARG);
    CHECK(g4v_wmat_create(KT, NULL, G4V_DT_BF16, 5, 5, G4V_MATH_FAST, &W, &err) == G4V_ERR_ARG);
    CHECK(g4v_wmat_create(KT, wv, (g4v_dtype)7, 5, 5, G4V_MATH_FAST, &W, &err) == G4V_ERR_ARG);
    CHECK_CONTAINS(err.msg, "dtype 7");
    CHECK(g4v_wmat_create(KT, wv, G4V_DT_BF16, 5, 5, (g4v_math_mode)4, &W, &err) == G4V_ERR_ARG);
    CHECK(g4v_wmat_create(KT, wv, G4V_DT_BF16, 1 << 21, 5, G4V_MATH_FAST, &W, &err) ==
          G4V_ERR_UNSUPPORTED);
    g4v_wmat_free(NULL);
    free(wv);
}

int main(void) {
    g4v_pool *pool = NULL;
    if (g4v_pool_create(2, &pool, NULL) != G4V_OK) return 1;
    test_api();
    test_small_shapes(NULL);
    test_larger_shapes(pool);
    test_special_values();
    test_rounding();
    test_determinism();
    test_in_place_twins(pool);
    test_f32_of_bf16(pool);
    g4v_pool_destroy(pool);
    printf("worst |ours - ref| / bound over inexact cases: %.3g\n", worst_ratio);
    return test_summary("test_gemm");
}
