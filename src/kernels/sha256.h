/* sha256.h - SHA-256 (FIPS 180-4), written here rather than taken from a library.
 *
 * Why our own: the only users are the model fingerprint and the feature cache's keys and entry
 * checksums; none of the libraries we already depend on exports a hash, and pulling in OpenSSL or
 * nettle for one function would add a build dependency to every user of libg4v. The 64-byte block
 * compression is a kernel family (sha256_blocks in variants.def): plain C (portable/sha256.c,
 * ~0.15-0.25 GB/s per core) and the x86 SHA extensions (x86_sha/sha256_sha.c, several times
 * faster), chosen from the kernel table when a hash is started; G4V_ISA=portable forces the plain
 * one. The fingerprint also spreads the work over threads (one digest per tensor) and is
 * computed once per model (docs/SERVICE.md "Model identity").
 * Tested against the FIPS 180-4 / NIST CAVP vectors (tests/base/test_base.c); every compression
 * against the portable one (tests/kernels/test_variants.c).
 */
#ifndef G4V_KERNELS_SHA256_H
#define G4V_KERNELS_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define G4V_SHA256_BYTES 32
#define G4V_SHA256_HEX 65 /* 64 hex digits + NUL */

/* The 64 round constants of FIPS 180-4 §4.2.2, shared by every compression
 * (sha256_k.c). */
extern const uint32_t g4v_sha256_k[64];

/* Compresses nblocks 64-byte blocks of p into the state h: what a variant implements. */
typedef void g4v_sha256_blocks_fn(uint32_t h[8], const uint8_t *p, size_t nblocks);

typedef struct g4v_sha256_ctx {
    g4v_sha256_blocks_fn *blocks; /* the current kernel table's, taken by g4v_sha256_init */
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
