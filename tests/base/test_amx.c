/* test_amx.c - AMX detection (src/base/amx.h): the decision over rows of facts, each condition's
 * reason, and the live probe against /proc/cpuinfo's flags (on a CPU without AMX the kernel is
 * never asked for the tile permission). No tile instruction runs. */
#include "base/amx.h"
#include "test_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_decide(void) {
    const unsigned spr = G4V_AMX_CPUID_BF16 | G4V_AMX_CPUID_TILE | G4V_AMX_CPUID_INT8;
    const unsigned long long xcr0 = 0x602e7ull, supp = 0x602e7ull; /* x87 .. XTILEDATA */
    const struct {
        g4v_amx_facts f;
        int usable;
        const char *reason;
    } rows[] = {
        {{.x86 = 0}, 0, "no AMX: not an x86-64 Linux build"},
        {{.x86 = 1, .cpuid7_edx = 0, .xcr0 = 0xe7, .supp_rc = -2, .perm_rc = -2}, 0,
         "this CPU has no AMX (CPUID leaf 7 EDX: AMX-TILE no, AMX-BF16 no)"},
        {{.x86 = 1, .cpuid7_edx = G4V_AMX_CPUID_TILE | G4V_AMX_CPUID_INT8, .xcr0 = xcr0,
          .supp_rc = -2, .perm_rc = -2},
         0, "this CPU has no AMX (CPUID leaf 7 EDX: AMX-TILE yes, AMX-BF16 no)"},
        {{.x86 = 1, .cpuid7_edx = spr, .xcr0 = 0x202e7ull, .supp_rc = -2, .perm_rc = -2}, 0,
         "the OS has not enabled the tile state"},
        {{.x86 = 1, .cpuid7_edx = spr, .xcr0 = xcr0, .supp_rc = -1, .supp_errno = EINVAL,
          .perm_rc = -2},
         0, "the kernel cannot grant the tile state (ARCH_GET_XCOMP_SUPP: Invalid argument"},
        {{.x86 = 1, .cpuid7_edx = spr, .xcr0 = xcr0, .supp = 0x2e7, .perm_rc = -2}, 0,
         "the kernel does not offer the tile data state"},
        {{.x86 = 1, .cpuid7_edx = spr, .xcr0 = xcr0, .supp = supp, .perm_rc = -1,
          .perm_errno = EPERM},
         0, "the kernel refused the tile permission: Operation not permitted"},
        {{.x86 = 1, .cpuid7_edx = spr, .xcr0 = xcr0, .supp = supp, .perm_rc = -1,
          .perm_errno = EINVAL},
         0, "the kernel refused the tile permission: Invalid argument"},
        {{.x86 = 1, .cpuid7_edx = spr, .xcr0 = xcr0, .supp = supp}, 0,
         "no AMX kernels in this build yet (the CPU has AMX-BF16 and AMX-INT8"},
        {{.x86 = 1, .cpuid7_edx = spr & ~(unsigned)G4V_AMX_CPUID_INT8, .xcr0 = xcr0, .supp = supp},
         0, "no AMX kernels in this build yet (the CPU has AMX-BF16, the OS"},
        {{.x86 = 1, .cpuid7_edx = spr, .xcr0 = xcr0, .supp = supp, .kernels = 1}, 1,
         "AMX usable (AMX-BF16, AMX-INT8)"},
        /* ENOSPC: a sigaltstack below the frame with tile data (faulthandler's, under pytest) */
        {{.x86 = 1, .cpuid7_edx = spr, .xcr0 = xcr0, .supp = supp, .perm_rc = -1,
          .perm_errno = ENOSPC, .kernels = 1},
         0, "the kernel refused the tile permission: No space left on device (a sigaltstack too "
            "small for the signal frame with tile data, on another thread: size alternate stacks"},
        {{.x86 = 1, .cpuid7_edx = spr, .xcr0 = xcr0, .supp = supp, .perm_rc = -1,
          .perm_errno = ENOSPC, .perm_retried = 1, .altstack_was = 8192, .altstack_now = 65536,
          .kernels = 1},
         0, "the kernel refused the tile permission: No space left on device (a sigaltstack too "
            "small for the signal frame with tile data, on another thread: this thread's was "
            "enlarged"},
        {{.x86 = 1, .cpuid7_edx = spr, .xcr0 = xcr0, .supp = supp, .perm_retried = 1,
          .altstack_was = 8192, .altstack_now = 65536, .kernels = 1},
         1, "AMX usable (AMX-BF16, AMX-INT8; the tile permission was granted after this thread's "
            "sigaltstack was enlarged from 8192 to 65536 bytes)"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char why[256];
        int got = g4v_amx_decide(&rows[i].f, why, sizeof why);
        CHECK_MSG(got == rows[i].usable, "row %zu: usable %d, want %d (%s)", i, got,
                  rows[i].usable, why);
        CHECK_MSG(!strncmp(why, rows[i].reason, strlen(rows[i].reason)),
                  "row %zu: reason \"%s\", want \"%s...\"", i, why, rows[i].reason);
    }
    CHECK(g4v_amx_decide(&rows[1].f, NULL, 0) == 0); /* no buffer: the answer alone */
}

#if defined(__x86_64__) && defined(__linux__)
/* /proc/cpuinfo's first flags line names amx_tile and amx_bf16 where the CPU has them; -1 when
 * it cannot be read. Only for x86-64 Linux, where the live probe is compared with it. */
static int cpuinfo_has_amx(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return -1;
    static char line[16384];
    int has = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "flags", 5)) {
            has = strstr(line, " amx_tile") && strstr(line, " amx_bf16");
            break;
        }
    fclose(f);
    return has;
}
#endif

static void test_probe(void) {
    g4v_amx_facts f, g;
    g4v_amx_probe(&f);
    g4v_amx_probe(&g);
    CHECK(!memcmp(&f, &g, sizeof f)); /* once per process */
    char why[256];
    int usable = g4v_amx_status(why, sizeof why);
    CHECK(strstr(why, "AMX") != NULL);
#if defined(__x86_64__) && defined(__linux__)
    CHECK_MSG(f.kernels == 1, "an x86-64 build compiles the AMX kernels in");
    int has = cpuinfo_has_amx();
    int cpu = (f.cpuid7_edx & G4V_AMX_CPUID_TILE) && (f.cpuid7_edx & G4V_AMX_CPUID_BF16);
    if (has >= 0) CHECK_MSG(cpu == has, "CPUID says AMX %d, /proc/cpuinfo %d", cpu, has);
    if (!cpu) { /* nothing asked of the kernel */
        CHECK(f.supp_rc == -2 && f.perm_rc == -2 && !usable);
        CHECK_MSG(!strncmp(why, "this CPU has no AMX", 19), "reason: %s", why);
        printf("SKIP hardware part: this CPU has no AMX, so the kernel is never asked for the "
               "tile permission (the small sigaltstack installed first had nothing to refuse)\n");
    } else {
        CHECK(f.supp_rc != -2);
        CHECK_MSG(usable || strstr(why, "refused") || strstr(why, "not enabled") ||
                      strstr(why, "cannot grant") || strstr(why, "does not offer"),
                  "reason: %s", why);
        /* main() installed an 8 KiB sigaltstack on this thread before the first probe, as
         * CPython's faulthandler did: the retry must have replaced it and won the permission */
        if (f.perm_rc == 0 || f.perm_errno == ENOSPC)
            CHECK_MSG(usable, "the sigaltstack retry did not win the tile permission: %s", why);
    }
#else
    CHECK(!usable && f.kernels == 0);
#endif
    printf("amx: %s\n", why);
}

/* A stand-in for ARCH_REQ_XCOMP_PERM that refuses with ENOSPC while this thread's sigaltstack is
 * below 32 KiB (the kernel's rule, with a round frame size), or always (ctx->always: another
 * thread's stack), or with EPERM (ctx->eperm). */
typedef struct fake_req {
    int calls, always, eperm;
} fake_req;

static int fake_request(void *ctx) {
    fake_req *r = ctx;
    r->calls++;
    stack_t cur;
    if (r->eperm) return errno = EPERM, -1;
    if (r->always) return errno = ENOSPC, -1;
    if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE) && cur.ss_size < (32u << 10))
        return errno = ENOSPC, -1;
    return 0;
}

/* The stacks installed: never freed (a replaced one may still be named by the kernel until the
 * next sigaltstack call; simpler to keep them), kept here reachable for LeakSanitizer. */
static void *installed[16];
static int n_installed;

static void install_altstack(size_t size) {
    stack_t st = {.ss_sp = malloc(size), .ss_size = size, .ss_flags = 0};
    CHECK(st.ss_sp && sigaltstack(&st, NULL) == 0);
    if (n_installed < 16) installed[n_installed++] = st.ss_sp;
}

/* The retry of amx.h step 4, on any CPU: the request is the fake above, the sigaltstack real. */
static void test_retry(void) {
    char why[256];
    g4v_amx_facts f = {.x86 = 1, .cpuid7_edx = G4V_AMX_CPUID_BF16 | G4V_AMX_CPUID_TILE,
                       .xcr0 = 0x602e7ull, .supp = 0x602e7ull, .kernels = 1};
    /* this thread's 8 KiB stack (faulthandler's size before CPython 3.11): enlarged, granted */
    install_altstack(8192);
    fake_req r = {0};
    g4v_amx_request_perm_with(fake_request, &r, &f);
    stack_t now;
    CHECK(sigaltstack(NULL, &now) == 0);
    CHECK_MSG(r.calls == 2 && f.perm_rc == 0 && f.perm_retried == 1, "calls %d rc %d retried %d",
              r.calls, f.perm_rc, f.perm_retried);
    CHECK(f.altstack_was == 8192 && f.altstack_now >= (64u << 10) && now.ss_size == f.altstack_now);
    CHECK(g4v_amx_decide(&f, why, sizeof why) == 1 && strstr(why, "enlarged from 8192"));
    /* the stack is large now: a second process-wide refusal is another thread's: no retry */
    r = (fake_req){.always = 1};
    g4v_amx_request_perm_with(fake_request, &r, &f);
    CHECK(r.calls == 1 && f.perm_rc == -1 && f.perm_errno == ENOSPC && !f.perm_retried);
    CHECK(g4v_amx_decide(&f, why, sizeof why) == 0 && strstr(why, "on another thread"));
    /* no sigaltstack on this thread at all: nothing to enlarge */
    stack_t off = {.ss_flags = SS_DISABLE};
    CHECK(sigaltstack(&off, NULL) == 0);
    r = (fake_req){.always = 1};
    g4v_amx_request_perm_with(fake_request, &r, &f);
    CHECK(r.calls == 1 && f.perm_rc == -1 && !f.perm_retried);
    /* another refusal (seccomp, gVisor): never retried */
    install_altstack(8192);
    r = (fake_req){.eperm = 1};
    g4v_amx_request_perm_with(fake_request, &r, &f);
    CHECK(r.calls == 1 && f.perm_rc == -1 && f.perm_errno == EPERM && !f.perm_retried);
    CHECK(sigaltstack(NULL, &now) == 0 && now.ss_size == 8192);
}

int main(void) {
    /* first, before anything asks the kernel: a small sigaltstack on this thread, as pytest's
     * faulthandler installs (test_probe then checks that the probe's retry won through it) */
    install_altstack(8192);
    test_probe();
    test_decide();
    test_retry();
    return test_summary("test_amx");
}
