/* test_variants.c - the kernel registry and tables (kernels/dispatch.h), and every registered
 * variant of the per-row families against its family's portable variant.
 *
 *  - Registry: every family has a portable variant (needs == 0); variant names are spelled
 *    with '-', GEMM ones as the micro-kernel names itself; for each of the 8 CPU feature
 *    sets (16), the table holds the first registered variant whose needs the set covers (GEMM: all
 * of them, in order); g4v_kernels_current follows G4V_ISA.
 *  - Row families, every variant the CPU (or SIMDe) runs, on ragged lengths (1 .. 3075, around
 *    every vector width) with a guard element after the row:
 *      add_row, rope_row, resize (hpass, vpass): bit-identical to portable (the same
 *        operations per element, no fused multiply-add);
 *      rmsnorm_row: every variant, portable included, against float64 (rms_bound below): the
 *        sum of squares may be summed in any order, everything after it is a fixed few roundings;
 *      geglu_row: within 2e-6 * max(|x|, 1e-3) * |up| (the measure of test_geglu).
 *  - sha256_blocks: every variant's state bit-identical to portable's on 1..9 random blocks.
 *  - The row driver g4v_rmsnorm gives the same bits for 1 and 2 threads and leaves row padding
 *    alone; the fused passes (g4v_heads_norm, g4v_rmsnorm_add), on 1 and 2 threads and in two
 *    calls as the encoder's chunks make them, give the bits of their row kernels applied one
 *    after the other over all rows (rope_rows, add_rows, split_heads below, written here).
 * A new variant registered in variants.def is picked up here with no change to this file.
 */
#include "base/cpu.h"
#include "base/pool.h"
#include "kernels/dispatch.h"
#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}
static float frand(float lo, float hi) {
    return lo + (hi - lo) * (float)(rnd() >> 8) / 16777216.0f;
}

static const int lengths[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 64, 65, 768, 1152, 3075};
enum { NLEN = (int)(sizeof lengths / sizeof lengths[0]) };

static const g4v_kernel_variant *portable_of(g4v_kernel_family f) {
    int n;
    const g4v_kernel_variant *v = g4v_kernel_variants(&n);
    for (int i = 0; i < n; i++)
        if (v[i].family == f && v[i].needs == 0) return &v[i];
    return NULL;
}

static void test_registry(void) {
    int n;
    const g4v_kernel_variant *v = g4v_kernel_variants(&n);
    for (int f = 0; f < G4V_KF_COUNT; f++)
        CHECK_MSG(portable_of((g4v_kernel_family)f) != NULL, "family %s has no portable variant",
                  g4v_kernel_family_name((g4v_kernel_family)f));
    for (unsigned feat = 0; feat <= G4V_KERNEL_KNOWN_FEATURES; feat++) {
        if (feat & ~(unsigned)G4V_KERNEL_KNOWN_FEATURES) continue;
        const g4v_kernels *t = g4v_kernels_for(feat);
        CHECK(t->features == feat);
        for (int f = 0; f < G4V_KF_COUNT; f++) {
            const char *want = NULL;
            for (int i = 0; i < n && !want; i++)
                if (v[i].family == (g4v_kernel_family)f && !(v[i].needs & ~feat)) want = v[i].isa;
            CHECK_MSG(want && t->isa[f] && !strcmp(t->isa[f], want),
                      "features %u, family %s: table has %s, registry says %s", feat,
                      g4v_kernel_family_name((g4v_kernel_family)f), t->isa[f] ? t->isa[f] : "-",
                      want ? want : "-");
        }
        for (int f = 0; f < G4V_KF_COUNT; f++) { /* the FAST choice counts FAST-only variants */
            const char *want = NULL;
            for (int i = 0; i < n && !want; i++)
                if (v[i].family == (g4v_kernel_family)f &&
                    !(v[i].needs & ~(feat | G4V_KERNEL_FAST_ONLY)))
                    want = v[i].isa;
            CHECK_MSG(want && t->isa_fast[f] && !strcmp(t->isa_fast[f], want),
                      "features %u, family %s: FAST choice %s, registry says %s", feat,
                      g4v_kernel_family_name((g4v_kernel_family)f),
                      t->isa_fast[f] ? t->isa_fast[f] : "-", want ? want : "-");
        }
        int k = 0;
        for (int i = 0; i < n; i++)
            if (v[i].family == G4V_KF_GEMM && !(v[i].needs & ~feat))
                CHECK_MSG(k < t->ngemm && t->gemm[k++] == v[i].impl.gemm,
                          "features %u: GEMM kernel %s missing or out of order", feat, v[i].isa);
        CHECK_MSG(k == t->ngemm, "features %u: %d GEMM kernels, registry has %d", feat, t->ngemm,
                  k);
        const g4v_kernels *p = g4v_kernels_for(0);
        CHECK(p->use[G4V_KF_ATTENTION].attention == portable_of(G4V_KF_ATTENTION)->impl.attention);
        for (int i = 0; i < n; i++) /* PRECISE never gets a FAST-only variant */
            if (v[i].needs & G4V_KERNEL_FAST_ONLY)
                CHECK_MSG(t->use[v[i].family].attention != v[i].impl.attention,
                          "features %u: FAST-only %s in the PRECISE choice", feat, v[i].isa);
    }
    for (int i = 0; i < n; i++) { /* one spelling: lower case, '-' between parts */
        CHECK_MSG(!strchr(v[i].isa, '_'), "variant name %s has a '_'", v[i].isa);
        if (v[i].family == G4V_KF_GEMM)
            CHECK_MSG(!strcmp(v[i].isa, v[i].impl.gemm->name),
                      "GEMM variant %s calls itself %s", v[i].isa, v[i].impl.gemm->name);
    }
    /* the current table: the features less what the BF16 rule leaves out (docs/NUMERICS.md §6.6) */
    CHECK(g4v_kernels_for(g4v_kernel_features() & ~g4v_cpu_rule_drops()) == g4v_kernels_current());
    CHECK(g4v_cpu_rule_drops() ==
          g4v_cpu_rule_drops_for(g4v_cpu_identity(), g4v_cpu_features(), getenv("G4V_ISA")));
#if G4V_X86_KERNELS
    { /* an Intel BF16 CPU gets the FMA table; G4V_ISA=avx512 keeps vdpbf16ps; AMD Zen 4 keeps it */
        unsigned f = G4V_CPU_AVX2 | G4V_CPU_AVX512 | G4V_CPU_AVX512BF16 | G4V_CPU_AVX512VNNI;
        g4v_cpu_ident spr = {G4V_VENDOR_INTEL, 6, 0x8f}, zen4 = {G4V_VENDOR_AMD, 0x19, 0x11};
        const g4v_kernels *intel = g4v_kernels_for(f & ~g4v_cpu_rule_drops_for(spr, f, NULL)),
                          *forced = g4v_kernels_for(f & ~g4v_cpu_rule_drops_for(spr, f, "avx512")),
                          *amd = g4v_kernels_for(f & ~g4v_cpu_rule_drops_for(zen4, f, "auto"));
        CHECK_MSG(!strcmp(intel->isa[G4V_KF_GEMM], "avx512-bf16w-inplace") &&
                      !strcmp(intel->isa_fast[G4V_KF_ATTENTION], "avx512"),
                  "Intel BF16 table: gemm=%s attention_fast=%s", intel->isa[G4V_KF_GEMM],
                  intel->isa_fast[G4V_KF_ATTENTION]);
        CHECK(intel == g4v_kernels_for(f & ~(unsigned)G4V_CPU_AVX512BF16));
        CHECK(!strcmp(forced->isa[G4V_KF_GEMM], "avx512-bf16dp-inplace"));
        CHECK(amd == forced && !strcmp(amd->isa_fast[G4V_KF_ATTENTION], "avx512-bf16dp"));
    }
#endif
    const char *isa = getenv("G4V_ISA");
    if (isa && !strcmp(isa, "portable")) CHECK(g4v_cpu_features() == 0);
    const g4v_kernels *cur = g4v_kernels_current();
    printf("kernel table for %s:", g4v_cpu_isa_name());
    for (int f = 0; f < G4V_KF_COUNT; f++)
        printf(" %s=%s", g4v_kernel_family_name((g4v_kernel_family)f), cur->isa[f]);
    for (int f = 0; f < G4V_KF_COUNT; f++) /* what FAST models take instead, where it differs */
        if (cur->isa_fast[f] && strcmp(cur->isa_fast[f], cur->isa[f]))
            printf(" %s(FAST)=%s", g4v_kernel_family_name((g4v_kernel_family)f), cur->isa_fast[f]);
    printf("\n");
}

/* The RMSNorm error bound, relative to the float64 result per element, in units of u = 2^-24:
 * the sum of squares of n terms rounded in any order (products and adds, or FMAs) is within
 * lambda * sqrt(n + 1) * u of the exact sum except with probability <= 2 (n + 1) exp(-lambda^2 / 2)
 * (Higham & Mary 2019, probabilistic rounding error analysis; lambda = 6: < 1e-4 per row at
 * n = 3075, and these rows are fixed, so a pass is a pass for good). The worst-case bound,
 * (n + 1) u, would be 80x looser at n = 3075 and hide a broken order. sqrtf halves that relative
 * error; ss / n, + eps, sqrtf, 1 / s, x * inv and * w add one rounding each (6 u, of which sqrtf's
 * is not halved further). Measured: at most ~6 u at n = 3075 for every variant. */
static double rms_bound(int n) {
    return 0.5 * 6.0 * sqrt((double)n + 1.0) + 6.0;
}

/* RMSNorm in float64: the exact value the variants approximate. */
static void rmsnorm_f64(const float *x, double *y, int n, const float *w, float eps) {
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    double inv = 1.0 / sqrt(ss / n + (double)eps);
    for (int i = 0; i < n; i++)
        y[i] = (double)x[i] * inv * (w ? (double)w[i] : 1.0);
}

static void test_row_variant(const g4v_kernel_variant *v) {
    const g4v_kernel_variant *p = portable_of(v->family);
    double rms_worst = 0; /* the largest RMSNorm error seen, in u */
    for (int li = 0; li < NLEN; li++) {
        int n = lengths[li];
        float *x = malloc(sizeof(float) * (size_t)(n + 1)), *u = malloc(sizeof(float) * n);
        float *w = malloc(sizeof(float) * n), *a = malloc(sizeof(float) * (size_t)(n + 1));
        float *b = malloc(sizeof(float) * (size_t)(n + 1));
        for (int i = 0; i < n; i++) {
            x[i] = frand(-6.0f, 6.0f);
            u[i] = frand(-2.0f, 2.0f);
            w[i] = frand(0.5f, 1.5f);
        }
        a[n] = b[n] = 777.0f;
        int ok = 1;
        const char *fam = g4v_kernel_family_name(v->family);
        switch (v->family) {
        case G4V_KF_ADD_ROW:
            memcpy(a, u, sizeof(float) * n);
            memcpy(b, u, sizeof(float) * n);
            v->impl.add_row(x, a, n);
            p->impl.add_row(x, b, n);
            ok = !memcmp(a, b, sizeof(float) * n);
            break;
        case G4V_KF_RMSNORM_ROW:
            for (int wi = 0; wi < 2; wi++) {
                double *e = malloc(sizeof(double) * n);
                v->impl.rmsnorm_row(x, a, n, wi ? w : NULL, 1e-6f);
                rmsnorm_f64(x, e, n, wi ? w : NULL, 1e-6f);
                for (int i = 0; i < n; i++) {
                    double err = fabs(a[i] - e[i]) / (fabs(e[i]) * 0x1p-24);
                    if (err > rms_worst) rms_worst = err;
                    ok &= err <= rms_bound(n);
                }
                free(e);
            }
            break;
        case G4V_KF_GEGLU_ROW:
            v->impl.geglu_row(x, u, a, n);
            p->impl.geglu_row(x, u, b, n);
            for (int i = 0; i < n; i++)
                ok &= fabsf(a[i] - b[i]) <= 2e-6f * fmaxf(fabsf(x[i]), 1e-3f) * fabsf(u[i]);
            break;
        case G4V_KF_ROPE_ROW:
            if (n % 4) break;
            for (int heads = 1; heads <= 3; heads++) {
                int d = n / heads / 4 * 4;
                if (d < 4) continue;
                float *cs = malloc(sizeof(float) * (size_t)d); /* cx, sx, cy, sy of d/4 each */
                for (int i = 0; i < d; i++)
                    cs[i] = frand(-1.0f, 1.0f);
                memcpy(a, x, sizeof(float) * n);
                memcpy(b, x, sizeof(float) * n);
                int q = d / 4;
                v->impl.rope_row(a, heads, d, cs, cs + q, cs + 2 * q, cs + 3 * q);
                p->impl.rope_row(b, heads, d, cs, cs + q, cs + 2 * q, cs + 3 * q);
                ok &= !memcmp(a, b, sizeof(float) * n);
                free(cs);
            }
            break;
        default:
            break;
        }
        CHECK_MSG(ok, "%s %s n=%d: %s", fam, v->isa, n,
                  v->family == G4V_KF_RMSNORM_ROW ? "beyond the float64 bound"
                                                  : "differs from portable");
        CHECK_MSG(a[n] == 777.0f, "%s %s n=%d: wrote past the row", fam, v->isa, n);
        free(x);
        free(u);
        free(w);
        free(a);
        free(b);
    }
    if (v->family == G4V_KF_RMSNORM_ROW)
        printf("rmsnorm_row %s: worst error %.1f u against float64 (bound at n = 3075: %.0f u)\n",
               v->isa, rms_worst, rms_bound(3075));
}

/* Random taps like Pillow's bicubic (negative lobes, weights up to 2^19), any count up to 8. */
static void random_coeffs(g4v_coeffs *c, int n_in, int n_out, int ksize) {
    c->n_in = n_in, c->n_out = n_out, c->ksize = ksize;
    c->lo = malloc(sizeof(int) * n_out);
    c->cnt = malloc(sizeof(int) * n_out);
    c->q = malloc(sizeof(int32_t) * (size_t)n_out * ksize);
    for (int i = 0; i < n_out; i++) {
        int cnt = 1 + (int)(rnd() % (uint32_t)(ksize < n_in ? ksize : n_in));
        c->cnt[i] = cnt;
        c->lo[i] = (int)(rnd() % (uint32_t)(n_in - cnt + 1));
        for (int j = 0; j < ksize; j++)
            c->q[(size_t)i * ksize + j] = (int32_t)(rnd() % (3u << 18)) - (1 << 18);
    }
}

static void test_resize_variant(const g4v_kernel_variant *v) {
    const g4v_resize_kernel *p = portable_of(G4V_KF_RESIZE)->impl.resize;
    const int L = G4V_RS_LANES;
    for (int li = 0; li < NLEN; li++) {
        int n_in = lengths[li] + 2, n_out = 1 + lengths[li] * 2 / 3;
        g4v_coeffs c;
        random_coeffs(&c, n_in, n_out, 8);
        size_t tn = (size_t)3 * n_in * L, un = (size_t)3 * n_out * L;
        uint8_t *t = malloc(tn), *ua = malloc(un + 1), *ub = malloc(un + 1);
        for (size_t i = 0; i < tn; i++)
            t[i] = (uint8_t)rnd();
        ua[un] = ub[un] = 0x5a;
        v->impl.resize->hpass(t, &c, ua);
        p->hpass(t, &c, ub);
        CHECK_MSG(!memcmp(ua, ub, un + 1), "resize %s hpass %d -> %d: differs from portable",
                  v->isa, n_in, n_out);
        /* vpass over a row of 3 * n_in bytes from 1..8 source rows */
        size_t rn = (size_t)3 * n_in;
        const uint8_t *rows[8];
        for (int j = 0; j < 8; j++)
            rows[j] = t + (size_t)j * rn;
        int cnt = 1 + (int)(rnd() % 8u);
        uint8_t *va = malloc(rn + 1), *vb = malloc(rn + 1);
        va[rn] = vb[rn] = 0x5a;
        v->impl.resize->vpass(rows, c.q, cnt, rn, va);
        p->vpass(rows, c.q, cnt, rn, vb);
        CHECK_MSG(!memcmp(va, vb, rn + 1), "resize %s vpass n=%zu cnt=%d: differs from portable",
                  v->isa, rn, cnt);
        free(t), free(ua), free(ub), free(va), free(vb);
        free(c.lo), free(c.cnt), free(c.q);
    }
}

/* Every SHA-256 compression against the portable one, from the same states, 1..9 blocks. */
static void test_sha256_variant(const g4v_kernel_variant *v) {
    const g4v_kernel_variant *p = portable_of(G4V_KF_SHA256_BLOCKS);
    uint8_t blocks[64 * 9];
    for (size_t i = 0; i < sizeof blocks; i++)
        blocks[i] = (uint8_t)rnd();
    for (size_t nb = 1; nb <= 9; nb++) {
        uint32_t h1[8], h2[8];
        for (int i = 0; i < 8; i++)
            h1[i] = h2[i] = rnd();
        p->impl.sha256_blocks(h1, blocks, nb);
        v->impl.sha256_blocks(h2, blocks, nb);
        CHECK_MSG(!memcmp(h1, h2, sizeof h1), "sha256_blocks %s: %zu blocks differ from portable",
                  v->isa, nb);
    }
}

/* The reference the fused passes must equal: each row kernel of table k over all rows, one after
 * the other, on the calling thread. */
static void rope_rows(const g4v_kernels *k, float *x, size_t ld, const int32_t *pos,
                      const float *cs, const float *sn, size_t rows, int heads, int d) {
    size_t q = (size_t)d / 4;
    for (size_t r = 0; r < rows; r++) {
        size_t px = (size_t)pos[2 * r], py = (size_t)pos[2 * r + 1];
        k->use[G4V_KF_ROPE_ROW].rope_row(x + r * ld, heads, d, cs + px * q, sn + px * q,
                                         cs + py * q, sn + py * q);
    }
}

static void add_rows(const g4v_kernels *k, const float *x, size_t ldx, float *y, size_t ldy,
                     size_t rows, int n) {
    for (size_t r = 0; r < rows; r++)
        k->use[G4V_KF_ADD_ROW].add_row(x + r * ldx, y + r * ldy, n);
}

static void split_heads(const float *src, size_t ld, float *dst, size_t rows, int heads, int d) {
    for (size_t r = 0; r < rows; r++)
        for (int h = 0; h < heads; h++)
            memcpy(dst + ((size_t)h * rows + r) * d, src + r * ld + (size_t)h * d,
                   (size_t)d * sizeof(float));
}

/* The row driver and the fused passes: same bits for 1 and 2 threads, row padding untouched. */
static void test_drivers(g4v_pool *p2) {
    const g4v_kernels *k = g4v_kernels_current();
    enum { R = 301, N = 72, LD = 77, HEADS = 2, D = 36 };
    float *x = malloc(sizeof(float) * R * LD), *y1 = malloc(sizeof(float) * R * LD);
    float *y2 = malloc(sizeof(float) * R * LD), *w = malloc(sizeof(float) * N);
    for (int i = 0; i < R * LD; i++)
        x[i] = frand(-3.0f, 3.0f);
    for (int i = 0; i < N; i++)
        w[i] = frand(0.5f, 1.5f);
    memcpy(y1, x, sizeof(float) * R * LD);
    memcpy(y2, x, sizeof(float) * R * LD);
    g4v_rmsnorm(k, NULL, x, y1, LD, R, N, w, 1e-6f);
    g4v_rmsnorm(k, p2, x, y2, LD, R, N, w, 1e-6f);
    CHECK_MSG(!memcmp(y1, y2, sizeof(float) * R * LD), "g4v_rmsnorm: 1 and 2 threads differ");
    int32_t *pos = malloc(sizeof(int32_t) * 2 * R);
    for (int l = 0; l < R; l++)
        pos[2 * l] = l % 17, pos[2 * l + 1] = l / 17;
    float cs[32 * D / 4], sn[32 * D / 4];
    g4v_rope2d_table(100.0, D, 32, cs, sn);
    int pad = 1;
    for (int r = 0; r < R; r++)
        for (int i = N; i < LD; i++)
            pad &= y1[(size_t)r * LD + i] == x[(size_t)r * LD + i];
    CHECK_MSG(pad, "g4v_rmsnorm wrote into the row padding");

    /* The fused passes against their row kernels one after the other, bit for bit, on 1 and 2
     * threads: per-head norm (+ RoPE) (+ head-major copy), and norm + residual add. Rows are
     * N = HEADS * D wide with padding (ld LD), as the encoder's q and k are not (they are dense):
     * both work. */
    float *s1 = malloc(sizeof(float) * R * N), *s2 = malloc(sizeof(float) * R * N);
    for (int variant = 0; variant < 3; variant++) {
        memcpy(y1, x, sizeof(float) * R * LD);
        for (int r = 0; r < R; r++) /* one kernel at a time: norm each head, RoPE, copy */
            g4v_rmsnorm(k, NULL, y1 + (size_t)r * LD, y1 + (size_t)r * LD, D, HEADS, D, w, 1e-6f);
        if (variant >= 1) rope_rows(k, y1, LD, pos, cs, sn, R, HEADS, D);
        if (variant == 2) split_heads(y1, LD, s1, R, HEADS, D);
        for (int t = 1; t <= 2; t++) {
            memcpy(y2, x, sizeof(float) * R * LD);
            memset(s2, 0, sizeof(float) * R * N);
            g4v_heads_post post = {variant >= 1 ? pos : NULL, cs, sn, variant == 2 ? s2 : NULL,
                                   R, 0};
            /* two calls of rows [0, 100) and [100, R), as the encoder's chunks make them */
            g4v_heads_post p0 = post, p1 = post;
            p1.pos = post.pos ? post.pos + 2 * 100 : NULL;
            p1.row0 = 100;
            g4v_heads_norm(k, t == 2 ? p2 : NULL, y2, LD, 100, HEADS, D, w, 1e-6f, &p0);
            g4v_heads_norm(k, t == 2 ? p2 : NULL, y2 + 100 * LD, LD, R - 100, HEADS, D, w, 1e-6f,
                           &p1);
            CHECK_MSG(!memcmp(y1, y2, sizeof(float) * R * LD),
                      "g4v_heads_norm (post %d, %d threads): differs from its row kernels",
                      variant, t);
            if (variant == 2)
                CHECK_MSG(!memcmp(s1, s2, sizeof(float) * R * N),
                          "g4v_heads_norm (%d threads): head-major copy differs", t);
        }
    }
    memcpy(y1, x, sizeof(float) * R * LD);
    memcpy(s1, x, sizeof(float) * R * N); /* a residual stream to add into (ld N) */
    memcpy(s2, x, sizeof(float) * R * N);
    g4v_rmsnorm(k, NULL, y1, y1, LD, R, N, w, 1e-6f);
    add_rows(k, y1, LD, s1, N, R, N);
    for (int t = 1; t <= 2; t++) {
        memcpy(y2, x, sizeof(float) * R * LD);
        float *h = t == 1 ? s2 : malloc(sizeof(float) * R * N);
        if (t == 2) memcpy(h, x, sizeof(float) * R * N);
        g4v_rmsnorm_add(k, t == 2 ? p2 : NULL, y2, LD, h, N, R, N, w, 1e-6f);
        CHECK_MSG(!memcmp(y1, y2, sizeof(float) * R * LD) && !memcmp(s1, h, sizeof(float) * R * N),
                  "g4v_rmsnorm_add (%d threads): differs from g4v_rmsnorm + add_row", t);
        if (t == 2) free(h);
    }
    free(s1), free(s2);
    free(x), free(y1), free(y2), free(w), free(pos);
}

int main(void) {
    printf("ISA: %s\n", g4v_cpu_isa_name());
    test_registry();
    int n;
    const g4v_kernel_variant *v = g4v_kernel_variants(&n);
    for (int i = 0; i < n; i++) {
        if (v[i].needs & ~g4v_kernel_features()) continue;
        if (v[i].family == G4V_KF_RESIZE)
            test_resize_variant(&v[i]);
        else if (v[i].family == G4V_KF_SHA256_BLOCKS)
            test_sha256_variant(&v[i]);
        else if (v[i].family != G4V_KF_GEMM && v[i].family != G4V_KF_ATTENTION)
            test_row_variant(&v[i]); /* GEMM and attention: test_gemm, test_attention */
    }
    g4v_pool *p2 = NULL;
    if (g4v_pool_create(2, &p2, NULL)) return 1;
    test_drivers(p2);
    g4v_pool_destroy(p2);
    return test_summary("test_variants");
}
