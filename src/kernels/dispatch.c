/* dispatch.c - kernel tables built from the registry (variants.def). */
#include "dispatch.h"

#include "amx_check.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The registry. Names start as variants.def spells them (C identifiers); fix_names turns them
 * into the user-visible spelling before anyone reads them. */
static g4v_kernel_variant registry[] = {
#define G4V_VARIANT(fam, name, req)                                                                \
    {.family = (g4v_kernel_family)G4V_KF_BYNAME_##fam,                                             \
     .isa = #name,                                                                                 \
     .needs = (req),                                                                               \
     .impl.fam = &g4v_##fam##_##name},
#include "variants.def"
#undef G4V_VARIANT
};

enum { NVARIANTS = (int)(sizeof registry / sizeof registry[0]) };

/* The feature bits any variant can use; a table exists for each combination of them. The tables
 * are indexed by those bits packed together (the architectures' bits are not contiguous). */
#define KNOWN_FEATURES ((unsigned)G4V_KERNEL_KNOWN_FEATURES)
#define POP4_(x) (((x) & 1u) + ((x) >> 1 & 1u) + ((x) >> 2 & 1u) + ((x) >> 3 & 1u))
#define POP16_(x) (POP4_(x) + POP4_((x) >> 4) + POP4_((x) >> 8) + POP4_((x) >> 12))
_Static_assert(KNOWN_FEATURES < (1u << 16), "POP16_ counts 16 bits");
enum { NTABLES = 1 << POP16_(KNOWN_FEATURES) };

static g4v_kernels tables[NTABLES];

/* features (known bits only) <-> table index: bit k of the index is the k-th known bit */
static unsigned index_of(unsigned features) {
    unsigned idx = 0, k = 0;
    for (unsigned m = KNOWN_FEATURES; m; m &= m - 1, k++)
        if (features & m & -m) idx |= 1u << k;
    return idx;
}

static unsigned features_of(unsigned idx) {
    unsigned f = 0, k = 0;
    for (unsigned m = KNOWN_FEATURES; m; m &= m - 1, k++)
        if (idx >> k & 1u) f |= m & -m;
    return f;
}
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

/* One spelling for every name a user sees (kernel path, g4v info, bench, logs): ISA and form
 * joined by '-', as G4V_ISA's values and the GEMM micro-kernels' names are. */
static char names[NVARIANTS][32];

static void fix_names(void) {
    for (int i = 0; i < NVARIANTS; i++) {
        size_t n = strlen(registry[i].isa);
        for (size_t c = 0; c <= n && c < sizeof names[i]; c++)
            names[i][c] = registry[i].isa[c] == '_' ? '-' : registry[i].isa[c];
        names[i][sizeof names[i] - 1] = '\0';
        registry[i].isa = names[i];
    }
}

static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void build_all(void) {
    pthread_once(&names_once, fix_names);
    for (unsigned i = 0; i < NTABLES; i++)
        build(&tables[i], features_of(i));
}

const g4v_kernels *g4v_kernels_for(unsigned features) {
    pthread_once(&tables_once, build_all);
    return &tables[index_of(features)];
}

unsigned g4v_kernel_features(void) {
#ifdef G4V_SIMDE
    /* every SIMD variant, emulated; the SHA compression runs natively, so only where it can */
    return (KNOWN_FEATURES & ~G4V_CPU_SHA) | (g4v_cpu_features() & G4V_CPU_SHA);
#else
    /* AMX only where the start-up self-test passes too (amx_check.h; run once, only on CPUs
     * where base/amx.c granted the tiles) */
    return g4v_amx_check_filter(g4v_cpu_features());
#endif
}

const g4v_kernels *g4v_kernels_current(void) {
    /* the BF16 rule (docs/NUMERICS.md §6.6): on CPUs where vdpbf16ps is slow, the FMA table */
    return g4v_kernels_for(g4v_kernel_features() & ~g4v_cpu_rule_drops());
}

const g4v_kernel_variant *g4v_kernel_variants(int *count) {
    pthread_once(&names_once, fix_names);
    *count = NVARIANTS;
    return registry;
}

const char *g4v_kernel_family_name(g4v_kernel_family f) {
    static const char *const family_names[G4V_KF_COUNT] = {
#define G4V_KF_NAME_(ID, name, impl) #name,
        G4V_KERNEL_FAMILIES(G4V_KF_NAME_)
#undef G4V_KF_NAME_
    };
    return f >= 0 && f < G4V_KF_COUNT ? family_names[f] : "?";
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
