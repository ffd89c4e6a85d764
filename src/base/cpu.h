/* cpu.h - which SIMD paths this CPU can run, decided once: CPUID on x86-64; on ARM64 the
 * kernel's HWCAP bits on Linux (getauxval), sysctlbyname("hw.optional.arm.FEAT_*") on macOS
 * (untested), NEON alone elsewhere (it is part of every ARMv8-A).
 *
 * The environment variable G4V_ISA caps the choice (values: portable, avx2 (with SHA), avx512,
 * avx512-nobf16 (AVX-512 without the AVX512_BF16 kernels); on ARM64 neon (ARMv8.0 NEON only) and
 * neon-bf16 (everything)), so tests and CI can force the portable path on any machine. Unknown
 * values, and the other architecture's, are treated as portable.
 */
#ifndef G4V_BASE_CPU_H
#define G4V_BASE_CPU_H

enum {
    G4V_CPU_AVX2 = 1 << 0,      /* AVX2 + FMA */
    G4V_CPU_AVX512 = 1 << 1,    /* AVX-512 F, BW, VL, DQ */
    G4V_CPU_AVX512BF16 = 1 << 2, /* vdpbf16ps */
    G4V_CPU_SHA = 1 << 3,         /* SHA extensions (+ SSSE3, SSE4.1): the SHA-256 compression */
    G4V_CPU_NEON = 1 << 4,       /* ARM64 Advanced SIMD (HWCAP_ASIMD) */
    G4V_CPU_ARM_BF16 = 1 << 5,   /* ARM64 BFDOT / BFMMLA (FEAT_BF16, HWCAP2_BF16) */
    G4V_CPU_ARM_I8MM = 1 << 6,   /* ARM64 SMMLA / USMMLA (FEAT_I8MM, HWCAP2_I8MM): no kernel yet */
    G4V_CPU_SVE = 1 << 7         /* ARM64 SVE (HWCAP_SVE): no kernel yet */
};

/* Features detected by CPUID (and OS support for the registers), masked by G4V_ISA. */
unsigned g4v_cpu_features(void);

/* The ISA level after masking, named by the G4V_ISA value that gives it: "avx512" (AVX-512 with
 * BF16), "avx512-nobf16", "avx2", "neon-bf16", "neon" or "portable". One vocabulary for the
 * levels a user sets and the ones the library prints. */
const char *g4v_cpu_isa_name(void);

#endif
