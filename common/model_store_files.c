/* model_store_files.c - the file-system pieces the store readers share: file tests, sorted
 * directory listings, case-insensitive lookups (users type google/gemma-4-e4b-it for
 * google/gemma-4-E4B-it), names that say Gemma 4, repo ids, and picking the text GGUF and the
 * mmproj of a folder of GGUF files by quantization tag, as llama.cpp's -hf REPO:QUANT does. */
#define _GNU_SOURCE
#include "model_store_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

int ms_is_dir(const char *p) {
    struct stat st;
    return p && *p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int ms_is_file(const char *p) {
    struct stat st;
    return p && *p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

uint64_t ms_file_size(const char *p) {
    struct stat st;
    return p && *p && stat(p, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
}

int ms_fmt(char *out, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int ms_msg(char *out, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    return n;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int ms_names(const char *dir, char ***names, int *n) {
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return -1;
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char **v = realloc(*names, (size_t)cap * sizeof *v);
            if (!v) break;
            *names = v;
        }
        if (!((*names)[*n] = strdup(e->d_name))) break;
        (*n)++;
    }
    closedir(d);
    if (*n) qsort(*names, (size_t)*n, sizeof **names, by_name);
    return 0;
}

void ms_names_free(char **names, int n) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

int ms_find_ci(const char *dir, const char *name, char *out, size_t cap) {
    if (ms_fmt(out, cap, "%s/%s", dir, name)) return 0;
    struct stat st;
    if (lstat(out, &st) == 0) return 1;
    char **v;
    int n, found = 0;
    if (ms_names(dir, &v, &n)) return 0;
    for (int i = 0; i < n && !found; i++)
        if (!strcasecmp(v[i], name)) found = !ms_fmt(out, cap, "%s/%s", dir, v[i]);
    ms_names_free(v, n);
    return found;
}

int ms_name_is_gemma4(const char *name) {
    for (const char *s = name; *s; s++) {
        if (strncasecmp(s, "gemma", 5)) continue;
        const char *t = s + 5;
        if (*t == '-' || *t == '_' || *t == '.') t++;
        if (*t == '4' && !isdigit((unsigned char)t[1])) return 1;
    }
    return 0;
}

static int id_part(const char *s, size_t n) {
    if (!n || s[0] == '.' || s[0] == '-') return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i])) return 0;
    return !(n == 2 && s[0] == '.' && s[1] == '.');
}

int ms_parse_repo_id(const char *v, char *org, size_t ocap, char *name, size_t ncap, char *quant,
                     size_t qcap) {
    const char *slash = strchr(v, '/');
    if (!slash || strchr(slash + 1, '/')) return 0;
    const char *colon = strchr(slash + 1, ':');
    size_t on = (size_t)(slash - v), nn = colon ? (size_t)(colon - slash - 1) : strlen(slash + 1);
    if (!id_part(v, on) || !id_part(slash + 1, nn) || on >= ocap || nn >= ncap) return 0;
    if (colon && (!id_part(colon + 1, strlen(colon + 1)) || strlen(colon + 1) >= qcap)) return 0;
    memcpy(org, v, on);
    org[on] = 0;
    memcpy(name, slash + 1, nn);
    name[nn] = 0;
    ms_msg(quant, qcap, "%s", colon ? colon + 1 : "");
    return 1;
}

static int has_suffix_ci(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcasecmp(s + n - m, suf);
}

static int is_mmproj_name(const char *s) {
    return strcasestr(s, "mmproj") != NULL;
}

/* "x-00002-of-00003.gguf": a later part of a split model (llama.cpp loads from the first). */
static int is_later_split(const char *s) {
    const char *of = strstr(s, "-of-");
    if (!of || of - s < 6) return 0;
    const char *p = of - 5;
    if (p[-1] != '-') return 0;
    for (int i = 0; i < 5; i++)
        if (!isdigit((unsigned char)p[i])) return 0;
    return strncmp(p, "00001", 5) != 0;
}

void ms_quant_of(const char *file, char *out, size_t cap) {
    char stem[512];
    ms_msg(stem, sizeof stem, "%s", file);
    size_t n = strlen(stem);
    if (n > 5 && !strcasecmp(stem + n - 5, ".gguf")) stem[n -= 5] = 0;
    char *of = strstr(stem, "-of-"); /* a split's "-00001-of-00003" */
    if (of && of - stem > 6 && of[-6] == '-') of[-6] = 0;
    char *cut = strrchr(stem, '-'), *dot = strrchr(stem, '.');
    if (dot > cut) cut = dot;
    ms_msg(out, cap, "%s", cut ? cut + 1 : stem);
}

/* The quant tag appears in file as a whole word: Q4_K does not pick Q4_K_M. */
static int has_quant(const char *file, const char *quant) {
    char q[128];
    ms_quant_of(file, q, sizeof q);
    if (!strcasecmp(q, quant)) return 1;
    size_t m = strlen(quant);
    for (const char *s = strcasestr(file, quant); s; s = strcasestr(s + 1, quant)) {
        int before = s == file || strchr("-._", s[-1]);
        int after = s[m] == '.' || s[m] == '-';
        if (before && after) return 1;
    }
    return 0;
}

int ms_gguf_folder_texts(const char *dir, char ***names, int *n) {
    char **v;
    int k = 0;
    if (ms_names(dir, &v, n)) return -1;
    for (int i = 0; i < *n; i++) {
        char path[MS_PATH_MAX];
        int keep = has_suffix_ci(v[i], ".gguf") && !is_mmproj_name(v[i]) &&
                   !is_later_split(v[i]) && !ms_fmt(path, sizeof path, "%s/%s", dir, v[i]);
        if (keep)
            v[k++] = v[i];
        else
            free(v[i]);
    }
    *n = k;
    *names = v;
    return 0;
}

/* The mmproj of a folder: an F16 one first (llama.cpp's own conversions ship F16), then BF16,
 * F32, Q8_0, then the first by name. */
static void pick_mmproj(const char *dir, char *out, size_t cap) {
    static const char *pref[] = {"f16", "bf16", "f32", "q8_0", ""};
    char **v;
    int n;
    out[0] = 0;
    if (ms_names(dir, &v, &n)) return;
    for (size_t p = 0; p < sizeof pref / sizeof pref[0] && !out[0]; p++)
        for (int i = 0; i < n && !out[0]; i++)
            if (has_suffix_ci(v[i], ".gguf") && is_mmproj_name(v[i]) &&
                (!pref[p][0] || has_quant(v[i], pref[p])))
                ms_fmt(out, cap, "%s/%s", dir, v[i]);
    ms_names_free(v, n);
}

int ms_gguf_folder_pick(const char *dir, const char *quant, char *text, size_t tcap,
                        char *mmproj, size_t mcap, char *err, size_t ecap) {
    char **v;
    int n;
    text[0] = 0;
    pick_mmproj(dir, mmproj, mcap);
    if (ms_gguf_folder_texts(dir, &v, &n)) {
        ms_msg(err, ecap, "cannot read the folder %s", dir);
        return -1;
    }
    int pick = -1;
    if (quant && *quant) {
        for (int i = 0; i < n && pick < 0; i++)
            if (has_quant(v[i], quant)) pick = i;
    } else if (n == 1) {
        pick = 0;
    } else {
        for (int i = 0; i < n && pick < 0; i++) /* llama.cpp -hf's default tag */
            if (has_quant(v[i], "Q4_K_M")) pick = i;
        if (pick < 0 && n) pick = 0;
    }
    if (pick >= 0) {
        ms_fmt(text, tcap, "%s/%s", dir, v[pick]);
    } else if (quant && *quant) {
        size_t o = (size_t)ms_msg(err, ecap, "no text GGUF tagged %s in %s (there: ", quant,
                                  dir);
        for (int i = 0; i < n && o < ecap; i++) {
            char q[128];
            ms_quant_of(v[i], q, sizeof q);
            o += (size_t)ms_msg(err + o, ecap - o, "%s%s", i ? ", " : "", q);
        }
        if (o < ecap) ms_msg(err + o, ecap - o, "%s)", n ? "" : "none");
        ms_names_free(v, n);
        return -1;
    }
    ms_names_free(v, n);
    return 0;
}

int ms_list_push(ms_list *l, const ms_model *m) {
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        ms_model *v = realloc(l->items, (size_t)cap * sizeof *v);
        if (!v) return -1;
        l->items = v;
        l->cap = cap;
    }
    l->items[l->count++] = *m;
    return 0;
}

void ms_list_free(ms_list *l) {
    free(l->items);
    l->items = NULL;
    l->count = l->cap = 0;
}
