/* cpu.c - CPUID feature detection with an environment override (G4V_ISA). */
#include "cpu.h"

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
#else
static unsigned detect(void) {
    return 0;
}
#endif

static unsigned mask_from_env(void) {
    const char *isa = getenv("G4V_ISA");
    if (!isa || !*isa) return ~0u;
    if (!strcmp(isa, "avx512")) return ~0u;
    /* AVX-512 without the bf16 dot-product kernels: FAST with f32 attention at AVX-512 speed */
    if (!strcmp(isa, "avx512-nobf16")) return ~(unsigned)G4V_CPU_AVX512BF16;
    if (!strcmp(isa, "avx2")) return G4V_CPU_AVX2 | G4V_CPU_SHA;
    return 0; /* "portable" or anything unknown: the safe choice */
}

unsigned g4v_cpu_features(void) {
    /* CPUID is asked once (inside a VM it traps to the hypervisor: tens of microseconds per
     * call were measured here); G4V_ISA is read on every call, so setting it before a call
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
    return "portable";
}
