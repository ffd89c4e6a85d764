/* npy.h - a minimal .npy (format 1.0) writer for 2-D float32, int32 and uint16 arrays (the
 * last for bf16 bit patterns, `g4v encode --bf16`), little endian.
 *
 * Used by the CLI subcommands (preprocess, encode). Writes to PATH.tmp-<pid> first and renames
 * it over PATH only when everything was written, so a failed run never leaves a truncated file
 * behind. Returns 0 on success, or -1 with errno describing the failure.
 */
#ifndef G4V_CLI_NPY_H
#define G4V_CLI_NPY_H

#include <stdint.h>

int g4v_npy_write_f32(const char *path, const float *x, long rows, long cols);
int g4v_npy_write_i32(const char *path, const int32_t *x, long rows, long cols);
int g4v_npy_write_u16(const char *path, const uint16_t *x, long rows, long cols);

#endif
