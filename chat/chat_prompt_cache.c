/* chat_prompt_cache.c - the prompt cache's index, tiers and writer (chat_prompt_cache.h;
 * docs/PROMPT_CACHE.md). The files themselves are chat_prompt_file.c's.
 *
 * Index: an array of entries under one mutex, searched linearly (a cache holds tens to hundreds
 * of conversations; comparing item prefixes is cheap next to restoring one state). An entry
 * holds its items, and its state as a reference-counted blob while it is in the RAM tier or
 * waiting to be written; a hit takes another reference instead of copying. Each tier keeps its
 * own LRU order by a tick from one clock; the disk tier's order survives a restart as the files'
 * modification times (written, or touched by a hit).
 * Disk: every write and deletion is an operation in one queue, run by the cache's writer thread
 * in the order the index decided them under the mutex. That order is what makes the file names
 * safe to reuse: a put that replaces an entry queues the old file's deletion before the new
 * file's write; an entry dropped while its write waits is not written; one dropped during its
 * write has its file removed by the writer right after. Finds read files outside the mutex;
 * rename makes every file they open complete, and the checksum catches what the disk broke.
 */
#include "chat_prompt_cache.h"
#include "chat_error.h"
#include "chat_items.h"
#include "chat_prompt_file.h"
#include "frontend.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_TAG "g4v-prompt-cache-key/1"

typedef struct pc_blob {
    atomic_size_t refs;
    size_t size;
    _Alignas(16) unsigned char data[];
} pc_blob;

typedef struct pc_entry {
    uint64_t *items; /* NULL for a foreign file */
    int n_items;
    uint8_t name[32];
    size_t state_size;
    uint64_t file_bytes; /* while on_disk */
    pc_blob *blob;       /* while in_ram or pending */
    uint64_t ram_tick, disk_tick;
    int refs; /* the index's (while live), queued writes', finds reading its file */
    unsigned live : 1, in_ram : 1, pending : 1, on_disk : 1, foreign : 1;
} pc_entry;

typedef struct pc_op {
    struct pc_op *next;
    pc_entry *write; /* write this entry's file, or */
    uint8_t unlink_name[32]; /* delete this file */
} pc_op;

struct chat_pcache {
    chat_pcache_options o;
    char folder[4096]; /* dir/prompts; "" without a disk tier */
    pthread_mutex_t mu;
    pthread_cond_t work; /* the writer: an operation was queued, or stop */
    pthread_cond_t done; /* flush and put: an operation finished */
    pc_entry **e;
    int n, cap;
    uint64_t clock;
    uint64_t ram_total, disk_total;
    pc_op *head, *tail;
    uint64_t queued_bytes; /* states waiting for the writer */
    int busy, stop;
    pthread_t writer;
    int has_writer;
    chat_pcache_stats st;
};

void chat_pcache_key(uint8_t key[CHAT_PCACHE_KEY_BYTES], const char *const *parts, int n_parts) {
    fe_sha256_ctx s;
    fe_sha256_init(&s);
    fe_sha256_update(&s, KEY_TAG, sizeof KEY_TAG);
    for (int i = 0; i < n_parts; i++) {
        const char *p = parts[i] ? parts[i] : "";
        uint64_t len = strlen(p);
        uint8_t le[8];
        for (int b = 0; b < 8; b++)
            le[b] = (uint8_t)(len >> (8 * b));
        fe_sha256_update(&s, le, 8);
        fe_sha256_update(&s, p, (size_t)len);
    }
    fe_sha256_final(&s, key);
}

static pc_blob *blob_new(size_t size) {
    if (size > SIZE_MAX - sizeof(pc_blob)) return NULL;
    pc_blob *b = malloc(sizeof *b + size);
    if (!b) return NULL;
    atomic_init(&b->refs, 1);
    b->size = size;
    return b;
}

static void blob_unref(pc_blob *b) {
    if (b && atomic_fetch_sub(&b->refs, 1) == 1) free(b);
}

static void entry_unref(pc_entry *e) {
    if (--e->refs) return;
    blob_unref(e->blob);
    free(e->items);
    free(e);
}

/* The blob goes when neither the RAM tier nor a queued write needs it. */
static void entry_trim_blob(pc_entry *e) {
    if (e->blob && !e->in_ram && !e->pending) {
        blob_unref(e->blob);
        e->blob = NULL;
    }
}

static int index_add(chat_pcache *c, pc_entry *e) {
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        pc_entry **g = realloc(c->e, (size_t)cap * sizeof *g);
        if (!g) return -1;
        c->e = g;
        c->cap = cap;
    }
    c->e[c->n++] = e;
    e->live = 1;
    e->refs++;
    return 0;
}

static void index_remove(chat_pcache *c, pc_entry *e) {
    for (int i = 0; i < c->n; i++)
        if (c->e[i] == e) {
            c->e[i] = c->e[--c->n];
            break;
        }
    e->live = 0;
    entry_unref(e);
}

static void enqueue(chat_pcache *c, pc_op *op) {
    op->next = NULL;
    if (c->tail)
        c->tail->next = op;
    else
        c->head = op;
    c->tail = op;
    pthread_cond_signal(&c->work);
}

/* Takes e out of both tiers and the index; its file, if any, is deleted in queue order. When
 * the queue cannot grow (out of memory) the file stays, unindexed, until the next open. */
static void drop_entry(chat_pcache *c, pc_entry *e) {
    if (e->in_ram) {
        c->ram_total -= e->state_size;
        e->in_ram = 0;
    }
    if (e->on_disk) {
        c->disk_total -= e->file_bytes;
        e->on_disk = 0;
        pc_op *op = calloc(1, sizeof *op);
        if (op) {
            memcpy(op->unlink_name, e->name, 32);
            enqueue(c, op);
        }
    }
    entry_trim_blob(e);
    index_remove(c, e);
}

static void ram_evict(chat_pcache *c) {
    while (c->ram_total > c->o.ram_bytes) {
        pc_entry *v = NULL;
        for (int i = 0; i < c->n; i++)
            if (c->e[i]->in_ram && (!v || c->e[i]->ram_tick < v->ram_tick)) v = c->e[i];
        if (!v) break;
        c->st.evictions_ram++;
        v->in_ram = 0;
        c->ram_total -= v->state_size;
        entry_trim_blob(v);
        if (!v->pending && !v->on_disk) index_remove(c, v);
    }
}

/* Evicts disk entries (least recently used first, never keep) until need more bytes fit under
 * the bound; their names go to *victims for the caller to delete outside the mutex. */
static int disk_make_room(chat_pcache *c, uint64_t need, const pc_entry *keep,
                          uint8_t (**victims)[32], int *n_victims) {
    *victims = NULL;
    *n_victims = 0;
    while (c->disk_total + need > c->o.disk_bytes) {
        pc_entry *v = NULL;
        for (int i = 0; i < c->n; i++) {
            pc_entry *e = c->e[i];
            if (e->on_disk && e != keep && (!v || e->disk_tick < v->disk_tick)) v = e;
        }
        if (!v) break;
        uint8_t(*g)[32] = realloc(*victims, (size_t)(*n_victims + 1) * sizeof *g);
        if (!g) return -1;
        *victims = g;
        memcpy(g[(*n_victims)++], v->name, 32);
        c->st.evictions_disk++;
        v->on_disk = 0;
        c->disk_total -= v->file_bytes;
        if (!v->in_ram && !v->pending) index_remove(c, v);
    }
    return 0;
}

static void unlink_name(const chat_pcache *c, const uint8_t name[32]) {
    char path[4200];
    if (!chat_pfile_path(path, sizeof path, c->folder, name)) unlink(path);
}

static void unlink_victims(chat_pcache *c, uint8_t (*victims)[32], int n) {
    for (int i = 0; i < n; i++)
        unlink_name(c, victims[i]);
    free(victims);
}

/* The writer's half of a put (mutex held on entry and on return, released during the I/O). */
static void write_entry(chat_pcache *c, pc_entry *e) {
    uint64_t fsize = chat_pfile_size(e->n_items, e->state_size);
    int written = 0;
    if (e->live) {
        uint8_t(*victims)[32];
        int n_victims;
        if (disk_make_room(c, fsize, e, &victims, &n_victims)) {
            c->st.write_errors++;
        } else {
            c->disk_total += fsize; /* reserved while the file is written */
            pthread_mutex_unlock(&c->mu);
            unlink_victims(c, victims, n_victims);
            char err[256];
            written = chat_pfile_write(c->folder, e->name, c->o.key, e->items, e->n_items,
                                       e->blob->data, e->state_size, err, sizeof err) == 0;
            pthread_mutex_lock(&c->mu);
            if (!written) c->st.write_errors++;
            if (written && e->live) {
                e->on_disk = 1;
                e->file_bytes = fsize;
                e->disk_tick = ++c->clock;
            } else {
                c->disk_total -= fsize;
            }
        }
    }
    e->pending = 0;
    c->queued_bytes -= e->state_size;
    entry_trim_blob(e);
    if (e->live && !e->in_ram && !e->on_disk) index_remove(c, e);
    /* dropped while it was written: no later write of its name has run yet */
    if (written && !e->on_disk) {
        pthread_mutex_unlock(&c->mu);
        unlink_name(c, e->name);
        pthread_mutex_lock(&c->mu);
    }
    entry_unref(e);
}

static void *writer_main(void *arg) {
    chat_pcache *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->head && !c->stop)
            pthread_cond_wait(&c->work, &c->mu);
        pc_op *op = c->head;
        if (!op) break;
        c->head = op->next;
        if (!c->head) c->tail = NULL;
        c->busy = 1;
        if (op->write) {
            write_entry(c, op->write);
        } else {
            pthread_mutex_unlock(&c->mu);
            unlink_name(c, op->unlink_name);
            pthread_mutex_lock(&c->mu);
        }
        free(op);
        c->busy = 0;
        pthread_cond_broadcast(&c->done);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static int make_dirs(const char *dir) {
    char p[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof p) return -1;
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char ch = p[i];
        p[i] = '\0';
        if (mkdir(p, 0777) && errno != EEXIST) return -1;
        p[i] = ch;
    }
    return 0;
}

static int by_disk_tick(const void *a, const void *b) {
    const pc_entry *x = *(pc_entry *const *)a, *y = *(pc_entry *const *)b;
    return x->disk_tick < y->disk_tick ? -1 : x->disk_tick > y->disk_tick;
}

/* Indexes dir/prompts/ (before the writer starts: nothing else touches the cache yet). */
static int scan_folder(chat_pcache *c, char *err, size_t errsz) {
    c->st.temps_removed = (uint64_t)chat_pfile_remove_dead_temps(c->folder);
    DIR *d = opendir(c->folder);
    if (!d) {
        seterr(err, errsz, "prompt cache: cannot read %s: %s", c->folder, strerror(errno));
        return -1;
    }
    struct dirent *de;
    char path[4200];
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        uint8_t name[32];
        if (!chat_pfile_parse_name(de->d_name, name)) continue;
        if (chat_pfile_path(path, sizeof path, c->folder, name)) continue;
        chat_pfile_head h;
        chat_pfile_status r = chat_pfile_read_head(path, c->o.key, &h);
        if (r == CHAT_PFILE_GONE) continue;
        if (r == CHAT_PFILE_BAD) {
            unlink(path);
            c->st.refused++;
            continue;
        }
        pc_entry *e = r == CHAT_PFILE_NOMEM ? NULL : calloc(1, sizeof *e);
        if (!e || index_add(c, e)) {
            free(e);
            free(h.items);
            rc = -1;
            break;
        }
        e->items = h.items;
        e->n_items = (int)h.n_items;
        e->state_size = (size_t)h.state_size;
        e->foreign = r == CHAT_PFILE_FOREIGN;
        e->on_disk = 1;
        e->file_bytes = h.file_size;
        /* mtime in ns orders the entries; ticks are then renumbered from 1 */
        e->disk_tick = (uint64_t)h.mtime.tv_sec * 1000000000u + (uint64_t)h.mtime.tv_nsec;
        memcpy(e->name, name, 32); /* its items' (checked), or a foreign file's own */
        c->disk_total += e->file_bytes;
    }
    closedir(d);
    if (rc) {
        seterr(err, errsz, "prompt cache: out of memory indexing %s", c->folder);
        return -1;
    }
    if (c->n) qsort(c->e, (size_t)c->n, sizeof *c->e, by_disk_tick);
    for (int i = 0; i < c->n; i++)
        c->e[i]->disk_tick = ++c->clock;
    return 0;
}

int chat_pcache_open(const chat_pcache_options *o, chat_pcache **out, char *err, size_t errsz) {
    *out = NULL;
    if (!o || (o->dir && o->disk_bytes == 0)) {
        seterr(err, errsz, "prompt cache: %s", o ? "a disk tier needs a bound (disk_bytes > 0)"
                                                 : "no options");
        return -1;
    }
    chat_pcache *c = calloc(1, sizeof *c);
    if (!c) {
        seterr(err, errsz, "prompt cache: out of memory");
        return -1;
    }
    c->o = *o;
    c->o.dir = NULL;
    if (!o->dir) c->o.disk_bytes = 0;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->work, NULL);
    pthread_cond_init(&c->done, NULL);
    if (o->dir) {
        int len = snprintf(c->folder, sizeof c->folder, "%s/prompts", o->dir);
        if (len < 0 || len >= (int)sizeof c->folder - 80) { /* room for "/<name>" */
            seterr(err, errsz, "prompt cache: directory path too long");
            chat_pcache_close(c);
            return -1;
        }
        if (make_dirs(c->folder)) {
            seterr(err, errsz, "prompt cache: cannot create %s: %s", c->folder, strerror(errno));
            chat_pcache_close(c);
            return -1;
        }
        if (scan_folder(c, err, errsz)) {
            chat_pcache_close(c);
            return -1;
        }
        uint8_t(*victims)[32];
        int n_victims;
        if (disk_make_room(c, 0, NULL, &victims, &n_victims) == 0)
            unlink_victims(c, victims, n_victims);
        if (pthread_create(&c->writer, NULL, writer_main, c)) {
            seterr(err, errsz, "prompt cache: cannot start its writer thread");
            chat_pcache_close(c);
            return -1;
        }
        c->has_writer = 1;
    }
    *out = c;
    return 0;
}

void chat_pcache_flush(chat_pcache *c) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    while (c->head || c->busy)
        pthread_cond_wait(&c->done, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

void chat_pcache_close(chat_pcache *c) {
    if (!c) return;
    if (c->has_writer) {
        pthread_mutex_lock(&c->mu);
        c->stop = 1;
        pthread_cond_signal(&c->work);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->writer, NULL);
    }
    for (int i = 0; i < c->n; i++) {
        c->e[i]->in_ram = 0;
        c->e[i]->live = 0;
        entry_unref(c->e[i]);
    }
    free(c->e);
    pthread_cond_destroy(&c->done);
    pthread_cond_destroy(&c->work);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int chat_pcache_put(chat_pcache *c, const uint64_t *items, int n_items, const void *state,
                    size_t size) {
    if (!c || !items || n_items < 1 || n_items > CHAT_PFILE_MAX_ITEMS || !state || !size)
        return -1;
    for (int i = 0; i < n_items; i++)
        if (chat_item_n_pos(items[i]) < 1) return -1;
    uint64_t fsize = chat_pfile_size(n_items, size);
    int to_ram = c->o.ram_bytes && size <= c->o.ram_bytes;
    int to_disk = c->has_writer && fsize <= c->o.disk_bytes;
    if (!to_ram && !to_disk) {
        pthread_mutex_lock(&c->mu);
        c->st.too_large++;
        pthread_mutex_unlock(&c->mu);
        return 0;
    }
    pc_entry *e = calloc(1, sizeof *e);
    pc_op *op = to_disk ? calloc(1, sizeof *op) : NULL;
    if (e) {
        e->items = malloc((size_t)n_items * sizeof *items);
        e->blob = blob_new(size);
    }
    if (!e || !e->items || !e->blob || (to_disk && !op)) {
        if (e) {
            free(e->items);
            free(e->blob);
        }
        free(e);
        free(op);
        return -1;
    }
    memcpy(e->items, items, (size_t)n_items * sizeof *items);
    memcpy(e->blob->data, state, size);
    e->n_items = n_items;
    e->state_size = size;
    if (to_disk) chat_pfile_name(c->o.key, items, n_items, e->name);

    pthread_mutex_lock(&c->mu);
    if (to_disk) {
        uint64_t allowed = c->o.ram_bytes > size ? c->o.ram_bytes : size;
        while (c->queued_bytes && c->queued_bytes + size > allowed)
            pthread_cond_wait(&c->done, &c->mu);
    }
    if (index_add(c, e)) {
        pthread_mutex_unlock(&c->mu);
        blob_unref(e->blob);
        free(e->items);
        free(e);
        free(op);
        return -1;
    }
    /* this entry serves the queries of any entry whose items are a prefix of its own */
    for (int i = c->n - 2; i >= 0; i--) {
        pc_entry *o = c->e[i];
        if (!o->foreign && o->n_items <= n_items &&
            chat_items_common(o->items, o->n_items, items, n_items) == o->n_items) {
            c->st.replaced++;
            drop_entry(c, o); /* the swap-remove brings a visited entry (or e) to i */
        }
    }
    uint64_t tick = ++c->clock;
    if (to_ram) {
        e->in_ram = 1;
        e->ram_tick = tick;
        c->ram_total += size;
    }
    if (to_disk) {
        e->pending = 1;
        e->disk_tick = tick;
        e->refs++;
        op->write = e;
        c->queued_bytes += size;
        enqueue(c, op);
    }
    c->st.stores++;
    ram_evict(c);
    pthread_mutex_unlock(&c->mu);
    return 1;
}

/* Better candidate for a query: more items in common, then fewer items, then more recent. */
static int better(const pc_entry *a, int ca, const pc_entry *b, int cb) {
    if (!b) return 1;
    if (ca != cb) return ca > cb;
    if (a->n_items != b->n_items) return a->n_items < b->n_items;
    uint64_t ta = a->ram_tick > a->disk_tick ? a->ram_tick : a->disk_tick;
    uint64_t tb = b->ram_tick > b->disk_tick ? b->ram_tick : b->disk_tick;
    return ta > tb;
}

static void fill_hit(chat_pcache_hit *hit, uint64_t *items, const pc_entry *e, int common,
                     pc_blob *b, int from_disk) {
    memset(hit, 0, sizeof *hit);
    hit->items = items;
    hit->n_items = e->n_items;
    hit->n_common = common;
    for (int i = 0; i < common; i++)
        hit->n_common_pos += chat_item_n_pos(items[i]);
    hit->from_disk = from_disk;
    hit->state = b->data;
    hit->size = b->size;
    hit->priv_ = b;
}

static void count_hit(chat_pcache *c, const chat_pcache_hit *hit) {
    c->st.hits++;
    c->st.hits_disk += (uint64_t)hit->from_disk;
    c->st.items_reused += (uint64_t)hit->n_common;
    c->st.positions_reused += (uint64_t)hit->n_common_pos;
}

int chat_pcache_find(chat_pcache *c, const uint64_t *query, int n, int min_common,
                     chat_pcache_hit *hit) {
    if (!c || !hit) return -1;
    if (min_common < 1) min_common = 1;
    char path[4200];
    pthread_mutex_lock(&c->mu);
    for (;;) {
        pc_entry *best = NULL;
        int best_common = 0;
        for (int i = 0; query && i < c->n; i++) {
            pc_entry *e = c->e[i];
            if (e->foreign || (!e->blob && !e->on_disk)) continue;
            int common = chat_items_common(e->items, e->n_items, query, n);
            if (common >= min_common && better(e, common, best, best_common)) {
                best = e;
                best_common = common;
            }
        }
        if (!best) {
            c->st.misses++;
            pthread_mutex_unlock(&c->mu);
            return 0;
        }
        uint64_t *items = malloc((size_t)best->n_items * sizeof *items);
        if (!items) {
            pthread_mutex_unlock(&c->mu);
            return -1;
        }
        memcpy(items, best->items, (size_t)best->n_items * sizeof *items);
        int touch = best->on_disk && !chat_pfile_path(path, sizeof path, c->folder, best->name);
        uint64_t tick = ++c->clock;
        if (best->blob) { /* in RAM, or still waiting for the writer */
            atomic_fetch_add(&best->blob->refs, 1);
            if (best->in_ram) best->ram_tick = tick;
            if (best->on_disk) best->disk_tick = tick;
            fill_hit(hit, items, best, best_common, best->blob, 0);
            count_hit(c, hit);
            pthread_mutex_unlock(&c->mu);
            if (touch) chat_pfile_touch(path);
            return 1;
        }
        best->refs++;
        pthread_mutex_unlock(&c->mu);
        pc_blob *b = blob_new(best->state_size);
        chat_pfile_status r = b ? chat_pfile_read(path, c->o.key, items, best->n_items,
                                                  best->state_size, b->data)
                                : CHAT_PFILE_NOMEM;
        if (r == CHAT_PFILE_OK) chat_pfile_touch(path);
        pthread_mutex_lock(&c->mu);
        if (r == CHAT_PFILE_OK) {
            if (best->live && best->on_disk) best->disk_tick = ++c->clock;
            fill_hit(hit, items, best, best_common, b, 1);
            count_hit(c, hit);
            entry_unref(best);
            pthread_mutex_unlock(&c->mu);
            return 1;
        }
        blob_unref(b);
        free(items);
        if (r == CHAT_PFILE_NOMEM) {
            entry_unref(best);
            pthread_mutex_unlock(&c->mu);
            return -1;
        }
        /* no later write has this name while the entry is live: the file read is the one */
        if (best->live && best->on_disk) {
            if (r != CHAT_PFILE_GONE) c->st.refused++;
            drop_entry(c, best);
        }
        entry_unref(best);
    }
}

void chat_pcache_hit_free(chat_pcache_hit *hit) {
    if (!hit) return;
    blob_unref(hit->priv_);
    free(hit->items);
    memset(hit, 0, sizeof *hit);
}

void chat_pcache_get_stats(chat_pcache *c, chat_pcache_stats *s) {
    pthread_mutex_lock(&c->mu);
    *s = c->st;
    s->ram_bytes = c->ram_total;
    s->disk_bytes = c->disk_total;
    s->ram_entries = s->disk_entries = 0;
    for (int i = 0; i < c->n; i++) {
        s->ram_entries += c->e[i]->in_ram;
        s->disk_entries += c->e[i]->on_disk;
    }
    s->ram_bound = c->o.ram_bytes;
    s->disk_bound = c->o.disk_bytes;
    pthread_mutex_unlock(&c->mu);
}
