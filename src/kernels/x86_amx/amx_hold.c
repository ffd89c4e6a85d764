/* amx_hold.c - the start-up self-test's tile-data check (amx_twins.h): all eight tiles loaded
 * with known bytes, then sched_yield and a short sleep (the thread leaves the core; its tile
 * state is saved and restored by the kernel's XSAVE/XRSTOR), then stored and compared. Public
 * reports saw tile data zeroed across preemption on some KVM guests, and Intel erratum SPR4 can
 * save tile data as zeros on a VM exit during XSAVE (../../docs/ARCHITECTURE.md §3 "AMX"). */
#include "amx_tile.h"
#include "amx_hold.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* In static storage: the config stores cannot be dropped before ldtilecfg (AMX.md's GCC 12
 * trap; amx_tile.h's wrapper reads the whole struct anyway). Eight tiles of 16 x 64 bytes. */
static const g4v_tile_config hold_cfg = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

enum { TILE_BYTES = 16 * 64 };


#define HOLD_LOAD_ALL_(src)                                                                        \
    do {                                                                                           \
        TILE_LOAD(0, (src) + 0 * TILE_BYTES, 64);                                                  \
        TILE_LOAD(1, (src) + 1 * TILE_BYTES, 64);                                                  \
        TILE_LOAD(2, (src) + 2 * TILE_BYTES, 64);                                                  \
        TILE_LOAD(3, (src) + 3 * TILE_BYTES, 64);                                                  \
        TILE_LOAD(4, (src) + 4 * TILE_BYTES, 64);                                                  \
        TILE_LOAD(5, (src) + 5 * TILE_BYTES, 64);                                                  \
        TILE_LOAD(6, (src) + 6 * TILE_BYTES, 64);                                                  \
        TILE_LOAD(7, (src) + 7 * TILE_BYTES, 64);                                                  \
    } while (0)
#define HOLD_STORE_ALL_(dst)                                                                       \
    do {                                                                                           \
        TILE_STORE(0, (dst) + 0 * TILE_BYTES, 64);                                                 \
        TILE_STORE(1, (dst) + 1 * TILE_BYTES, 64);                                                 \
        TILE_STORE(2, (dst) + 2 * TILE_BYTES, 64);                                                 \
        TILE_STORE(3, (dst) + 3 * TILE_BYTES, 64);                                                 \
        TILE_STORE(4, (dst) + 4 * TILE_BYTES, 64);                                                 \
        TILE_STORE(5, (dst) + 5 * TILE_BYTES, 64);                                                 \
        TILE_STORE(6, (dst) + 6 * TILE_BYTES, 64);                                                 \
        TILE_STORE(7, (dst) + 7 * TILE_BYTES, 64);                                                 \
    } while (0)

int g4v_amx_hold_check(int rounds, int sleep_us, char *why, size_t cap) {
    static _Thread_local unsigned char src[8 * TILE_BYTES] __attribute__((aligned(64)));
    static _Thread_local unsigned char dst[8 * TILE_BYTES] __attribute__((aligned(64)));
    char tmp[8];
    if (!why || !cap) why = tmp, cap = sizeof tmp;
    for (int r = 0; r < rounds; r++) {
        uint32_t x = 0x9e3779b9u * (uint32_t)(r + 1); /* no zero byte pattern: zeros must show */
        for (size_t i = 0; i < sizeof src; i++) {
            x = x * 1664525u + 1013904223u;
            src[i] = (unsigned char)((x >> 24) | 1);
        }
        memset(dst, 0, sizeof dst);
        TILE_LOADCONFIG(&hold_cfg);
        HOLD_LOAD_ALL_(src);
        sched_yield();
        struct timespec ts = {0, (long)sleep_us * 1000L};
        nanosleep(&ts, NULL);
        sched_yield();
        HOLD_STORE_ALL_(dst);
        TILE_RELEASE();
        for (size_t i = 0; i < sizeof src; i++)
            if (src[i] != dst[i]) {
                snprintf(why, cap,
                         "tile data lost across sched_yield and a %d us sleep (round %d, tile %zu "
                         "row %zu byte %zu: 0x%02x, want 0x%02x)",
                         sleep_us, r, i / TILE_BYTES, i % TILE_BYTES / 64, i % 64, dst[i], src[i]);
                return 0;
            }
    }
    snprintf(why, cap, "%s: tile data held across %d rounds of sched_yield and a %d us sleep",
             G4V_TILES_EMULATED ? "emulated" : "hardware", rounds, sleep_us);
    return 1;
}

void g4v_amx_tile_release(void) {
    TILE_RELEASE();
}
