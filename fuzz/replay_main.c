/* replay_main.c - runs a fuzz harness over files and directories of inputs, without libFuzzer.
 *
 *     fuzz_<target>_replay DIR_OR_FILE...
 *
 * Linked with a harness (fuzz_<target>.c) in the ordinary build (gcc or clang, with or without
 * sanitizers), this is how ctest replays the seed corpus and every committed regression input:
 * a crash, a sanitizer report or a broken invariant fails the test. Directories are read one
 * level deep, in name order; names starting with '.' and README files are skipped; a missing
 * directory counts as empty (a target may have no regressions yet). Each input is copied into a
 * buffer of exactly its size, so reading past the end is caught by ASan as under libFuzzer.
 * Under ASan a single allocation above 512 MB is a failure, as libFuzzer's -malloc_limit_mb is
 * in run_fuzz.sh (the harnesses allow images of 262,144 pixels: nothing legitimate comes near).
 */
#include "fuzz_common.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* Read by the ASan runtime at start-up (ignored without ASan); ASAN_OPTIONS still overrides. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "max_allocation_size_mb=512"; }

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    size_t k;
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            unsigned char *g = realloc(buf, cap *= 2);
            if (!g) free(buf);
            buf = g;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: %s: out of memory\n", path);
        return -1;
    }
    unsigned char *exact = malloc(n ? n : 1); /* exactly n bytes: overreads hit the redzone */
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    LLVMFuzzerTestOneInput(exact, n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (getenv("G4V_REPLAY_VERBOSE")) printf("  %-60s %8zu bytes %8.2f ms\n", path, n, ms);
    free(exact);
    return 0;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, int *count) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !strncmp(e->d_name, "README", 6)) continue;
        if (n == cap) {
            char **g = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
            if (!g) break;
            names = g;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    int st = 0;
    for (size_t i = 0; i < n; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        struct stat s;
        if (stat(p, &s) == 0 && S_ISREG(s.st_mode)) {
            if (run_file(p)) st = -1;
            else (*count)++;
        }
        free(names[i]);
    }
    free(names);
    return st;
}

int main(int argc, char **argv) {
    int count = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat s;
        if (stat(argv[i], &s) == 0 && S_ISREG(s.st_mode)) {
            bad |= run_file(argv[i]) != 0;
            count += 1;
        } else {
            bad |= run_dir(argv[i], &count) != 0;
        }
    }
    printf("replay: %d inputs ran without a crash or broken invariant\n", count);
    if (count == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    return bad ? 1 : 0;
}
