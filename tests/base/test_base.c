/* test_base.c - error formatting, overflow-checked allocation, CPU feature masking, UTF-8. */
#include "base/alloc.h"
#include "base/cpu.h"
#include "base/error.h"
#include "base/pool.h"
#include "base/utf8.h"
#include "kernels/dispatch.h"
#include "kernels/sha256.h"
#include "test_util.h"

#include <stdint.h>
#include <stdlib.h>

static void test_errors(void) {
    g4v_err e;
    g4v_err_clear(&e);
    CHECK(e.status == G4V_OK && e.msg[0] == '\0');
    int s = g4v_fail(&e, G4V_ERR_MODEL, "tensor %s: expected [%d], found [%d]", "x", 3, 4);
    CHECK(s == G4V_ERR_MODEL && e.status == G4V_ERR_MODEL);
    CHECK_CONTAINS(e.msg, "tensor x: expected [3], found [4]");
    g4v_err_prefix(&e, "loading %s", "dir");
    CHECK_CONTAINS(e.msg, "loading dir: tensor x");
    CHECK(g4v_fail(NULL, G4V_ERR_IO, "ignored") == G4V_ERR_IO);
    CHECK(!strcmp(g4v_status_name(G4V_ERR_LIMIT), "G4V_ERR_LIMIT"));
    CHECK(!strcmp(g4v_status_name(12345), "G4V_ERR_UNKNOWN"));
}

static void test_alloc(void) {
    CHECK(g4v_malloc_array(SIZE_MAX / 2, 3) == NULL);
    CHECK(g4v_calloc(SIZE_MAX / 2, 3) == NULL);
    void *p = g4v_malloc_large(3u << 20);
    CHECK(p != NULL && ((uintptr_t)p & 63) == 0);
    g4v_free_large(p);
}

/* Expected lengths from RFC 3629's table (what Python's strict decoder accepts). */
static void test_utf8(void) {
    static const struct {
        const char *s;
        size_t len; /* of the first sequence; 0: invalid */
    } t[] = {
        {"a", 1},
        {"\x7f", 1},
        {"\xc3\xa9", 2},         /* U+00E9 */
        {"\xc2\x80", 2},         /* U+0080, the smallest 2-byte */
        {"\xc1\xbf", 0},         /* overlong U+007F */
        {"\xc0\xaf", 0},         /* overlong '/' */
        {"\xe2\x82\xac", 3},     /* U+20AC */
        {"\xe0\x9f\xbf", 0},     /* overlong U+07FF */
        {"\xed\x9f\xbf", 3},     /* U+D7FF */
        {"\xed\xa0\x80", 0},     /* U+D800, a surrogate */
        {"\xed\xbf\xbf", 0},     /* U+DFFF */
        {"\xee\x80\x80", 3},     /* U+E000 */
        {"\xf0\x9f\x98\x80", 4}, /* U+1F600 */
        {"\xf0\x8f\xbf\xbf", 0}, /* overlong U+FFFF */
        {"\xf4\x8f\xbf\xbf", 4}, /* U+10FFFF */
        {"\xf4\x90\x80\x80", 0}, /* above U+10FFFF */
        {"\xf8\x88\x80\x80", 0}, /* 5-byte lead */
        {"\xff", 0},
        {"\x80", 0},     /* stray continuation */
        {"\xe2\x82", 0}, /* cut short */
        {"\xc3\x28", 0}, /* bad continuation */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        size_t n = strlen(t[i].s);
        CHECK_MSG(g4v_utf8_seq_len(t[i].s, n) == t[i].len, "utf8 case %zu: length %zu, want %zu", i,
                  g4v_utf8_seq_len(t[i].s, n), t[i].len);
        CHECK(g4v_utf8_valid(t[i].s, n) == (t[i].len == n));
    }
    CHECK(g4v_utf8_seq_len("a", 0) == 0 && g4v_utf8_valid("", 0));
    CHECK(!g4v_utf8_valid("ok\xc3\xa9\xff", 5) && g4v_utf8_valid("ok\xc3\xa9\xff", 4));
}

/* The BF16 kernel rule (docs/NUMERICS.md §6.6) over (vendor, family, model, features) rows. */
static void test_bf16_rule(void) {
    const unsigned bf = G4V_CPU_AVX2 | G4V_CPU_AVX512 | G4V_CPU_AVX512BF16 | G4V_CPU_AVX512VNNI,
                   nobf = bf & ~(unsigned)G4V_CPU_AVX512BF16;
    const struct {
        g4v_cpu_vendor vendor;
        unsigned family, model, features;
        int vdpbf16ps;
        const char *what;
    } rows[] = {
        {G4V_VENDOR_INTEL, 6, 0x8f, bf, 0, "Sapphire Rapids"},
        {G4V_VENDOR_INTEL, 6, 0xcf, bf, 0, "Emerald Rapids"},
        {G4V_VENDOR_INTEL, 6, 0xad, bf, 0, "Granite Rapids"},
        {G4V_VENDOR_INTEL, 6, 0x55, bf, 0, "Cooper Lake"},
        {G4V_VENDOR_INTEL, 6, 0x8f, nobf, 0, "Sapphire Rapids, G4V_ISA=avx512-nobf16"},
        {G4V_VENDOR_AMD, 0x19, 0x11, bf, 1, "Zen 4 (Genoa)"},
        {G4V_VENDOR_AMD, 0x19, 0x61, bf, 1, "Zen 4 (Raphael)"},
        {G4V_VENDOR_AMD, 0x1a, 0x02, bf, 1, "Zen 5 (Turin)"},
        {G4V_VENDOR_AMD, 0x19, 0x01, nobf, 0, "Zen 3 (no AVX-512)"},
        {G4V_VENDOR_AMD, 0x17, 0x31, bf, 1, "AMD before Zen 4 (no row: vdpbf16ps where it is)"},
        {G4V_VENDOR_OTHER, 0, 0, bf, 1, "another vendor with BF16 (no row)"},
        {G4V_VENDOR_OTHER, 0, 0, 0, 0, "no SIMD"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        g4v_cpu_ident id = {rows[i].vendor, rows[i].family, rows[i].model};
        const char *why = NULL;
        int got = g4v_cpu_bf16_rule(id, rows[i].features, &why);
        CHECK_MSG(got == rows[i].vdpbf16ps, "%s: rule says %s, want %s", rows[i].what,
                  got ? "vdpbf16ps" : "fma", rows[i].vdpbf16ps ? "vdpbf16ps" : "fma");
        CHECK_MSG(why && *why, "%s: no reason", rows[i].what);
    }
    /* this CPU: the rule's line names its answer, and the drop follows it unless G4V_ISA=avx512 */
    unsetenv("G4V_ISA");
    g4v_cpu_ident me = g4v_cpu_identity();
    int dp = g4v_cpu_bf16_rule(me, g4v_cpu_features(), NULL);
    CHECK(g4v_cpu_rule_drops() == (dp ? 0u : (g4v_cpu_features() & G4V_CPU_AVX512BF16)));
    char line[256];
    g4v_cpu_rule_line(line, sizeof line);
    CHECK_MSG(!strncmp(line, dp ? "bf16=vdpbf16ps " : "bf16=fma ", dp ? 15 : 9), "line: %s", line);
    setenv("G4V_ISA", "avx512", 1);
    CHECK(g4v_cpu_rule_drops() == 0);
    unsetenv("G4V_ISA");
#if defined(__x86_64__)
    CHECK(me.vendor != G4V_VENDOR_OTHER && me.family >= 6);
#endif
    printf("bf16 rule: %s\n", line);
}

static void test_cpu(void) {
    setenv("G4V_ISA", "portable", 1);
    CHECK(g4v_cpu_features() == 0);
    CHECK(!strcmp(g4v_cpu_isa_name(), "portable"));
    setenv("G4V_ISA", "avx2", 1);
    CHECK((g4v_cpu_features() & ~(unsigned)(G4V_CPU_AVX2 | G4V_CPU_SHA)) == 0);
    unsetenv("G4V_ISA");
    unsigned all = g4v_cpu_features();
    const unsigned amx = G4V_CPU_AMX | G4V_CPU_AMX_INT8;
    setenv("G4V_ISA", "avx512-nobf16", 1); /* everything but the bf16 dot product (and tiles) */
    CHECK(g4v_cpu_features() == (all & ~(unsigned)(G4V_CPU_AVX512BF16 | amx)));
    CHECK(strcmp(g4v_cpu_isa_name(), "avx512") != 0 && strcmp(g4v_cpu_isa_name(), "amx") != 0);
    setenv("G4V_ISA", "avx512-noamx", 1); /* everything but the tiles */
    CHECK(g4v_cpu_features() == (all & ~amx) && strcmp(g4v_cpu_isa_name(), "amx") != 0);
    setenv("G4V_ISA", "avx512", 1); /* the table it named before AMX: no tiles either */
    CHECK(g4v_cpu_features() == (all & ~amx));
    setenv("G4V_ISA", "amx", 1); /* no cap, like auto */
    CHECK(g4v_cpu_features() == all);
    unsetenv("G4V_ISA");
    /* the caps as such, on any CPU (the AMX bits are set only where base/amx.c grants them) */
    CHECK(g4v_cpu_isa_cap(NULL) == (long long)~0u && g4v_cpu_isa_cap("auto") == (long long)~0u);
    CHECK(g4v_cpu_isa_cap("amx") == (long long)~0u);
    CHECK(g4v_cpu_isa_cap("avx512-noamx") == (long long)(~0u & ~amx));
    CHECK(g4v_cpu_isa_cap("avx512") == (long long)(~0u & ~amx));
    CHECK(g4v_cpu_isa_cap("avx512-nobf16") ==
          (long long)(~0u & ~(amx | (unsigned)G4V_CPU_AVX512BF16)));
    CHECK(g4v_cpu_isa_cap("avx2") == (long long)(G4V_CPU_AVX2 | G4V_CPU_SHA));
    CHECK(g4v_cpu_isa_cap("avx512-amx") == -1);
    /* the level names: "amx" wherever the tile bit is; the others as before */
    const unsigned avx512bf = G4V_CPU_AVX2 | G4V_CPU_AVX512 | G4V_CPU_AVX512BF16;
    CHECK(!strcmp(g4v_cpu_isa_name_of(avx512bf | amx), "amx"));
    CHECK(!strcmp(g4v_cpu_isa_name_of(avx512bf | G4V_CPU_AMX), "amx"));
    CHECK(!strcmp(g4v_cpu_isa_name_of(avx512bf), "avx512"));
    CHECK(!strcmp(g4v_cpu_isa_name_of((avx512bf | amx) & (unsigned)g4v_cpu_isa_cap("avx512-noamx")),
                  "avx512"));
    CHECK(!strcmp(g4v_cpu_isa_name_of((avx512bf | amx) & (unsigned)g4v_cpu_isa_cap("avx512-nobf16")),
                  "avx512-nobf16"));
    /* the level's name is the G4V_ISA value that gives it back (SIMD features; a CPU with SHA
     * but no AVX2 is "portable", which also drops SHA) */
    const char *level = g4v_cpu_isa_name();
    setenv("G4V_ISA", level, 1);
    unsigned simd = ~(unsigned)G4V_CPU_SHA;
    CHECK_MSG((g4v_cpu_features() & simd) == (all & simd), "G4V_ISA=%s: features 0x%x, unset 0x%x",
              level, g4v_cpu_features(), all);
    CHECK(!strcmp(g4v_cpu_isa_name(), level));
    unsetenv("G4V_ISA");
    CHECK(g4v_cpu_isa_check(NULL) == G4V_OK);
    /* auto is the same as unset; every accepted value passes the check */
    setenv("G4V_ISA", "auto", 1);
    CHECK(g4v_cpu_features() == all && g4v_cpu_isa_check(NULL) == G4V_OK);
    const char *ok[] = {"",     "auto",  "amx", "avx512", "avx512-noamx", "avx512-nobf16",
                        "avx2", "neon-bf16", "neon", "portable"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        setenv("G4V_ISA", ok[i], 1);
        CHECK_MSG(g4v_cpu_isa_check(NULL) == G4V_OK, "G4V_ISA=%s refused", ok[i]);
    }
    /* an unknown value is refused with a message naming it and the accepted values (the
     * features below the check stay capped at portable, the safe choice) */
    const char *bad[] = {"AVX512", "avx-512", "native", "avx512 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("G4V_ISA", bad[i], 1);
        g4v_err e;
        g4v_err_clear(&e);
        CHECK_MSG(g4v_cpu_isa_check(&e) == G4V_ERR_ARG, "G4V_ISA=%s accepted", bad[i]);
        CHECK_MSG(strstr(e.msg, bad[i]) && strstr(e.msg, G4V_CPU_ISA_VALUES), "message: %s",
                  e.msg);
        CHECK(g4v_cpu_features() == 0);
    }
    unsetenv("G4V_ISA");
#if defined(__aarch64__) /* ARMv8.0 NEON alone; every AArch64 core has NEON (qemu's too) */
    CHECK(all & G4V_CPU_NEON);
    setenv("G4V_ISA", "neon", 1);
    CHECK(g4v_cpu_features() == G4V_CPU_NEON && !strcmp(g4v_cpu_isa_name(), "neon"));
    unsetenv("G4V_ISA");
    CHECK(!strcmp(level, (all & G4V_CPU_ARM_BF16) ? "neon-bf16" : "neon"));
#endif
    printf("cpu: %s\n", level);
}

typedef struct {
    int out[1000];
} pool_job;

static void square_task(void *arg, int task, int worker) {
    (void)worker;
    ((pool_job *)arg)->out[task] = task * task;
}

static void test_pool(void) {
    for (int threads = 1; threads <= 4; threads++) {
        g4v_pool *pool = NULL;
        REQUIRE(g4v_pool_create(threads, &pool, NULL) == G4V_OK);
        CHECK(g4v_pool_size(pool) == threads);
        for (int rep = 0; rep < 50; rep++) {
            pool_job job;
            memset(&job, 0xff, sizeof job);
            int n = 1 + rep * 19 % 1000;
            g4v_pool_run(pool, n, square_task, &job);
            int ok = 1;
            for (int i = 0; i < n; i++)
                ok &= job.out[i] == i * i;
            CHECK_MSG(ok, "threads=%d n=%d", threads, n);
        }
        g4v_pool_destroy(pool);
    }
    pool_job job;
    g4v_pool_run(NULL, 10, square_task, &job);
    CHECK(job.out[9] == 81);
}

/* FIPS 180-4 / NIST CAVP example vectors (the 56-byte one crosses the padding boundary), the
 * million-'a' message fed in uneven pieces, and split updates against one-shot digests at every
 * length around the block and padding boundaries. */
static void test_sha256(void) {
    static const struct {
        const char *msg, *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrl"
         "m"
         "nopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    uint8_t d[G4V_SHA256_BYTES];
    char hex[G4V_SHA256_HEX];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        g4v_sha256(v[i].msg, strlen(v[i].msg), d);
        g4v_sha256_hex(d, hex);
        CHECK_MSG(!strcmp(hex, v[i].hex), "sha256 of \"%s\": %s, expected %s", v[i].msg, hex,
                  v[i].hex);
    }
    g4v_sha256_ctx s;
    g4v_sha256_init(&s);
    char a[1000];
    memset(a, 'a', sizeof a);
    for (size_t done = 0, k = 1; done < 1000000; k = k * 7 % 997 + 1) {
        size_t n = k < 1000000 - done ? k : 1000000 - done;
        g4v_sha256_update(&s, a, n);
        done += n;
    }
    g4v_sha256_final(&s, d);
    g4v_sha256_hex(d, hex);
    CHECK_MSG(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
              "sha256 of a million 'a': %s", hex);
    uint8_t msg[200];
    for (int i = 0; i < 200; i++)
        msg[i] = (uint8_t)(i * 31 + 7);
    for (size_t n = 0; n <= 200; n++) {
        uint8_t one[G4V_SHA256_BYTES];
        g4v_sha256(msg, n, one);
        for (size_t cut = 0; cut <= n; cut += 13) {
            g4v_sha256_init(&s);
            g4v_sha256_update(&s, msg, cut);
            g4v_sha256_update(&s, msg + cut, n - cut);
            g4v_sha256_final(&s, d);
            CHECK_MSG(!memcmp(d, one, sizeof d), "sha256 split at %zu of %zu bytes differs", cut,
                      n);
        }
    }
    /* the compression in use is the kernel table's (test_variants compares every one) */
    printf("sha256: compression %s\n", g4v_kernels_current()->isa[G4V_KF_SHA256_BLOCKS]);
}

int main(void) {
    test_sha256();
    test_pool();
    test_errors();
    test_alloc();
    test_cpu();
    test_bf16_rule();
    test_utf8();
    return test_summary("test_base");
}
