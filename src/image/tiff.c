/* tiff.c - TIFF (and BigTIFF) via libtiff, mapped to RGB the way Pillow maps its TIFF modes.
 *
 * Read from memory only (TIFFClientOpenExt over the caller's bytes; never a path, never mmap).
 * The first image file directory only, as Image.open does for a multi-page file. What is
 * decoded (docs/PREPROCESSING.md §2.6), each as Pillow 9.4 opens it and then convert("RGB"):
 *  - bilevel (1-bit, either PhotometricInterpretation), gray 2/4/8-bit (MinIsBlack and
 *    MinIsWhite), gray 16-bit MinIsBlack (Pillow "I;16": saturates at 255), gray + alpha 8-bit;
 *  - palette 1/2/4/8-bit (the ColorMap's high bytes), palette + alpha 8-bit;
 *  - RGB 8-bit with 0..3 extra samples (unassociated alpha and unspecified extras dropped;
 *    associated alpha un-premultiplied first, as Pillow's "RGBa" unpacker does), RGB 16-bit
 *    (the high byte) with no or one unassociated / unspecified extra sample;
 *  - CMYK 8-bit (Pillow's cmyk2rgb), with up to two unspecified extra samples;
 *  - YCbCr only JPEG-compressed (libtiff converts to RGB with libjpeg, as in Pillow).
 * Compressions: none, LZW, Deflate (both codes), PackBits, JPEG, CCITT (bilevel), LZMA, ZSTD,
 * WebP - whatever Debian's libtiff decodes, which is also what Pillow uses for them. Strips or
 * tiles, either byte order, any FillOrder, horizontal predictor.
 * Refused with a message that names what was found: PlanarConfiguration 2, signed / float
 * samples, 12/32-bit, 16-bit CMYK / LA / palette, YCbCr without JPEG, old-style JPEG (6), CIELab,
 * and anything Pillow itself does not open.
 * Orientation: the Orientation tag (274) of that directory, applied once when EXIF orientation is
 * on. Pillow >= 10.1 does that (it orients a TIFF when loading it); Pillow 9.4 orients at load
 * and then ImageOps.exif_transpose orients a second time (Pillow issue #7381), which we do not
 * reproduce.
 * Limits: width x height checked before any allocation; tiles larger than the image (beyond the
 * 16-pixel rounding or 1024) are refused; libtiff's own single allocations are capped.
 */
#include "image/image_internal.h"

#include "base/alloc.h"

#include <stdio.h>
#include <string.h>

#include <tiffio.h>

typedef struct {
    const uint8_t *b;
    size_t n;
    uint64_t pos;
    char msg[256];
} tiff_io;

static tmsize_t io_read(thandle_t h, void *buf, tmsize_t size) {
    tiff_io *io = h;
    if (size <= 0 || io->pos >= io->n) return 0;
    uint64_t left = io->n - io->pos;
    size_t k = (uint64_t)size < left ? (size_t)size : (size_t)left;
    memcpy(buf, io->b + io->pos, k);
    io->pos += k;
    return (tmsize_t)k;
}

static tmsize_t io_write(thandle_t h, void *buf, tmsize_t size) {
    (void)h, (void)buf, (void)size;
    return -1;
}

static toff_t io_seek(thandle_t h, toff_t off, int whence) {
    tiff_io *io = h;
    uint64_t base = whence == SEEK_CUR ? io->pos : whence == SEEK_END ? io->n : 0;
    if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return (toff_t)-1;
    if (off > UINT64_MAX - base) return (toff_t)-1;
    io->pos = base + off;
    return io->pos;
}

static int io_close(thandle_t h) {
    (void)h;
    return 0;
}

static toff_t io_size(thandle_t h) { return ((tiff_io *)h)->n; }

static int io_map(thandle_t h, void **base, toff_t *size) {
    (void)h, (void)base, (void)size;
    return 0; /* never mapped: the caller's bytes are read-only */
}

static void io_unmap(thandle_t h, void *base, toff_t size) { (void)h, (void)base, (void)size; }

static int on_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
    (void)tif;
    tiff_io *io = user;
    if (!io->msg[0]) { /* the first error is the cause */
        char text[200];
        vsnprintf(text, sizeof text, fmt, ap);
        snprintf(io->msg, sizeof io->msg, "%s%s%s", module ? module : "", module ? ": " : "",
                 text);
    }
    return 1; /* handled: libtiff's global handler (stderr) is not called */
}

static int on_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
    (void)tif, (void)user, (void)module, (void)fmt, (void)ap;
    return 1; /* Pillow ignores libtiff's warnings too */
}

/* How one row of samples becomes RGB (Pillow's unpacker, then convert("RGB")). */
typedef enum {
    K_GRAY,    /* 1/2/4/8-bit gray or bilevel, maybe inverted */
    K_GRAY16,  /* 16-bit gray: min(v, 255) */
    K_GRAYA,   /* 8-bit gray + extra: the gray */
    K_PAL,     /* 1/2/4/8-bit index (+ an 8-bit alpha when spp == 2) */
    K_RGB,     /* 8-bit RGB + extras (dropped) */
    K_RGBA_PM, /* 8-bit RGB + associated alpha: un-premultiplied */
    K_RGB16,   /* 16-bit RGB (+ extra): high byte */
    K_CMYK     /* 8-bit CMYK (+ extras) */
} row_kind;

typedef struct {
    row_kind kind;
    int bps, spp, invert;
    uint8_t pal[768];
} conv;

static inline uint8_t clip8(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* Pillow's MULDIV255. */
static inline int muldiv255(int a, int b) {
    int t = a * b + 128;
    return ((t >> 8) + t) >> 8;
}

static void convert_row(const conv *c, const uint8_t *in, uint8_t *out, int w) {
    switch (c->kind) {
    case K_GRAY: {
        int bps = c->bps, per = 8 / bps, mask = (1 << bps) - 1;
        /* Pillow: 1-bit -> 0 / 255; 2-bit x 0x55; 4-bit x 0x11 (bit replication) */
        int scale = bps == 1 ? 255 : bps == 2 ? 0x55 : bps == 4 ? 0x11 : 1;
        for (int x = 0; x < w; x++) {
            int v;
            if (bps == 8) {
                v = in[x];
            } else {
                int shift = 8 - bps * (x % per + 1);
                v = ((in[x / per] >> shift) & mask) * scale;
            }
            if (c->invert) v = 255 - v;
            out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = (uint8_t)v;
        }
        break;
    }
    case K_GRAY16: {
        const uint16_t *s = (const uint16_t *)(const void *)in; /* libtiff: native order */
        for (int x = 0; x < w; x++) {
            uint16_t v;
            memcpy(&v, s + x, 2);
            out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = v > 255 ? 255 : (uint8_t)v;
        }
        break;
    }
    case K_GRAYA:
        for (int x = 0; x < w; x++)
            out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = in[(size_t)c->spp * x];
        break;
    case K_PAL: {
        int bps = c->bps, per = 8 / bps, mask = (1 << bps) - 1;
        for (int x = 0; x < w; x++) {
            int i;
            if (bps == 8)
                i = in[(size_t)c->spp * x];
            else
                i = (in[x / per] >> (8 - bps * (x % per + 1))) & mask;
            memcpy(out + 3 * x, c->pal + 3 * i, 3);
        }
        break;
    }
    case K_RGB:
        for (int x = 0; x < w; x++) memcpy(out + 3 * x, in + (size_t)c->spp * x, 3);
        break;
    case K_RGBA_PM:
        for (int x = 0; x < w; x++) {
            const uint8_t *s = in + (size_t)c->spp * x;
            int a = s[3];
            for (int k = 0; k < 3; k++)
                out[3 * x + k] = a == 0 ? 0 : a == 255 ? s[k] : clip8(s[k] * 255 / a);
        }
        break;
    case K_RGB16:
        for (int x = 0; x < w; x++) {
            for (int k = 0; k < 3; k++) {
                uint16_t v;
                memcpy(&v, in + 2 * ((size_t)c->spp * x + k), 2);
                out[3 * x + k] = (uint8_t)(v >> 8);
            }
        }
        break;
    case K_CMYK:
        for (int x = 0; x < w; x++) {
            const uint8_t *s = in + (size_t)c->spp * x;
            int nk = 255 - s[3];
            for (int k = 0; k < 3; k++) out[3 * x + k] = clip8(nk - muldiv255(s[k], nk));
        }
        break;
    }
}

typedef struct {
    tiff_io io;
    TIFF *tif;
    TIFFOpenOptions *topts;
    uint8_t *buf; /* one scanline, or one band of tiles */
    uint8_t *tile;
    int buf_large; /* buf came from g4v_malloc_large */
} tiff_ctx;

static int refuse(g4v_err *err, const char *what) {
    return g4v_fail(err, G4V_ERR_UNSUPPORTED, "TIFF: %s is not supported", what);
}

static int bad(tiff_ctx *c, g4v_err *err, const char *what) {
    return g4v_fail(err, G4V_ERR_IMAGE, "TIFF: %s%s%s", what, c->io.msg[0] ? ": " : "",
                    c->io.msg);
}

/* The Pillow mode of the directory, as a conversion; G4V_ERR_UNSUPPORTED names what is not. */
static int pick_mode(tiff_ctx *c, conv *cv, g4v_err *err) {
    TIFF *tif = c->tif;
    uint16_t bps = 1, spp = 1, photo = 0, planar = 1, compression = 1, fmt = 1;
    uint16_t n_extra = 0, *extra = NULL;
    TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &fmt);
    TIFFGetFieldDefaulted(tif, TIFFTAG_EXTRASAMPLES, &n_extra, &extra);
    if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photo))
        return refuse(err, "an image without a PhotometricInterpretation tag");
    char what[160];
    if (compression == COMPRESSION_OJPEG) return refuse(err, "old-style JPEG compression (6)");
    switch (compression) {
    case COMPRESSION_NONE: case COMPRESSION_CCITTRLE: case COMPRESSION_CCITTFAX3:
    case COMPRESSION_CCITTFAX4: case COMPRESSION_LZW: case COMPRESSION_JPEG:
    case COMPRESSION_ADOBE_DEFLATE: case COMPRESSION_DEFLATE: case COMPRESSION_PACKBITS:
    case COMPRESSION_LZMA: case COMPRESSION_ZSTD: case COMPRESSION_WEBP:
        if (TIFFIsCODECConfigured(compression)) break;
        /* fall through */
    default:
        snprintf(what, sizeof what, "compression %u", compression);
        return refuse(err, what);
    }
    if (planar != PLANARCONFIG_CONTIG)
        return refuse(err, "PlanarConfiguration 2 (separate planes)");
    if (fmt != SAMPLEFORMAT_UINT) {
        snprintf(what, sizeof what, "SampleFormat %u (%s samples)", fmt,
                 fmt == SAMPLEFORMAT_INT ? "signed" : fmt == SAMPLEFORMAT_IEEEFP ? "float"
                                                                               : "other");
        return refuse(err, what);
    }
    if (spp > 6) return g4v_fail(err, G4V_ERR_IMAGE, "TIFF: %u samples per pixel", spp);
    int base = photo == PHOTOMETRIC_RGB || photo == PHOTOMETRIC_YCBCR ? 3
               : photo == PHOTOMETRIC_SEPARATED                      ? 4
                                                                     : 1;
    int e0 = n_extra ? extra[0] : -1; /* the first extra sample's meaning, -1: none */
    int ok_extras = spp == base + n_extra;
    for (int i = 1; i < n_extra; i++) ok_extras &= extra[i] == EXTRASAMPLE_UNSPECIFIED;
    memset(cv, 0, sizeof *cv);
    cv->bps = bps, cv->spp = spp;
    snprintf(what, sizeof what, "PhotometricInterpretation %u with %u x %u-bit samples%s", photo,
             spp, bps, n_extra ? " (extra samples)" : "");
    switch (photo) {
    case PHOTOMETRIC_MINISWHITE:
    case PHOTOMETRIC_MINISBLACK:
        cv->invert = photo == PHOTOMETRIC_MINISWHITE;
        if (spp == 1 && !n_extra && (bps == 1 || bps == 2 || bps == 4 || bps == 8)) {
            cv->kind = K_GRAY;
            return G4V_OK;
        }
        if (spp == 1 && !n_extra && bps == 16 && !cv->invert) {
            cv->kind = K_GRAY16;
            return G4V_OK;
        }
        if (spp == 2 && n_extra == 1 && e0 == EXTRASAMPLE_UNASSALPHA && bps == 8 && !cv->invert) {
            cv->kind = K_GRAYA;
            return G4V_OK;
        }
        return refuse(err, what);
    case PHOTOMETRIC_PALETTE: {
        int okp = (spp == 1 && !n_extra && (bps == 1 || bps == 2 || bps == 4 || bps == 8)) ||
                  (spp == 2 && n_extra == 1 && e0 == EXTRASAMPLE_UNASSALPHA && bps == 8);
        if (!okp) return refuse(err, what);
        uint16_t fill = FILLORDER_MSB2LSB;
        TIFFGetFieldDefaulted(tif, TIFFTAG_FILLORDER, &fill);
        if (fill == FILLORDER_LSB2MSB && bps < 8 && compression == COMPRESSION_NONE)
            return g4v_fail(err, G4V_ERR_IMAGE, "TIFF: an uncompressed %u-bit palette image with "
                            "FillOrder 2 (Pillow cannot open it either)", bps);
        uint16_t *r, *g, *b;
        if (!TIFFGetField(tif, TIFFTAG_COLORMAP, &r, &g, &b))
            return g4v_fail(err, G4V_ERR_IMAGE, "TIFF: a palette image without a ColorMap");
        int n = 1 << bps;
        for (int i = 0; i < 256; i++) cv->pal[3 * i] = cv->pal[3 * i + 1] = cv->pal[3 * i + 2] = 0;
        for (int i = 0; i < n; i++) {
            cv->pal[3 * i] = (uint8_t)(r[i] >> 8);
            cv->pal[3 * i + 1] = (uint8_t)(g[i] >> 8);
            cv->pal[3 * i + 2] = (uint8_t)(b[i] >> 8);
        }
        cv->kind = K_PAL;
        return G4V_OK;
    }
    case PHOTOMETRIC_RGB:
        if (!ok_extras || spp < 3) return refuse(err, what);
        if (bps == 8) {
            cv->kind = e0 == EXTRASAMPLE_ASSOCALPHA ? K_RGBA_PM : K_RGB;
            return G4V_OK;
        }
        if (bps == 16 && spp <= 4 && e0 != EXTRASAMPLE_ASSOCALPHA) {
            cv->kind = K_RGB16;
            return G4V_OK;
        }
        return refuse(err, what);
    case PHOTOMETRIC_SEPARATED: {
        uint16_t inkset = INKSET_CMYK;
        TIFFGetFieldDefaulted(tif, TIFFTAG_INKSET, &inkset);
        if (!ok_extras || bps != 8 || (n_extra && e0 != EXTRASAMPLE_UNSPECIFIED))
            return refuse(err, what);
        cv->kind = K_CMYK;
        return G4V_OK;
    }
    case PHOTOMETRIC_YCBCR:
        if (compression != COMPRESSION_JPEG)
            return refuse(err, "YCbCr without JPEG compression");
        if (spp != 3 || bps != 8) return refuse(err, what);
        /* libtiff + libjpeg convert to RGB (upsampled), exactly as Pillow asks them to */
        if (!TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB))
            return bad(c, err, "cannot set up the JPEG colour conversion");
        cv->kind = K_RGB;
        return G4V_OK;
    default:
        snprintf(what, sizeof what, "PhotometricInterpretation %u%s", photo,
                 photo == PHOTOMETRIC_CIELAB ? " (CIELab)" : "");
        return refuse(err, what);
    }
}

static int decode(tiff_ctx *c, g4v_pipe *p, g4v_err *err) {
    const struct g4v_pipe_view *v = g4v_pipe_view(p);
    TIFF *tif = c->tif;
    uint32_t w32 = 0, h32 = 0;
    if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w32) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h32))
        return g4v_fail(err, G4V_ERR_IMAGE, "TIFF: no image size");
    int st = g4v_image_check_size(w32, h32, v->opts, "TIFF", err);
    if (st) return st;
    conv cv;
    st = pick_mode(c, &cv, err);
    if (st) return st;
    int w = (int)w32, h = (int)h32;
    uint16_t orient = ORIENTATION_TOPLEFT;
    TIFFGetFieldDefaulted(tif, TIFFTAG_ORIENTATION, &orient);
    /* one row of samples, packed: what convert_row reads */
    uint64_t row_bytes = ((uint64_t)w * cv.spp * cv.bps + 7) / 8;
    if (TIFFIsTiled(tif)) {
        uint32_t tw = 0, th = 0;
        TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
        TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
        if (tw == 0 || th == 0 || (tw > (uint32_t)w + 15 && tw > 1024) ||
            (th > (uint32_t)h + 15 && th > 1024))
            return g4v_fail(err, G4V_ERR_IMAGE,
                            "TIFF: %ux%u tiles for a %dx%d image (corrupt or hostile)", tw, th,
                            w, h);
        uint64_t tile_row = ((uint64_t)tw * cv.spp * cv.bps + 7) / 8;
        uint64_t tile_bytes = (uint64_t)TIFFTileSize64(tif);
        if (tile_bytes < tile_row * th || tw * (uint64_t)cv.spp * cv.bps % 8)
            return bad(c, err, "unexpected tile layout");
        uint32_t across = (w32 + tw - 1) / tw;
        uint64_t band_row = tile_row * across;
        st = g4v_pipe_begin(p, w, h, v->opts->apply_exif ? orient : 1, err);
        if (st) return st;
        c->tile = g4v_malloc_large((size_t)tile_bytes);
        c->buf = g4v_malloc_large((size_t)(band_row * th));
        c->buf_large = 1;
        if (!c->tile || !c->buf)
            return g4v_fail(err, G4V_ERR_NOMEM, "TIFF: cannot allocate %llu bytes for tiles",
                            (unsigned long long)(band_row * th + tile_bytes));
        for (uint32_t y0 = 0; y0 < h32; y0 += th) {
            for (uint32_t t = 0; t < across; t++) {
                if (TIFFReadTile(tif, c->tile, t * tw, y0, 0, 0) < 0)
                    return bad(c, err, "cannot read a tile");
                for (uint32_t r = 0; r < th; r++)
                    memcpy(c->buf + r * band_row + t * tile_row, c->tile + r * tile_row,
                           (size_t)tile_row);
            }
            for (uint32_t r = 0; r < th && y0 + r < h32; r++) {
                convert_row(&cv, c->buf + r * band_row, g4v_pipe_row(p), w);
                g4v_pipe_push(p);
            }
        }
        return G4V_OK;
    }
    uint64_t line = (uint64_t)TIFFScanlineSize64(tif);
    if (line < row_bytes) return bad(c, err, "unexpected scanline size");
    uint32_t rps = h32;
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rps);
    if (rps == 0 || rps > h32) rps = h32;
    st = g4v_pipe_begin(p, w, h, v->opts->apply_exif ? orient : 1, err);
    if (st) return st;
    /* Whole strips, as Pillow reads them (a PackBits run may cross rows); a strip over 256 MB
     * (one strip for a huge image) is read a row at a time instead. */
    uint64_t strip = line * rps;
    if (strip <= (uint64_t)256 << 20) {
        c->buf = g4v_malloc_large((size_t)strip);
        c->buf_large = 1;
        if (!c->buf) return g4v_fail(err, G4V_ERR_NOMEM, "TIFF: out of memory for a strip");
        for (uint32_t y0 = 0; y0 < h32; y0 += rps) {
            uint32_t rows = h32 - y0 < rps ? h32 - y0 : rps;
            tmsize_t want = (tmsize_t)(line * rows);
            if (TIFFReadEncodedStrip(tif, TIFFComputeStrip(tif, y0, 0), c->buf, want) != want)
                return bad(c, err, "cannot read the pixels");
            for (uint32_t r = 0; r < rows; r++) {
                convert_row(&cv, c->buf + r * line, g4v_pipe_row(p), w);
                g4v_pipe_push(p);
            }
        }
        return G4V_OK;
    }
    c->buf = g4v_malloc((size_t)line);
    if (!c->buf) return g4v_fail(err, G4V_ERR_NOMEM, "TIFF: out of memory");
    for (uint32_t y = 0; y < h32; y++) {
        if (TIFFReadScanline(tif, c->buf, y, 0) < 0) return bad(c, err, "cannot read the pixels");
        convert_row(&cv, c->buf, g4v_pipe_row(p), w);
        g4v_pipe_push(p);
    }
    return G4V_OK;
}

int g4v_decode_tiff(const uint8_t *b, size_t n, g4v_pipe *p, g4v_err *err) {
    tiff_ctx c;
    memset(&c, 0, sizeof c);
    c.io.b = b, c.io.n = n;
    c.topts = TIFFOpenOptionsAlloc();
    if (!c.topts) return g4v_fail(err, G4V_ERR_NOMEM, "TIFF: out of memory");
    TIFFOpenOptionsSetErrorHandlerExtR(c.topts, on_error, &c.io);
    TIFFOpenOptionsSetWarningHandlerExtR(c.topts, on_warning, &c.io);
    /* libtiff's largest single allocation (a strip of compressed bytes, a codec's buffers):
     * what the largest image allowed could need, and not more than 256 MB */
    const g4v_image_opts *o = g4v_pipe_view(p)->opts;
    uint64_t cap = (uint64_t)o->max_dimension * 6 * 2 * 1024 + ((uint64_t)64 << 20);
    if (cap > (uint64_t)256 << 20) cap = (uint64_t)256 << 20;
    TIFFOpenOptionsSetMaxSingleMemAlloc(c.topts, (tmsize_t)cap);
    int st;
    c.tif = TIFFClientOpenExt("TIFF", "rm", &c.io, io_read, io_write, io_seek, io_close, io_size,
                              io_map, io_unmap, c.topts);
    if (!c.tif)
        st = g4v_fail(err, G4V_ERR_IMAGE, "TIFF: %s", c.io.msg[0] ? c.io.msg : "cannot open");
    else
        st = decode(&c, p, err);
    if (c.tif) TIFFClose(c.tif);
    TIFFOpenOptionsFree(c.topts);
    g4v_free_large(c.tile);
    if (c.buf_large)
        g4v_free_large(c.buf);
    else
        g4v_free(c.buf);
    return st;
}
