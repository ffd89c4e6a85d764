/* cpu.c - CPU feature detection (CPUID on x86-64, HWCAP / sysctl on ARM64) with an environment
 * override (G4V_ISA). */
#include "cpu.h"

#include "amx.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* Vendor, family and model as the CPU manuals define them (CPUID leaf 0's vendor string; leaf 1's
 * family = base + extended where the base is 0xF, model = extended << 4 | base where the base
 * family is 6 or 0xF). */
static g4v_cpu_ident ident(void) {
    g4v_cpu_ident id = {G4V_VENDOR_OTHER, 0, 0};
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return id;
    char v[13];
    memcpy(v, &b, 4);
    memcpy(v + 4, &d, 4);
    memcpy(v + 8, &c, 4);
    v[12] = '\0';
    if (!strcmp(v, "GenuineIntel")) id.vendor = G4V_VENDOR_INTEL;
    if (!strcmp(v, "AuthenticAMD")) id.vendor = G4V_VENDOR_AMD;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return id;
    unsigned base_family = a >> 8 & 0xf, base_model = a >> 4 & 0xf;
    id.family = base_family == 0xf ? base_family + (a >> 20 & 0xff) : base_family;
    id.model = base_family == 6 || base_family == 0xf ? (a >> 16 & 0xf) << 4 | base_model
                                                      : base_model;
    return id;
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
    /* AMX only where CPUID, XCR0 and the kernel's tile permission all say yes (base/amx.h; the
     * permission is requested here, once per process); the start-up self-test's verdict is the
     * kernel layer's (kernels/amx_check.h: g4v_kernel_features drops the bits if it fails) */
    if (g4v_amx_status(NULL, 0)) {
        g4v_amx_facts af;
        g4v_amx_probe(&af);
        f |= G4V_CPU_AMX;
        if (af.cpuid7_edx & G4V_AMX_CPUID_INT8) f |= G4V_CPU_AMX_INT8;
    }
    return f;
}
#else
static g4v_cpu_ident ident(void) {
    g4v_cpu_ident id = {G4V_VENDOR_OTHER, 0, 0};
    return id;
}
#endif

#if defined(__x86_64__) || defined(__i386__)
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
    const unsigned amx = G4V_CPU_AMX | G4V_CPU_AMX_INT8;
    if (!isa || !*isa || !strcmp(isa, "auto") || !strcmp(isa, "amx")) return ~0u;
    /* AVX-512 with the bf16 dot-product kernels, no tiles: the table it named before AMX (it
     * also overrides the BF16 rule, g4v_cpu_rule_drops_for) */
    if (!strcmp(isa, "avx512")) return ~amx;
    /* everything but the tiles, the BF16 rule applying: our AVX-512 path as the default picks it */
    if (!strcmp(isa, "avx512-noamx")) return ~amx;
    /* AVX-512 without the bf16 dot-product kernels: FAST with f32 attention at AVX-512 speed */
    if (!strcmp(isa, "avx512-nobf16")) return ~(unsigned)(G4V_CPU_AVX512BF16 | amx);
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

long long g4v_cpu_isa_cap(const char *isa) {
    return mask_of(isa);
}

const char *g4v_cpu_isa_name(void) {
    return g4v_cpu_isa_name_of(g4v_cpu_features());
}

const char *g4v_cpu_isa_name_of(unsigned f) {
    if (f & G4V_CPU_AMX) return "amx";
    if (f & G4V_CPU_AVX512BF16) return "avx512";
    if (f & G4V_CPU_AVX512) return "avx512-nobf16";
    if (f & G4V_CPU_AVX2) return "avx2";
    if ((f & G4V_CPU_NEON) && (f & G4V_CPU_ARM_BF16)) return "neon-bf16";
    if (f & G4V_CPU_NEON) return "neon";
    return "portable";
}

g4v_cpu_ident g4v_cpu_identity(void) {
    static g4v_cpu_ident cached; /* racing first calls compute the same value */
    static int known;
    if (!__atomic_load_n(&known, __ATOMIC_ACQUIRE)) {
        cached = ident();
        __atomic_store_n(&known, 1, __ATOMIC_RELEASE);
    }
    return cached;
}

/* docs/NUMERICS.md §6.6. The rows: measured (issue 37: a Sapphire Rapids class Xeon, 83 against
 * 173 GFLOP/s per thread) or documented (AMD's Zen 4 and Zen 5 run vdpbf16ps at twice the FMA's
 * FLOPs); a vendor without a row keeps the vdpbf16ps kernels, the order of variants.def. */
int g4v_cpu_bf16_rule(g4v_cpu_ident id, unsigned features, const char **why) {
    const char *w;
    int dp;
    if (!(features & G4V_CPU_AVX512BF16)) {
        w = "no AVX512_BF16 (or G4V_ISA leaves it out): the FMA kernels";
        dp = 0;
    } else if (id.vendor == G4V_VENDOR_INTEL) {
        w = "Intel: vdpbf16ps runs at half the zmm FMA's FLOP rate (Sapphire Rapids class), so "
            "the FMA kernels; G4V_ISA=avx512 takes vdpbf16ps";
        dp = 0;
    } else if (id.vendor == G4V_VENDOR_AMD && id.family >= 0x19) {
        w = "AMD Zen 4/Zen 5: vdpbf16ps gives about twice the FMA's FLOPs, so the vdpbf16ps "
            "kernels";
        dp = 1;
    } else {
        w = "no rule for this CPU: the vdpbf16ps kernels";
        dp = 1;
    }
    if (why) *why = w;
    return dp;
}

/* G4V_ISA=avx512 names the level with the vdpbf16ps kernels: it overrides the rule. */
unsigned g4v_cpu_rule_drops_for(g4v_cpu_ident id, unsigned features, const char *isa) {
    if (isa && !strcmp(isa, "avx512")) return 0;
    return g4v_cpu_bf16_rule(id, features, NULL) ? 0u : features & (unsigned)G4V_CPU_AVX512BF16;
}

unsigned g4v_cpu_rule_drops(void) {
    return g4v_cpu_rule_drops_for(g4v_cpu_identity(), g4v_cpu_features(), getenv("G4V_ISA"));
}

void g4v_cpu_rule_line(char *buf, size_t cap) {
    if (!cap) return;
    g4v_cpu_ident id = g4v_cpu_identity();
    unsigned f = g4v_cpu_features();
    const char *why;
    int dp = g4v_cpu_bf16_rule(id, f, &why);
    const char *isa = getenv("G4V_ISA");
    int forced = (f & G4V_CPU_AVX512BF16) && !dp && isa && !strcmp(isa, "avx512");
    const char *vendor = id.vendor == G4V_VENDOR_INTEL ? "Intel"
                         : id.vendor == G4V_VENDOR_AMD ? "AMD"
                                                       : "other";
    snprintf(buf, cap, "bf16=%s vendor=%s family=0x%x model=0x%x: %s%s",
             dp || forced ? "vdpbf16ps" : "fma", vendor, id.family, id.model, why,
             forced ? " (G4V_ISA=avx512 overrides it)" : "");
}
