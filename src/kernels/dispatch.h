/* dispatch.h - the one way kernels are chosen at run time (docs/ARCHITECTURE.md §3).
 *
 * Every variant of every kernel family is registered once, in variants.def, with the CPU features
 * it needs. A kernel table (g4v_kernels) holds, for one set of CPU features, the best variant of
 * each family; tables are built once per feature set and never change. A model takes the table
 * for the CPU when it is created (g4v_kernels_current, which honours G4V_ISA at that moment) and
 * every kernel call of that model goes through it; so does each image's resize. Tests walk the
 * registry (g4v_kernel_variants) to run every variant against the portable one.
 */
#ifndef G4V_KERNELS_DISPATCH_H
#define G4V_KERNELS_DISPATCH_H

#include "base/cpu.h"
#include "gemm_kernel.h"
#include "kernels.h"
#include "resize.h"
#include "sha256.h"

/* Not a CPU feature: in a variant's needs (variants.def) it marks a variant that rounds more than
 * the PRECISE contract allows (the bf16 attention). Tables choose it only for FAST models
 * (use_fast below); no feature set has this bit, so use[] never holds it. */
#define G4V_KERNEL_FAST_ONLY (1u << 30)

/* The kernel families: the ONE place a family is declared. G4V_KERNEL_FAMILY(ID, name, impl)
 * gives the family's enum suffix (G4V_KF_<ID>), its name (the member of g4v_kernel_impl, the
 * first argument of its G4V_VARIANT lines in variants.def, its key in the kernel path line) and
 * what a variant is (a descriptor or a row-function type; a variant object is declared as
 * `extern <impl> g4v_<name>_<isa>`). The enum, the impl union, the registry's family of each
 * variant and the family names are all generated from this list. */
#define G4V_KERNEL_FAMILIES(X)                                                                     \
    X(GEMM, gemm, const g4v_gemm_kernel)                                                           \
    X(ATTENTION, attention, const g4v_attention_kernel)                                            \
    X(GEGLU_ROW, geglu_row, g4v_geglu_row_fn)                                                      \
    X(RMSNORM_ROW, rmsnorm_row, g4v_rmsnorm_row_fn)                                                \
    X(ROPE_ROW, rope_row, g4v_rope_row_fn)                                                         \
    X(ADD_ROW, add_row, g4v_add_row_fn)                                                            \
    X(RESIZE, resize, const g4v_resize_kernel)                                                     \
    X(SHA256_BLOCKS, sha256_blocks, g4v_sha256_blocks_fn)

/* g4v_<name>_impl: what a variant of the family is. */
#define G4V_KF_TYPEDEF_(ID, name, impl) typedef impl g4v_##name##_impl;
G4V_KERNEL_FAMILIES(G4V_KF_TYPEDEF_)
#undef G4V_KF_TYPEDEF_

/* Declarations of every registered variant (defined in the ISA folders). */
#define G4V_VARIANT(fam, name, req) extern g4v_##fam##_impl g4v_##fam##_##name;
#include "variants.def"
#undef G4V_VARIANT

/* The CPU feature bits any variant of this build needs (the union of variants.def's needs, so
 * of this architecture's variants only): a table exists for every combination of them. A bit
 * the CPU reports but no variant needs is ignored and never multiplies the tables. */
enum {
    G4V_KERNEL_NEEDS_ALL_ = 0u
#define G4V_VARIANT(fam, name, req) | (req)
#include "variants.def"
#undef G4V_VARIANT
};
#define G4V_KERNEL_KNOWN_FEATURES ((unsigned)G4V_KERNEL_NEEDS_ALL_ & ~G4V_KERNEL_FAST_ONLY)

typedef enum g4v_kernel_family {
#define G4V_KF_ENUM_(ID, name, impl) G4V_KF_##ID,
    G4V_KERNEL_FAMILIES(G4V_KF_ENUM_)
#undef G4V_KF_ENUM_
        G4V_KF_COUNT
} g4v_kernel_family;

/* The same values under the families' lower-case names, for macros that have only those
 * (G4V_VARIANT's first argument). */
enum {
#define G4V_KF_BYNAME_(ID, name, impl) G4V_KF_BYNAME_##name = G4V_KF_##ID,
    G4V_KERNEL_FAMILIES(G4V_KF_BYNAME_)
#undef G4V_KF_BYNAME_
};

/* A variant's implementation; the member is named after its family. */
typedef union g4v_kernel_impl {
#define G4V_KF_MEMBER_(ID, name, impl) g4v_##name##_impl *name;
    G4V_KERNEL_FAMILIES(G4V_KF_MEMBER_)
#undef G4V_KF_MEMBER_
} g4v_kernel_impl;

/* One registered variant. */
typedef struct g4v_kernel_variant {
    g4v_kernel_family family;
    const char *isa; /* its user-visible name: variants.def's with '-' for '_', e.g.
                        "avx512-bf16dp", "avx2", "portable-f32" (docs/ARCHITECTURE.md §3) */
    unsigned needs;  /* G4V_CPU_* bits it requires */
    g4v_kernel_impl impl;
} g4v_kernel_variant;

enum { G4V_MAX_GEMM_KERNELS = 24 };

/* The kernels for one set of CPU features: the best fitting variant of each family, e.g.
 * k->use[G4V_KF_ATTENTION].attention. GEMM also keeps every fitting micro-kernel, best first,
 * because the choice depends on the weight's dtype and the math mode as well (g4v_wmat_create
 * takes the first that fits them). */
struct g4v_kernels {
    unsigned features;
    g4v_kernel_impl use[G4V_KF_COUNT];
    const char *isa[G4V_KF_COUNT]; /* the chosen variant's name per family */
    /* The choice for FAST models: the first variant that fits when FAST-only variants count too
     * (equal to use[] where the family has none that the features run). */
    g4v_kernel_impl use_fast[G4V_KF_COUNT];
    const char *isa_fast[G4V_KF_COUNT];
    const g4v_gemm_kernel *gemm[G4V_MAX_GEMM_KERNELS];
    int ngemm;
};

/* The table for a feature set (G4V_CPU_* bits; bits the registry does not know are ignored).
 * Built on first use; the pointer stays valid for the life of the process. */
const g4v_kernels *g4v_kernels_for(unsigned features);

/* The table for the features usable now: g4v_kernel_features() less what the BF16 rule leaves
 * out on this CPU (g4v_cpu_rule_drops, docs/NUMERICS.md §6.6). */
const g4v_kernels *g4v_kernels_current(void);

/* One line naming table k: "features=0x.. gemm=.. attention=.. ..." (the variant of every
 * family), the FAST-only choices that differ ("attention_fast=.."), and the GEMM micro-kernels.
 * What g4v info prints and every cache key holds: equal lines, equal bits. */
void g4v_kernel_path_of(const g4v_kernels *k, char *buf, size_t cap);

/* The features the kernels may use: g4v_cpu_features() (CPUID capped by G4V_ISA) less the AMX
 * bits where the AMX start-up self-test fails (amx_check.h: it runs on the first call that sees
 * G4V_CPU_AMX), or every feature in a G4V_SIMDE test build, where the x86 variants run
 * emulated. */
unsigned g4v_kernel_features(void);

/* Every registered variant, in variants.def order (best first within a family). */
const g4v_kernel_variant *g4v_kernel_variants(int *count);

/* The family's name ("gemm", "attention", ...). */
const char *g4v_kernel_family_name(g4v_kernel_family f);

#endif
