/* alloc.h - every heap allocation in libg4v goes through here.
 *
 * Why: (1) allocation-failure injection for tests (from the N-th allocation on, or only the
 * N-th, as SQLite's persistent and transient modes), compiled in only with G4V_FAULT_INJECTION; (2)
 * large buffers are 64-byte aligned and advised for transparent huge pages, because first touch of
 * a fresh 4 KiB page costs ~11.5 us on our machines (docs/ARCHITECTURE.md §5). All functions return NULL on
 * failure (or on an injected failure). Sizes are checked for multiplication overflow in g4v_calloc
 * / g4v_malloc_array.
 */
#ifndef G4V_BASE_ALLOC_H
#define G4V_BASE_ALLOC_H

#include <stddef.h>

void *g4v_malloc(size_t n);
void *g4v_calloc(size_t count, size_t size);
void *g4v_malloc_array(size_t count, size_t size); /* NULL if count*size overflows */
void *g4v_realloc(void *p, size_t n);
void g4v_free(void *p);

/* 64-byte aligned; buffers >= 2 MiB are madvise(MADV_HUGEPAGE)d. Free with g4v_free_large. */
void *g4v_malloc_large(size_t n);
void g4v_free_large(void *p);

/* Drops the whole pages inside [data, data + n) from this process's memory (madvise
 * MADV_DONTNEED; advisory, errors ignored). Only for read-only file mappings (a mapped checkpoint
 * tensor that has been packed or hashed and is not read again): there it just unmaps page-cache
 * pages, which a later read would fault back in; on anonymous memory it would zero them. */
void g4v_drop_mapped_pages(const void *data, size_t n);

/* Fault injection (no-ops unless built with G4V_FAULT_INJECTION). Allocations are numbered from
 * 0, counted from the last call of either setter; n < 0 disables injection.
 * g4v_alloc_fail_after(n): persistent: allocations n, n+1, ... all fail.
 * g4v_alloc_fail_once(n): transient: allocation n fails, the ones after it succeed again (so
 * error paths that allocate, and callers that retry or fall back, are exercised too).
 * g4v_alloc_count(): allocations attempted since the last setter call. */
void g4v_alloc_fail_after(long n);
void g4v_alloc_fail_once(long n);
long g4v_alloc_count(void);

/* For a library allocator wrapped by ours (libjpeg's memory manager, src/image/jpeg.c): counts
 * one allocation and returns 1 when the injector says it must fail. Always 0 without
 * G4V_FAULT_INJECTION. */
int g4v_alloc_injected(void);
/* How many of g4v_alloc_count()'s allocations were such foreign ones (libjpeg's). */
long g4v_alloc_count_foreign(void);

#endif
