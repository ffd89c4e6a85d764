/* safetensors.h - one .safetensors file: its header read and parsed with limits, entries
 * validated on demand, and byte ranges of its data section memory-mapped read-only.
 *
 * Format: 8-byte little-endian header length N, N bytes of JSON {name: {dtype, shape,
 * data_offsets: [begin, end]}, "__metadata__": {...}}, then the data section; offsets are
 * relative to the data section. Only the header is read with read(); tensor data is never read
 * here, only mapped. Entries are validated when asked for (g4v_st_entry_parse), so tensors we do
 * not use (text weights, exotic dtypes) cost nothing and cannot fail the load.
 * Limits: header <= lim->max_header_bytes, entries <= lim->max_tensor_count (G4V_ERR_LIMIT),
 * rank <= 8 (G4V_ERR_MODEL).
 */
#ifndef G4V_IO_SAFETENSORS_H
#define G4V_IO_SAFETENSORS_H

#include "base/dtype.h"
#include "base/error.h"
#include "io/checkpoint.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define G4V_ST_MAX_RANK 8

typedef struct g4v_st_file {
    char path[4096];
    int fd; /* -1 once closed */
    uint64_t file_size;
    uint64_t data_start; /* 8 + header length */
    uint64_t data_len;   /* file_size - data_start */
    int read_weights;    /* g4v_checkpoint_limits.read_weights: g4v_st_map_ranges reads, not maps */
    cJSON *header;       /* the header object; NULL once released */
} g4v_st_file;

typedef struct g4v_st_entry {
    g4v_dtype dtype;
    int ndim;
    int64_t shape[G4V_ST_MAX_RANK];
    uint64_t begin, end; /* within the data section, begin <= end <= data_len */
} g4v_st_entry;

/* Opens path and parses its header. On failure f is left closed. */
int g4v_st_open(const char *path, const g4v_checkpoint_limits *lim, g4v_st_file *f, g4v_err *err);

/* Frees the parsed header (entries must have been parsed already); the fd stays open. */
void g4v_st_release_header(g4v_st_file *f);

/* Closes the fd and frees the header. Safe to call twice. */
void g4v_st_close(g4v_st_file *f);

/* Validates header entry item (named name): dtype BF16/F16/F32 (else G4V_ERR_UNSUPPORTED), shape
 * of non-negative integers whose element count does not overflow, data_offsets inside the data
 * section with begin <= end and end - begin == elements x dtype size (else G4V_ERR_MODEL). */
int g4v_st_entry_parse(const g4v_st_file *f, const cJSON *item, const char *name, g4v_st_entry *e,
                       g4v_err *err);

/* Formats a shape as "[a, b, c]" into buf (always terminated). */
void g4v_shape_str(char *buf, size_t cap, int ndim, const int64_t *shape);

/* A read-only mapping of part of a file, or (read_weights) a heap copy of it. */
typedef struct g4v_st_mapping {
    void *addr;
    size_t len;
    int copied; /* 1: g4v_malloc_large memory holding the bytes read, not a mapping */
} g4v_st_mapping;

/* Maps the n data-section ranges [begin[i], end[i]) (sorted by begin, not overlapping) of f,
 * merging neighbours less than merge_gap bytes apart into one mapping so that a file of many
 * small tensors costs few mappings while large unrelated spans (text weights between vision
 * blocks) stay unmapped. ptrs[i] receives range i's address. With f->read_weights the same spans
 * are read (pread) into heap blocks instead: nothing refers to the file afterwards, and a file
 * shorter than its header says (truncated meanwhile) is G4V_ERR_IO, never a SIGBUS. Mappings are
 * appended to *maps (grown with g4v_realloc; *nmaps updated) and must be released with
 * g4v_st_unmap. */
int g4v_st_map_ranges(const g4v_st_file *f, size_t n, const uint64_t *begin, const uint64_t *end,
                      uint64_t merge_gap, const void **ptrs, g4v_st_mapping **maps, size_t *nmaps,
                      g4v_err *err);
void g4v_st_unmap(g4v_st_mapping *maps, size_t nmaps);

#endif
