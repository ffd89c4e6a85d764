/* test_attention_amx.c - the AMX attention (x86_amx/attention_amx.c) against a scalar model of its
 * own order of operations, bit for bit. Built twice: test_attention_amx_simde (SIMDe: the kernel
 * and its twin both run on the tile emulator, the vectors on SIMDe) and test_attention_amx (native:
 * the twin g4v_attention_amx_emu, native AVX-512 vectors over the emulated tiles, where the CPU
 * has AVX-512 and AVX512_BF16; the kernel itself too where it has AMX).
 *
 * The model is written from the kernel's contract, per query (every output column of a tile
 * depends on its own query only):
 *  - q~ = bf16(scale * q), k~, v~ = bf16 (nearest even), channels zero-padded to a multiple of 32;
 *  - each logit: TDPBF16PS as the Intel SDM defines it, per 32-channel step: an fp32 FMA chain over
 *    the even products and one over the odd products, each from +0, then even + odd, then
 *    C = C + that, from C = 0; bf16 and C inputs that are denormal read as zero, every denormal
 *    result (each FMA, the pair sum, the final add) is flushed to a zero of its sign;
 *  - per block of 64 keys: mnew = max(m, its logits) (m = -inf first), corr = exp(m - mnew),
 *    l = l * corr then + bf16(exp(s_j - mnew)) key by key, O[c] = O[c] * corr, then per channel two
 *    TDPBF16PS steps (keys 0-31, 32-63 of the block, pad keys p = v = 0) into O[c]; exp is the
 *    softmax's vector exp (vec/vec_exp.h's vec_exp_nonpos, with the kernel's arithmetic: see
 *    exp_nonpos);
 *  - out = O * (1 / l).
 * Shapes: nq and nk off the tile sizes (1, 2, 3, 17, 33, 65, 130), d = 64, 72 and 24 (one partial
 * channel tile), Hkv < H, row-major fused q|k|v and head-major K/V (hsk, hsv), scale != 1, logits
 * large enough that the running max moves between blocks, values small enough that products
 * are flushed; K/V read as they are, prepared whole and prepared in pieces; 1 and 3 threads. On
 * the emulator, after a call the calling thread holds no tile state (TILERELEASE), and it loaded
 * its configuration once per task. Then larger cases: nq = nk = 300, and 20 queries against
 * 10,080 keys (the largest image), d = 72.
 */
#include "base/cpu.h"
#include "base/dtype.h"
#include "base/pool.h"
#include "kernels/amx_emu.h"
#include "kernels/dispatch.h"
#include "kernels/x86_amx/amx_twins.h"
#include "test_util.h"
#ifdef G4V_SIMDE
/* The softmax's exp as the emulated kernel computes it: 512 bits over SIMDe, whose FMA without
 * native FMA is a multiply and an add (vec_exp_arrays.c, built with the AVX2 folder's flags, has
 * fused ones: a different last bit now and then). */
#define G4V_VEC_BITS 512
#include "kernels/vec/vec.h"
#include "kernels/vec/vec_exp.h"
#else
#include "vec_exp_arrays.h" /* native: the same bits as the kernel's 512-bit exp (vec_exp.h) */
#endif

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static float frand(void) { /* uniform in [-1, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static float daz(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }
#define ftz daz

/* One TDPBF16PS output over 16 pairs: a[32], b[32] as bf16 values (f32), into c. */
static float tdp(float c, const float *a, const float *b) {
    float even = 0.0f, odd = 0.0f;
    for (int k = 0; k < 16; k++) {
        even = ftz(fmaf(daz(a[2 * k]), daz(b[2 * k]), even));
        odd = ftz(fmaf(daz(a[2 * k + 1]), daz(b[2 * k + 1]), odd));
    }
    return ftz(daz(c) + ftz(even + odd));
}

static float exp_nonpos(float x) {
#ifdef G4V_SIMDE
    float y[16];
    _mm512_storeu_ps(y, vec_exp_nonpos(_mm512_set1_ps(x)));
    return y[0];
#else
    float y;
    g4v_test_vec_exp_nonpos(&x, &y, 1);
    return y;
#endif
}

/* The model of the kernel for every head and query, into out (row stride a->ldo). */
static void model(const g4v_attn_args *a) {
    int d = a->d, dp = (d + 31) & ~31, nk = a->nk, nkp = (nk + 63) / 64 * 64;
    size_t hk = a->hsk ? a->hsk : (size_t)d, hv = a->hsv ? a->hsv : (size_t)d;
    float *kt = calloc((size_t)nkp * dp, sizeof(float)); /* k~ [nkp][dp] */
    float *vt = calloc((size_t)d * nkp, sizeof(float));  /* v~ transposed [d][nkp] */
    float *q = malloc(sizeof(float) * (size_t)dp), *s = malloc(sizeof(float) * 64);
    float *pr = malloc(sizeof(float) * 64), *O = malloc(sizeof(float) * (size_t)d);
    for (int h = 0; h < a->H; h++) {
        int g = h / (a->H / a->Hkv);
        for (int j = 0; j < nk; j++)
            for (int c = 0; c < d; c++) {
                kt[(size_t)j * dp + c] = g4v_round_bf16(a->k[(size_t)j * a->ldk + g * hk + c]);
                vt[(size_t)c * nkp + j] = g4v_round_bf16(a->v[(size_t)j * a->ldv + g * hv + c]);
            }
        for (int i = 0; i < a->nq; i++) {
            for (int c = 0; c < dp; c++)
                q[c] = c < d ? g4v_round_bf16(a->q[(size_t)i * a->ldq + (size_t)h * d + c] *
                                              a->scale)
                             : 0.0f;
            float m = -INFINITY, l = 0.0f;
            for (int c = 0; c < d; c++)
                O[c] = 0.0f;
            for (int k0 = 0; k0 < nk; k0 += 64) {
                int nb = nk - k0 < 64 ? nk - k0 : 64;
                float mx = m;
                for (int j = 0; j < nb; j++) {
                    float acc = 0.0f;
                    for (int st = 0; st < dp / 32; st++)
                        acc = tdp(acc, kt + (size_t)(k0 + j) * dp + 32 * st, q + 32 * st);
                    s[j] = acc;
                    mx = mx > acc ? mx : acc; /* vmaxps: the second operand unless a > b */
                }
                float corr = exp_nonpos(m - mx);
                l = l * corr;
                for (int j = 0; j < 64; j++) {
                    pr[j] = j < nb ? g4v_round_bf16(exp_nonpos(s[j] - mx)) : 0.0f;
                    if (j < nb) l = l + pr[j];
                }
                m = mx;
                for (int c = 0; c < d; c++) {
                    O[c] = O[c] * corr;
                    for (int st = 0; st < 2; st++)
                        O[c] = tdp(O[c], vt + (size_t)c * nkp + k0 + 32 * st, pr + 32 * st);
                }
            }
            float inv = 1.0f / l;
            for (int c = 0; c < d; c++)
                a->out[(size_t)i * a->ldo + (size_t)h * d + c] = O[c] * inv;
        }
    }
    free(kt);
    free(vt);
    free(q);
    free(s);
    free(pr);
    free(O);
}

static g4v_pool *pool3;

/* The descriptors this CPU can run (every one in the SIMDe build), and whether each runs on the
 * emulator (its configuration loads and tile state can be read back). */
typedef struct {
    const char *name;
    const g4v_attention_kernel *kern;
    int emulated;
} kernel;
static kernel kernels[2];
static int NK;
#ifdef G4V_SIMDE
#define G4V_TILES_EMULATED_HERE 1
#else
#define G4V_TILES_EMULATED_HERE 0
#endif

/* Runs kern into a fresh buffer (row stride ldo = H d + 3, padding set to a marker); returns
 * whether the padding stayed. */
static int run(const g4v_attention_kernel *kern, g4v_attn_args a, g4v_pool *pool, float *out) {
    size_t qd = (size_t)a.H * a.d;
    a.ldo = qd + 3;
    for (size_t i = 0; i < (size_t)a.nq * a.ldo; i++)
        out[i] = -777.0f;
    a.out = out;
    kern->run(pool, &a);
    int pad_ok = 1;
    for (int i = 0; i < a.nq; i++)
        for (size_t c = qd; c < a.ldo; c++)
            pad_ok &= out[(size_t)i * a.ldo + c] == -777.0f;
    return pad_ok;
}

static int first_diff(const float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(x + i, y + i, sizeof(float))) return (int)i;
    return -1;
}

/* Kernel k on a against the model's want (n floats, row stride H d + 3): one thread, 3 threads,
 * K/V prepared whole and in pieces. tag names the case. */
static void check_kernel(const kernel *k, g4v_attn_args a, const float *want, size_t n,
                         const char *tag) {
    int nk = a.nk, Hkv = a.Hkv, d = a.d;
    float *got = malloc(sizeof(float) * n);
    g4v_amx_emu_counters_reset();
    CHECK_MSG(run(k->kern, a, NULL, got), "%s %s: wrote past its columns", k->name, tag);
    int at = first_diff(got, want, n);
    CHECK_MSG(at < 0, "%s %s: differs from the model at %d: %.9g vs %.9g", k->name, tag, at,
              at < 0 ? 0 : got[at], at < 0 ? 0 : want[at]);
    if (k->emulated) {
        g4v_amx_emu_counters cnt;
        g4v_amx_emu_counters_get(&cnt);
        int tasks = a.H * ((a.nq + 95) / 96);
        CHECK_MSG(cnt.configs == (uint64_t)tasks, "%s %s: %llu configuration loads for %d tasks",
                  k->name, tag, (unsigned long long)cnt.configs, tasks);
        g4v_tile_config now;
        g4v_amx_emu_sttilecfg(&now);
        CHECK_MSG(now.palette == 0, "%s %s: the tiles are still configured after the call",
                  k->name, tag);
    }
    CHECK(run(k->kern, a, pool3, got));
    CHECK_MSG(!memcmp(got, want, sizeof(float) * n), "%s %s: 3 threads differ", k->name, tag);

    /* prepared K/V: whole, then in pieces cut at odd keys and inside blocks, last piece first;
     * the buffer starts as NaNs, so a pad the preparation leaves unwritten shows */
    size_t bytes = k->kern->kv_bytes(nk, Hkv, d);
    void *kv = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    memset(kv, 0xff, bytes);
    k->kern->prepare_kv(pool3, &a, 0, nk, kv);
    g4v_attn_args b = a;
    b.k = b.v = NULL, b.kv_prepared = kv;
    CHECK(run(k->kern, b, pool3, got));
    CHECK_MSG(!memcmp(got, want, sizeof(float) * n), "%s %s: prepared K/V differ", k->name, tag);
    memset(kv, 0xff, bytes);
    int c1 = (nk / 3 | 1) < nk ? nk / 3 | 1 : nk, c2 = nk * 2 / 3 + 1 < nk ? nk * 2 / 3 + 1 : nk;
    int cuts[4] = {0, c1, c2 > c1 ? c2 : c1, nk};
    for (int c = 2; c >= 0; c--) {
        int j0 = cuts[c], j1 = cuts[c + 1];
        if (j1 <= j0) continue;
        g4v_attn_args piece = a;
        piece.k = a.k + (size_t)j0 * a.ldk, piece.v = a.v + (size_t)j0 * a.ldv;
        piece.nk = j1 - j0;
        k->kern->prepare_kv(c & 1 ? pool3 : NULL, &piece, j0, nk, kv);
    }
    CHECK(run(k->kern, b, NULL, got));
    CHECK_MSG(!memcmp(got, want, sizeof(float) * n), "%s %s: K/V prepared in pieces differ",
              k->name, tag);
    free(kv);
    free(got);
}

/* kind: 0 ordinary (q, k in [-sq, sq)), 1 tiny values (products flushed to zero) */
static void test_case(int nq, int nk, int H, int Hkv, int d, float sq, float scale, int head_major,
                      int tiny) {
    size_t qd = (size_t)H * d, kvd = (size_t)Hkv * d;
    size_t ld = qd + 2 * kvd;
    int L = nq > nk ? nq : nk;
    float *qkv = malloc(sizeof(float) * (size_t)L * ld);
    for (size_t i = 0; i < (size_t)L * ld; i++) {
        size_t c = i % ld;
        float x = frand() * (c < qd + kvd ? sq : 1.0f);
        if (tiny && c >= qd + kvd) x *= 3e-38f; /* v near FLT_MIN: p v products underflow */
        if (tiny && c >= qd && c < qd + kvd && i % 7 == 0) x = 1e-39f; /* denormal keys */
        qkv[i] = x;
    }
    g4v_attn_args a = {.q = qkv,
                       .ldq = ld,
                       .k = qkv + qd,
                       .v = qkv + qd + kvd,
                       .ldk = ld,
                       .ldv = ld,
                       .nq = nq,
                       .nk = nk,
                       .H = H,
                       .Hkv = Hkv,
                       .d = d,
                       .scale = scale};
    float *hm = NULL;
    if (head_major) { /* K, V as [Hkv][nk][d] blocks: hsk = hsv = nk d, ldk = ldv = d */
        hm = malloc(sizeof(float) * 2 * kvd * (size_t)nk);
        for (int g = 0; g < Hkv; g++)
            for (int j = 0; j < nk; j++)
                for (int c = 0; c < d; c++) {
                    hm[((size_t)g * nk + j) * d + c] = a.k[(size_t)j * ld + (size_t)g * d + c];
                    hm[kvd * nk + ((size_t)g * nk + j) * d + c] =
                        a.v[(size_t)j * ld + (size_t)g * d + c];
                }
        a.k = hm, a.v = hm + kvd * (size_t)nk;
        a.ldk = a.ldv = (size_t)d, a.hsk = a.hsv = (size_t)nk * d;
    }
    size_t ldo = qd + 3, n = (size_t)nq * ldo;
    float *want = malloc(sizeof(float) * n);
    a.scratch = malloc(sizeof(float) * 3 * g4v_attention_amx.scratch_floats(d));
    char tag[96];
    snprintf(tag, sizeof tag, "nq=%d nk=%d H=%d Hkv=%d d=%d%s%s", nq, nk, H, Hkv, d,
             head_major ? " head-major" : "", tiny ? " tiny" : "");
    a.ldo = ldo;
    a.out = want;
    for (size_t i = 0; i < n; i++)
        want[i] = -777.0f;
    model(&a);

    for (int ki = 0; ki < NK; ki++)
        check_kernel(&kernels[ki], a, want, n, tag);
    free(a.scratch);
    free(want);
    free(hm);
    free(qkv);
}

int main(void) {
#ifdef G4V_SIMDE
    unsigned cpu = g4v_kernel_features(); /* every feature, all emulated */
#else
    unsigned cpu = g4v_cpu_features();
#endif
    unsigned vec = G4V_CPU_AVX512 | G4V_CPU_AVX512BF16;
    if ((cpu & (vec | G4V_CPU_AMX)) == (vec | G4V_CPU_AMX))
        kernels[NK++] = (kernel){"amx", &g4v_attention_amx, G4V_TILES_EMULATED_HERE};
    if ((cpu & vec) == vec) kernels[NK++] = (kernel){"amx_emu", &g4v_attention_amx_emu, 1};
    if (!NK) {
        printf("test_attention_amx: no AVX-512 + AVX512_BF16 here: nothing to run\n");
        return 0;
    }
    if (g4v_pool_create(3, &pool3, NULL)) return 1;
    /* nq, nk, H, Hkv, d, q/k scale, logit scale, head-major K/V, tiny values */
    test_case(1, 1, 2, 1, 64, 1.0f, 1.0f, 0, 0);
    test_case(2, 2, 1, 1, 72, 1.0f, 1.0f, 0, 0);
    test_case(3, 3, 3, 3, 72, 1.0f, 1.0f, 1, 0);
    test_case(17, 2, 4, 2, 72, 1.0f, 0.125f, 0, 0);
    test_case(33, 65, 2, 1, 64, 1.0f, 1.0f, 1, 0);
    test_case(20, 130, 6, 2, 72, 3.0f, 1.0f, 0, 0); /* logits ~ +-200: the max moves */
    test_case(40, 70, 2, 2, 24, 1.0f, 1.0f, 1, 0);  /* one partial channel tile */
    test_case(100, 97, 2, 1, 64, 1.0f, 1.0f, 0, 0); /* two tasks per head */
    test_case(18, 40, 2, 1, 72, 1.0f, 1.0f, 0, 1);  /* denormal inputs, flushed products */
    test_case(300, 300, 1, 1, 72, 1.0f, 1.0f, 1, 0);
    test_case(20, 10080, 1, 1, 72, 1.0f, 1.0f, 0, 0); /* the largest image's keys */
    g4v_pool_destroy(pool3);
    return test_summary("test_attention_amx");
}
