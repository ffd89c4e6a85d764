/* gemm_scratch.c - per-thread scratch for packing A, so g4v_gemm does not allocate per call.
 *
 * Why thread-local: a prepared weight is immutable and shared by threads, and g4v_gemm's
 * contract has no workspace argument; every thread that runs GEMM tasks (the pool's workers and
 * the callers) keeps one buffer, grown with g4v_malloc_large when a larger block is first needed
 * and reused afterwards (a task's block is bounded by about half the L2, so it stays small).
 * A pthread key frees it when the thread exits. If it cannot be allocated, the caller falls
 * back to a slower path that needs no heap memory and gives bit-identical results.
 */
#include "gemm_kernel.h"

#include "base/alloc.h"

#include <pthread.h>

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key[2];
static int key_ok;
/* slot 0: a task's scratch (g4v_gemm_scratch); slot 1: what a call shares with its tasks
 * (g4v_gemm_scratch_shared), held by the calling thread while its tasks use slot 0 */
static _Thread_local void *buf[2];
static _Thread_local size_t cap[2];

static void free_buf(void *p) {
    g4v_free_large(p);
}
static void make_key(void) {
    key_ok = pthread_key_create(&key[0], free_buf) == 0 &&
             pthread_key_create(&key[1], free_buf) == 0;
}

static void *scratch(int slot, size_t bytes) {
    if (bytes <= cap[slot]) return buf[slot];
    pthread_once(&key_once, make_key);
    if (!key_ok) return NULL; /* without the key the buffer would leak at thread exit */
    size_t want = (bytes + ((size_t)64 << 10) - 1) & ~(((size_t)64 << 10) - 1);
    void *p = g4v_malloc_large(want);
    if (!p) return NULL;
    if (pthread_setspecific(key[slot], p) != 0) {
        g4v_free_large(p);
        return NULL;
    }
    g4v_free_large(buf[slot]);
    buf[slot] = p;
    cap[slot] = want;
    return p;
}

void *g4v_gemm_scratch(size_t bytes) {
    return scratch(0, bytes);
}

void *g4v_gemm_scratch_shared(size_t bytes) {
    return scratch(1, bytes);
}
