/* dtype.h - the element types a checkpoint stores, and exact conversions to float.
 *
 * bf16 -> f32 and f16 -> f32 are exact. f32 -> bf16 rounds to nearest even (as PyTorch, MLX and
 * ggml do); NaN stays NaN (quiet). These are the scalar definitions every SIMD path must match.
 */
#ifndef G4V_BASE_DTYPE_H
#define G4V_BASE_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum g4v_dtype { G4V_DT_BF16 = 0, G4V_DT_F16 = 1, G4V_DT_F32 = 2 } g4v_dtype;

/* llama.cpp's Q8_0 block, the one quantized layout a checkpoint may store (a GGUF tensor,
 * docs/GGUF.md) and the block the INT8_BLOCKS math mode scales by (kernels/gemm_q8.h): an f16
 * scale d, then G4V_Q8_BLOCK int8 codes q; value = d * q. The one definition of that size. */
enum { G4V_Q8_BLOCK = 32, G4V_Q8_0_BLOCK_BYTES = 2 + G4V_Q8_BLOCK };

static inline size_t g4v_dtype_size(g4v_dtype dt) { return dt == G4V_DT_F32 ? 4 : 2; }

static inline const char *g4v_dtype_name(g4v_dtype dt) {
    return dt == G4V_DT_BF16 ? "BF16" : dt == G4V_DT_F16 ? "F16" : "F32";
}

static inline float g4v_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t g4v_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* f32 rounded to the nearest bf16 value, returned as f32. */
static inline float g4v_round_bf16(float f) { return g4v_bf16_to_f32(g4v_f32_to_bf16(f)); }

static inline float g4v_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp) {
        u = sign | ((exp + 112) << 23) | (man << 13);
    } else if (!man) {
        u = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400));
        u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Element i of a raw array of dtype dt, as float. Unaligned data is fine. */
static inline float g4v_load_elem(const void *data, g4v_dtype dt, size_t i) {
    const unsigned char *p = (const unsigned char *)data;
    if (dt == G4V_DT_F32) {
        float f;
        memcpy(&f, p + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return dt == G4V_DT_BF16 ? g4v_bf16_to_f32(h) : g4v_f16_to_f32(h);
}

#endif
