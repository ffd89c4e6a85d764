/* webp.c - WebP via libwebp's animation decoder, first frame, exactly as Pillow 9.4 does it.
 *
 * Pillow (built with WebP animation support, as Debian's is) opens every WebP through
 * WebPAnimDecoder with default options (RGBA output, canvas composited from a transparent
 * black start) and takes frame 0; we make the same calls and drop alpha (convert("RGB")). The
 * orientation comes from the first "EXIF" chunk (Pillow puts it in info["exif"]); WebP XMP is
 * not consulted by Pillow 9.4. The canvas size is checked against the limits from the demuxer
 * before the decoder allocates its canvas. Truncated files are refused by the demuxer.
 */
#include "image/image_internal.h"

#include <webp/decode.h>
#include <webp/demux.h>

int g4v_decode_webp(const uint8_t *b, size_t n, g4v_pipe *p, g4v_err *err) {
    WebPData data = {b, n};
    WebPDemuxer *demux = WebPDemux(&data);
    if (!demux)
        return g4v_fail(err, G4V_ERR_IMAGE, "WebP: invalid or truncated file (%zu bytes)", n);
    int w = (int)WebPDemuxGetI(demux, WEBP_FF_CANVAS_WIDTH);
    int h = (int)WebPDemuxGetI(demux, WEBP_FF_CANVAS_HEIGHT);
    int st = g4v_image_check_size(w, h, g4v_pipe_view(p)->opts, "WebP", err);
    int orientation = G4V_EXIF_ABSENT;
    WebPChunkIterator it;
    if (!st && WebPDemuxGetChunk(demux, "EXIF", 1, &it)) {
        orientation = g4v_exif_orientation(it.chunk.bytes, it.chunk.size);
        WebPDemuxReleaseChunkIterator(&it);
    }
    WebPDemuxDelete(demux);
    if (st) return st;

    WebPAnimDecoderOptions o;
    if (!WebPAnimDecoderOptionsInit(&o))
        return g4v_fail(err, G4V_ERR_INTERNAL, "WebP: libwebp version mismatch");
    o.color_mode = MODE_RGBA;
    o.use_threads = 0;
    WebPAnimDecoder *dec = WebPAnimDecoderNew(&data, &o);
    if (!dec) return g4v_fail(err, G4V_ERR_IMAGE, "WebP: cannot decode (corrupt data or out of memory)");
    uint8_t *canvas = NULL;
    int timestamp = 0;
    if (!WebPAnimDecoderGetNext(dec, &canvas, &timestamp) || !canvas) {
        WebPAnimDecoderDelete(dec);
        return g4v_fail(err, G4V_ERR_IMAGE, "WebP: cannot decode the first frame (corrupt data)");
    }
    st = g4v_pipe_begin(p, w, h, orientation, err);
    if (!st)
        for (int y = 0; y < h; y++) {
            g4v_cvt_rgba(canvas + (size_t)y * w * 4, g4v_pipe_row(p), w);
            g4v_pipe_push(p);
        }
    WebPAnimDecoderDelete(dec);
    return st;
}
