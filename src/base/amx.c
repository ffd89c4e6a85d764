/* amx.c - AMX detection (amx.h): CPUID, XCR0 and the kernel's tile permission, and the reason
 * when AMX cannot be used. Never executes a tile instruction. */
#include "amx.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/auxv.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define G4V_AMX_PROBE 1
#else
#define G4V_AMX_PROBE 0
#endif

int g4v_amx_decide(const g4v_amx_facts *f, char *why, size_t cap) {
    char tmp[8];
    if (!why || !cap) why = tmp, cap = sizeof tmp;
    const unsigned long long tile_bits =
        1ull << G4V_AMX_XTILECFG | 1ull << G4V_AMX_XTILEDATA;
    if (!f->x86) {
        snprintf(why, cap, "no AMX: not an x86-64 Linux build");
        return 0;
    }
    int tile = !!(f->cpuid7_edx & G4V_AMX_CPUID_TILE), bf16 = !!(f->cpuid7_edx & G4V_AMX_CPUID_BF16),
        int8 = !!(f->cpuid7_edx & G4V_AMX_CPUID_INT8);
    if (!tile || !bf16) {
        snprintf(why, cap, "this CPU has no AMX (CPUID leaf 7 EDX: AMX-TILE %s, AMX-BF16 %s)",
                 tile ? "yes" : "no", bf16 ? "yes" : "no");
        return 0;
    }
    if ((f->xcr0 & tile_bits) != tile_bits) {
        snprintf(why, cap,
                 "the OS has not enabled the tile state (XCR0 0x%llx: bits 17-18 XTILECFG, "
                 "XTILEDATA not both set)",
                 f->xcr0);
        return 0;
    }
    if (f->supp_rc != 0) {
        snprintf(why, cap,
                 "the kernel cannot grant the tile state (ARCH_GET_XCOMP_SUPP: %s; Linux 5.16 or "
                 "later needed)",
                 f->supp_rc == -2 ? "not asked" : strerror(f->supp_errno));
        return 0;
    }
    if (!(f->supp & 1ull << G4V_AMX_XTILEDATA)) {
        snprintf(why, cap,
                 "the kernel does not offer the tile data state (ARCH_GET_XCOMP_SUPP mask 0x%llx "
                 "lacks bit 18)",
                 f->supp);
        return 0;
    }
    if (f->perm_rc != 0) {
        snprintf(why, cap, "the kernel refused the tile permission: %s%s",
                 f->perm_rc == -2 ? "not asked" : strerror(f->perm_errno),
                 f->perm_errno != ENOSPC || f->perm_rc == -2
                     ? ""
                 : f->perm_retried
                     ? " (a sigaltstack too small for the signal frame with tile data, on another "
                       "thread: this thread's was enlarged and the request retried)"
                     : " (a sigaltstack too small for the signal frame with tile data, on another "
                       "thread: size alternate stacks with sysconf(_SC_MINSIGSTKSZ))");
        return 0;
    }
    if (!f->kernels) {
        snprintf(why, cap,
                 "no AMX kernels in this build yet (the CPU has AMX-BF16%s, the OS and the kernel "
                 "grant the tiles)",
                 int8 ? " and AMX-INT8" : "");
        return 0;
    }
    if (f->perm_retried)
        snprintf(why, cap,
                 "AMX usable (AMX-BF16%s; the tile permission was granted after this thread's "
                 "sigaltstack was enlarged from %lu to %lu bytes)",
                 int8 ? ", AMX-INT8" : "", f->altstack_was, f->altstack_now);
    else
        snprintf(why, cap, "AMX usable (AMX-BF16%s)", int8 ? ", AMX-INT8" : "");
    return 1;
}

/* The last sigaltstack the retry installed: never freed (see below), and kept here so that it
 * stays reachable for leak checkers even after its thread replaced or disabled it. */
static void *enlarged_stack;

void g4v_amx_request_perm_with(int (*req)(void *ctx), void *ctx, g4v_amx_facts *f) {
    f->perm_retried = 0;
    f->altstack_was = f->altstack_now = 0;
    errno = 0;
    f->perm_rc = req(ctx);
    f->perm_errno = f->perm_rc ? errno : 0;
    if (f->perm_rc == 0 || f->perm_errno != ENOSPC) return;
    /* ENOSPC: some thread's sigaltstack is below the signal frame with tile data. Where it is
     * this thread's (faulthandler's, installed on the main thread), a larger one in its place
     * lets the kernel grant the tiles; the owner's buffer is left alone (it may free it). */
    stack_t old;
    if (sigaltstack(NULL, &old) != 0 || (old.ss_flags & (SS_DISABLE | SS_ONSTACK))) return;
    size_t need = 64u << 10;
#if defined(__linux__) && defined(AT_MINSIGSTKSZ)
    unsigned long min = getauxval(AT_MINSIGSTKSZ);
    if (min && 4 * min > need) need = 4 * min;
#endif
    if (old.ss_size >= need) return; /* not this thread's: nothing to fix from here */
    stack_t big = {.ss_sp = malloc(need), .ss_size = need, .ss_flags = 0};
    if (!big.ss_sp || sigaltstack(&big, NULL) != 0) {
        free(big.ss_sp);
        return;
    }
    enlarged_stack = big.ss_sp;
    f->perm_retried = 1;
    f->altstack_was = (unsigned long)old.ss_size;
    f->altstack_now = (unsigned long)need;
    errno = 0;
    f->perm_rc = req(ctx);
    f->perm_errno = f->perm_rc ? errno : 0;
    /* the enlarged stack stays installed either way: once the tiles are granted the kernel
     * refuses a stack below the enlarged frame (ENOMEM), so the old one could not come back;
     * it is never freed (a signal may be running on it at any time) */
}

#if G4V_AMX_PROBE
static int request_xtiledata(void *ctx) {
    (void)ctx;
    return (int)syscall(SYS_arch_prctl, G4V_AMX_ARCH_REQ_XCOMP_PERM,
                        (unsigned long)G4V_AMX_XTILEDATA);
}
#endif

static g4v_amx_facts probed;
static int probed_ok;
static char probed_why[256];
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void probe(void) {
    g4v_amx_facts f = {.supp_rc = -2, .perm_rc = -2};
#if G4V_AMX_PROBE
    f.x86 = 1;
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, 0) >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f.cpuid7_edx = d;
    }
    if (__get_cpuid(1, &a, &b, &c, &d) && (c >> 27 & 1)) { /* OSXSAVE: XGETBV is allowed */
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        f.xcr0 = (unsigned long long)hi << 32 | lo;
    }
    const unsigned long long tile_bits =
        1ull << G4V_AMX_XTILECFG | 1ull << G4V_AMX_XTILEDATA;
    /* the kernel is asked only where the tiles exist: a CPU without them needs no permission */
    if ((f.cpuid7_edx & G4V_AMX_CPUID_TILE) && (f.cpuid7_edx & G4V_AMX_CPUID_BF16) &&
        (f.xcr0 & tile_bits) == tile_bits) {
        unsigned long long mask = 0;
        errno = 0;
        f.supp_rc = (int)syscall(SYS_arch_prctl, G4V_AMX_ARCH_GET_XCOMP_SUPP, &mask);
        f.supp_errno = errno;
        f.supp = mask;
        if (f.supp_rc == 0 && (mask & 1ull << G4V_AMX_XTILEDATA))
            g4v_amx_request_perm_with(request_xtiledata, NULL, &f);
    }
    f.kernels = 1; /* every x86-64 build compiles kernels/x86_amx/ */
#endif
    probed = f;
    probed_ok = g4v_amx_decide(&f, probed_why, sizeof probed_why);
}

void g4v_amx_probe(g4v_amx_facts *out) {
    pthread_once(&probe_once, probe);
    *out = probed;
}

int g4v_amx_status(char *why, size_t cap) {
    pthread_once(&probe_once, probe);
    if (why && cap) snprintf(why, cap, "%s", probed_why);
    return probed_ok;
}
