/* hub_vision.c - the vision-only pull (hub_pull_vision, hub_internal.h): of a safetensors
 * checkpoint on the Hub, the config files whole, each top-level weight file's header (bytes
 * 0-7, then the JSON; parsed and checked against the listed file size by hub_st_length and
 * hub_st_parse, hub_parse.h, before a byte of data is asked for), and only the byte ranges of the
 * vision tensors (runs of tensors less than 1 MiB apart fetched as one Range request), written as
 * the same shard names with headers cut to those tensors (and a cut
 * model.safetensors.index.json) into models--ORG--NAME/partial/COMMIT of g4v's hub cache, renamed
 * to models--ORG--NAME/vision/COMMIT when complete. g4v-source.json records the repo, commit and
 * each file's ETag. Which tensors are vision: hub_is_vision_tensor, a superset of what the loader
 * looks for (src/io/names.c), so the cut checkpoint loads like the whole.
 *
 * Resumable, as a whole file's blobs/ETAG.incomplete is: a cut shard is its header, then the
 * vision tensors in source order, each byte written in order as it arrives, so the file's length
 * is the record of what it holds. A pull interrupted (Ctrl-C, a drop with the retries spent, a full
 * disk) leaves partial/COMMIT; the next pull of that commit reads the headers again, keeps a shard
 * whose cut header is byte for byte the one it would write (else starts it again), and asks only
 * for the rest, from the source byte where the shard stopped. Config files are written as
 * NAME.part and renamed once whole, and kept. One pull at a time per commit (a lock,
 * partial/COMMIT.lock): a second waits, then uses the first one's folder. An answer that lies
 * (HUB_ERR_INTEGRITY) discards the partial folder; other failures keep it. */
#define _GNU_SOURCE
#include "hub_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend.h"

#define RUN_GAP (1u << 20) /* tensors closer than this are fetched in one request */

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcasecmp(s + a - b, suf);
}

/* A run's bytes (source offsets) to the tensors' places in the cut file: written in order, so
 * the file only ever grows by whole prefixes of its data. */
typedef struct run_sink {
    int fd, err;
    const hub_tensor *t;
    int n;
    uint64_t src0, dst0; /* source data section start in the file; cut file's data start */
} run_sink;

static int run_write(void *user, uint64_t off, const void *p, size_t n) {
    run_sink *s = user;
    uint64_t a = off - s->src0, b = a + n;
    for (int i = 0; i < s->n; i++) {
        const hub_tensor *t = &s->t[i];
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

typedef struct shard {
    const hub_file *f;
    char url[8192];
    char etag[160];
    hub_st st;
} shard;

/* The header of one weight file, checked against its listed size; its vision tensors. */
static int read_header(hub_conn *h, shard *s, char *err, size_t ecap) {
    const hub_file *f = s->f;
    uint8_t len8[8];
    mem_sink ms = {len8, 0, 8};
    hub_sink sink = {mem_write, &ms};
    hub_meta m;
    uint64_t hlen;
    if (f->size < 8) { /* too short for the length itself: hub_st_length says so */
        memset(len8, 0, sizeof len8);
        return hub_st_length(len8, f->path, f->size, &hlen, err, ecap);
    }
    int rc = hub_fetch(h, s->url, 0, 8, f->size, "", &sink, &m, err, ecap);
    if (rc) return rc;
    snprintf(s->etag, sizeof s->etag, "%s", m.linked_etag[0] ? m.linked_etag : m.etag);
    if ((rc = hub_st_length(len8, f->path, f->size, &hlen, err, ecap))) return rc;
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
    if (!rc) rc = hub_st_parse(&s->st, f->path, f->size, text, hlen, err, ecap);
    free(text);
    return rc;
}

/* One cut shard into dir: its header, then the vision tensors' bytes in order, continuing a file
 * an interrupted pull left (the header on disk must be the one written now, and the file no
 * longer than header + data; else it starts again). *resumed: the data bytes already there. */
static int write_shard(hub_conn *h, const char *dir, shard *s, uint64_t *resumed, char *err,
                       size_t ecap) {
    const hub_st *st = &s->st;
    char path[HUB_PATH_MAX];
    *resumed = 0;
    if (hub_fmt(path, sizeof path, "%s/%s", dir, s->f->path))
        return snprintf(err, ecap, "path too long"), HUB_ERR_USAGE;
    uint64_t hl;
    char *hdr = hub_st_cut_header(st, &hl);
    if (!hdr) return snprintf(err, ecap, "out of memory"), HUB_ERR_NOMEM;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return free(hdr), hub_disk_error(path, "cannot create", err, ecap);
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)(hl >> (8 * i));
    const uint64_t head = 8 + hl, full = head + st->bytes;
    struct stat sb;
    uint64_t have = fstat(fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    int rc = HUB_OK;
    if (have >= head && have <= full) { /* the same header: keep what follows it */
        char *old = malloc(head);
        int same = old && pread(fd, old, head, 0) == (ssize_t)head && !memcmp(old, len8, 8) &&
                   !memcmp(old + 8, hdr, hl);
        free(old);
        if (!same) have = 0;
    } else {
        have = 0;
    }
    if (!have && (ftruncate(fd, 0) || pwrite(fd, len8, 8, 0) != 8 ||
                  pwrite(fd, hdr, hl, 8) != (ssize_t)hl))
        rc = hub_disk_error(path, "cannot write", err, ecap);
    free(hdr);
    const uint64_t done = have ? have - head : 0;
    *resumed = done;
    h->p.file = s->f->path;
    h->p.file_total = st->bytes;
    h->p.file_done = done;
    h->p.done += done;
    h->p.event = 1;
    hub_report(h, 1);
    h->p.event = 0;
    run_sink rs = {fd, 0, NULL, 0, 8 + st->hlen, head};
    hub_sink sink = {run_write, &rs};
    /* the first tensor not yet whole, and where in it to start */
    int i = 0;
    while (i < st->nt && st->t[i].dst + (st->t[i].end - st->t[i].begin) <= done) i++;
    uint64_t from = i < st->nt && done > st->t[i].dst ? done - st->t[i].dst : 0;
    while (!rc && i < st->nt) {
        int j = i + 1;
        while (j < st->nt && st->t[j].begin - st->t[j - 1].end < RUN_GAP) j++;
        rs.t = &st->t[i];
        rs.n = j - i;
        hub_meta m;
        rc = hub_fetch(h, s->url, 8 + st->hlen + st->t[i].begin + from,
                       8 + st->hlen + st->t[j - 1].end, s->f->size, "", &sink, &m, err, ecap);
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
        from = 0;
    }
    if (!rc && (fstat(fd, &sb) || (uint64_t)sb.st_size != full)) {
        snprintf(err, ecap, "%s: the cut file has %llu bytes, not the %llu its header says; "
                 "refused", path, (unsigned long long)sb.st_size, (unsigned long long)full);
        rc = HUB_ERR_INTEGRITY;
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

static int is_size(const char *p, uint64_t size) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == size;
}

/* A config file whole into dir (size checked; sha256 for an LFS one), as NAME.part renamed to
 * NAME; one already there whole (an interrupted pull's) is kept: *kept. */
static int fetch_small(hub_conn *h, const char *repo, const char *commit, const char *dir,
                       const hub_file *f, int *kept, char *err, size_t ecap) {
    char path[HUB_PATH_MAX], part[HUB_PATH_MAX], url[8192];
    *kept = 0;
    if (hub_fmt(path, sizeof path, "%s/%s", dir, f->path) ||
        hub_fmt(part, sizeof part, "%s.part", path) ||
        hub_file_url(h, repo, commit, f->path, url, sizeof url))
        return snprintf(err, ecap, "path too long"), HUB_ERR_USAGE;
    if (is_size(path, f->size)) return *kept = 1, HUB_OK;
    int fd = open(part, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return hub_disk_error(part, "cannot create", err, ecap);
    h->p.file = f->path;
    h->p.file_total = f->size;
    h->p.file_done = 0;
    fd_sink fs = {fd, 0};
    hub_sink sink = {fd_write, &fs};
    hub_meta m;
    int rc = f->size ? hub_fetch(h, url, 0, f->size, f->size, "", &sink, &m, err, ecap) : 0;
    if (rc == HUB_ERR_DISK && fs.err) {
        errno = fs.err;
        rc = hub_disk_error(part, "cannot write", err, ecap);
    }
    if (!rc && f->lfs) {
        fe_sha256_ctx c;
        fe_sha256_init(&c);
        char buf[65536], hex[65];
        ssize_t r;
        off_t o = 0;
        while ((r = pread(fd, buf, sizeof buf, o)) > 0)
            fe_sha256_update(&c, buf, (size_t)r), o += r;
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
    if (!rc && !is_size(part, f->size)) {
        snprintf(err, ecap, "%s: received a size other than the listing's %llu; refused",
                 f->path, (unsigned long long)f->size);
        rc = HUB_ERR_INTEGRITY;
    }
    if (!rc && rename(part, path)) rc = hub_disk_error(path, "cannot rename into", err, ecap);
    return rc;
}

static int write_json(const char *path, cJSON *o) {
    char *t = cJSON_Print(o);
    int rc = !t || hub_write_atomic(path, t, strlen(t));
    free(t);
    return rc ? -1 : 0;
}

/* The vision-only checkpoint built in part (locked): configs, cut shards, index, source. */
static int build(hub_conn *h, const char *repo, const char *revision, const char *commit,
                 const hub_file *files, int n, shard *sh, int ns, const char *part,
                 hub_result *r, uint64_t *resumed, char *err, size_t ecap) {
    int rc = HUB_OK, have_index = 0;
    for (int i = 0; !rc && i < n; i++) {
        const hub_file *f = &files[i];
        if (strchr(f->path, '/')) continue;
        if (!strcmp(f->path, "model.safetensors.index.json")) {
            have_index = 1;
        } else if (ends_with(f->path, ".json") || ends_with(f->path, ".jinja")) {
            int kept = 0;
            rc = fetch_small(h, repo, commit, part, f, &kept, err, ecap);
            if (!kept) h->p.total += f->size;
            r->wanted += f->size;
            r->files++;
        }
    }
    uint64_t vision = 0;
    for (int i = 0; i < ns; i++) vision += sh[i].st.bytes;
    cJSON *src = cJSON_CreateObject(), *sfiles = cJSON_CreateObject();
    cJSON *wm = cJSON_CreateObject();
    for (int i = 0; !rc && i < ns; i++) {
        if (!sh[i].st.nt) continue;
        uint64_t had = 0;
        rc = write_shard(h, part, &sh[i], &had, err, ecap);
        *resumed += had;
        r->files++;
        r->wanted += 8 + sh[i].st.bytes; /* (the cut header's own bytes aside) */
        for (int k = 0; k < sh[i].st.nt; k++)
            cJSON_AddStringToObject(wm, sh[i].st.t[k].name, sh[i].f->path);
        cJSON *e = cJSON_AddObjectToObject(sfiles, sh[i].f->path);
        cJSON_AddStringToObject(e, "etag", sh[i].etag);
        cJSON_AddNumberToObject(e, "size", (double)sh[i].f->size);
        cJSON_AddNumberToObject(e, "header_bytes", (double)sh[i].st.hlen);
        cJSON_AddNumberToObject(e, "vision_tensors", sh[i].st.nt);
        cJSON_AddNumberToObject(e, "vision_bytes", (double)sh[i].st.bytes);
    }
    char p[HUB_PATH_MAX];
    if (!rc && have_index) {
        cJSON *ix = cJSON_CreateObject();
        cJSON *md = cJSON_AddObjectToObject(ix, "metadata");
        cJSON_AddNumberToObject(md, "total_size", (double)vision);
        cJSON_AddItemToObject(ix, "weight_map", wm);
        wm = NULL;
        if (hub_fmt(p, sizeof p, "%s/model.safetensors.index.json", part) || write_json(p, ix))
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
        if (hub_fmt(p, sizeof p, "%s/g4v-source.json", part) || write_json(p, src))
            rc = hub_disk_error(p, "cannot write", err, ecap);
    }
    cJSON_Delete(sfiles);
    cJSON_Delete(src);
    return rc;
}

int hub_pull_vision(hub_conn *h, const char *repo, const char *revision, const char *commit,
                    const hub_file *files, int n, hub_result *r, char *err, size_t ecap) {
    char cache[HUB_PATH_MAX], rdir[HUB_PATH_MAX], fin[HUB_PATH_MAX], pdir[HUB_PATH_MAX];
    char part[HUB_PATH_MAX], lock[HUB_PATH_MAX], org[128];
    snprintf(org, sizeof org, "%s", repo);
    *strchr(org, '/') = 0;
    if (hub_g4v_cache(cache, sizeof cache) ||
        hub_fmt(rdir, sizeof rdir, "%s/models--%s--%s", cache, org, strchr(repo, '/') + 1) ||
        hub_fmt(fin, sizeof fin, "%s/vision/%s", rdir, commit) ||
        hub_fmt(pdir, sizeof pdir, "%s/partial", rdir) ||
        hub_fmt(part, sizeof part, "%s/%s", pdir, commit) ||
        hub_fmt(lock, sizeof lock, "%s/%s.lock", pdir, commit))
        return snprintf(err, ecap, "no g4v cache folder (set G4V_HUB_CACHE or HOME)"),
               HUB_ERR_USAGE;
    r->vision_only = 1;
    for (int i = 0; i < n; i++) r->whole += files[i].size;
    struct stat st;
    if (stat(fin, &st) == 0 && S_ISDIR(st.st_mode)) { /* pulled before */
        r->files_reused = 1;
    } else {
        /* every header read and checked before anything is written */
        int rc = HUB_OK, ns = 0, nt = 0;
        shard *sh = calloc((size_t)n + 1, sizeof *sh);
        if (!sh) return snprintf(err, ecap, "out of memory"), HUB_ERR_NOMEM;
        for (int i = 0; !rc && i < n; i++) {
            const hub_file *f = &files[i];
            if (strchr(f->path, '/') || !ends_with(f->path, ".safetensors")) continue;
            sh[ns].f = f;
            if (hub_file_url(h, repo, commit, f->path, sh[ns].url, sizeof sh[ns].url))
                rc = (snprintf(err, ecap, "path too long"), HUB_ERR_USAGE);
            else if (!(rc = read_header(h, &sh[ns], err, ecap)))
                h->p.total += sh[ns].st.bytes, nt += sh[ns].st.nt;
            ns++;
        }
        if (!rc && !nt) {
            snprintf(err, ecap, "%s: no vision tensors in its safetensors files (a text-only "
                     "model?); pull it whole with --whole", repo);
            rc = HUB_ERR_NOT_FOUND;
        }
        int lfd = -1;
        if (!rc && (hub_mkdirs(pdir) ||
                    (lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0))
            rc = hub_disk_error(lock, "cannot create", err, ecap);
        if (!rc)
            while (flock(lfd, LOCK_EX) && errno == EINTR) {
            }
        uint64_t resumed = 0;
        if (!rc && stat(fin, &st) == 0 && S_ISDIR(st.st_mode)) {
            r->files_reused = 1; /* another pull finished it while this one waited */
        } else if (!rc) {
            if (hub_mkdirs(part)) {
                rc = hub_disk_error(part, "cannot create", err, ecap);
            } else {
                rc = build(h, repo, revision, commit, files, n, sh, ns, part, r, &resumed, err,
                           ecap);
            }
            char vdir[HUB_PATH_MAX];
            if (!rc && (hub_fmt(vdir, sizeof vdir, "%s/vision", rdir) || hub_mkdirs(vdir)))
                rc = hub_disk_error(vdir, "cannot create", err, ecap);
            if (!rc && rename(part, fin)) rc = hub_disk_error(fin, "cannot rename into", err, ecap);
            /* done: whoever takes this lock (or a new one) after the rename finds vision/COMMIT */
            if (!rc) unlink(lock);
            if (rc == HUB_ERR_INTEGRITY) hub_rmtree(part); /* nothing to resume from */
        }
        if (lfd >= 0) close(lfd);
        for (int i = 0; i < ns; i++) hub_st_free(&sh[i].st);
        free(sh);
        r->fetched = h->p.done - resumed;
        if (rc) return rc;
    }
    snprintf(r->path, sizeof r->path, "%s", fin);
    if (!hub_is_commit(revision)) {
        char d[HUB_PATH_MAX], ref[HUB_PATH_MAX];
        if (hub_fmt(ref, sizeof ref, "%s/refs/%s", rdir, revision))
            return snprintf(err, ecap, "path too long"), HUB_ERR_USAGE;
        snprintf(d, sizeof d, "%s", ref);
        *strrchr(d, '/') = 0;
        if (hub_mkdirs(d) || hub_write_atomic(ref, commit, strlen(commit)))
            return hub_disk_error(ref, "cannot write", err, ecap);
    }
    return HUB_OK;
}
