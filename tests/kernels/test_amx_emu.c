/* test_amx_emu.c - the portable AMX tile emulator (src/kernels/amx_emu.c) against the Intel SDM's
 * definitions (docs/NUMERICS.md §13): TDPBF16PS's order of additions (the two vectors that tell
 * the SDM's order from the Intrinsics Guide's and VDPBF16PS's), its denormal rules, the zero fill
 * of loads and products, stores that write rows x colsb only, every fault, INIT after
 * tilerelease, the configuration round trip, the counters, state per thread, a random product
 * against a scalar model written here from the definition, and the four INT8 forms at their
 * extreme values. Runs on any CPU (also under qemu-aarch64). */
#include "kernels/amx_emu.h"
#include "test_util.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers ---- */

static char last_fault[512];
static int faults;

static void on_fault(const char *msg) {
    snprintf(last_fault, sizeof last_fault, "%s", msg);
    faults++;
}

static void fault_reset(void) {
    last_fault[0] = 0;
    faults = 0;
}

/* A palette-1 configuration from (rows, colsb) pairs for tiles 0..n-1. */
static g4v_tile_config cfg_of(int n, const int shape[][2]) {
    g4v_tile_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < n; t++) {
        c.rows[t] = (uint8_t)shape[t][0];
        c.colsb[t] = (uint16_t)shape[t][1];
    }
    return c;
}

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* bf16 of a float that bf16 holds exactly (the test's values are chosen so). */
static uint16_t bf(float f) { return (uint16_t)(bits(f) >> 16); }

/* A one-row A of K pairs, a B of K rows x 1 pair, a 1x1 C: c += a . b; returns C's bits. */
static uint32_t dot1(uint32_t c_bits, int K, const float *a, const float *b) {
    const int shape[3][2] = {{1, 4}, {1, 4 * K}, {K, 4}};
    g4v_tile_config cfg = cfg_of(3, shape);
    g4v_amx_emu_ldtilecfg(&cfg);
    uint16_t abuf[32], bbuf[16][2];
    for (int i = 0; i < 2 * K; i++) abuf[i] = bf(a[i]);
    for (int k = 0; k < K; k++) {
        bbuf[k][0] = bf(b[2 * k]);
        bbuf[k][1] = bf(b[2 * k + 1]);
    }
    g4v_amx_emu_tileloadd(0, &c_bits, 4);
    g4v_amx_emu_tileloadd(1, abuf, 64);
    g4v_amx_emu_tileloadd(2, bbuf, 4);
    g4v_amx_emu_tdpbf16ps(0, 1, 2);
    uint32_t out = 0xdeadbeef;
    g4v_amx_emu_tilestored(0, &out, 4);
    return out;
}

/* ---- TDPBF16PS: order of additions ---- */

static void test_sdm_order(void) {
    const float p24 = 16777216.0f; /* 2^24 */
    /* (1) C = 0; pair 0: a = (2^24, 1), b = (1, 1); pair 1: a = (-2^24, 0), b = (1, 0).
     * SDM: even chain 2^24 - 2^24 = 0, odd chain 1: 1. C first (Intrinsics Guide) or odd then
     * even into dst (VDPBF16PS): 2^24 + 1 rounds to 2^24 and the result is 0. */
    const float a1[4] = {p24, 1.0f, -p24, 0.0f}, b1[4] = {1.0f, 1.0f, 1.0f, 0.0f};
    uint32_t r = dot1(bits(0.0f), 2, a1, b1);
    CHECK_MSG(r == bits(1.0f), "vector 1: got %g, the SDM's order gives 1", from_bits(r));
    /* (2) C = 2^24, one pair a = (1, 1), b = (1, 1): SDM 2^24 + (1 + 1) = 2^24 + 2; the C-first
     * orders add 1 twice, each rounding back to 2^24. */
    const float a2[2] = {1.0f, 1.0f}, b2[2] = {1.0f, 1.0f};
    r = dot1(bits(p24), 1, a2, b2);
    CHECK_MSG(r == bits(p24 + 2.0f), "vector 2: got %.1f, the SDM's order gives 2^24 + 2",
              from_bits(r));
}

/* ---- TDPBF16PS: denormals ---- */

static void test_denormals(void) {
    const float p63 = ldexpf(1.0f, -63), p126 = ldexpf(1.0f, -126);
    /* DAZ on bf16 inputs: the denormals 0x0001 (2^-133) and 0x8003 times 2^126 would be 2^-7
     * and -3 * 2^-7 */
    {
        const int shape[3][2] = {{1, 4}, {1, 4}, {1, 4}};
        g4v_tile_config cfg = cfg_of(3, shape);
        g4v_amx_emu_ldtilecfg(&cfg);
        uint16_t a[2] = {0x0001, 0x8003}, b[2] = {bf(ldexpf(1.0f, 126)), bf(ldexpf(1.0f, 126))};
        uint32_t c = 0;
        g4v_amx_emu_tileloadd(0, &c, 4);
        g4v_amx_emu_tileloadd(1, a, 4);
        g4v_amx_emu_tileloadd(2, b, 4);
        g4v_amx_emu_tdpbf16ps(0, 1, 2);
        g4v_amx_emu_tilestored(0, &c, 4);
        CHECK_MSG(c == 0, "bf16 denormal inputs count as zero: got 0x%08x", (unsigned)c);
        /* the same with B denormal */
        uint16_t a2[2] = {bf(ldexpf(1.0f, 126)), 0}, b2[2] = {0x0040, 0};
        c = 0;
        g4v_amx_emu_tileloadd(0, &c, 4);
        g4v_amx_emu_tileloadd(1, a2, 4);
        g4v_amx_emu_tileloadd(2, b2, 4);
        g4v_amx_emu_tdpbf16ps(0, 1, 2);
        g4v_amx_emu_tilestored(0, &c, 4);
        CHECK_MSG(c == 0, "bf16 denormal B counts as zero: got 0x%08x", (unsigned)c);
    }
    /* DAZ on C: C = 2^-127 (denormal) + tmp 2^-126 gives 2^-126, not 1.5 * 2^-126 */
    {
        const float a[2] = {p63, 0.0f}, b[2] = {p63, 0.0f};
        uint32_t r = dot1(0x00400000u, 1, a, b);
        CHECK_MSG(r == bits(p126), "denormal C counts as zero: got 0x%08x", (unsigned)r);
        r = dot1(0x80400000u, 1, a, b); /* and a negative one */
        CHECK_MSG(r == bits(p126), "negative denormal C counts as zero: got 0x%08x", (unsigned)r);
    }
    /* FTZ of each FMA: 2^-70 * 2^-70 = 2^-140 flushed, then + 2^-126: exactly 2^-126 (kept, the
     * sum would be the fp32 normal 2^-126 + 2^-140) */
    {
        const float a[4] = {ldexpf(1.0f, -70), 0.0f, p63, 0.0f};
        const float b[4] = {ldexpf(1.0f, -70), 0.0f, p63, 0.0f};
        uint32_t r = dot1(0, 2, a, b);
        CHECK_MSG(r == bits(p126), "a denormal FMA result is flushed: got 0x%08x", (unsigned)r);
    }
    /* FTZ of the pair sum: even 1.5 * 2^-126, odd -2^-126: 2^-127 flushed; C = 2^-126 stays */
    {
        const float a[2] = {1.5f * p63, -p63}, b[2] = {p63, p63};
        uint32_t r = dot1(bits(p126), 1, a, b);
        CHECK_MSG(r == bits(p126), "a denormal pair sum is flushed: got 0x%08x", (unsigned)r);
    }
    /* FTZ of the final add, keeping the sign: C = -1.5 * 2^-126, tmp = 2^-126 gives -2^-127:
     * -0; C = 1.5 * 2^-126, tmp = -2^-126 gives +0 */
    {
        const float a[2] = {p63, 0.0f}, b[2] = {p63, 0.0f};
        uint32_t r = dot1(bits(-1.5f * p126), 1, a, b);
        CHECK_MSG(r == 0x80000000u, "a denormal final sum is -0: got 0x%08x", (unsigned)r);
        const float an[2] = {-p63, 0.0f};
        r = dot1(bits(1.5f * p126), 1, an, b);
        CHECK_MSG(r == 0x00000000u, "a denormal final sum is +0: got 0x%08x", (unsigned)r);
    }
    /* round to nearest even: 2^24 + 1 + 0 ties to 2^24, 2^24 + 3 ties to 2^24 + 4 */
    {
        const float a[2] = {1.0f, 0.0f}, b[2] = {1.0f, 0.0f}, a3[2] = {3.0f, 0.0f};
        uint32_t r = dot1(bits(16777216.0f), 1, a, b);
        CHECK(r == bits(16777216.0f));
        r = dot1(bits(16777216.0f), 1, a3, b);
        CHECK(r == bits(16777220.0f));
    }
}

/* ---- loads, stores, zero fill ---- */

static void test_load_store(void) {
    const int shape[2][2] = {{3, 12}, {16, 64}};
    g4v_tile_config cfg = cfg_of(2, shape);
    g4v_amx_emu_ldtilecfg(&cfg);
    uint8_t src[16 * 80], tile[16][64];
    for (int i = 0; i < (int)sizeof src; i++) src[i] = (uint8_t)(i * 7 + 1);
    /* the whole register: the bytes past colsb and the rows past rows are zero after a load */
    g4v_amx_emu_tileloadd(1, src, 80);
    g4v_amx_emu_tileloadd(0, src, 80);
    g4v_amx_emu_tile_bytes(0, tile);
    int ok = 1;
    for (int r = 0; r < 16; r++)
        for (int j = 0; j < 64; j++) {
            const uint8_t want = (r < 3 && j < 12) ? src[r * 80 + j] : 0;
            ok &= tile[r][j] == want;
        }
    CHECK_MSG(ok, "tileloadd: rows x colsb from base + r * stride, the rest of the tile zero");
    /* tile 1 (16 x 64) holds every byte it was given */
    g4v_amx_emu_tile_bytes(1, tile);
    ok = 1;
    for (int r = 0; r < 16; r++) ok &= memcmp(tile[r], src + r * 80, 64) == 0;
    CHECK(ok);
    /* tilestored writes rows x colsb with the stride, nothing else */
    uint8_t dst[16 * 80];
    memset(dst, 0xcd, sizeof dst);
    g4v_amx_emu_tilestored(0, dst, 20);
    ok = 1;
    for (int i = 0; i < (int)sizeof dst; i++) {
        const int r = i / 20, j = i % 20;
        const uint8_t want = (r < 3 && j < 12) ? src[r * 80 + j] : 0xcd;
        ok &= dst[i] == want;
    }
    CHECK_MSG(ok, "tilestored: exactly rows x colsb bytes written");
    /* tilezero clears the whole tile */
    g4v_amx_emu_tilezero(1);
    g4v_amx_emu_tile_bytes(1, tile);
    uint8_t zero[16][64];
    memset(zero, 0, sizeof zero);
    CHECK(memcmp(tile, zero, sizeof zero) == 0);
    /* loading a configuration (even the same one) zeroes every tile */
    g4v_amx_emu_tileloadd(0, src, 80);
    g4v_amx_emu_ldtilecfg(&cfg);
    g4v_amx_emu_tile_bytes(0, tile);
    CHECK_MSG(memcmp(tile, zero, sizeof zero) == 0, "ldtilecfg zeroes the tiles");
}

/* After a product, C's rows past M and bytes past 4N are zero; the operands are not changed. */
static void test_dp_zero_fill(void) {
    /* C 5 x 3 (colsb 12), A 5 x 7 pairs (colsb 28), B 7 x 3 pairs (colsb 12) */
    const int shape[3][2] = {{5, 12}, {5, 28}, {7, 12}};
    g4v_tile_config cfg = cfg_of(3, shape);
    g4v_amx_emu_ldtilecfg(&cfg);
    uint16_t a[16][32], b[16][32];
    for (int r = 0; r < 16; r++)
        for (int j = 0; j < 32; j++) {
            a[r][j] = bf((float)((r + j) % 5) - 2.0f);
            b[r][j] = bf((float)((r * 3 + j) % 7) - 3.0f);
        }
    float c[16][16] = {{0}};
    g4v_amx_emu_tileloadd(0, c, 64);
    g4v_amx_emu_tileloadd(1, a, 64);
    g4v_amx_emu_tileloadd(2, b, 64);
    uint8_t before_a[16][64], after_a[16][64], tile[16][64];
    g4v_amx_emu_tile_bytes(1, before_a);
    g4v_amx_emu_tdpbf16ps(0, 1, 2);
    g4v_amx_emu_tile_bytes(1, after_a);
    CHECK(memcmp(before_a, after_a, sizeof after_a) == 0);
    g4v_amx_emu_tile_bytes(0, tile);
    int ok = 1, exact = 1;
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            float v;
            memcpy(&v, &tile[m][4 * n], 4);
            if (m >= 5 || n >= 3) {
                ok &= bits(v) == 0;
                continue;
            }
            float want = 0; /* small integers: every order gives the same exact sum */
            for (int k = 0; k < 7; k++) {
                want += from_bits((uint32_t)a[m][2 * k] << 16) *
                        from_bits((uint32_t)b[k][2 * n] << 16);
                want += from_bits((uint32_t)a[m][2 * k + 1] << 16) *
                        from_bits((uint32_t)b[k][2 * n + 1] << 16);
            }
            exact &= v == want;
        }
    CHECK_MSG(ok, "tdpbf16ps: C's rows past M and columns past N are zero");
    CHECK_MSG(exact, "tdpbf16ps: a partial shape (M 5, N 3, K 7) reads the right elements");
}

/* ---- faults ---- */

/* One bad configuration: a #GP in ldtilecfg naming `why`; the previous configuration stays. */
static void expect_gp(const g4v_tile_config *bad, const char *why) {
    const int shape[1][2] = {{2, 8}};
    g4v_tile_config good = cfg_of(1, shape), now;
    g4v_amx_emu_ldtilecfg(&good);
    fault_reset();
    g4v_amx_emu_ldtilecfg(bad);
    CHECK_MSG(faults == 1, "no fault for a configuration with %s", why);
    CHECK_CONTAINS(last_fault, "amx emulator: #GP in ldtilecfg: ");
    CHECK_CONTAINS(last_fault, why);
    g4v_amx_emu_sttilecfg(&now);
    CHECK(memcmp(&now, &good, sizeof now) == 0);
}

/* One bad product: a #UD in tdpbf16ps naming `why`, C unchanged. */
static void expect_ud(int n, const int shape[][2], int c, int a, int b, const char *why) {
    g4v_tile_config cfg = cfg_of(n, shape);
    g4v_amx_emu_ldtilecfg(&cfg);
    uint8_t before[16][64], after[16][64];
    uint8_t ones[16 * 64];
    memset(ones, 0x3f, sizeof ones);
    if (c < n && shape[c][0]) g4v_amx_emu_tileloadd(c, ones, 64);
    g4v_amx_emu_tile_bytes(c, before);
    fault_reset();
    g4v_amx_emu_tdpbf16ps(c, a, b);
    CHECK_MSG(faults == 1, "no fault for a product with %s", why);
    CHECK_CONTAINS(last_fault, "amx emulator: #UD in tdpbf16ps: ");
    CHECK_CONTAINS(last_fault, why);
    g4v_amx_emu_tile_bytes(c, after);
    CHECK(memcmp(before, after, sizeof after) == 0);
}

static void test_faults(void) {
    g4v_amx_emu_set_fault_hook(on_fault);
    g4v_tile_config c;
    const int ok3[3][2] = {{16, 64}, {16, 64}, {16, 64}};
    /* LDTILECFG's #GP */
    c = cfg_of(3, ok3);
    c.palette = 2;
    expect_gp(&c, "palette 2");
    c = cfg_of(3, ok3);
    c.colsb[1] = 65;
    expect_gp(&c, "colsb of tmm1 is 65");
    c = cfg_of(3, ok3);
    c.rows[2] = 17;
    expect_gp(&c, "rows of tmm2 is 17");
    c = cfg_of(3, ok3);
    c.rows[0] = 0;
    expect_gp(&c, "tmm0 has rows 0 and colsb 64");
    c = cfg_of(3, ok3);
    c.colsb[7] = 0, c.rows[7] = 4;
    expect_gp(&c, "tmm7 has rows 4 and colsb 0");
    for (int i = 0; i < 14; i++) {
        c = cfg_of(3, ok3);
        c.reserved[i] = 1;
        char why[64];
        snprintf(why, sizeof why, "reserved byte %d", 2 + i);
        expect_gp(&c, why);
    }
    c = cfg_of(3, ok3);
    c.colsb[8] = 4;
    expect_gp(&c, "tile 8 configured");
    c = cfg_of(3, ok3);
    c.rows[15] = 1;
    expect_gp(&c, "tile 15 configured");
    c = cfg_of(3, ok3);
    c.start_row = 1;
    expect_gp(&c, "start_row 1");

    /* TDP*'s #UD */
    expect_ud(3, ok3, 0, 0, 1, "the same tile twice");
    expect_ud(3, ok3, 0, 1, 1, "the same tile twice");
    expect_ud(3, ok3, 2, 1, 2, "the same tile twice");
    expect_ud(2, ok3, 0, 1, 2, "b tile tmm2 is unconfigured");
    expect_ud(2, ok3, 3, 0, 1, "dst tile tmm3 is unconfigured");
    {
        const int s[3][2] = {{16, 62}, {16, 64}, {16, 62}};
        expect_ud(3, s, 0, 1, 2, "colsb of dst tile tmm0 is 62 (not a multiple of 4)");
    }
    {
        const int s[3][2] = {{16, 64}, {16, 62}, {16, 64}};
        expect_ud(3, s, 0, 1, 2, "colsb of a tile tmm1 is 62");
    }
    {
        const int s[3][2] = {{16, 64}, {16, 64}, {16, 60}};
        expect_ud(3, s, 0, 1, 2, "dst colsb 64 != b colsb 60");
    }
    {
        const int s[3][2] = {{16, 64}, {15, 64}, {16, 64}};
        expect_ud(3, s, 0, 1, 2, "dst rows 16 != a rows 15");
    }
    {
        const int s[3][2] = {{16, 64}, {16, 60}, {16, 64}};
        expect_ud(3, s, 0, 1, 2, "a colsb / 4 = 15 != b rows 16");
    }
    /* (N = dst colsb / 4 > 16 cannot be configured in palette 1: colsb <= 64) */
    /* a tile number that does not exist */
    expect_ud(3, ok3, 0, 1, 8, "tmm8 does not exist");
    fault_reset();
    g4v_amx_emu_tileloadd(-1, NULL, 0);
    CHECK_CONTAINS(last_fault, "#UD in tileloadd: tmm-1 does not exist");

    /* the INT8 forms share the checks, each naming itself */
    {
        const int s[3][2] = {{16, 64}, {16, 64}, {16, 60}};
        g4v_tile_config cfg = cfg_of(3, s);
        g4v_amx_emu_ldtilecfg(&cfg);
        void (*const f[4])(int, int, int) = {g4v_amx_emu_tdpbssd, g4v_amx_emu_tdpbsud,
                                             g4v_amx_emu_tdpbusd, g4v_amx_emu_tdpbuud};
        const char *name[4] = {"#UD in tdpbssd: ", "#UD in tdpbsud: ", "#UD in tdpbusd: ",
                               "#UD in tdpbuud: "};
        for (int i = 0; i < 4; i++) {
            fault_reset();
            f[i](0, 1, 2);
            CHECK(faults == 1);
            CHECK_CONTAINS(last_fault, name[i]);
            CHECK_CONTAINS(last_fault, "dst colsb 64 != b colsb 60");
        }
    }

    /* after tilerelease: every tile instruction faults, sttilecfg writes zeros */
    g4v_amx_emu_ldtilecfg(&(g4v_tile_config){0});
    c = cfg_of(3, ok3);
    g4v_amx_emu_ldtilecfg(&c);
    g4v_amx_emu_tilerelease();
    uint8_t buf[16 * 64];
    memset(buf, 0x55, sizeof buf);
    g4v_tile_config now;
    memset(&now, 0xff, sizeof now);
    g4v_amx_emu_sttilecfg(&now);
    g4v_tile_config zero;
    memset(&zero, 0, sizeof zero);
    CHECK_MSG(memcmp(&now, &zero, sizeof now) == 0, "sttilecfg after tilerelease writes zeros");
    fault_reset();
    g4v_amx_emu_tileloadd(0, buf, 64);
    CHECK_CONTAINS(last_fault, "#UD in tileloadd: tiles not configured");
    fault_reset();
    g4v_amx_emu_tilestored(0, buf, 64);
    CHECK_CONTAINS(last_fault, "#UD in tilestored: tiles not configured");
    CHECK(buf[0] == 0x55);
    fault_reset();
    g4v_amx_emu_tilezero(0);
    CHECK_CONTAINS(last_fault, "#UD in tilezero: tiles not configured");
    fault_reset();
    g4v_amx_emu_tdpbf16ps(0, 1, 2);
    CHECK_CONTAINS(last_fault, "#UD in tdpbf16ps: tiles not configured");
    CHECK(faults == 1);
    fault_reset();
    g4v_amx_emu_tdpbuud(0, 1, 2);
    CHECK_CONTAINS(last_fault, "#UD in tdpbuud: tiles not configured");
    /* palette 0 is INIT too, whatever the rest of the operand says */
    c = cfg_of(3, ok3);
    g4v_amx_emu_ldtilecfg(&c);
    c.palette = 0;
    fault_reset();
    g4v_amx_emu_ldtilecfg(&c);
    CHECK(faults == 0);
    g4v_amx_emu_sttilecfg(&now);
    CHECK_MSG(memcmp(&now, &zero, sizeof now) == 0, "ldtilecfg of palette 0 is INIT");
    g4v_amx_emu_tilezero(0);
    CHECK(faults == 1);
    g4v_amx_emu_set_fault_hook(NULL);
}

/* ---- configuration round trip, counters, state per thread ---- */

static void test_config_and_counters(void) {
    const int shape[5][2] = {{16, 64}, {1, 4}, {3, 12}, {0, 0}, {7, 40}};
    g4v_tile_config cfg = cfg_of(5, shape), back;
    g4v_amx_emu_counters_reset();
    g4v_amx_emu_ldtilecfg(&cfg);
    memset(&back, 0xee, sizeof back);
    g4v_amx_emu_sttilecfg(&back);
    CHECK_MSG(memcmp(&back, &cfg, sizeof back) == 0, "sttilecfg gives back the loaded config");

    uint8_t buf[16 * 64] = {0};
    g4v_amx_emu_tileloadd(0, buf, 64);
    g4v_amx_emu_tileloadd(2, buf, 64);
    g4v_amx_emu_tileloadd(4, buf, 64);
    g4v_amx_emu_tilestored(2, buf, 64);
    g4v_amx_emu_tilezero(1);
    g4v_amx_emu_ldtilecfg(&cfg);
    const int dp[3][2] = {{16, 64}, {16, 64}, {16, 64}};
    g4v_tile_config c3 = cfg_of(3, dp);
    g4v_amx_emu_ldtilecfg(&c3);
    g4v_amx_emu_tdpbf16ps(0, 1, 2);
    g4v_amx_emu_tdpbssd(0, 1, 2);
    g4v_amx_emu_tdpbuud(0, 2, 1);
    /* a faulting instruction is not counted */
    g4v_amx_emu_set_fault_hook(on_fault);
    g4v_amx_emu_tdpbf16ps(0, 0, 2);
    g4v_amx_emu_set_fault_hook(NULL);
    g4v_amx_emu_counters n;
    g4v_amx_emu_counters_get(&n);
    CHECK(n.products == 3);
    CHECK(n.loads == 3);
    CHECK(n.load_bytes == 16 * 64 + 3 * 12 + 7 * 40);
    CHECK(n.stores == 1);
    CHECK(n.configs == 3);
    g4v_amx_emu_counters_reset();
    g4v_amx_emu_counters_get(&n);
    CHECK(n.products == 0 && n.loads == 0 && n.load_bytes == 0 && n.stores == 0 &&
          n.configs == 0);
}

typedef struct {
    g4v_tile_config seen;
    g4v_amx_emu_counters counters;
    int faults;
} thread_view;

static void thread_fault(const char *msg) { (void)msg; }

static void *other_thread(void *arg) {
    thread_view *v = arg;
    g4v_amx_emu_sttilecfg(&v->seen);
    g4v_amx_emu_counters_get(&v->counters);
    /* this thread's own hook; the main thread's stays unset */
    g4v_amx_emu_set_fault_hook(thread_fault);
    g4v_amx_emu_tilezero(0); /* INIT here: faults into this thread's hook */
    return NULL;
}

static void test_per_thread(void) {
    const int shape[1][2] = {{4, 16}};
    g4v_tile_config cfg = cfg_of(1, shape);
    g4v_amx_emu_ldtilecfg(&cfg);
    g4v_amx_emu_counters mine;
    g4v_amx_emu_counters_get(&mine);
    CHECK(mine.configs > 0);
    thread_view v;
    memset(&v, 0xaa, sizeof v);
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, other_thread, &v) == 0);
    pthread_join(th, NULL);
    g4v_tile_config zero;
    memset(&zero, 0, sizeof zero);
    CHECK_MSG(memcmp(&v.seen, &zero, sizeof zero) == 0, "a new thread starts in INIT");
    CHECK(v.counters.configs == 0 && v.counters.products == 0 && v.counters.loads == 0);
    g4v_tile_config back;
    g4v_amx_emu_sttilecfg(&back);
    CHECK(memcmp(&back, &cfg, sizeof back) == 0);
}

/* ---- a random full product against a scalar model ---- */

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* A bf16 with a random sign, an exponent in [-4, 4] and a random 7-bit fraction; now and then a
 * zero or a denormal. */
static uint16_t rnd_bf16(void) {
    const uint32_t r = rnd();
    if (r % 61 == 0) return (uint16_t)(0x0001 + (r >> 8) % 0x7f) | (uint16_t)((r & 1) << 15);
    if (r % 53 == 0) return 0;
    const uint32_t sign = (r >> 1) & 1, exp = 127 - 4 + (r >> 2) % 9, frac = (r >> 8) & 0x7f;
    return (uint16_t)(sign << 15 | exp << 7 | frac);
}

/* The model, from the definition (SDM TDPBF16PS): operands as real numbers with denormals as
 * zero, each chain's step rounded once to fp32. The values are bounded (|bf16| < 32, 16 pairs)
 * so every sum below is exact in double: rounding that double to float is the one rounding of
 * an fp32 FMA or add. No result of these bounded values is an fp32 denormal unless it is 0. */
static double bf16_value(uint16_t h) {
    if ((h & 0x7f80) == 0) return 0.0; /* zero or denormal */
    const int e = (h >> 7) & 0xff;
    const double v = ldexp(1.0 + (h & 0x7f) / 128.0, e - 127);
    return (h & 0x8000) ? -v : v;
}

static float model_c(float c, const uint16_t *arow, const uint16_t (*b)[32], int n, int K) {
    float even = 0.0f, odd = 0.0f;
    for (int k = 0; k < K; k++) {
        even = (float)((double)even + bf16_value(arow[2 * k]) * bf16_value(b[k][2 * n]));
        odd = (float)((double)odd + bf16_value(arow[2 * k + 1]) * bf16_value(b[k][2 * n + 1]));
    }
    const float tmp = (float)((double)even + (double)odd);
    if (fpclassify(c) == FP_SUBNORMAL) c = copysignf(0.0f, c);
    return (float)((double)c + (double)tmp);
}

static void test_random_product(void) {
    const int shape[3][2] = {{16, 64}, {16, 64}, {16, 64}};
    g4v_tile_config cfg = cfg_of(3, shape);
    g4v_amx_emu_ldtilecfg(&cfg);
    static uint16_t a[16][32], b[16][32];
    static float c[16][16], want[16][16], got[16][16];
    int bad = 0, changed = 0;
    for (int round = 0; round < 20; round++) {
        for (int r = 0; r < 16; r++)
            for (int j = 0; j < 32; j++) {
                a[r][j] = rnd_bf16();
                b[r][j] = rnd_bf16();
            }
        for (int m = 0; m < 16; m++)
            for (int n = 0; n < 16; n++) {
                /* exponent in [-8, 8], a full random fraction; now and then a denormal */
                const uint32_t r = rnd();
                c[m][n] = r % 31 ? from_bits((r & 0x80000000u) | (127u - 8 + r % 17) << 23 |
                                             (rnd() & 0x7fffff))
                                 : from_bits(rnd() & 0x807fffffu);
                want[m][n] = model_c(c[m][n], a[m], (const uint16_t(*)[32])b, n, 16);
                /* twice: the second product accumulates on the first's result */
                want[m][n] = model_c(want[m][n], a[m], (const uint16_t(*)[32])b, n, 16);
            }
        g4v_amx_emu_tileloadd(0, c, 64);
        g4v_amx_emu_tileloadd(1, a, 64);
        g4v_amx_emu_tileloadd(2, b, 64);
        g4v_amx_emu_tdpbf16ps(0, 1, 2);
        g4v_amx_emu_tdpbf16ps(0, 1, 2);
        g4v_amx_emu_tilestored(0, got, 64);
        for (int m = 0; m < 16; m++)
            for (int n = 0; n < 16; n++) {
                if (bits(got[m][n]) != bits(want[m][n]) && bad++ < 5)
                    fprintf(stderr, "round %d (%d, %d): emulator %a, model %a\n", round, m, n,
                            got[m][n], want[m][n]);
                changed += bits(got[m][n]) != bits(c[m][n]);
            }
    }
    CHECK_MSG(bad == 0, "%d of 20 x 256 outputs differ from the scalar model", bad);
    CHECK(changed > 20 * 250);
}

/* ---- INT8 ---- */

typedef void (*dp_fn)(int, int, int);

/* C += A . B for one form, against int64 sums wrapped to 32 bits. */
static void int8_case(dp_fn f, int sa, int sb, const uint8_t a[16][64], const uint8_t b[16][64],
                      const int32_t c[16][16], const char *name) {
    const int shape[3][2] = {{16, 64}, {16, 64}, {16, 64}};
    g4v_tile_config cfg = cfg_of(3, shape);
    g4v_amx_emu_ldtilecfg(&cfg);
    int32_t got[16][16];
    g4v_amx_emu_tileloadd(0, c, 64);
    g4v_amx_emu_tileloadd(1, a, 64);
    g4v_amx_emu_tileloadd(2, b, 64);
    f(0, 1, 2);
    g4v_amx_emu_tilestored(0, got, 64);
    int bad = 0;
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            int64_t s = c[m][n];
            for (int k = 0; k < 16; k++)
                for (int i = 0; i < 4; i++) {
                    const int64_t x = sa ? (int8_t)a[m][4 * k + i] : a[m][4 * k + i];
                    const int64_t y = sb ? (int8_t)b[k][4 * n + i] : b[k][4 * n + i];
                    s += x * y;
                }
            const uint32_t want = (uint32_t)(uint64_t)s;
            bad += (uint32_t)got[m][n] != want;
        }
    CHECK_MSG(bad == 0, "%s: %d outputs differ from the wrapped int64 sums", name, bad);
}

static void test_int8(void) {
    static uint8_t a[16][64], b[16][64];
    static int32_t c[16][16];
    const dp_fn f[4] = {g4v_amx_emu_tdpbssd, g4v_amx_emu_tdpbsud, g4v_amx_emu_tdpbusd,
                        g4v_amx_emu_tdpbuud};
    const int sa[4] = {1, 1, 0, 0}, sb[4] = {1, 0, 1, 0};
    const char *name[4] = {"tdpbssd", "tdpbsud", "tdpbusd", "tdpbuud"};
    /* A all 0xff, B all 0x80: (-1 or 255) x (-128 or 128) over 64 bytes: which operand each
     * letter belongs to shows in the sign and size */
    const int32_t want_ff_80[4] = {64 * 128, -64 * 128, 64 * 255 * -128, 64 * 255 * 128};
    /* A all 0x80, B all 0x80 and A, B all 0xff */
    const int32_t want_80_80[4] = {64 * 16384, 64 * -128 * 128, 64 * 128 * -128, 64 * 16384};
    const int32_t want_ff_ff[4] = {64, 64 * -255, 64 * -255, 64 * 65025};
    const struct {
        uint8_t av, bv;
        const int32_t *want;
    } fill[3] = {{0xff, 0x80, want_ff_80}, {0x80, 0x80, want_80_80}, {0xff, 0xff, want_ff_ff}};
    memset(c, 0, sizeof c);
    for (int i = 0; i < 3; i++) {
        memset(a, fill[i].av, sizeof a);
        memset(b, fill[i].bv, sizeof b);
        for (int v = 0; v < 4; v++) {
            int8_case(f[v], sa[v], sb[v], (const uint8_t(*)[64])a, (const uint8_t(*)[64])b,
                      (const int32_t(*)[16])c, name[v]);
            int32_t got[16][16];
            g4v_amx_emu_tilestored(0, got, 64);
            CHECK_MSG(got[15][15] == fill[i].want[v], "%s with A 0x%02x, B 0x%02x: %d, want %d",
                      name[v], fill[i].av, fill[i].bv, (int)got[15][15], (int)fill[i].want[v]);
        }
    }
    /* wrapping: C = INT32_MAX plus a positive sum wraps below zero (no saturation) */
    memset(a, 0xff, sizeof a);
    memset(b, 0xff, sizeof b);
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) c[m][n] = INT32_MAX;
    int8_case(g4v_amx_emu_tdpbuud, 0, 0, (const uint8_t(*)[64])a, (const uint8_t(*)[64])b,
              (const int32_t(*)[16])c, "tdpbuud wrapping");
    int32_t got[16][16];
    g4v_amx_emu_tilestored(0, got, 64);
    CHECK(got[3][5] == (int32_t)(0x7fffffffu + 64u * 65025u));
    CHECK(got[3][5] < 0);
    /* random bytes (extremes included) and random C, each form */
    for (int round = 0; round < 4; round++) {
        for (int r = 0; r < 16; r++)
            for (int j = 0; j < 64; j++) {
                const uint32_t x = rnd();
                a[r][j] = x % 7 == 0 ? 0x80 : x % 11 == 0 ? 0xff : x % 13 == 0 ? 0x7f : (uint8_t)x;
                b[r][j] = (uint8_t)(x >> 8);
            }
        for (int m = 0; m < 16; m++)
            for (int n = 0; n < 16; n++) c[m][n] = (int32_t)(rnd() << 16 ^ rnd());
        for (int v = 0; v < 4; v++)
            int8_case(f[v], sa[v], sb[v], (const uint8_t(*)[64])a, (const uint8_t(*)[64])b,
                      (const int32_t(*)[16])c, name[v]);
    }
}

int main(void) {
    test_sdm_order();
    test_denormals();
    test_load_store();
    test_dp_zero_fill();
    test_faults();
    test_config_and_counters();
    test_per_thread();
    test_random_product();
    test_int8();
    g4v_amx_emu_tilerelease();
    return test_summary("test_amx_emu");
}
