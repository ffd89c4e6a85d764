/* test_amx.c - AMX detection (src/base/amx.h): the decision over rows of facts, each condition's
 * reason, and the live probe against /proc/cpuinfo's flags (on a CPU without AMX the kernel is
 * never asked for the tile permission). No tile instruction runs. */
#include "base/amx.h"
#include "test_util.h"

#include <errno.h>
#include <stdio.h>
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
    CHECK_MSG(!usable, "AMX usable without AMX kernels: %s", why);
    CHECK(f.kernels == 0 && strstr(why, "AMX"));
#if defined(__x86_64__) && defined(__linux__)
    int has = cpuinfo_has_amx();
    int cpu = (f.cpuid7_edx & G4V_AMX_CPUID_TILE) && (f.cpuid7_edx & G4V_AMX_CPUID_BF16);
    if (has >= 0) CHECK_MSG(cpu == has, "CPUID says AMX %d, /proc/cpuinfo %d", cpu, has);
    if (!cpu) { /* nothing asked of the kernel */
        CHECK(f.supp_rc == -2 && f.perm_rc == -2);
        CHECK_MSG(!strncmp(why, "this CPU has no AMX", 19), "reason: %s", why);
    } else {
        CHECK(f.supp_rc != -2);
        CHECK_MSG(strstr(why, "refused") || strstr(why, "no AMX kernels") ||
                      strstr(why, "not enabled") || strstr(why, "cannot grant") ||
                      strstr(why, "does not offer"),
                  "reason: %s", why);
    }
#endif
    printf("amx: %s\n", why);
}

int main(void) {
    test_decide();
    test_probe();
    return test_summary("test_amx");
}
