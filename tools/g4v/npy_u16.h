/* npy_u16.h - .npy writer for 2-D uint16 arrays ('<u2'), used for bf16 bit patterns
 * (`g4v encode --bf16`); same atomic write-then-rename behaviour as npy.h. Little-endian hosts. */
#ifndef G4V_CLI_NPY_U16_H
#define G4V_CLI_NPY_U16_H

#include <stdint.h>

int g4v_npy_write_u16(const char *path, const uint16_t *x, long rows, long cols);

#endif
