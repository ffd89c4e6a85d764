/* cpu.h - which SIMD paths this CPU can run, decided once from CPUID.
 *
 * The environment variable G4V_ISA caps the choice (values: portable, avx2 (with SHA), avx512,
 * avx512-nobf16 (AVX-512 without the AVX512_BF16 kernels); avx2 excludes the VNNI bits, so the
 * INT8 mode takes its vpmaddubsw path), so tests and CI can force the
 * portable path on an AVX-512 machine. Unknown values are treated as portable.
 */
#ifndef G4V_BASE_CPU_H
#define G4V_BASE_CPU_H

enum {
    G4V_CPU_AVX2 = 1 << 0,      /* AVX2 + FMA */
    G4V_CPU_AVX512 = 1 << 1,    /* AVX-512 F, BW, VL, DQ */
    G4V_CPU_AVX512BF16 = 1 << 2, /* vdpbf16ps */
    G4V_CPU_SHA = 1 << 3,         /* SHA extensions (+ SSSE3, SSE4.1): the SHA-256 compression */
    G4V_CPU_AVX512VNNI = 1 << 4,  /* vpdpbusd on zmm (with G4V_CPU_AVX512): the INT8 GEMM */
    G4V_CPU_AVXVNNI = 1 << 5      /* vpdpbusd on ymm, VEX-encoded (with G4V_CPU_AVX2) */
};

/* Features detected by CPUID (and OS support for the registers), masked by G4V_ISA. */
unsigned g4v_cpu_features(void);

/* The ISA level after masking, named by the G4V_ISA value that gives it: "avx512" (AVX-512 with
 * BF16), "avx512-nobf16", "avx2" or "portable". One vocabulary for the levels a user sets and
 * the ones the library prints. */
const char *g4v_cpu_isa_name(void);

#endif
