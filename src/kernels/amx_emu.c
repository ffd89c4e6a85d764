/* amx_emu.c - Intel AMX's tile unit in portable C (kernels/amx_emu.h): per-thread configuration
 * and tiles, LDTILECFG's checks, the tile loads and stores with their zero fill, and the dot
 * products, TDPBF16PS in the SDM's order of additions with its denormal rules
 * (docs/NUMERICS.md §13). Plain C11 for every target: the tile kernels run on it where the CPU
 * has no AMX, so their results must be the instruction's own, bit for bit, and every case where
 * the instruction would fault stops the program (or reaches a test's hook) instead of computing
 * something.
 *
 * Floating point: all arithmetic is fp32 in the default environment (round to nearest even,
 * no flush modes), which this file never reads or changes; the flushing the instruction does is
 * done on the bits. fmaf gives the single rounding of the SDM's FMA. */
#include "kernels/amx_emu.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if FLT_EVAL_METHOD != 0
#error "amx_emu.c needs fp32 arithmetic evaluated in fp32 (FLT_EVAL_METHOD 0)"
#endif

enum { TILES = 8, MAX_ROWS = 16, MAX_COLSB = 64 };

typedef struct {
    /* the loaded configuration; palette 0 (all zero) is INIT: no tile instruction may run */
    g4v_tile_config cfg;
    uint8_t data[TILES][MAX_ROWS][MAX_COLSB];
    g4v_amx_emu_counters counters;
    g4v_amx_emu_fault_fn hook;
} emu_state;

/* Zero-initialised: every thread starts in INIT, as a thread does on hardware. */
static _Thread_local emu_state st;

/* One line naming the exception, the instruction and the reason; the hook's or stderr's. */
static void fault(const char *exc, const char *insn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fault(const char *exc, const char *insn, const char *fmt, ...) {
    char msg[256];
    int n = snprintf(msg, sizeof msg, "amx emulator: %s in %s: ", exc, insn);
    if (n < 0 || (size_t)n >= sizeof msg) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    if (st.hook) {
        st.hook(msg);
        return;
    }
    fprintf(stderr, "%s\n", msg);
    abort();
}

static int configured(void) { return st.cfg.palette != 0; }

/* The checks every tile instruction but the configuration ones shares: tiles configured (not
 * INIT) and a tile number that exists. 1 when the instruction may go on. */
static int tile_ok(const char *insn, int t) {
    if (!configured()) {
        fault("#UD", insn, "tiles not configured (INIT state: no ldtilecfg, or tilerelease)");
        return 0;
    }
    if (t < 0 || t >= TILES) {
        fault("#UD", insn, "tmm%d does not exist (tiles 0-7)", t);
        return 0;
    }
    return 1;
}

void g4v_amx_emu_ldtilecfg(const g4v_tile_config *cfg) {
    static const char *insn = "ldtilecfg";
    g4v_tile_config c;
    memcpy(&c, cfg, sizeof c);
    if (c.palette == 0) { /* INIT: the rest of the operand is not looked at */
        memset(&st.cfg, 0, sizeof st.cfg);
        memset(st.data, 0, sizeof st.data);
        st.counters.configs++;
        return;
    }
    if (c.palette != 1) {
        fault("#GP", insn, "palette %u (only 0 and 1 exist)", c.palette);
        return;
    }
    if (c.start_row != 0) {
        /* legal on hardware (the restart point of an interrupted tile load or store); our
         * kernels never set it and the emulator does not model the restart */
        fault("#GP", insn, "start_row %u is not 0 (restart not emulated)", c.start_row);
        return;
    }
    for (int i = 0; i < 14; i++)
        if (c.reserved[i]) {
            fault("#GP", insn, "reserved byte %d is not zero", 2 + i);
            return;
        }
    for (int t = TILES; t < 16; t++)
        if (c.colsb[t] || c.rows[t]) {
            fault("#GP", insn, "tile %d configured (palette 1 has tiles 0-7 only)", t);
            return;
        }
    for (int t = 0; t < TILES; t++) {
        if (c.colsb[t] > MAX_COLSB) {
            fault("#GP", insn, "colsb of tmm%d is %u (> 64)", t, c.colsb[t]);
            return;
        }
        if (c.rows[t] > MAX_ROWS) {
            fault("#GP", insn, "rows of tmm%d is %u (> 16)", t, c.rows[t]);
            return;
        }
        if ((c.rows[t] == 0) != (c.colsb[t] == 0)) {
            fault("#GP", insn, "tmm%d has rows %u and colsb %u (only one of them zero)", t,
                  c.rows[t], c.colsb[t]);
            return;
        }
    }
    st.cfg = c;
    memset(st.data, 0, sizeof st.data);
    st.counters.configs++;
}

void g4v_amx_emu_sttilecfg(g4v_tile_config *cfg) {
    /* INIT is all zeros in st.cfg, which is what STTILECFG writes then */
    memcpy(cfg, &st.cfg, sizeof *cfg);
}

void g4v_amx_emu_tilerelease(void) {
    memset(&st.cfg, 0, sizeof st.cfg);
    memset(st.data, 0, sizeof st.data);
}

void g4v_amx_emu_tileloadd(int t, const void *base, size_t stride) {
    if (!tile_ok("tileloadd", t)) return;
    const unsigned rows = st.cfg.rows[t], colsb = st.cfg.colsb[t];
    const unsigned char *src = base;
    memset(st.data[t], 0, sizeof st.data[t]);
    for (unsigned r = 0; r < rows; r++) memcpy(st.data[t][r], src + (size_t)r * stride, colsb);
    st.counters.loads++;
    st.counters.load_bytes += (uint64_t)rows * colsb;
}

void g4v_amx_emu_tilestored(int t, void *base, size_t stride) {
    if (!tile_ok("tilestored", t)) return;
    const unsigned rows = st.cfg.rows[t], colsb = st.cfg.colsb[t];
    unsigned char *dst = base;
    for (unsigned r = 0; r < rows; r++) memcpy(dst + (size_t)r * stride, st.data[t][r], colsb);
    st.counters.stores++;
}

void g4v_amx_emu_tilezero(int t) {
    if (!tile_ok("tilezero", t)) return;
    memset(st.data[t], 0, sizeof st.data[t]);
}

/* The shape checks of every TDP*: M = c.rows, N = c.colsb / 4, K = a.colsb / 4 (groups of four
 * bytes); 1 when the product may run. */
static int dp_ok(const char *insn, int c, int a, int b) {
    if (!tile_ok(insn, c) || !tile_ok(insn, a) || !tile_ok(insn, b)) return 0;
    if (c == a || c == b || a == b) {
        fault("#UD", insn, "the same tile twice (dst tmm%d, a tmm%d, b tmm%d)", c, a, b);
        return 0;
    }
    const int ts[3] = {c, a, b};
    const char *role[3] = {"dst", "a", "b"};
    for (int i = 0; i < 3; i++) {
        if (st.cfg.rows[ts[i]] == 0) {
            fault("#UD", insn, "%s tile tmm%d is unconfigured", role[i], ts[i]);
            return 0;
        }
        if (st.cfg.colsb[ts[i]] % 4) {
            fault("#UD", insn, "colsb of %s tile tmm%d is %u (not a multiple of 4)", role[i], ts[i],
                  st.cfg.colsb[ts[i]]);
            return 0;
        }
    }
    const unsigned crows = st.cfg.rows[c], ccolsb = st.cfg.colsb[c];
    const unsigned arows = st.cfg.rows[a], acolsb = st.cfg.colsb[a];
    const unsigned brows = st.cfg.rows[b], bcolsb = st.cfg.colsb[b];
    if (ccolsb != bcolsb) {
        fault("#UD", insn, "dst colsb %u != b colsb %u", ccolsb, bcolsb);
        return 0;
    }
    if (crows != arows) {
        fault("#UD", insn, "dst rows %u != a rows %u", crows, arows);
        return 0;
    }
    if (acolsb / 4 != brows) {
        fault("#UD", insn, "a colsb / 4 = %u != b rows %u", acolsb / 4, brows);
        return 0;
    }
    if (ccolsb / 4 > 16) { /* unreachable with palette 1 (colsb <= 64); the SDM checks it */
        fault("#UD", insn, "N = dst colsb / 4 = %u > 16", ccolsb / 4);
        return 0;
    }
    return 1;
}

/* After a product: bytes past colsb and rows past rows of dst are zero. */
static void dp_zero_upper(int c) {
    const unsigned rows = st.cfg.rows[c], colsb = st.cfg.colsb[c];
    for (unsigned r = 0; r < rows; r++) memset(st.data[c][r] + colsb, 0, MAX_COLSB - colsb);
    for (unsigned r = rows; r < MAX_ROWS; r++) memset(st.data[c][r], 0, MAX_COLSB);
}

static inline uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A denormal becomes the zero of its sign (inputs: DAZ; results: FTZ). */
static inline float flush(float f) {
    uint32_t u = f32_bits(f);
    return (u & 0x7f800000u) ? f : bits_f32(u & 0x80000000u);
}

/* bf16 bits to fp32, denormals as signed zero. */
static inline float bf16_daz(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    return (u & 0x7f800000u) ? bits_f32(u) : bits_f32(u & 0x80000000u);
}

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (unsigned)p[1] << 8); }

void g4v_amx_emu_tdpbf16ps(int c, int a, int b) {
    if (!dp_ok("tdpbf16ps", c, a, b)) return;
    const unsigned M = st.cfg.rows[c], N = st.cfg.colsb[c] / 4u, K = st.cfg.colsb[a] / 4u;
    /* the operands as fp32 once, flushed: bf[k][n][0/1] is B's pair (k, n), af[m][k][0/1] A's */
    float af[MAX_ROWS][16][2], bf[16][16][2];
    for (unsigned m = 0; m < M; m++)
        for (unsigned k = 0; k < K; k++) {
            af[m][k][0] = bf16_daz(rd16(&st.data[a][m][4 * k]));
            af[m][k][1] = bf16_daz(rd16(&st.data[a][m][4 * k + 2]));
        }
    for (unsigned k = 0; k < K; k++)
        for (unsigned n = 0; n < N; n++) {
            bf[k][n][0] = bf16_daz(rd16(&st.data[b][k][4 * n]));
            bf[k][n][1] = bf16_daz(rd16(&st.data[b][k][4 * n + 2]));
        }
    for (unsigned m = 0; m < M; m++) {
        uint8_t *crow = st.data[c][m];
        for (unsigned n = 0; n < N; n++) {
            float even = 0.0f, odd = 0.0f;
            for (unsigned k = 0; k < K; k++) {
                even = flush(fmaf(af[m][k][0], bf[k][n][0], even));
                odd = flush(fmaf(af[m][k][1], bf[k][n][1], odd));
            }
            const float tmp = flush(even + odd);
            float acc;
            memcpy(&acc, crow + 4 * n, sizeof acc);
            acc = flush(flush(acc) + tmp);
            memcpy(crow + 4 * n, &acc, sizeof acc);
        }
    }
    dp_zero_upper(c);
    st.counters.products++;
}

/* The four integer forms: SA/SB say whether A's/B's bytes are signed. Sums wrap (mod 2^32). */
static inline void dp_int8(const char *insn, int c, int a, int b, int sa, int sb) {
    if (!dp_ok(insn, c, a, b)) return;
    const unsigned M = st.cfg.rows[c], N = st.cfg.colsb[c] / 4u, K = st.cfg.colsb[a] / 4u;
    for (unsigned m = 0; m < M; m++) {
        const uint8_t *arow = st.data[a][m];
        uint8_t *crow = st.data[c][m];
        for (unsigned n = 0; n < N; n++) {
            uint32_t acc;
            memcpy(&acc, crow + 4 * n, sizeof acc);
            for (unsigned k = 0; k < K; k++) {
                const uint8_t *bp = &st.data[b][k][4 * n];
                for (int i = 0; i < 4; i++) {
                    const int32_t x = sa ? (int32_t)(int8_t)arow[4 * k + i] : arow[4 * k + i];
                    const int32_t y = sb ? (int32_t)(int8_t)bp[i] : bp[i];
                    acc += (uint32_t)(x * y); /* |x * y| <= 65025: no overflow */
                }
            }
            memcpy(crow + 4 * n, &acc, sizeof acc);
        }
    }
    dp_zero_upper(c);
    st.counters.products++;
}

void g4v_amx_emu_tdpbssd(int c, int a, int b) { dp_int8("tdpbssd", c, a, b, 1, 1); }
void g4v_amx_emu_tdpbsud(int c, int a, int b) { dp_int8("tdpbsud", c, a, b, 1, 0); }
void g4v_amx_emu_tdpbusd(int c, int a, int b) { dp_int8("tdpbusd", c, a, b, 0, 1); }
void g4v_amx_emu_tdpbuud(int c, int a, int b) { dp_int8("tdpbuud", c, a, b, 0, 0); }

void g4v_amx_emu_tile_bytes(int t, uint8_t out[16][64]) {
    if (t >= 0 && t < TILES) memcpy(out, st.data[t], sizeof st.data[t]);
}

void g4v_amx_emu_counters_get(g4v_amx_emu_counters *out) { *out = st.counters; }

void g4v_amx_emu_counters_reset(void) { memset(&st.counters, 0, sizeof st.counters); }

void g4v_amx_emu_set_fault_hook(g4v_amx_emu_fault_fn fn) { st.hook = fn; }
