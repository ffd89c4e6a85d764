/* patchify.c - RGB8 -> 16x16 patches [L, 768] and (x, y) positions (docs/PREPROCESSING.md §7).
 *
 * Patch l = py*pW + px, row-major over the grid; inside a patch the value order is (dy, dx, c)
 * with the channel fastest. Values are (float)((double)u / 255.0), which equals transformers'
 * uint8.astype(float64) * (1/255) -> float32 for all 256 values (docs/PREPROCESSING.md §7); for
 * the torchvision backend's rule (G4V_RESIZE_TORCH) they are the float32 product (float)u *
 * (float)(1/255.), torch's uint8 tensor * Python float. A 256-entry table holds them. No padding to max_patches: callers that need it append it.
 */
#include "image/image.h"

void g4v_patchify(const uint8_t *rgb, int width, int height, size_t stride, g4v_resize_order rule,
                  float *patches, int32_t *positions) {
    float lut[256];
    const float f32 = (float)(1.0 / 255.0); /* torch: uint8 tensor * Python float -> float32 */
    for (int u = 0; u < 256; u++)
        lut[u] = rule == G4V_RESIZE_TORCH ? (float)u * f32 : (float)((double)u * (1.0 / 255.0));
    const int p = 16, pw = width / p, ph = height / p;
    for (int py = 0; py < ph; py++)
        for (int px = 0; px < pw; px++) {
            size_t l = (size_t)py * pw + px;
            float *dst = patches + l * (p * p * 3);
            for (int dy = 0; dy < p; dy++) {
                const uint8_t *s = rgb + (size_t)(py * p + dy) * stride + (size_t)px * p * 3;
                for (int k = 0; k < p * 3; k++) dst[dy * p * 3 + k] = lut[s[k]];
            }
            if (positions) {
                positions[2 * l] = px;
                positions[2 * l + 1] = py;
            }
        }
}
