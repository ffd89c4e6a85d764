/* serve_format.h - the bodies `g4v serve` answers POST /v1/encode with, built in memory from a
 * g4v_result: .npy, safetensors, or JSON with the features in base64 (docs/SERVICE.md).
 *
 * Every format carries the same numbers: features [N, T] as float32 (or bf16 bit patterns), the
 * prompt ids (boi, image x N, eoi), the pooled grid, the original and target sizes, the budget.
 * .npy has room for the array only; the rest travels in X-G4V-* response headers (for every
 * format). Little-endian hosts only (the features are copied as they are in memory).
 */
#ifndef G4V_SERVICE_ENCODE_SERVE_FORMAT_H
#define G4V_SERVICE_ENCODE_SERVE_FORMAT_H

#include "g4v.h"

#include <stddef.h>

typedef enum { FMT_JSON, FMT_NPY, FMT_SAFETENSORS } serve_format;

/* The format an Accept header (may be NULL) asks for: the first media type in it we serve
 * ("application/json", "application/x-npy" / "application/npy", "application/x-safetensors" /
 * "application/safetensors"; "*" + "/" + "*" and "application/" + "*" mean JSON). -1 if it names
 * only types we do not serve. */
int serve_format_from_accept(const char *accept);
/* By name ("json", "npy", "safetensors"), for the format= query parameter; -1 if unknown. */
int serve_format_from_name(const char *name);
const char *serve_format_mime(serve_format f);

/* "255999 258880x266 258882": the prompt span in the CLI's compact form. */
void serve_prompt_compact(const g4v_result *r, char *buf, size_t cap);

/* Builds the body for r in format f (bf16: r->features_bf16 instead of the float32 features).
 * cache: "hit", "miss" or "off"; fingerprint: the model's. Returns a malloc'ed buffer and its
 * size in *len, or NULL when out of memory. */
char *serve_format_body(serve_format f, const g4v_result *r, int bf16, const char *cache,
                        const char *fingerprint, size_t *len);

/* Standard base64 (RFC 4648, with padding) of n bytes into out (4 * ceil(n / 3) bytes, no NUL). */
void serve_base64(const unsigned char *in, size_t n, char *out);

#endif
