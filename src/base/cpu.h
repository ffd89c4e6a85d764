/* cpu.h - which SIMD paths this CPU can run, decided once from CPUID.
 *
 * The environment variable G4V_ISA caps the choice (values: auto (the same as unset: no cap),
 * avx512, avx512-nobf16 (AVX-512 without the AVX512_BF16 kernels), avx2 (with SHA), portable), so
 * tests and CI can force the portable path on an AVX-512 machine. An unknown value is refused:
 * g4v_model_load and g4v_ctx_create fail with g4v_cpu_isa_check's message (a typo must not
 * silently select the 8x slower portable kernels); code below them that does not check gets the
 * portable cap.
 */
#ifndef G4V_BASE_CPU_H
#define G4V_BASE_CPU_H

enum {
    G4V_CPU_AVX2 = 1 << 0,      /* AVX2 + FMA */
    G4V_CPU_AVX512 = 1 << 1,    /* AVX-512 F, BW, VL, DQ */
    G4V_CPU_AVX512BF16 = 1 << 2, /* vdpbf16ps */
    G4V_CPU_SHA = 1 << 3          /* SHA extensions (+ SSSE3, SSE4.1): the SHA-256 compression */
};

/* Features detected by CPUID (and OS support for the registers), masked by G4V_ISA. */
unsigned g4v_cpu_features(void);

/* The ISA level after masking, named by the G4V_ISA value that gives it: "avx512" (AVX-512 with
 * BF16), "avx512-nobf16", "avx2" or "portable". One vocabulary for the levels a user sets and
 * the ones the library prints. */
const char *g4v_cpu_isa_name(void);

/* The accepted G4V_ISA values, as the error message lists them. */
#define G4V_CPU_ISA_VALUES "auto, avx512, avx512-nobf16, avx2, portable"

struct g4v_err;
/* G4V_OK when G4V_ISA is unset, empty or one of G4V_CPU_ISA_VALUES; otherwise G4V_ERR_ARG with a
 * message naming the value and the accepted ones. */
int g4v_cpu_isa_check(struct g4v_err *err);

#endif
