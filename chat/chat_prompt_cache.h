/* chat_prompt_cache.h - the prompt cache beyond the slots (docs/PROMPT_CACHE.md): saved sequence
 * states of a language-model context, each the bytes of llama_state_seq_get_data for seq 0 of a
 * context holding exactly items[0..n) (chat_items.h), kept in a bounded RAM tier and a bounded
 * disk tier, so a conversation that comes back, even after a restart, resumes without prefill.
 *
 * Thread-safe: any number of threads may put and find at once. One mutex guards the index;
 * states are never copied under it (a hit shares the stored bytes, a put copies before locking)
 * and disk I/O runs outside it: reads in the finding thread, writes and deletions in the cache's
 * one writer thread, in the order they were decided, so a put returns once its state is in RAM.
 */
#ifndef G4V_CHAT_PROMPT_CACHE_H
#define G4V_CHAT_PROMPT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define CHAT_PCACHE_KEY_BYTES 32

typedef struct chat_pcache chat_pcache;

typedef struct chat_pcache_options {
    /* RAM tier: bound on the bytes of the states it holds; 0 = no RAM tier. */
    size_t ram_bytes;
    /* Disk tier: entries are files under dir/prompts/ (dir is created if missing; it may be the
     * feature cache's folder, which leaves prompts/ alone); NULL = no disk tier. */
    const char *dir;
    /* Disk tier: bound on the bytes of the files under dir/prompts/; must be > 0 with dir. */
    uint64_t disk_bytes;
    /* What else must match for a state to be served: both models' fingerprints, the libllama
     * build and its CPU backend, the context settings (chat_pcache_key makes one). An entry of
     * another key is never served; its file counts against disk_bytes until evicted. */
    uint8_t key[CHAT_PCACHE_KEY_BYTES];
} chat_pcache_options;

/* A key from its parts: SHA-256 over a tag and, for each part, its length and bytes (so
 * {"ab","c"} and {"a","bc"} differ). A NULL part counts as "". */
void chat_pcache_key(uint8_t key[CHAT_PCACHE_KEY_BYTES], const char *const *parts, int n_parts);

/* Opens a cache. With a disk tier it scans dir/prompts/: indexes each entry's header and items
 * (never its state), removes the temporaries of dead writers and the files that are not
 * well-formed entries, and evicts down to disk_bytes. 0 on success; -1 with a message in err
 * (bad options, a folder that cannot be created or read, out of memory). */
int chat_pcache_open(const chat_pcache_options *o, chat_pcache **out, char *err, size_t errsz);

/* Writes what is waiting for the disk, then frees everything. c may be NULL. */
void chat_pcache_close(chat_pcache *c);

/* Waits until every disk write and deletion decided so far is done (tests; before a fork). */
void chat_pcache_flush(chat_pcache *c);

/* Stores the state of a context holding exactly items[0..n_items): copied, so state may be
 * reused at once. It goes to the RAM tier when it fits its bound, and is queued for the disk
 * tier when its file fits that one's. An entry with the same items is replaced; an entry whose
 * items are a prefix of these is dropped (this one serves its queries too: the caller
 * truncates). Every item must take positions (an image item with its rows known).
 * 1: kept in a tier; 0: larger than every tier's bound, not kept; -1: bad arguments or out of
 * memory. Blocks while the disk writes waiting hold more than max(ram_bytes, size) bytes. */
int chat_pcache_put(chat_pcache *c, const uint64_t *items, int n_items, const void *state,
                    size_t size);

/* A state found: read-only, shared with the cache (no copy for a RAM hit); valid until
 * chat_pcache_hit_free, even if the cache evicts the entry meanwhile. */
typedef struct chat_pcache_hit {
    uint64_t *items;   /* the entry's items (malloc'ed) */
    int n_items;
    int n_common;      /* items shared with the query, from the start (<= n_items) */
    int n_common_pos;  /* the positions those items take (llama_memory_seq_rm from there) */
    int from_disk;     /* 1: read (and verified) from the disk tier */
    const void *state; /* the state: llama_state_seq_set_data of it, then drop the items past
                          n_common when n_common < n_items */
    size_t size;
    void *priv_;       /* the cache's reference on the state */
} chat_pcache_hit;

/* Looks up the entry sharing the longest prefix of items with query[0..n): at least min_common
 * items (and at least 1); among equals the one with the fewest items (the least to drop), then
 * the most recently used. A hit refreshes the entry in its tiers' LRU order. A disk entry is read
 * and checked in full; one that fails (truncated, corrupted, another key or version) is deleted,
 * counted as refused, and the search goes on with the next best.
 * 1: a hit in *hit; 0: none; -1: out of memory (*hit untouched unless 1). */
int chat_pcache_find(chat_pcache *c, const uint64_t *query, int n, int min_common,
                     chat_pcache_hit *hit);

void chat_pcache_hit_free(chat_pcache_hit *hit);

typedef struct chat_pcache_stats {
    uint64_t hits;            /* finds that returned a state */
    uint64_t hits_disk;       /* of which read from the disk tier */
    uint64_t misses;          /* finds that returned none */
    uint64_t items_reused;    /* sum of n_common over the hits */
    uint64_t positions_reused;/* sum of n_common_pos over the hits (tokens not prefilled) */
    uint64_t stores;          /* puts kept in a tier */
    uint64_t too_large;       /* puts larger than every tier's bound */
    uint64_t replaced;        /* entries dropped by a put of the same items or a longer list */
    uint64_t evictions_ram;   /* states evicted from the RAM tier by its bound */
    uint64_t evictions_disk;  /* files evicted from the disk tier by its bound */
    uint64_t refused;         /* disk entries found bad and deleted (at open or at a find) */
    uint64_t write_errors;    /* disk writes that failed (the entry stays in RAM only) */
    uint64_t temps_removed;   /* leftover temporaries of dead writers removed at open */
    uint64_t ram_bytes, ram_entries;   /* now: the RAM tier's states */
    uint64_t disk_bytes, disk_entries; /* now: the files under dir/prompts/ the cache knows */
    uint64_t ram_bound, disk_bound;    /* the options' bounds */
} chat_pcache_stats;

void chat_pcache_get_stats(chat_pcache *c, chat_pcache_stats *s);

#endif
