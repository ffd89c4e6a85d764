/* hash.c - g4v_hash_* (g4v.h): libg4v's SHA-256 (kernels/sha256.h) for programs around the
 * library, in caller-owned storage of a frozen size. */
#include "g4v.h"

#include "kernels/sha256.h"

_Static_assert(sizeof(g4v_sha256_ctx) <= sizeof(g4v_hash_state), "g4v_hash_state too small");
_Static_assert(_Alignof(g4v_sha256_ctx) <= _Alignof(g4v_hash_state), "g4v_hash_state misaligned");
_Static_assert(G4V_HASH_BYTES == G4V_SHA256_BYTES, "SHA-256 digest size");

static g4v_sha256_ctx *ctx_of(g4v_hash_state *s) { return (g4v_sha256_ctx *)(void *)s->opaque; }

void g4v_hash_init(g4v_hash_state *s) { g4v_sha256_init(ctx_of(s)); }

void g4v_hash_update(g4v_hash_state *s, const void *data, size_t n) {
    g4v_sha256_update(ctx_of(s), data, n);
}

void g4v_hash_final(g4v_hash_state *s, uint8_t digest[G4V_HASH_BYTES]) {
    g4v_sha256_final(ctx_of(s), digest);
}
