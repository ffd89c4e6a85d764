/* bench_amx.c - make bench-amx's C part (scripts/make/bench-amx.sh): Intel AMX hardware against
 * our emulator (kernels/amx_emu.h) bit for bit, then the tile kernels' speed against the tile
 * peak measured in the same run.
 *
 * usage: bench_amx [--tiles N] [--layer-rows M] [--attn-queries Q] [--gemm-rows M]
 *                  [--threads 1,2] [--reps R] [--emulated] [--checks-only] [--speed-only]
 *
 * Checks (hardware against the emulator; on a CPU without AMX only the emulator's side runs and
 * is judged against the SDM's values, and this says so):
 *   1. the discriminating vectors of TDPBF16PS (docs/NUMERICS.md §13.2): the
 *      order of additions (SDM: even and odd chains from 0, then C + (even + odd)), C first, DAZ
 *      on bf16 inputs, FTZ on results;
 *   2. N random 16 x 16 x 32 tiles (default 10^6) through one TDPBF16PS each, and N/10 through
 *      each of TDPBSSD, TDPBSUD, TDPBUSD, TDPBUUD where the CPU has AMX-INT8;
 *   3. one full layer of each tower shape (e4b: D 768, I 3072, 12 heads of 64; 31B: D 1152,
 *      I 4304, 16 heads of 72), M rows (default 260: 4 rows past whole 16-row tiles): the seven
 *      GEMMs through g4v_gemm_amx_bf16 against g4v_gemm_amx_bf16_emu and its attention through
 *      g4v_attention_amx against g4v_attention_amx_emu;
 *   4. attention over 2304 and 10080 keys (a block of Q queries, default 64: the emulator needs
 *      ~8k FMAs per tile product, and every query row is computed independently), both shapes.
 * Speed (hardware only, each figure with the tile peak of the same run and thread count):
 *   the peak: a 4-accumulator TDPBF16PS loop (2 A + 2 B tiles, 16384 FLOP per instruction);
 *   the bf16 GEMM at the towers' shapes (M = --gemm-rows, default 2304) through the AMX kernel
 *   and, beside it, the AVX-512 kernel the default table takes without AMX (G4V_ISA=avx512-noamx);
 *   attention at 2304 patches, both head sizes. 1 and 2 threads (--threads).
 * --emulated runs the "hardware" side on the emulator too (tests the harness anywhere; it claims
 * nothing about hardware).
 * Exit status: 0 when every check that ran agreed (or could not run: no AMX), 1 on a difference.
 */
#include "bench_util.h"

#include "base/amx.h"
#include "base/cpu.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/pool.h"
#include "kernels/amx_check.h"
#include "kernels/amx_emu.h"
#include "kernels/dispatch.h"
#include "kernels/gemm.h"
#include "kernels/gemm_kernel.h"
#include "kernels/kernels.h"
#include "kernels/x86_amx/amx_tile.h"
#include "kernels/x86_amx/amx_twins.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if G4V_TILES_EMULATED
#error "bench_amx measures the real instructions: build it without G4V_SIMDE / G4V_AMX_EMU"
#endif

static int emulated_hw; /* --emulated: the "hardware" side runs on the emulator too */
static int failures;

/* ---- one tile instruction, on the hardware or on the emulator -------------------------------- */

enum { OP_BF16, OP_SSD, OP_SUD, OP_USD, OP_UUD, NOPS };
static const char *const op_names[NOPS] = {"TDPBF16PS", "TDPBSSD", "TDPBSUD", "TDPBUSD",
                                           "TDPBUUD"};

/* C (m x n 32-bit, row stride 64 B) += A (m rows x kb bytes) . B (kb/4 rows x 4n bytes), tiles 0,
 * 1, 2; the configuration through a pointer the compiler cannot see through (AMX.md: GCC 12). */
static void tile_op_hw(int op, const void *a, const void *b, void *c, int m, int kb, int n) {
    static _Thread_local g4v_tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    cfg.rows[0] = (uint8_t)m, cfg.colsb[0] = (uint16_t)(4 * n);
    cfg.rows[1] = (uint8_t)m, cfg.colsb[1] = (uint16_t)kb;
    cfg.rows[2] = (uint8_t)(kb / 4), cfg.colsb[2] = (uint16_t)(4 * n);
    TILE_LOADCONFIG(&cfg);
    TILE_LOAD(0, c, 64);
    TILE_LOAD(1, a, 64);
    TILE_LOAD(2, b, 64);
    switch (op) {
    case OP_BF16: TILE_DPBF16PS(0, 1, 2); break;
    case OP_SSD: TILE_DPBSSD(0, 1, 2); break;
    case OP_SUD: TILE_DPBSUD(0, 1, 2); break;
    case OP_USD: TILE_DPBUSD(0, 1, 2); break;
    default: TILE_DPBUUD(0, 1, 2); break;
    }
    TILE_STORE(0, c, 64);
    TILE_RELEASE();
}

static void tile_op_emu(int op, const void *a, const void *b, void *c, int m, int kb, int n) {
    g4v_tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    cfg.rows[0] = (uint8_t)m, cfg.colsb[0] = (uint16_t)(4 * n);
    cfg.rows[1] = (uint8_t)m, cfg.colsb[1] = (uint16_t)kb;
    cfg.rows[2] = (uint8_t)(kb / 4), cfg.colsb[2] = (uint16_t)(4 * n);
    g4v_amx_emu_ldtilecfg(&cfg);
    g4v_amx_emu_tileloadd(0, c, 64);
    g4v_amx_emu_tileloadd(1, a, 64);
    g4v_amx_emu_tileloadd(2, b, 64);
    switch (op) {
    case OP_BF16: g4v_amx_emu_tdpbf16ps(0, 1, 2); break;
    case OP_SSD: g4v_amx_emu_tdpbssd(0, 1, 2); break;
    case OP_SUD: g4v_amx_emu_tdpbsud(0, 1, 2); break;
    case OP_USD: g4v_amx_emu_tdpbusd(0, 1, 2); break;
    default: g4v_amx_emu_tdpbuud(0, 1, 2); break;
    }
    g4v_amx_emu_tilestored(0, c, 64);
    g4v_amx_emu_tilerelease();
}

static void tile_op_side(int hw, int op, const void *a, const void *b, void *c, int m, int kb,
                         int n) {
    if (hw && !emulated_hw)
        tile_op_hw(op, a, b, c, m, kb, n);
    else
        tile_op_emu(op, a, b, c, m, kb, n);
}

static uint16_t bf16_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

/* ---- 1. the discriminating vectors ----------------------------------------------------------- */

typedef struct {
    const char *what;
    float a[4], b[4]; /* two pairs: (a0, a1) . (b0, b1) + (a2, a3) . (b2, b3) */
    uint16_t a_raw0;  /* nonzero: A's first element as these bf16 bits (a denormal) */
    int pairs;
    float c, sdm, other; /* C in; the SDM's result; what the other documented orders give */
} vec_case;

static void vectors(int hw) {
    const float two24 = 16777216.0f;
    const vec_case cases[] = {
        {"order: even and odd chains from 0, then C + (even + odd)", {two24, 1, -two24, 0},
         {1, 1, 1, 0}, 0, 2, 0.0f, 1.0f, 0.0f},
        {"order: C added last, not first", {1, 1}, {1, 1}, 0, 1, two24, two24 + 2, two24},
        {"DAZ: a denormal bf16 input counts as zero", {0, 0}, {0x1p127f, 0}, 0x0001, 1, 0.0f, 0.0f,
         0x1p-6f},
        {"FTZ: a denormal product is flushed", {0x1p-100f, 0}, {0x1p-30f, 0}, 0, 1, 0.0f, 0.0f,
         0x1p-130f},
    };
    printf("\n1. TDPBF16PS discriminating vectors (%s; judged against the SDM's values):\n",
           hw ? (emulated_hw ? "emulator standing in for hardware, --emulated" : "hardware")
              : "emulator only: this CPU has no AMX");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const vec_case *v = &cases[i];
        uint16_t a[32] = {0}, b[16 * 32] = {0};
        for (int k = 0; k < 2 * v->pairs; k++) a[k] = bf16_of(v->a[k]);
        if (v->a_raw0) a[0] = v->a_raw0;
        for (int p = 0; p < v->pairs; p++) /* B row p: column 0's pair */
            b[p * 32 + 0] = bf16_of(v->b[2 * p]), b[p * 32 + 1] = bf16_of(v->b[2 * p + 1]);
        float ce[16 * 16] = {0}, ch[16 * 16] = {0};
        ce[0] = ch[0] = v->c;
        tile_op_emu(OP_BF16, a, b, ce, 1, 4 * v->pairs, 1);
        int ok_emu = !memcmp(&ce[0], &v->sdm, 4);
        if (hw) {
            tile_op_side(1, OP_BF16, a, b, ch, 1, 4 * v->pairs, 1);
            int same = !memcmp(&ch[0], &ce[0], 4);
            printf("   %-58s hardware %.9g, emulator %.9g, SDM %.9g (the other reading: %.9g): %s\n",
                   v->what, (double)ch[0], (double)ce[0], (double)v->sdm, (double)v->other,
                   same && ok_emu ? "equal" : "DIFFERENT");
            failures += !(same && ok_emu);
        } else {
            printf("   %-58s emulator %.9g, SDM %.9g: %s\n", v->what, (double)ce[0],
                   (double)v->sdm, ok_emu ? "as the SDM" : "DIFFERENT");
            failures += !ok_emu;
        }
    }
}

/* ---- 2. random tiles ------------------------------------------------------------------------- */

static uint32_t rnd(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 32);
}

/* A bf16 with a random sign and an exponent in [2^-24, 2^24], with zeros, denormals, and values
 * near overflow now and then: the flush rules and the order both matter. */
static uint16_t rnd_bf16(uint64_t *s) {
    uint32_t r = rnd(s), kind = r & 63;
    uint16_t sign = (uint16_t)(r >> 31 << 15), man = (uint16_t)(r >> 8 & 0x7f);
    if (kind == 0) return sign;
    if (kind == 1) return (uint16_t)(sign | (man ? man : 1)); /* denormal */
    if (kind == 2) return (uint16_t)(sign | (250u << 7) | man);
    unsigned e = 127 - 24 + (r >> 12) % 49;
    return (uint16_t)(sign | e << 7 | man);
}

typedef struct {
    int op;
    long first, count;
    uint64_t seed;
    long diffs;
    char first_diff[256];
} tiles_job;

static void *tiles_worker(void *arg) {
    tiles_job *j = arg;
    uint8_t a[16 * 64] __attribute__((aligned(64))), b[16 * 64] __attribute__((aligned(64)));
    uint32_t c0[256] __attribute__((aligned(64))), ch[256], ce[256];
    for (long t = 0; t < j->count; t++) {
        uint64_t s = j->seed ^ (uint64_t)(j->first + t) * 0x9e3779b97f4a7c15ull;
        if (j->op == OP_BF16) {
            for (int i = 0; i < 16 * 32; i++) {
                uint16_t x = rnd_bf16(&s), y = rnd_bf16(&s);
                memcpy(a + 2 * i, &x, 2);
                memcpy(b + 2 * i, &y, 2);
            }
            for (int i = 0; i < 256; i++) {
                float f = (float)((int)(rnd(&s) % 2001) - 1000) * 0x1p-6f;
                if (rnd(&s) % 32 == 0) f = 0x1p-130f; /* a denormal C: DAZ */
                memcpy(&c0[i], &f, 4);
            }
        } else {
            for (int i = 0; i < 16 * 64; i++) a[i] = (uint8_t)rnd(&s), b[i] = (uint8_t)rnd(&s);
            for (int i = 0; i < 256; i++) c0[i] = rnd(&s); /* wrapping sums */
        }
        memcpy(ch, c0, sizeof ch);
        memcpy(ce, c0, sizeof ce);
        tile_op_side(1, j->op, a, b, ch, 16, 64, 16);
        tile_op_emu(j->op, a, b, ce, 16, 64, 16);
        if (memcmp(ch, ce, sizeof ch)) {
            if (!j->diffs++)
                for (int i = 0; i < 256; i++)
                    if (ch[i] != ce[i]) {
                        float fh, fe;
                        memcpy(&fh, &ch[i], 4);
                        memcpy(&fe, &ce[i], 4);
                        snprintf(j->first_diff, sizeof j->first_diff,
                                 "tile %ld, (%d, %d): hardware 0x%08x (%.9g), emulator 0x%08x "
                                 "(%.9g)",
                                 j->first + t, i / 16, i % 16, ch[i], (double)fh, ce[i],
                                 (double)fe);
                        break;
                    }
        }
    }
    return NULL;
}

static void random_tiles(long n, int int8, int nthreads) {
    printf("\n2. random 16 x 16 x 32 tiles, hardware against the emulator bit for bit "
           "(%d threads):\n",
           nthreads);
    for (int op = 0; op < NOPS; op++) {
        if (op != OP_BF16 && !int8) {
            printf("   %-10s not run: no AMX-INT8\n", op_names[op]);
            continue;
        }
        long count = op == OP_BF16 ? n : n / 10;
        tiles_job jobs[16];
        pthread_t th[16];
        int T = nthreads < 16 ? nthreads : 16;
        double t0 = bench_now();
        for (int i = 0; i < T; i++) {
            jobs[i] = (tiles_job){.op = op, .first = count * i / T,
                                  .count = count * (i + 1) / T - count * i / T,
                                  .seed = 0x5eedull + (uint64_t)op};
            pthread_create(&th[i], NULL, tiles_worker, &jobs[i]);
        }
        long diffs = 0;
        const char *first = NULL;
        for (int i = 0; i < T; i++) {
            pthread_join(th[i], NULL);
            diffs += jobs[i].diffs;
            if (jobs[i].diffs && !first) first = jobs[i].first_diff;
        }
        printf("   %-10s %ld tiles: %ld differ (%.1f s)%s%s\n", op_names[op], count, diffs,
               bench_now() - t0, first ? "; first: " : "", first ? first : "");
        failures += diffs != 0;
    }
}

/* ---- 3, 4. kernels against their twins ------------------------------------------------------- */

static float rnd_unit(uint64_t *s) {
    return (float)((int)(rnd(s) % 2001) - 1000) / 1000.0f;
}

static int same_floats(const float *x, const float *y, size_t n, const char *what) {
    size_t d = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&x[i], &y[i], 4) && !d++) first = i;
    if (d)
        printf("   %-44s %zu of %zu differ; first [%zu]: hardware %.9g, emulator %.9g\n", what, d,
               n, first, (double)x[first], (double)y[first]);
    else
        printf("   %-44s equal (%zu values)\n", what, n);
    failures += d != 0;
    return !d;
}

static const g4v_gemm_kernel *gemm_side(int hw) {
    return hw && !emulated_hw ? &g4v_gemm_amx_bf16 : &g4v_gemm_amx_bf16_emu;
}
static const g4v_attention_kernel *attn_side(int hw) {
    return hw && !emulated_hw ? &g4v_attention_amx : &g4v_attention_amx_emu;
}

/* Y = X W^T through kern (FAST, BF16 weights) on pool. */
static int gemm_with(const g4v_gemm_kernel *kern, g4v_pool *pool, const float *x,
                     const uint16_t *w, int m, int n, int k, float *y) {
    g4v_err err;
    g4v_err_clear(&err);
    g4v_wmat *W = NULL;
    const g4v_kernels *kt = g4v_kernels_for(g4v_kernel_features());
    if (g4v_wmat_create_with(kt, kern, w, G4V_DT_BF16, n, k, G4V_MATH_FAST, &W, &err)) {
        printf("   %s: %s\n", kern->name, err.msg);
        return 0;
    }
    g4v_gemm(pool, x, (size_t)k, W, y, (size_t)n, (size_t)m, NULL);
    g4v_wmat_free(W);
    return 1;
}

static void attention_with(const g4v_attention_kernel *v, g4v_pool *pool, g4v_attn_args a,
                           float *out) {
    int workers = g4v_pool_size(pool);
    a.out = out;
    a.scratch = aligned_alloc(64, (sizeof(float) * v->scratch_floats(a.d) * (size_t)workers + 63) /
                                      64 * 64);
    void *kv = NULL;
    if (v->kv_bytes && v->prepare_kv) {
        kv = aligned_alloc(64, (v->kv_bytes(a.nk, a.Hkv, a.d) + 63) / 64 * 64);
        v->prepare_kv(pool, &a, 0, a.nk, kv);
        a.kv_prepared = kv;
    }
    v->run(pool, &a);
    free(a.scratch);
    free(kv);
}

typedef struct {
    const char *name;
    int D, I, H, d;
} tower;
static const tower towers[2] = {{"e4b", 768, 3072, 12, 64}, {"31B", 1152, 4304, 16, 72}};

static void attention_check(g4v_pool *pool, const tower *t, int nq, int nk, const char *label) {
    uint64_t s = 99;
    size_t hd = (size_t)t->H * t->d;
    float *q = malloc(sizeof(float) * (size_t)nq * hd), *k = malloc(sizeof(float) * nk * hd),
          *v = malloc(sizeof(float) * nk * hd), *oh = malloc(sizeof(float) * (size_t)nq * hd),
          *oe = malloc(sizeof(float) * (size_t)nq * hd);
    for (size_t i = 0; i < (size_t)nq * hd; i++) q[i] = rnd_unit(&s);
    for (size_t i = 0; i < (size_t)nk * hd; i++) k[i] = rnd_unit(&s), v[i] = rnd_unit(&s);
    g4v_attn_args a = {.q = q, .ldq = hd, .k = k, .v = v, .ldk = hd, .ldv = hd, .ldo = hd,
                       .nq = nq, .nk = nk, .H = t->H, .Hkv = t->H, .d = t->d, .scale = 1.0f,
                       .fast_math = 1};
    attention_with(attn_side(1), pool, a, oh);
    attention_with(attn_side(0), pool, a, oe);
    char what[96];
    snprintf(what, sizeof what, "%s attention, %s", t->name, label);
    same_floats(oh, oe, (size_t)nq * hd, what);
    free(q), free(k), free(v), free(oh), free(oe);
}

static void layer_check(g4v_pool *pool, int rows) {
    printf("\n3. one full layer of each tower shape, %d rows: g4v_gemm_amx_bf16 against "
           "g4v_gemm_amx_bf16_emu, g4v_attention_amx against g4v_attention_amx_emu:\n",
           rows);
    for (int ti = 0; ti < 2; ti++) {
        const tower *t = &towers[ti];
        int hd = t->H * t->d;
        const struct {
            const char *name;
            int n, k;
        } lin[7] = {{"q", hd, t->D},   {"k", hd, t->D},   {"v", hd, t->D},   {"o", t->D, hd},
                    {"gate", t->I, t->D}, {"up", t->I, t->D}, {"down", t->D, t->I}};
        for (int j = 0; j < 7; j++) {
            uint64_t s = 1000u + (uint64_t)j + 7u * (uint64_t)ti;
            size_t xs = (size_t)rows * lin[j].k, ws = (size_t)lin[j].n * lin[j].k,
                   ys = (size_t)rows * lin[j].n;
            float *x = malloc(sizeof(float) * xs), *yh = malloc(sizeof(float) * ys),
                  *ye = malloc(sizeof(float) * ys);
            uint16_t *w = malloc(sizeof(uint16_t) * ws);
            for (size_t i = 0; i < xs; i++) x[i] = rnd_unit(&s);
            for (size_t i = 0; i < ws; i++) w[i] = bf16_of(rnd_unit(&s) * 0.05f);
            if (gemm_with(gemm_side(1), pool, x, w, rows, lin[j].n, lin[j].k, yh) &&
                gemm_with(gemm_side(0), pool, x, w, rows, lin[j].n, lin[j].k, ye)) {
                char what[96];
                snprintf(what, sizeof what, "%s %s [%d x %d] x [%d x %d]^T", t->name,
                         lin[j].name, rows, lin[j].k, lin[j].n, lin[j].k);
                same_floats(yh, ye, ys, what);
            }
            free(x), free(yh), free(ye), free(w);
        }
        attention_check(pool, t, rows, rows, "all rows");
    }
}

static void long_attention_check(g4v_pool *pool, int nq) {
    printf("\n4. attention over 2304 and 10080 keys (%d queries each; every query row is computed "
           "on its own):\n",
           nq);
    static const int nks[2] = {2304, 10080};
    for (int ti = 0; ti < 2; ti++)
        for (int i = 0; i < 2; i++) {
            char label[64];
            snprintf(label, sizeof label, "%d keys", nks[i]);
            attention_check(pool, &towers[ti], nq, nks[i], label);
        }
}

/* ---- speed ----------------------------------------------------------------------------------- */

typedef struct {
    double seconds;
    long iters;
} peak_job;

static void *peak_worker(void *arg) {
    peak_job *j = arg;
    static _Thread_local g4v_tile_config cfg;
    static _Thread_local uint8_t buf[16 * 64] __attribute__((aligned(64)));
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
    memset(buf, 0, sizeof buf);
    TILE_LOADCONFIG(&cfg);
    TILE_LOAD(4, buf, 64);
    TILE_LOAD(5, buf, 64);
    TILE_LOAD(6, buf, 64);
    TILE_LOAD(7, buf, 64);
    TILE_ZERO(0);
    TILE_ZERO(1);
    TILE_ZERO(2);
    TILE_ZERO(3);
    double t0 = bench_now();
    for (long i = 0; i < j->iters; i++) {
        TILE_DPBF16PS(0, 4, 6);
        TILE_DPBF16PS(1, 4, 7);
        TILE_DPBF16PS(2, 5, 6);
        TILE_DPBF16PS(3, 5, 7);
    }
    TILE_STORE(0, buf, 64);
    j->seconds = bench_now() - t0;
    TILE_RELEASE();
    return NULL;
}

/* The tile peak in GFLOP/s for T threads: best of 3 runs of a 4-accumulator loop. */
static double tile_peak(int T) {
    double best = 0;
    for (int r = 0; r < 3; r++) {
        peak_job jobs[16];
        pthread_t th[16];
        for (int i = 0; i < T; i++) {
            jobs[i] = (peak_job){.iters = 2000000};
            pthread_create(&th[i], NULL, peak_worker, &jobs[i]);
        }
        double worst = 0;
        for (int i = 0; i < T; i++) {
            pthread_join(th[i], NULL);
            if (jobs[i].seconds > worst) worst = jobs[i].seconds;
        }
        double gf = (double)T * 2000000.0 * 4 * 16384 / worst * 1e-9;
        if (gf > best) best = gf;
    }
    return best;
}

static double time_gemm(const g4v_gemm_kernel *kern, const g4v_kernels *kt, g4v_pool *pool,
                        int m, int n, int k, int reps) {
    uint64_t s = 5;
    float *x = malloc(sizeof(float) * (size_t)m * k), *y = malloc(sizeof(float) * (size_t)m * n);
    uint16_t *w = malloc(sizeof(uint16_t) * (size_t)n * k);
    for (size_t i = 0; i < (size_t)m * k; i++) x[i] = rnd_unit(&s);
    for (size_t i = 0; i < (size_t)n * k; i++) w[i] = bf16_of(rnd_unit(&s) * 0.05f);
    g4v_err err;
    g4v_err_clear(&err);
    g4v_wmat *W = NULL;
    int st = kern ? g4v_wmat_create_with(kt, kern, w, G4V_DT_BF16, n, k, G4V_MATH_FAST, &W, &err)
                  : g4v_wmat_create(kt, w, G4V_DT_BF16, n, k, G4V_MATH_FAST, &W, &err);
    double med = 0, ts[32];
    if (!st) {
        g4v_gemm(pool, x, (size_t)k, W, y, (size_t)n, (size_t)m, NULL); /* warm-up */
        for (int r = 0; r < reps && r < 32; r++) {
            double t0 = bench_now();
            g4v_gemm(pool, x, (size_t)k, W, y, (size_t)n, (size_t)m, NULL);
            ts[r] = bench_now() - t0;
        }
        med = bench_median(ts, reps < 32 ? reps : 32);
        g4v_wmat_free(W);
    } else {
        printf("   (%s)\n", err.msg);
    }
    free(x), free(y), free(w);
    return med;
}

static void speed(const int *threads, int nt, int gemm_rows, int reps) {
    printf("\n5. speed on this machine's hardware, one run (%% of the tile peak measured just "
           "before, same thread count):\n");
    for (int ti = 0; ti < nt; ti++) {
        int T = threads[ti];
        g4v_err err;
        g4v_err_clear(&err);
        g4v_pool *pool = NULL;
        if (g4v_pool_create(T, &pool, &err)) {
            printf("   pool: %s\n", err.msg);
            continue;
        }
        double peak = tile_peak(T);
        printf("\n   %d thread(s): tile peak (4-accumulator TDPBF16PS loop) %.0f GFLOP/s\n\n", T,
               peak);
        printf("   | what | shape | AMX s | AMX GFLOP/s | %% of tile peak | AVX-512 (noamx) s | "
               "AMX speed-up |\n   |---|---|---|---|---|---|---|\n");
        const g4v_kernels *noamx =
            g4v_kernels_for(g4v_kernel_features() & ~(unsigned)(G4V_CPU_AMX | G4V_CPU_AMX_INT8) &
                            ~g4v_cpu_rule_drops());
        for (int wi = 0; wi < 2; wi++) {
            const tower *t = &towers[wi];
            int hd = t->H * t->d;
            const int shapes[3][2] = {{hd, t->D}, {t->I, t->D}, {t->D, t->I}};
            for (int j = 0; j < 3; j++) {
                int n = shapes[j][0], k = shapes[j][1], m = gemm_rows;
                double flop = 2.0 * m * n * k;
                double ta = time_gemm(&g4v_gemm_amx_bf16, g4v_kernels_for(g4v_kernel_features()),
                                      pool, m, n, k, reps);
                double tb = time_gemm(NULL, noamx, pool, m, n, k, reps);
                char a1[32] = "-", a2[32] = "-", a3[32] = "-", a4[32] = "-";
                if (ta > 0) {
                    snprintf(a1, sizeof a1, "%.4f", ta);
                    snprintf(a2, sizeof a2, "%.0f", flop / ta * 1e-9);
                    snprintf(a3, sizeof a3, "%.0f%%", 100 * flop / ta * 1e-9 / peak);
                    if (tb > 0) snprintf(a4, sizeof a4, "%.2fx", tb / ta);
                }
                printf("   | %s GEMM | %d x %d x %d | %s | %s | %s | %.4f | %s |\n", t->name, m,
                       n, k, a1, a2, a3, tb, a4);
            }
            {
                int L = 2304;
                uint64_t s = 3;
                size_t hs = (size_t)L * hd;
                float *q = malloc(sizeof(float) * hs), *kk = malloc(sizeof(float) * hs),
                      *v = malloc(sizeof(float) * hs), *o = malloc(sizeof(float) * hs);
                for (size_t i = 0; i < hs; i++)
                    q[i] = rnd_unit(&s), kk[i] = rnd_unit(&s), v[i] = rnd_unit(&s);
                g4v_attn_args a = {.q = q, .ldq = (size_t)hd, .k = kk, .v = v, .ldk = (size_t)hd,
                                   .ldv = (size_t)hd, .ldo = (size_t)hd, .nq = L, .nk = L,
                                   .H = t->H, .Hkv = t->H, .d = t->d, .scale = 1.0f,
                                   .fast_math = 1};
                double ts[32];
                attention_with(&g4v_attention_amx, pool, a, o);
                for (int r = 0; r < reps && r < 32; r++) {
                    double t0 = bench_now();
                    attention_with(&g4v_attention_amx, pool, a, o);
                    ts[r] = bench_now() - t0;
                }
                double ta = bench_median(ts, reps < 32 ? reps : 32);
                double flop = 4.0 * L * (double)L * hd;
                printf("   | %s attention | %d patches, %d x %d | %.4f | %.0f | %.0f%% | - | - |\n",
                       t->name, L, t->H, t->d, ta, flop / ta * 1e-9,
                       100 * flop / ta * 1e-9 / peak);
                free(q), free(kk), free(v), free(o);
            }
        }
        g4v_pool_destroy(pool);
    }
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
    long tiles = 1000000;
    int layer_rows = 260, attn_q = 64, gemm_rows = 2304, reps = 5, checks = 1, perf = 1;
    int threads[4] = {1, 2}, nt = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: bench_amx [--tiles N] [--layer-rows M] [--attn-queries Q] "
                   "[--gemm-rows M]\n                 [--threads 1,2] [--reps R] [--emulated] "
                   "[--checks-only] [--speed-only]\n"
                   "Intel AMX hardware against the tile emulator bit for bit (discriminating "
                   "vectors,\nN random tiles, one layer of each tower, attention at 2304 and "
                   "10080 keys), then\nthe tile kernels' speed against the tile peak of the same "
                   "run (make bench-amx).\n--emulated runs the hardware side on the emulator "
                   "(claims nothing about hardware).\n");
            return 0;
        }
        if (!strcmp(a, "--emulated"))
            emulated_hw = 1;
        else if (!strcmp(a, "--checks-only"))
            perf = 0;
        else if (!strcmp(a, "--speed-only"))
            checks = 0;
        else if (!v) {
            fprintf(stderr, "bench_amx: unknown option or missing value: %s\n", a);
            return 2;
        } else if (!strcmp(a, "--tiles"))
            tiles = atol(v), i++;
        else if (!strcmp(a, "--layer-rows"))
            layer_rows = atoi(v), i++;
        else if (!strcmp(a, "--attn-queries"))
            attn_q = atoi(v), i++;
        else if (!strcmp(a, "--gemm-rows"))
            gemm_rows = atoi(v), i++;
        else if (!strcmp(a, "--reps"))
            reps = atoi(v), i++;
        else if (!strcmp(a, "--threads")) {
            nt = 0;
            for (const char *p = v; *p && nt < 4; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
                threads[nt++] = atoi(p);
            i++;
        } else {
            fprintf(stderr, "bench_amx: unknown option %s\n", a);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    char why[256], verdict[256];
    int granted = g4v_amx_status(why, sizeof why);
    int has_int8 = (g4v_cpu_features() & G4V_CPU_AMX_INT8) != 0;
    int hw = granted || emulated_hw;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench_amx: %s\n", why);
    if (granted) {
        g4v_amx_check_verdict(verdict, sizeof verdict);
        printf("start-up self-test: %s\n", verdict);
    }
    if (!granted && !emulated_hw)
        printf("\nNO AMX HERE: the hardware checks and the speed measurements below are NOT RUN; "
               "no hardware result is claimed. Only the emulator's own checks run.\n");
    if (emulated_hw)
        printf("\n--emulated: the \"hardware\" side runs on the emulator; nothing below is a "
               "hardware result.\n");
    g4v_err err;
    g4v_err_clear(&err);
    g4v_pool *pool = NULL;
    if (g4v_pool_create(online > 1 ? (int)online : 1, &pool, &err)) {
        fprintf(stderr, "bench_amx: %s\n", err.msg);
        return 1;
    }
    if (checks) {
        vectors(hw);
        if (hw) {
            random_tiles(tiles, has_int8 || emulated_hw, online > 1 ? (int)online : 1);
            layer_check(pool, layer_rows);
            long_attention_check(pool, attn_q);
        }
    }
    if (perf && granted && !emulated_hw) speed(threads, nt, gemm_rows, reps);
    else if (perf)
        printf("\n5. speed: not run (%s)\n",
               emulated_hw ? "--emulated: an emulator has no speed worth measuring"
                           : "no AMX on this CPU");
    g4v_pool_destroy(pool);
    printf("\nbench_amx: %s\n",
           failures ? "DIFFERENCES FOUND (above)"
           : hw     ? (emulated_hw ? "the harness agrees with itself on the emulator"
                                   : "the hardware equals the emulator in every check that ran")
                    : "the emulator gives the SDM's values; hardware not checked (no AMX)");
    return failures ? 1 : 0;
}
