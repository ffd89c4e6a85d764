/* test_kernels.c - the portable encoder kernels (the portable kernel table) against
 * straightforward double-precision definitions written here from docs/NUMERICS.md (not from the
 * kernels): attention (online softmax vs a
 * full softmax, GQA head mapping, shapes that are not tile multiples, bit-identical results for
 * 1/2/3 threads), 2D RoPE (pairing t <-> t + d/4 inside each half, column vs row halves),
 * RMSNorm (weight as w, per head), tanh GELU, and the pooling order. */
#include "base/pool.h"
#include "kernels/dispatch.h"
#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* The portable kernels: the table for a CPU with no SIMD feature (SIMD variants: test_variants,
 * test_attention, test_geglu). */
#define PT g4v_kernels_for(0)

static uint64_t rng_state = 88172645463325252ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static void fill(float *x, size_t n, float scale) {
    for (size_t i = 0; i < n; i++)
        x[i] = frand() * scale;
}

/* Full softmax attention in double, heads mapped h -> h / (H / Hkv). */
static void attention_ref(const float *q, const float *k, const float *v, double *out, int L, int H,
                          int Hkv, int d) {
    double *s = malloc(sizeof(double) * L);
    for (int h = 0; h < H; h++) {
        int kh = h / (H / Hkv);
        for (int i = 0; i < L; i++) {
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < L; j++) {
                double acc = 0;
                for (int c = 0; c < d; c++)
                    acc += (double)q[(size_t)i * H * d + h * d + c] *
                           k[(size_t)j * Hkv * d + kh * d + c];
                s[j] = acc;
                if (acc > mx) mx = acc;
            }
            for (int j = 0; j < L; j++)
                sum += s[j] = exp(s[j] - mx);
            for (int c = 0; c < d; c++) {
                double o = 0;
                for (int j = 0; j < L; j++)
                    o += s[j] * v[(size_t)j * Hkv * d + kh * d + c];
                out[(size_t)i * H * d + h * d + c] = o / sum;
            }
        }
    }
    free(s);
}

static void test_attention(g4v_pool *p2, g4v_pool *p3, int L, int H, int Hkv, int d, float qs) {
    size_t nq = (size_t)L * H * d, nk = (size_t)L * Hkv * d;
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4);
    float *o1 = malloc(nq * 4), *o2 = malloc(nq * 4), *o3 = malloc(nq * 4);
    double *ref = malloc(nq * 8);
    float *scr = malloc(3 * g4v_attention_scratch_floats(d) * 4);
    fill(q, nq, qs);
    fill(k, nk, qs);
    fill(v, nk, 1.0f);
    attention_ref(q, k, v, ref, L, H, Hkv, d);
    g4v_attn_args a = {.q = q,
                       .ldq = (size_t)H * d,
                       .k = k,
                       .v = v,
                       .ldk = (size_t)Hkv * d,
                       .ldv = (size_t)Hkv * d,
                       .out = o1,
                       .ldo = (size_t)H * d,
                       .nq = L,
                       .nk = L,
                       .H = H,
                       .Hkv = Hkv,
                       .d = d,
                       .scale = 1.0f,
                       .scratch = scr};
    g4v_attention(PT, NULL, &a);
    a.out = o2;
    g4v_attention(PT, p2, &a);
    a.out = o3;
    g4v_attention(PT, p3, &a);
    double num = 0, den = 0, maxerr = 0;
    for (size_t i = 0; i < nq; i++) {
        double e = o1[i] - ref[i];
        num += e * e;
        den += ref[i] * ref[i];
        if (fabs(e) > maxerr) maxerr = fabs(e);
    }
    double rel = sqrt(num / den);
    CHECK_MSG(rel < 2e-6, "attention L=%d H=%d Hkv=%d d=%d: rel RMSE %.3g", L, H, Hkv, d, rel);
    CHECK_MSG(!memcmp(o1, o2, nq * 4) && !memcmp(o1, o3, nq * 4),
              "attention L=%d: results differ between 1, 2 and 3 threads", L);
    free(q), free(k), free(v), free(o1), free(o2), free(o3), free(ref), free(scr);
}

/* RoPE by the formulas of docs/NUMERICS.md §4.5, in double, for one head of d at (x, y). */
static void rope_ref(const float *in, double *out, int d, int x, int y, double theta) {
    int c = d / 2, half = c / 2;
    for (int part = 0; part < 2; part++) {
        int pos = part ? y : x;
        const float *p = in + part * c;
        for (int t = 0; t < half; t++) {
            float inv = (float)(1.0 / pow(theta, 2.0 * t / c));
            double ang = (float)pos * inv;
            out[part * c + t] = p[t] * cos(ang) - p[t + half] * sin(ang);
            out[part * c + t + half] = p[t + half] * cos(ang) + p[t] * sin(ang);
        }
    }
}

/* The portable rope_row kernel (table PT), row by row, against the formulas in double. */
static void test_rope(void) {
    enum { L = 12, HEADS = 3, D = 72, GW = 4 };
    float x[L * HEADS * D], orig[L * HEADS * D], cs[GW * D / 4], sn[GW * D / 4];
    int32_t pos[2 * L];
    for (int l = 0; l < L; l++)
        pos[2 * l] = l % GW, pos[2 * l + 1] = l / GW;
    fill(x, L * HEADS * D, 1.0f);
    memcpy(orig, x, sizeof x);
    g4v_rope2d_table(100.0, D, GW, cs, sn);
    for (int l = 0; l < L; l++) {
        size_t px = (size_t)pos[2 * l] * (D / 4), py = (size_t)pos[2 * l + 1] * (D / 4);
        PT->use[G4V_KF_ROPE_ROW].rope_row(x + l * HEADS * D, HEADS, D, cs + px, sn + px, cs + py,
                                          sn + py);
    }
    double maxerr = 0, ref[D];
    for (int l = 0; l < L; l++)
        for (int h = 0; h < HEADS; h++) {
            rope_ref(orig + (l * HEADS + h) * D, ref, D, l % GW, l / GW, 100.0);
            for (int c = 0; c < D; c++) {
                double e = fabs(ref[c] - x[(l * HEADS + h) * D + c]);
                if (e > maxerr) maxerr = e;
            }
        }
    CHECK_MSG(maxerr < 1e-6, "rope: max error %.3g", maxerr);
    /* position (0, 0) is the identity */
    CHECK(!memcmp(x, orig, HEADS * D * sizeof(float)));
}

static void test_rmsnorm(g4v_pool *pool) {
    enum { ROWS = 6, N = 40 };
    float x[ROWS * N], y[ROWS * N], w[N];
    fill(x, ROWS * N, 3.0f);
    fill(w, N, 1.0f);
    for (int pass = 0; pass < 2; pass++) {
        const float *wp = pass ? w : NULL;
        g4v_rmsnorm(PT, pool, x, y, N, ROWS, N, wp, 1e-6f);
        double maxerr = 0;
        for (int r = 0; r < ROWS; r++) {
            double ss = 0;
            for (int i = 0; i < N; i++)
                ss += (double)x[r * N + i] * x[r * N + i];
            double inv = 1.0 / sqrt(ss / N + 1e-6);
            for (int i = 0; i < N; i++) {
                double e = fabs(x[r * N + i] * inv * (wp ? wp[i] : 1.0) - y[r * N + i]);
                if (e > maxerr) maxerr = e;
            }
        }
        CHECK_MSG(maxerr < 1e-5, "rmsnorm (weight %d): max error %.3g", pass, maxerr);
    }
    /* per head: [2 rows, 4 heads of 10] normalised as 8 rows of 10, in place */
    float z[80], zz[80];
    fill(z, 80, 2.0f);
    memcpy(zz, z, sizeof z);
    g4v_rmsnorm(PT, pool, z, z, 10, 8, 10, NULL, 1e-6f);
    double ss = 0;
    for (int i = 30; i < 40; i++)
        ss += (double)z[i] * z[i];
    CHECK_MSG(fabs(ss / 10 - 1.0) < 1e-5, "per-head rms %.6f", ss / 10);
    CHECK(fabs(z[35] - zz[35] / sqrt((zz[30] * zz[30] + zz[31] * zz[31] + zz[32] * zz[32] +
                                      zz[33] * zz[33] + zz[34] * zz[34] + zz[35] * zz[35] +
                                      zz[36] * zz[36] + zz[37] * zz[37] + zz[38] * zz[38] +
                                      zz[39] * zz[39]) /
                                         10.0 +
                                     1e-6)) < 1e-5);
}

/* g4v_layernorm (the unified embedder's, docs/NUMERICS.md §9.2) against float64: rows of 3840
 * values around a mean of 100 (a one-pass E[x^2] - E[x]^2 variance in f32 would lose most
 * digits there), with and without weight and bias, in place, 1 vs 2 threads bit-identical. */
static void test_layernorm(g4v_pool *pool) {
    enum { ROWS = 5, N = 3840 };
    static float x[ROWS * N], y[ROWS * N], y1[ROWS * N], w[N], b[N];
    fill(x, ROWS * N, 1.0f);
    for (int i = 0; i < ROWS * N; i++)
        x[i] += 100.0f;
    fill(w, N, 1.0f);
    fill(b, N, 0.5f);
    for (int pass = 0; pass < 2; pass++) {
        const float *wp = pass ? w : NULL, *bp = pass ? b : NULL;
        g4v_layernorm(pool, x, y, N, ROWS, N, wp, bp, 1e-5f);
        g4v_layernorm(NULL, x, y1, N, ROWS, N, wp, bp, 1e-5f);
        CHECK_MSG(!memcmp(y, y1, sizeof y), "layernorm (affine %d): 1 and 2 threads agree", pass);
        double maxerr = 0;
        for (int r = 0; r < ROWS; r++) {
            const float *xr = x + r * N;
            double mean = 0, var = 0;
            for (int i = 0; i < N; i++)
                mean += xr[i];
            mean /= N;
            for (int i = 0; i < N; i++)
                var += (xr[i] - mean) * (xr[i] - mean);
            double inv = 1.0 / sqrt(var / N + 1e-5);
            for (int i = 0; i < N; i++) {
                double want = (xr[i] - mean) * inv * (wp ? wp[i] : 1.0) + (bp ? bp[i] : 0.0);
                double e = fabs(want - y[r * N + i]);
                if (e > maxerr) maxerr = e;
            }
        }
        /* measured 5.6e-6 (the f32 rounding of inputs ~100, scaled by 1/std); the same kernel
         * with f32 sums gave 1.6e-4, a one-pass f32 variance worse still */
        CHECK_MSG(maxerr < 8.5e-6, "layernorm (affine %d): max error %.3g", pass, maxerr);
    }
    memcpy(y1, x, sizeof x);
    g4v_layernorm(pool, y1, y1, N, ROWS, N, w, b, 1e-5f);
    g4v_layernorm(pool, x, y, N, ROWS, N, w, b, 1e-5f);
    CHECK_MSG(!memcmp(y, y1, sizeof y), "layernorm in place gives the same bits");
}

static void test_gelu(void) {
    /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) evaluated in double by numpy */
    const double xs[] = {1.0, -2.0, 0.5, 3.0, -0.25};
    const double ys[] = {0.8411919906082768, -0.04540230591222494, 0.34571400982514394,
                         2.996362607918227, -0.100324649298315};
    for (int i = 0; i < 5; i++)
        CHECK_MSG(fabs(g4v_gelu_tanh((float)xs[i]) - ys[i]) < 1e-6, "gelu(%g) = %.9g", xs[i],
                  g4v_gelu_tanh((float)xs[i]));
    float g[4] = {1.0f, -2.0f, 0.5f, 3.0f}, u[4] = {2.0f, 1.0f, -1.0f, 0.5f};
    PT->use[G4V_KF_GEGLU_ROW].geglu_row(g, u, g, 2);
    PT->use[G4V_KF_GEGLU_ROW].geglu_row(g + 2, u + 2, g + 2, 2);
    CHECK(fabs(g[0] - 2 * 0.8411919906082768) < 1e-6 && fabs(g[2] + 0.34571400982514394) < 1e-6);
}

static void test_avgpool(void) {
    /* 6 x 9 patch grid, D = 2: h[l] = (l, -2l). Pooled (Y, X) = mean of the 3x3 block. */
    enum { GH = 6, GW = 9, D = 2 };
    float h[GH * GW * D], out[(GH / 3) * (GW / 3) * D];
    for (int l = 0; l < GH * GW; l++)
        h[2 * l] = (float)l, h[2 * l + 1] = -2.0f * l;
    g4v_avgpool(h, D, out, GH, GW, D, 3);
    int ok = 1;
    for (int Y = 0; Y < GH / 3; Y++)
        for (int X = 0; X < GW / 3; X++) {
            double m = 0;
            for (int dy = 0; dy < 3; dy++)
                for (int dx = 0; dx < 3; dx++)
                    m += ((3 * Y + dy) * GW + 3 * X + dx) / 9.0;
            int s = Y * (GW / 3) + X; /* row-major pooled grid */
            ok &= fabs(out[2 * s] - m) < 1e-4 && fabs(out[2 * s + 1] + 2 * m) < 1e-4;
        }
    CHECK_MSG(ok, "avgpool: wrong values or order");
}

int main(void) {
    g4v_pool *p2 = NULL, *p3 = NULL;
    if (g4v_pool_create(2, &p2, NULL) || g4v_pool_create(3, &p3, NULL)) return 1;
    test_attention(p2, p3, 1, 2, 1, 8, 1.0f);
    test_attention(p2, p3, 37, 4, 2, 16, 2.0f);  /* GQA, L below one tile */
    test_attention(p2, p3, 130, 3, 3, 72, 1.5f); /* several query and key tiles, ragged ends */
    test_attention(p2, p3, 200, 4, 1, 64, 4.0f); /* sharp softmax: logits up to ~ +-100s */
    test_attention(p2, p3, 70, 2, 2, 16, 25.0f); /* logits in the thousands: no overflow */
    test_rope();
    test_rmsnorm(p2);
    test_layernorm(p2);
    test_gelu();
    test_avgpool();
    g4v_pool_destroy(p2);
    g4v_pool_destroy(p3);
    return test_summary("test_kernels");
}
