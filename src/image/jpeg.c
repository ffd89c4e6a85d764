/* jpeg.c - JPEG via libjpeg(-turbo) with default decompression parameters, as Pillow does.
 *
 * Pillow asks libjpeg for GRAYSCALE (1 component), RGB (3) or CMYK (4, always unpacked as Adobe
 * inverted "CMYK;I") and changes nothing else: ISLOW DCT, fancy upsampling, block smoothing, no
 * scaling. We do the same, then convert with Pillow's rules (convert.c). The orientation comes
 * from the first APP1 segment starting "Exif\0" (Pillow 9.4 keeps the first; JPEG XMP is not
 * consulted before Pillow 11.2.1). Only 8-bit samples (as Pillow).
 * Errors: libjpeg's error_exit longjmps back here. Warnings that mean pixels are missing or
 * invented (premature end of data, bad entropy codes, lost restart markers) are errors too, so a
 * truncated or corrupt file never comes back as a partly gray image; harmless warnings (extra
 * bytes before a marker, unknown JFIF revision) are ignored as Pillow ignores them.
 * Cap: at most G4V_JPEG_MAX_SCANS scans (G4V_ERR_UNSUPPORTED: fixed, not a caller's limit).
 * Each progressive scan walks the whole image, and an AC scan of an empty band costs ~16 bytes,
 * so without it a file of 10,000 repeated scans (under 200 KB) keeps a 2048 x 2048 decode busy
 * for tens of seconds.
 * libjpeg-turbo's fuzzers cap scans at 500; we cap at 100, 5-10x what real encoders write
 * (libjpeg's progression: 6-10 scans), so the work stays within ~100 passes over the image.
 * Pillow has no cap: files with more scans decode there and are refused here.
 */
#include "image/image_internal.h"

#include "base/alloc.h"

#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE */
#include <string.h>

#include <jpeglib.h> /* before jerror.h: it sets the configuration jerror.h tests */
#include <jerror.h>

#define G4V_JPEG_MAX_SCANS 100

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
    int too_many_scans;
#ifdef G4V_FAULT_INJECTION
    struct jpeg_memory_mgr mem; /* libjpeg's own memory methods, wrapped below */
#endif
} jerr_mgr;

#ifdef G4V_FAULT_INJECTION
/* Fault-injection builds route libjpeg's allocations through our injector (tests/fault): its
 * memory manager is a table of methods, wrapped here once jpeg_create_decompress has made it
 * (that call's own few allocations, the manager itself, stay plain malloc). An injected failure
 * does what libjpeg does when malloc fails: ERREXIT(JERR_OUT_OF_MEMORY). */
#define JMEM(c) (&((jerr_mgr *)(c)->err)->mem)
#define INJECT(c) (g4v_alloc_injected() ? ERREXIT(c, JERR_OUT_OF_MEMORY) : (void)0)
static void *inj_small(j_common_ptr c, int pool, size_t n) {
    INJECT(c);
    return JMEM(c)->alloc_small(c, pool, n);
}
static void *inj_large(j_common_ptr c, int pool, size_t n) {
    INJECT(c);
    return JMEM(c)->alloc_large(c, pool, n);
}
static JSAMPARRAY inj_sarray(j_common_ptr c, int pool, JDIMENSION w, JDIMENSION rows) {
    INJECT(c);
    return JMEM(c)->alloc_sarray(c, pool, w, rows);
}
static JBLOCKARRAY inj_barray(j_common_ptr c, int pool, JDIMENSION w, JDIMENSION rows) {
    INJECT(c);
    return JMEM(c)->alloc_barray(c, pool, w, rows);
}
static void inj_realize(j_common_ptr c) { /* allocates the whole-image coefficient buffers */
    INJECT(c);
    JMEM(c)->realize_virt_arrays(c);
}
static void wrap_memory(j_decompress_ptr d, jerr_mgr *e) {
    e->mem = *d->mem;
    d->mem->alloc_small = inj_small;
    d->mem->alloc_large = inj_large;
    d->mem->alloc_sarray = inj_sarray;
    d->mem->alloc_barray = inj_barray;
    d->mem->realize_virt_arrays = inj_realize;
}
#endif

static void on_error(j_common_ptr cinfo) {
    jerr_mgr *e = (jerr_mgr *)cinfo->err;
    cinfo->err->format_message(cinfo, e->msg);
    longjmp(e->jump, 1);
}

static void on_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return; /* trace messages */
    switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
#if JPEG_LIB_VERSION >= 70 || defined(D_ARITH_CODING_SUPPORTED)
    case JWRN_ARITH_BAD_CODE:
#endif
    case JWRN_MUST_RESYNC: on_error(cinfo); break;
    default: break; /* benign: Pillow decodes these files normally */
    }
}

/* Called by libjpeg as it consumes input (per iMCU row and per marker). */
static void on_progress(j_common_ptr cinfo) {
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    if (d->input_scan_number > G4V_JPEG_MAX_SCANS) {
        jerr_mgr *e = (jerr_mgr *)cinfo->err;
        e->too_many_scans = 1;
        longjmp(e->jump, 1);
    }
}

static int exif_orientation(j_decompress_ptr d) {
    for (jpeg_saved_marker_ptr m = d->marker_list; m; m = m->next)
        if (m->marker == JPEG_APP0 + 1 && m->data_length >= 5 && !memcmp(m->data, "Exif\0", 5))
            return g4v_exif_orientation(m->data, m->data_length); /* the first one only */
    return G4V_EXIF_ABSENT;
}

int g4v_decode_jpeg(const uint8_t *b, size_t n, g4v_pipe *p, g4v_err *err) {
    struct jpeg_decompress_struct d;
    jerr_mgr je;
    struct jpeg_progress_mgr progress = {on_progress, 0, 0, 0, 0};
    uint8_t *volatile tmp = NULL;
    volatile int st = G4V_OK;
    memset(&d, 0, sizeof d);
    d.err = jpeg_std_error(&je.pub);
    je.pub.error_exit = on_error;
    je.pub.emit_message = on_message;
    je.msg[0] = 0;
    je.too_many_scans = 0;
    if (setjmp(je.jump)) {
        if (!st && je.too_many_scans)
            st = g4v_fail(err, G4V_ERR_UNSUPPORTED,
                          "JPEG: more than %d scans (a hostile progressive file: each scan "
                          "re-reads the whole %ux%u image)",
                          G4V_JPEG_MAX_SCANS, d.image_width, d.image_height);
        /* libjpeg refuses sides above 65500 itself, before our g4v_pipe_begin: over the caller's
         * limits that is G4V_ERR_LIMIT as for any format, else libjpeg's own maximum. */
        if (!st && je.pub.msg_code == JERR_IMAGE_TOO_BIG) {
            st = g4v_image_check_size(d.image_width, d.image_height, g4v_pipe_view(p)->opts, "JPEG",
                                      err);
            if (!st)
                st = g4v_fail(err, G4V_ERR_UNSUPPORTED,
                              "JPEG: image is %ux%u, above libjpeg's maximum (%s)", d.image_width,
                              d.image_height, je.msg);
        }
        if (!st && je.pub.msg_code == JERR_OUT_OF_MEMORY)
            st = g4v_fail(err, G4V_ERR_NOMEM, "JPEG: out of memory (%s)", je.msg);
        if (!st)
            st = g4v_fail(err, G4V_ERR_IMAGE, "JPEG: %s%s", je.msg,
                          je.pub.msg_code == JWRN_JPEG_EOF ? " (truncated file?)" : "");
        jpeg_destroy_decompress(&d);
        g4v_free(tmp);
        return st;
    }
    jpeg_create_decompress(&d);
#ifdef G4V_FAULT_INJECTION
    wrap_memory(&d, &je);
#endif
    d.progress = &progress;
    jpeg_mem_src(&d, b, (unsigned long)n);
    jpeg_save_markers(&d, JPEG_APP0 + 1, 0xFFFF);
    jpeg_read_header(&d, TRUE);
    int comps = d.num_components;
    if (comps == 1)
        d.out_color_space = JCS_GRAYSCALE;
    else if (comps == 3)
        d.out_color_space = JCS_RGB;
    else if (comps == 4)
        d.out_color_space = JCS_CMYK;
    else {
        st = g4v_fail(err, G4V_ERR_UNSUPPORTED, "JPEG: %d-component images are not supported",
                      comps);
        jpeg_destroy_decompress(&d);
        return st;
    }
    int orientation = exif_orientation(&d);
    st = g4v_pipe_begin(p, (int)d.image_width, (int)d.image_height, orientation, err);
    if (st) {
        jpeg_destroy_decompress(&d);
        return st;
    }
    jpeg_start_decompress(&d);
    int w = (int)d.output_width;
    if (comps != 3) {
        tmp = g4v_malloc((size_t)w * comps);
        if (!tmp) {
            st = g4v_fail(err, G4V_ERR_NOMEM, "JPEG: out of memory");
            longjmp(je.jump, 1);
        }
    }
    while (d.output_scanline < d.output_height) {
        uint8_t *row = g4v_pipe_row(p);
        JSAMPROW r = comps == 3 ? row : tmp;
        if (jpeg_read_scanlines(&d, &r, 1) != 1) {
            st = g4v_fail(err, G4V_ERR_IMAGE, "JPEG: decoder stopped at row %u of %u",
                          d.output_scanline, d.output_height);
            longjmp(je.jump, 1);
        }
        if (comps == 1)
            g4v_cvt_gray(tmp, row, w);
        else if (comps == 4)
            g4v_cvt_cmyk_inverted(tmp, row, w);
        g4v_pipe_push(p);
    }
    /* No jpeg_finish_decompress: every row is decoded; what follows the last scan (EOI, trailing
     * bytes) does not matter, as for Pillow. */
    jpeg_destroy_decompress(&d);
    g4v_free(tmp);
    return G4V_OK;
}
