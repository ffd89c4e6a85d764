#!/usr/bin/env bash
# auth_callgrind.sh - counts the instructions of the API key check (svc_key_equal,
# tools/service/core/auth.c) with callgrind for tokens wrong in their first byte, their last,
# right, and of other lengths, and for keys of other lengths: the counts show what the check's
# time can depend on (docs/SERVICE.md, "Security"). Needs gcc, valgrind, libmicrohttpd-dev.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat > "$T/ct.c" <<'C'
#include "core/core.h"
#include <stdio.h>
#include <string.h>
/* the two service functions core/auth.c calls besides the check: not reached here */
struct MHD_Response *svc_error_response(const char *m, const char *s) { (void)m, (void)s; return NULL; }
enum MHD_Result svc_answer(request *q, int c, struct MHD_Response *r) { (void)q, (void)c, (void)r; return MHD_NO; }
int main(int argc, char **argv) { /* ct TOKEN KEY: 1000 checks; prints how many matched */
    static unsigned char key[SVC_KEY_MAX];
    memcpy(key, argv[2], strlen(argv[2]));
    int r = 0;
    for (int i = 0; i < 1000; i++)
        r += svc_key_equal(key, strlen(argv[2]), (const unsigned char *)argv[1], strlen(argv[1]));
    printf("%d\n", r + 0 * argc);
    return 0;
}
C
gcc -O2 -I"$SRC/tools/service" -I"$SRC/include" -I"$SRC/src" "$T/ct.c" "$SRC/tools/service/core/auth.c" \
    -o "$T/ct" -lmicrohttpd
count() { # token key -> instructions per check
    valgrind --tool=callgrind --callgrind-out-file="$T/cg" --toggle-collect=svc_key_equal "$T/ct" "$1" "$2" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | awk '{print $1 / 1000}'
}
K=0123456789abcdef0123456789abcdef
echo "auth_callgrind: instructions per check, key of 32 bytes:"
echo "  token wrong in its first byte: $(count X${K:1} $K)"
echo "  token wrong in its last byte:  $(count ${K:0:31}X $K)"
echo "  the key itself:                $(count $K $K)"
echo "  token of 0 / 4 / 42 bytes:     $(count '' $K) / $(count 0123 $K) / $(count ${K}0123456789 $K)"
echo "  32-byte wrong token, keys of 14 / 200 bytes: $(count ${K:0:31}X short-key-0123) / $(count ${K:0:31}X "$(printf 'k%.0s' $(seq 200))")"
