/* preprocess.c - g4v_preprocess_file: the image half of an encode on its own (decode, orient,
 * resize, patchify), for `g4v preprocess` and anyone comparing against transformers' processor.
 * Byte-identical to what an encode feeds the model: the same g4v_image_load and g4v_patchify. */
#include "api_internal.h"

#include "base/alloc.h"
#include "base/budget.h"
#include "base/cpu.h"
#include "io/fsutil.h"

#include <stdio.h>
#include <string.h>

static void preprocess_defaults(g4v_preprocess_options *o) {
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->budget = G4V_DEFAULT_BUDGET;
    o->apply_exif = 1;
    o->resize = G4V_RESIZE_PILLOW;
    o->pillow_version = 13;
}

void g4v_preprocess_options_init_sized(g4v_preprocess_options *o, size_t size) {
    g4v_preprocess_options d;
    preprocess_defaults(&d);
    g4v_api_init_struct(o, size, &d, sizeof d);
}

/* The library's own g4v_pixels and the buffers behind its pointers. */
typedef struct pixels_box {
    g4v_pixels pub; /* first: g4v_pixels_free gets this pointer back */
    g4v_image img;
    float *patches;
    int32_t *positions;
} pixels_box;

static int resolve(const g4v_preprocess_options *in, g4v_image_opts *io, int *budget,
                   g4v_err *err) {
    g4v_preprocess_options o;
    preprocess_defaults(&o);
    if (g4v_api_read_opts(&o, sizeof o, in, "g4v_preprocess_options", err)) return G4V_ERR_ARG;
    g4v_image_opts_default(io);
    if (o.max_pixels) io->max_pixels = o.max_pixels;
    if (o.max_dimension < 0)
        return g4v_fail(err, G4V_ERR_ARG, "max_dimension must be positive, found %d",
                        o.max_dimension);
    if (o.max_dimension) io->max_dimension = o.max_dimension;
    if (o.apply_exif != 0 && o.apply_exif != 1)
        return g4v_fail(err, G4V_ERR_ARG, "apply_exif must be 0 or 1, found %d", o.apply_exif);
    io->apply_exif = o.apply_exif;
    if (o.resize == G4V_RESIZE_TORCHVISION) {
        if (o.pillow_version != 13)
            return g4v_fail(err, G4V_ERR_ARG,
                            "pillow_version is a Pillow option; it cannot go with "
                            "G4V_RESIZE_TORCHVISION");
        io->resize_order = G4V_RESIZE_TORCH;
    } else if (o.resize == G4V_RESIZE_PILLOW) {
        if (o.pillow_version == 13)
            io->resize_order = G4V_RESIZE_PILLOW_13;
        else if (o.pillow_version == 122)
            io->resize_order = G4V_RESIZE_PILLOW_12_2;
        else if (o.pillow_version == 9)
            io->resize_order = G4V_RESIZE_PILLOW_9;
        else
            return g4v_fail(err, G4V_ERR_ARG,
                            "pillow_version must be 13, 122 or 9, found %d", o.pillow_version);
    } else {
        return g4v_fail(err, G4V_ERR_ARG,
                        "resize must be G4V_RESIZE_PILLOW (0) or G4V_RESIZE_TORCHVISION (1), "
                        "found %d",
                        o.resize);
    }
    *budget = o.budget;
    return g4v_budget_require(o.budget, err);
}

g4v_status g4v_preprocess_file(const char *path, const g4v_preprocess_options *opts,
                               g4v_pixels **out, char *errbuf, size_t errbuf_size) {
    g4v_err err;
    g4v_err_clear(&err);
    g4v_api_copy_msg(errbuf, errbuf_size, "");
    if (out) *out = NULL;
    g4v_image_opts io;
    int budget = 0, st;
    unsigned char *bytes = NULL;
    size_t n = 0;
    pixels_box *b = NULL;
    if (!path || !out) {
        st = g4v_fail(&err, G4V_ERR_ARG, "g4v_preprocess_file: path and out must not be NULL");
        goto fail;
    }
    if ((st = resolve(opts, &io, &budget, &err))) goto fail;
    if ((st = g4v_cpu_isa_check(&err))) goto fail; /* the resize kernels follow G4V_ISA */
    if ((st = g4v_read_file(path, UINT64_MAX, "none", &bytes, &n, &err))) goto fail;
    if (!(b = g4v_calloc(1, sizeof *b))) {
        st = g4v_fail(&err, G4V_ERR_NOMEM, "out of memory");
        goto fail;
    }
    g4v_image_info info;
    st = g4v_image_load(bytes, n, budget, &io, &b->img, &info, &err);
    g4v_free(bytes);
    bytes = NULL;
    if (st) {
        g4v_err_prefix(&err, "%s", path);
        goto fail;
    }
    g4v_pixels *p = &b->pub;
    p->width = b->img.width;
    p->height = b->img.height;
    p->n_patches = (b->img.height / 16) * (b->img.width / 16);
    b->patches = g4v_malloc_array((size_t)p->n_patches * 768, sizeof *b->patches);
    b->positions = g4v_malloc_array((size_t)p->n_patches * 2, sizeof *b->positions);
    if (!b->patches || !b->positions) {
        st = g4v_fail(&err, G4V_ERR_NOMEM, "out of memory for %d patches", p->n_patches);
        goto fail;
    }
    g4v_patchify(b->img.rgb, b->img.width, b->img.height, (size_t)b->img.width * 3,
                 io.resize_order, b->patches, b->positions);
    p->rgb = b->img.rgb;
    p->patches = b->patches;
    p->positions = b->positions;
    g4v_api_copy_msg(p->format, sizeof p->format, info.format);
    p->src_width = info.src_width;
    p->src_height = info.src_height;
    p->orientation = info.orientation;
    p->oriented_width = info.width;
    p->oriented_height = info.height;
    p->streamed = info.streamed;
    *out = p;
    return G4V_OK;
fail:
    g4v_free(bytes);
    g4v_pixels_free(b ? &b->pub : NULL);
    g4v_api_copy_msg(errbuf, errbuf_size, err.msg);
    return st;
}

void g4v_pixels_free(g4v_pixels *p) {
    if (!p) return;
    pixels_box *b = (pixels_box *)p;
    g4v_image_free(&b->img);
    g4v_free(b->patches);
    g4v_free(b->positions);
    g4v_free(b);
}
