/* cpu.c - CPU feature detection (CPUID on x86-64, HWCAP / sysctl on ARM64) with an environment
 * override (G4V_ISA). */
#include "cpu.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static unsigned detect(void) {
    unsigned a, b, c, d, f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, ssse3 = (c >> 9) & 1, sse41 = (c >> 19) & 1;
    if (!osxsave) return 0;
    unsigned long long xcr0 = xgetbv0();
    int ymm_ok = (xcr0 & 0x6) == 0x6, zmm_ok = (xcr0 & 0xe6) == 0xe6;
    if (__get_cpuid_max(0, 0) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    int avx2 = (b >> 5) & 1;
    int avx512f = (b >> 16) & 1, avx512dq = (b >> 17) & 1, avx512bw = (b >> 30) & 1,
        avx512vl = (b >> 31) & 1, sha = (b >> 29) & 1, avx512vnni = (c >> 11) & 1;
    if (sha && ssse3 && sse41) f |= G4V_CPU_SHA;
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    int bf16 = (a1 >> 5) & 1, avxvnni = (a1 >> 4) & 1;
    if (ymm_ok && avx2 && fma) f |= G4V_CPU_AVX2;
    if ((f & G4V_CPU_AVX2) && avxvnni) f |= G4V_CPU_AVXVNNI;
    if (zmm_ok && (f & G4V_CPU_AVX2) && avx512f && avx512dq && avx512bw && avx512vl) {
        f |= G4V_CPU_AVX512;
        if (bf16) f |= G4V_CPU_AVX512BF16;
        if (avx512vnni) f |= G4V_CPU_AVX512VNNI;
    }
    return f;
}
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
/* The bits of arch/arm64/include/uapi/asm/hwcap.h, for C libraries whose headers lack them. */
#define G4V_HWCAP_ASIMD (1ul << 1)
#define G4V_HWCAP_ASIMDDP (1ul << 20)
#define G4V_HWCAP2_I8MM (1ul << 13)
#define G4V_HWCAP2_BF16 (1ul << 14)

static unsigned detect(void) {
    unsigned long h = getauxval(AT_HWCAP), h2 = getauxval(AT_HWCAP2);
    unsigned f = 0;
    if (h & G4V_HWCAP_ASIMD) f |= G4V_CPU_NEON;
    if (!f) return 0; /* the other kernels all use NEON registers too */
    if (h & G4V_HWCAP_ASIMDDP) f |= G4V_CPU_ARM_DOTPROD;
    if (h2 & G4V_HWCAP2_BF16) f |= G4V_CPU_ARM_BF16;
    if (h2 & G4V_HWCAP2_I8MM) f |= G4V_CPU_ARM_I8MM;
    return f;
}
#elif defined(__aarch64__) && defined(__APPLE__)
/* macOS on Apple silicon: every M-series core has NEON and FEAT_DotProd; M2 and later report
 * FEAT_BF16 and FEAT_I8MM. Written from Apple's documented sysctl names; not
 * tested here. */
#include <sys/types.h>
#include <sys/sysctl.h>

static int sysctl_flag(const char *name) {
    int v = 0;
    size_t n = sizeof v;
    return sysctlbyname(name, &v, &n, NULL, 0) == 0 && v != 0;
}

static unsigned detect(void) {
    unsigned f = G4V_CPU_NEON;
    if (sysctl_flag("hw.optional.arm.FEAT_DotProd")) f |= G4V_CPU_ARM_DOTPROD;
    if (sysctl_flag("hw.optional.arm.FEAT_BF16")) f |= G4V_CPU_ARM_BF16;
    if (sysctl_flag("hw.optional.arm.FEAT_I8MM")) f |= G4V_CPU_ARM_I8MM;
    return f;
}
#elif defined(__aarch64__)
/* Other systems (BSDs, Windows): NEON is architectural in ARMv8-A; the optional extensions are
 * not probed, so their kernels stay off. */
static unsigned detect(void) {
    return G4V_CPU_NEON;
}
#else
static unsigned detect(void) {
    return 0;
}
#endif

/* The cap each accepted G4V_ISA value puts on the detected features; -1: not a known value. */
static long long mask_of(const char *isa) {
    if (!isa || !*isa || !strcmp(isa, "auto") || !strcmp(isa, "avx512")) return ~0u;
    /* AVX-512 without the bf16 dot-product kernels: FAST with f32 attention at AVX-512 speed */
    if (!strcmp(isa, "avx512-nobf16")) return ~(unsigned)G4V_CPU_AVX512BF16;
    if (!strcmp(isa, "avx2")) return G4V_CPU_AVX2 | G4V_CPU_SHA;
    if (!strcmp(isa, "neon-bf16")) return ~0u;
    if (!strcmp(isa, "neon")) return G4V_CPU_NEON; /* ARMv8.0: what a Cortex-A57 or A72 has */
    if (!strcmp(isa, "portable")) return 0;
    return -1;
}

static unsigned mask_from_env(void) {
    long long m = mask_of(getenv("G4V_ISA"));
    /* unknown: the safe choice for code that does not check; the model and context creators
     * refuse it first (g4v_cpu_isa_check), so a typo cannot silently run 8x slower */
    return m < 0 ? 0u : (unsigned)m;
}

int g4v_cpu_isa_check(g4v_err *err) {
    const char *isa = getenv("G4V_ISA");
    if (mask_of(isa) >= 0) return G4V_OK;
    return g4v_fail(err, G4V_ERR_ARG,
                    "G4V_ISA=\"%.64s\" is not a known instruction-set level; accepted values: "
                    "%s (unset or empty: auto)",
                    isa, G4V_CPU_ISA_VALUES);
}

unsigned g4v_cpu_features(void) {
    /* The CPU is asked once (inside a VM, CPUID traps to the hypervisor, which costs tens of
     * microseconds per call); G4V_ISA is read on every call, so setting it before a call
     * works. Callers in hot loops still cache their dispatch decision. */
    static unsigned cached; /* detect() | DETECTED once known; racing first calls agree */
    enum { DETECTED = 1u << 31 };
    unsigned f = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (!(f & DETECTED)) {
        f = detect() | DETECTED;
        __atomic_store_n(&cached, f, __ATOMIC_RELAXED);
    }
    return f & ~(unsigned)DETECTED & mask_from_env();
}

const char *g4v_cpu_isa_name(void) {
    unsigned f = g4v_cpu_features();
    if (f & G4V_CPU_AVX512BF16) return "avx512";
    if (f & G4V_CPU_AVX512) return "avx512-nobf16";
    if (f & G4V_CPU_AVX2) return "avx2";
    if ((f & G4V_CPU_NEON) && (f & G4V_CPU_ARM_BF16)) return "neon-bf16";
    if (f & G4V_CPU_NEON) return "neon";
    return "portable";
}
