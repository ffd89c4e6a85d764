/* image_tool.c - test helper that exposes the image layer to the Python parity tests.
 *
 *   image_tool decode FILE [--no-exif]   prints "W H\n" then the RGB8 bytes to stdout
 *   image_tool resize                    reads cases from stdin, writes results to stdout
 *   image_tool jpeg VARIANT W H          RGB8 (W*H*3 bytes) on stdin -> a JPEG on stdout, made
 *                                        with libjpeg in a way Pillow cannot: restart (markers
 *                                        every row), arith (arithmetic coding), s440, s411
 *                                        (sampling), rgb (RGB colour space), ycck (Adobe YCCK),
 *                                        cmyk-plain (4 components, no Adobe marker), gray-prog
 *
 * resize case format (little endian): u32 in_w, in_h, out_w, out_h, order (0 = Pillow 9,
 * 1 = Pillow 12.2, 2 = torch's antialiased bicubic), then in_w*in_h*3 bytes. For each case it writes one status byte and the
 * out_w*out_h*3 result of g4v_image_resize. The status has bit 0 set when the portable kernels
 * (G4V_ISA=portable) gave different bytes than the dispatched ones, bit 1 when pushing the rows
 * bottom-up (the streaming path for EXIF orientations 3/4) did, bit 2 on an error. So one run
 * checks every code path against the same Pillow output.
 */
#include "base/alloc.h"
#include "image/image_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

static int read_all(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n; }

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
    if (b && !read_all(f, b, (size_t)len)) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return b;
}

static int cmd_decode(const char *path, int exif) {
    size_t n;
    unsigned char *b = slurp(path, &n);
    if (!b) return fprintf(stderr, "cannot read %s\n", path), 2;
    g4v_image_opts o;
    g4v_image_opts_default(&o);
    o.apply_exif = exif;
    g4v_image img;
    g4v_err err;
    int st = g4v_image_decode(b, n, &o, &img, &err);
    free(b);
    if (st) return fprintf(stderr, "%s\n", err.msg), 2;
    printf("%d %d\n", img.width, img.height);
    fwrite(img.rgb, 3, (size_t)img.width * img.height, stdout);
    g4v_image_free(&img);
    return 0;
}

/* Resize by pushing rows bottom-up into a reverse resizer. */
static int resize_reverse(const uint8_t *src, int w, int h, int ow, int oh, g4v_resize_order ord,
                          uint8_t *dst) {
    g4v_resizer *r;
    g4v_err err;
    if (g4v_resizer_new(w, h, ow, oh, ord, G4V_RS_REVERSE, dst, (size_t)ow * 3, &r, &err)) return -1;
    for (int y = h - 1; y >= 0; y--) {
        memcpy(g4v_resizer_slot(r), src + (size_t)y * w * 3, (size_t)w * 3);
        g4v_resizer_push_slot(r);
    }
    g4v_resizer_free(r);
    return 0;
}

static int cmd_resize(void) {
    uint32_t hdr[5];
    const char *isa = getenv("G4V_ISA");
    char *saved = isa ? strdup(isa) : NULL;
    while (read_all(stdin, hdr, sizeof hdr)) {
        int w = (int)hdr[0], h = (int)hdr[1], ow = (int)hdr[2], oh = (int)hdr[3];
        g4v_resize_order ord = hdr[4] == 3   ? G4V_RESIZE_PILLOW_13
                               : hdr[4] == 2 ? G4V_RESIZE_TORCH
                               : hdr[4] == 1 ? G4V_RESIZE_PILLOW_12_2
                                             : G4V_RESIZE_PILLOW_9;
        size_t in_n = (size_t)w * h * 3, out_n = (size_t)ow * oh * 3;
        uint8_t *src = malloc(in_n ? in_n : 1), *alt = malloc(out_n ? out_n : 1);
        if (!src || !alt || !read_all(stdin, src, in_n)) return fprintf(stderr, "bad input\n"), 2;
        g4v_image a, b;
        g4v_err err;
        unsigned char status = 0;
        if (saved) setenv("G4V_ISA", saved, 1); else unsetenv("G4V_ISA");
        int st = g4v_image_resize(src, w, h, (size_t)w * 3, ow, oh, ord, &a, &err);
        setenv("G4V_ISA", "portable", 1);
        int st2 = g4v_image_resize(src, w, h, (size_t)w * 3, ow, oh, ord, &b, &err);
        if (saved) setenv("G4V_ISA", saved, 1); else unsetenv("G4V_ISA");
        if (st || st2) {
            status |= 4;
        } else {
            if (memcmp(a.rgb, b.rgb, out_n)) status |= 1;
            if (resize_reverse(src, w, h, ow, oh, ord, alt) || memcmp(a.rgb, alt, out_n))
                status |= 2;
        }
        fwrite(&status, 1, 1, stdout);
        if (st)
            fwrite(alt, 1, out_n, stdout); /* any bytes: the status says it failed */
        else
            fwrite(a.rgb, 1, out_n, stdout);
        g4v_image_free(&a);
        g4v_image_free(&b);
        free(src);
        free(alt);
    }
    free(saved);
    fflush(stdout);
    return 0;
}

static int cmd_jpeg(const char *variant, int w, int h) {
    size_t n = (size_t)w * h * 3;
    uint8_t *rgb = malloc(n), *px = malloc((size_t)w * h * 4);
    if (!rgb || !px || !read_all(stdin, rgb, n)) return fprintf(stderr, "bad input\n"), 2;
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    unsigned char *out = NULL;
    unsigned long outn = 0;
    jpeg_mem_dest(&c, &out, &outn);
    int comps = 3;
    c.in_color_space = JCS_RGB;
    if (!strcmp(variant, "ycck") || !strcmp(variant, "cmyk-plain")) {
        comps = 4, c.in_color_space = JCS_CMYK;
        for (size_t i = 0; i < (size_t)w * h; i++) { /* some CMYK from the RGB */
            px[4 * i] = 255 - rgb[3 * i], px[4 * i + 1] = 255 - rgb[3 * i + 1];
            px[4 * i + 2] = 255 - rgb[3 * i + 2], px[4 * i + 3] = (uint8_t)(rgb[3 * i] / 2 + 60);
        }
    } else if (!strcmp(variant, "gray-prog")) {
        comps = 1, c.in_color_space = JCS_GRAYSCALE;
        for (size_t i = 0; i < (size_t)w * h; i++) px[i] = rgb[3 * i + 1];
    } else {
        memcpy(px, rgb, n);
    }
    c.image_width = (JDIMENSION)w, c.image_height = (JDIMENSION)h, c.input_components = comps;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 85, TRUE);
    if (!strcmp(variant, "restart")) c.restart_in_rows = 1;
    if (!strcmp(variant, "arith")) c.arith_code = TRUE;
    if (!strcmp(variant, "s440")) c.comp_info[0].h_samp_factor = 1, c.comp_info[0].v_samp_factor = 2;
    if (!strcmp(variant, "s411")) c.comp_info[0].h_samp_factor = 4, c.comp_info[0].v_samp_factor = 1;
    if (!strcmp(variant, "rgb")) jpeg_set_colorspace(&c, JCS_RGB);
    if (!strcmp(variant, "ycck")) jpeg_set_colorspace(&c, JCS_YCCK);
    if (!strcmp(variant, "cmyk-plain")) c.write_Adobe_marker = FALSE;
    if (!strcmp(variant, "gray-prog")) jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW r = px + (size_t)c.next_scanline * w * comps;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    fwrite(out, 1, outn, stdout);
    free(out);
    free(rgb);
    free(px);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 5 && !strcmp(argv[1], "jpeg")) return cmd_jpeg(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc >= 3 && !strcmp(argv[1], "decode"))
        return cmd_decode(argv[2], !(argc >= 4 && !strcmp(argv[3], "--no-exif")));
    if (argc >= 2 && !strcmp(argv[1], "resize")) return cmd_resize();
    fprintf(stderr, "usage: image_tool decode FILE [--no-exif] | image_tool resize\n");
    return 1;
}
