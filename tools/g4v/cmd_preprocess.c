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

#include <errno.h>
#include <limits.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help(FILE *f) {
    fprintf(f,
            "usage: g4v preprocess IMAGE [--tokens N] [--no-exif]\n"
            "                      [--resize pillow|torchvision] [--pillow 9|12.2|13]\n"
            "                      [--max-pixels N] [--max-dimension N] [-v] -o OUT\n"
            "\n"
            "Decodes IMAGE (JPEG, PNG, WebP, GIF first frame, BMP, TIFF first page; chosen by\n"
            "content, not by name), applies its EXIF orientation, converts it to RGB, resizes it to the Gemma 4\n"
            "target size for the token budget with Pillow's BICUBIC filter, and cuts it into\n"
            "16x16 patches -- byte for byte what transformers' load_image + the Gemma 4 image\n"
            "processor (PIL backend) produce with Pillow 13 (or --pillow); with --resize\n"
            "torchvision, what its torchvision backend produces (transformers' default when\n"
            "torchvision is installed).\n"
            "\n"
            "options:\n"
            "  --tokens N         soft-token budget, one of " CLI_BUDGETS " (default %d)\n"
            "  --no-exif          ignore the EXIF/XMP orientation (as when a PIL image is handed\n"
            "                     to the processor directly); default: apply it, as load_image\n"
            "  --resize pillow|torchvision\n"
            "                     pillow (default): Pillow's BICUBIC and the PIL backend's\n"
            "                     float64 rescale; torchvision: torch's uint8 antialiased bicubic\n"
            "                     (its int16 weights) and the float32 rescale of transformers'\n"
            "                     torchvision backend (Gemma4ImageProcessor, and the 12B's\n"
            "                     Gemma4UnifiedImageProcessor, which has no other backend)\n"
            "  --pillow V         with Pillow: the version whose order of the two resize passes\n"
            "                     to follow (the order changes the bytes):\n"
            "                       13   (default) Pillow >= 13.0: vertical first when the height\n"
            "                            loses more than twice as many pixels as the width\n"
            "                       12.2 Pillow 12.2: vertical first for very tall images\n"
            "                            (height > 100 x width, height shrinking)\n"
            "                       9    Pillow 9.0 - 12.1: horizontal first, always\n"
            "                     (--pillow-12.2 is --pillow 12.2). Refused with --resize\n"
            "                     torchvision (torch runs the horizontal pass first, always)\n"
            "  --max-pixels N     refuse images with more pixels (default 178956970, Pillow's\n"
            "                     decompression-bomb limit)\n"
            "  --max-dimension N  refuse images with a longer side (default 65500)\n"
            "  -v, --verbose      print format, sizes and orientation to stderr\n"
            "  -o OUT             output prefix (required); writes:\n"
            "                       OUT.png            resized RGB image, 8 bit\n"
            "                       OUT.npy            patches, float32 [L, 768], per patch in\n"
            "                                          (row, column, channel) order, values u/255\n"
            "                       OUT.positions.npy  int32 [L, 2]: (x = patch column, y = patch row)\n"
            "                     L = (height/16) * (width/16); no padding rows are written.\n"
            "  -h, --help         this help\n"
            "\n"
            "Not reproduced: Pillow versions' decoder differences: docs/PREPROCESSING.md §9.\n"
            "\n"
            "exit codes: 0 ok (all outputs complete), 1 usage error, 2 input error (unreadable\n"
            "or unsupported image, unsupported budget, over a limit), 4 cannot write an output,\n"
            "5 internal error\n",
            G4V_DEFAULT_BUDGET);
}

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "g4v preprocess: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see g4v preprocess --help)\n");
    return G4V_EXIT_USAGE;
}

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

/* Fills a from the command line. Returns -1 to go on, else the exit code to stop with (help
 * printed, or a usage error reported). */
static int parse_args(int argc, char **argv, preprocess_args *a) {
    memset(a, 0, sizeof *a);
    a->pillow = -1;
    g4v_preprocess_options_init(&a->opts);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        long long v;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            help(stdout);
            return G4V_EXIT_OK;
        } else if (!strcmp(s, "--tokens") || !strcmp(s, "--max-pixels") ||
                   !strcmp(s, "--max-dimension") || !strcmp(s, "--pillow") || !strcmp(s, "-o") ||
                   !strcmp(s, "--resize")) {
            if (i + 1 >= argc) return usage_error("%s needs a value", s);
            const char *val = argv[++i];
            if (!strcmp(s, "-o")) {
                a->out = val;
            } else if (!strcmp(s, "--pillow")) {
                if (!strcmp(val, "9"))
                    a->pillow = 9;
                else if (!strcmp(val, "12.2"))
                    a->pillow = 122;
                else if (!strcmp(val, "13"))
                    a->pillow = 13;
                else
                    return usage_error("--pillow: '%s' is not one of 9, 12.2, 13", val);
            } else if (!strcmp(s, "--resize")) {
                if (strcmp(val, "pillow") && strcmp(val, "torchvision"))
                    return usage_error("--resize: '%s' is not pillow or torchvision", val);
                a->opts.resize =
                    strcmp(val, "torchvision") ? G4V_RESIZE_PILLOW : G4V_RESIZE_TORCHVISION;
            } else if (!strcmp(s, "--tokens")) {
                if (fe_parse_int(val, INT_MIN, INT_MAX, &v))
                    return usage_error("--tokens: '%s' is not an integer", val);
                a->opts.budget = (int)v;
            } else if (!strcmp(s, "--max-pixels")) {
                if (fe_parse_int(val, 1, LLONG_MAX, &v))
                    return usage_error("--max-pixels: '%s' is not a positive integer", val);
                a->opts.max_pixels = (uint64_t)v;
            } else {
                if (fe_parse_int(val, 1, INT_MAX, &v))
                    return usage_error("--max-dimension: '%s' is not a positive integer", val);
                a->opts.max_dimension = (int)v;
            }
        } else if (!strcmp(s, "--no-exif")) {
            a->opts.apply_exif = 0;
        } else if (!strcmp(s, "--pillow-12.2")) {
            a->pillow = 122;
        } else if (!strcmp(s, "-v") || !strcmp(s, "--verbose")) {
            a->verbose = 1;
        } else if (s[0] == '-' && s[1]) {
            return usage_error("unknown option %s", s);
        } else if (!a->in) {
            a->in = s;
        } else {
            return usage_error("unexpected argument %s (one IMAGE only)", s);
        }
    }
    if (!a->in) return usage_error("%s", "missing IMAGE");
    if (!a->out) return usage_error("%s", "missing -o OUT");
    if (a->pillow >= 0 && a->opts.resize == G4V_RESIZE_TORCHVISION)
        return usage_error("%s", "--pillow is a Pillow option; it cannot go with --resize "
                                 "torchvision");
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
