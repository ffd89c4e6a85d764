/* amx_check.c - the AMX start-up self-test (amx_check.h). Plain C: it calls the tile kernels
 * through their descriptors (x86_amx/amx_twins.h); the tile instructions live in x86_amx/. */
#include "amx_check.h"

#include "base/amx.h"
#include "base/cpu.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if G4V_X86_KERNELS
#include "dispatch.h"
#include "x86_amx/amx_hold.h"
#include "x86_amx/amx_twins.h"

/* The kernels under test and their twins are in every x86-64 build (x86_amx/): the GEMM
 * (dispatch.h declares the registered descriptors) and the attention, against amx_twins.h's. */
int g4v_amx_check_have_kernels(char *why, size_t cap) {
    if (why && cap) snprintf(why, cap, "the tile GEMM, the tile attention and their twins");
    return 1;
}

enum { CHECK_ALIGN = 64 };

static void *zalloc(size_t bytes) {
    bytes = (bytes + CHECK_ALIGN - 1) / CHECK_ALIGN * CHECK_ALIGN;
    void *p = aligned_alloc(CHECK_ALIGN, bytes ? bytes : CHECK_ALIGN);
    if (p) memset(p, 0, bytes ? bytes : CHECK_ALIGN);
    return p;
}

/* Deterministic values in [-2, 2) with few mantissa bits (exact in bf16), so the rounding of
 * the A packer plays no part and every product is exact: only the summation order decides. */
static float value(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((int)(*s >> 24) - 128) / 64.0f;
}

static int same_bits(const float *a, const float *b, size_t n, const char *what, char *why,
                     size_t cap) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float))) {
            snprintf(why, cap, "%s: element %zu is %.9g on the tiles, %.9g on the emulator", what,
                     i, (double)a[i], (double)b[i]);
            return 0;
        }
    return 1;
}

/* One MR-row A micro-panel times one NR-column B panel over kgroups = 3 groups of KG, the last
 * partly past klen (zeros), by kern's packer and micro-kernel; y: MR x NR. */
static int gemm_once(const g4v_gemm_kernel *kern, const float *x, int klen, int kpad,
                     const uint16_t *bpanel, float *y) {
    size_t a_bytes = (size_t)kern->mr * (size_t)kpad * (kern->a_bf16 ? 2 : 4);
    void *a = zalloc(a_bytes);
    if (!a) return 0;
    g4v_pack_opts po = {.lo = 0, .hi = 0, .clamp = 0, .round = kern->a_bf16};
    kern->pack_a(x, (size_t)klen, kern->mr, klen, kpad, a, &po);
    g4v_ukr_epi e = {.lo = 0, .hi = 0, .clamp = 0, .accumulate = 0};
    kern->ukr(kpad / kern->kg, a, bpanel, NULL, y, (size_t)kern->nr, &e);
    free(a);
    return 1;
}

static int check_gemm(char *why, size_t cap) {
    const g4v_gemm_kernel *hw = &g4v_gemm_amx_bf16, *emu = &g4v_gemm_amx_bf16_emu;
    if (hw->mr != emu->mr || hw->nr != emu->nr || hw->kg != emu->kg || hw->a_bf16 != emu->a_bf16 ||
        hw->b_bf16 != emu->b_bf16 || !hw->pack_a || !hw->ukr || !emu->pack_a || !emu->ukr ||
        hw->kg < 2 || hw->kg % 2) {
        snprintf(why, cap, "g4v_gemm_amx_bf16 and its twin disagree on their shape or format");
        return 0;
    }
    int mr = hw->mr, nr = hw->nr, kpad = 3 * hw->kg, klen = kpad - hw->kg / 2 - 1;
    float *x = zalloc(sizeof(float) * (size_t)mr * (size_t)klen);
    uint16_t *b = zalloc(sizeof(uint16_t) * (size_t)kpad * (size_t)nr); /* [kpad/2][nr][2] */
    float *y_hw = zalloc(sizeof(float) * (size_t)mr * (size_t)nr);
    float *y_emu = zalloc(sizeof(float) * (size_t)mr * (size_t)nr);
    int ok = x && b && y_hw && y_emu;
    if (!ok) snprintf(why, cap, "out of memory");
    uint32_t s = 12345;
    for (int i = 0; ok && i < mr * klen; i++) x[i] = value(&s);
    for (int p = 0; ok && p < kpad / 2; p++)
        for (int n = 0; n < nr; n++)
            for (int h = 0; h < 2; h++) {
                float w = 2 * p + h < klen ? value(&s) : 0.0f;
                uint32_t u;
                memcpy(&u, &w, sizeof u);
                b[((size_t)p * (size_t)nr + (size_t)n) * 2 + (size_t)h] = (uint16_t)(u >> 16);
            }
    if (ok && !(gemm_once(hw, x, klen, kpad, b, y_hw) && gemm_once(emu, x, klen, kpad, b, y_emu))) {
        snprintf(why, cap, "out of memory");
        ok = 0;
    }
    if (ok) ok = same_bits(y_hw, y_emu, (size_t)mr * (size_t)nr, "tile GEMM g4v_gemm_amx_bf16", why,
                           cap);
    free(x), free(b), free(y_hw), free(y_emu);
    return ok;
}

/* One call of variant v over fresh buffers; out: nq x H*d. */
static int attention_once(const g4v_attention_kernel *v, const g4v_attn_args *in, float *out) {
    g4v_attn_args a = *in;
    a.out = out;
    a.scratch = zalloc(sizeof(float) * v->scratch_floats(a.d));
    void *kv = NULL;
    if (v->kv_bytes && v->prepare_kv) {
        kv = zalloc(v->kv_bytes(a.nk, a.Hkv, a.d));
        if (!kv) {
            free(a.scratch);
            return 0;
        }
        v->prepare_kv(NULL, &a, 0, a.nk, kv);
        a.kv_prepared = kv;
    }
    if (!a.scratch) {
        free(kv);
        return 0;
    }
    v->run(NULL, &a);
    free(a.scratch);
    free(kv);
    return 1;
}

static int check_attention(char *why, size_t cap) {
    const g4v_attention_kernel *hw = &g4v_attention_amx, *emu = &g4v_attention_amx_emu;
    static const int dims[2] = {64, 72};
    enum { NQ = 40, NK = 70, H = 2, HKV = 1 };
    int ok = 1;
    for (int t = 0; ok && t < 2; t++) {
        int d = dims[t];
        float *q = zalloc(sizeof(float) * NQ * H * (size_t)d);
        float *k = zalloc(sizeof(float) * NK * HKV * (size_t)d);
        float *v = zalloc(sizeof(float) * NK * HKV * (size_t)d);
        float *o_hw = zalloc(sizeof(float) * NQ * H * (size_t)d);
        float *o_emu = zalloc(sizeof(float) * NQ * H * (size_t)d);
        ok = q && k && v && o_hw && o_emu;
        if (!ok) snprintf(why, cap, "out of memory");
        uint32_t s = 777u + (uint32_t)d;
        /* logits of order 1 to 4: the softmax's exp and max matter, not only the products */
        for (int i = 0; ok && i < NQ * H * d; i++) q[i] = value(&s) * 0.5f;
        for (int i = 0; ok && i < NK * HKV * d; i++) k[i] = value(&s) * 0.5f, v[i] = value(&s);
        g4v_attn_args a = {.q = q, .ldq = (size_t)(H * d), .k = k, .v = v,
                           .ldk = (size_t)(HKV * d), .ldv = (size_t)(HKV * d), .nq = NQ,
                           .nk = NK, .H = H, .Hkv = HKV, .d = d, .scale = 1.0f,
                           .ldo = (size_t)(H * d), .fast_math = 1};
        if (ok && !(attention_once(hw, &a, o_hw) && attention_once(emu, &a, o_emu))) {
            snprintf(why, cap, "out of memory");
            ok = 0;
        }
        if (ok) {
            char what[64];
            snprintf(what, sizeof what, "tile attention g4v_attention_amx, head size %d", d);
            ok = same_bits(o_hw, o_emu, (size_t)NQ * H * (size_t)d, what, why, cap);
        }
        free(q), free(k), free(v), free(o_hw), free(o_emu);
    }
    return ok;
}

int g4v_amx_check_run(char *why, size_t cap) {
    char tmp[8], hold[160];
    if (!why || !cap) why = tmp, cap = sizeof tmp;
    why[0] = '\0';
    int ok = check_gemm(why, cap) && check_attention(why, cap);
    g4v_amx_tile_release(); /* the kernels' tiles, on this thread */
    if (!ok) return 0;
    if (!g4v_amx_hold_check(3, 1000, hold, sizeof hold)) {
        snprintf(why, cap, "%s", hold);
        return 0;
    }
    snprintf(why, cap, "tile GEMM and attention equal the emulator bit for bit; %.150s", hold);
    return 1;
}
#else
int g4v_amx_check_have_kernels(char *why, size_t cap) {
    if (why && cap) snprintf(why, cap, "no AMX kernels in a build for this architecture");
    return 0;
}

int g4v_amx_check_run(char *why, size_t cap) {
    if (why && cap) snprintf(why, cap, "no AMX kernels in a build for this architecture");
    return 0;
}
#endif

static pthread_once_t check_once = PTHREAD_ONCE_INIT;
static int check_ran, check_ok;
static char check_why[256];

/* Set on the thread running the test: a kernel under test that asks for the tables' features
 * (directly or through a front end) gets them without AMX instead of re-entering pthread_once,
 * which would deadlock. */
static _Thread_local int in_check;

static void run_check(void) {
    in_check = 1;
    check_ok = g4v_amx_check_run(check_why, sizeof check_why);
    in_check = 0;
    check_ran = 1;
}

unsigned g4v_amx_check_filter(unsigned features) {
    const unsigned amx = G4V_CPU_AMX | G4V_CPU_AMX_INT8;
    if (!(features & G4V_CPU_AMX)) return features;
    if (in_check) return features & ~amx;
    pthread_once(&check_once, run_check);
    return check_ok ? features : features & ~amx;
}

int g4v_amx_check_verdict(char *why, size_t cap) {
    char tmp[8];
    if (!why || !cap) why = tmp, cap = sizeof tmp;
    if (!(g4v_cpu_features() & G4V_CPU_AMX)) {
        snprintf(why, cap, "not run: no AMX tiles to test");
        return -1;
    }
    if (in_check) {
        snprintf(why, cap, "not run: running now, on this thread");
        return -1;
    }
    pthread_once(&check_once, run_check); /* the happens-before edge for check_* */
    if (!check_ran) {
        snprintf(why, cap, "not run");
        return -1;
    }
    snprintf(why, cap, "%s: %.240s", check_ok ? "passed" : "failed", check_why);
    return check_ok;
}

int g4v_amx_dispatch_status(char *why, size_t cap) {
    char tmp[8], base[256];
    if (!why || !cap) why = tmp, cap = sizeof tmp;
    if (!g4v_amx_status(base, sizeof base)) {
        snprintf(why, cap, "%s", base);
        return 0;
    }
    if (!(g4v_cpu_features() & G4V_CPU_AMX)) {
        const char *isa = getenv("G4V_ISA");
        snprintf(why, cap, "G4V_ISA=%.32s leaves the AMX tiles out (the CPU and the OS allow them)",
                 isa ? isa : "");
        return 0;
    }
    if (in_check) {
        snprintf(why, cap, "the AMX start-up self-test is running on this thread");
        return 0;
    }
    pthread_once(&check_once, run_check);
    if (!check_ok) {
        snprintf(why, cap, "the AMX start-up self-test failed: %.220s", check_why);
        return 0;
    }
    snprintf(why, cap, "%.200s; start-up self-test passed", base);
    return 1;
}
