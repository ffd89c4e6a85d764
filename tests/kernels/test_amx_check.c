/* test_amx_check.c - the AMX start-up self-test and its place in dispatch (kernels/amx_check.h):
 * features without G4V_CPU_AMX pass through and never start it; on this CPU the kernel tables'
 * features hold the AMX bits exactly when base/amx.c granted the tiles and the self-test passed;
 * the reason g4v info prints; G4V_ISA=avx512-noamx; first calls from several threads at once (a
 * pthread_once: `make tsan` runs this test). In a G4V_SIMDE build the self-test itself runs on
 * the emulator (the tile kernels' twins against themselves: it must pass once they are in). On a
 * CPU with AMX the real self-test runs; elsewhere that part is skipped, saying why. */
#include "base/amx.h"
#include "base/cpu.h"
#include "kernels/amx_check.h"
#include "kernels/dispatch.h"
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned AMX_BITS = G4V_CPU_AMX | G4V_CPU_AMX_INT8;

enum { NTHREADS = 4 };
static unsigned seen[NTHREADS];
static int verdicts[NTHREADS];

static void *first_call(void *arg) {
    int i = (int)(size_t)arg;
    seen[i] = g4v_kernel_features();
    char why[256];
    verdicts[i] = g4v_amx_check_verdict(why, sizeof why);
    return NULL;
}

static void test_threads(void) {
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        CHECK(pthread_create(&t[i], NULL, first_call, (void *)(size_t)i) == 0);
    for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
    for (int i = 1; i < NTHREADS; i++)
        CHECK_MSG(seen[i] == seen[0] && verdicts[i] == verdicts[0],
                  "thread %d: features 0x%x verdict %d, thread 0: 0x%x %d", i, seen[i], verdicts[i],
                  seen[0], verdicts[0]);
}

static void test_dispatch(void) {
    char why[256], verdict[256], base[256];
    /* features without the tile bit: unchanged, the test not started */
    const unsigned plain = G4V_CPU_AVX2 | G4V_CPU_AVX512 | G4V_CPU_AVX512BF16;
    CHECK(g4v_amx_check_filter(plain) == plain);
    CHECK(g4v_amx_check_filter(0) == 0);
    unsigned cpu = g4v_cpu_features();
    int granted = g4v_amx_status(base, sizeof base);
    CHECK_MSG(!!(cpu & G4V_CPU_AMX) == granted, "G4V_CPU_AMX %d, base/amx.c says %d (%s)",
              !!(cpu & G4V_CPU_AMX), granted, base);
    int v = g4v_amx_check_verdict(verdict, sizeof verdict);
    int usable = g4v_amx_dispatch_status(why, sizeof why);
#ifndef G4V_SIMDE
    unsigned kf = g4v_kernel_features();
    CHECK_MSG((kf & AMX_BITS) == (v == 1 ? (cpu & AMX_BITS) : 0u),
              "kernel features 0x%x, cpu 0x%x, verdict %d (%s)", kf, cpu, v, verdict);
    CHECK((kf & ~AMX_BITS) == (cpu & ~AMX_BITS)); /* nothing else is touched */
#endif
    CHECK_MSG(usable == (v == 1), "usable %d, verdict %d: %s / %s", usable, v, why, verdict);
    if (!granted) {
        CHECK_MSG(v == -1 && !strncmp(verdict, "not run", 7), "verdict %d: %s", v, verdict);
        CHECK_MSG(!strcmp(why, base), "reason \"%s\", base/amx.c's \"%s\"", why, base);
        printf("SKIP hardware self-test: %s\n", base);
    } else {
        CHECK_MSG(v == 0 || v == 1, "verdict %d: %s", v, verdict);
        if (v == 1) CHECK(strstr(why, "self-test passed") && !strncmp(verdict, "passed: ", 8));
        else CHECK(strstr(why, "self-test failed") && !strncmp(verdict, "failed: ", 8));
        /* G4V_ISA=avx512-noamx: the tiles left out, the reason says so */
        setenv("G4V_ISA", "avx512-noamx", 1);
        CHECK(!(g4v_kernel_features() & AMX_BITS));
        CHECK(g4v_amx_dispatch_status(why, sizeof why) == 0 && strstr(why, "avx512-noamx"));
        unsetenv("G4V_ISA");
    }
    printf("amx dispatch: %s\namx self-test: %s\n", why, verdict);
}

#ifdef G4V_SIMDE
#include "kernels/amx_emu.h"
#include "kernels/x86_amx/amx_hold.h"
/* The self-test over emulated tiles: what it checks on the first AMX machine, proven here. */
static void test_emulated_run(void) {
    char why[256], have[128];
    int ok = g4v_amx_check_run(why, sizeof why);
    if (g4v_amx_check_have_kernels(have, sizeof have))
        CHECK_MSG(ok, "emulated self-test failed: %s", why);
    else
        CHECK_MSG(!ok && strstr(why, "not in this build"), "without the kernels (%s): %d %s", have,
                  ok, why);
    printf("emulated self-test: %s: %s\n", ok ? "passed" : "failed", why);
    /* the tile-data part alone: eight tiles loaded and stored per round, then released */
    g4v_amx_emu_counters c;
    g4v_amx_emu_counters_reset();
    CHECK_MSG(g4v_amx_hold_check(2, 100, why, sizeof why), "hold check: %s", why);
    g4v_amx_emu_counters_get(&c);
    CHECK_MSG(c.loads == 16 && c.stores == 16 && c.configs == 2 && c.load_bytes == 16 * 1024,
              "tile traffic: %llu loads (%llu bytes), %llu stores, %llu configs",
              (unsigned long long)c.loads, (unsigned long long)c.load_bytes,
              (unsigned long long)c.stores, (unsigned long long)c.configs);
    printf("hold check: %s\n", why);
}
#endif

int main(void) {
    test_threads();
    test_dispatch();
#ifdef G4V_SIMDE
    test_emulated_run();
#endif
    return test_summary("test_amx_check");
}
