/* chat_prompt_file.c - the prompt cache's entry files (format in chat_prompt_file.h;
 * docs/PROMPT_CACHE.md "File format" and "Safety"): written to a locked temporary, fsync'ed and
 * renamed, so a reader sees a complete file or none; read back only when every header field, the
 * size, the items and the SHA-256 agree. */
#define _GNU_SOURCE
#include "chat_prompt_file.h"
#include "chat_error.h"
#include "chat_items.h"
#include "frontend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char MAGIC[8] = {'G', '4', 'V', 'P', 'R', 'M', 'P', 'T'};
#define NAME_TAG "g4v-prompt-cache-name/1"
#define TEMP_PREFIX "tmp-"
#define TEMP_SUFFIX ".part"
#define IO_CHUNK ((size_t)1 << 24) /* hashing goes alongside the reads and writes */

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

uint64_t chat_pfile_size(int n_items, size_t state_size) {
    return CHAT_PFILE_HEADER + 8 * (uint64_t)n_items + state_size + CHAT_PFILE_TRAILER;
}

/* The items as they are stored: 8 little-endian bytes each. */
static uint8_t *items_le(const uint64_t *items, int n) {
    uint8_t *b = malloc(8 * (size_t)n + 1);
    if (b)
        for (int i = 0; i < n; i++)
            put_u64(b + 8 * (size_t)i, items[i]);
    return b;
}

void chat_pfile_name(const uint8_t key[32], const uint64_t *items, int n_items, uint8_t name[32]) {
    fe_sha256_ctx s;
    uint8_t n8[8], it[8];
    fe_sha256_init(&s);
    fe_sha256_update(&s, NAME_TAG, sizeof NAME_TAG);
    fe_sha256_update(&s, key, 32);
    put_u64(n8, (uint64_t)n_items);
    fe_sha256_update(&s, n8, 8);
    for (int i = 0; i < n_items; i++) {
        put_u64(it, items[i]);
        fe_sha256_update(&s, it, 8);
    }
    fe_sha256_final(&s, name);
}

int chat_pfile_path(char *out, size_t cap, const char *folder, const uint8_t name[32]) {
    static const char digits[] = "0123456789abcdef";
    char hex[65];
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[name[i] >> 4];
        hex[2 * i + 1] = digits[name[i] & 15];
    }
    hex[64] = 0;
    int k = snprintf(out, cap, "%s/%s%s", folder, hex, CHAT_PFILE_SUFFIX);
    return k < 0 || (size_t)k >= cap ? -1 : 0;
}

static int hex_digit(char ch) {
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

int chat_pfile_parse_name(const char *file_name, uint8_t name[32]) {
    if (strlen(file_name) != CHAT_PFILE_NAME_CHARS || strcmp(file_name + 64, CHAT_PFILE_SUFFIX))
        return 0;
    for (int i = 0; i < 32; i++) {
        int hi = hex_digit(file_name[2 * i]), lo = hex_digit(file_name[2 * i + 1]);
        if (hi < 0 || lo < 0) return 0;
        name[i] = (uint8_t)(hi << 4 | lo);
    }
    return 1;
}

static int write_all(int fd, const void *p, size_t n) {
    const uint8_t *b = p;
    while (n) {
        ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Reads exactly n bytes; -1 on an error or a file that ends first. */
static int read_all(int fd, void *p, size_t n) {
    uint8_t *b = p;
    while (n) {
        ssize_t k = read(fd, b, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

static void fsync_folder(const char *folder) {
    int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

int chat_pfile_write(const char *folder, const uint8_t name[32], const uint8_t key[32],
                     const uint64_t *items, int n_items, const void *state, size_t state_size,
                     char *err, size_t errsz) {
    static atomic_uint temp_counter; /* unique temporaries across the caches of this process */
    unsigned seq = atomic_fetch_add(&temp_counter, 1);
    char path[4096], tmp[4096];
    if (chat_pfile_path(path, sizeof path, folder, name) ||
        snprintf(tmp, sizeof tmp, "%s/" TEMP_PREFIX "%ld-%u" TEMP_SUFFIX, folder, (long)getpid(),
                 seq) >= (int)sizeof tmp) {
        seterr(err, errsz, "prompt cache: path too long under %s", folder);
        return -1;
    }
    uint8_t head[CHAT_PFILE_HEADER] = {0}, sum[32];
    memcpy(head, MAGIC, 8);
    put_u32(head + 8, CHAT_PFILE_VERSION);
    put_u32(head + 12, CHAT_PFILE_HEADER);
    memcpy(head + 16, key, 32);
    put_u64(head + 48, (uint64_t)n_items);
    put_u64(head + 56, (uint64_t)state_size);
    uint8_t *it = items_le(items, n_items);
    if (!it) {
        seterr(err, errsz, "prompt cache: out of memory");
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        seterr(err, errsz, "prompt cache: cannot create %s: %s", tmp, strerror(errno));
        free(it);
        return -1;
    }
    /* held until close: another process's open sees a live writer, not a leftover */
    (void)flock(fd, LOCK_EX | LOCK_NB);
    fe_sha256_ctx s;
    fe_sha256_init(&s);
    fe_sha256_update(&s, head, sizeof head);
    fe_sha256_update(&s, it, 8 * (size_t)n_items);
    int bad = write_all(fd, head, sizeof head) || write_all(fd, it, 8 * (size_t)n_items);
    free(it);
    const uint8_t *st = state;
    for (size_t off = 0; !bad && off < state_size; off += IO_CHUNK) {
        size_t k = state_size - off < IO_CHUNK ? state_size - off : IO_CHUNK;
        fe_sha256_update(&s, st + off, k);
        bad = write_all(fd, st + off, k);
    }
    fe_sha256_final(&s, sum);
    bad = bad || write_all(fd, sum, sizeof sum) || fsync(fd);
    int e = errno;
    if (!bad && rename(tmp, path)) {
        bad = 1;
        e = errno;
    }
    close(fd);
    if (bad) {
        unlink(tmp);
        seterr(err, errsz, "prompt cache: cannot write %s: %s", path, strerror(e));
        return -1;
    }
    fsync_folder(folder);
    return 0;
}

/* The header's fields; BAD unless it is a complete header of the known form. */
static chat_pfile_status parse_head(const uint8_t *head, uint64_t file_size, const uint8_t key[32],
                                    uint64_t *n_items, uint64_t *state_size) {
    if (memcmp(head, MAGIC, 8)) return CHAT_PFILE_BAD;
    if (get_u32(head + 8) != CHAT_PFILE_VERSION) return CHAT_PFILE_FOREIGN;
    if (get_u32(head + 12) != CHAT_PFILE_HEADER) return CHAT_PFILE_BAD;
    *n_items = get_u64(head + 48);
    *state_size = get_u64(head + 56);
    if (*n_items < 1 || *n_items > CHAT_PFILE_MAX_ITEMS || *state_size > file_size ||
        *state_size > SIZE_MAX / 2 || chat_pfile_size((int)*n_items, *state_size) != file_size)
        return CHAT_PFILE_BAD;
    if (memcmp(head + 16, key, 32)) return CHAT_PFILE_FOREIGN;
    return CHAT_PFILE_OK;
}

static chat_pfile_status open_entry(const char *path, int *fd, struct stat *st) {
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) return errno == ENOENT ? CHAT_PFILE_GONE : CHAT_PFILE_BAD;
    if (fstat(*fd, st) || !S_ISREG(st->st_mode)) {
        close(*fd);
        return CHAT_PFILE_BAD;
    }
    return CHAT_PFILE_OK;
}

chat_pfile_status chat_pfile_read_head(const char *path, const uint8_t key[32],
                                       chat_pfile_head *h) {
    memset(h, 0, sizeof *h);
    int fd;
    struct stat st;
    chat_pfile_status r = open_entry(path, &fd, &st);
    if (r != CHAT_PFILE_OK) return r;
    h->file_size = (uint64_t)st.st_size;
    h->mtime = st.st_mtim;
    uint8_t head[CHAT_PFILE_HEADER];
    if (read_all(fd, head, sizeof head)) {
        close(fd);
        return CHAT_PFILE_BAD;
    }
    r = parse_head(head, h->file_size, key, &h->n_items, &h->state_size);
    if (r != CHAT_PFILE_OK) {
        close(fd);
        return r;
    }
    size_t n = (size_t)h->n_items;
    uint8_t *raw = malloc(8 * n);
    h->items = malloc(8 * n);
    if (!raw || !h->items) {
        free(raw);
        free(h->items);
        h->items = NULL;
        close(fd);
        return CHAT_PFILE_NOMEM;
    }
    r = read_all(fd, raw, 8 * n) ? CHAT_PFILE_BAD : CHAT_PFILE_OK;
    close(fd);
    for (size_t i = 0; r == CHAT_PFILE_OK && i < n; i++) {
        h->items[i] = get_u64(raw + 8 * i);
        if (chat_item_n_pos(h->items[i]) < 1) r = CHAT_PFILE_BAD;
    }
    free(raw);
    if (r == CHAT_PFILE_OK) { /* the name is the items': a file copied under another name is not */
        uint8_t name[32];
        char expect[4096];
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        chat_pfile_name(key, h->items, (int)n, name);
        if (chat_pfile_path(expect, sizeof expect, "", name) || strcmp(expect + 1, base))
            r = CHAT_PFILE_BAD;
    }
    if (r != CHAT_PFILE_OK) {
        free(h->items);
        h->items = NULL;
    }
    return r;
}

chat_pfile_status chat_pfile_read(const char *path, const uint8_t key[32], const uint64_t *items,
                                  int n_items, size_t state_size, void *state_out) {
    int fd;
    struct stat st;
    chat_pfile_status r = open_entry(path, &fd, &st);
    if (r != CHAT_PFILE_OK) return r;
    uint8_t head[CHAT_PFILE_HEADER], sum[32], want[32];
    uint64_t n = 0, size = 0;
    r = CHAT_PFILE_BAD;
    if ((uint64_t)st.st_size != chat_pfile_size(n_items, state_size) ||
        read_all(fd, head, sizeof head) ||
        parse_head(head, (uint64_t)st.st_size, key, &n, &size) != CHAT_PFILE_OK ||
        n != (uint64_t)n_items || size != state_size) {
        close(fd);
        return r;
    }
    uint8_t *it = malloc(8 * (size_t)n_items);
    uint8_t *expect = items_le(items, n_items);
    if (!it || !expect) {
        free(it);
        free(expect);
        close(fd);
        return CHAT_PFILE_NOMEM;
    }
    fe_sha256_ctx s;
    fe_sha256_init(&s);
    fe_sha256_update(&s, head, sizeof head);
    int bad = read_all(fd, it, 8 * (size_t)n_items) || memcmp(it, expect, 8 * (size_t)n_items);
    if (!bad) fe_sha256_update(&s, it, 8 * (size_t)n_items);
    free(it);
    free(expect);
    uint8_t *out = state_out;
    for (size_t off = 0; !bad && off < state_size; off += IO_CHUNK) {
        size_t k = state_size - off < IO_CHUNK ? state_size - off : IO_CHUNK;
        bad = read_all(fd, out + off, k);
        if (!bad) fe_sha256_update(&s, out + off, k);
    }
    bad = bad || read_all(fd, sum, sizeof sum);
    close(fd);
    if (bad) return r;
    fe_sha256_final(&s, want);
    return memcmp(sum, want, 32) ? CHAT_PFILE_BAD : CHAT_PFILE_OK;
}

void chat_pfile_touch(const char *path) { (void)utimensat(AT_FDCWD, path, NULL, 0); }

int chat_pfile_remove_dead_temps(const char *folder) {
    DIR *d = opendir(folder);
    if (!d) return 0;
    int removed = 0;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, TEMP_PREFIX, 4) || len < 9 ||
            strcmp(e->d_name + len - 5, TEMP_SUFFIX))
            continue;
        if (snprintf(path, sizeof path, "%s/%s", folder, e->d_name) >= (int)sizeof path) continue;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && unlink(path) == 0) removed++;
        close(fd);
    }
    closedir(d);
    return removed;
}
