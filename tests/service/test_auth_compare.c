/* test_auth_compare.c - svc_key_equal, the API key check of tools/service/core/auth.c: the key
 * itself matches; anything else does not (one byte off at every position, every proper prefix,
 * the key plus a byte, an empty token, a key padded with a NUL); no key (length 0) matches
 * nothing, not even an empty token. Its constant time is by construction (a fixed loop, no early
 * exit); docs/SERVICE.md, "Security", gives the instruction counts measured with callgrind. */
#include "core/auth.h"
#include "test_util.h"

#include <string.h>

static unsigned char key[SVC_KEY_MAX];

static int eq(const char *k, const char *got, size_t glen) {
    memset(key, 0, sizeof key);
    memcpy(key, k, strlen(k));
    return svc_key_equal(key, strlen(k), (const unsigned char *)got, glen);
}

int main(void) {
    const char *k = "g4v-test-key-0123456789abcdef";
    size_t n = strlen(k);
    char got[SVC_KEY_MAX + 8];
    CHECK(eq(k, k, n));
    int wrong = 0;
    for (size_t i = 0; i < n; i++) { /* one byte off, at each position */
        memcpy(got, k, n);
        got[i] ^= 1;
        wrong += eq(k, got, n);
    }
    CHECK_MSG(wrong == 0, "%d tokens one byte off were accepted", wrong);
    wrong = 0;
    for (size_t m = 0; m < n; m++) /* every proper prefix, the empty token included */
        wrong += eq(k, k, m);
    CHECK_MSG(wrong == 0, "%d prefixes of the key were accepted", wrong);
    memcpy(got, k, n);
    got[n] = 'x';
    CHECK(!eq(k, got, n + 1)); /* the key and one more byte */
    got[n] = '\0';
    CHECK(!eq(k, got, n + 1)); /* the key and a NUL: the padding must not make it equal */
    CHECK(!eq("", "", 0));     /* no key matches nothing */
    /* the longest key accepted, and a token longer than the buffer */
    char longk[SVC_KEY_MAX];
    memset(longk, 'k', SVC_KEY_MAX - 1);
    longk[SVC_KEY_MAX - 1] = '\0';
    CHECK(eq(longk, longk, SVC_KEY_MAX - 1));
    memset(got, 'k', sizeof got);
    CHECK(!eq(longk, got, sizeof got));
    got[SVC_KEY_MAX - 2] = 'j';
    CHECK(!eq(longk, got, SVC_KEY_MAX - 1)); /* differs in the last byte only */
    return test_summary("test_auth_compare");
}
