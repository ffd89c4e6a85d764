/* store_hf.c - the Hugging Face hub cache, read as huggingface_hub lays it out (its "Manage the
 * cache" guide): CACHE/models--{org}--{name}/refs/{branch or tag} holds a 40-hex commit,
 * snapshots/{commit}/ holds the repo's files as relative symlinks into ../../blobs/{etag}, and a
 * download that did not finish leaves blobs/{etag}.incomplete with no snapshot link yet.
 * CACHE is $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
 * ~/.cache/huggingface/hub. A snapshot with config.json is a checkpoint (the vision model); one
 * with GGUF files is a GGUF repo (a text model per quantization, and its mmproj). */
#include "model_store_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static int hf_cache_dir(char *out, size_t cap) {
    const char *e;
    if ((e = getenv("HF_HUB_CACHE")) && *e) return ms_fmt(out, cap, "%s", e);
    if ((e = getenv("HF_HOME")) && *e) return ms_fmt(out, cap, "%s/hub", e);
    if ((e = getenv("XDG_CACHE_HOME")) && *e) return ms_fmt(out, cap, "%s/huggingface/hub", e);
    if ((e = getenv("HOME")) && *e) return ms_fmt(out, cap, "%s/.cache/huggingface/hub", e);
    return -1;
}

int ms_hf_dirs(char (*dirs)[MS_PATH_MAX], int max) {
    return max > 0 && !hf_cache_dir(dirs[0], MS_PATH_MAX) ? 1 : 0;
}

static int is_hex(const char *s, size_t min) {
    size_t n = 0;
    for (; s[n]; n++)
        if (!isxdigit((unsigned char)s[n])) return 0;
    return n >= min;
}

/* refs/NAME's commit into out (41 bytes). 1 found. */
static int read_ref(const char *repo, const char *ref, char *out) {
    char p[MS_PATH_MAX];
    if (strstr(ref, "..") || ms_fmt(p, sizeof p, "%s/refs/%s", repo, ref)) return 0;
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    char buf[128] = "";
    int ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    buf[strcspn(buf, " \r\n")] = 0;
    if (!ok || strlen(buf) != 40 || !is_hex(buf, 40)) return 0;
    memcpy(out, buf, 41);
    return 1;
}

/* The refs (top level of refs/) that name commit, comma-separated. */
static void refs_naming(const char *repo, const char *commit, char *out, size_t cap) {
    char dir[MS_PATH_MAX], c[41];
    char **v;
    int n;
    size_t o = 0;
    out[0] = 0;
    if (ms_fmt(dir, sizeof dir, "%s/refs", repo) || ms_names(dir, &v, &n)) return;
    for (int i = 0; i < n; i++)
        if (read_ref(repo, v[i], c) && !strcmp(c, commit) && o < cap)
            o += (size_t)ms_msg(out + o, cap - o, "%s%s", o ? "," : "", v[i]);
    ms_names_free(v, n);
}

/* An unfinished download of this repo: the first blobs/NAME.incomplete into name. */
static int incomplete_blob(const char *repo, char *name, size_t cap) {
    char dir[MS_PATH_MAX];
    char **v;
    int n, found = 0;
    if (ms_fmt(dir, sizeof dir, "%s/blobs", repo) || ms_names(dir, &v, &n)) return 0;
    for (int i = 0; i < n && !found; i++) {
        size_t l = strlen(v[i]);
        if (l > 11 && !strcmp(v[i] + l - 11, ".incomplete"))
            found = !ms_fmt(name, cap, "blobs/%s", v[i]);
    }
    ms_names_free(v, n);
    return found;
}

/* "models--google--gemma-4-E4B-it" -> "google/gemma-4-E4B-it" (the id as the hub spells it). */
static int repo_id_of(const char *folder, char *out, size_t cap) {
    if (strncmp(folder, "models--", 8)) return 0;
    const char *sep = strstr(folder + 8, "--");
    if (!sep) return 0;
    return !ms_fmt(out, cap, "%.*s/%s", (int)(sep - folder - 8), folder + 8, sep + 2);
}

static uint64_t dir_bytes(const char *dir) {
    char **v;
    int n;
    uint64_t sum = 0;
    if (ms_names(dir, &v, &n)) return 0;
    for (int i = 0; i < n; i++) {
        char p[MS_PATH_MAX];
        if (!ms_fmt(p, sizeof p, "%s/%s", dir, v[i])) sum += ms_file_size(p);
    }
    ms_names_free(v, n);
    return sum;
}

/* m from one snapshot; quant picks the text GGUF of a GGUF repo. -1 with err (quant absent). */
static int fill_snapshot(ms_model *m, const char *repo, const char *id, const char *snap,
                         const char *commit, const char *quant, char *err, size_t ecap) {
    char p[MS_PATH_MAX];
    struct stat st;
    m->source = MS_SRC_HF;
    ms_msg(m->name, sizeof m->name, "%s", id);
    ms_msg(m->revision, sizeof m->revision, "%s", commit);
    refs_naming(repo, commit, m->refs, sizeof m->refs);
    ms_msg(m->location, sizeof m->location, "%s", repo);
    if (!ms_fmt(p, sizeof p, "%s/config.json", snap) && lstat(p, &st) == 0) {
        ms_msg(m->vision, sizeof m->vision, "%s", snap);
        ms_msg(m->vision_kind, sizeof m->vision_kind, "checkpoint");
        if (!ms_fmt(p, sizeof p, "%s/chat_template.jinja", snap) && ms_is_file(p)) {
            ms_msg(m->tmpl, sizeof m->tmpl, "%s", p);
            ms_msg(m->tmpl_kind, sizeof m->tmpl_kind, "jinja");
        }
        m->bytes = dir_bytes(snap);
        return 0;
    }
    if (ms_gguf_folder_pick(snap, quant, m->text, sizeof m->text, m->vision, sizeof m->vision,
                            err, ecap))
        return -1;
    if (m->vision[0]) ms_msg(m->vision_kind, sizeof m->vision_kind, "mmproj");
    if (m->text[0]) {
        char q[128];
        ms_quant_of(strrchr(m->text, '/') + 1, q, sizeof q);
        size_t l = strlen(m->name);
        ms_msg(m->name + l, sizeof m->name - l, ":%s", q);
        ms_msg(m->tmpl, sizeof m->tmpl, "%s", m->text);
        ms_msg(m->tmpl_kind, sizeof m->tmpl_kind, "gguf");
    }
    m->bytes = ms_file_size(m->text) + ms_file_size(m->vision);
    return 0;
}

/* A model that is not usable because a download stopped says so. */
static void note_incomplete(ms_model *m, const char *repo) {
    char b[512], was[sizeof m->why];
    if (m->usable || !incomplete_blob(repo, b, sizeof b)) return;
    memcpy(was, m->why, sizeof was);
    ms_msg(m->why, sizeof m->why, "incomplete download: %s/%s did not finish; finish it (e.g. "
                                  "`hf download %.*s`) [%s]", repo, b,
           (int)strcspn(m->name, ":"), m->name, was);
}

int ms_hf_find(const char *org, const char *name, const char *quant, const char *revision,
               int want, ms_model *m, char *looked, size_t lcap, char *err, size_t ecap) {
    char cache[MS_PATH_MAX], folder[1024], repo[MS_PATH_MAX], id[512], commit[41] = "";
    memset(m, 0, sizeof *m);
    if (hf_cache_dir(cache, sizeof cache)) {
        ms_msg(looked, lcap, "no Hugging Face cache (HOME is not set)");
        return MS_ERR_NOT_FOUND;
    }
    ms_msg(folder, sizeof folder, "models--%s--%s", org, name);
    if (!ms_find_ci(cache, folder, repo, sizeof repo) || !ms_is_dir(repo)) {
        ms_msg(looked, lcap, "the Hugging Face cache %s (no %s)", cache, folder);
        return MS_ERR_NOT_FOUND;
    }
    const char *base = strrchr(repo, '/') + 1;
    if (!repo_id_of(base, id, sizeof id)) ms_msg(id, sizeof id, "%s/%s", org, name);
    const char *rev = revision && *revision ? revision : "main";
    char snaps[MS_PATH_MAX];
    if (ms_fmt(snaps, sizeof snaps, "%s/snapshots", repo)) return MS_ERR_UNUSABLE;
    if (!read_ref(repo, rev, commit) && is_hex(rev, 4)) {
        char **v; /* a commit, or the start of one that names one snapshot */
        int n, hits = 0;
        if (!ms_names(snaps, &v, &n)) {
            for (int i = 0; i < n; i++)
                if (!strncasecmp(v[i], rev, strlen(rev)) && strlen(v[i]) < sizeof commit)
                    hits++, ms_msg(commit, sizeof commit, "%s", v[i]);
            ms_names_free(v, n);
        }
        if (hits > 1) {
            ms_msg(err, ecap, "%s: revision %s names %d snapshots in %s: give more of the "
                                "commit", id, rev, hits, snaps);
            return MS_ERR_USAGE;
        }
    }
    if (!commit[0]) {
        char refs[1024] = "", **v;
        int n;
        size_t o = 0;
        char rdir[MS_PATH_MAX];
        if (!ms_fmt(rdir, sizeof rdir, "%s/refs", repo) && !ms_names(rdir, &v, &n)) {
            for (int i = 0; i < n && o < sizeof refs; i++)
                o += (size_t)ms_msg(refs + o, sizeof refs - o, "%s%s", i ? ", " : "", v[i]);
            ms_names_free(v, n);
        }
        ms_msg(err, ecap, "%s: revision %s is not in the cache %s (refs there: %s); give "
                            "--revision with one of them or a commit of snapshots/", id, rev,
               repo, refs[0] ? refs : "none");
        return MS_ERR_UNUSABLE;
    }
    char snap[MS_PATH_MAX];
    if (ms_fmt(snap, sizeof snap, "%s/%s", snaps, commit) || !ms_is_dir(snap)) {
        ms_msg(err, ecap, "%s: revision %s is commit %s, but %s is missing (incomplete "
                            "download: finish it, e.g. `hf download %s`)", id, rev, commit,
               snap, id);
        return MS_ERR_UNUSABLE;
    }
    char why[1024];
    if (fill_snapshot(m, repo, id, snap, commit, quant, why, sizeof why)) {
        ms_msg(err, ecap, "%s: %s", id, why);
        return MS_ERR_UNUSABLE;
    }
    ms_judge(m, want);
    note_incomplete(m, repo);
    return MS_OK;
}

int ms_hf_list(ms_list *l, int all) {
    char cache[MS_PATH_MAX];
    char **repos;
    int nr;
    if (hf_cache_dir(cache, sizeof cache) || ms_names(cache, &repos, &nr)) return 0;
    int rc = 0;
    for (int r = 0; r < nr && !rc; r++) {
        char id[512], repo[MS_PATH_MAX], snaps[MS_PATH_MAX];
        char **sv;
        int ns;
        if (!repo_id_of(repos[r], id, sizeof id) || (!all && !ms_name_is_gemma4(id))) continue;
        if (ms_fmt(repo, sizeof repo, "%s/%s", cache, repos[r]) ||
            ms_fmt(snaps, sizeof snaps, "%s/snapshots", repo) || ms_names(snaps, &sv, &ns))
            continue;
        for (int s = 0; s < ns && !rc; s++) {
            char snap[MS_PATH_MAX], err[512];
            char **tv;
            int nt = 0;
            if (ms_fmt(snap, sizeof snap, "%s/%s", snaps, sv[s]) || !ms_is_dir(snap)) continue;
            ms_gguf_folder_texts(snap, &tv, &nt);
            for (int t = 0; t < (nt ? nt : 1) && !rc; t++) { /* one per text GGUF */
                ms_model m;
                char q[128] = "";
                memset(&m, 0, sizeof m);
                if (nt) ms_quant_of(tv[t], q, sizeof q);
                if (fill_snapshot(&m, repo, id, snap, sv[s], q, err, sizeof err)) continue;
                ms_judge(&m, MS_WANT_ANY);
                note_incomplete(&m, repo);
                rc = ms_list_push(l, &m);
            }
            ms_names_free(tv, nt);
        }
        ms_names_free(sv, ns);
    }
    ms_names_free(repos, nr);
    return rc;
}
