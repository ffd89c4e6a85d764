/* amx_hold.h - the start-up self-test's own tile code (amx_hold.c; kernels/amx_check.h): tile
 * data held across a sched_yield and a sleep, and TILERELEASE on the calling thread. Real
 * instructions (amx_tile.h): call only where G4V_CPU_AMX is set, or in a build whose tiles are
 * emulated (G4V_SIMDE). */
#ifndef G4V_KERNELS_X86_AMX_AMX_HOLD_H
#define G4V_KERNELS_X86_AMX_AMX_HOLD_H

#include <stddef.h>

/* 1 when every byte of all eight tiles (16 x 64 B each) came back after `rounds` rounds of:
 * load known bytes, sched_yield, sleep sleep_us microseconds, sched_yield, store; 0 with the
 * first difference in why. */
int g4v_amx_hold_check(int rounds, int sleep_us, char *why, size_t cap);

/* TILERELEASE on this thread (the tiles back to INIT: no tile state in signal frames, and the
 * core may enter its deep idle state). */
void g4v_amx_tile_release(void);

#endif
