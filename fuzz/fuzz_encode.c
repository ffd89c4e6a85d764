/* fuzz_encode.c - the input is an image file; the whole path runs on the tiny checkpoint through
 * the public API.
 *
 * g4v_encode_memory: decode, EXIF, target size for a 70-token budget, Pillow resize, encoder,
 * on tools/gen_checkpoint.py's "tiny" model (loaded once with g4v_model_load from G4V_FUZZ_MODEL
 * or the directory the build generated; one thread). The bf16 output is asked for on odd input
 * lengths. A failure must carry a proper status and g4v_ctx_error text; a success must give a
 * grid of at most 70 tokens at a multiple-of-48 size and finite features (bf16 = their rounding).
 * Limits as in fuzz_image (262,144 pixels, 16,384 per side).
 */
#include "fuzz_common.h"

#include "base/dtype.h"
#include "g4v.h"

#include <math.h>
#include <string.h>

#define FZ_BUDGET 70

static g4v_ctx *ctx;

static void load_model(void) {
    char msg[1024] = "";
    const char *dir = fz_model_dir();
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    mo.budget = FZ_BUDGET;
    mo.max_pixels = 1u << 18;
    mo.max_dimension = 1 << 14;
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = 1;
    g4v_model *model = NULL; /* lives as long as the process, as ctx does */
    if (g4v_model_load(dir, &mo, &model, msg, sizeof msg) ||
        g4v_ctx_create(model, &co, &ctx, msg, sizeof msg))
        fz_die(__FILE__, __LINE__, "model", "cannot load the tiny model from '%s' (set "
               "G4V_FUZZ_MODEL): %s", dir, msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ctx) load_model();
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    eo.bf16 = (int)(size & 1);
    g4v_result r;
    int st = g4v_encode_memory(ctx, data, size, &eo, &r);
    if (st) {
        const char *msg = g4v_ctx_error(ctx);
        FZ_ASSERT(st > G4V_OK && st < G4V_ERR_INTERNAL, "status %d (%s): %s", st,
                  g4v_status_name(st), msg);
        FZ_ASSERT(msg && msg[0], "%s without a message", g4v_status_name(st));
        FZ_ASSERT(r.features == NULL && r.n_tokens == 0, "failed encode left a result");
        return 0;
    }
    FZ_ASSERT(r.width % 48 == 0 && r.height % 48 == 0 && r.grid_w == r.width / 48 &&
                  r.grid_h == r.height / 48 && r.n_tokens == r.grid_w * r.grid_h &&
                  r.n_tokens >= 1 && r.n_tokens <= FZ_BUDGET && r.budget == FZ_BUDGET,
              "result %dx%d, grid %dx%d, %d tokens", r.width, r.height, r.grid_w, r.grid_h,
              r.n_tokens);
    size_t n = (size_t)r.n_tokens * (size_t)r.dim;
    for (size_t i = 0; i < n; i++) {
        FZ_ASSERT(isfinite(r.features[i]), "feature %zu is %g", i, r.features[i]);
        if (eo.bf16)
            FZ_ASSERT(r.features_bf16[i] == g4v_f32_to_bf16(r.features[i]), "bf16 %zu differs", i);
    }
    FZ_ASSERT(eo.bf16 || r.features_bf16 == NULL, "bf16 output not asked for");
    return 0;
}
