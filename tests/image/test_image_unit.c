/* test_image_unit.c - unit tests of src/image that need no Python (label "unit", run under ASan).
 *
 * Expected values come from the closed forms of docs/PREPROCESSING.md (target-size examples, the
 * CMYK formula, the orientation table, Pillow's BMP/PNG sample rules), never from our own output;
 * the byte-for-byte comparisons with Pillow itself live in the Python drivers. Also here: the
 * kernels agree across ISAs and with the bottom-up streaming path, every decoder survives every
 * truncation and a few thousand random corruptions of a small valid file (ASan watches), and the
 * size limits are enforced before any allocation (checked with fault injection when built with
 * G4V_FAULT_INJECTION).
 */
#include "test_util.h"

#include "base/alloc.h"
#include "image/image_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>
#include <webp/encode.h>

/* ---- small helpers ------------------------------------------------------------------------ */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put8(buf *b, unsigned v) {
    uint8_t c = (uint8_t)v;
    put(b, &c, 1);
}
static void put16le(buf *b, unsigned v) { put8(b, v & 255), put8(b, v >> 8 & 255); }
static void put32le(buf *b, uint32_t v) { put16le(b, v & 0xffff), put16le(b, v >> 16); }

static uint32_t rng_state = 12345;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

static uint32_t crc32(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c >> 1 ^ (0xedb88320u & (0u - (c & 1)));
    }
    return ~c;
}

static void png_write_cb(png_structp png, png_bytep d, size_t n) { put(png_get_io_ptr(png), d, n); }
static void png_flush_cb(png_structp png) { (void)png; }

/* A PNG of the given colour type / depth from raw packed rows; exif (may be NULL) as eXIf. */
static buf make_png(int w, int h, int depth, int color, const uint8_t *rows, size_t rowbytes,
                    const uint8_t *exif, size_t exif_n, int interlace) {
    buf b = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        b.n = 0;
        return b;
    }
    png_set_write_fn(png, &b, png_write_cb, png_flush_cb);
    png_set_IHDR(png, info, w, h, depth, color,
                 interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, 0, 0);
    if (color == PNG_COLOR_TYPE_PALETTE) {
        png_color pal[4] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {10, 20, 30}};
        png_set_PLTE(png, info, pal, 4);
    }
    if (exif) png_set_eXIf_1(png, info, (png_uint_32)exif_n, (png_bytep)exif);
    png_write_info(png, info);
    int passes = png_set_interlace_handling(png);
    for (int p = 0; p < passes; p++)
        for (int y = 0; y < h; y++) png_write_row(png, (png_bytep)rows + rowbytes * y);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return b;
}

static buf make_jpeg(int w, int h, int comps, const uint8_t *px, const uint8_t *app1,
                     size_t app1_n) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    unsigned char *out = NULL;
    unsigned long n = 0;
    jpeg_mem_dest(&c, &out, &n);
    c.image_width = w, c.image_height = h, c.input_components = comps;
    c.in_color_space = comps == 1 ? JCS_GRAYSCALE : comps == 3 ? JCS_RGB : JCS_CMYK;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 90, TRUE);
    jpeg_start_compress(&c, TRUE);
    if (app1) jpeg_write_marker(&c, JPEG_APP0 + 1, app1, (unsigned)app1_n);
    while (c.next_scanline < c.image_height) {
        JSAMPROW r = (JSAMPROW)px + (size_t)c.next_scanline * w * comps;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    buf b = {0};
    put(&b, out, n);
    free(out);
    return b;
}

/* "Exif\0\0" + little-endian TIFF with one SHORT orientation entry. */
static size_t exif_orient(uint8_t *o, int v, int big) {
    static const uint8_t le[] = {'E', 'x', 'i', 'f', 0, 0, 'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0,
                                 0x12, 1, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t be[] = {'E', 'x', 'i', 'f', 0, 0, 'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1,
                                 1, 0x12, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    memcpy(o, big ? be : le, sizeof le);
    if (big) /* the SHORT value sits in the first two bytes of the entry's value field */
        o[24] = (uint8_t)(v >> 8), o[25] = (uint8_t)v;
    else
        o[24] = (uint8_t)v, o[25] = (uint8_t)(v >> 8);
    return sizeof le;
}

static int decode(const buf *b, g4v_image *img, g4v_err *err) {
    return g4v_image_decode(b->p, b->n, NULL, img, err);
}

/* ---- target size (docs/PREPROCESSING.md §5 examples) ------------------------------------ */
static void test_target_size(void) {
    g4v_err err;
    int th, tw;
    CHECK(g4v_target_size(1000, 1000, 280, &th, &tw, &err) == G4V_OK && th == 768 && tw == 768);
    /* 100000 wide x 100 high: th = 48, tw = min(1000 * 48, 48 * 280) */
    CHECK(g4v_target_size(100, 100000, 280, &th, &tw, &err) == G4V_OK && th == 48 && tw == 13440);
    CHECK(g4v_target_size(100000, 100, 70, &th, &tw, &err) == G4V_OK && th == 3360 && tw == 48);
    /* 1x1 at 280: factor = sqrt(645120) = 803.19..., floor(803.19 / 48) * 48 = 768 */
    CHECK(g4v_target_size(1, 1, 280, &th, &tw, &err) == G4V_OK && th == 768 && tw == 768);
    static const int budgets[] = {70, 140, 280, 560, 1120};
    for (int i = 0; i < 5; i++) {
        int b = budgets[i];
        for (int k = 0; k < 200; k++) {
            int h = 1 + (int)(rnd() % 5000), w = 1 + (int)(rnd() % 5000);
            CHECK(g4v_target_size(h, w, b, &th, &tw, &err) == G4V_OK);
            CHECK(th % 48 == 0 && tw % 48 == 0 && th > 0 && tw > 0);
            CHECK((long long)th * tw <= 2304LL * b);
            /* every budget gives at most b soft tokens of 3x3 patches */
            CHECK((th / 48) * (tw / 48) <= b);
        }
    }
    CHECK(g4v_target_size(100, 100, 300, &th, &tw, &err) == G4V_ERR_ARG);
    CHECK_CONTAINS(err.msg, "unsupported token budget 300");
    CHECK(g4v_target_size(100, 100, 0, &th, &tw, &err) == G4V_ERR_ARG);
    CHECK(g4v_target_size(0, 100, 280, &th, &tw, &err) == G4V_ERR_ARG);
}

/* ---- rescale + patchify (docs/PREPROCESSING.md §7) --------------------------------------- */
static void test_patchify(void) {
    for (int u = 0; u < 256; u++) /* transformers multiplies by 1/255; the brief divides */
        CHECK((float)((double)u * (1.0 / 255.0)) == (float)((double)u / 255.0));
    int w = 48, h = 32;
    uint8_t *img = malloc((size_t)w * h * 3);
    for (int i = 0; i < w * h * 3; i++) img[i] = (uint8_t)rnd();
    int L = (w / 16) * (h / 16);
    float *p = malloc(sizeof(float) * L * 768);
    int32_t *pos = malloc(sizeof(int32_t) * L * 2);
    g4v_patchify(img, w, h, (size_t)w * 3, G4V_RESIZE_PILLOW_9, p, pos);
    int bad = 0;
    for (int py = 0; py < h / 16; py++)
        for (int px = 0; px < w / 16; px++) {
            int l = py * (w / 16) + px;
            bad += pos[2 * l] != px || pos[2 * l + 1] != py;
            for (int dy = 0; dy < 16; dy++)
                for (int dx = 0; dx < 16; dx++)
                    for (int c = 0; c < 3; c++) {
                        uint8_t u = img[((size_t)(py * 16 + dy) * w + px * 16 + dx) * 3 + c];
                        bad += p[(size_t)l * 768 + (dy * 16 + dx) * 3 + c] != (float)(u / 255.0);
                    }
        }
    CHECK(bad == 0);
    /* torchvision's rule: float32 (float)u * (float)(1/255.); 126 of 256 values differ by an ulp
     * from the Pillow backend's (counted with torch 2.15; 3/255 is the first) */
    g4v_patchify(img, w, h, (size_t)w * 3, G4V_RESIZE_TORCH, p, pos);
    bad = 0;
    for (int k = 0; k < L * 768; k++) {
        int l = k / 768, r = k % 768, dy = r / 48, dx = (r % 48) / 3, c = r % 3;
        int px = l % (w / 16), py = l / (w / 16);
        uint8_t u = img[((size_t)(py * 16 + dy) * w + px * 16 + dx) * 3 + c];
        bad += p[k] != (float)u * (float)(1.0 / 255.0);
    }
    CHECK(bad == 0);
    int ulps = 0;
    for (int u = 0; u < 256; u++)
        ulps += (float)u * (float)(1.0 / 255.0) != (float)((double)u / 255.0);
    CHECK_MSG(ulps == 126, "%d values differ between the rescale rules", ulps);
    CHECK((float)3 * (float)(1.0 / 255.0) != (float)(3.0 / 255.0));
    free(img);
    free(p);
    free(pos);
}

/* ---- conversions -------------------------------------------------------------------------- */
static void test_convert(void) {
    /* Stored Adobe CMYK bytes c, k: RGB = round((255-C)(255-K)/255) with C = 255-c, K = 255-k,
     * i.e. round(c*k/255) (docs/PREPROCESSING.md §3). */
    int bad = 0;
    uint8_t in[4], out[3];
    for (int c = 0; c < 256; c++)
        for (int k = 0; k < 256; k++) {
            in[0] = in[1] = in[2] = (uint8_t)c, in[3] = (uint8_t)k;
            g4v_cvt_cmyk_inverted(in, out, 1);
            bad += out[0] != (2 * c * k + 255) / 510 || out[1] != out[0] || out[2] != out[0];
        }
    CHECK(bad == 0);
    uint8_t g16[6] = {0x01, 0x2c, 0x00, 0xc8, 0xff, 0xff}; /* 300, 200, 65535 */
    uint8_t o3[9];
    g4v_cvt_gray16be(g16, o3, 3);
    CHECK(o3[0] == 255 && o3[3] == 200 && o3[6] == 255 && o3[4] == 200 && o3[5] == 200);
    uint8_t pal[768], src[6] = {1, 2, 3, 4, 5, 6}, idx[3] = {0, 1, 200}, px[9];
    g4v_palette_build(pal, src, 2, 3, 0);
    g4v_cvt_indexed(idx, px, 3, pal);
    CHECK(!memcmp(px, "\1\2\3\4\5\6\xc8\xc8\xc8", 9)); /* past the palette: gray ramp */
    g4v_palette_build(pal, src, 2, 3, 1);
    CHECK(pal[0] == 3 && pal[2] == 1);
}

/* ---- EXIF / XMP parsing ------------------------------------------------------------------ */
static void test_exif(void) {
    uint8_t e[64];
    for (int v = 0; v <= 10; v++)
        for (int big = 0; big < 2; big++) {
            size_t n = exif_orient(e, v, big);
            int want = v >= 1 && v <= 8 ? v : 0;
            CHECK(g4v_exif_orientation(e, n) == want);
            CHECK(g4v_exif_orientation(e + 6, n - 6) == want); /* WebP-style, no prefix */
        }
    size_t n = exif_orient(e, 6, 0);
    for (size_t k = 0; k < n; k++) { /* every truncation: absent or the value, never a crash */
        int o = g4v_exif_orientation(e, k);
        CHECK(o == G4V_EXIF_ABSENT || o == 6);
    }
    CHECK(g4v_exif_orientation(NULL, 0) == G4V_EXIF_ABSENT);
    CHECK(g4v_exif_orientation((const uint8_t *)"Exif\0\0II+\0\x10\0\0\0", 14) ==
          G4V_EXIF_ABSENT);
    /* random corruption of a blob with an out-of-line RATIONAL 12/2: stays in bounds */
    uint8_t blob[46], m[46];
    memcpy(blob, "II*\0\x08\0\0\0\x02\0"
                 "\x12\x01\x05\0\x01\0\0\0\x26\0\0\0"
                 "\x0f\x01\x02\0\x04\0\0\0abc\0"
                 "\0\0\0\0\x0c\0\0\0\x02\0\0\0",
           46);
    CHECK(g4v_exif_orientation(blob, 46) == 6);
    CHECK(g4v_exif_orientation(blob, 45) == G4V_EXIF_ABSENT); /* value cut: parse stops */
    int seen_bad = 0;
    for (int it = 0; it < 20000; it++) {
        memcpy(m, blob, sizeof m);
        for (int k = 0; k < 3; k++) m[rnd() % sizeof m] = (uint8_t)rnd();
        int o = g4v_exif_orientation(m, rnd() % (sizeof m + 1));
        seen_bad += !(o == G4V_EXIF_ABSENT || (o >= 0 && o <= 8));
    }
    CHECK(seen_bad == 0);
    static const char x1[] = "<x tiff:Orientation=\"6\"/>", x2[] = "<tiff:Orientation>3<",
                      x3[] = "tiff:Orientation=\"", x4[] = "tiff:Orientation>";
    CHECK(g4v_xmp_orientation(x1, strlen(x1)) == 6);
    CHECK(g4v_xmp_orientation(x2, strlen(x2)) == 3);
    CHECK(g4v_xmp_orientation(x3, strlen(x3)) == G4V_EXIF_ABSENT);
    CHECK(g4v_xmp_orientation(x4, strlen(x4)) == G4V_EXIF_ABSENT);
    CHECK(g4v_xmp_orientation(x1, 20) == G4V_EXIF_ABSENT);
    uint8_t *raw = NULL;
    static const char rp[] = "\nexif\n      6\n457869\n660000\n", rbad[] = "\na\nb\n4g\n";
    CHECK(g4v_raw_profile_decode(rp, strlen(rp), &raw) == 6 && !memcmp(raw, "Exif\0\0", 6));
    g4v_free(raw);
    CHECK(g4v_raw_profile_decode(rbad, strlen(rbad), &raw) == -1 && raw == NULL);
}

/* ---- orientation table (docs/PREPROCESSING.md §4.3) -------------------------------------- */
static void test_orient(void) {
    const int W = 3, H = 2;
    uint8_t px[18];
    for (int i = 0; i < W * H; i++) px[3 * i] = (uint8_t)i, px[3 * i + 1] = px[3 * i + 2] = 0;
    g4v_image in = {W, H, px};
    /* out[y][x] = in[sy][sx] per the table; value = sy*W + sx */
    for (int o = 1; o <= 8; o++) {
        g4v_image out;
        g4v_err err;
        REQUIRE(g4v_orient(&in, o, &out, &err) == G4V_OK);
        int ow = o >= 5 ? H : W, oh = o >= 5 ? W : H, bad = out.width != ow || out.height != oh;
        for (int y = 0; y < oh && !bad; y++)
            for (int x = 0; x < ow; x++) {
                int sx = x, sy = y;
                switch (o) {
                case 2: sx = W - 1 - x; break;
                case 3: sx = W - 1 - x, sy = H - 1 - y; break;
                case 4: sy = H - 1 - y; break;
                case 5: sx = y, sy = x; break;
                case 6: sx = y, sy = H - 1 - x; break;
                case 7: sx = W - 1 - y, sy = H - 1 - x; break;
                case 8: sx = W - 1 - y, sy = x; break;
                }
                bad += out.rgb[(y * ow + x) * 3] != sy * W + sx;
            }
        CHECK_MSG(!bad, "orientation %d", o);
        if (out.rgb != in.rgb) g4v_image_free(&out);
    }
}

/* ---- resize: kernels, streaming directions and orders agree ------------------------------ */
static int resize_with(const char *isa, const uint8_t *src, int w, int h, int ow, int oh,
                       g4v_resize_order ord, g4v_image *out) {
    g4v_err err;
    if (isa)
        setenv("G4V_ISA", isa, 1);
    else
        unsetenv("G4V_ISA");
    int st = g4v_image_resize(src, w, h, (size_t)w * 3, ow, oh, ord, out, &err);
    unsetenv("G4V_ISA");
    return st;
}

static void test_resize_paths(void) {
    static const int sizes[][4] = {{1, 1, 1, 1},   {1, 1, 9, 7},    {17, 5, 3, 11},
                                   {64, 9, 48, 48}, {5, 700, 48, 96}, {300, 2, 13, 1},
                                   {33, 47, 33, 20}, {33, 47, 20, 47}, {8, 8, 8, 8},
                                   {2, 300, 1, 100}, {123, 77, 240, 96}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int w = sizes[i][0], h = sizes[i][1], ow = sizes[i][2], oh = sizes[i][3];
        uint8_t *src = malloc((size_t)w * h * 3), *rev = malloc((size_t)ow * oh * 3);
        for (size_t k = 0; k < (size_t)w * h * 3; k++) src[k] = rnd() % 3 ? (uint8_t)rnd() : 255;
        for (int ord = 0; ord < 3; ord++) {
            g4v_image a, b;
            REQUIRE(resize_with(NULL, src, w, h, ow, oh, ord, &a) == G4V_OK);
            REQUIRE(resize_with("portable", src, w, h, ow, oh, ord, &b) == G4V_OK);
            CHECK_MSG(!memcmp(a.rgb, b.rgb, (size_t)ow * oh * 3), "kernels differ, case %zu", i);
            g4v_resizer *r;
            g4v_err err;
            REQUIRE(g4v_resizer_new(w, h, ow, oh, ord, G4V_RS_REVERSE, rev, (size_t)ow * 3, &r, &err) == 0);
            for (int y = h - 1; y >= 0; y--) g4v_resizer_push_ref(r, src + (size_t)y * w * 3);
            g4v_resizer_free(r);
            CHECK_MSG(!memcmp(a.rgb, rev, (size_t)ow * oh * 3), "bottom-up differs, case %zu", i);
            if (w == ow && h == oh) CHECK(!memcmp(a.rgb, src, (size_t)w * h * 3));
            g4v_image_free(&a);
            g4v_image_free(&b);
        }
        free(src);
        free(rev);
    }
    /* a constant image stays constant (weights sum to ~2^22; rounding at 2^21) */
    uint8_t flat[40 * 30 * 3];
    memset(flat, 77, sizeof flat);
    g4v_image o;
    REQUIRE(resize_with(NULL, flat, 40, 30, 97, 13, 0, &o) == G4V_OK);
    int bad = 0;
    for (int k = 0; k < 97 * 13 * 3; k++) bad += o.rgb[k] != 77;
    CHECK(bad == 0);
    g4v_image_free(&o);
    g4v_coeffs c;
    g4v_err err;
    /* 1 -> 48: one tap of weight 1 (torch: 1 at 14 bits, widened) */
    for (int ord = 0; ord < 3; ord += 2) {
        REQUIRE(g4v_coeffs_build(1, 48, ord, &c, &err) == G4V_OK);
        CHECK(c.cnt[0] == 1 && c.q[0] == 1 << 22 && c.cnt[47] == 1);
        CHECK(c.bits == (ord ? 14 : 22));
        g4v_coeffs_free(&c);
    }
    CHECK(g4v_coeffs_build(0, 4, G4V_RESIZE_PILLOW_9, &c, &err) == G4V_ERR_ARG);
}

/* torch's uint8 antialiased bicubic on cases worked by hand (docs/PREPROCESSING.md §6.6). */
static void test_resize_torch(void) {
    g4v_coeffs c;
    g4v_err err;
    /* 2 -> 3 (scale 2/3, support 2): output 0 has center 1/3 and taps 0, 1 at distances 1/6 and
     * 7/6: bicubic weights 0.9375 and -25/432, normalised 405/380 and -25/380. The largest weight
     * of the axis, 405/380 = 1.0658, needs 2^15 at 15 bits, so torch rounds at 14: 17462 and
     * -1078 (Pillow at 22 bits: 4470245 and -275941). Output 1: two taps of 1/2 (8192). */
    REQUIRE(g4v_coeffs_build(2, 3, G4V_RESIZE_TORCH, &c, &err) == G4V_OK);
    CHECK(c.bits == 14);
    CHECK(c.cnt[0] == 2 && c.q[0] == 17462 * 256 && c.q[1] == -1078 * 256);
    CHECK(c.cnt[1] == 2 && c.q[c.ksize] == 8192 * 256 && c.q[c.ksize + 1] == 8192 * 256);
    CHECK(c.lo[2] == 0 && c.q[2 * c.ksize] == -1078 * 256 && c.q[2 * c.ksize + 1] == 17462 * 256);
    g4v_coeffs_free(&c);
    REQUIRE(g4v_coeffs_build(2, 3, G4V_RESIZE_PILLOW_9, &c, &err) == G4V_OK);
    CHECK(c.bits == 22 && c.q[0] == 4470245 && c.q[1] == -275941);
    g4v_coeffs_free(&c);
    /* the row (24, 138): torch (8192 + 24*17462 - 138*1078) >> 14 = 278516 >> 14 = 16,
     * (8192 + 8192*162) >> 14 = 81, (8192 - 24*1078 + 138*17462) >> 14 = 2392076 >> 14 = 146;
     * Pillow gives 17, 81, 145. Also as a column (the vertical pass) and on every channel. */
    static const uint8_t want_t[3] = {16, 81, 146}, want_p[3] = {17, 81, 145};
    uint8_t src[6] = {24, 138, 24, 138, 24, 138};
    for (int vert = 0; vert < 2; vert++)
        for (int ord = 0; ord < 3; ord += 2) {
            g4v_image o;
            int w = vert ? 1 : 2, h = vert ? 2 : 1, ow = vert ? 1 : 3, oh = vert ? 3 : 1;
            uint8_t in[12];
            for (int k = 0; k < 2; k++) memset(in + 3 * k, src[k], 3);
            REQUIRE(g4v_image_resize(in, w, h, (size_t)w * 3, ow, oh, ord, &o, &err) == G4V_OK);
            const uint8_t *want = ord ? want_t : want_p;
            int bad = 0;
            for (int k = 0; k < 9; k++) bad += o.rgb[k] != want[k / 3];
            CHECK_MSG(!bad, "2 -> 3 %s, %s: %d %d %d", vert ? "vertical" : "horizontal",
                      ord ? "torch" : "Pillow", o.rgb[0], o.rgb[3], o.rgb[6]);
            g4v_image_free(&o);
        }
    /* 4 -> 2 (scale 2, support 4): output 0 has center 1, taps 0..3 at 0.25, 0.25, 0.75, 1.25
     * (after the 1/2 scale): 0.8671875 twice, 0.2265625, -0.0703125, sum 1.890625; normalised
     * 0.458678 x2, 0.119835, -0.037190. 0.4587 * 2^17 >= 2^15, so 16 bits: 30060, 30060, 7853,
     * -2437. */
    REQUIRE(g4v_coeffs_build(4, 2, G4V_RESIZE_TORCH, &c, &err) == G4V_OK);
    CHECK(c.bits == 16 && c.cnt[0] == 4 && c.lo[1] == 0);
    CHECK(c.q[0] == 30060 * 64 && c.q[1] == 30060 * 64 && c.q[2] == 7853 * 64 &&
          c.q[3] == -2437 * 64);
    g4v_coeffs_free(&c);
}

/* A copy of PNG b with a chunk inserted right after IHDR. */
static buf png_insert_chunk(const buf *b, const char *type, const uint8_t *d, uint32_t n) {
    buf o = {0};
    put(&o, b->p, 33);
    uint8_t len[4] = {(uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
    put(&o, len, 4);
    size_t start = o.n;
    put(&o, type, 4);
    if (n) put(&o, d, n);
    uint32_t crc = crc32(o.p + start, 4 + n);
    uint8_t c[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8), (uint8_t)crc};
    put(&o, c, 4);
    put(&o, b->p + 33, b->n - 33);
    return o;
}

/* ---- decoders: known pixels ------------------------------------------------------------- */
static void test_decode_known(void) {
    g4v_err err;
    g4v_image img;
    /* BMP 2x2, 24-bit bottom-up: rows stored bottom first, BGR, padded to 4 bytes */
    buf b = {0};
    put(&b, "BM", 2), put32le(&b, 14 + 40 + 16), put32le(&b, 0), put32le(&b, 54);
    put32le(&b, 40), put32le(&b, 2), put32le(&b, 2), put16le(&b, 1), put16le(&b, 24);
    put32le(&b, 0), put32le(&b, 16), put32le(&b, 0), put32le(&b, 0), put32le(&b, 0),
        put32le(&b, 0);
    put(&b, "\x03\x02\x01\x06\x05\x04\0\0", 8); /* bottom row: (1,2,3) (4,5,6) */
    put(&b, "\x09\x08\x07\x0c\x0b\x0a\0\0", 8); /* top row: (7,8,9) (10,11,12) */
    REQUIRE(decode(&b, &img, &err) == G4V_OK);
    CHECK(img.width == 2 && img.height == 2 &&
          !memcmp(img.rgb, "\7\x8\x9\xa\xb\xc\1\2\3\4\5\6", 12));
    g4v_image_free(&img);
    /* same file as 16-bit 5-6-5 BITFIELDS: 0xF800 -> (255,0,0), 0x07E0 -> (0,255,0),
     * 0x0010 -> b = 16*255/31 = 131 */
    b.n = 0;
    put(&b, "BM", 2), put32le(&b, 14 + 40 + 12 + 8), put32le(&b, 0), put32le(&b, 66);
    put32le(&b, 40), put32le(&b, 2), put32le(&b, 1), put16le(&b, 1), put16le(&b, 16);
    put32le(&b, 3), put32le(&b, 4), put32le(&b, 0), put32le(&b, 0), put32le(&b, 0),
        put32le(&b, 0);
    put32le(&b, 0xF800), put32le(&b, 0x7E0), put32le(&b, 0x1F);
    put16le(&b, 0xF800), put16le(&b, 0x07F0);
    REQUIRE(decode(&b, &img, &err) == G4V_OK);
    CHECK(!memcmp(img.rgb, "\xff\0\0\0\xff\x83", 6));
    g4v_image_free(&img);
    free(b.p);

    /* PNG gray16: saturates; palette index past PLTE: gray ramp; eXIf orientation 6 */
    uint8_t g16[2 * 3] = {0x01, 0x2c, 0x00, 0x64, 0x00, 0x00};
    b = make_png(3, 1, 16, PNG_COLOR_TYPE_GRAY, g16, 6, NULL, 0, 0);
    REQUIRE(decode(&b, &img, &err) == G4V_OK);
    CHECK(img.rgb[0] == 255 && img.rgb[3] == 100 && img.rgb[6] == 0);
    g4v_image_free(&img);
    free(b.p);
    uint8_t pidx[3] = {1, 3, 0x99};
    b = make_png(3, 1, 8, PNG_COLOR_TYPE_PALETTE, pidx, 3, NULL, 0, 0);
    REQUIRE(decode(&b, &img, &err) == G4V_OK);
    CHECK(!memcmp(img.rgb, "\0\xff\0\x0a\x14\x1e\x99\x99\x99", 9));
    g4v_image_free(&img);
    free(b.p);
    uint8_t rgb[3 * 2 * 3], ex[64];
    for (int i = 0; i < 18; i++) rgb[i] = (uint8_t)(i * 10);
    size_t en = exif_orient(ex, 6, 1);
    for (int il = 0; il < 2; il++) {
        b = make_png(3, 2, 8, PNG_COLOR_TYPE_RGB, rgb, 9, ex + 6, en - 6, il);
        REQUIRE(decode(&b, &img, &err) == G4V_OK);
        /* orientation 6: out (2 wide, 3 high), out[y][x] = in[H-1-x][y] */
        int bad = img.width != 2 || img.height != 3;
        for (int y = 0; y < 3 && !bad; y++)
            for (int x = 0; x < 2; x++)
                bad += memcmp(img.rgb + (y * 2 + x) * 3, rgb + ((1 - x) * 3 + y) * 3, 3) != 0;
        CHECK(bad == 0);
        g4v_image_free(&img);
        g4v_image_opts o;
        g4v_image_opts_default(&o);
        o.apply_exif = 0;
        REQUIRE(g4v_image_decode(b.p, b.n, &o, &img, &err) == G4V_OK);
        CHECK(img.width == 3 && !memcmp(img.rgb, rgb, 18));
        g4v_image_free(&img);
        free(b.p);
    }
    /* an empty eXIf, or one that is not TIFF, means no orientation */
    b = make_png(3, 2, 8, PNG_COLOR_TYPE_RGB, rgb, 9, NULL, 0, 0);
    static const uint8_t junk[5] = {1, 2, 3, 4, 5};
    for (uint32_t n = 0; n <= 5; n += 5) {
        buf e = png_insert_chunk(&b, "eXIf", junk, n);
        REQUIRE(decode(&e, &img, &err) == G4V_OK);
        CHECK(img.width == 3 && img.height == 2 && !memcmp(img.rgb, rgb, 18));
        g4v_image_free(&img);
        free(e.p);
    }
    free(b.p);
}

/* The streaming load (rows straight into the resize) equals decode + orient + resize, for all
 * orientations and both pass orders; 4000 x 9 becomes a tall 9 x 4000 under 5..8 that shrinks
 * to 48 x 3360 at 70 tokens, where the Pillow >= 12.2 order changes the result. */
static void streaming_case(int w, int h, int budget) {
    uint8_t *px = malloc((size_t)w * h * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++)
                px[(y * w + x) * 3 + c] = (uint8_t)(((x * (c + 1) * 5) ^ (y * 7)) + rnd() % 40);
    uint8_t ex[64];
    for (int o = 1; o <= 8; o++) {
        for (int ord = 0; ord < 2; ord++) {
            size_t en = exif_orient(ex, o, o & 1);
            buf b = make_jpeg(w, h, 3, px, ex, en);
            g4v_image_opts opts;
            g4v_image_opts_default(&opts);
            opts.resize_order = ord;
            g4v_image full, res, streamed;
            g4v_image_info info;
            g4v_err err;
            REQUIRE(g4v_image_decode(b.p, b.n, &opts, &full, &err) == G4V_OK);
            int th, tw;
            REQUIRE(g4v_target_size(full.height, full.width, budget, &th, &tw, &err) == G4V_OK);
            REQUIRE(g4v_image_resize(full.rgb, full.width, full.height, (size_t)full.width * 3,
                                     tw, th, ord, &res, &err) == G4V_OK);
            REQUIRE(g4v_image_load(b.p, b.n, budget, &opts, &streamed, &info, &err) == G4V_OK);
            CHECK(info.orientation == o && info.streamed);
            CHECK_MSG(streamed.width == tw && streamed.height == th &&
                          !memcmp(streamed.rgb, res.rgb, (size_t)tw * th * 3),
                      "%dx%d orientation %d order %d", w, h, o, ord);
            g4v_image_free(&full);
            g4v_image_free(&res);
            g4v_image_free(&streamed);
            free(b.p);
        }
    }
    free(px);
}

static void test_streaming_equals_full(void) {
    streaming_case(173, 61, 70);
    streaming_case(4000, 9, 70);
}

/* ---- hostile input: every truncation, random corruption, limits ------------------------- */
static void hammer(const char *name, const buf *good, int truncated_must_fail) {
    g4v_err err;
    g4v_image img;
    int crashes_would_show = 0, bad_ok = 0;
    for (size_t k = 0; k < good->n; k++) {
        int st = g4v_image_decode(good->p, k, NULL, &img, &err);
        if (st == G4V_OK) {
            bad_ok += truncated_must_fail && k + 16 < good->n;
            g4v_image_free(&img);
        } else {
            CHECK(img.rgb == NULL && err.msg[0]);
        }
    }
    CHECK_MSG(bad_ok == 0, "%s: %d truncations decoded as valid", name, bad_ok);
    uint8_t *m = malloc(good->n);
    for (int it = 0; it < 1500; it++) {
        memcpy(m, good->p, good->n);
        int flips = 1 + (int)(rnd() % 4);
        for (int f = 0; f < flips; f++) m[rnd() % good->n] = (uint8_t)rnd();
        if (g4v_image_decode(m, good->n, NULL, &img, &err) == G4V_OK) {
            crashes_would_show += img.width <= 0 || img.height <= 0;
            g4v_image_free(&img);
        }
    }
    CHECK(crashes_would_show == 0);
    free(m);
}

static void test_hostile(void) {
    int w = 21, h = 13;
    uint8_t px[21 * 13 * 4];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)rnd();
    buf b = make_png(w, h, 8, PNG_COLOR_TYPE_RGB, px, (size_t)w * 3, NULL, 0, 0);
    hammer("PNG", &b, 1);
    free(b.p);
    b = make_png(w, h, 8, PNG_COLOR_TYPE_RGB, px, (size_t)w * 3, NULL, 0, 1);
    hammer("PNG interlaced", &b, 1);
    free(b.p);
    uint8_t ex[64];
    size_t en = exif_orient(ex, 6, 0);
    b = make_jpeg(w, h, 3, px, ex, en);
    hammer("JPEG", &b, 1);
    free(b.p);
    b = make_jpeg(w, h, 4, px, NULL, 0);
    hammer("JPEG CMYK", &b, 1);
    free(b.p);
    uint8_t *wp = NULL;
    size_t wn = WebPEncodeLosslessRGB(px, w, h, w * 3, &wp);
    buf wb = {0};
    put(&wb, wp, wn);
    WebPFree(wp);
    hammer("WebP", &wb, 1);
    free(wb.p);
    /* GIF 4x3, global palette of 4, uncompressed LZW (min code size 2, 3-bit codes) */
    buf g = {0};
    put(&g, "GIF89a", 6), put16le(&g, 4), put16le(&g, 3), put8(&g, 0x81), put8(&g, 0),
        put8(&g, 0);
    put(&g, "\xff\0\0\0\xff\0\0\0\xff\x10\x20\x30", 12);
    put(&g, "\x21\xf9\x04\x01\0\0\x02\0", 8);
    put(&g, ",", 1), put16le(&g, 0), put16le(&g, 0), put16le(&g, 4), put16le(&g, 3),
        put8(&g, 0);
    /* codes (3 bits each): clear(4), then pairs of literals each followed by a clear, then EOI */
    uint32_t bits = 0;
    int nb = 0;
    buf lz = {0};
    static const int lit[12] = {0, 1, 2, 3, 3, 2, 1, 0, 1, 1, 2, 2};
    int codes[40], nc = 0;
    for (int i = 0; i < 12; i++) {
        if (i % 2 == 0) codes[nc++] = 4;
        codes[nc++] = lit[i];
    }
    codes[nc++] = 5;
    for (int i = 0; i < nc; i++) {
        bits |= (uint32_t)codes[i] << nb;
        nb += 3;
        while (nb >= 8) put8(&lz, bits & 255), bits >>= 8, nb -= 8;
    }
    if (nb) put8(&lz, bits);
    put8(&g, 2), put8(&g, (unsigned)lz.n), put(&g, lz.p, lz.n), put8(&g, 0), put(&g, ";", 1);
    g4v_image img;
    g4v_err err;
    REQUIRE(decode(&g, &img, &err) == G4V_OK);
    CHECK(img.width == 4 && img.height == 3 && !memcmp(img.rgb, "\xff\0\0\0\xff\0\0\0\xff\x10\x20\x30", 12));
    g4v_image_free(&img);
    hammer("GIF", &g, 1);
    free(g.p);
    free(lz.p);
    /* BMP 8-bit palette */
    buf bm = {0};
    int stride = (w + 3) & ~3;
    put(&bm, "BM", 2), put32le(&bm, 14 + 40 + 1024 + stride * h), put32le(&bm, 0),
        put32le(&bm, 14 + 40 + 1024);
    put32le(&bm, 40), put32le(&bm, w), put32le(&bm, h), put16le(&bm, 1), put16le(&bm, 8);
    put32le(&bm, 0), put32le(&bm, stride * h), put32le(&bm, 0), put32le(&bm, 0),
        put32le(&bm, 256), put32le(&bm, 0);
    put(&bm, px, 1024);
    put(&bm, px, (size_t)stride * h);
    hammer("BMP", &bm, 1);
    free(bm.p);
}

static void test_limits_and_names(void) {
    g4v_err err;
    g4v_image img;
    /* a PNG header claiming 100000 x 100000: refused before any pixel allocation */
    uint8_t one[3] = {1, 2, 3};
    buf b = make_png(1, 1, 8, PNG_COLOR_TYPE_RGB, one, 3, NULL, 0, 0);
    REQUIRE(b.n > 24);
    static const uint8_t big[8] = {0, 1, 0x86, 0xa0, 0, 1, 0x86, 0xa0};
    memcpy(b.p + 16, big, 8); /* IHDR width and height, then its CRC */
    uint32_t crc = crc32(b.p + 12, 17);
    for (int i = 0; i < 4; i++) b.p[29 + i] = (uint8_t)(crc >> (24 - 8 * i));
    g4v_alloc_fail_after(-1); /* resets the allocation counter (fault-injection builds) */
    int st = g4v_image_decode(b.p, b.n, NULL, &img, &err);
    CHECK(st == G4V_ERR_LIMIT);
    CHECK_CONTAINS(err.msg, "100000x100000");
#ifdef G4V_FAULT_INJECTION
    /* Only libpng's own structures (routed through g4v_malloc) were allocated, no pixels. */
    long allocs = g4v_alloc_count();
    CHECK_MSG(allocs <= 8, "%ld allocations before the limit was enforced", allocs);
#endif
    free(b.p);
    static const uint8_t tiff[] = "II*\0\x08\0\0\0", avif[] = "\0\0\0\x1c" "ftypavif",
                         junk[] = "\x01\x02\x03\x04hello";
    /* TIFF is decoded (tiff.c): a header whose directory lies past the end is a bad image */
    CHECK(g4v_image_decode(tiff, 8, NULL, &img, &err) == G4V_ERR_IMAGE);
    CHECK_CONTAINS(err.msg, "TIFF");
    CHECK(g4v_image_decode(avif, 12, NULL, &img, &err) == G4V_ERR_UNSUPPORTED);
    CHECK_CONTAINS(err.msg, "AVIF");
    CHECK(g4v_image_decode(junk, 9, NULL, &img, &err) == G4V_ERR_UNSUPPORTED);
    CHECK_CONTAINS(err.msg, "unknown image format (first bytes: 01 02 03 04");
    CHECK(g4v_image_decode(junk, 0, NULL, &img, &err) == G4V_ERR_IMAGE);
    CHECK(g4v_image_load(junk, 9, 300, NULL, &img, NULL, &err) == G4V_ERR_ARG);
    g4v_image_opts o;
    g4v_image_opts_default(&o);
    CHECK(o.max_pixels == 178956970ull && o.max_dimension == 65500 && o.apply_exif == 1 &&
          o.resize_order == G4V_RESIZE_PILLOW_13);
    CHECK(g4v_image_check_size(65501, 1, &o, "X", &err) == G4V_ERR_LIMIT);
    CHECK(g4v_image_check_size(20000, 20000, &o, "X", &err) == G4V_ERR_LIMIT);
    CHECK(g4v_image_check_size(13377, 13377, &o, "X", &err) == G4V_OK);
}

/* A little-endian TIFF blob whose only IFD entry is Orientation of the given TIFF type, count 1,
 * with the value's bytes val (4 bytes inline, 8 bytes out of line at offset 26). */
static size_t exif_typed(uint8_t *e, unsigned type, const void *val, size_t vlen) {
    memset(e, 0, 34);
    memcpy(e, "II*\0\x08\0\0\0\x01\0\x12\x01", 12);
    e[12] = (uint8_t)type;
    e[14] = 1; /* count */
    if (vlen <= 4) {
        memcpy(e + 18, val, vlen);
        return 26;
    }
    e[18] = 26; /* offset of the value */
    memcpy(e + 26, val, vlen);
    return 34;
}

/* Orientation stored as the numeric TIFF types other than SHORT (TIFF 6.0 section 2; LONG8 is
 * BigTIFF's): the value counts when it equals an integer 1..8, as Python's == compares the number
 * Pillow reads with transformers' constants (docs/PREPROCESSING.md). */
static void test_exif_types(void) {
    uint8_t e[40];
    float f6 = 6.0f, f65 = 6.5f;
    double d3 = 3.0, dnan = NAN;
    int32_t sr8[2] = {16, 2}, sr_neg[2] = {-8, -2}, sr_frac[2] = {7, 2}, sr_zero[2] = {5, 0};
    uint64_t l5 = 5, lbig = (uint64_t)1 << 40 | 5;
    int8_t sb7 = 7;
    CHECK(g4v_exif_orientation(e, exif_typed(e, 11, &f6, 4)) == 6);    /* FLOAT */
    CHECK(g4v_exif_orientation(e, exif_typed(e, 11, &f65, 4)) == 0);   /* not integral */
    CHECK(g4v_exif_orientation(e, exif_typed(e, 12, &d3, 8)) == 3);    /* DOUBLE */
    CHECK(g4v_exif_orientation(e, exif_typed(e, 12, &dnan, 8)) == 0);
    CHECK(g4v_exif_orientation(e, exif_typed(e, 10, sr8, 8)) == 8);    /* SRATIONAL 16/2 */
    CHECK(g4v_exif_orientation(e, exif_typed(e, 10, sr_neg, 8)) == 4); /* -8/-2 */
    CHECK(g4v_exif_orientation(e, exif_typed(e, 10, sr_frac, 8)) == 0);
    CHECK(g4v_exif_orientation(e, exif_typed(e, 10, sr_zero, 8)) == 0);
    CHECK(g4v_exif_orientation(e, exif_typed(e, 16, &l5, 8)) == 5);    /* LONG8 */
    CHECK(g4v_exif_orientation(e, exif_typed(e, 16, &lbig, 8)) == 0);
    CHECK(g4v_exif_orientation(e, exif_typed(e, 6, &sb7, 1)) == 7);    /* SBYTE */
}

/* The formats we refuse are named from their magic numbers, as each format's specification
 * defines them (ISO/IEC 14496-12 ftyp brands, ISO/IEC 15444-1 and 18181-2 signatures,
 * the ICO/CUR, PSD, QOI, PDF and Netpbm headers); every one must also be refused as "not one we
 * decode", never handed to a decoder. */
static void test_sniff_names(void) {
    static const struct {
        const char *bytes;
        size_t n;
        const char *name;
    } cases[] = {
        {"\0\0\0\x18" "ftypavif\0\0\0\0", 16, "AVIF"},
        {"\0\0\0\x18" "ftypheic\0\0\0\0", 16, "HEIF/HEIC"},
        {"\0\0\0\x18" "ftypmif1\0\0\0\0", 16, "HEIF/HEIC"},
        {"\0\0\0\x18" "ftypisom\0\0\0\0", 16, "ISO BMFF (MP4/QuickTime family)"},
        {"\0\0\0\x0cjP  \r\n\x87\n", 12, "JPEG 2000"},
        {"\xFF\x4F\xFF\x51\0\x2f", 6, "JPEG 2000"},
        {"\xFF\x0A\xfa\x7f", 4, "JPEG XL"},
        {"\0\0\0\x0cJXL \r\n\x87\n", 12, "JPEG XL"},
        {"\0\0\1\0\1\0", 6, "ICO"},
        {"\0\0\2\0\1\0", 6, "CUR"},
        {"8BPS\0\1", 6, "PSD"},
        {"qoif\0\0\0\1", 8, "QOI"},
        {"%PDF-1.7", 8, "PDF"},
        {"<?xml version", 13, "SVG/XML"},
        {"<svg xmlns", 10, "SVG/XML"},
        {"P6\n3 2\n255\n", 11, "PNM (PBM/PGM/PPM/PAM)"},
        {"P7 WIDTH", 8, "PNM (PBM/PGM/PPM/PAM)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *name = NULL;
        g4v_image_format f = g4v_image_sniff((const uint8_t *)cases[i].bytes, cases[i].n, &name);
        CHECK_MSG(f == G4V_FMT_OTHER && name && !strcmp(name, cases[i].name),
                  "case %zu: format %d, name %s, expected %s", i, (int)f, name ? name : "(null)",
                  cases[i].name);
    }
    /* TIFF and BigTIFF, both byte orders, go to the TIFF decoder */
    static const char *const tiffs[] = {"II*\0\x08\0\0\0", "MM\0*\0\0\0\x08", "II+\0\x08\0\0\0",
                                        "MM\0+\0\x08\0\0"};
    for (size_t i = 0; i < 4; i++) {
        const char *nm = NULL;
        CHECK(g4v_image_sniff((const uint8_t *)tiffs[i], 8, &nm) == G4V_FMT_TIFF && nm &&
              strstr(nm, "TIFF"));
    }
    const char *name = NULL; /* too short for any magic, or nothing we know */
    CHECK(g4v_image_sniff((const uint8_t *)"P8 ", 3, &name) == G4V_FMT_UNKNOWN);
    CHECK(g4v_image_sniff((const uint8_t *)"\0\0\0", 3, &name) == G4V_FMT_UNKNOWN);
}

int main(void) {
    test_sniff_names();
    test_exif_types();
    test_target_size();
    test_patchify();
    test_convert();
    test_exif();
    test_orient();
    test_resize_paths();
    test_resize_torch();
    test_decode_known();
    test_streaming_equals_full();
    test_hostile();
    test_limits_and_names();
    return test_summary("test_image_unit");
}
