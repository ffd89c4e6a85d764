/* hub_pull.c - hub_pull (hub.h): the repository's listing from the Hub API (GET
 * /api/models/REPO/revision/REV?blobs=true: the commit and every file with its size, git blob id
 * and LFS sha256; parsed and every name checked by hub_parse_listing, hub_parse.h), then either the
 * vision-only checkpoint (hub_vision.c) or the files whole into the Hugging Face cache: each blob
 * under a lock, resumed from its .incomplete, checked (size; sha256 for LFS files) and renamed,
 * then its snapshot link and the ref, each written under a temporary name and renamed. */
#define _GNU_SOURCE
#include "hub_internal.h"

#include <ctype.h>
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

int hub_offline(void) {
    const char *e = getenv("HF_HUB_OFFLINE");
    return e && (!strcmp(e, "1") || !strcasecmp(e, "on") || !strcasecmp(e, "yes") ||
                 !strcasecmp(e, "true"));
}

/* ORG/NAME of letters, digits, '.', '_', '-' (neither part "." or ".."), at most 96 each. */
static int repo_ok(const char *r) {
    const char *sl = strchr(r, '/');
    if (!sl || strchr(sl + 1, '/')) return 0;
    size_t a = (size_t)(sl - r), b = strlen(sl + 1);
    if (!a || !b || a > 96 || b > 96) return 0;
    for (const char *c = r; *c; c++)
        if (c != sl && !isalnum((unsigned char)*c) && *c != '.' && *c != '_' && *c != '-')
            return 0;
    if (r[0] == '.' || sl[1] == '.') return 0;
    return 1;
}

/* A revision: a branch, tag or commit; safe as a path under refs/ ("refs/pr/1" included). */
static int rev_ok(const char *v) {
    if (!hub_path_safe(v) || strlen(v) > 255) return 0;
    for (const char *c = v; *c; c++)
        if (*c == ' ' || *c == '?' || *c == '#' || *c == '%') return 0;
    return 1;
}

int hub_parse_name(const char *value, char *repo, size_t rcap, char *rev, size_t vcap,
                   char *quant, size_t qcap, char *err, size_t ecap) {
    if (strncmp(value, "hf:", 3)) return 0;
    const char *s = value + 3;
    char buf[512];
    if (hub_fmt(buf, sizeof buf, "%s", s)) return snprintf(err, ecap, "%s: too long", value), -1;
    char *q = strchr(buf, ':'), *at;
    if (q) *q++ = 0;
    if (q && !quant) {
        snprintf(err, ecap, "%s: a :QUANT names a GGUF file, for --lm only", value);
        return -1;
    }
    if ((at = strchr(buf, '@'))) *at++ = 0;
    if (!repo_ok(buf) || (at && (!*at || !rev_ok(at))) || (q && !*q) ||
        hub_fmt(repo, rcap, "%s", buf) || hub_fmt(rev, vcap, "%s", at ? at : "main") ||
        (quant && hub_fmt(quant, qcap, "%s", q ? q : ""))) {
        snprintf(err, ecap, "%s: not a Hub model name (hf:ORG/NAME, hf:ORG/NAME@REVISION%s)",
                 value, quant ? ", hf:ORG/NAME:QUANT" : "");
        return -1;
    }
    if (q)
        for (const char *c = q; *c; c++)
            if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.') {
                snprintf(err, ecap, "%s: a quantization is letters, digits, '_' (Q4_K_M)", value);
                return -1;
            }
    return 1;
}

/* The listing: the commit and the files. */
static int list_repo(hub_conn *h, const char *repo, const char *rev, char commit[41],
                     hub_file **files, int *nfiles, char *err, size_t ecap) {
    char url[4096], what[600], *text = NULL, erev[1024];
    size_t n = 0;
    /* the revision escaped whole ("refs/pr/1" -> refs%2Fpr%2F1), as huggingface_hub quotes it */
    if (hub_escape(h, rev, erev, sizeof erev))
        return snprintf(err, ecap, "%s: too long", rev), HUB_ERR_USAGE;
    snprintf(what, sizeof what, "%s@%s", repo, rev);
    if (hub_fmt(url, sizeof url, "%s/api/models/%s/revision/%s?blobs=true", h->endpoint, repo,
                erev))
        return snprintf(err, ecap, "%s: too long", what), HUB_ERR_USAGE;
    hub_meta m;
    int rc = hub_get_small(h, url, HUB_MAX_LISTING, &text, &n, &m, what, err, ecap);
    if (rc) return rc;
    rc = hub_parse_listing(text, n, what, rev, commit, files, nfiles, err, ecap);
    free(text);
    return rc;
}

/* ---- whole files into the Hugging Face cache ---------------------------------------------- */

typedef struct fd_sink {
    int fd;
    int err; /* errno of a failed write */
} fd_sink;

static int fd_write(void *user, uint64_t off, const void *p, size_t n) {
    fd_sink *s = user;
    const char *c = p;
    while (n) {
        ssize_t w = pwrite(s->fd, c, n, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            s->err = w < 0 ? errno : ENOSPC;
            return -1;
        }
        c += w, n -= (size_t)w, off += (uint64_t)w;
    }
    return 0;
}

static int file_sha256(int fd, char hex[65]) {
    fe_sha256_ctx c;
    fe_sha256_init(&c);
    static char buf[1 << 20];
    off_t off = 0;
    for (;;) {
        ssize_t r = pread(fd, buf, sizeof buf, off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        fe_sha256_update(&c, buf, (size_t)r);
        off += r;
    }
    uint8_t d[FE_SHA256_BYTES];
    fe_sha256_final(&c, d);
    for (int i = 0; i < FE_SHA256_BYTES; i++) sprintf(hex + 2 * i, "%02x", d[i]);
    return 0;
}

static int is_size(const char *p, uint64_t size) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == size;
}

/* blobs/ETAG of one file: there already, or fetched into ETAG.incomplete (resumed), checked, and
 * renamed, under the blob's lock. *reused: it was there. */
static int pull_blob(hub_conn *h, const char *repo, const char *commit, const char *rdir,
                     const char *lockdir, const hub_file *f, int *reused, char *err,
                     size_t ecap) {
    char blob[HUB_PATH_MAX], inc[HUB_PATH_MAX], lock[HUB_PATH_MAX], url[8192];
    if (hub_fmt(blob, sizeof blob, "%s/blobs/%s", rdir, f->etag) ||
        hub_fmt(inc, sizeof inc, "%s.incomplete", blob) ||
        hub_fmt(lock, sizeof lock, "%s/%s.lock", lockdir, f->etag) ||
        hub_file_url(h, repo, commit, f->path, url, sizeof url))
        return snprintf(err, ecap, "%s: path too long", f->path), HUB_ERR_USAGE;
    *reused = 0;
    h->p.file = f->path;
    h->p.file_total = f->size;
    h->p.file_done = 0;
    if (is_size(blob, f->size)) {
        *reused = 1;
        return HUB_OK;
    }
    int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lfd < 0) return hub_disk_error(lock, "cannot create the lock", err, ecap);
    while (flock(lfd, LOCK_EX) && errno == EINTR) {
    }
    int rc = HUB_OK;
    if (is_size(blob, f->size)) { /* another pull finished it while this one waited */
        *reused = 1;
        close(lfd);
        return HUB_OK;
    }
    int fd = open(inc, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = hub_disk_error(inc, "cannot create", err, ecap);
        close(lfd);
        return rc;
    }
    struct stat st;
    uint64_t have = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    if (have > f->size) { /* not this file's beginning: start again */
        if (ftruncate(fd, 0)) have = f->size + 1;
        else have = 0;
    }
    h->p.file_done = have;
    h->p.done += have;
    h->p.event = 1;
    hub_report(h, 1);
    h->p.event = 0;
    fd_sink fs = {fd, 0};
    hub_sink sink = {fd_write, &fs};
    hub_meta m;
    memset(&m, 0, sizeof m);
    m.linked_size = -1;
    if (have < f->size)
        rc = hub_fetch(h, url, have, f->size, f->size, "", &sink, &m, err, ecap);
    if (rc == HUB_ERR_DISK && fs.err) {
        errno = fs.err;
        rc = hub_disk_error(inc, "cannot write", err, ecap);
    }
    /* what the endpoint's first answer said about the file must agree with the listing */
    if (!rc && m.repo_commit[0] && strcmp(m.repo_commit, commit)) {
        snprintf(err, ecap, "%s: the Hub sent it from commit %s, not %s; refused", f->path,
                 m.repo_commit, commit);
        rc = HUB_ERR_INTEGRITY;
    }
    if (!rc && m.linked_size >= 0 && (uint64_t)m.linked_size != f->size) {
        snprintf(err, ecap, "%s: X-Linked-Size %lld, but the listing says %llu; refused",
                 f->path, (long long)m.linked_size, (unsigned long long)f->size);
        rc = HUB_ERR_INTEGRITY;
    }
    if (!rc && f->lfs && m.linked_etag[0] && strcasecmp(m.linked_etag, f->etag)) {
        snprintf(err, ecap, "%s: X-Linked-Etag %s, but the listing's sha256 is %s; refused",
                 f->path, m.linked_etag, f->etag);
        rc = HUB_ERR_INTEGRITY;
    }
    if (!rc && (fstat(fd, &st) || (uint64_t)st.st_size != f->size)) {
        snprintf(err, ecap, "%s: %llu bytes received, the listing says %llu; refused", f->path,
                 (unsigned long long)st.st_size, (unsigned long long)f->size);
        rc = HUB_ERR_INTEGRITY;
    }
    if (!rc && f->lfs) {
        char hex[65];
        if (file_sha256(fd, hex)) {
            rc = hub_disk_error(inc, "cannot read back", err, ecap);
        } else if (strcmp(hex, f->etag)) {
            snprintf(err, ecap, "%s: its sha256 is %s, the Hub lists %s; refused, the download "
                     "is discarded (run the command again)", f->path, hex, f->etag);
            rc = HUB_ERR_INTEGRITY;
            if (ftruncate(fd, 0)) {
            }
            unlink(inc);
        }
    }
    if (!rc && fsync(fd)) rc = hub_disk_error(inc, "cannot write", err, ecap);
    close(fd);
    if (!rc && rename(inc, blob)) rc = hub_disk_error(blob, "cannot rename into", err, ecap);
    if (rc == HUB_ERR_INTEGRITY) unlink(inc); /* not this file: nothing to resume from */
    close(lfd);
    if (!rc) {
        h->p.event = 2;
        hub_report(h, 1);
        h->p.event = 0;
    }
    return rc;
}

/* snapshots/COMMIT/PATH -> ../../blobs/ETAG (one more ../ per folder of PATH), replaced
 * atomically if it says something else. */
static int link_file(const char *rdir, const char *commit, const hub_file *f, char *err,
                     size_t ecap) {
    char lnk[HUB_PATH_MAX], tgt[HUB_PATH_MAX], tmp[HUB_PATH_MAX], cur[HUB_PATH_MAX];
    size_t o = 0;
    for (const char *c = f->path; *c; c++)
        if (*c == '/' && o + 3 < sizeof tgt) memcpy(tgt + o, "../", 3), o += 3;
    if (hub_fmt(tgt + o, sizeof tgt - o, "../../blobs/%s", f->etag) ||
        hub_fmt(lnk, sizeof lnk, "%s/snapshots/%s/%s", rdir, commit, f->path) ||
        hub_fmt(tmp, sizeof tmp, "%s.tmp.%ld", lnk, (long)getpid()))
        return snprintf(err, ecap, "%s: path too long", f->path), HUB_ERR_USAGE;
    ssize_t n = readlink(lnk, cur, sizeof cur - 1);
    if (n > 0 && (cur[n] = 0, !strcmp(cur, tgt))) return HUB_OK;
    char dir[HUB_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", lnk);
    *strrchr(dir, '/') = 0;
    if (hub_mkdirs(dir)) return hub_disk_error(dir, "cannot create", err, ecap);
    unlink(tmp);
    if (symlink(tgt, tmp) || rename(tmp, lnk)) {
        int rc = hub_disk_error(lnk, "cannot link", err, ecap);
        unlink(tmp);
        return rc;
    }
    return HUB_OK;
}

static int write_ref(const char *dir, const char *rev, const char *commit, char *err,
                     size_t ecap) {
    char p[HUB_PATH_MAX], d[HUB_PATH_MAX];
    if (hub_is_commit(rev)) return HUB_OK;
    if (hub_fmt(p, sizeof p, "%s/refs/%s", dir, rev))
        return snprintf(err, ecap, "%s: path too long", rev), HUB_ERR_USAGE;
    snprintf(d, sizeof d, "%s", p);
    *strrchr(d, '/') = 0;
    if (hub_mkdirs(d) || hub_write_atomic(p, commit, strlen(commit)))
        return hub_disk_error(p, "cannot write", err, ecap);
    return HUB_OK;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcasecmp(s + a - b, suf);
}

/* Which files a whole pull takes: all, or for a quantization the GGUFs of it and the mmproj. */
static int wanted_whole(const hub_file *f, const char *quant) {
    if (!quant || !*quant || !ends_with(f->path, ".gguf")) return 1;
    const char *base = strrchr(f->path, '/');
    base = base ? base + 1 : f->path;
    return !strncasecmp(base, "mmproj", 6) || strcasestr(base, quant) != NULL;
}

static int pull_whole(hub_conn *h, const char *repo, const char *rev, const char *commit,
                      const hub_file *files, int n, hub_result *r, char *err, size_t ecap) {
    char cache[HUB_PATH_MAX], rdir[HUB_PATH_MAX], lockdir[HUB_PATH_MAX], folder[256];
    char org[128];
    snprintf(org, sizeof org, "%s", repo);
    *strchr(org, '/') = 0;
    snprintf(folder, sizeof folder, "models--%s--%s", org, strchr(repo, '/') + 1);
    if (hub_hf_cache(cache, sizeof cache) ||
        hub_fmt(rdir, sizeof rdir, "%s/%s", cache, folder) ||
        hub_fmt(lockdir, sizeof lockdir, "%s/.locks/%s", cache, folder))
        return snprintf(err, ecap, "no Hugging Face cache folder (set HF_HUB_CACHE or HOME)"),
               HUB_ERR_USAGE;
    char blobs[HUB_PATH_MAX], snap[HUB_PATH_MAX];
    hub_fmt(blobs, sizeof blobs, "%s/blobs", rdir);
    if (hub_fmt(snap, sizeof snap, "%s/snapshots/%s", rdir, commit) || hub_mkdirs(blobs) ||
        hub_mkdirs(snap) || hub_mkdirs(lockdir))
        return hub_disk_error(rdir, "cannot create", err, ecap);
    const char *quant = h->o->quant;
    int matched = 0;
    for (int i = 0; i < n; i++) {
        r->whole += files[i].size;
        if (!wanted_whole(&files[i], quant)) continue;
        const char *base = strrchr(files[i].path, '/');
        base = base ? base + 1 : files[i].path;
        if (ends_with(base, ".gguf") && strncasecmp(base, "mmproj", 6)) matched++;
        r->wanted += files[i].size;
        char b[HUB_PATH_MAX];
        if (!hub_fmt(b, sizeof b, "%s/%s", blobs, files[i].etag) && !is_size(b, files[i].size))
            h->p.total += files[i].size;
    }
    if (quant && *quant && !matched) {
        snprintf(err, ecap, "%s: no GGUF file of quantization %s in the repository", repo, quant);
        return HUB_ERR_NOT_FOUND;
    }
    for (int i = 0; i < n; i++) {
        if (!wanted_whole(&files[i], quant)) continue;
        int reused = 0;
        uint64_t before = h->p.done;
        int rc = pull_blob(h, repo, commit, rdir, lockdir, &files[i], &reused, err, ecap);
        if (rc) return rc;
        if (reused) {
            r->files_reused++;
            h->p.event = 3;
            hub_report(h, 1);
            h->p.event = 0;
        }
        r->fetched += h->p.done - before;
        r->files++;
        if ((rc = link_file(rdir, commit, &files[i], err, ecap))) return rc;
    }
    int rc = write_ref(rdir, rev, commit, err, ecap);
    if (rc) return rc;
    snprintf(r->path, sizeof r->path, "%s", snap);
    return HUB_OK;
}

static int is_checkpoint(const hub_file *f, int n) {
    int config = 0, st = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(f[i].path, "config.json")) config = 1;
        if (!strchr(f[i].path, '/') && ends_with(f[i].path, ".safetensors")) st = 1;
    }
    return config && st;
}

int hub_pull(const hub_opts *o, hub_result *r, char *err, size_t ecap) {
    memset(r, 0, sizeof *r);
    const char *rev = o->revision && *o->revision ? o->revision : "main";
    if (!o->repo || !repo_ok(o->repo)) {
        snprintf(err, ecap, "%s: not a repo id (ORG/NAME of letters, digits, '.', '_', '-')",
                 o->repo ? o->repo : "(none)");
        return HUB_ERR_USAGE;
    }
    if (!rev_ok(rev)) {
        snprintf(err, ecap, "%s: not a revision (a branch, tag or commit)", rev);
        return HUB_ERR_USAGE;
    }
    if (hub_offline()) {
        snprintf(err, ecap, "%s: HF_HUB_OFFLINE is set, so nothing is fetched (unset it, or use "
                 "a model already on disk: `g4v models`)", o->repo);
        return HUB_ERR_OFFLINE;
    }
    hub_conn h;
    int rc = hub_conn_open(&h, o, err, ecap);
    if (rc) return rc;
    hub_file *files = NULL;
    int n = 0;
    char commit[41];
    rc = list_repo(&h, o->repo, rev, commit, &files, &n, err, ecap);
    if (!rc) {
        memcpy(r->commit, commit, sizeof commit);
        int vision = o->mode == HUB_VISION || (o->mode == HUB_AUTO && is_checkpoint(files, n));
        if (o->mode == HUB_VISION && !is_checkpoint(files, n)) {
            snprintf(err, ecap, "%s: no safetensors checkpoint (config.json + *.safetensors) to "
                     "take the vision tower from; pull it whole (--whole)", o->repo);
            rc = HUB_ERR_NOT_FOUND;
        } else if (vision) {
            rc = hub_pull_vision(&h, o->repo, rev, commit, files, n, r, err, ecap);
        } else {
            rc = pull_whole(&h, o->repo, rev, commit, files, n, r, err, ecap);
        }
        hub_files_free(files, n);
    }
    hub_conn_close(&h);
    return rc;
}

int hub_find_vision(const char *repo, const char *revision, char *out, size_t cap,
                    char *commit) {
    char cache[HUB_PATH_MAX], dir[HUB_PATH_MAX], c[64] = "", org[128];
    const char *rev = revision && *revision ? revision : "main";
    if (!repo_ok(repo) || !rev_ok(rev) || hub_g4v_cache(cache, sizeof cache)) return 0;
    snprintf(org, sizeof org, "%s", repo);
    *strchr(org, '/') = 0;
    if (hub_is_commit(rev)) {
        memcpy(c, rev, 41);
    } else {
        char ref[HUB_PATH_MAX];
        if (hub_fmt(ref, sizeof ref, "%s/models--%s--%s/refs/%s", cache, org,
                    strchr(repo, '/') + 1, rev))
            return 0;
        FILE *f = fopen(ref, "rb");
        if (!f) return 0;
        size_t n = fread(c, 1, 40, f);
        fclose(f);
        c[n] = 0;
        if (!hub_is_commit(c)) return 0;
    }
    struct stat st;
    if (hub_fmt(dir, sizeof dir, "%s/models--%s--%s/vision/%s", cache, org,
                strchr(repo, '/') + 1, c) ||
        stat(dir, &st) || !S_ISDIR(st.st_mode) || hub_fmt(out, cap, "%s", dir))
        return 0;
    if (commit) memcpy(commit, c, 41);
    return 1;
}
