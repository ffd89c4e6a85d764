/* fuzz_image.c - the input is an image file (any format; the decoder is chosen by content).
 *
 * Per input: (1) g4v_image_decode with EXIF orientation on: the whole decoded image is read and
 * its size checked against the limits; (2) g4v_image_load at a 70-token budget (the streaming path
 * for orientations 1-4) with the resize order picked by the input length's parity (so both Pillow
 * orders run); (3) the differential check the image layer promises: load must succeed exactly
 * when decode does, the size load reports as decoded (its info, after orientation) must be the
 * size decode returned, and load's bytes must equal decode + g4v_target_size + g4v_image_resize.
 * Limits are low (262,144 pixels, 16,384 per side) so each input stays fast.
 */
#include "fuzz_common.h"

#include "image/image.h"

#include <string.h>

#define FZ_MAX_PIXELS (1u << 18)
#define FZ_MAX_DIM (1 << 14)
#define FZ_BUDGET 70

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    g4v_image_opts o;
    g4v_image_opts_default(&o);
    o.max_pixels = FZ_MAX_PIXELS;
    o.max_dimension = FZ_MAX_DIM;
    o.apply_exif = 1;
    o.resize_order = size & 1 ? G4V_RESIZE_PILLOW_12_2 : G4V_RESIZE_PILLOW_9;

    g4v_err err;
    g4v_image full, out;
    g4v_image_info info;
    int dst = g4v_image_decode(data, size, &o, &full, &err);
    if (dst) {
        fz_check_failure(dst, &err, "g4v_image_decode");
        FZ_ASSERT(full.rgb == NULL, "failed decode returned pixels");
    } else {
        FZ_ASSERT(full.rgb && full.width > 0 && full.height > 0 &&
                      (uint64_t)full.width * full.height <= FZ_MAX_PIXELS,
                  "decoded %dx%d", full.width, full.height);
        fz_touch(full.rgb, (size_t)full.width * full.height * 3);
    }

    int lst = g4v_image_load(data, size, FZ_BUDGET, &o, &out, &info, &err);
    if (lst) {
        fz_check_failure(lst, &err, "g4v_image_load");
        FZ_ASSERT(out.rgb == NULL, "failed load returned pixels");
    }
    FZ_ASSERT(!dst == !lst, "decode says %s but load says %s (%s)", g4v_status_name(dst),
              g4v_status_name(lst), err.msg);
    if (!dst && !lst) {
        FZ_ASSERT(info.orientation >= 1 && info.orientation <= 8, "orientation %d",
                  info.orientation);
        FZ_ASSERT(info.width == full.width && info.height == full.height,
                  "load decoded %dx%d, decode gave %dx%d", info.width, info.height, full.width,
                  full.height);
        int th, tw;
        int st = g4v_target_size(full.height, full.width, FZ_BUDGET, &th, &tw, &err);
        FZ_ASSERT(st == G4V_OK, "target size of %dx%d: %s", full.width, full.height, err.msg);
        FZ_ASSERT(out.width == tw && out.height == th && tw % 48 == 0 && th % 48 == 0,
                  "load gave %dx%d, target is %dx%d", out.width, out.height, tw, th);
        g4v_image ref = full;
        g4v_image resized = {0, 0, NULL};
        if (tw != full.width || th != full.height) {
            st = g4v_image_resize(full.rgb, full.width, full.height, (size_t)full.width * 3, tw, th,
                                  o.resize_order, &resized, &err);
            FZ_ASSERT(st == G4V_OK, "resize %dx%d -> %dx%d: %s", full.width, full.height, tw, th,
                      err.msg);
            ref = resized;
        }
        FZ_ASSERT(!memcmp(ref.rgb, out.rgb, (size_t)tw * th * 3),
                  "streamed load (%s, orientation %d, %dx%d -> %dx%d) differs from decode + resize",
                  info.format, info.orientation, full.width, full.height, tw, th);
        g4v_image_free(&resized);
    }
    g4v_image_free(&out);
    g4v_image_free(&full);
    return 0;
}
