/* amx_check.h - the AMX start-up self-test: the second half of AMX dispatch (the first is
 * base/amx.h's CPUID, XCR0 and permission probe, which sets G4V_CPU_AMX). docs/ARCHITECTURE.md
 * §3 "AMX".
 *
 * Once per process (pthread_once), and only when g4v_cpu_features() has G4V_CPU_AMX (so never on
 * a CPU without AMX, and never while G4V_ISA caps the tiles off), on the first thread that asks
 * for the kernel tables' features:
 *   1. a small tile GEMM (one A micro-panel by one B panel over three K groups, the last one
 *      partly zero) through g4v_gemm_amx_bf16's packer and micro-kernel against its emulated
 *      twin g4v_gemm_amx_bf16_emu: the same bits;
 *   2. an attention block (FAST; 2 query heads on 1 kv head, 40 queries x 70 keys, head size 64
 *      and 72) through g4v_attention_amx against g4v_attention_amx_emu: the same bits;
 *   3. tile data held: all eight tiles loaded with known bytes, sched_yield, a 1 ms sleep,
 *      stored, compared, three rounds (x86_amx/amx_hold.c);
 * then TILERELEASE on that thread. A descriptor not in this build fails the test (the reason
 * names it). If any part fails, g4v_kernel_features() leaves G4V_CPU_AMX and G4V_CPU_AMX_INT8
 * out for the rest of the process, and the reason is kept for g4v info and /v1/info. */
#ifndef G4V_KERNELS_AMX_CHECK_H
#define G4V_KERNELS_AMX_CHECK_H

#include <stddef.h>

/* features less the AMX bits when they hold G4V_CPU_AMX and the self-test (run now, once, if it
 * has not run) fails; features unchanged otherwise. dispatch.c's g4v_kernel_features uses it. */
unsigned g4v_amx_check_filter(unsigned features);

/* The self-test's verdict: 1 passed, 0 failed, -1 not run (no G4V_CPU_AMX in g4v_cpu_features():
 * the CPU, the OS or G4V_ISA leaves the tiles out). why: "passed: ...", "failed: ...", or
 * "not run: ...". Runs the test if it is due (only where G4V_CPU_AMX is set). */
int g4v_amx_check_verdict(char *why, size_t cap);

/* What g4v_model_info reports as amx_usable / amx (the api layer asks here; base/ cannot call
 * the kernels): 1 when the kernel tables may take AMX variants now. why holds the deciding
 * reason: base/amx.c's ("this CPU has no AMX (...)", "the kernel refused the tile permission:
 * ..."), "G4V_ISA=<v> leaves the AMX tiles out (...)", "the AMX start-up self-test failed: ...",
 * or "AMX usable (...); start-up self-test passed". Runs the self-test if it is due. */
int g4v_amx_dispatch_status(char *why, size_t cap);

/* The self-test itself, run now on the calling thread (tests and bench/bench_amx.c; the tile
 * instructions are real, so only where G4V_CPU_AMX is set, or in a G4V_SIMDE build): 1 pass,
 * 0 fail, with the reason. */
int g4v_amx_check_run(char *why, size_t cap);

/* 1 when g4v_gemm_amx_bf16, g4v_attention_amx and their _emu twins are all linked in; else 0
 * naming the first missing one. */
int g4v_amx_check_have_kernels(char *why, size_t cap);

#endif
