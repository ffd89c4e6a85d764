/* hub_parse.h - the Hub client's two parsers of hostile bytes, apart from the network so that the
 * client (hub_pull.c, hub_vision.c) and the fuzz targets (fuzz/fuzz_hub_listing.c,
 * fuzz/fuzz_hub_header.c) run the same code:
 *
 *  - the API listing (GET /api/models/REPO/revision/REV?blobs=true): the commit and each file's
 *    name, size, git blob id or LFS sha256; every name checked before it is joined to a folder;
 *  - a safetensors header fetched by Range (hub_vision.c): its 8-byte length against the listed
 *    file size, then each tensor's data_offsets, dtype and shape against the data section, the
 *    vision tensors picked, sorted and checked for overlap, their places in the cut file, and the
 *    cut header written for them.
 *
 * Limits and rules: docs/LIMITS.md "Hub answers". No libcurl here (hub_fs.c's helpers and cJSON
 * only), so a fuzz target links it without a network stack. */
#ifndef G4V_HUB_PARSE_H
#define G4V_HUB_PARSE_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* docs/LIMITS.md "Hub answers" */
#define HUB_MAX_LISTING (32u << 20) /* the API's JSON listing */
#define HUB_MAX_HEADER (100u << 20) /* a safetensors header */
#define HUB_MAX_FILES 10000         /* files in a listing */
#define HUB_MAX_FILE_SIZE 9.0e15    /* bytes of one listed file (< 2^53: exact as JSON) */

/* One file of the listing. */
typedef struct hub_file {
    char *path;    /* rfilename: hub_path_safe, unique, never both a file and a folder */
    uint64_t size;
    char etag[72]; /* lfs sha256 (64 hex), else the git blob id (40 hex); lower case */
    int lfs;
} hub_file;

/* The listing text[0..n) (what. names the repo@rev in messages; rev: the revision asked, which
 * the listing's commit must equal when it is a commit). HUB_OK with the commit, *files (malloc'ed;
 * hub_files_free) and *nfiles; else HUB_ERR_INTEGRITY (or HUB_ERR_NOMEM) with the reason. */
int hub_parse_listing(const char *text, size_t n, const char *what, const char *rev,
                      char commit[41], hub_file **files, int *nfiles, char *err, size_t ecap);
void hub_files_free(hub_file *f, int n);

/* 1 for a name the vision-only checkpoint keeps (vision_tower., vision_embedder.,
 * embed_vision., with or without "model."). */
int hub_is_vision_tensor(const char *name);

/* One vision tensor of a source file. */
typedef struct hub_tensor {
    const char *name;         /* in hub_st.header */
    const struct cJSON *item; /* its entry in the source header */
    uint64_t begin, end;      /* in the source's data section */
    uint64_t dst;             /* in the cut file's data section: the sum of those before it */
} hub_tensor;

/* A parsed safetensors header and its vision tensors, sorted by begin, not overlapping. */
typedef struct hub_st {
    uint64_t size;        /* the file's listed size */
    uint64_t hlen;        /* the header's length (the 8-byte prefix) */
    struct cJSON *header;
    hub_tensor *t;
    int nt;
    uint64_t bytes;       /* of the vision tensors (the cut file's data section) */
} hub_st;

/* The 8-byte little-endian header length of a file of size bytes: at most HUB_MAX_HEADER and
 * inside the file. HUB_OK with *hlen, else HUB_ERR_INTEGRITY (path names the file). */
int hub_st_length(const uint8_t len8[8], const char *path, uint64_t size, uint64_t *hlen,
                  char *err, size_t ecap);

/* The header text[0..hlen) of a file of size bytes (hlen from hub_st_length) into *s: a JSON
 * object; each entry but __metadata__ (an object if present) has a dtype string, a shape of
 * integers >= 0 and data_offsets [begin, end] of integers with begin <= end <= the data section
 * (size - 8 - hlen), end - begin = elements x dtype size for a known dtype; no name twice; the
 * vision tensors do not overlap. HUB_OK, else HUB_ERR_INTEGRITY / HUB_ERR_NOMEM with the reason;
 * hub_st_free either way. */
int hub_st_parse(hub_st *s, const char *path, uint64_t size, const char *text, uint64_t hlen,
                 char *err, size_t ecap);
void hub_st_free(hub_st *s);

/* The cut header of s: __metadata__ as it was, the vision tensors at their dst offsets, padded
 * with spaces to a multiple of 8 as safetensors writes it. Deterministic (the same s gives the
 * same bytes: a resumed pull compares it with what is on disk). malloc'ed, *len bytes (a NUL
 * after them), or NULL when out of memory. */
char *hub_st_cut_header(const hub_st *s, uint64_t *len);

#endif
