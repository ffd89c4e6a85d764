/* model_source.c - g4v_checkpoint_open (model_source.h): which source a model path is, as the
 * rows of one table, and the loader that row names. The rows only look at the path (its kind,
 * its first bytes, the names in the directory); the loaders read the model.
 */
#include "io/model_source.h"

#include "base/alloc.h"
#include "io/fsutil.h"
#include "io/mmproj_gguf.h"
#include "io/safetensors_dir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define PATH_CAP 4096

/* What a row says about a path: G4V_OK with *claims 1 (and the file to load in file) or 0, or an
 * error that ends the search (a path that is the row's source but cannot be used). */
typedef int claim_fn(const char *path, const struct stat *st, int *claims, char *file, size_t cap,
                     g4v_err *err);
typedef int load_fn(const char *file, const g4v_checkpoint_limits *lim, g4v_checkpoint *ck,
                    g4v_err *err);

typedef struct model_source {
    claim_fn *claim;
    load_fn *load;
} model_source;

/* A regular file given as the model must be a GGUF; anything else keeps the old message. */
static int claim_gguf_file(const char *path, const struct stat *st, int *claims, char *file,
                           size_t cap, g4v_err *err) {
    if (!S_ISREG(st->st_mode)) return G4V_OK;
    int fd;
    uint64_t size;
    int s = g4v_open_regular(path, &fd, &size, err);
    if (s) return s;
    unsigned char m[4] = {0};
    int ok = size >= 4 && !g4v_pread_full(fd, m, 4, 0, path, NULL) && !memcmp(m, "GGUF", 4);
    g4v_close_fd(fd);
    if (!ok)
        return g4v_fail(err, G4V_ERR_IO,
                        "model %s: not a directory (a checkpoint) or an mmproj GGUF file", path);
    *claims = 1;
    snprintf(file, cap, "%s", path);
    return G4V_OK;
}

static int is_mmproj_name(const char *s) {
    size_t n = strlen(s);
    return n > 11 && !strncasecmp(s, "mmproj", 6) && !strcasecmp(s + n - 5, ".gguf");
}

static int has_config(const char *dir, g4v_err *err, int *has) {
    char p[PATH_CAP];
    int st = g4v_path_join(p, sizeof p, dir, "config.json", err);
    *has = !st && g4v_is_file(p);
    return st;
}

/* A directory without config.json: its one mmproj*.gguf (case-insensitive); several: G4V_ERR_IO
 * naming two of them (the caller must pick). */
static int claim_gguf_folder(const char *dir, const struct stat *st, int *claims, char *file,
                             size_t cap, g4v_err *err) {
    int cfg = 0, s;
    if (!S_ISDIR(st->st_mode)) return G4V_OK;
    if ((s = has_config(dir, err, &cfg)) || cfg) return s;
    DIR *d = opendir(dir);
    if (!d) return g4v_fail(err, G4V_ERR_IO, "model directory %s: %s", dir, strerror(errno));
    char first[256] = "";
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_mmproj_name(e->d_name) || strlen(e->d_name) >= sizeof first) continue;
        char p[PATH_CAP];
        if (g4v_path_join(p, sizeof p, dir, e->d_name, NULL) || !g4v_is_file(p)) continue;
        if (n++ == 0) {
            snprintf(first, sizeof first, "%s", e->d_name);
            continue;
        }
        s = g4v_fail(err, G4V_ERR_IO,
                     "model directory %s has no config.json and several mmproj GGUF files "
                     "(%s, %s, ...): pass the one to use as the model path",
                     dir, first, e->d_name);
        break;
    }
    closedir(d);
    if (s || !n) return s;
    *claims = 1;
    return g4v_path_join(file, cap, dir, first, err);
}

/* Any other directory is read as a checkpoint directory (its messages say what is missing). */
static int claim_checkpoint_dir(const char *dir, const struct stat *st, int *claims, char *file,
                                size_t cap, g4v_err *err) {
    if (!S_ISDIR(st->st_mode)) return G4V_OK;
    if (snprintf(file, cap, "%s", dir) >= (int)cap)
        return g4v_fail(err, G4V_ERR_IO, "model directory %s: path too long", dir);
    *claims = 1;
    return G4V_OK;
}

/* The sources, in the order they are tried. */
static const model_source sources[] = {
    {claim_gguf_file, g4v_mmproj_gguf_load},              /* an mmproj GGUF file */
    {claim_gguf_folder, g4v_mmproj_gguf_load},            /* a folder with one mmproj GGUF */
    {claim_checkpoint_dir, g4v_safetensors_dir_load},     /* config.json + safetensors */
};

int g4v_checkpoint_open(const char *path, const g4v_checkpoint_limits *lim, g4v_checkpoint **out,
                        g4v_err *err) {
    g4v_err_clear(err);
    if (!out) return g4v_fail(err, G4V_ERR_ARG, "g4v_checkpoint_open: out is NULL");
    *out = NULL;
    if (!path || !*path) return g4v_fail(err, G4V_ERR_ARG, "g4v_checkpoint_open: no directory");
    g4v_checkpoint_limits deflim;
    if (!lim) {
        g4v_checkpoint_limits_default(&deflim);
        lim = &deflim;
    }
    struct stat sb;
    if (stat(path, &sb) != 0)
        return g4v_fail(err, G4V_ERR_IO, "model directory %s: %s", path, strerror(errno));
    const model_source *src = NULL;
    char file[PATH_CAP];
    for (size_t i = 0; i < sizeof sources / sizeof sources[0] && !src; i++) {
        int claims = 0, st = sources[i].claim(path, &sb, &claims, file, sizeof file, err);
        if (st) return st;
        if (claims) src = &sources[i];
    }
    if (!src)
        return g4v_fail(err, G4V_ERR_IO, "model %s: not a directory or a regular file", path);
    g4v_checkpoint *ck = g4v_calloc(1, sizeof *ck);
    if (!ck) return g4v_fail(err, G4V_ERR_NOMEM, "out of memory");
    int st = src->load(file, lim, ck, err);
    if (st) {
        g4v_checkpoint_close(ck);
        return st;
    }
    *out = ck;
    return G4V_OK;
}
