/* cache.c - the persistent feature cache (g4v_cache, g4v.h; docs/SERVICE.md "The feature cache").
 *
 * Directory layout: DIR/<first two hex digits of the key>/<key>.safetensors, one entry per file;
 * DIR/tmp-*.part are writes in progress. An entry is a safetensors file: the float32 features
 * [N, T] as tensor "features", and in "__metadata__" the format tag, the key, the fingerprint,
 * the sizes (as g4v encode writes them) and a SHA-256 checksum over the data and the sizes.
 *
 * Many processes: a writer writes a private temporary file and rename()s it over the entry's
 * name, which POSIX makes atomic, so a reader opens either a complete old entry or a complete new
 * one, never a half-written one; two writers of one key write identical bytes, and the last
 * rename wins. A reader checks everything before serving (sizes, key, checksum), so a file damaged
 * on disk (truncated, flipped bits, another program's file) is a miss, is counted as corrupt, and
 * is replaced by the recomputed entry.
 * Eviction: after each store the directory is scanned (one stat per entry: O(entries)), and while
 * the total is above max_bytes the least recently used entry goes; "used" is the modification
 * time, which every hit refreshes. Two processes evicting at once may both try to remove a file;
 * the loser's ENOENT is ignored. Temporary files older than ten minutes (a writer that died) are
 * removed by the scan. Limits: features are stored in the host's byte order (little-endian on
 * every machine we build for); an entry's header is at most 64 KiB.
 */
#include "api_internal.h"

#include "base/alloc.h"
#include "base/dtype.h"
#include "kernels/sha256.h"
#include "io/fsutil.h"
#include "io/json_file.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_FORMAT "g4v-feature-cache/1"
#define CACHE_KEY_TAG "g4v-feature-cache-key/1"
#define CACHE_MAX_HEADER 65536
#define CACHE_DEFAULT_MAX_BYTES ((uint64_t)1 << 30)
#define CACHE_STALE_TMP_SECONDS 600

struct g4v_cache {
    char dir[3072]; /* at most 3000 bytes used (g4v_cache_open) */
    uint64_t max_bytes;
    g4v_cache_stats stats; /* updated with __atomic builtins: contexts in many threads share it */
    pthread_mutex_t scan_lock; /* one scan at a time in this process */
    unsigned tmp_counter;
};

static void bump(uint64_t *counter) { __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED); }

static void cache_options_defaults(g4v_cache_options *o) {
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->max_bytes = CACHE_DEFAULT_MAX_BYTES;
}

void g4v_cache_options_init_sized(g4v_cache_options *o, size_t size) {
    g4v_cache_options d;
    cache_options_defaults(&d);
    g4v_api_init_struct(o, size, &d, sizeof d);
}

/* mkdir -p */
static int make_dirs(const char *dir, g4v_err *err) {
    char p[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof p) return g4v_fail(err, G4V_ERR_IO, "cache directory: bad path length %zu", n);
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0777) && errno != EEXIST)
            return g4v_fail(err, G4V_ERR_IO, "cache directory %s: cannot create %s: %s", dir, p,
                            strerror(errno));
        p[i] = c;
    }
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode))
        return g4v_fail(err, G4V_ERR_IO, "cache directory %s: not a directory", dir);
    if (access(dir, W_OK | X_OK))
        return g4v_fail(err, G4V_ERR_IO, "cache directory %s: not writable: %s", dir, strerror(errno));
    return G4V_OK;
}

g4v_status g4v_cache_open(const char *dir, const g4v_cache_options *in, g4v_cache **out,
                          char *errbuf, size_t errbuf_size) {
    g4v_err err;
    g4v_err_clear(&err);
    g4v_api_copy_msg(errbuf, errbuf_size, "");
    if (out) *out = NULL;
    int st;
    if (!dir || !out) {
        st = g4v_fail(&err, G4V_ERR_ARG, "g4v_cache_open: dir and out must not be NULL");
        goto fail;
    }
    if (strlen(dir) > 3000) { /* room for "/xx/<64 hex>.safetensors" and temporary names */
        st = g4v_fail(&err, G4V_ERR_IO, "cache directory path is %zu bytes, above 3000", strlen(dir));
        goto fail;
    }
    g4v_cache_options o;
    cache_options_defaults(&o);
    if ((st = g4v_api_read_opts(&o, sizeof o, in, "g4v_cache_options", &err))) goto fail;
    if ((st = make_dirs(dir, &err))) goto fail;
    g4v_cache *c = g4v_calloc(1, sizeof *c);
    if (!c) {
        st = g4v_fail(&err, G4V_ERR_NOMEM, "out of memory allocating the cache");
        goto fail;
    }
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    c->max_bytes = o.max_bytes ? o.max_bytes : CACHE_DEFAULT_MAX_BYTES;
    pthread_mutex_init(&c->scan_lock, NULL);
    *out = c;
    return G4V_OK;
fail:
    g4v_api_copy_msg(errbuf, errbuf_size, err.msg);
    return st;
}

void g4v_cache_close(g4v_cache *c) {
    if (!c) return;
    pthread_mutex_destroy(&c->scan_lock);
    g4v_free(c);
}

g4v_status g4v_cache_get_stats_sized(const g4v_cache *c, g4v_cache_stats *out, size_t out_size,
                                     char *errbuf, size_t errbuf_size) {
    g4v_api_copy_msg(errbuf, errbuf_size, "");
    if (!c || !out || out_size == 0) {
        g4v_api_copy_msg(errbuf, errbuf_size,
                         "g4v_cache_get_stats: cache and stats must not be NULL, stats_size not 0");
        return G4V_ERR_ARG;
    }
    g4v_cache_stats s;
    uint64_t *dst = (uint64_t *)&s;
    const uint64_t *src = (const uint64_t *)&c->stats;
    for (size_t i = 0; i < sizeof s / sizeof(uint64_t); i++)
        dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
    g4v_api_write_out(out, out_size, &s, sizeof s);
    return G4V_OK;
}

g4v_status g4v_ctx_set_cache(g4v_ctx *ctx, g4v_cache *cache) {
    if (!ctx) return G4V_ERR_ARG;
    ctx->cache = cache;
    ctx->cache_hit = 0;
    return G4V_OK;
}

int g4v_ctx_cache_hit(const g4v_ctx *ctx) { return ctx ? ctx->cache_hit : 0; }

int g4v_cache_key(const g4v_ctx *ctx, const char *kind, const uint8_t *image_digest, int budget,
                  int exif, int resize, char key[G4V_SHA256_HEX]) {
    char fp[G4V_FINGERPRINT_HEX];
    int st = g4v_model_fingerprint(ctx->model, fp, sizeof fp, NULL, 0);
    if (st) return st;
    g4v_sha256_ctx s;
    g4v_sha256_init(&s);
    g4v_sha256_str(&s, CACHE_KEY_TAG);
    g4v_sha256_str(&s, kind);
    g4v_sha256_update(&s, image_digest, G4V_SHA256_BYTES);
    g4v_sha256_u64(&s, (uint64_t)budget);
    g4v_sha256_u64(&s, (uint64_t)exif);
    /* The resize rule: Pillow 13's pass order replaced Pillow 9's as the default (an entry made
     * with the old order may hold other pixels), so it is named too and such entries miss. */
    g4v_sha256_str(&s, resize == G4V_RESIZE_TORCHVISION ? "resize=torchvision" : "resize=pillow13");
    g4v_sha256_str(&s, g4v_math_mode_name(ctx->model->opts.math));
    g4v_sha256_str(&s, fp);
    g4v_sha256_str(&s, ctx->model->kernel_path);
    uint8_t d[G4V_SHA256_BYTES];
    g4v_sha256_final(&s, d);
    g4v_sha256_hex(d, key);
    return G4V_OK;
}

static void entry_path(const g4v_cache *c, const char *key, char *out, size_t cap) {
    snprintf(out, cap, "%s/%.2s/%s.safetensors", c->dir, key, key);
}

/* The checksum covers the data and every size the entry reports. */
static void entry_checksum(const char *key, const int v[9], const float *data, size_t n,
                           char hex[G4V_SHA256_HEX]) {
    g4v_sha256_ctx s;
    g4v_sha256_init(&s);
    g4v_sha256_str(&s, CACHE_FORMAT);
    g4v_sha256_str(&s, key);
    for (int i = 0; i < 9; i++) g4v_sha256_u64(&s, (uint64_t)(int64_t)v[i]);
    g4v_sha256_update(&s, data, n * sizeof(float));
    uint8_t d[G4V_SHA256_BYTES];
    g4v_sha256_final(&s, d);
    g4v_sha256_hex(d, hex);
}

/* The nine sizes of a result in a fixed order (checksummed and stored). */
static void sizes_of(const g4v_result *r, int v[9]) {
    int x[9] = {r->n_tokens, r->dim,    r->grid_w, r->grid_h, r->src_width,
                r->src_height, r->width, r->height, r->budget};
    memcpy(v, x, sizeof x);
}

static int meta_int(const cJSON *meta, const char *name, int *v) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(meta, name);
    if (!cJSON_IsString(it)) return -1;
    char *end;
    errno = 0;
    long x = strtol(it->valuestring, &end, 10);
    if (errno || *end || end == it->valuestring || x < 0 || x > 1000000000) return -1;
    *v = (int)x;
    return 0;
}

static int meta_pair(const cJSON *meta, const char *name, int *a, int *b) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(meta, name);
    char tail;
    if (!cJSON_IsString(it) || sscanf(it->valuestring, "%d x%d%c", a, b, &tail) != 2 || *a < 0 ||
        *b < 0)
        return -1;
    return 0;
}

/* Reads and checks the entry at path into ctx's feature buffer (out filled; no bf16 copy: the
 * caller makes it), or, with dst, its dst_count floats into dst (an entry of another size is a
 * miss). 1: a valid entry; 0: no entry (or one this model must not serve: over its image limits;
 * or out of memory); -1: an entry that fails a check (corrupt). */
static int read_entry(g4v_ctx *ctx, const char *path, const char *key, int budget, float *dst,
                      size_t dst_count, g4v_result *out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    int result = -1;
    char *hdr = NULL;
    cJSON *root = NULL;
    struct stat st;
    uint8_t len8[8];
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < 8 ||
        pread(fd, len8, 8, 0) != 8)
        goto done;
    uint64_t hn = 0;
    for (int i = 0; i < 8; i++) hn |= (uint64_t)len8[i] << (8 * i);
    if (hn == 0 || hn > CACHE_MAX_HEADER || 8 + hn > (uint64_t)st.st_size) goto done;
    if (!(hdr = g4v_malloc(hn + 1))) {
        result = 0; /* out of memory: a plain miss, not a damaged entry */
        goto done;
    }
    if (pread(fd, hdr, hn, 8) != (ssize_t)hn) goto done;
    hdr[hn] = '\0';
    root = g4v_json_parse_text(hdr, hn, NULL); /* under the lock: cJSON's error state is global */
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    const cJSON *feat = cJSON_GetObjectItemCaseSensitive(root, "features");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(meta, "format");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(meta, "key");
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(meta, "checksum");
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(feat, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(feat, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(feat, "data_offsets");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, CACHE_FORMAT) || !cJSON_IsString(k) ||
        strcmp(k->valuestring, key) || !cJSON_IsString(sum) || !cJSON_IsString(dt) ||
        strcmp(dt->valuestring, "F32") || cJSON_GetArraySize(shape) != 2 ||
        cJSON_GetArraySize(offs) != 2)
        goto done;
    int v[9];
    if (meta_int(meta, "tokens", &v[0]) || meta_int(meta, "dim", &v[1]) ||
        meta_pair(meta, "grid", &v[2], &v[3]) || meta_pair(meta, "original_size", &v[4], &v[5]) ||
        meta_pair(meta, "target_size", &v[6], &v[7]) || meta_int(meta, "budget", &v[8]))
        goto done;
    const g4v_vision_config *cfg = &ctx->model->ck->cfg;
    size_t n = (size_t)v[0] * (size_t)v[1];
    if (v[1] != cfg->text_hidden_size || v[8] != budget || v[0] != v[2] * v[3] || v[0] <= 0 ||
        cJSON_GetArrayItem(shape, 0)->valuedouble != v[0] ||
        cJSON_GetArrayItem(shape, 1)->valuedouble != v[1] ||
        cJSON_GetArrayItem(offs, 0)->valuedouble != 0 ||
        cJSON_GetArrayItem(offs, 1)->valuedouble != (double)(n * sizeof(float)) ||
        8 + hn + n * sizeof(float) != (uint64_t)st.st_size)
        goto done;
    /* An image this model's limits refuse is refused again, even if a process with larger
     * limits stored it: a hit must answer what a fresh encode would. */
    const g4v_image_opts *io = &ctx->model->image_opts;
    if ((uint64_t)v[4] * (uint64_t)v[5] > io->max_pixels || v[4] > io->max_dimension ||
        v[5] > io->max_dimension) {
        result = 0;
        goto done;
    }
    if (dst && n != dst_count) {
        result = 0;
        goto done;
    }
    g4v_err ignored;
    if (!dst && g4v_ctx_grow_buffer((void **)&ctx->features, &ctx->feat_cap, n, sizeof(float), 0,
                                &ignored)) {
        result = 0;
        goto done;
    }
    float *rows = dst ? dst : ctx->features;
    if (g4v_pread_full(fd, rows, n * sizeof(float), 8 + hn, path, &ignored)) goto done;
    char want[G4V_SHA256_HEX];
    entry_checksum(key, v, rows, n, want);
    if (strcmp(want, sum->valuestring)) goto done;
    out->n_tokens = v[0];
    out->dim = v[1];
    out->grid_w = v[2];
    out->grid_h = v[3];
    out->src_width = v[4];
    out->src_height = v[5];
    out->width = v[6];
    out->height = v[7];
    out->budget = v[8];
    out->features = rows;
    out->features_bf16 = NULL;
    out->boi_token_id = cfg->boi_token_id;
    out->image_token_id = cfg->image_token_id;
    out->eoi_token_id = cfg->eoi_token_id;
    futimens(fd, NULL); /* a hit makes the entry the most recently used */
    result = 1;
done:
    cJSON_Delete(root);
    g4v_free(hdr);
    close(fd);
    return result;
}

static int lookup(g4v_ctx *ctx, const char *key, int budget, float *dst, size_t count,
                  g4v_result *out) {
    g4v_cache *c = ctx->cache;
    char path[4200];
    entry_path(c, key, path, sizeof path);
    int r = read_entry(ctx, path, key, budget, dst, count, out);
    if (r == 1) {
        bump(&c->stats.hits);
        return 1;
    }
    if (r < 0) bump(&c->stats.corrupt);
    bump(&c->stats.misses);
    return 0;
}

int g4v_cache_lookup(g4v_ctx *ctx, const char *key, int budget, g4v_result *out) {
    return lookup(ctx, key, budget, NULL, 0, out);
}

int g4v_cache_lookup_rows(g4v_ctx *ctx, const char *key, int budget, float *dst, size_t count) {
    g4v_result r;
    memset(&r, 0, sizeof r);
    return lookup(ctx, key, budget, dst, count, &r);
}

typedef struct entry_stat {
    struct timespec mtime;
    uint64_t size;
    char path[3700];
} entry_stat;

static int older(const void *a, const void *b) {
    const entry_stat *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->path, y->path);
}

static int is_hex2(const char *s) {
    return strlen(s) == 2 && strchr("0123456789abcdef", s[0]) && strchr("0123456789abcdef", s[1]);
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Lists the entries (and removes stale temporary files); 0 or -1 (out of memory). */
static int scan(g4v_cache *c, entry_stat **out, size_t *count, uint64_t *total) {
    *out = NULL;
    *count = 0;
    *total = 0;
    size_t cap = 0;
    DIR *top = opendir(c->dir);
    if (!top) return -1;
    struct dirent *d;
    time_t now = time(NULL);
    int rc = 0;
    while (rc == 0 && (d = readdir(top))) {
        char sub[3400];
        snprintf(sub, sizeof sub, "%s/%s", c->dir, d->d_name);
        if (!strncmp(d->d_name, "tmp-", 4) && ends_with(d->d_name, ".part")) {
            struct stat st;
            if (!lstat(sub, &st) && now - st.st_mtime > CACHE_STALE_TMP_SECONDS) unlink(sub);
            continue;
        }
        if (!is_hex2(d->d_name)) continue;
        DIR *dd = opendir(sub);
        if (!dd) continue;
        struct dirent *e;
        while ((e = readdir(dd))) {
            if (strlen(e->d_name) != 64 + 12 || !ends_with(e->d_name, ".safetensors")) continue;
            if (*count == cap) {
                size_t ncap = cap ? 2 * cap : 64;
                entry_stat *p = g4v_realloc(*out, ncap * sizeof *p);
                if (!p) {
                    rc = -1;
                    break;
                }
                *out = p;
                cap = ncap;
            }
            entry_stat *es = &(*out)[*count];
            snprintf(es->path, sizeof es->path, "%s/%s", sub, e->d_name);
            struct stat st;
            if (lstat(es->path, &st) || !S_ISREG(st.st_mode)) continue;
            es->mtime = st.st_mtim;
            es->size = (uint64_t)st.st_size;
            *total += es->size;
            (*count)++;
        }
        closedir(dd);
    }
    closedir(top);
    return rc;
}

/* Removes least recently used entries until the total is at most max_bytes, sparing keep. */
static void evict(g4v_cache *c, const char *keep) {
    pthread_mutex_lock(&c->scan_lock);
    entry_stat *v;
    size_t n;
    uint64_t total;
    if (scan(c, &v, &n, &total)) {
        bump(&c->stats.errors);
    } else if (total > c->max_bytes) {
        qsort(v, n, sizeof *v, older);
        for (size_t i = 0; i < n && total > c->max_bytes; i++) {
            if (!strcmp(v[i].path, keep)) continue;
            if (unlink(v[i].path) == 0) bump(&c->stats.evictions);
            total -= v[i].size; /* gone, whether we or another process removed it */
        }
    }
    g4v_free(v);
    pthread_mutex_unlock(&c->scan_lock);
}

static int write_all(int fd, const void *p, size_t n) {
    const char *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

void g4v_cache_store(g4v_ctx *ctx, const char *key, const g4v_result *r) {
    g4v_cache *c = ctx->cache;
    char fp[G4V_FINGERPRINT_HEX];
    if (g4v_model_fingerprint(ctx->model, fp, sizeof fp, NULL, 0)) {
        bump(&c->stats.errors);
        return;
    }
    int v[9];
    sizes_of(r, v);
    size_t n = (size_t)r->n_tokens * (size_t)r->dim;
    char sum[G4V_SHA256_HEX];
    entry_checksum(key, v, r->features, n, sum);
    char hdr[2048];
    int hn = snprintf(hdr, sizeof hdr,
                      "{\"__metadata__\":{\"format\":\"%s\",\"key\":\"%s\",\"fingerprint\":\"%s\","
                      "\"tokens\":\"%d\",\"dim\":\"%d\",\"grid\":\"%dx%d\",\"original_size\":"
                      "\"%dx%d\",\"target_size\":\"%dx%d\",\"budget\":\"%d\",\"checksum\":\"%s\"},"
                      "\"features\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[0,%zu]}}",
                      CACHE_FORMAT, key, fp, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8],
                      sum, v[0], v[1], n * sizeof(float));
    if (hn < 0 || (size_t)hn + 8 >= sizeof hdr) {
        bump(&c->stats.errors);
        return;
    }
    while (hn % 8) hdr[hn++] = ' ';
    uint64_t size = 8 + (uint64_t)hn + n * sizeof(float);
    if (size > c->max_bytes) return; /* could never stay: not stored */
    char tmp[4200], final[4200], sub[4200];
    unsigned seq = __atomic_fetch_add(&c->tmp_counter, 1, __ATOMIC_RELAXED);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(tmp, sizeof tmp, "%s/tmp-%ld-%u-%ld.part", c->dir, (long)getpid(), seq, (long)ts.tv_nsec);
    snprintf(sub, sizeof sub, "%s/%.2s", c->dir, key);
    entry_path(c, key, final, sizeof final);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        bump(&c->stats.errors);
        return;
    }
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)hn >> (8 * i));
    int bad = write_all(fd, len8, 8) || write_all(fd, hdr, (size_t)hn) ||
              write_all(fd, r->features, n * sizeof(float));
    bad |= close(fd) != 0;
    if (!bad && mkdir(sub, 0777) && errno != EEXIST) bad = 1;
    if (bad || rename(tmp, final)) {
        unlink(tmp);
        bump(&c->stats.errors);
        return;
    }
    bump(&c->stats.stores);
    evict(c, final);
}
