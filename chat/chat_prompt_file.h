/* chat_prompt_file.h - one saved prompt state on disk: the file format of the prompt cache's disk
 * tier (chat_prompt_cache.h; docs/PROMPT_CACHE.md "File format"), its name, its atomic write and
 * its checked read. No state is kept here: chat_prompt_cache.c decides what to write and when.
 *
 * A file, all integers little-endian:
 *   offset 0   8 bytes   magic "G4VPRMPT"
 *          8   u32       format version (CHAT_PFILE_VERSION)
 *         12   u32       header bytes (64)
 *         16   32 bytes  the cache key (chat_pcache_options.key)
 *         48   u64       n_items
 *         56   u64       state bytes
 *         64   u64 x n   the items (chat_items.h)
 *          .   bytes     the state (llama_state_seq_get_data of seq 0)
 *          .   32 bytes  SHA-256 of everything before it
 * Its name is the lower-case hex of SHA-256(tag, key, n_items, items) + ".prompt": one file per
 * key and item list, so a newer state of the same items replaces the older by rename.
 */
#ifndef G4V_CHAT_PROMPT_FILE_H
#define G4V_CHAT_PROMPT_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define CHAT_PFILE_VERSION 1u
#define CHAT_PFILE_HEADER 64u
#define CHAT_PFILE_TRAILER 32u
#define CHAT_PFILE_MAX_ITEMS (1 << 24) /* more than any context holds; bounds a hostile header */
#define CHAT_PFILE_SUFFIX ".prompt"
#define CHAT_PFILE_NAME_CHARS (64 + 7) /* hex digest + suffix, without the NUL */

/* The file's size for n items and a state of size bytes. */
uint64_t chat_pfile_size(int n_items, size_t state_size);

/* The entry's name digest for key and items (its file is chat_pfile_path of it). */
void chat_pfile_name(const uint8_t key[32], const uint64_t *items, int n_items, uint8_t name[32]);

/* folder + "/" + hex(name) + ".prompt"; -1 if it does not fit in cap bytes. */
int chat_pfile_path(char *out, size_t cap, const char *folder, const uint8_t name[32]);

/* 1 if file_name (no folder) has the form of an entry's name ("<64 hex>.prompt"), with the
 * digest it spells in name; 0 otherwise. */
int chat_pfile_parse_name(const char *file_name, uint8_t name[32]);

/* Writes the entry atomically: a temporary "tmp-<pid>-<n>.part" in folder, locked (flock)
 * while it is written so no other process's open takes it for a dead writer's, fsync'ed,
 * renamed over the entry's name, then the folder fsync'ed. 0 on success; -1 with a message
 * (the temporary is removed). */
int chat_pfile_write(const char *folder, const uint8_t name[32], const uint8_t key[32],
                     const uint64_t *items, int n_items, const void *state, size_t state_size,
                     char *err, size_t errsz);

/* What a read found. */
typedef enum chat_pfile_status {
    CHAT_PFILE_OK = 0,
    CHAT_PFILE_BAD,     /* truncated, corrupted, inconsistent, not ours: delete it */
    CHAT_PFILE_FOREIGN, /* a well-formed header of another key or format version */
    CHAT_PFILE_GONE,    /* no such file (removed by someone else) */
    CHAT_PFILE_NOMEM    /* out of memory: nothing learnt about the file */
} chat_pfile_status;

/* An entry's header, as the cache's open indexes it. */
typedef struct chat_pfile_head {
    uint64_t n_items;
    uint64_t state_size;
    uint64_t file_size;
    struct timespec mtime; /* last use: written, or refreshed by chat_pfile_touch on a hit */
    uint64_t *items;       /* malloc'ed, n_items (OK only) */
} chat_pfile_head;

/* Reads path's header and items without the state: OK when the header is ours (magic, version,
 * key), the size matches, the items are well-formed (every item takes positions) and the name
 * is theirs; FOREIGN for another key or version (file_size and mtime are filled). */
chat_pfile_status chat_pfile_read_head(const char *path, const uint8_t key[32], chat_pfile_head *h);

/* Reads and verifies the whole entry at path, which the index says holds key, items[0..n) and
 * a state of state_size bytes: everything must match and the checksum hold. The state goes to
 * state_out (state_size bytes). */
chat_pfile_status chat_pfile_read(const char *path, const uint8_t key[32], const uint64_t *items,
                                  int n_items, size_t state_size, void *state_out);

/* Sets path's modification time to now (the disk tier's LRU order across restarts). */
void chat_pfile_touch(const char *path);

/* Removes folder's temporaries whose writer is gone (their lock is free); returns how many. */
int chat_pfile_remove_dead_temps(const char *folder);

#endif
