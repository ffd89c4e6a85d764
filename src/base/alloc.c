/* alloc.c - malloc wrappers with overflow checks, huge-page hints and fault injection. */
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef G4V_FAULT_INJECTION
#include <stdatomic.h>
static atomic_long alloc_counter;
static atomic_long foreign_counter; /* the part of alloc_counter that g4v_alloc_injected counted */
static atomic_long alloc_fail_at = -1;
static atomic_int alloc_fail_once; /* 1: only allocation alloc_fail_at fails */

static int injected_failure(void) {
    long n = atomic_fetch_add(&alloc_counter, 1);
    long at = atomic_load(&alloc_fail_at);
    if (at < 0) return 0;
    return atomic_load(&alloc_fail_once) ? n == at : n >= at;
}
static void arm(long n, int once) {
    atomic_store(&alloc_fail_at, -1); /* disarmed while the count and mode change */
    atomic_store(&alloc_counter, 0);
    atomic_store(&foreign_counter, 0);
    atomic_store(&alloc_fail_once, once);
    atomic_store(&alloc_fail_at, n);
}
void g4v_alloc_fail_after(long n) {
    arm(n, 0);
}
void g4v_alloc_fail_once(long n) {
    arm(n, 1);
}
long g4v_alloc_count(void) { return atomic_load(&alloc_counter); }
int g4v_alloc_injected(void) {
    atomic_fetch_add(&foreign_counter, 1);
    return injected_failure();
}
long g4v_alloc_count_foreign(void) { return atomic_load(&foreign_counter); }
#else
static int injected_failure(void) { return 0; }
void g4v_alloc_fail_after(long n) { (void)n; }
void g4v_alloc_fail_once(long n) {
    (void)n;
}
long g4v_alloc_count(void) { return 0; }
int g4v_alloc_injected(void) { return 0; }
long g4v_alloc_count_foreign(void) { return 0; }
#endif

void *g4v_malloc(size_t n) {
    if (injected_failure()) return NULL;
    return malloc(n ? n : 1);
}

void *g4v_malloc_array(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) return NULL;
    return g4v_malloc(count * size);
}

void *g4v_calloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) return NULL;
    if (injected_failure()) return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *g4v_realloc(void *p, size_t n) {
    if (injected_failure()) return NULL;
    return realloc(p, n ? n : 1);
}

void g4v_free(void *p) { free(p); }

void *g4v_malloc_large(size_t n) {
    if (injected_failure()) return NULL;
    size_t huge = (size_t)2 << 20;
    size_t align = n >= huge ? huge : 64;
    size_t rounded = (n + align - 1) / align * align;
    if (rounded < n) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, align, rounded ? rounded : align) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    if (n >= huge) madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
}

void g4v_free_large(void *p) { free(p); }

void g4v_drop_mapped_pages(const void *data, size_t n) {
#ifdef MADV_DONTNEED
    long ps = sysconf(_SC_PAGESIZE);
    if (ps <= 0) return;
    uintptr_t lo = ((uintptr_t)data + (uintptr_t)ps - 1) & ~((uintptr_t)ps - 1);
    uintptr_t hi = ((uintptr_t)data + n) & ~((uintptr_t)ps - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED); /* advisory */
#else
    (void)data, (void)n;
#endif
}
