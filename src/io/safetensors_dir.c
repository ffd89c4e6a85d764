/* safetensors_dir.c - a model source (model_source.c): finds, validates and maps the vision
 * tensors of a checkpoint directory as downloaded (config.json + safetensors).
 *
 * Steps: config.json -> the wanted-tensor list (names.c: the tower's tensors, or the 12B unified
 * embedder's) -> match the headers of the files that can hold them (weight_files below: sidecar,
 * index shards, single file) -> per file, check that the used tensors do not overlap -> map only
 * their byte ranges -> fill the views, decode the clip bounds, count. Text weights are never read
 * or mapped: headers are read with pread, data only mapped.
 */
#include "io/safetensors_dir.h"

#include "base/alloc.h"
#include "io/checkpoint_internal.h"
#include "io/budget_defaults.h"
#include "io/config.h"
#include "io/fsutil.h"
#include "io/json_file.h"
#include "io/names.h"
#include "io/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIDECAR_NAME "optiq_vision.safetensors"
#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"

typedef struct loader {
    const char *dir;
    const g4v_checkpoint_limits *lim;
    g4v_checkpoint *ck;
    g4v_wanted *w;
    size_t nw;
    g4v_st_file *files; /* files that hold wanted tensors, fd open until mapped */
    size_t nfiles;
    int shards_used, shards_total; /* of a sharded checkpoint (model.safetensors.index.json) */
    g4v_err *err;
} loader;

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int cmp_by_begin(const void *a, const void *b) {
    const g4v_wanted *x = *(const g4v_wanted *const *)a, *y = *(const g4v_wanted *const *)b;
    return x->entry.begin < y->entry.begin ? -1 : x->entry.begin > y->entry.begin;
}

/* The wanted tensors held by file k, sorted by offset (*out g4v_malloc'ed). */
static int tensors_of_file(loader *L, int k, g4v_wanted ***out, size_t *n) {
    size_t cnt = 0;
    for (size_t i = 0; i < L->nw; i++)
        cnt += L->w[i].file == k;
    g4v_wanted **v = g4v_malloc_array(cnt, sizeof *v);
    if (!v) return g4v_fail(L->err, G4V_ERR_NOMEM, "out of memory");
    cnt = 0;
    for (size_t i = 0; i < L->nw; i++)
        if (L->w[i].file == k) v[cnt++] = &L->w[i];
    qsort(v, cnt, sizeof *v, cmp_by_begin);
    *out = v;
    *n = cnt;
    return G4V_OK;
}

static int check_overlap(loader *L, const g4v_st_file *f, int k) {
    g4v_wanted **v;
    size_t n;
    int st = tensors_of_file(L, k, &v, &n);
    if (st) return st;
    for (size_t i = 1; i < n && !st; i++)
        if (v[i]->entry.begin < v[i - 1]->entry.end)
            st = g4v_fail(L->err, G4V_ERR_MODEL,
                          "%s: the data of tensors %s [%llu, %llu) and %s [%llu, %llu) overlap",
                          f->path, v[i - 1]->name, (unsigned long long)v[i - 1]->entry.begin,
                          (unsigned long long)v[i - 1]->entry.end, v[i]->name,
                          (unsigned long long)v[i]->entry.begin,
                          (unsigned long long)v[i]->entry.end);
    g4v_free(v);
    return st;
}

static int shape_matches(const g4v_wanted *w) {
    const g4v_st_entry *e = &w->entry;
    if (w->ndim == 0 && e->ndim == 1 && e->shape[0] == 1) return 1; /* [1] scalar */
    if (e->ndim != w->ndim) return 0;
    for (int i = 0; i < e->ndim; i++)
        if (e->shape[i] != w->shape[i]) return 0;
    return 1;
}

static int match_entry(loader *L, g4v_st_file *f, int k, const cJSON *c) {
    int prefixed;
    g4v_wanted *w = g4v_wanted_find(L->w, L->nw, c->string, &prefixed);
    if (!w) return G4V_OK; /* not a vision tensor we use */
    if (w->file == k)
        return g4v_fail(L->err, G4V_ERR_MODEL,
                        "%s: tensor %s appears twice (with and without "
                        "the \"model.\" prefix, or under two spellings)",
                        f->path, w->name);
    if (w->file >= 0) return G4V_OK; /* an earlier file (the sidecar) already has it */
    int st = g4v_st_entry_parse(f, c, c->string, &w->entry, L->err);
    if (st) return st;
    if (!shape_matches(w)) {
        char want[160], found[200];
        g4v_shape_str(want, sizeof want, w->ndim, w->shape);
        g4v_shape_str(found, sizeof found, w->entry.ndim, w->entry.shape);
        return g4v_fail(L->err, G4V_ERR_MODEL,
                        "%s: tensor %s: expected shape %s (from config.json), found %s", f->path,
                        c->string, want, found);
    }
    w->file = k;
    w->prefixed = prefixed;
    return G4V_OK;
}

/* Opens path, records every wanted tensor it holds (not already found) and keeps the file open
 * if it holds any. */
static int match_file(loader *L, const char *path) {
    g4v_st_file f;
    int st = g4v_st_open(path, L->lim, &f, L->err);
    if (st) return st;
    int k = (int)L->nfiles;
    size_t matched = 0;
    for (const cJSON *c = f.header->child; c && !st; c = c->next) {
        if (!c->string || !strcmp(c->string, "__metadata__")) continue;
        st = match_entry(L, &f, k, c);
    }
    for (size_t i = 0; i < L->nw; i++)
        matched += L->w[i].file == k;
    if (!st && matched) st = check_overlap(L, &f, k);
    if (!st && matched) {
        g4v_st_file *grown = g4v_realloc(L->files, (L->nfiles + 1) * sizeof *grown);
        if (!grown)
            st = g4v_fail(L->err, G4V_ERR_NOMEM, "out of memory");
        else
            L->files = grown;
    }
    if (st || !matched) {
        for (size_t i = 0; i < L->nw; i++)
            if (L->w[i].file == k) L->w[i].file = -1;
        g4v_st_close(&f);
        return st;
    }
    g4v_st_release_header(&f);
    L->files[L->nfiles++] = f;
    return G4V_OK;
}

static int any_missing(const loader *L) {
    for (size_t i = 0; i < L->nw; i++)
        if (L->w[i].file < 0) return 1;
    return 0;
}

static int shard_name_ok(const char *s) {
    size_t n = strlen(s);
    return n > 0 && n < 256 && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

typedef struct shard_ref {
    const char *name;
    size_t at; /* position in the weight_map */
} shard_ref;

static int cmp_shard_ref(const void *a, const void *b) {
    const shard_ref *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* The distinct shard names of the n weight_map entries, in order of first appearance (*names,
 * pointing into the tree), and each entry's index in that list (*of_entry). Sorted, not searched
 * linearly: a linear search per entry is quadratic, minutes for an index naming 100,000 shards. */
static int distinct_shards(const cJSON *wm, size_t n, const char ***names, size_t *nnames,
                           size_t **of_entry, g4v_err *err) {
    shard_ref *r = g4v_malloc_array(n, sizeof *r);
    size_t *group = g4v_malloc_array(n, sizeof *group), *rank = g4v_malloc_array(n, sizeof *rank);
    size_t *sid = g4v_malloc_array(n, sizeof *sid);
    const char **out = g4v_malloc_array(n, sizeof *out);
    if (!r || !group || !rank || !sid || !out) {
        g4v_free(r);
        g4v_free(group);
        g4v_free(rank);
        g4v_free(sid);
        g4v_free(out);
        return g4v_fail(err, G4V_ERR_NOMEM, "out of memory");
    }
    size_t i = 0;
    for (const cJSON *c = wm->child; c && i < n; c = c->next, i++)
        r[i] = (shard_ref){c->valuestring, i};
    qsort(r, n, sizeof *r, cmp_shard_ref);
    size_t ngroups = 0;
    for (i = 0; i < n; i++) {
        if (i && strcmp(r[i - 1].name, r[i].name)) ngroups++;
        group[r[i].at] = ngroups;
    }
    for (i = 0; i < n; i++) rank[i] = SIZE_MAX;
    size_t k = 0;
    i = 0; /* in entry order: first appearance decides a shard's index */
    for (const cJSON *c = wm->child; c && i < n; c = c->next, i++) {
        size_t g = group[i];
        if (rank[g] == SIZE_MAX) {
            rank[g] = k;
            out[k++] = c->valuestring;
        }
        sid[i] = rank[g];
    }
    g4v_free(r);
    g4v_free(group);
    g4v_free(rank);
    *names = out;
    *nnames = k;
    *of_entry = sid;
    return G4V_OK;
}

/* Looks the missing tensors up in the index's weight_map and matches the shards that hold them. */
static int load_shards(loader *L, const char *index_path) {
    cJSON *idx;
    int st = g4v_json_load(index_path, L->lim->max_config_bytes, &idx, L->err);
    if (st) return st;
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(idx, "weight_map");
    if (!cJSON_IsObject(wm)) {
        cJSON_Delete(idx);
        return g4v_fail(L->err, G4V_ERR_MODEL, "%s: no weight_map object", index_path);
    }
    size_t n = 0;
    for (const cJSON *c = wm->child; c && !st; c = c->next, n++)
        if (!cJSON_IsString(c) || !shard_name_ok(c->valuestring))
            st = g4v_fail(L->err, G4V_ERR_MODEL,
                          "%s: weight_map entry for %s is not a plain file "
                          "name in this directory",
                          index_path, c->string ? c->string : "?");
    /* Distinct shard names, pointing into the cJSON tree. */
    const char **shards = NULL;
    size_t nshards = 0, *sid = NULL;
    if (!st) st = distinct_shards(wm, n, &shards, &nshards, &sid, L->err);
    size_t i = 0;
    for (const cJSON *c = wm->child; c && !st; c = c->next, i++) {
        int prefixed;
        g4v_wanted *w = g4v_wanted_find(L->w, L->nw, c->string, &prefixed);
        if (w && w->file < 0 && w->shard < 0) w->shard = (int)sid[i];
    }
    g4v_free(sid);
    L->shards_total = (int)nshards;
    for (size_t s = 0; s < nshards && !st; s++) {
        const char *example = NULL;
        for (size_t i = 0; i < L->nw && !example; i++)
            if (L->w[i].shard == (int)s && L->w[i].file < 0) example = L->w[i].name;
        if (!example) continue; /* no vision tensor there: never opened */
        char path[4096];
        if ((st = g4v_path_join(path, sizeof path, L->dir, shards[s], L->err))) break;
        if (!g4v_is_file(path)) {
            st = g4v_fail(L->err, G4V_ERR_IO,
                          "%s: shard %s named in %s (for tensor %s, ...) is "
                          "missing",
                          L->dir, shards[s], INDEX_NAME, example);
            break;
        }
        size_t before = L->nfiles;
        st = match_file(L, path);
        L->shards_used += L->nfiles > before;
    }
    if (!st)
        for (size_t i = 0; i < L->nw && !st; i++)
            if (L->w[i].file < 0 && L->w[i].shard >= 0)
                st = g4v_fail(L->err, G4V_ERR_MODEL,
                              "%s: missing tensor %s: %s places it in %s, "
                              "which does not hold it",
                              L->dir, L->w[i].name, INDEX_NAME, shards[L->w[i].shard]);
    g4v_free(shards);
    cJSON_Delete(idx);
    return st;
}

static int report_missing(loader *L, const char *where) {
    int prefixed = 0;
    for (size_t i = 0; i < L->nw; i++)
        prefixed |= L->w[i].file >= 0 && L->w[i].prefixed;
    for (size_t i = 0; i < L->nw; i++)
        if (L->w[i].file < 0)
            return g4v_fail(L->err, G4V_ERR_MODEL, "%s: missing tensor %s%s (looked in %s)", L->dir,
                            prefixed ? "model." : "", L->w[i].name, where);
    return G4V_OK;
}

static void append(char *buf, size_t cap, const char *s) {
    size_t n = strlen(buf), m = strlen(s);
    if (n + 1 >= cap) return;
    if (m > cap - n - 1) m = cap - n - 1;
    memcpy(buf + n, s, m);
    buf[n + m] = '\0';
}

/* Where a checkpoint directory's vision tensors can be, in the order they are looked for. A row
 * marked `rest` is read only for tensors still missing after the rows above it, and only the first
 * such row present is read (a sharded checkpoint has an index and no single file). */
typedef struct weight_file {
    const char *name;
    int (*read)(loader *L, const char *path); /* matches the tensors the file holds */
    int rest;
} weight_file;

static const weight_file weight_files[] = {
    {SIDECAR_NAME, match_file, 0}, /* an mlx-bun sidecar: the vision tensors alone */
    {INDEX_NAME, load_shards, 1},  /* sharded: the shards its weight_map names */
    {SINGLE_NAME, match_file, 1},  /* the whole model in one file */
};
#define N_WEIGHT_FILES (sizeof weight_files / sizeof weight_files[0])

static int discover(loader *L) {
    char path[N_WEIGHT_FILES][4096];
    int present[N_WEIGHT_FILES], any = 0, st = G4V_OK;
    for (size_t r = 0; r < N_WEIGHT_FILES && !st; r++) {
        st = g4v_path_join(path[r], sizeof path[r], L->dir, weight_files[r].name, L->err);
        any |= present[r] = !st && g4v_is_file(path[r]);
    }
    if (st) return st;
    if (!any)
        return g4v_fail(L->err, G4V_ERR_IO, "%s: no weights: expected %s, %s or %s", L->dir,
                        SINGLE_NAME, INDEX_NAME, SIDECAR_NAME);
    char where[256] = "";
    int rest_read = 0;
    for (size_t r = 0; r < N_WEIGHT_FILES; r++) {
        const weight_file *wf = &weight_files[r];
        if (!present[r] || (wf->rest && (rest_read || !any_missing(L)))) continue;
        rest_read |= wf->rest;
        append(where, sizeof where, *where ? ", " : "");
        append(where, sizeof where, wf->name);
        if ((st = wf->read(L, path[r]))) return st;
    }
    if ((st = report_missing(L, where))) return st;

    char *src = L->ck->source;
    src[0] = '\0';
    for (size_t i = 0; i < L->nfiles; i++) {
        if (i) append(src, sizeof L->ck->source, ", ");
        append(src, sizeof L->ck->source, base_name(L->files[i].path));
    }
    if (L->shards_total) {
        char note[128];
        snprintf(note, sizeof note, " (%d of %d shards, via %s)", L->shards_used,
                 L->shards_total, INDEX_NAME);
        append(src, sizeof L->ck->source, note);
    }
    return G4V_OK;
}

static int map_all(loader *L) {
    struct g4v_checkpoint_files *F = L->ck->files;
    int st = G4V_OK;
    for (size_t k = 0; k < L->nfiles && !st; k++) {
        g4v_wanted **v;
        size_t n;
        if ((st = tensors_of_file(L, (int)k, &v, &n))) break;
        uint64_t *b = g4v_malloc_array(n, sizeof *b), *e = g4v_malloc_array(n, sizeof *e);
        const void **p = g4v_malloc_array(n, sizeof *p);
        if (!b || !e || !p) st = g4v_fail(L->err, G4V_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < n && !st; i++) {
            b[i] = v[i]->entry.begin;
            e[i] = v[i]->entry.end;
        }
        if (!st)
            st = g4v_st_map_ranges(&L->files[k], n, b, e, G4V_CHECKPOINT_MERGE_GAP, p, &F->maps,
                                   &F->nmaps, L->err);
        for (size_t i = 0; i < n && !st; i++) {
            g4v_tensor *t = v[i]->dst;
            const g4v_st_entry *en = &v[i]->entry;
            t->dtype = en->dtype;
            t->ndim = en->ndim;
            for (int j = 0; j < en->ndim; j++)
                t->shape[j] = en->shape[j];
            t->data = p[i];
            t->nbytes = (size_t)(en->end - en->begin);
        }
        g4v_free(b);
        g4v_free(e);
        g4v_free(p);
        g4v_free(v);
    }
    return st;
}

static void summarize(loader *L) {
    g4v_checkpoint *ck = L->ck;
    int pre = 0, plain = 0;
    ck->param_count = 0;
    ck->weight_bytes = 0;
    for (size_t i = 0; i < L->nw; i++) {
        const g4v_tensor *t = L->w[i].dst;
        ck->param_count += (int64_t)(t->nbytes / g4v_dtype_size(t->dtype));
        ck->weight_bytes += t->nbytes;
        if (L->w[i].prefixed)
            pre = 1;
        else
            plain = 1;
    }
    snprintf(ck->naming, sizeof ck->naming, "%s", pre && plain ? "mixed" : pre ? "hf" : "mlx");
}

static int load_config(const char *dir, const g4v_checkpoint_limits *lim, g4v_vision_config *cfg,
                       g4v_err *err) {
    char path[4096];
    cJSON *root;
    int st = g4v_path_join(path, sizeof path, dir, "config.json", err);
    if (!st) st = g4v_json_load(path, lim->max_config_bytes, &root, err);
    if (st) return st;
    st = g4v_config_parse(root, path, cfg, err);
    if (!st) st = g4v_budget_defaults_read(dir, root, path, lim->max_config_bytes, cfg, err);
    cJSON_Delete(root);
    return st;
}

int g4v_safetensors_dir_load(const char *dir, const g4v_checkpoint_limits *lim,
                             g4v_checkpoint *ck, g4v_err *err) {
    g4v_checkpoint_limits deflim;
    if (!lim) {
        g4v_checkpoint_limits_default(&deflim);
        lim = &deflim;
    }
    loader L = {.dir = dir, .lim = lim, .ck = ck, .err = err};
    int st = load_config(dir, lim, &ck->cfg, err);
    const g4v_vision_config *cfg = &ck->cfg;
    if (!st) st = g4v_checkpoint_alloc_parts(ck, err);
    if (!st) st = g4v_wanted_build(cfg, ck, ck->files->clips, &L.w, &L.nw, err);
    if (!st) {
        ck->files->wanted = L.w;
        ck->files->nwanted = L.nw;
        st = discover(&L);
    }
    if (!st) st = map_all(&L);
    if (!st) st = g4v_checkpoint_decode_clips(ck, dir, err);
    if (!st) summarize(&L);
    for (size_t i = 0; i < L.nfiles; i++)
        g4v_st_close(&L.files[i]);
    g4v_free(L.files);
    return st;
}
