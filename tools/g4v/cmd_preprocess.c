/* cmd_preprocess.c - `g4v preprocess`: decode + orient + resize + patchify one image, exactly as
 * transformers' load_image + Gemma4ImageProcessorPil (or, with --resize torchvision, its
 * torchvision backend Gemma4ImageProcessor), and write the intermediate results:
 *   OUT.png            the resized RGB image (libpng, lossless)
 *   OUT.npy            patches, float32 [L, 768], (dy, dx, channel) order, values u/255
 *   OUT.positions.npy  positions, int32 [L, 2], (x = column, y = row)
 * Exit status 0 only when all three files are complete (each is written to a temporary name and
 * renamed); exit codes as in cli.h.
 */
#include "cli.h"
#include "frontend.h"
#include "npy.h"
#include "options.h"

#include <errno.h>
#include <limits.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes RGB8 as a PNG via a temporary file; 0 or -1 (message in msg). */
static int write_png(const char *path, const g4v_pixels *img, char *msg, size_t msgn) {
    size_t plen = strlen(path) + 32;
    char *tmp = malloc(plen);
    if (!tmp) return snprintf(msg, msgn, "out of memory"), -1;
    snprintf(tmp, plen, "%s.tmp-%ld", path, (long)getpid());
    FILE *volatile f = fopen(tmp, "wb");
    if (!f) {
        snprintf(msg, msgn, "%s", strerror(errno));
        free(tmp);
        return -1;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int bad = !png || !info;
    if (!bad && setjmp(png_jmpbuf(png))) {
        bad = 1;
    } else if (!bad) {
        png_init_io(png, f);
        png_set_compression_level(png, 1); /* an intermediate result: favour speed */
        png_set_IHDR(png, info, (png_uint_32)img->width, (png_uint_32)img->height, 8,
                     PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                     PNG_FILTER_TYPE_DEFAULT);
        png_write_info(png, info);
        for (int y = 0; y < img->height; y++)
            png_write_row(png, img->rgb + (size_t)y * img->width * 3);
        png_write_end(png, info);
    }
    png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
    int e = errno;
    if (fclose(f) != 0 && !bad) bad = 1, e = errno;
    if (!bad && rename(tmp, path) != 0) bad = 1, e = errno;
    if (bad) {
        snprintf(msg, msgn, "%s", e ? strerror(e) : "libpng error");
        remove(tmp);
    }
    free(tmp);
    return bad ? -1 : 0;
}

typedef struct preprocess_args {
    const char *in, *out;
    int verbose;
    int pillow; /* --pillow as g4v_preprocess_options.pillow_version (13, 122, 9), or -1 */
    g4v_preprocess_options opts;
} preprocess_args;

static const fe_opt_choice pillow_versions[] = {{"9", 9}, {"12.2", 122}, {"13", 13}, {NULL, 0}};

#define O(member) FE_FIELD(preprocess_args, member)

static const fe_opt rows[] = {
    {.kind = FE_OPT_STRING, .flags = FE_OPT_POSITIONAL | FE_OPT_REQUIRED, O(in), .arg = "IMAGE",
     .help = "the image (JPEG, PNG, WebP, GIF, BMP, TIFF; chosen by content)"},
    {.name = "tokens", .kind = FE_OPT_INT, O(opts.budget), .lo = 1, .hi = FE_OPT_TOKENS_MAX,
     .arg = "N",
     .help = "soft-token budget, one of " CLI_BUDGETS " (default " FE_STR(G4V_DEFAULT_BUDGET) ")"},
    {.name = "no-exif", .kind = FE_OPT_FLAG, O(opts.apply_exif), .lo = 0,
     .help = "ignore the EXIF/XMP orientation (as when a PIL image is handed to the processor "
             "directly); default: apply it, as load_image"},
    FE_OPT_RESIZE(preprocess_args, opts.resize,
                  "pillow (default): Pillow's BICUBIC and the PIL backend's float64 rescale; "
                  "torchvision: torch's uint8 antialiased bicubic (its int16 weights) and the "
                  "float32 rescale of transformers' torchvision backend (Gemma4ImageProcessor, "
                  "and the 12B's Gemma4UnifiedImageProcessor, which has no other backend)"),
    {.name = "pillow", .kind = FE_OPT_CHOICE, O(pillow), .choices = pillow_versions, .arg = "V",
     .help = "with Pillow: the version whose order of the two resize passes to follow (the "
             "order changes the bytes):\n"
             "  13   (default) Pillow >= 13.0: vertical first when the height\n"
             "       loses more than twice as many pixels as the width\n"
             "  12.2 Pillow 12.2: vertical first for very tall images\n"
             "       (height > 100 x width, height shrinking)\n"
             "  9    Pillow 9.0 - 12.1: horizontal first, always\n"
             "(--pillow-12.2 is --pillow 12.2). Refused with --resize torchvision (torch runs the "
             "horizontal pass first, always)"},
    {.name = "pillow-12.2", .kind = FE_OPT_FLAG, .flags = FE_OPT_HIDDEN, O(pillow), .lo = 122,
     .help = "--pillow 12.2"},
    {.name = "max-pixels", .kind = FE_OPT_UINT, O(opts.max_pixels), .lo = 1, .hi = LLONG_MAX,
     .arg = "N",
     .help = "refuse images with more pixels (default 178956970, Pillow's decompression-bomb "
             "limit)"},
    {.name = "max-dimension", .kind = FE_OPT_INT, O(opts.max_dimension), .lo = 1, .hi = INT_MAX,
     .arg = "N", .help = "refuse images with a longer side (default 65500)"},
    {.name = "verbose", .shortopt = 'v', .kind = FE_OPT_FLAG, O(verbose), .lo = 1,
     .help = "print format, sizes and orientation to stderr"},
    {.shortopt = 'o', .kind = FE_OPT_STRING, .flags = FE_OPT_REQUIRED, O(out), .arg = "OUT",
     .help = "output prefix (required); writes:\n"
             "  OUT.png            resized RGB image, 8 bit\n"
             "  OUT.npy            patches, float32 [L, 768], per patch in\n"
             "                     (row, column, channel) order, values u/255\n"
             "  OUT.positions.npy  int32 [L, 2]: (x = patch column, y = patch row)\n"
             "L = (height/16) * (width/16); no padding rows are written."},
};

static const fe_cmd preprocess_cmd = {
    .name = "preprocess",
    .usage = "preprocess IMAGE [--tokens N] [--no-exif]\n"
             "                      [--resize pillow|torchvision] [--pillow 9|12.2|13]\n"
             "                      [--max-pixels N] [--max-dimension N] [-v] -o OUT",
    .about = "Decodes IMAGE (JPEG, PNG, WebP, GIF first frame, BMP, TIFF first page; chosen by\n"
             "content, not by name), applies its EXIF orientation, converts it to RGB, resizes it\n"
             "to the Gemma 4 target size for the token budget with Pillow's BICUBIC filter, and\n"
             "cuts it into 16x16 patches -- byte for byte what transformers' load_image + the\n"
             "Gemma 4 image processor (PIL backend) produce with Pillow 13 (or --pillow); with\n"
             "--resize torchvision, what its torchvision backend produces (transformers' default\n"
             "when torchvision is installed).\n",
    .heading = "options:",
    FE_OPTS(rows),
    .epilog = "Not reproduced: Pillow versions' decoder differences: docs/PREPROCESSING.md §9.\n"
              "\n"
              "exit codes: 0 ok (all outputs complete), 1 usage error, 2 input error (unreadable\n"
              "or unsupported image, unsupported budget, over a limit), 4 cannot write an output,\n"
              "5 internal error\n",
};

#undef O

/* Fills a from the command line. Returns -1 to go on, else the exit code to stop with (help
 * printed, or a usage error reported). */
static int parse_args(int argc, char **argv, preprocess_args *a) {
    memset(a, 0, sizeof *a);
    a->pillow = -1;
    g4v_preprocess_options_init(&a->opts);
    int rc = fe_opt_run(&preprocess_cmd, argc, argv, a);
    if (rc) return rc == FE_OPT_HELP ? G4V_EXIT_OK : G4V_EXIT_USAGE;
    if (a->pillow >= 0 && a->opts.resize == G4V_RESIZE_TORCHVISION) {
        fprintf(stderr, "g4v preprocess: --pillow is a Pillow option; it cannot go with --resize "
                        "torchvision\n");
        return G4V_EXIT_USAGE;
    }
    if (a->pillow >= 0) a->opts.pillow_version = a->pillow; /* else the default, Pillow 13 */
    return -1;
}

/* Reads a->in, brings it to its target size and cuts it into patches (g4v_preprocess_file).
 * 0, or an exit code with the message printed. */
static int load_image(const preprocess_args *a, g4v_pixels **img) {
    char msg[1024];
    int st = g4v_preprocess_file(a->in, &a->opts, img, msg, sizeof msg);
    if (st) {
        fprintf(stderr, "g4v preprocess: %s\n", msg);
        /* an unsupported budget is an input error, not a usage error */
        return st == G4V_ERR_NOMEM || st == G4V_ERR_INTERNAL ? G4V_EXIT_INTERNAL : G4V_EXIT_INPUT;
    }
    const g4v_pixels *p = *img;
    if (a->verbose)
        fprintf(stderr, "%s: %s %dx%d, orientation %d -> %dx%d, resized to %dx%d (%s, %s)\n", a->in,
                p->format, p->src_width, p->src_height, p->orientation, p->oriented_width,
                p->oriented_height, p->width, p->height,
                a->opts.resize == G4V_RESIZE_TORCHVISION ? "torchvision"
                : a->opts.pillow_version == 13         ? "Pillow >= 13"
                : a->opts.pillow_version == 122        ? "Pillow 12.2"
                                                       : "Pillow 9-12.1",
                p->streamed ? "streamed" : "whole image");
    return G4V_EXIT_OK;
}

/* Writes OUT.png, OUT.npy and OUT.positions.npy, stopping at the first that fails. 0 or an exit
 * code (message printed). */
static int write_outputs(const char *out, const g4v_pixels *img) {
    long L = img->n_patches;
    size_t plen = strlen(out) + 32;
    char *path = malloc(plen);
    if (!path) {
        fprintf(stderr, "g4v preprocess: out of memory\n");
        return G4V_EXIT_INTERNAL;
    }
    char msg[256] = ""; /* write_png's reason; the .npy writers leave theirs in errno */
    snprintf(path, plen, "%s.png", out);
    int bad = write_png(path, img, msg, sizeof msg), rc = G4V_EXIT_OK;
    if (!bad) {
        snprintf(path, plen, "%s.npy", out);
        bad = g4v_npy_write_f32(path, img->patches, L, 768);
    }
    if (!bad) {
        snprintf(path, plen, "%s.positions.npy", out);
        bad = g4v_npy_write_i32(path, img->positions, L, 2);
    }
    if (bad) {
        fprintf(stderr, "g4v preprocess: cannot write %s: %s\n", path, *msg ? msg : strerror(errno));
        rc = G4V_EXIT_OUTPUT;
    }
    free(path);
    return rc;
}

int cmd_preprocess(int argc, char **argv) {
    preprocess_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) return rc;
    g4v_pixels *img = NULL;
    rc = load_image(&a, &img);
    if (!rc) rc = write_outputs(a.out, img);
    g4v_pixels_free(img);
    return rc;
}
