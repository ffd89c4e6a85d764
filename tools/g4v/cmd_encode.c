/* cmd_encode.c - `g4v encode`: one image -> Gemma 4 soft tokens [N, T] as a float32 .npy.
 *
 *   g4v encode --model DIR IMAGE [--tokens N] [--precise] [--threads N] -o OUT.npy
 *
 * IMAGE is any format src/image decodes (chosen by content, EXIF orientation applied), or a raw
 * uint8 [H, W, 3] .npy (as numpy.save writes it), taken as already-decoded RGB. Either way the
 * image is resized to the target size for the budget (SPEC B.2, Pillow-exact) and encoded.
 * stdout gets the prompt span for the image (SPEC E.2): the text <|image> + N x <|image|> +
 * <image|> and its token ids from the config. Minimal on purpose: the full CLI/API (batches,
 * safetensors output, timing) comes with the public API; the .npy writer here is inline until
 * a shared one exists.
 */
#include "cli.h"

#include "base/alloc.h"
#include "base/pool.h"
#include "encoder/encoder.h"
#include "image/image.h"
#include "io/checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INPUT_BYTES ((size_t)1 << 30)

typedef struct {
    const char *model, *image, *out;
    int tokens, precise, threads;
} encode_args;

static void usage(FILE *f) {
    fprintf(f,
            "usage: g4v encode --model DIR IMAGE [--tokens N] [--precise] [--threads N] -o OUT.npy\n"
            "\n"
            "Encodes IMAGE into Gemma 4 soft tokens, written as a float32 .npy [N, T].\n"
            "  --model DIR    checkpoint directory as downloaded (config.json + safetensors)\n"
            "  IMAGE          JPEG/PNG/WebP/GIF/BMP, or a raw uint8 [H, W, 3] .npy\n"
            "  --tokens N     soft-token budget: 70, 140, 280 (default), 560 or 1120\n"
            "  --precise      f32 GEMM inputs (default: bf16 GEMM inputs, ~3e-3 rel. error)\n"
            "  --threads N    worker threads (default: one per CPU)\n"
            "  -o OUT.npy     output file\n"
            "Prints the image's prompt span (<|image> <|image|> x N <image|>) and its token ids.\n"
            "Exit codes: 0 ok, 1 usage, 2 input, 3 model, 4 output, 5 internal.\n");
}

static int parse_int(const char *s, int *v) {
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || *end || end == s || x < -1000000 || x > 1000000) return -1;
    *v = (int)x;
    return 0;
}

static int parse_args(int argc, char **argv, encode_args *a) {
    memset(a, 0, sizeof *a);
    a->tokens = 280;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            return -2;
        } else if (!strcmp(s, "--model") && has_val) {
            a->model = argv[++i];
        } else if (!strcmp(s, "-o") && has_val) {
            a->out = argv[++i];
        } else if (!strcmp(s, "--tokens") && has_val) {
            if (parse_int(argv[++i], &a->tokens)) {
                fprintf(stderr, "g4v encode: --tokens: '%s' is not a number\n", argv[i]);
                return -1;
            }
        } else if (!strcmp(s, "--threads") && has_val) {
            if (parse_int(argv[++i], &a->threads) || a->threads < 0) {
                fprintf(stderr, "g4v encode: --threads: '%s' is not a thread count\n", argv[i]);
                return -1;
            }
        } else if (!strcmp(s, "--precise")) {
            a->precise = 1;
        } else if (s[0] == '-' && s[1]) {
            fprintf(stderr, "g4v encode: unknown or incomplete option '%s'\n", s);
            return -1;
        } else if (!a->image) {
            a->image = s;
        } else {
            fprintf(stderr, "g4v encode: more than one image given ('%s', '%s')\n", a->image, s);
            return -1;
        }
    }
    if (!a->model || !a->image || !a->out) {
        fprintf(stderr, "g4v encode: --model, IMAGE and -o are required (see --help)\n");
        return -1;
    }
    return 0;
}

/* Whole file into memory (bounded). Returns NULL with a message on stderr. */
static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "g4v encode: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    unsigned char *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len == cap) {
            if (cap >= MAX_INPUT_BYTES) {
                fprintf(stderr, "g4v encode: %s is larger than 1 GiB\n", path);
                g4v_free(buf);
                fclose(f);
                return NULL;
            }
            cap = cap ? cap * 2 : 1 << 16;
            unsigned char *nb = g4v_realloc(buf, cap);
            if (!nb) {
                fprintf(stderr, "g4v encode: out of memory reading %s\n", path);
                g4v_free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "g4v encode: error reading %s\n", path);
        g4v_free(buf);
        return NULL;
    }
    *n = len;
    return buf;
}

/* A raw uint8 [H, W, 3] .npy (C order, format version 1-3) into img. 1 if b is not a .npy at all,
 * 0 on success, -1 (message printed) if it is a .npy of the wrong kind. */
static int npy_image(const unsigned char *b, size_t n, const char *path, g4v_image *img) {
    if (n < 10 || memcmp(b, "\x93NUMPY", 6)) return 1;
    size_t hl = b[8] | (size_t)b[9] << 8, off = 10;
    if (b[6] >= 2) {
        if (n < 12) goto bad;
        hl |= (size_t)b[10] << 16 | (size_t)b[11] << 24;
        off = 12;
    }
    if (hl > 65536 || off + hl > n) goto bad;
    char hdr[65537];
    memcpy(hdr, b + off, hl);
    hdr[hl] = 0;
    long h = 0, w = 0, c = 0;
    const char *s = strstr(hdr, "'shape': (");
    if (!strstr(hdr, "'descr': '|u1'") || !strstr(hdr, "'fortran_order': False") || !s ||
        sscanf(s, "'shape': (%ld, %ld, %ld)", &h, &w, &c) != 3 || c != 3 || h <= 0 || w <= 0 ||
        h > 65500 || w > 65500)
        goto bad;
    size_t bytes = (size_t)h * (size_t)w * 3;
    if (bytes > n - off - hl) goto bad;
    img->rgb = g4v_malloc(bytes);
    if (!img->rgb) {
        fprintf(stderr, "g4v encode: out of memory for a %ldx%ld image\n", w, h);
        return -1;
    }
    memcpy(img->rgb, b + off + hl, bytes);
    img->width = (int)w;
    img->height = (int)h;
    return 0;
bad:
    fprintf(stderr, "g4v encode: %s: a .npy image must be C-ordered uint8 [H, W, 3]\n", path);
    return -1;
}

static int write_npy_f32(const char *path, const float *x, int rows, int cols) {
    char hdr[160];
    int len = snprintf(hdr, sizeof hdr,
                       "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols);
    int pad = (64 - (10 + len + 1) % 64) % 64, hl = len + pad + 1;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 0xff),
                             (unsigned char)(hl >> 8)};
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t count = (size_t)rows * (size_t)cols;
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)len, f) == (size_t)len;
    for (int i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF && fwrite(x, sizeof(float), count, f) == count;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

static void print_span(const g4v_vision_config *c, int n) {
    printf("<|image>");
    for (int i = 0; i < n; i++) printf("<|image|>");
    printf("<image|>\n");
    printf("ids: %d %dx%d %d\n", (int)c->boi_token_id, (int)c->image_token_id, n,
           (int)c->eoi_token_id);
}

/* IMAGE at its target size for the budget (SPEC B.2, B.3), owned by the image layer (release
 * with g4v_image_free). Encoded images go through g4v_image_load (decode + EXIF + target size +
 * Pillow resize, streamed when possible); a .npy is taken as decoded RGB and resized here.
 * src_w/src_h receive the size the target was computed from. 0 or an exit code. */
static int load_image(const encode_args *a, g4v_image *img, int *src_w, int *src_h) {
    size_t n = 0;
    unsigned char *bytes = slurp(a->image, &n);
    if (!bytes) return G4V_EXIT_INPUT;
    g4v_err err;
    g4v_err_clear(&err);
    g4v_image raw = {0, 0, NULL};
    int st, r = npy_image(bytes, n, a->image, &raw);
    if (r < 0) {
        g4v_free(bytes);
        return G4V_EXIT_INPUT;
    }
    if (r == 1) {
        g4v_image_opts o;
        g4v_image_opts_default(&o);
        g4v_image_info info = {0};
        st = g4v_image_load(bytes, n, a->tokens, &o, img, &info, &err);
        *src_w = info.width;
        *src_h = info.height;
    } else {
        int th = 0, tw = 0;
        *src_w = raw.width;
        *src_h = raw.height;
        st = g4v_target_size(raw.height, raw.width, a->tokens, &th, &tw, &err);
        if (!st)
            st = g4v_image_resize(raw.rgb, raw.width, raw.height, (size_t)raw.width * 3, tw, th,
                                  G4V_RESIZE_PILLOW_9, img, &err);
        g4v_free(raw.rgb);
    }
    g4v_free(bytes);
    if (st) {
        fprintf(stderr, "g4v encode: %s: %s\n", a->image, err.msg);
        return cli_exit_for_status(st, 0);
    }
    return 0;
}

static int encode_image(const encode_args *a, const g4v_encoder *enc, const g4v_image *img,
                        int src_w, int src_h) {
    const g4v_vision_config *c = g4v_encoder_config(enc);
    g4v_err err;
    g4v_err_clear(&err);
    int st, rc = G4V_EXIT_OK, tw = img->width, th = img->height;
    int side = c->patch_size * c->pooling_kernel_size;
    int n = (th / side) * (tw / side);
    float *out = g4v_malloc_array((size_t)n * (size_t)c->text_hidden_size, sizeof(float));
    g4v_workspace *ws = g4v_workspace_create();
    g4v_pool *pool = NULL;
    if (!out || !ws) {
        fprintf(stderr, "g4v encode: out of memory\n");
        rc = G4V_EXIT_INTERNAL;
    } else if ((st = g4v_pool_create(a->threads, &pool, &err)) ||
               (st = g4v_encoder_run(enc, ws, pool, img->rgb, tw, th, (size_t)tw * 3, out, &err))) {
        fprintf(stderr, "g4v encode: %s: %s\n", a->image, err.msg);
        rc = cli_exit_for_status(st, 0);
    } else if (write_npy_f32(a->out, out, n, c->text_hidden_size)) {
        fprintf(stderr, "g4v encode: cannot write %s: %s\n", a->out, strerror(errno));
        rc = G4V_EXIT_OUTPUT;
    } else {
        fprintf(stderr, "g4v encode: %s %dx%d -> %dx%d, %d soft tokens x %d -> %s\n", a->image,
                src_w, src_h, tw, th, n, c->text_hidden_size, a->out);
        print_span(c, n);
    }
    g4v_pool_destroy(pool);
    g4v_workspace_free(ws);
    g4v_free(out);
    return rc;
}

int cmd_encode(int argc, char **argv) {
    encode_args a;
    int r = parse_args(argc, argv, &a);
    if (r == -2) return G4V_EXIT_OK;
    if (r) return G4V_EXIT_USAGE;
    if (a.tokens != 70 && a.tokens != 140 && a.tokens != 280 && a.tokens != 560 &&
        a.tokens != 1120) {
        fprintf(stderr, "g4v encode: --tokens %d: the budget must be 70, 140, 280, 560 or 1120\n",
                a.tokens);
        return G4V_EXIT_USAGE;
    }
    g4v_image img = {0, 0, NULL};
    int src_w = 0, src_h = 0;
    int rc = load_image(&a, &img, &src_w, &src_h);
    if (rc) return rc;
    g4v_err err;
    g4v_err_clear(&err);
    g4v_checkpoint *ck = NULL;
    g4v_encoder *enc = NULL;
    g4v_encoder_opts opts = {a.precise ? G4V_MATH_PRECISE : G4V_MATH_FAST};
    int st = g4v_checkpoint_open(a.model, NULL, &ck, &err);
    if (!st) st = g4v_encoder_create(ck, &opts, &enc, &err);
    if (st) {
        fprintf(stderr, "g4v encode: model %s: %s\n", a.model, err.msg);
        rc = cli_exit_for_status(st, 1);
    } else {
        rc = encode_image(&a, enc, &img, src_w, src_h);
    }
    g4v_encoder_free(enc);
    g4v_checkpoint_close(ck);
    g4v_image_free(&img);
    return rc;
}
