/* dispatch.c - kernel tables built from the registry (variants.def). */
#include "dispatch.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const g4v_kernel_variant registry[] = {
#define G4V_VARIANT(fam, name, req)                                                                \
    {.family = G4V_KF_FAMILY_##fam, .isa = #name, .needs = (req), .impl.fam = &g4v_##fam##_##name},
#define G4V_KF_FAMILY_gemm G4V_KF_GEMM
#define G4V_KF_FAMILY_attention G4V_KF_ATTENTION
#define G4V_KF_FAMILY_geglu_row G4V_KF_GEGLU_ROW
#define G4V_KF_FAMILY_rmsnorm_row G4V_KF_RMSNORM_ROW
#define G4V_KF_FAMILY_rope_row G4V_KF_ROPE_ROW
#define G4V_KF_FAMILY_add_row G4V_KF_ADD_ROW
#define G4V_KF_FAMILY_resize G4V_KF_RESIZE
#define G4V_KF_FAMILY_sha256_blocks G4V_KF_SHA256_BLOCKS
#include "variants.def"
#undef G4V_VARIANT
};

enum { NVARIANTS = (int)(sizeof registry / sizeof registry[0]) };

/* The feature bits any variant can use; a table exists for each combination of them. */
#define KNOWN_FEATURES (G4V_CPU_AVX2 | G4V_CPU_AVX512 | G4V_CPU_AVX512BF16 | G4V_CPU_SHA)
enum { NTABLES = KNOWN_FEATURES + 1 };

static g4v_kernels tables[NTABLES];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build(g4v_kernels *t, unsigned features) {
    t->features = features;
    for (int i = 0; i < NVARIANTS; i++) {
        const g4v_kernel_variant *v = &registry[i];
        if (!(v->needs & ~(features | G4V_KERNEL_FAST_ONLY)) && !t->isa_fast[v->family]) {
            t->isa_fast[v->family] = v->isa;
            t->use_fast[v->family] = v->impl;
        }
        if (v->needs & ~features) continue;
        if (!t->isa[v->family]) { /* the first that fits is the best */
            t->isa[v->family] = v->isa;
            t->use[v->family] = v->impl;
        }
        if (v->family == G4V_KF_GEMM && t->ngemm < G4V_MAX_GEMM_KERNELS)
            t->gemm[t->ngemm++] = v->impl.gemm;
    }
}

static void build_all(void) {
    for (unsigned f = 0; f < NTABLES; f++)
        build(&tables[f], f);
}

const g4v_kernels *g4v_kernels_for(unsigned features) {
    pthread_once(&tables_once, build_all);
    return &tables[features & KNOWN_FEATURES];
}

unsigned g4v_kernel_features(void) {
#ifdef G4V_SIMDE
    /* every SIMD variant, emulated; the SHA compression runs natively, so only where it can */
    return (KNOWN_FEATURES & ~G4V_CPU_SHA) | (g4v_cpu_features() & G4V_CPU_SHA);
#else
    return g4v_cpu_features();
#endif
}

const g4v_kernels *g4v_kernels_current(void) {
    return g4v_kernels_for(g4v_kernel_features());
}

const g4v_kernel_variant *g4v_kernel_variants(int *count) {
    *count = NVARIANTS;
    return registry;
}

const char *g4v_kernel_family_name(g4v_kernel_family f) {
    static const char *const names[G4V_KF_COUNT] = {"gemm",        "attention",    "geglu_row",
                                                    "rmsnorm_row", "rope_row",     "add_row",
                                                    "resize",      "sha256_blocks"};
    return f >= 0 && f < G4V_KF_COUNT ? names[f] : "?";
}

void g4v_kernel_path_of(const g4v_kernels *k, char *buf, size_t cap) {
    if (!cap) return;
    buf[0] = '\0';
    size_t n = (size_t)snprintf(buf, cap, "features=0x%x", k->features);
    for (int f = 0; f < G4V_KF_COUNT && n < cap; f++)
        n += (size_t)snprintf(buf + n, cap - n, " %s=%s",
                              g4v_kernel_family_name((g4v_kernel_family)f),
                              k->isa[f] ? k->isa[f] : "-");
    for (int f = 0; f < G4V_KF_COUNT && n < cap; f++) /* FAST-only choices, where there are */
        if (k->isa_fast[f] && k->isa[f] && strcmp(k->isa_fast[f], k->isa[f]))
            n += (size_t)snprintf(buf + n, cap - n, " %s_fast=%s",
                                  g4v_kernel_family_name((g4v_kernel_family)f), k->isa_fast[f]);
    for (int g = 0; g < k->ngemm && n < cap; g++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s",
                              g ? "," : " gemm_kernels=", k->gemm[g]->name);
}
