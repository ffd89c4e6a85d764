/* test_prompt_cache.c - the prompt cache's store (chat/chat_prompt_cache.h,
 * docs/PROMPT_CACHE.md) without a model: states are made-up bytes, derived from their items so
 * that any state served can be checked against the items it claims. Longest-prefix choice,
 * min_common, replacement and prefix dropping, both tiers' bounds and LRU order, persistence
 * across close/open (bytes identical), refusal of truncated, corrupted and foreign files (the
 * search going on), dead writers' temporaries, and many threads at once (also run under TSan:
 * make tsan). */
#include "chat_items.h"
#include "chat_prompt_cache.h"
#include "chat_prompt_file.h"
#include "test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint8_t KEY_A[32], KEY_B[32];
static char g_dir[256];

/* The made-up state of a context holding items: size bytes from a generator seeded by them. */
static uint64_t items_seed(const uint64_t *items, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++)
        h = (h ^ items[i]) * 1099511628211ull;
    return h | 1;
}
static void fill_state(uint8_t *p, size_t size, uint64_t seed) {
    uint64_t x = seed;
    for (size_t i = 0; i < size; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)x;
    }
}
static uint8_t *state_for(const uint64_t *items, int n, size_t size) {
    uint8_t *p = malloc(size);
    fill_state(p, size, items_seed(items, n));
    return p;
}
static int state_matches(const chat_pcache_hit *h) {
    uint8_t *want = state_for(h->items, h->n_items, h->size);
    int ok = memcmp(want, h->state, h->size) == 0;
    free(want);
    return ok;
}

/* Puts items with their made-up state of size bytes; returns put's result. */
static int put(chat_pcache *c, const uint64_t *items, int n, size_t size) {
    uint8_t *s = state_for(items, n, size);
    int r = chat_pcache_put(c, items, n, s, size);
    free(s);
    return r;
}

static void text_items(uint64_t *out, const int *tokens, int n) {
    for (int i = 0; i < n; i++)
        out[i] = chat_item_text(tokens[i]);
}
#define T(...) (const int[]){__VA_ARGS__}, (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int))
static int put_text(chat_pcache *c, const int *tokens, int n, size_t size) {
    uint64_t it[64];
    text_items(it, tokens, n);
    return put(c, it, n, size);
}
/* Finds the text query; returns find's result, *common and the hit's n_items (0 on a miss). */
static int find_text(chat_pcache *c, const int *tokens, int n, int min_common, int *common,
                     int *n_items, int *from_disk) {
    uint64_t it[64];
    text_items(it, tokens, n);
    chat_pcache_hit h;
    int r = chat_pcache_find(c, it, n, min_common, &h);
    *common = *n_items = 0;
    if (from_disk) *from_disk = -1;
    if (r == 1) {
        *common = h.n_common;
        *n_items = h.n_items;
        if (from_disk) *from_disk = h.from_disk;
        CHECK_MSG(state_matches(&h), "served state differs from its items' (%d items)", h.n_items);
        chat_pcache_hit_free(&h);
    }
    return r;
}

static chat_pcache *open_cache(size_t ram, const char *dir, uint64_t disk, const uint8_t *key) {
    chat_pcache_options o = {.ram_bytes = ram, .dir = dir, .disk_bytes = disk};
    memcpy(o.key, key, 32);
    chat_pcache *c = NULL;
    char err[256] = "";
    int r = chat_pcache_open(&o, &c, err, sizeof err);
    CHECK_MSG(r == 0 && c, "open: %s", err);
    return c;
}

static void entry_path(char *out, size_t cap, const uint8_t *key, const int *tokens, int n) {
    uint64_t it[64];
    uint8_t name[32];
    char folder[300];
    text_items(it, tokens, n);
    chat_pfile_name(key, it, n, name);
    snprintf(folder, sizeof folder, "%s/prompts", g_dir);
    chat_pfile_path(out, cap, folder, name);
}
static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}
static void clear_dir(void) {
    char folder[300], p[700];
    snprintf(folder, sizeof folder, "%s/prompts", g_dir);
    DIR *d = opendir(folder);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", folder, e->d_name);
            unlink(p);
        }
    closedir(d);
}
static int count_files(void) {
    char folder[300];
    snprintf(folder, sizeof folder, "%s/prompts", g_dir);
    DIR *d = opendir(folder);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}
static chat_pcache_stats stats(chat_pcache *c) {
    chat_pcache_stats s;
    chat_pcache_get_stats(c, &s);
    return s;
}

static void test_key(void) {
    uint8_t a[32], b[32];
    chat_pcache_key(a, (const char *const[]){"ab", "c"}, 2);
    chat_pcache_key(b, (const char *const[]){"a", "bc"}, 2);
    CHECK(memcmp(a, b, 32) != 0);
    chat_pcache_key(b, (const char *const[]){"ab", "c"}, 2);
    CHECK(memcmp(a, b, 32) == 0);
}

static void test_longest_prefix(void) {
    chat_pcache *c = open_cache(1 << 20, NULL, 0, KEY_A);
    REQUIRE(c);
    int common, n;
    CHECK(put_text(c, T(1, 2, 3), 100) == 1);
    CHECK(put_text(c, T(1, 2, 4, 5), 100) == 1);
    CHECK(put_text(c, T(9), 100) == 1);
    CHECK(find_text(c, T(1, 2, 4, 5, 6), 1, &common, &n, NULL) == 1 && common == 4 && n == 4);
    CHECK(find_text(c, T(1, 2, 3, 7), 1, &common, &n, NULL) == 1 && common == 3 && n == 3);
    /* a tie in common items: the entry with fewer items */
    CHECK(find_text(c, T(1, 2), 1, &common, &n, NULL) == 1 && common == 2 && n == 3);
    CHECK(find_text(c, T(8, 1), 1, &common, &n, NULL) == 0);
    /* min_common */
    CHECK(find_text(c, T(1, 2, 9), 3, &common, &n, NULL) == 0);
    CHECK(find_text(c, T(1, 2, 9), 2, &common, &n, NULL) == 1 && common == 2);
    CHECK(find_text(c, T(9, 9), 0, &common, &n, NULL) == 1 && common == 1 && n == 1);
    /* an image item: matched before its rows are known; its rows count as positions */
    uint64_t img[3] = {chat_item_image(0x123456789abcd000ull, 256), chat_item_text(7),
                       chat_item_text(8)};
    CHECK(put(c, img, 3, 64) == 1);
    uint64_t q[3] = {chat_item_image(0x123456789abcd000ull, 0), chat_item_text(7),
                     chat_item_text(5)};
    chat_pcache_hit h;
    CHECK(chat_pcache_find(c, q, 3, 1, &h) == 1);
    CHECK(h.n_common == 2 && h.n_common_pos == 257 && h.n_items == 3 && !h.from_disk);
    chat_pcache_hit_free(&h);
    /* an image whose rows are unknown is not a state a context can hold */
    CHECK(chat_pcache_put(c, q, 3, "xx", 2) == -1);
    chat_pcache_stats s = stats(c);
    CHECK(s.hits == 6 && s.misses == 2 && s.stores == 4 && s.ram_entries == 4);
    CHECK(s.items_reused == 4 + 3 + 2 + 2 + 1 + 2 && s.positions_reused == 4 + 3 + 2 + 2 + 1 + 257);
    chat_pcache_close(c);
}

static void test_replace_and_prefix(void) {
    chat_pcache *c = open_cache(1 << 20, NULL, 0, KEY_A);
    REQUIRE(c);
    int common, n;
    uint64_t it[2] = {chat_item_text(1), chat_item_text(2)};
    uint8_t s1[50], s2[60];
    memset(s1, 1, sizeof s1);
    memset(s2, 2, sizeof s2);
    CHECK(chat_pcache_put(c, it, 2, s1, sizeof s1) == 1);
    CHECK(chat_pcache_put(c, it, 2, s2, sizeof s2) == 1);
    chat_pcache_hit h;
    CHECK(chat_pcache_find(c, it, 2, 1, &h) == 1);
    CHECK(h.size == sizeof s2 && memcmp(h.state, s2, sizeof s2) == 0);
    chat_pcache_hit_free(&h);
    chat_pcache_stats s = stats(c);
    CHECK(s.replaced == 1 && s.ram_entries == 1 && s.ram_bytes == sizeof s2);
    /* a longer list drops its prefixes, and serves their queries */
    CHECK(put_text(c, T(1, 2, 3), 100) == 1);
    CHECK(put_text(c, T(5, 6, 7, 8), 100) == 1);
    CHECK(put_text(c, T(5, 6, 7), 100) == 1); /* a shorter one next to a longer one: both kept */
    s = stats(c);
    CHECK(s.replaced == 2 && s.ram_entries == 3);
    CHECK(find_text(c, T(1, 2), 1, &common, &n, NULL) == 1 && common == 2 && n == 3);
    CHECK(find_text(c, T(5, 6, 7, 8), 1, &common, &n, NULL) == 1 && common == 4 && n == 4);
    CHECK(find_text(c, T(5, 6, 7, 9), 1, &common, &n, NULL) == 1 && common == 3 && n == 3);
    chat_pcache_close(c);
}

static void test_ram_eviction(void) {
    chat_pcache *c = open_cache(3000, NULL, 0, KEY_A);
    REQUIRE(c);
    int common, n;
    CHECK(put_text(c, T(1), 1000) == 1);
    CHECK(put_text(c, T(2), 1000) == 1);
    CHECK(put_text(c, T(3), 1000) == 1);
    CHECK(find_text(c, T(1), 1, &common, &n, NULL) == 1); /* 1 is now the most recent */
    /* a hit held across its entry's eviction stays valid (checked at the end) */
    uint64_t q = chat_item_text(2);
    chat_pcache_hit held;
    CHECK(chat_pcache_find(c, &q, 1, 1, &held) == 1);
    CHECK(put_text(c, T(4), 1000) == 1); /* evicts 3, the least recently used */
    CHECK(put_text(c, T(5), 1000) == 1); /* evicts 1 */
    chat_pcache_stats s = stats(c);
    CHECK(s.evictions_ram == 2 && s.ram_entries == 3 && s.ram_bytes == 3000);
    CHECK(find_text(c, T(3), 1, &common, &n, NULL) == 0);
    CHECK(find_text(c, T(1), 1, &common, &n, NULL) == 0);
    CHECK(find_text(c, T(2), 1, &common, &n, NULL) == 1);
    CHECK(find_text(c, T(4), 1, &common, &n, NULL) == 1);
    CHECK(find_text(c, T(5), 1, &common, &n, NULL) == 1);
    /* larger than the bound: not kept, nothing evicted */
    CHECK(put_text(c, T(6), 3001) == 0);
    s = stats(c);
    CHECK(s.too_large == 1 && s.ram_entries == 3 && s.evictions_ram == 2);
    put_text(c, T(10), 1000);
    put_text(c, T(11), 1000);
    put_text(c, T(12), 1000);
    CHECK(find_text(c, T(2), 1, &common, &n, NULL) == 0 && stats(c).evictions_ram == 5);
    CHECK(state_matches(&held));
    chat_pcache_hit_free(&held);
    chat_pcache_close(c);
}

static void test_disk_persistence(void) {
    clear_dir();
    chat_pcache *c = open_cache(1 << 20, g_dir, 1 << 30, KEY_A);
    REQUIRE(c);
    /* larger than the file module's I/O chunk, so hashing across chunks is covered */
    const size_t big = ((size_t)17 << 20) + 12345;
    CHECK(put_text(c, T(1, 2, 3, 4), big) == 1); /* over the RAM bound: disk only */
    CHECK(put_text(c, T(1, 2, 3, 5), 777) == 1);
    chat_pcache_flush(c);
    chat_pcache_stats s = stats(c);
    CHECK(s.disk_entries == 2 && s.ram_entries == 1 && s.write_errors == 0);
    CHECK(s.disk_bytes == chat_pfile_size(4, big) + chat_pfile_size(4, 777));
    int common, n, from_disk;
    CHECK(find_text(c, T(1, 2, 3, 4), 1, &common, &n, &from_disk) == 1 && from_disk == 1);
    chat_pcache_close(c);
    CHECK(count_files() == 2);

    c = open_cache(1 << 20, g_dir, 1 << 30, KEY_A);
    REQUIRE(c);
    s = stats(c);
    CHECK(s.disk_entries == 2 && s.ram_entries == 0 && s.refused == 0);
    CHECK(find_text(c, T(1, 2, 3, 4, 9), 1, &common, &n, &from_disk) == 1 && common == 4 &&
          n == 4 && from_disk == 1);
    CHECK(find_text(c, T(1, 2, 3, 5), 4, &common, &n, &from_disk) == 1 && from_disk == 1);
    s = stats(c);
    CHECK(s.hits == 2 && s.hits_disk == 2);
    chat_pcache_close(c);
}

/* Two entries, the best for the query (1 2 3 4 6) first; then damage the best one's file. */
static chat_pcache *two_on_disk(void) {
    clear_dir();
    chat_pcache *c = open_cache(1 << 20, g_dir, 1 << 30, KEY_A);
    if (!c) return NULL;
    put_text(c, T(1, 2, 3, 4), 5000);
    put_text(c, T(1, 2, 3, 5), 5000);
    chat_pcache_close(c);
    return open_cache(1 << 20, g_dir, 1 << 30, KEY_A); /* disk only now */
}

static void test_truncated(void) {
    char best[700], next[700];
    entry_path(best, sizeof best, KEY_A, T(1, 2, 3, 4));
    entry_path(next, sizeof next, KEY_A, T(1, 2, 3, 5));
    /* at a find: refused, deleted, and the next best is served */
    chat_pcache *c = two_on_disk();
    REQUIRE(c);
    CHECK(truncate(best, (off_t)chat_pfile_size(4, 5000) - 1) == 0);
    int common, n, from_disk;
    CHECK(find_text(c, T(1, 2, 3, 4, 6), 1, &common, &n, &from_disk) == 1 && common == 3 &&
          from_disk == 1);
    chat_pcache_flush(c);
    CHECK(!exists(best) && exists(next));
    chat_pcache_stats s = stats(c);
    CHECK(s.refused == 1 && s.disk_entries == 1 && s.hits == 1);
    chat_pcache_close(c);
    /* at an open (the header says another size): refused and deleted there */
    c = two_on_disk();
    REQUIRE(c);
    chat_pcache_close(c);
    CHECK(truncate(best, 100) == 0);
    c = open_cache(1 << 20, g_dir, 1 << 30, KEY_A);
    REQUIRE(c);
    s = stats(c);
    CHECK(s.refused == 1 && s.disk_entries == 1 && !exists(best));
    CHECK(find_text(c, T(1, 2, 3, 4, 6), 1, &common, &n, &from_disk) == 1 && common == 3);
    chat_pcache_close(c);
}

static void test_flipped(void) {
    char best[700];
    entry_path(best, sizeof best, KEY_A, T(1, 2, 3, 4));
    const long where[] = {20 /* key */, 64 + 5 /* an item */, 64 + 32 + 2500 /* state */,
                          64 + 32 + 5000 + 7 /* checksum */};
    for (size_t k = 0; k < sizeof where / sizeof *where; k++) {
        chat_pcache *c = two_on_disk();
        REQUIRE(c);
        FILE *f = fopen(best, "r+b");
        REQUIRE(f);
        fseek(f, where[k], SEEK_SET);
        int ch = fgetc(f);
        fseek(f, where[k], SEEK_SET);
        fputc(ch ^ 0x10, f);
        fclose(f);
        int common, n, from_disk;
        CHECK_MSG(find_text(c, T(1, 2, 3, 4, 6), 1, &common, &n, &from_disk) == 1 && common == 3,
                  "byte %ld flipped: common %d", where[k], common);
        chat_pcache_flush(c);
        chat_pcache_stats s = stats(c);
        CHECK_MSG(s.refused == 1 && !exists(best), "byte %ld flipped: refused %llu", where[k],
                  (unsigned long long)s.refused);
        chat_pcache_close(c);
    }
}

static void test_other_key(void) {
    clear_dir();
    chat_pcache *c = open_cache(0, g_dir, 1 << 20, KEY_A);
    REQUIRE(c);
    CHECK(put_text(c, T(1, 2, 3), 1000) == 1);
    chat_pcache_close(c);
    char a_path[700];
    entry_path(a_path, sizeof a_path, KEY_A, T(1, 2, 3));
    /* another key: never served, not deleted, counted against the bound */
    c = open_cache(0, g_dir, 1 << 20, KEY_B);
    REQUIRE(c);
    int common, n;
    CHECK(find_text(c, T(1, 2, 3), 1, &common, &n, NULL) == 0);
    chat_pcache_stats s = stats(c);
    CHECK(s.refused == 0 && s.disk_entries == 1 && s.disk_bytes == chat_pfile_size(3, 1000));
    CHECK(exists(a_path));
    chat_pcache_close(c);
    /* ... and, as another key's file, evicted first when the bound needs room */
    clear_dir();
    c = open_cache(0, g_dir, 1 << 20, KEY_A);
    put_text(c, T(1, 2, 3), 1000);
    chat_pcache_close(c);
    c = open_cache(0, g_dir, 2 * chat_pfile_size(3, 1000), KEY_B);
    REQUIRE(c);
    CHECK(put_text(c, T(4, 5, 6), 1000) == 1);
    CHECK(put_text(c, T(7, 8, 9), 1000) == 1);
    chat_pcache_flush(c);
    s = stats(c);
    CHECK(!exists(a_path) && s.evictions_disk == 1 && s.disk_entries == 2);
    chat_pcache_close(c);
}

static void test_disk_eviction(void) {
    clear_dir();
    uint64_t f = chat_pfile_size(1, 1000);
    chat_pcache *c = open_cache(0, g_dir, 2 * f, KEY_A);
    REQUIRE(c);
    char p1[700], p2[700], p3[700], p4[700];
    entry_path(p1, sizeof p1, KEY_A, T(1));
    entry_path(p2, sizeof p2, KEY_A, T(2));
    entry_path(p3, sizeof p3, KEY_A, T(3));
    entry_path(p4, sizeof p4, KEY_A, T(4));
    int common, n;
    put_text(c, T(1), 1000);
    chat_pcache_flush(c);
    put_text(c, T(2), 1000);
    chat_pcache_flush(c);
    struct timespec ts = {0, 20 * 1000 * 1000}; /* file times are coarser than a write */
    nanosleep(&ts, NULL);
    CHECK(find_text(c, T(1), 1, &common, &n, NULL) == 1); /* 1 is now the most recent */
    nanosleep(&ts, NULL);
    put_text(c, T(3), 1000);
    chat_pcache_flush(c);
    chat_pcache_stats s = stats(c);
    CHECK(exists(p1) && !exists(p2) && exists(p3));
    CHECK(s.evictions_disk == 1 && s.disk_entries == 2 && s.disk_bytes == 2 * f);
    /* too large for the disk bound: not written */
    CHECK(put_text(c, T(9), 2 * f) == 0);
    nanosleep(&ts, NULL);
    CHECK(find_text(c, T(1), 1, &common, &n, NULL) == 1); /* 1 used after 3 was written */
    chat_pcache_close(c);
    /* the order survives a restart, as the files' times */
    c = open_cache(0, g_dir, 2 * f, KEY_A);
    REQUIRE(c);
    put_text(c, T(4), 1000);
    chat_pcache_flush(c);
    CHECK(exists(p1) && !exists(p3) && exists(p4));
    chat_pcache_close(c);
}

static void test_temps(void) {
    clear_dir();
    char dead[400], live[400];
    snprintf(dead, sizeof dead, "%s/prompts/tmp-1-1.part", g_dir);
    snprintf(live, sizeof live, "%s/prompts/tmp-2-2.part", g_dir);
    FILE *f = fopen(dead, "wb");
    REQUIRE(f);
    fputs("half a state", f);
    fclose(f);
    int fd = open(live, O_WRONLY | O_CREAT, 0644);
    REQUIRE(fd >= 0);
    CHECK(flock(fd, LOCK_EX) == 0); /* a writer still at work (in another process, say) */
    chat_pcache *c = open_cache(0, g_dir, 1 << 20, KEY_A);
    REQUIRE(c);
    CHECK(!exists(dead) && exists(live));
    CHECK(stats(c).temps_removed == 1);
    chat_pcache_close(c);
    close(fd);
    unlink(live);
}

/* Threads putting and finding overlapping conversations in small tiers: every state served must
 * be its items' (no torn or mixed-up state), and the bounds hold at the end. */
enum { THREADS = 4, ROUNDS = 150 };
static chat_pcache *g_shared;
typedef struct worker_result {
    unsigned seed;
    int errors, bad_states, hits;
} worker_result;
static void *worker(void *arg) {
    worker_result *w = arg; /* the CHECK counters are not for threads */
    unsigned r = w->seed * 2654435761u;
    uint64_t it[12];
    for (int k = 0; k < ROUNDS; k++) {
        r = r * 1103515245u + 12345u;
        int conv = (int)(r >> 16) % 6, len = 1 + (int)(r >> 8) % 12;
        for (int i = 0; i < len; i++)
            it[i] = chat_item_text(conv * 100 + i);
        if (r & 1) {
            w->errors += put(g_shared, it, len, 2000 + (size_t)conv * 300) != 1;
        } else {
            chat_pcache_hit h;
            int got = chat_pcache_find(g_shared, it, len, 1, &h);
            w->errors += got < 0;
            if (got == 1) {
                w->hits++;
                w->bad_states += h.n_common < 1 || h.n_common > len || !state_matches(&h);
                chat_pcache_hit_free(&h);
            }
        }
    }
    return NULL;
}

static void test_threads(void) {
    clear_dir();
    g_shared = open_cache(12000, g_dir, 25000, KEY_A);
    REQUIRE(g_shared);
    pthread_t t[THREADS];
    worker_result w[THREADS] = {{0}};
    for (int i = 0; i < THREADS; i++) {
        w[i].seed = (unsigned)i + 1;
        pthread_create(&t[i], NULL, worker, &w[i]);
    }
    int hits = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK_MSG(w[i].errors == 0 && w[i].bad_states == 0, "thread %d: %d errors, %d bad states",
                  i, w[i].errors, w[i].bad_states);
        hits += w[i].hits;
    }
    CHECK(hits > 0);
    chat_pcache_flush(g_shared);
    chat_pcache_stats s = stats(g_shared);
    CHECK(s.ram_bytes <= 12000 && s.disk_bytes <= 25000 && s.write_errors == 0 && s.refused == 0);
    CHECK(s.hits + s.misses > 0 && s.stores > 0);
    CHECK_MSG((int)s.disk_entries == count_files(), "%llu entries, %d files",
              (unsigned long long)s.disk_entries, count_files());
    chat_pcache_close(g_shared);
    /* and what is on disk reads back */
    chat_pcache *c = open_cache(0, g_dir, 25000, KEY_A);
    REQUIRE(c);
    CHECK(stats(c).refused == 0);
    for (int conv = 0; conv < 6; conv++) {
        uint64_t it[12];
        for (int i = 0; i < 12; i++)
            it[i] = chat_item_text(conv * 100 + i);
        chat_pcache_hit h;
        if (chat_pcache_find(c, it, 12, 1, &h) == 1) {
            CHECK(state_matches(&h));
            chat_pcache_hit_free(&h);
        }
    }
    chat_pcache_close(c);
}

static void test_options(void) {
    chat_pcache_options o = {.dir = g_dir};
    chat_pcache *c = NULL;
    char err[200] = "";
    CHECK(chat_pcache_open(&o, &c, err, sizeof err) == -1 && !c);
    CHECK_CONTAINS(err, "disk_bytes");
    /* no tier at all: nothing is kept */
    c = open_cache(0, NULL, 0, KEY_A);
    REQUIRE(c);
    CHECK(put_text(c, T(1), 10) == 0);
    int common, n;
    CHECK(find_text(c, T(1), 1, &common, &n, NULL) == 0);
    chat_pcache_close(c);
}

int main(void) {
    chat_pcache_key(KEY_A, (const char *const[]){"model A"}, 1);
    chat_pcache_key(KEY_B, (const char *const[]){"model B"}, 1);
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/test_pcache_XXXXXX", tmp);
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_key();
    test_longest_prefix();
    test_replace_and_prefix();
    test_ram_eviction();
    test_disk_persistence();
    test_truncated();
    test_flipped();
    test_other_key();
    test_disk_eviction();
    test_temps();
    test_threads();
    test_options();
    clear_dir();
    char p[300];
    snprintf(p, sizeof p, "%s/prompts", g_dir);
    rmdir(p);
    rmdir(g_dir);
    return test_summary("test_prompt_cache");
}
