/* sha256.h - SHA-256 (FIPS 180-4), written here rather than taken from a library.
 *
 * Why our own: the only users are the model fingerprint and the feature cache's keys and entry
 * checksums; none of the libraries we already depend on exports a hash, and pulling in OpenSSL or
 * nettle for one function would add a build dependency to every user of libg4v. Portable C, no
 * SIMD or SHA extensions: ~0.25-0.4 GB/s per core, which the fingerprint spreads over threads
 * (one digest per tensor) and computes once per model (docs/SERVICE.md "Model identity").
 * Tested against the FIPS 180-4 / NIST CAVP vectors in tests/base/test_base.c.
 */
#ifndef G4V_BASE_SHA256_H
#define G4V_BASE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define G4V_SHA256_BYTES 32
#define G4V_SHA256_HEX 65 /* 64 hex digits + NUL */

typedef struct g4v_sha256_ctx {
    uint32_t h[8];
    uint64_t total; /* bytes hashed so far */
    uint8_t buf[64];
    size_t nbuf;
} g4v_sha256_ctx;

void g4v_sha256_init(g4v_sha256_ctx *s);
void g4v_sha256_update(g4v_sha256_ctx *s, const void *data, size_t n);
void g4v_sha256_final(g4v_sha256_ctx *s, uint8_t out[G4V_SHA256_BYTES]);

/* One-shot digest of data. */
void g4v_sha256(const void *data, size_t n, uint8_t out[G4V_SHA256_BYTES]);

/* Lower-case hex of a digest into hex (G4V_SHA256_HEX bytes). */
void g4v_sha256_hex(const uint8_t d[G4V_SHA256_BYTES], char hex[G4V_SHA256_HEX]);

/* Helpers for hashing structured values unambiguously: a u64 as 8 little-endian bytes, a
 * string as its length (u64) then its bytes. */
void g4v_sha256_u64(g4v_sha256_ctx *s, uint64_t v);
void g4v_sha256_str(g4v_sha256_ctx *s, const char *str);

#endif
