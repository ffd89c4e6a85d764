/* test_bombs.c - decompression bombs and oversized headers are refused before any work starts.
 *
 * Each case is a small, otherwise valid file whose header claims a huge size: PNG 100000 x
 * 100000 and 60000 x 60000, JPEG 65500 x 65500 and 65535 x 65535, GIF 65535 x 65535, WebP lossy
 * and lossless 16383/16384 squared and an animation canvas of 60000 x 60000, BMP 100000 x 100000 (and
 * top-down). Built from the committed seed images (fuzz/corpus/image) by patching the size
 * fields. Each must fail with G4V_ERR_LIMIT through g4v_image_decode and g4v_image_load, take
 * microseconds (median of 25 calls, checked below 5 ms so a loaded CI machine passes; the
 * numbers are printed), and allocate nothing large: every malloc of the process is observed (a
 * malloc interposer in plain builds, the sanitizer allocator hooks under ASan) and the largest
 * single request must stay below 1 MiB; with G4V_FAULT_INJECTION, g4v's allocator may be called
 * only for the decoder's own small structures (libpng's go through it), at most 4 times. The same holds for the checkpoint side: a safetensors header length of
 * 2^40, one under the limit but past the end of a 16-byte file, and a sparse 1 GB config.json.
 * And a CPU bomb: a progressive JPEG repeating one scan 5000 times must stop at 100 scans; and a
 * PNG whose 100 zTXt chunks each inflate to 7.9 MB must stay within ~1 MB per allocation, and
 * one whose zTXt length field claims 1.6 GB must be refused without allocating it.
 *
 * An algorithmic one: an index naming 100,000 distinct shards (6.7 MB) took 197 s to open when
 * shard names were deduplicated by linear search; it must open in well under a second.
 *
 *     test_bombs FUZZ_DIR      (the repository's fuzz/: seed images and the micro checkpoint)
 */
#define _GNU_SOURCE
#include "base/alloc.h"
#include "image/image.h"
#include "io/model_source.h"
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <jpeglib.h>
#include <zlib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- observing every allocation -------------------------------------------------------------- */
static volatile size_t largest; /* largest single request since the last reset */
static volatile size_t requested; /* all requests since the last reset, in bytes */
static volatile int watching;

static void note(size_t n) {
    if (!watching) return;
    if (n > largest) largest = n;
    requested += n;
}

/* Under a sanitizer its runtime owns malloc: use its hooks instead of replacing malloc. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HAVE_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                       \
    __has_feature(memory_sanitizer)
#define HAVE_SANITIZER 1
#endif
#endif

#ifdef HAVE_SANITIZER
/* From the sanitizer runtime (clang ships the header, gcc only the symbol). */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));
static void on_malloc(const volatile void *p, size_t n) {
    (void)p;
    note(n);
}
static void on_free(const volatile void *p) { (void)p; }
static void install_hooks(void) {
    /* both hooks are required, or nothing is installed */
    if (!__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free))
        fprintf(stderr, "test_bombs: cannot install the allocator hooks\n");
}
#else
/* glibc lets a program replace malloc; these forward to glibc's own allocator and only look. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
void *malloc(size_t n) {
    note(n);
    return __libc_malloc(n);
}
void *calloc(size_t c, size_t n) {
    note(c * n);
    return __libc_calloc(c, n);
}
void *realloc(void *p, size_t n) {
    note(n);
    return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }
void *memalign(size_t a, size_t n) {
    note(n);
    return __libc_memalign(a, n);
}
void *aligned_alloc(size_t a, size_t n) {
    note(n);
    return __libc_memalign(a, n);
}
int posix_memalign(void **out, size_t a, size_t n) {
    note(n);
    void *p = __libc_memalign(a, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
static void install_hooks(void) {}
#endif

/* ---- files ---------------------------------------------------------------------------------- */
typedef struct {
    uint8_t *p;
    size_t n;
} buf;

static buf load(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    buf b = {NULL, 0};
    FILE *f = fopen(path, "rb");
    if (!f) return b;
    b.p = malloc((1 << 16) + 1);
    b.n = fread(b.p, 1, 1 << 16, f);
    b.p[b.n] = 0; /* the index is searched as text */
    fclose(f);
    return b;
}

static void be16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v; }
static void be32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (24 - 8 * i));
}
static void le16(uint8_t *p, unsigned v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void le24(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 3; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t crc32_png(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

static buf png_bomb(const char *dir, uint32_t w, uint32_t h) {
    buf b = load(dir, "rgb8.png");
    if (b.n < 33) return b;
    be32(b.p + 16, w);
    be32(b.p + 20, h);
    be32(b.p + 29, crc32_png(b.p + 12, 17)); /* "IHDR" + 13 data bytes */
    return b;
}

static buf jpeg_bomb(const char *dir, unsigned w, unsigned h) {
    buf b = load(dir, "baseline-420.jpg");
    for (size_t i = 2; i + 9 < b.n;) { /* walk the marker segments to SOF0 */
        unsigned m = b.p[i + 1], len = (unsigned)b.p[i + 2] << 8 | b.p[i + 3];
        if (m == 0xC0) {
            be16(b.p + i + 5, h);
            be16(b.p + i + 7, w);
            return b;
        }
        i += 2 + len;
    }
    b.n = 0;
    return b;
}

static buf gif_bomb(const char *dir) {
    buf b = load(dir, "plain.gif");
    if (b.n > 10) {
        le16(b.p + 6, 65535); /* logical screen */
        le16(b.p + 8, 65535);
    }
    return b;
}

static buf webp_lossy_bomb(const char *dir) {
    buf b = load(dir, "lossy.webp"); /* RIFF, "VP8 " chunk at 12, frame header at 20 */
    if (b.n > 30 && !memcmp(b.p + 12, "VP8 ", 4)) {
        le16(b.p + 26, 0x3FFF); /* 14-bit width and height, scale bits 0 */
        le16(b.p + 28, 0x3FFF);
    } else {
        b.n = 0;
    }
    return b;
}

static buf webp_lossless_bomb(const char *dir) {
    buf b = load(dir, "lossless.webp"); /* "VP8L" at 12, signature 0x2f at 20, then the sizes */
    if (b.n > 25 && !memcmp(b.p + 12, "VP8L", 4)) {
        b.p[21] = b.p[22] = b.p[23] = 0xFF; /* width-1 and height-1: 14 bits each, all ones */
        b.p[24] = (uint8_t)((b.p[24] & 0xF0) | 0x0F);
    } else {
        b.n = 0;
    }
    return b;
}

/* An animation whose VP8X canvas claims 60000 x 60000 around a 15 x 10 frame: valid WebP (frames
 * may be smaller than the canvas), and WebPAnimDecoderNew would allocate the 14.4 GB canvas. */
static buf webp_canvas_bomb(const char *dir) {
    buf b = load(dir, "animated.webp");
    if (b.n > 30 && !memcmp(b.p + 12, "VP8X", 4) && (b.p[20] & 2)) {
        le24(b.p + 24, 60000 - 1);
        le24(b.p + 27, 60000 - 1);
    } else {
        b.n = 0;
    }
    return b;
}

static buf bmp_bomb(const char *dir, int top_down) {
    buf b = load(dir, "bgr24.bmp");
    if (b.n > 26) {
        le32(b.p + 18, 100000);
        le32(b.p + 22, top_down ? (uint32_t)-100000 : 100000u);
    }
    return b;
}

/* A flat side x side gray progressive JPEG (written by libjpeg) whose first AC scan is repeated
 * `copies` more times before EOI: ~16 bytes per scan, each scan a full pass over the image. */
static buf jpeg_scan_bomb(int side, int copies) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    unsigned char *jpg = NULL;
    unsigned long n = 0;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &jpg, &n);
    c.image_width = (JDIMENSION)side, c.image_height = (JDIMENSION)side;
    c.input_components = 1, c.in_color_space = JCS_GRAYSCALE;
    jpeg_set_defaults(&c);
    jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    JSAMPLE *row = malloc((size_t)side);
    memset(row, 128, (size_t)side);
    while (c.next_scanline < c.image_height) jpeg_write_scanlines(&c, &row, 1);
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    buf b = {NULL, 0};
    /* find an AC first-pass scan: SOS with Ss > 0 and Ah = 0; it ends at the next marker */
    size_t at = 0, len = 0;
    for (size_t i = 2; i + 4 < n && !len;) {
        unsigned m = jpg[i + 1], sl = (unsigned)jpg[i + 2] << 8 | jpg[i + 3];
        if (m != 0xDA) {
            i += 2 + sl;
            continue;
        }
        const unsigned char *h = jpg + i + 4;
        size_t j = i + 2 + sl;
        while (j + 1 < n && !(jpg[j] == 0xFF && jpg[j + 1] && (jpg[j + 1] < 0xD0 || jpg[j + 1] > 0xD7)))
            j++;
        if (h[1 + 2 * h[0]] > 0 && (h[3 + 2 * h[0]] >> 4) == 0) at = i, len = j - i;
        i = j;
    }
    if (len) {
        b.n = n - 2 + len * (size_t)copies + 2;
        b.p = malloc(b.n);
        memcpy(b.p, jpg, n - 2);
        for (int k = 0; k < copies; k++) memcpy(b.p + n - 2 + len * (size_t)k, jpg + at, len);
        memcpy(b.p + b.n - 2, "\xFF\xD9", 2);
    }
    free(jpg);
    return b;
}

static void put_chunk(uint8_t **w, const char *type, const uint8_t *d, size_t n) {
    be32(*w, (uint32_t)n);
    memcpy(*w + 4, type, 4);
    if (n) memcpy(*w + 8, d, n);
    be32(*w + 8 + n, crc32_png(*w + 4, n + 4));
    *w += 12 + n;
}

/* A 1x1 gray PNG carrying `chunks` zTXt chunks that each inflate to 7.9 MB of 'A' (~8 KB each),
 * just under libpng's default 8,000,000-byte chunk limit. */
static buf png_text_bomb(int chunks) {
    uLong big = 7900000;
    uint8_t *text = malloc(big);
    memset(text, 'A', big);
    uLongf clen = compressBound(big);
    uint8_t *comp = malloc(10 + clen);
    memcpy(comp, "Comment\0\0", 9); /* keyword, NUL, compression method 0 */
    compress2(comp + 9, &clen, text, big, 9);
    free(text);
    size_t ztxt = 9 + clen;
    buf b = {malloc(8 + 25 + (12 + ztxt) * (size_t)chunks + 64), 0};
    uint8_t *w = b.p;
    memcpy(w, "\x89PNG\r\n\x1a\n", 8);
    w += 8;
    static const uint8_t ihdr[13] = {0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0};
    put_chunk(&w, "IHDR", ihdr, 13);
    for (int i = 0; i < chunks; i++) put_chunk(&w, "zTXt", comp, ztxt);
    static const uint8_t idat[] = {0x78, 0x01, 0x63, 0x68, 0x00, 0x00, 0x00, 0x82, 0x00, 0x81};
    put_chunk(&w, "IDAT", idat, sizeof idat); /* one row: filter 0, sample 0x80 */
    put_chunk(&w, "IEND", NULL, 0);
    b.n = (size_t)(w - b.p);
    free(comp);
    return b;
}

/* ---- the checks ------------------------------------------------------------------------------ */
static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* g4v_image_decode of b with the allocation watch on (largest, requested reset first); *us gets
 * the decode's wall time in microseconds. */
static int watched_decode(const buf *b, g4v_image *img, g4v_err *err, double *us) {
    largest = requested = 0;
    watching = 1;
    double t0 = now_us();
    int st = g4v_image_decode(b->p, b->n, NULL, img, err);
    *us = now_us() - t0;
    watching = 0;
    return st;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define REPS 25
#define MAX_US 5000.0
#define MAX_ALLOC ((size_t)1 << 20)

static void image_case(const char *name, buf b) {
    if (!b.n) {
        CHECK_MSG(0, "%s: cannot build the bomb (seed image missing or changed?)", name);
        free(b.p);
        return;
    }
    for (int via_load = 0; via_load < 2; via_load++) {
        double t[REPS];
        int st = G4V_OK;
        g4v_err err;
        largest = 0;
        long ours = 0;
        for (int r = 0; r < REPS; r++) {
            g4v_image img;
            watching = 1;
            g4v_alloc_fail_after(1L << 40); /* resets the count; never fails */
            double t0 = now_us();
            st = via_load ? g4v_image_load(b.p, b.n, 280, NULL, &img, NULL, &err)
                          : g4v_image_decode(b.p, b.n, NULL, &img, &err);
            t[r] = now_us() - t0;
            ours += g4v_alloc_count() - g4v_alloc_count_foreign(); /* libg4v's own only */
            g4v_alloc_fail_after(-1);
            watching = 0;
            if (st == G4V_OK) g4v_image_free(&img);
        }
        qsort(t, REPS, sizeof t[0], cmp_double);
        const char *fn = via_load ? "load" : "decode";
        printf("  %-28s %-6s %-16s %8.1f us (median; min %.1f)  largest malloc %zu bytes\n", name,
               fn, g4v_status_name(st), t[REPS / 2], t[0], (size_t)largest);
        CHECK_MSG(st == G4V_ERR_LIMIT, "%s (%s): expected G4V_ERR_LIMIT, got %s: %s", name, fn,
                  g4v_status_name(st), err.msg);
        CHECK_MSG(t[REPS / 2] < MAX_US, "%s (%s): %.0f us to refuse", name, fn, t[REPS / 2]);
        CHECK_MSG(largest < MAX_ALLOC, "%s (%s): a %zu-byte allocation", name, fn,
                  (size_t)largest);
        CHECK_MSG(ours <= 4 * REPS, "%s (%s): %ld g4v allocations per call before refusing",
                  name, fn, ours / REPS);
    }
    free(b.p);
}

/* CPU, not memory: 5000 repeated progressive scans (~80 KB) over a 1024 x 1024 image decode for
 * several seconds without the scan cap; with it they are refused after 100 scans. */
static void scan_bomb(void) {
    printf("progressive JPEG scan bomb:\n");
    buf b = jpeg_scan_bomb(1024, 5000);
    REQUIRE(b.n > 0);
    g4v_err err;
    g4v_image img;
    double t0 = now_us();
    int st = g4v_image_decode(b.p, b.n, NULL, &img, &err);
    double dt = now_us() - t0;
    printf("  %-28s %-6s %-16s %8.1f ms  (%zu bytes)\n", "JPEG 1024x1024, 5000 scans", "decode",
           g4v_status_name(st), dt / 1e3, b.n);
    /* a fixed cap, not a caller's limit */
    CHECK_MSG(st == G4V_ERR_UNSUPPORTED, "scan bomb: expected G4V_ERR_UNSUPPORTED, got %s: %s",
              g4v_status_name(st), err.msg);
    CHECK_CONTAINS(err.msg, "more than 100 scans");
    if (st == G4V_OK) g4v_image_free(&img);
    buf ok = jpeg_scan_bomb(64, 80); /* 90 scans: still decodes */
    st = g4v_image_decode(ok.p, ok.n, NULL, &img, &err);
    CHECK_MSG(st == G4V_OK, "90 scans: %s", err.msg);
    if (st == G4V_OK) g4v_image_free(&img);
    free(ok.p);
    free(b.p);
}

/* 100 zTXt chunks of 7.9 MB each (~0.8 MB of file) held 790 MB before png.c capped libpng's text
 * chunks at 1 MB each and 64 in all: now every request is <= ~1 MB and all of them together stay
 * under 80 MB (64 chunks x 1 MB plus inflate state). */
static void text_bomb(void) {
    printf("PNG text-chunk bomb:\n");
    buf b = png_text_bomb(100);
    g4v_err err;
    g4v_image img;
    double dt;
    int st = watched_decode(&b, &img, &err, &dt);
    printf("  %-28s %-6s %-16s %8.1f ms  (%zu bytes; largest malloc %zu, all %zu MB)\n",
           "PNG 100 zTXt x 7.9 MB", "decode", g4v_status_name(st), dt / 1e3, b.n, (size_t)largest,
           (size_t)requested >> 20);
    CHECK_MSG(st == G4V_OK || st == G4V_ERR_IMAGE, "text bomb: %s: %s", g4v_status_name(st),
              err.msg);
    CHECK_MSG(largest <= (1u << 20) + 4096, "text bomb: a %zu-byte allocation", (size_t)largest);
    CHECK_MSG(requested < (80u << 20), "text bomb: %zu MB requested in all",
              (size_t)requested >> 20);
    if (st == G4V_OK) g4v_image_free(&img);
    free(b.p);
}

/* Found by fuzz_image: 248 bytes whose zTXt length field says 1.6 GB; libpng sized its buffer from
 * it before reading. Refused now, with no allocation above ~2.5 MB. */
static void chunk_length_bomb(const char *fuzz_dir) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/regressions/image", fuzz_dir);
    buf b = load(dir, "png-ztxt-length-1.6GB.png");
    REQUIRE(b.n > 0);
    g4v_err err;
    g4v_image img;
    double dt;
    int st = watched_decode(&b, &img, &err, &dt);
    printf("  %-28s %-6s %-16s %8.1f us  largest malloc %zu bytes\n", "PNG zTXt length 1.6 GB",
           "decode", g4v_status_name(st), dt, (size_t)largest);
    /* no caller setting raises libpng's allocation cap: a corrupt file, not G4V_ERR_LIMIT */
    CHECK_MSG(st == G4V_ERR_IMAGE, "chunk length bomb: %s: %s", g4v_status_name(st), err.msg);
    CHECK_MSG(largest < (4u << 20), "chunk length bomb: a %zu-byte allocation", (size_t)largest);
    if (st == G4V_OK) g4v_image_free(&img);
    free(b.p);
}

static void write_file(const char *path, const void *p, size_t n, off_t sparse_size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return;
    if (n && write(fd, p, n) != (ssize_t)n) perror(path);
    if (sparse_size && ftruncate(fd, sparse_size) != 0) perror(path);
    close(fd);
}

static void checkpoint_case(const char *name, const char *dir, int want) {
    g4v_checkpoint *ck = NULL;
    g4v_err err;
    largest = 0;
    watching = 1;
    double t0 = now_us();
    int st = g4v_checkpoint_open(dir, NULL, &ck, &err);
    double dt = now_us() - t0;
    watching = 0;
    printf("  %-28s %-6s %-16s %8.1f us  largest malloc %zu bytes\n", name, "open",
           g4v_status_name(st), dt, (size_t)largest);
    CHECK_MSG(st == want, "%s: expected %s, got %s: %s", name, g4v_status_name(want),
              g4v_status_name(st), err.msg);
    CHECK_MSG(largest < MAX_ALLOC, "%s: a %zu-byte allocation", name, (size_t)largest);
    CHECK_MSG(dt < 20 * MAX_US, "%s: %.0f us to refuse", name, dt);
    g4v_checkpoint_close(ck);
}

static void checkpoint_bombs(void) {
    char dir[] = "/tmp/g4v-bombs-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp: %s", strerror(errno));
        return;
    }
    char cfg[4096], st[4096];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    static const char config[] = "{\"vision_config\": {}, \"text_config\": {\"hidden_size\": 8}}";
    write_file(cfg, config, sizeof config - 1, 0);

    uint8_t head[16] = {0};
    le32(head, 0), le32(head + 4, 1u << 8); /* 2^40 bytes of header */
    memcpy(head + 8, "{}      ", 8);
    write_file(st, head, sizeof head, 0);
    checkpoint_case("safetensors header 2^40", dir, G4V_ERR_LIMIT);
    le32(head, 50u * 1000 * 1000), le32(head + 4, 0); /* under the limit, past the end */
    write_file(st, head, sizeof head, 0);
    checkpoint_case("safetensors header past EOF", dir, G4V_ERR_MODEL);
    write_file(cfg, config, sizeof config - 1, (off_t)1 << 30);
    checkpoint_case("config.json of 1 GB (sparse)", dir, G4V_ERR_LIMIT);
    unlink(cfg);
    unlink(st);
    rmdir(dir);
}

static void copy_file(const char *from_dir, const char *to_dir, const char *name) {
    char dst[4096];
    snprintf(dst, sizeof dst, "%s/%s", to_dir, name);
    buf b = load(from_dir, name);
    CHECK_MSG(b.n > 0, "cannot read %s/%s", from_dir, name);
    write_file(dst, b.p, b.n, 0);
    free(b.p);
}

/* The micro checkpoint's shards with an index that also names 100,000 other shards (text
 * tensors, say): those are never opened, and listing them must cost O(n log n). */
static void shard_bomb(const char *fuzz_dir) {
    char data[4096], dir[] = "/tmp/g4v-shards-XXXXXX";
    snprintf(data, sizeof data, "%s/data/micro-shards", fuzz_dir);
    REQUIRE(mkdtemp(dir) != NULL);
    static const char *const files[] = {"config.json", "model-00001-of-00002.safetensors",
                                        "model-00002-of-00002.safetensors"};
    for (int i = 0; i < 3; i++) copy_file(data, dir, files[i]);
    buf idx = load(data, "model.safetensors.index.json");
    char *wm = idx.n ? strstr((char *)idx.p, "\"weight_map\"") : NULL;
    char *brace = wm ? strchr(wm, '{') : NULL;
    REQUIRE(brace != NULL);
    const int decoys = 100000;
    size_t cap = idx.n + (size_t)decoys * 80, at = (size_t)(brace + 1 - (char *)idx.p);
    char *text = malloc(cap);
    memcpy(text, idx.p, at);
    for (int i = 0; i < decoys; i++)
        at += (size_t)snprintf(text + at, cap - at,
                               "\"model.language_model.layers.%d.w\": \"shard-%06d.safetensors\",",
                               i, i);
    memcpy(text + at, brace + 1, idx.n - (size_t)(brace + 1 - (char *)idx.p));
    at += idx.n - (size_t)(brace + 1 - (char *)idx.p);
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    write_file(path, text, at, 0);
    g4v_checkpoint *ck = NULL;
    g4v_err err;
    double t0 = now_us();
    int st = g4v_checkpoint_open(dir, NULL, &ck, &err);
    double dt = now_us() - t0;
    printf("  %-28s %-6s %-16s %8.1f ms  (%zu bytes)\n", "index naming 100000 shards", "open",
           g4v_status_name(st), dt / 1e3, at);
    CHECK_MSG(st == G4V_OK, "shard bomb: %s", err.msg);
    CHECK_MSG(dt < 5e6, "shard bomb: %.1f s to open", dt / 1e6);
    g4v_checkpoint_close(ck);
    free(text);
    free(idx.p);
    unlink(path);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_bombs FUZZ_DIR\n");
        return 2;
    }
    char d[4096];
    snprintf(d, sizeof d, "%s/corpus/image", argv[1]);
    install_hooks();
    printf("decompression bombs (default limits: 178956970 pixels, 65500 per side):\n");
    image_case("PNG 100000x100000", png_bomb(d, 100000, 100000));
    image_case("PNG 60000x60000", png_bomb(d, 60000, 60000));
    image_case("JPEG 65500x65500", jpeg_bomb(d, 65500, 65500));
    image_case("JPEG 65535x65535", jpeg_bomb(d, 65535, 65535));
    image_case("GIF 65535x65535", gif_bomb(d));
    image_case("WebP lossy 16383x16383", webp_lossy_bomb(d));
    image_case("WebP lossless 16384x16384", webp_lossless_bomb(d));
    image_case("WebP anim canvas 60000x60000", webp_canvas_bomb(d));
    image_case("BMP 100000x100000", bmp_bomb(d, 0));
    image_case("BMP 100000x100000 top-down", bmp_bomb(d, 1));
    scan_bomb();
    text_bomb();
    chunk_length_bomb(argv[1]);
    printf("checkpoint headers:\n");
    checkpoint_bombs();
    shard_bomb(argv[1]);
    return test_summary("test_bombs");
}
