/* decode.c - the image layer's entry points: g4v_image_opts_default, g4v_image_decode and
 * g4v_image_load check their arguments, tell the format by its first bytes (format.c), pick the
 * decoder and hand it to the row pipe (pipe.c, g4v_pipe_run). The decoders call the pipe and
 * never this file, so the calls run one way: here -> decoders -> pipe.
 */
#include "image/image_internal.h"

#include "base/budget.h"

#include <string.h>

void g4v_image_opts_default(g4v_image_opts *o) {
    o->max_pixels = 178956970ull;
    o->max_dimension = 65500;
    o->apply_exif = 1;
    o->resize_order = G4V_RESIZE_PILLOW_13;
}

/* The decoder for the format bytes[0..n) holds; G4V_ERR_UNSUPPORTED naming what was found. */
static int pick_decoder(const uint8_t *b, size_t n, g4v_decoder_fn **dec, const char **name,
                        g4v_err *err) {
    switch (g4v_image_sniff(b, n, name)) {
    case G4V_FMT_JPEG:
        *dec = g4v_decode_jpeg;
        return G4V_OK;
    case G4V_FMT_PNG:
        *dec = g4v_decode_png;
        return G4V_OK;
    case G4V_FMT_GIF:
        *dec = g4v_decode_gif;
        return G4V_OK;
    case G4V_FMT_WEBP:
        *dec = g4v_decode_webp;
        return G4V_OK;
    case G4V_FMT_BMP:
        *dec = g4v_decode_bmp;
        return G4V_OK;
    case G4V_FMT_TIFF:
        *dec = g4v_decode_tiff;
        return G4V_OK;
    case G4V_FMT_OTHER:
        return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                        "image format %s is not supported (supported: JPEG, PNG, WebP, GIF, BMP, TIFF)",
                        *name);
    default:
        break;
    }
    char hex[3 * 8 + 1] = {0};
    for (size_t i = 0; i < n && i < 8; i++) {
        static const char d[] = "0123456789abcdef";
        hex[3 * i] = d[b[i] >> 4];
        hex[3 * i + 1] = d[b[i] & 15];
        hex[3 * i + 2] = i + 1 < n && i + 1 < 8 ? ' ' : 0;
    }
    return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                    "unknown image format (first bytes: %s); supported: JPEG, PNG, WebP, GIF, BMP, TIFF",
                    hex);
}

/* What g4v_image_decode and g4v_image_load share: the checks, then bytes -> decoder ->
 * pipe -> out (resized to budget's target size unless budget is 0). */
static int decode_image(const void *bytes, size_t n, int budget, const g4v_image_opts *opts,
                        g4v_image *out, g4v_image_info *info, g4v_err *err) {
    g4v_image_opts defaults;
    if (!opts) {
        g4v_image_opts_default(&defaults);
        opts = &defaults;
    }
    if (!out) return g4v_fail(err, G4V_ERR_ARG, "image: out is NULL");
    out->rgb = NULL;
    out->width = out->height = 0;
    if (info) memset(info, 0, sizeof *info);
    if (!bytes && n) return g4v_fail(err, G4V_ERR_ARG, "image: bytes is NULL");
    /* refuse a bad budget before spending time on decoding */
    if (budget && g4v_budget_require(budget, err)) return G4V_ERR_ARG;
    if (n == 0) return g4v_fail(err, G4V_ERR_IMAGE, "image: empty input (0 bytes)");
    const char *name;
    g4v_decoder_fn *dec = NULL;
    int st = pick_decoder(bytes, n, &dec, &name, err);
    if (st) return st;
    return g4v_pipe_run(bytes, n, dec, name, budget, opts, out, info, err);
}

int g4v_image_decode(const void *bytes, size_t n, const g4v_image_opts *opts, g4v_image *out,
                     g4v_err *err) {
    return decode_image(bytes, n, 0, opts, out, NULL, err);
}

int g4v_image_load(const void *bytes, size_t n, int budget, const g4v_image_opts *opts,
                   g4v_image *out, g4v_image_info *info, g4v_err *err) {
    if (budget == 0) {
        if (out) out->rgb = NULL;
        return g4v_budget_require(budget, err);
    }
    return decode_image(bytes, n, budget, opts, out, info, err);
}
