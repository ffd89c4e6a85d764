/* fuzz_encode.c - the input is an image file; the whole path runs on the tiny checkpoint.
 *
 * bytes -> g4v_image_load (decode, EXIF, target size for a 70-token budget, Pillow resize) ->
 * g4v_encoder_run on tools/gen_checkpoint.py's "tiny" model (loaded once, from G4V_FUZZ_MODEL or
 * the directory the build generated). Any image that loads must encode: the size is a multiple
 * of 48 within the budget, and every output value is finite. Limits as in fuzz_image.
 */
#include "fuzz_common.h"

#include "encoder/encoder.h"
#include "image/image.h"
#include "io/checkpoint.h"

#include <math.h>
#include <stdlib.h>

#define FZ_BUDGET 70

static g4v_checkpoint *ck;
static g4v_encoder *enc;
static g4v_workspace *ws;
static float *out;

static void load_model(void) {
    g4v_err err;
    const char *dir = fz_model_dir();
    if (g4v_checkpoint_open(dir, NULL, &ck, &err) || g4v_encoder_create(ck, NULL, &enc, &err))
        fz_die(__FILE__, __LINE__, "model", "cannot load the tiny model from '%s' (set "
               "G4V_FUZZ_MODEL): %s", dir, err.msg);
    ws = g4v_workspace_create();
    out = malloc(sizeof *out * FZ_BUDGET * (size_t)ck->cfg.text_hidden_size);
    FZ_ASSERT(ws && out, "out of memory");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!enc) load_model();
    g4v_image_opts o;
    g4v_image_opts_default(&o);
    o.max_pixels = 1u << 18;
    o.max_dimension = 1 << 14;
    g4v_err err;
    g4v_image img;
    int st = g4v_image_load(data, size, FZ_BUDGET, &o, &img, NULL, &err);
    if (st) {
        fz_check_failure(st, &err, "g4v_image_load");
        return 0;
    }
    FZ_ASSERT(img.width % 48 == 0 && img.height % 48 == 0 &&
                  (img.width / 48) * (img.height / 48) <= FZ_BUDGET,
              "target size %dx%d", img.width, img.height);
    st = g4v_encoder_run(enc, ws, NULL, img.rgb, img.width, img.height, (size_t)img.width * 3, out,
                         &err);
    FZ_ASSERT(st == G4V_OK, "encoding a %dx%d image: %s", img.width, img.height, err.msg);
    size_t n = (size_t)(img.width / 48) * (img.height / 48) * ck->cfg.text_hidden_size;
    for (size_t i = 0; i < n; i++) FZ_ASSERT(isfinite(out[i]), "output %zu is %g", i, out[i]);
    g4v_image_free(&img);
    return 0;
}
