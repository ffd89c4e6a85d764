/* inputs.c - IMAGE argument expansion for `g4v encode` (see inputs.h). */
#include "inputs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define MAX_INPUTS 10000000

static int push(input_list *l, const char *p) {
    if (l->count == l->cap) {
        if (l->cap >= MAX_INPUTS) {
            fprintf(stderr, "g4v encode: more than %d images\n", MAX_INPUTS);
            return -1;
        }
        int cap = l->cap ? l->cap * 2 : 16;
        char **np = realloc(l->paths, (size_t)cap * sizeof *np);
        if (!np) goto oom;
        l->paths = np;
        l->cap = cap;
    }
    if (!(l->paths[l->count] = strdup(p))) goto oom;
    l->count++;
    return 0;
oom:
    fprintf(stderr, "g4v encode: out of memory listing inputs\n");
    return -1;
}

static int has_image_ext(const char *name) {
    static const char *exts[] = {".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp", ".tif", ".tiff",
                                 ".npy",
                                 /* videos */ ".mp4", ".mov", ".m4v", ".mkv", ".webm", ".avi"};
    const char *dot = strrchr(name, '.');
    if (!dot) return 0;
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
        if (!strcasecmp(dot, exts[i])) return 1;
    return 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_dir(input_list *l, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "g4v encode: cannot list %s: %s\n", dir, strerror(errno));
        return -1;
    }
    int first = l->count, rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] == '.' || !has_image_ext(e->d_name)) continue;
        size_t n = strlen(dir) + strlen(e->d_name) + 2;
        char *p = malloc(n);
        if (!p) {
            rc = -1;
            break;
        }
        snprintf(p, n, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", e->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) rc = push(l, p);
        free(p);
    }
    closedir(d);
    if (!rc && l->count == first) fprintf(stderr, "g4v encode: warning: no images in %s\n", dir);
    qsort(l->paths + first, (size_t)(l->count - first), sizeof *l->paths, cmp_str);
    return rc;
}

static int add_list(input_list *l, const char *file) {
    FILE *f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "g4v encode: cannot open list %s: %s\n", file, strerror(errno));
        return -1;
    }
    char line[8192];
    int rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (!n || line[0] == '#') continue;
        rc = push(l, line);
    }
    fclose(f);
    return rc;
}

int inputs_add(input_list *l, const char *arg) {
    if (arg[0] == '@') return add_list(l, arg + 1);
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) return add_dir(l, arg);
    return push(l, arg); /* missing files are reported when encoded, like any bad image */
}

void inputs_free(input_list *l) {
    for (int i = 0; i < l->count; i++) free(l->paths[i]);
    free(l->paths);
    memset(l, 0, sizeof *l);
}
