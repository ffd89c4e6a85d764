/* amx.h - whether Intel AMX (the tile registers) could be used by this process, and why not: the
 * first half of AMX dispatch (docs/ARCHITECTURE.md §3 "AMX"). Detection only: nothing here
 * executes a tile instruction. base/cpu.c sets G4V_CPU_AMX (and G4V_CPU_AMX_INT8) exactly when
 * this says "usable"; the second half, the start-up self-test that runs the tile kernels against
 * their emulated twins, is the kernel layer's (kernels/amx_check.h), which clears the bits from
 * the kernel tables' features when it fails. This says which of the conditions fails first.
 *
 * The conditions, in order (Linux x86-64; elsewhere there is no AMX):
 *   1. CPUID leaf 7 sub-leaf 0, EDX: AMX-BF16 (bit 22), AMX-TILE (bit 24), AMX-INT8 (bit 25);
 *      tiles and BF16 are required, INT8 is reported;
 *   2. XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA): the OS manages the tile state;
 *   3. arch_prctl(ARCH_GET_XCOMP_SUPP = 0x1021) lists XTILEDATA (bit 18) among the dynamic
 *      features the kernel supports (Linux >= 5.16);
 *   4. arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18) grants the process the
 *      tile state (it fails, e.g., when a sigaltstack smaller than the enlarged signal frame is
 *      installed; gVisor and some seccomp filters refuse it). On ENOSPC (a thread's alternate
 *      signal stack is too small: CPython's faulthandler, which pytest turns on, installed one
 *      of SIGSTKSZ bytes before 3.11) and when the calling thread's own stack is the small one,
 *      the probe replaces it with one of max(64 KiB, 4 x AT_MINSIGSTKSZ) bytes (the handlers
 *      keep working: any stack serves SA_ONSTACK; the old one is left to its owner) and asks
 *      again, once; the reason then says so. Another thread's small stack cannot be fixed
 *      from here: the answer stays "refused";
 *   5. AMX kernels are compiled in (every x86-64 build: kernels/x86_amx/).
 * The permission of step 4 is per process and is requested only when steps 1-3 pass, once
 * (g4v_amx_status caches the answer). */
#ifndef G4V_BASE_AMX_H
#define G4V_BASE_AMX_H

#include <stddef.h>

/* What the probe found; the input of g4v_amx_decide. */
typedef struct g4v_amx_facts {
    int x86;                 /* an x86-64 build on Linux: the probe ran at all */
    unsigned cpuid7_edx;     /* CPUID.(EAX=7, ECX=0):EDX; 0 when leaf 7 is absent */
    unsigned long long xcr0; /* XGETBV(0); 0 without OSXSAVE */
    int supp_rc, supp_errno; /* ARCH_GET_XCOMP_SUPP: syscall result and errno (not run: -2) */
    unsigned long long supp; /* its feature mask */
    int perm_rc, perm_errno; /* ARCH_REQ_XCOMP_PERM: result and errno (not run: -2) */
    int perm_retried;        /* 1: the first request failed with ENOSPC, this thread's
                                sigaltstack was enlarged and perm_* are the second request's */
    unsigned long altstack_was, altstack_now; /* that stack's size before and after (bytes) */
    int kernels;             /* AMX kernels compiled into this build */
} g4v_amx_facts;

enum {
    G4V_AMX_CPUID_BF16 = 1u << 22, /* leaf 7 EDX */
    G4V_AMX_CPUID_TILE = 1u << 24,
    G4V_AMX_CPUID_INT8 = 1u << 25,
    G4V_AMX_XTILECFG = 17, /* XCR0 / xstate feature numbers */
    G4V_AMX_XTILEDATA = 18,
    G4V_AMX_ARCH_GET_XCOMP_SUPP = 0x1021,
    G4V_AMX_ARCH_REQ_XCOMP_PERM = 0x1023
};

/* Whether the facts allow AMX (1) or not (0), with the first failing condition's reason in why
 * ("this CPU has no AMX (...)", "the kernel refused the tile permission: <strerror>", "no AMX
 * kernels in this build yet", ...). Pure: the tests feed it rows of facts. */
int g4v_amx_decide(const g4v_amx_facts *f, char *why, size_t cap);

/* The facts of this CPU and process, asking the kernel for the tile permission only when the
 * CPU and XCR0 say the tiles exist. Runs once per process (thread-safe); later calls copy the
 * first answer. */
void g4v_amx_probe(g4v_amx_facts *out);

/* g4v_amx_decide over g4v_amx_probe's facts: 1 when AMX could be used, with the reason. */
int g4v_amx_status(char *why, size_t cap);

/* Step 4 with its one retry, over a request function (the probe passes the arch_prctl call;
 * tests pass a fake that refuses with ENOSPC while this thread's sigaltstack is small): fills
 * f->perm_rc, perm_errno, perm_retried, altstack_was, altstack_now. req returns 0 or -1 with
 * errno set, as the syscall does. */
void g4v_amx_request_perm_with(int (*req)(void *ctx), void *ctx, g4v_amx_facts *f);

#endif
