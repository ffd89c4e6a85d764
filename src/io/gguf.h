/* gguf.h - one GGUF (version 2 or 3) file: its header (key/value metadata and tensor infos) read
 * and parsed with limits, tensor entries validated on demand, data ranges mapped like safetensors.
 *
 * Format (ggml's gguf.cpp is the reference; docs/GGUF.md §1): magic "GGUF", u32 version, u64
 * tensor count, u64 key/value count; the key/value pairs (string key, u32 value type, value;
 * strings are u64 length + bytes; arrays are u32 element type + u64 count + elements, never
 * nested); the tensor infos (string name, u32 n_dims <= 4, n_dims x u64 ne (ggml order, fastest
 * dimension first), u32 ggml type, u64 offset); padding to general.alignment (u32, a power of
 * two, default 32); the data section. All numbers little-endian.
 *
 * The header is read with pread, never mapped, and at most lim->max_header_bytes of it
 * (G4V_ERR_LIMIT beyond); tensor and key/value counts are limited by lim->max_tensor_count. Every
 * count and length is checked against the bytes that remain before anything is allocated for it,
 * so a hostile count fails as "runs past the end" (G4V_ERR_MODEL) or as a limit, never as a huge
 * allocation. Duplicate keys or tensor names, nested arrays, unknown value types, keys or names
 * with NUL bytes, names of 64 bytes or more (ggml's GGML_MAX_NAME) and a bad alignment are
 * G4V_ERR_MODEL. Tensor entries (type, shape, data range) are validated only when asked for
 * (g4v_gguf_tensor_check), so tensors we do not use (audio, exotic types) cannot fail a load.
 */
#ifndef G4V_IO_GGUF_H
#define G4V_IO_GGUF_H

#include "base/dtype.h"
#include "base/error.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"

#include <stddef.h>
#include <stdint.h>

#define G4V_GGUF_MAX_DIMS 4
#define G4V_GGUF_MAX_NAME 64 /* ggml's GGML_MAX_NAME: names are shorter */

/* GGUF metadata value types (gguf.h's enum gguf_type). */
enum {
    G4V_GGUF_U8 = 0,
    G4V_GGUF_I8 = 1,
    G4V_GGUF_U16 = 2,
    G4V_GGUF_I16 = 3,
    G4V_GGUF_U32 = 4,
    G4V_GGUF_I32 = 5,
    G4V_GGUF_F32 = 6,
    G4V_GGUF_BOOL = 7,
    G4V_GGUF_STRING = 8,
    G4V_GGUF_ARRAY = 9,
    G4V_GGUF_U64 = 10,
    G4V_GGUF_I64 = 11,
    G4V_GGUF_F64 = 12,
    G4V_GGUF_TYPE_COUNT
};

/* The ggml tensor types we read (ggml.h's enum ggml_type); others are only named. */
enum { G4V_GGML_F32 = 0, G4V_GGML_F16 = 1, G4V_GGML_Q8_0 = 8, G4V_GGML_BF16 = 30 };
/* Q8_0's block: G4V_Q8_BLOCK and G4V_Q8_0_BLOCK_BYTES, base/dtype.h. */

typedef struct g4v_gguf_kv {
    const char *key; /* NUL-terminated, in the file's string pool */
    uint32_t type;   /* G4V_GGUF_*; for an array, G4V_GGUF_ARRAY */
    uint32_t elem;   /* arrays: the element type (never ARRAY); else == type */
    uint64_t count;  /* arrays: elements; else 1 */
    size_t at;       /* offset of the value (arrays: of the first element) in the header buffer */
} g4v_gguf_kv;

typedef struct g4v_gguf_tensor {
    const char *name; /* NUL-terminated, in the string pool */
    int ndim;         /* 0..4 */
    int64_t ne[G4V_GGUF_MAX_DIMS]; /* ggml order: ne[0] is the fastest (last PyTorch) dimension */
    uint32_t type;                 /* ggml type, not validated until g4v_gguf_tensor_check */
    uint64_t offset;               /* relative to the data section, not validated either */
} g4v_gguf_tensor;

typedef struct g4v_gguf_file {
    g4v_st_file io; /* path, fd, file size, data_start/data_len, read_weights (header unused): the
                       mapping code of safetensors.c serves both formats */
    uint32_t version;
    uint64_t alignment;
    unsigned char *hdr; /* the header bytes read (metadata and tensor infos) */
    size_t hdr_len;
    char *pool; /* NUL-terminated copies of every key and tensor name */
    g4v_gguf_kv *kv;
    size_t nkv;
    g4v_gguf_tensor *t;
    size_t nt;
    const g4v_gguf_tensor **by_name; /* the tensors sorted by name (bsearch) */
} g4v_gguf_file;

/* Opens path and parses its header. On failure f is left closed. */
int g4v_gguf_open(const char *path, const g4v_checkpoint_limits *lim, g4v_gguf_file *f,
                  g4v_err *err);
/* Frees everything and closes the fd. Safe to call twice. */
void g4v_gguf_close(g4v_gguf_file *f);

/* The pair named key, or NULL. */
const g4v_gguf_kv *g4v_gguf_find(const g4v_gguf_file *f, const char *key);

/* Typed getters. Absent: G4V_OK with *present = 0 (present may be NULL only when the key is
 * required, which the caller checks). Wrong type or out of [lo, hi]: G4V_ERR_MODEL naming the key.
 * Integers accept any integer type; floats F32 or F64 (f32 widened exactly); strings are copied
 * into buf (cap bytes, G4V_ERR_MODEL if longer). */
int g4v_gguf_get_int(const g4v_gguf_file *f, const char *key, int64_t lo, int64_t hi,
                     int64_t *out, int *present, g4v_err *err);
int g4v_gguf_get_float(const g4v_gguf_file *f, const char *key, double *out, int *is_f32,
                       int *present, g4v_err *err);
int g4v_gguf_get_bool(const g4v_gguf_file *f, const char *key, int *out, int *present,
                      g4v_err *err);
int g4v_gguf_get_str(const g4v_gguf_file *f, const char *key, char *buf, size_t cap, int *present,
                     g4v_err *err);

/* The tensor named name, or NULL. */
const g4v_gguf_tensor *g4v_gguf_tensor_find(const g4v_gguf_file *f, const char *name);

/* Validates t for use: a type we read (F32, F16, BF16, Q8_0; else G4V_ERR_UNSUPPORTED naming the
 * tensor and its type), ne[0] a multiple of the type's block, the byte size without overflow,
 * the offset a multiple of the alignment and [offset, offset + bytes) inside the data section
 * (else G4V_ERR_MODEL). *nbytes receives the byte size. */
int g4v_gguf_tensor_check(const g4v_gguf_file *f, const g4v_gguf_tensor *t, uint64_t *nbytes,
                          g4v_err *err);

/* "F32", "Q4_K", ... or "type 77" for an id ggml does not define (buf holds it: 16 bytes). */
const char *g4v_ggml_type_name(uint32_t type, char buf[16]);

/* "F32", "MOSTLY_BF16", ... for general.file_type (llama_ftype), or "file type N" in buf. */
const char *g4v_gguf_file_type_name(int64_t ftype, char buf[24]);

#endif
