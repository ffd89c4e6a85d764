/* npy.h - the CLI's .npy files: a minimal writer (format 1.0) for 2-D float32, int32 and
 * uint16 arrays (the last for bf16 bit patterns, `g4v encode --bf16`), little endian, and a
 * reader for decoded images (uint8 [H, W, 3], `g4v encode IMAGE.npy`).
 *
 * Writers: used by preprocess and encode. They write to PATH.tmp-<pid> first and rename it over
 * PATH only when everything was written, so a failed run never leaves a truncated file behind.
 * They return 0 on success, or -1 with errno describing the failure.
 */
#ifndef G4V_CLI_NPY_H
#define G4V_CLI_NPY_H

#include <stddef.h>
#include <stdint.h>

/* The .npy (format 1.0) header for a 2-D C-order array of dtype descr ("<f4", "<u2", ...):
 * written into header, its length (a multiple of 64, at most 256) returned. */
size_t g4v_npy_header(char header[256], const char *descr, long rows, long cols);

int g4v_npy_write_f32(const char *path, const float *x, long rows, long cols);
int g4v_npy_write_i32(const char *path, const int32_t *x, long rows, long cols);
int g4v_npy_write_u16(const char *path, const uint16_t *x, long rows, long cols);

/* Reads path as a raw uint8 [H, W, 3] .npy (C order, format 1.0 - 3.0). Returns a g4v status:
 * G4V_OK with *rgb (malloc'ed, H * W * 3 bytes), *w and *h filled; or *not_npy = 1 (and G4V_OK,
 * *rgb NULL) when the file lacks the .npy magic, to be decoded by content instead; or
 * G4V_ERR_IO (cannot open or read), G4V_ERR_IMAGE (another dtype, order or shape, or
 * truncated), G4V_ERR_NOMEM, with a message naming path in msg (cap bytes). The header is read
 * first and the pixels only once the file is known to hold them all. */
int g4v_npy_read_rgb(const char *path, uint8_t **rgb, int *w, int *h, int *not_npy, char *msg,
                     size_t cap);

#endif
