/* frontend.h - small helpers the front ends (the g4v CLI, g4v serve, g4v chat) share. They are
 * not part of libg4v: the front ends are clients of g4v.h only (nothing under tools/, chat/ or
 * common/ includes a header from src/: tests/docs/test_front_end_api.py), and what they need
 * beyond it -- a clock, UTF-8 checks for text they print as JSON, the locked JSON parse,
 * SHA-256, number parsing for their options -- is declared here (docs/API.md "Front ends").
 * Where the library has the same thing and one copy matters (the cJSON lock, the SHA-256
 * kernels) the helper calls the public API (g4v_json_lock, g4v_hash_*); the clock and the UTF-8
 * checks are this folder's own code.
 */
#ifndef G4V_FRONTEND_H
#define G4V_FRONTEND_H

#include "g4v.h"

#include <stddef.h>
#include <stdint.h>

/* The clock and the UTF-8 helpers (utf8.c) are the front ends' own (tests/common/test_frontend.c);
 * the check of one UTF-8 sequence is the library's, g4v_utf8_seq_len (g4v.h). */
/* Seconds on CLOCK_MONOTONIC; only differences are meaningful. */
double fe_now_s(void);
/* 1 if s[0..n) is valid UTF-8 throughout. */
int fe_utf8_valid(const char *s, size_t n);
/* In place on a NUL-terminated string: every byte that starts no valid sequence becomes '?'
 * (JSON must be UTF-8; paths and client text may not be). */
void fe_utf8_sanitize(char *s);
/* A malloc'ed, NUL-terminated copy of s[0..n), sanitized as fe_utf8_sanitize does (a token may
 * end inside a character); NULL when out of memory. */
char *fe_utf8_copy(const char *s, size_t n);

/* cJSON's length-bounded parse (end: where it stopped) under libg4v's cJSON lock (g4v_json_lock:
 * cJSON's global error state is written by every parse, and there must be one lock). g4v serve's
 * chat requests are parsed here while the library may parse a model's JSON in another thread. */
struct cJSON;
struct cJSON *fe_json_parse_text(const char *text, size_t n, const char **end);

/* The one number parser of the front ends: the whole of s as a base-10 integer in [lo, hi]
 * (fe_parse_int) or a finite decimal number in [lo, hi] (fe_parse_double) into *out. 0 on
 * success, -1 (*out untouched) for empty text, trailing characters, overflow or out of range. */
int fe_parse_int(const char *s, long long lo, long long hi, long long *out);
int fe_parse_double(const char *s, double lo, double hi, double *out);

/* The shortest decimal text (%.15g, %.16g or %.17g) that reads back as exactly v, for JSON numbers
 * a program compares with what it computes (cJSON's own printing settles for 15 digits when they
 * read back within an epsilon: 1.001 for 1.0010000000000001). Non-finite v gives "null", which
 * JSON can hold. Returns buf. */
char *fe_format_double(char *buf, size_t cap, double v);

/* libg4v's SHA-256 (g4v_hash_*, g4v.h: FIPS 180-4, with the SHA extensions where the CPU has
 * them) for the chat prompt cache's file names and checksums. */
#define FE_SHA256_BYTES 32
typedef struct fe_sha256_ctx {
    g4v_hash_state state;
} fe_sha256_ctx;
void fe_sha256_init(fe_sha256_ctx *s);
void fe_sha256_update(fe_sha256_ctx *s, const void *data, size_t n);
void fe_sha256_final(fe_sha256_ctx *s, uint8_t out[FE_SHA256_BYTES]);
/* One-shot digest of data[0..n). */
void fe_sha256(const void *data, size_t n, uint8_t out[FE_SHA256_BYTES]);

/* g4v info --json and GET /v1/info (info_json.c): "amx": {usable, reason, self_test} (the AMX
 * dispatch decision, docs/ARCHITECTURE.md §3 "AMX") and "sharpness": {threshold, sharp_layers,
 * precise_layers, layers: [{layer, sharpness, sharp, runs_precise}]} (docs/NUMERICS.md §6.5),
 * added to parent; 0 when out of memory. */
int fe_info_amx_json(struct cJSON *parent, const g4v_model_info *m);
int fe_info_sharpness_json(struct cJSON *parent, const g4v_model_info *m);
/* One line for the text form: "2 of 16 layers sharp (logit std > 2.0), 2 run as PRECISE: 3,7". */
void fe_info_sharpness_line(const g4v_model_info *m, char *buf, size_t cap);

#endif
