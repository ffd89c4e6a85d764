/* resize.c - the portable inner loops of the Pillow-exact resize (contract in resize.h): plain C,
 * any CPU; the x86_avx2 variant gives the same bytes. */
#include "kernels/dispatch.h"

#define L G4V_RS_LANES
#define VCHUNK 256

static void hpass_portable(const uint8_t *t, const g4v_coeffs *cx, uint8_t *u) {
    for (int x = 0; x < cx->n_out; x++) {
        int32_t acc[3 * L];
        for (int i = 0; i < 3 * L; i++)
            acc[i] = G4V_RS_HALF;
        const uint8_t *s = t + (size_t)cx->lo[x] * 3 * L;
        const int32_t *q = cx->q + (size_t)x * cx->ksize;
        for (int j = 0, cnt = cx->cnt[x]; j < cnt; j++) {
            const int32_t w = q[j];
            const uint8_t *sj = s + (size_t)j * 3 * L;
            for (int i = 0; i < 3 * L; i++)
                acc[i] += sj[i] * w;
        }
        for (int i = 0; i < 3 * L; i++)
            u[(size_t)x * 3 * L + i] = g4v_rs_clip8(acc[i]);
    }
}

static void vpass_portable(const uint8_t *const *rows, const int32_t *q, int cnt, size_t n,
                           uint8_t *out) {
    for (size_t k0 = 0; k0 < n; k0 += VCHUNK) {
        size_t m = n - k0 < VCHUNK ? n - k0 : VCHUNK;
        int32_t acc[VCHUNK];
        for (size_t i = 0; i < m; i++)
            acc[i] = G4V_RS_HALF;
        for (int j = 0; j < cnt; j++) {
            const uint8_t *r = rows[j] + k0;
            const int32_t w = q[j];
            for (size_t i = 0; i < m; i++)
                acc[i] += r[i] * w;
        }
        for (size_t i = 0; i < m; i++)
            out[k0 + i] = g4v_rs_clip8(acc[i]);
    }
}

const g4v_resize_kernel g4v_resize_portable = {.hpass = hpass_portable, .vpass = vpass_portable};
