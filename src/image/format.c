/* format.c - which image format a byte string holds, from its magic bytes (never a file name).
 *
 * Decoded: JPEG, PNG, GIF, WebP, BMP, TIFF (and BigTIFF). Recognised only to name them in the error
 * message: AVIF/HEIF and other ISO-BMFF files, JPEG 2000, JPEG XL, ICO/CUR, PSD, QOI, PNM, SVG/XML, PDF.
 */
#include "image/image_internal.h"

#include <string.h>

static int has(const uint8_t *p, size_t n, size_t off, const char *magic, size_t len) {
    return n >= off + len && memcmp(p + off, magic, len) == 0;
}

static const char *iso_bmff_name(const uint8_t *p, size_t n) {
    /* ftyp box: size(4) "ftyp" major_brand(4) minor(4) compatible brands... */
    if (has(p, n, 8, "avif", 4) || has(p, n, 8, "avis", 4)) return "AVIF";
    static const char *const heif[] = {"heic", "heix", "hevc", "hevx", "heim",
                                       "heis", "mif1", "msf1"};
    for (size_t i = 0; i < sizeof heif / sizeof heif[0]; i++)
        if (has(p, n, 8, heif[i], 4)) return "HEIF/HEIC";
    return "ISO BMFF (MP4/QuickTime family)";
}

g4v_image_format g4v_image_sniff(const uint8_t *p, size_t n, const char **name) {
    const char *nm = "unknown";
    g4v_image_format f = G4V_FMT_OTHER;
    if (has(p, n, 0, "\xFF\xD8\xFF", 3)) {
        nm = "JPEG", f = G4V_FMT_JPEG;
    } else if (has(p, n, 0, "\x89PNG\r\n\x1a\n", 8)) {
        nm = "PNG", f = G4V_FMT_PNG;
    } else if (has(p, n, 0, "GIF87a", 6) || has(p, n, 0, "GIF89a", 6)) {
        nm = "GIF", f = G4V_FMT_GIF;
    } else if (has(p, n, 0, "RIFF", 4) && has(p, n, 8, "WEBP", 4)) {
        nm = "WebP", f = G4V_FMT_WEBP;
    } else if (has(p, n, 0, "BM", 2)) {
        nm = "BMP", f = G4V_FMT_BMP;
    } else if (has(p, n, 0, "II*\0", 4) || has(p, n, 0, "MM\0*", 4)) {
        nm = "TIFF", f = G4V_FMT_TIFF;
    } else if (has(p, n, 0, "II+\0", 4) || has(p, n, 0, "MM\0+", 4)) {
        nm = "BigTIFF", f = G4V_FMT_TIFF;
    } else if (has(p, n, 4, "ftyp", 4)) {
        nm = iso_bmff_name(p, n);
    } else if (has(p, n, 0, "\0\0\0\x0cjP  \r\n\x87\n", 12) || has(p, n, 0, "\xFF\x4F\xFF\x51", 4)) {
        nm = "JPEG 2000";
    } else if (has(p, n, 0, "\xFF\x0A", 2) || has(p, n, 0, "\0\0\0\x0cJXL \r\n\x87\n", 12)) {
        nm = "JPEG XL";
    } else if (has(p, n, 0, "\0\0\1\0", 4)) {
        nm = "ICO";
    } else if (has(p, n, 0, "\0\0\2\0", 4)) {
        nm = "CUR";
    } else if (has(p, n, 0, "8BPS", 4)) {
        nm = "PSD";
    } else if (has(p, n, 0, "qoif", 4)) {
        nm = "QOI";
    } else if (has(p, n, 0, "%PDF", 4)) {
        nm = "PDF";
    } else if (has(p, n, 0, "<?xml", 5) || has(p, n, 0, "<svg", 4)) {
        nm = "SVG/XML";
    } else if (n >= 3 && p[0] == 'P' && p[1] >= '1' && p[1] <= '7' &&
               (p[2] == ' ' || p[2] == '\n' || p[2] == '\r' || p[2] == '\t')) {
        nm = "PNM (PBM/PGM/PPM/PAM)";
    } else {
        f = G4V_FMT_UNKNOWN;
    }
    if (name) *name = nm;
    return f;
}
