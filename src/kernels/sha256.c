/* sha256.c - SHA-256 as FIPS 180-4 §5-§6.2 specifies it: padding, 64-byte blocks, big-endian
 * length; the block compression is the kernel table's (see sha256.h). */
#include "sha256.h"

#include "dispatch.h"

#include <stdlib.h>
#include <string.h>

void g4v_sha256_init(g4v_sha256_ctx *s) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    s->blocks = g4v_kernels_current()->use[G4V_KF_SHA256_BLOCKS].sha256_blocks;
    memcpy(s->h, iv, sizeof iv);
    s->total = 0;
    s->nbuf = 0;
}

void g4v_sha256_update(g4v_sha256_ctx *s, const void *data, size_t n) {
    const uint8_t *p = data;
    s->total += n;
    if (s->nbuf) {
        size_t take = 64 - s->nbuf < n ? 64 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, take);
        s->nbuf += take;
        p += take;
        n -= take;
        if (s->nbuf < 64) return;
        s->blocks(s->h, s->buf, 1);
        s->nbuf = 0;
    }
    if (n >= 64) {
        s->blocks(s->h, p, n / 64);
        p += n / 64 * 64;
        n %= 64;
    }
    memcpy(s->buf, p, n);
    s->nbuf = n;
}

void g4v_sha256_final(g4v_sha256_ctx *s, uint8_t out[G4V_SHA256_BYTES]) {
    uint64_t bits = s->total * 8;
    uint8_t pad[72] = {0x80};
    size_t padlen = (s->nbuf < 56 ? 56 : 120) - s->nbuf;
    for (int i = 0; i < 8; i++)
        pad[padlen + i] = (uint8_t)(bits >> (56 - 8 * i));
    uint64_t total = s->total;
    g4v_sha256_update(s, pad, padlen + 8);
    s->total = total;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(s->h[i] >> (24 - 8 * j));
}

void g4v_sha256(const void *data, size_t n, uint8_t out[G4V_SHA256_BYTES]) {
    g4v_sha256_ctx s;
    g4v_sha256_init(&s);
    g4v_sha256_update(&s, data, n);
    g4v_sha256_final(&s, out);
}

void g4v_sha256_hex(const uint8_t d[G4V_SHA256_BYTES], char hex[G4V_SHA256_HEX]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < G4V_SHA256_BYTES; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[64] = '\0';
}

void g4v_sha256_u64(g4v_sha256_ctx *s, uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    g4v_sha256_update(s, b, 8);
}

void g4v_sha256_str(g4v_sha256_ctx *s, const char *str) {
    size_t n = strlen(str);
    g4v_sha256_u64(s, n);
    g4v_sha256_update(s, str, n);
}
