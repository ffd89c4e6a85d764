/* orient.c - Pillow's ImageOps.exif_transpose on an RGB8 image (docs/PREPROCESSING.md §4.3).
 *
 * out[y][x] for in of H rows x W columns (5..8 produce W rows x H columns):
 *   2 in[y][W-1-x]   3 in[H-1-y][W-1-x]   4 in[H-1-y][x]        5 in[x][y]
 *   6 in[H-1-x][y]   7 in[H-1-x][W-1-y]   8 in[x][W-1-y]
 * Converting to RGB commutes with these, so orienting after the conversion is exact. The
 * transposing cases walk the output in tiles so both images are read and written cache-friendly.
 */
#include "image/image_internal.h"

#include "base/alloc.h"

#include <string.h>

#define TILE 32

/* Source pixel for output (x, y) of the oriented image. */
static inline size_t src_index(int o, int x, int y, int W, int H) {
    int sx, sy;
    switch (o) {
    case 2: sx = W - 1 - x, sy = y; break;
    case 3: sx = W - 1 - x, sy = H - 1 - y; break;
    case 4: sx = x, sy = H - 1 - y; break;
    case 5: sx = y, sy = x; break;
    case 6: sx = y, sy = H - 1 - x; break;
    case 7: sx = W - 1 - y, sy = H - 1 - x; break;
    default: sx = W - 1 - y, sy = x; break; /* 8 */
    }
    return ((size_t)sy * W + sx) * 3;
}

int g4v_orient(const g4v_image *in, int o, g4v_image *out, g4v_err *err) {
    if (o < 2 || o > 8) {
        *out = *in;
        return G4V_OK;
    }
    int W = in->width, H = in->height;
    int ow = o >= 5 ? H : W, oh = o >= 5 ? W : H;
    uint8_t *dst = g4v_malloc_large((size_t)ow * oh * 3);
    if (!dst)
        return g4v_fail(err, G4V_ERR_NOMEM, "EXIF orientation %d: cannot allocate %dx%d RGB", o,
                        ow, oh);
    const uint8_t *src = in->rgb;
    if (o <= 4) {
        for (int y = 0; y < oh; y++) {
            uint8_t *d = dst + (size_t)y * ow * 3;
            int sy = o == 2 ? y : H - 1 - y;
            const uint8_t *s = src + (size_t)sy * W * 3;
            if (o == 4) {
                memcpy(d, s, (size_t)W * 3);
                continue;
            }
            for (int x = 0; x < ow; x++) memcpy(d + 3 * x, s + 3 * (size_t)(W - 1 - x), 3);
        }
    } else {
        for (int ty = 0; ty < oh; ty += TILE)
            for (int tx = 0; tx < ow; tx += TILE)
                for (int y = ty; y < oh && y < ty + TILE; y++) {
                    uint8_t *d = dst + ((size_t)y * ow) * 3;
                    for (int x = tx; x < ow && x < tx + TILE; x++)
                        memcpy(d + 3 * (size_t)x, src + src_index(o, x, y, W, H), 3);
                }
    }
    out->width = ow;
    out->height = oh;
    out->rgb = dst;
    return G4V_OK;
}
