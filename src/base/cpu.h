/* cpu.h - which SIMD paths this CPU can run, decided once: CPUID on x86-64; on ARM64 the
 * kernel's HWCAP bits on Linux (getauxval), sysctlbyname("hw.optional.arm.FEAT_*") on macOS
 * (untested), NEON alone elsewhere (it is part of every ARMv8-A).
 *
 * The environment variable G4V_ISA caps the choice (values: auto (the same as unset: no cap),
 * amx (the same: the level with the tiles, where the CPU has them), avx512 (AVX-512 with the
 * AVX512_BF16 kernels, no AMX tiles: the table it named before AMX existed), avx512-noamx
 * (everything but the AMX tiles, the BF16 rule applying: our own AVX-512 path as the default
 * would pick it), avx512-nobf16 (AVX-512 without the AVX512_BF16 kernels, no tiles), avx2 (with
 * SHA, without the
 * VNNI bits, so the INT8 mode takes its vpmaddubsw path); on ARM64 neon (ARMv8.0 NEON only: no
 * BFDOT, SDOT or SMMLA) and neon-bf16 (everything); portable), so tests and CI can force the
 * portable path on any machine.
 * An unknown value is refused: g4v_model_load and g4v_ctx_create fail with g4v_cpu_isa_check's
 * message (a typo must not silently select the 8x slower portable kernels); code below them that
 * does not check gets the portable cap. The other architecture's names are accepted and leave
 * the portable kernels (avx512 caps nothing).
 * Unset or auto, the default kernel table also follows the BF16 rule (g4v_cpu_bf16_rule below):
 * on Intel it leaves out the vdpbf16ps kernels; G4V_ISA=avx512 keeps them on any CPU.
 */
#ifndef G4V_BASE_CPU_H
#define G4V_BASE_CPU_H

#include <stddef.h>

enum {
    G4V_CPU_AVX2 = 1 << 0,      /* AVX2 + FMA */
    G4V_CPU_AVX512 = 1 << 1,    /* AVX-512 F, BW, VL, DQ */
    G4V_CPU_AVX512BF16 = 1 << 2, /* vdpbf16ps */
    G4V_CPU_SHA = 1 << 3,         /* SHA extensions (+ SSSE3, SSE4.1): the SHA-256 compression */
    G4V_CPU_AVX512VNNI = 1 << 4, /* vpdpbusd on zmm (with G4V_CPU_AVX512): the INT8 GEMM */
    G4V_CPU_AVXVNNI = 1 << 5,    /* vpdpbusd on ymm, VEX-encoded (with G4V_CPU_AVX2) */
    G4V_CPU_NEON = 1 << 6,       /* ARM64 Advanced SIMD (HWCAP_ASIMD) */
    G4V_CPU_ARM_BF16 = 1 << 7,   /* ARM64 BFDOT / BFMMLA (FEAT_BF16, HWCAP2_BF16) */
    G4V_CPU_ARM_I8MM = 1 << 8,   /* ARM64 SMMLA / USMMLA (FEAT_I8MM, HWCAP2_I8MM): INT8 GEMM */
    /* a feature gets a bit with its first kernel (the bits are part of the kernel path, so the
     * others keep their values) */
    G4V_CPU_AMX = 1 << 9, /* Intel AMX tiles with AMX-BF16, granted by the OS (base/amx.h);
                             the kernel tables (g4v_kernel_features) keep it only where the
                             start-up self-test passes too (kernels/amx_check.h) */
    G4V_CPU_ARM_DOTPROD = 1 << 10, /* ARM64 SDOT / UDOT (FEAT_DotProd, HWCAP_ASIMDDP): INT8 GEMM */
    G4V_CPU_AMX_INT8 = 1 << 11     /* AMX-INT8 (TDPBSSD ...) besides G4V_CPU_AMX */
};

/* Features detected by CPUID (and OS support for the registers), masked by G4V_ISA. */
unsigned g4v_cpu_features(void);

/* The ISA level after masking, named by the G4V_ISA value that gives it: "amx" (G4V_CPU_AMX:
 * the CPU, the OS and the kernel's permission allow the tiles; the kernel layer's start-up
 * self-test may still turn them off, kernels/amx_check.h), "avx512" (AVX-512 with BF16),
 * "avx512-nobf16", "avx2", "neon-bf16", "neon" or "portable". One vocabulary for the levels a
 * user sets and the ones the library prints (avx512-noamx is a cap, not a level: it prints
 * "avx512" or "avx512-nobf16"). */
const char *g4v_cpu_isa_name(void);
/* The same for a set of features (tests). */
const char *g4v_cpu_isa_name_of(unsigned features);

/* The cap G4V_ISA=isa puts on the detected features (NULL or "": none), -1 for a value that is
 * not accepted (tests: the AMX bits' caps hold on any CPU). */
long long g4v_cpu_isa_cap(const char *isa);

/* The accepted G4V_ISA values, as the error message lists them. */
#define G4V_CPU_ISA_VALUES                                                                         \
    "auto, amx, avx512, avx512-noamx, avx512-nobf16, avx2, neon-bf16, neon, portable"

/* The CPU's vendor, family and model (CPUID on x86-64; OTHER, 0, 0 elsewhere), asked once. */
typedef enum g4v_cpu_vendor { G4V_VENDOR_OTHER = 0, G4V_VENDOR_INTEL, G4V_VENDOR_AMD } g4v_cpu_vendor;
typedef struct g4v_cpu_ident {
    g4v_cpu_vendor vendor;
    unsigned family, model; /* family with the extended family added; model with the extended */
} g4v_cpu_ident;
g4v_cpu_ident g4v_cpu_identity(void);

/* The kernel rule on BF16 CPUs (docs/NUMERICS.md §6.6): 1 when the kernel table for a CPU of this
 * identity with these features should take the vdpbf16ps kernels (GEMM and FAST attention), 0
 * when the FMA ones. A fixed rule per vendor/family, never a timing, so one machine type always
 * gives the same FAST bits. *why (may be NULL) receives a static sentence saying which row. */
int g4v_cpu_bf16_rule(g4v_cpu_ident id, unsigned features, const char **why);

/* The feature bits the default kernel table leaves out by that rule for this CPU:
 * G4V_CPU_AVX512BF16 where it says FMA, unless G4V_ISA is "avx512" (the level with vdpbf16ps,
 * named explicitly); else 0. g4v_kernels_current applies it; g4v_cpu_features does not (the
 * tests still run every variant the CPU has). */
unsigned g4v_cpu_rule_drops(void);
/* The same for a given CPU, features and G4V_ISA value (NULL: unset), for tests. */
unsigned g4v_cpu_rule_drops_for(g4v_cpu_ident id, unsigned features, const char *isa);

/* "bf16=vdpbf16ps|fma vendor=AMD family=0x19 model=0x11: <why>": the rule's answer for this CPU,
 * as g4v info and /v1/info print it. */
void g4v_cpu_rule_line(char *buf, size_t cap);

struct g4v_err;
/* G4V_OK when G4V_ISA is unset, empty or one of G4V_CPU_ISA_VALUES; otherwise G4V_ERR_ARG with a
 * message naming the value and the accepted ones. */
int g4v_cpu_isa_check(struct g4v_err *err);

#endif
