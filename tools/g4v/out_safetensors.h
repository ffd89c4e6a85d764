/* out_safetensors.h - the CLI's .safetensors writer (out_st_*; the library's g4v_st_* in
 * src/io is the reader): streams many 2-D tensors into one file.
 *
 * The header (which must come first) is only known once every tensor has been seen, so tensor
 * data goes to PATH.tmp-data-<pid> as it arrives; out_st_close writes the header to
 * PATH.tmp-<pid>, appends the data, and renames over PATH. A failed run leaves no partial PATH
 * behind. Format: 8-byte little-endian header length, JSON header (padded with spaces to a multiple
 * of 8), data. Per-tensor metadata goes in "__metadata__" as "<tensor>.<key>": "<string value>"
 * (safetensors allows only string -> string there).
 */
#ifndef G4V_CLI_OUT_SAFETENSORS_H
#define G4V_CLI_OUT_SAFETENSORS_H

#include <stddef.h>

typedef struct out_st_writer out_st_writer;

/* NULL with errno set on failure. */
out_st_writer *out_st_open(const char *path);
/* dtype "F32" or "BF16"; data holds rows*cols elements of it. name must be unique (out_st_add
 * makes it so by appending "#2", "#3"...; the final name is copied to final_name, cap bytes).
 * meta: pairs key, value, NULL-terminated. 0 or -1 (errno). */
int out_st_add(out_st_writer *w, const char *name, const char *dtype, const void *data, long rows,
               long cols, const char *const *meta, char *final_name, size_t cap);
/* Finishes (ok != 0) or abandons (ok == 0) the file; frees w. 0 or -1 (errno). */
int out_st_close(out_st_writer *w, int ok);

#endif
