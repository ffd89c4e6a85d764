/* hub_vision.c - the vision-only pull (hub_pull_vision, hub_internal.h): of a safetensors
 * checkpoint on the Hub, the config files whole, each top-level weight file's header (bytes
 * 0-7, then the JSON), and only the byte ranges of the vision tensors (runs of tensors less than
 * 1 MiB apart fetched as one Range request), written as the same shard names with headers cut
 * to those tensors (and a cut model.safetensors.index.json) into a temporary folder of g4v's hub
 * cache, renamed to models--ORG--NAME/vision/COMMIT when complete (a concurrent pull that loses
 * the rename uses the winner's). Every header is checked against the listed file size (length,
 * data_offsets, dtype x shape) before a byte of data is asked for; g4v-source.json records the
 * repo, commit and each file's ETag. Which tensors are vision: hub_is_vision_tensor, a superset
 * of what the loader looks for (src/io/names.c), so the cut checkpoint loads like the whole. */
#define _GNU_SOURCE
#include "hub_internal.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend.h"

#define RUN_GAP (1u << 20) /* tensors closer than this are fetched in one request */

int hub_is_vision_tensor(const char *name) {
    if (!strncmp(name, "model.", 6)) name += 6;
    return !strncmp(name, "vision_tower.", 13) || !strncmp(name, "vision_embedder.", 16) ||
           !strncmp(name, "embed_vision.", 13);
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcasecmp(s + a - b, suf);
}

typedef struct tensor {
    const char *name;
    const cJSON *item;   /* its entry in the source header */
    uint64_t begin, end; /* in the source's data section */
    uint64_t dst;        /* in the cut file's data section */
} tensor;

static int dtype_bytes(const char *d) {
    static const struct {
        const char *name;
        int bytes;
    } t[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},
             {"I16", 2}, {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"U16", 2}, {"U32", 4},
             {"U64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(d, t[i].name)) return t[i].bytes;
    return 0;
}

static int cmp_begin(const void *a, const void *b) {
    const tensor *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

typedef struct mem_sink {
    uint8_t *buf;
    uint64_t base, n;
} mem_sink;

static int mem_write(void *user, uint64_t off, const void *p, size_t n) {
    mem_sink *s = user;
    if (off < s->base || off - s->base + n > s->n) return -1;
    memcpy(s->buf + (off - s->base), p, n);
    return 0;
}

/* A run's bytes (source offsets) to the tensors' places in the cut file. */
typedef struct run_sink {
    int fd, err;
    const tensor *t;
    int n;
    uint64_t src0, dst0; /* source data section start in the file; cut file's data start */
} run_sink;

static int run_write(void *user, uint64_t off, const void *p, size_t n) {
    run_sink *s = user;
    uint64_t a = off - s->src0, b = a + n;
    for (int i = 0; i < s->n; i++) {
        const tensor *t = &s->t[i];
        uint64_t lo = a > t->begin ? a : t->begin, hi = b < t->end ? b : t->end;
        if (lo >= hi) continue;
        const char *c = (const char *)p + (lo - a);
        uint64_t dst = s->dst0 + t->dst + (lo - t->begin);
        size_t k = (size_t)(hi - lo);
        while (k) {
            ssize_t w = pwrite(s->fd, c, k, (off_t)dst);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                s->err = w < 0 ? errno : ENOSPC;
                return -1;
            }
            c += w, k -= (size_t)w, dst += (uint64_t)w;
        }
    }
    return 0;
}

typedef struct shard {
    const hub_file *f;
    char url[8192];
    char etag[160];
    uint64_t hlen;
    cJSON *header;
    tensor *t;
    int nt;
    uint64_t bytes; /* of the vision tensors */
} shard;

/* The header of one weight file, checked against its listed size; its vision tensors. */
static int read_header(hub_conn *h, shard *s, char *err, size_t ecap) {
    const hub_file *f = s->f;
    uint8_t len8[8];
    mem_sink ms = {len8, 0, 8};
    hub_sink sink = {mem_write, &ms};
    hub_meta m;
    if (f->size < 8) {
        snprintf(err, ecap, "%s: %llu bytes, too short for a safetensors file; refused", f->path,
                 (unsigned long long)f->size);
        return HUB_ERR_INTEGRITY;
    }
    int rc = hub_fetch(h, s->url, 0, 8, f->size, "", &sink, &m, err, ecap);
    if (rc) return rc;
    snprintf(s->etag, sizeof s->etag, "%s", m.linked_etag[0] ? m.linked_etag : m.etag);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | len8[i];
    if (hlen > HUB_MAX_HEADER || hlen > f->size - 8) {
        snprintf(err, ecap, "%s: its header is %llu bytes, beyond the file's %llu or the limit "
                 "of %u (docs/LIMITS.md); refused", f->path, (unsigned long long)hlen,
                 (unsigned long long)f->size, HUB_MAX_HEADER);
        return HUB_ERR_INTEGRITY;
    }
    s->hlen = hlen;
    char *text = malloc(hlen + 1);
    if (!text) return snprintf(err, ecap, "out of memory"), HUB_ERR_NOMEM;
    mem_sink hs = {(uint8_t *)text, 8, hlen};
    hub_sink hsink = {mem_write, &hs};
    if (hlen) rc = hub_fetch(h, s->url, 8, 8 + hlen, f->size, "", &hsink, &m, err, ecap);
    if (!rc && s->etag[0] && m.linked_etag[0] && strcmp(m.linked_etag, s->etag)) {
        snprintf(err, ecap, "%s: the file changed between two requests (ETag %s, was %s)",
                 f->path, m.linked_etag, s->etag);
        rc = HUB_ERR_INTEGRITY;
    }
    text[hlen] = 0;
    if (!rc) {
        s->header = fe_json_parse_text(text, hlen, NULL);
        if (!cJSON_IsObject(s->header)) {
            snprintf(err, ecap, "%s: its header is not a JSON object; refused", f->path);
            rc = HUB_ERR_INTEGRITY;
        }
    }
    free(text);
    if (rc) return rc;
    const uint64_t data = f->size - 8 - hlen;
    int cap = cJSON_GetArraySize(s->header);
    s->t = calloc((size_t)cap + 1, sizeof *s->t);
    if (!s->t) return snprintf(err, ecap, "out of memory"), HUB_ERR_NOMEM;
    const cJSON *it;
    cJSON_ArrayForEach(it, s->header) {
        if (!strcmp(it->string, "__metadata__")) continue;
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(it, "dtype");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(it, "shape");
        const cJSON *off = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
        const cJSON *a = cJSON_GetArrayItem(off, 0), *b = cJSON_GetArrayItem(off, 1);
        if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || cJSON_GetArraySize(off) != 2 ||
            !cJSON_IsNumber(a) || !cJSON_IsNumber(b) || a->valuedouble < 0 ||
            b->valuedouble < a->valuedouble || b->valuedouble > (double)data) {
            snprintf(err, ecap, "%s: tensor %s: data_offsets outside the file's %llu data "
                     "bytes (or no dtype/shape); refused", f->path, it->string,
                     (unsigned long long)data);
            return HUB_ERR_INTEGRITY;
        }
        double numel = 1;
        const cJSON *d;
        cJSON_ArrayForEach(d, sh) {
            if (!cJSON_IsNumber(d) || d->valuedouble < 0) numel = -1;
            else numel *= d->valuedouble;
        }
        int eb = dtype_bytes(dt->valuestring);
        if (numel < 0 || (eb && numel * eb != b->valuedouble - a->valuedouble)) {
            snprintf(err, ecap, "%s: tensor %s: shape and dtype disagree with its %.0f bytes; "
                     "refused", f->path, it->string, b->valuedouble - a->valuedouble);
            return HUB_ERR_INTEGRITY;
        }
        if (!hub_is_vision_tensor(it->string)) continue;
        tensor *t = &s->t[s->nt++];
        t->name = it->string;
        t->item = it;
        t->begin = (uint64_t)a->valuedouble;
        t->end = (uint64_t)b->valuedouble;
    }
    qsort(s->t, (size_t)s->nt, sizeof *s->t, cmp_begin);
    for (int i = 0; i < s->nt; i++) {
        if (i && s->t[i].begin < s->t[i - 1].end) {
            snprintf(err, ecap, "%s: tensors %s and %s overlap; refused", f->path,
                     s->t[i - 1].name, s->t[i].name);
            return HUB_ERR_INTEGRITY;
        }
        s->t[i].dst = s->bytes;
        s->bytes += s->t[i].end - s->t[i].begin;
    }
    return HUB_OK;
}

/* The cut header: __metadata__ as it was, the vision tensors at their new offsets, padded with
 * spaces to a multiple of 8 as safetensors writes it. */
static char *cut_header(const shard *s, uint64_t *len) {
    cJSON *o = cJSON_CreateObject();
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(s->header, "__metadata__");
    if (!o || (meta && !cJSON_AddItemToObject(o, "__metadata__", cJSON_Duplicate(meta, 1)))) {
        cJSON_Delete(o);
        return NULL;
    }
    for (int i = 0; i < s->nt; i++) {
        const tensor *t = &s->t[i];
        cJSON *e = cJSON_CreateObject(), *off = cJSON_CreateArray();
        cJSON_AddItemToObject(o, t->name, e);
        cJSON_AddItemToObject(e, "dtype",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t->item, "dtype"), 1));
        cJSON_AddItemToObject(e, "shape",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t->item, "shape"), 1));
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)t->dst));
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)(t->dst + t->end - t->begin)));
        cJSON_AddItemToObject(e, "data_offsets", off);
    }
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) return NULL;
    size_t n = strlen(text), p = (n + 7) / 8 * 8;
    char *out = realloc(text, p + 1);
    if (!out) return free(text), NULL;
    memset(out + n, ' ', p - n);
    out[p] = 0;
    *len = p;
    return out;
}

/* One cut shard written into dir. */
static int write_shard(hub_conn *h, const char *dir, shard *s, char *err, size_t ecap) {
    char path[HUB_PATH_MAX];
    if (hub_fmt(path, sizeof path, "%s/%s", dir, s->f->path))
        return snprintf(err, ecap, "path too long"), HUB_ERR_USAGE;
    uint64_t hl;
    char *hdr = cut_header(s, &hl);
    if (!hdr) return snprintf(err, ecap, "out of memory"), HUB_ERR_NOMEM;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return free(hdr), hub_disk_error(path, "cannot create", err, ecap);
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)(hl >> (8 * i));
    run_sink rs = {fd, 0, NULL, 0, 8 + s->hlen, 8 + hl};
    int rc = HUB_OK;
    if (pwrite(fd, len8, 8, 0) != 8 || pwrite(fd, hdr, hl, 8) != (ssize_t)hl ||
        ftruncate(fd, (off_t)(8 + hl + s->bytes))) {
        rc = hub_disk_error(path, "cannot write", err, ecap);
    }
    free(hdr);
    h->p.file = s->f->path;
    h->p.file_total = s->bytes;
    h->p.file_done = 0;
    h->p.event = 1;
    hub_report(h, 1);
    h->p.event = 0;
    hub_sink sink = {run_write, &rs};
    for (int i = 0; !rc && i < s->nt;) {
        int j = i + 1;
        while (j < s->nt && s->t[j].begin - s->t[j - 1].end < RUN_GAP) j++;
        rs.t = &s->t[i];
        rs.n = j - i;
        hub_meta m;
        rc = hub_fetch(h, s->url, 8 + s->hlen + s->t[i].begin, 8 + s->hlen + s->t[j - 1].end,
                       s->f->size, "", &sink, &m, err, ecap);
        if (rc == HUB_ERR_DISK && rs.err) {
            errno = rs.err;
            rc = hub_disk_error(path, "cannot write", err, ecap);
        }
        if (!rc && s->etag[0] && m.linked_etag[0] && strcmp(m.linked_etag, s->etag)) {
            snprintf(err, ecap, "%s: the file changed between two requests (ETag %s, was %s)",
                     s->f->path, m.linked_etag, s->etag);
            rc = HUB_ERR_INTEGRITY;
        }
        i = j;
    }
    if (!rc && fsync(fd)) rc = hub_disk_error(path, "cannot write", err, ecap);
    close(fd);
    h->p.event = 2;
    if (!rc) hub_report(h, 1);
    h->p.event = 0;
    return rc;
}

typedef struct fd_sink {
    int fd, err;
} fd_sink;

static int fd_write(void *user, uint64_t off, const void *p, size_t n) {
    fd_sink *s = user;
    ssize_t w = pwrite(s->fd, p, n, (off_t)off);
    if (w != (ssize_t)n) {
        s->err = w < 0 ? errno : ENOSPC;
        return -1;
    }
    return 0;
}

/* A config file whole into dir (size checked; sha256 for an LFS one). */
static int fetch_small(hub_conn *h, const char *repo, const char *commit, const char *dir,
                       const hub_file *f, char *err, size_t ecap) {
    char path[HUB_PATH_MAX], url[8192];
    if (hub_fmt(path, sizeof path, "%s/%s", dir, f->path) ||
        hub_file_url(h, repo, commit, f->path, url, sizeof url))
        return snprintf(err, ecap, "path too long"), HUB_ERR_USAGE;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return hub_disk_error(path, "cannot create", err, ecap);
    h->p.file = f->path;
    h->p.file_total = f->size;
    h->p.file_done = 0;
    fd_sink fs = {fd, 0};
    hub_sink sink = {fd_write, &fs};
    hub_meta m;
    int rc = f->size ? hub_fetch(h, url, 0, f->size, f->size, "", &sink, &m, err, ecap) : 0;
    if (rc == HUB_ERR_DISK && fs.err) {
        errno = fs.err;
        rc = hub_disk_error(path, "cannot write", err, ecap);
    }
    if (!rc && f->lfs) {
        fe_sha256_ctx c;
        fe_sha256_init(&c);
        char buf[65536], hex[65];
        ssize_t r;
        off_t o = 0;
        while ((r = pread(fd, buf, sizeof buf, o)) > 0) fe_sha256_update(&c, buf, (size_t)r), o += r;
        uint8_t d[FE_SHA256_BYTES];
        fe_sha256_final(&c, d);
        for (int i = 0; i < FE_SHA256_BYTES; i++) sprintf(hex + 2 * i, "%02x", d[i]);
        if (strcmp(hex, f->etag)) {
            snprintf(err, ecap, "%s: its sha256 is %s, the Hub lists %s; refused", f->path, hex,
                     f->etag);
            rc = HUB_ERR_INTEGRITY;
        }
    }
    close(fd);
    return rc;
}

/* tmp.PID.* folders of pulls whose process is gone. */
static void sweep(const char *rdir) {
    DIR *d = opendir(rdir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid;
        char p[HUB_PATH_MAX];
        if (sscanf(e->d_name, "tmp.%ld.", &pid) == 1 && pid > 0 && kill((pid_t)pid, 0) &&
            errno == ESRCH && !hub_fmt(p, sizeof p, "%s/%s", rdir, e->d_name))
            hub_rmtree(p);
    }
    closedir(d);
}

static int write_json(const char *path, cJSON *o) {
    char *t = cJSON_Print(o);
    int rc = !t || hub_write_atomic(path, t, strlen(t));
    free(t);
    return rc ? -1 : 0;
}

int hub_pull_vision(hub_conn *h, const char *repo, const char *revision, const char *commit,
                    const hub_file *files, int n, hub_result *r, char *err, size_t ecap) {
    char cache[HUB_PATH_MAX], rdir[HUB_PATH_MAX], fin[HUB_PATH_MAX], tmp[HUB_PATH_MAX];
    char org[128];
    snprintf(org, sizeof org, "%s", repo);
    *strchr(org, '/') = 0;
    if (hub_g4v_cache(cache, sizeof cache) ||
        hub_fmt(rdir, sizeof rdir, "%s/models--%s--%s", cache, org, strchr(repo, '/') + 1) ||
        hub_fmt(fin, sizeof fin, "%s/vision/%s", rdir, commit) ||
        hub_fmt(tmp, sizeof tmp, "%s/tmp.%ld.%08x", rdir, (long)getpid(),
                (unsigned)(fe_now_s() * 1e6)))
        return snprintf(err, ecap, "no g4v cache folder (set G4V_HUB_CACHE or HOME)"),
               HUB_ERR_USAGE;
    r->vision_only = 1;
    for (int i = 0; i < n; i++) r->whole += files[i].size;
    struct stat st;
    char ref[HUB_PATH_MAX];
    if (stat(fin, &st) == 0 && S_ISDIR(st.st_mode)) { /* pulled before */
        snprintf(r->path, sizeof r->path, "%s", fin);
        r->files_reused = 1;
    } else {
        if (hub_mkdirs(rdir) || mkdir(tmp, 0755))
            return hub_disk_error(tmp, "cannot create", err, ecap);
        sweep(rdir);
        int rc = HUB_OK, ns = 0, have_index = 0;
        shard *sh = calloc((size_t)n + 1, sizeof *sh);
        if (!sh) rc = (snprintf(err, ecap, "out of memory"), HUB_ERR_NOMEM);
        cJSON *src = cJSON_CreateObject(), *sfiles = cJSON_CreateObject();
        for (int i = 0; !rc && i < n; i++) {
            const hub_file *f = &files[i];
            if (strchr(f->path, '/')) continue;
            if (!strcmp(f->path, "model.safetensors.index.json")) {
                have_index = 1;
            } else if (ends_with(f->path, ".json") || ends_with(f->path, ".jinja")) {
                h->p.total += f->size;
                rc = fetch_small(h, repo, commit, tmp, f, err, ecap);
                r->wanted += f->size;
                r->files++;
            } else if (ends_with(f->path, ".safetensors")) {
                sh[ns].f = f;
                if (hub_file_url(h, repo, commit, f->path, sh[ns].url, sizeof sh[ns].url))
                    rc = (snprintf(err, ecap, "path too long"), HUB_ERR_USAGE);
                else if (!(rc = read_header(h, &sh[ns], err, ecap)))
                    h->p.total += sh[ns].bytes;
                ns++;
            }
        }
        uint64_t vision = 0;
        for (int i = 0; !rc && i < ns; i++) vision += sh[i].bytes;
        int nt = 0;
        for (int i = 0; i < ns; i++) nt += sh[i].nt;
        if (!rc && !nt) {
            snprintf(err, ecap, "%s: no vision tensors in its safetensors files (a text-only "
                     "model?); pull it whole with --whole", repo);
            rc = HUB_ERR_NOT_FOUND;
        }
        cJSON *wm = cJSON_CreateObject();
        for (int i = 0; !rc && i < ns; i++) {
            if (!sh[i].nt) continue;
            rc = write_shard(h, tmp, &sh[i], err, ecap);
            r->files++;
            r->wanted += 8 + sh[i].bytes; /* (the cut header's own bytes aside) */
            for (int k = 0; k < sh[i].nt; k++)
                cJSON_AddStringToObject(wm, sh[i].t[k].name, sh[i].f->path);
            cJSON *e = cJSON_AddObjectToObject(sfiles, sh[i].f->path);
            cJSON_AddStringToObject(e, "etag", sh[i].etag);
            cJSON_AddNumberToObject(e, "size", (double)sh[i].f->size);
            cJSON_AddNumberToObject(e, "header_bytes", (double)sh[i].hlen);
            cJSON_AddNumberToObject(e, "vision_tensors", sh[i].nt);
            cJSON_AddNumberToObject(e, "vision_bytes", (double)sh[i].bytes);
        }
        char p[HUB_PATH_MAX];
        if (!rc && have_index) {
            cJSON *ix = cJSON_CreateObject();
            cJSON *md = cJSON_AddObjectToObject(ix, "metadata");
            cJSON_AddNumberToObject(md, "total_size", (double)vision);
            cJSON_AddItemToObject(ix, "weight_map", wm);
            wm = NULL;
            if (hub_fmt(p, sizeof p, "%s/model.safetensors.index.json", tmp) ||
                write_json(p, ix))
                rc = hub_disk_error(p, "cannot write", err, ecap);
            cJSON_Delete(ix);
        }
        cJSON_Delete(wm);
        if (!rc) {
            cJSON_AddStringToObject(src, "repo", repo);
            cJSON_AddStringToObject(src, "revision", revision);
            cJSON_AddStringToObject(src, "commit", commit);
            cJSON_AddStringToObject(src, "endpoint", h->endpoint);
            cJSON_AddStringToObject(src, "kind", "vision-only (g4v pull)");
            cJSON_AddItemToObject(src, "files", sfiles);
            sfiles = NULL;
            if (hub_fmt(p, sizeof p, "%s/g4v-source.json", tmp) || write_json(p, src))
                rc = hub_disk_error(p, "cannot write", err, ecap);
        }
        cJSON_Delete(sfiles);
        cJSON_Delete(src);
        for (int i = 0; i < ns; i++) {
            cJSON_Delete(sh[i].header);
            free(sh[i].t);
        }
        free(sh);
        r->fetched = h->p.done;
        char vdir[HUB_PATH_MAX];
        if (!rc && (hub_fmt(vdir, sizeof vdir, "%s/vision", rdir) || hub_mkdirs(vdir)))
            rc = hub_disk_error(vdir, "cannot create", err, ecap);
        if (!rc && rename(tmp, fin)) {
            if (errno == EEXIST || errno == ENOTEMPTY) { /* another pull won: use its copy */
                hub_rmtree(tmp);
            } else {
                rc = hub_disk_error(fin, "cannot rename into", err, ecap);
            }
        }
        if (rc) {
            hub_rmtree(tmp);
            return rc;
        }
        snprintf(r->path, sizeof r->path, "%s", fin);
    }
    if (!hub_is_commit(revision)) {
        char d[HUB_PATH_MAX];
        if (hub_fmt(ref, sizeof ref, "%s/refs/%s", rdir, revision))
            return snprintf(err, ecap, "path too long"), HUB_ERR_USAGE;
        snprintf(d, sizeof d, "%s", ref);
        *strrchr(d, '/') = 0;
        if (hub_mkdirs(d) || hub_write_atomic(ref, commit, strlen(commit)))
            return hub_disk_error(ref, "cannot write", err, ecap);
    }
    return HUB_OK;
}
