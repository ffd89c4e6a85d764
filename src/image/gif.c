/* gif.c - GIF via giflib: the first frame as Pillow 9.4 presents it, converted to RGB.
 *
 * Pillow's frame 0: the canvas is the logical screen, enlarged to hold the frame if it sticks
 * out; it starts filled with the frame's transparent index (graphic control extension before
 * the image) or else index 0; the frame is decoded into it with transparency ignored; the
 * palette is the local colour table, else the global one, with the gray ramp (i, i, i) for
 * indices past its end or when there is none (Pillow's "L" mode gives the same values).
 * convert("RGB") then looks every index up: transparent pixels show their palette colour.
 * Like Pillow, LZW data that ends before the frame is full is an error ("truncated"). Stricter
 * than Pillow: a byte that is not a GIF record before the first image is an error (Pillow skips
 * it).
 */
#include "image/image_internal.h"

#include "base/alloc.h"

#include <string.h>

#include <gif_lib.h>

typedef struct {
    const uint8_t *b;
    size_t n, pos;
} gif_src;

static int on_read(GifFileType *g, GifByteType *out, int len) {
    gif_src *s = g->UserData;
    size_t left = s->n - s->pos, k = len < 0 ? 0 : (size_t)len;
    if (k > left) k = left;
    memcpy(out, s->b + s->pos, k);
    s->pos += k;
    return (int)k;
}

static int gif_fail(g4v_err *err, int code, const char *what) {
    const char *m = GifErrorString(code);
    return g4v_fail(err, G4V_ERR_IMAGE, "GIF: %s: %s", what, m ? m : "unknown error");
}

/* Reads records up to the first image descriptor; *transparency gets the last GCE index. */
static int seek_first_image(GifFileType *g, int *transparency, g4v_err *err) {
    for (;;) {
        GifRecordType rec;
        if (DGifGetRecordType(g, &rec) == GIF_ERROR) return gif_fail(err, g->Error, "reading");
        if (rec == IMAGE_DESC_RECORD_TYPE) return G4V_OK;
        if (rec == TERMINATE_RECORD_TYPE)
            return g4v_fail(err, G4V_ERR_IMAGE, "GIF: the file holds no image");
        if (rec != EXTENSION_RECORD_TYPE) continue;
        int code;
        GifByteType *ext;
        if (DGifGetExtension(g, &code, &ext) == GIF_ERROR)
            return gif_fail(err, g->Error, "reading an extension");
        if (code == GRAPHICS_EXT_FUNC_CODE && ext && ext[0] >= 4 && (ext[1] & 1))
            *transparency = ext[4];
        while (ext) {
            if (DGifGetExtensionNext(g, &ext) == GIF_ERROR)
                return gif_fail(err, g->Error, "reading an extension");
        }
    }
}

static int decode(GifFileType *g, g4v_pipe *p, uint8_t **canvas_out, g4v_err *err) {
    int transparency = -1;
    int st = seek_first_image(g, &transparency, err);
    if (st) return st;
    if (DGifGetImageDesc(g) == GIF_ERROR) return gif_fail(err, g->Error, "image descriptor");
    const GifImageDesc *d = &g->Image;
    long long fx = d->Left, fy = d->Top, fw = d->Width, fh = d->Height;
    if (fw <= 0 || fh <= 0)
        return g4v_fail(err, G4V_ERR_IMAGE, "GIF: empty first frame (%lldx%lld)", fw, fh);
    long long cw = g->SWidth > fx + fw ? g->SWidth : fx + fw;
    long long ch = g->SHeight > fy + fh ? g->SHeight : fy + fh;
    const struct g4v_pipe_view *v = g4v_pipe_view(p);
    st = g4v_image_check_size(cw, ch, v->opts, "GIF", err);
    if (st) return st;
    const ColorMapObject *cm = d->ColorMap ? d->ColorMap : g->SColorMap;
    uint8_t pal[768];
    g4v_palette_build(pal, cm ? (const uint8_t *)cm->Colors : pal, cm ? cm->ColorCount : 0, 3, 0);
    uint8_t *canvas = g4v_malloc_large((size_t)cw * ch);
    if (!canvas) return g4v_fail(err, G4V_ERR_NOMEM, "GIF: cannot allocate a %lldx%lld canvas", cw, ch);
    *canvas_out = canvas;
    memset(canvas, transparency >= 0 ? transparency : 0, (size_t)cw * ch);
    /* Interlaced frames store rows in four passes: every 8th from 0, every 8th from 4, every 4th
     * from 2, every 2nd from 1. */
    static const int start[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
    int passes = d->Interlace ? 4 : 1;
    for (int pass = 0; pass < passes; pass++)
        for (long long y = d->Interlace ? start[pass] : 0; y < fh; y += d->Interlace ? step[pass] : 1)
            if (DGifGetLine(g, canvas + (size_t)(fy + y) * cw + fx, (int)fw) == GIF_ERROR)
                return gif_fail(err, g->Error, "image data");
    st = g4v_pipe_begin(p, (int)cw, (int)ch, G4V_EXIF_ABSENT, err);
    if (st) return st;
    for (long long y = 0; y < ch; y++) {
        g4v_cvt_indexed(canvas + (size_t)y * cw, g4v_pipe_row(p), (int)cw, pal);
        g4v_pipe_push(p);
    }
    return G4V_OK;
}

int g4v_decode_gif(const uint8_t *b, size_t n, g4v_pipe *p, g4v_err *err) {
    gif_src src = {b, n, 0};
    int e = 0;
    GifFileType *g = DGifOpen(&src, on_read, &e);
    if (!g) return gif_fail(err, e, "header");
    uint8_t *canvas = NULL;
    int st = decode(g, p, &canvas, err);
    g4v_free_large(canvas);
    DGifCloseFile(g, &e);
    return st;
}
