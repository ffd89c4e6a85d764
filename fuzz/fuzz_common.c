/* fuzz_common.c - scratch directory, file helpers and failure checks for the harnesses. */
#define _GNU_SOURCE /* mkdtemp */
#include "fuzz_common.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef G4V_FUZZ_DATA_DIR
#error "G4V_FUZZ_DATA_DIR (fuzz/data) must be defined by the build"
#endif
#ifndef G4V_FUZZ_MODEL_DIR
#define G4V_FUZZ_MODEL_DIR ""
#endif

static char workdir[512];

void fz_die(const char *file, int line, const char *cond, const char *fmt, ...) {
    fprintf(stderr, "%s:%d: FUZZ INVARIANT BROKEN: %s: ", file, line, cond);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* Removes the files the harnesses wrote (one level: they only write plain files). */
static void cleanup(void) {
    DIR *d = opendir(workdir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", workdir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(workdir);
}

const char *fz_workdir(void) {
    if (workdir[0]) return workdir;
    const char *base = getenv("G4V_FUZZ_TMP");
    if (!base || !*base) base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(workdir, sizeof workdir, "%s/g4v-fuzz-XXXXXX", base);
    if (!mkdtemp(workdir)) {
        perror(workdir);
        abort();
    }
    atexit(cleanup);
    return workdir;
}

void fz_path(char *out, size_t cap, const char *dir, const char *name) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) {
        fprintf(stderr, "fuzz: path too long: %s/%s\n", dir, name);
        abort();
    }
}

void fz_write(const char *dir, const char *name, const void *data, size_t n) {
    char p[1024];
    fz_path(p, sizeof p, dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const char *b = data;
    while (fd >= 0 && n) {
        ssize_t k = write(fd, b, n);
        if (k <= 0) break;
        b += k, n -= (size_t)k;
    }
    if (fd < 0 || n || close(fd) != 0) {
        perror(p);
        abort();
    }
}

void fz_copy_data(const char *sub, const char *name, const char *dir) {
    char src[1024];
    const char *root = getenv("G4V_FUZZ_DATA");
    snprintf(src, sizeof src, "%s/%s/%s", root && *root ? root : G4V_FUZZ_DATA_DIR, sub, name);
    FILE *f = fopen(src, "rb");
    if (!f) {
        perror(src);
        abort();
    }
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (n == sizeof buf) {
        fprintf(stderr, "fuzz: %s is larger than %zu bytes\n", src, sizeof buf);
        abort();
    }
    fz_write(dir, name, buf, n);
}

const char *fz_model_dir(void) {
    const char *m = getenv("G4V_FUZZ_MODEL");
    return m && *m ? m : G4V_FUZZ_MODEL_DIR;
}

/* External linkage: the compiler cannot prove the reads unused and drop them. */
volatile unsigned char fz_touch_sink;

void fz_touch(const void *p, size_t n) {
    const volatile unsigned char *b = p;
    unsigned char acc = 0;
    for (size_t i = 0; i < n; i++) acc ^= b[i];
    fz_touch_sink = acc;
}

void fz_check_failure(int status, const g4v_err *err, const char *what) {
    FZ_ASSERT(status > G4V_OK && status < G4V_ERR_INTERNAL, "%s: status %d (%s): %s", what, status,
              g4v_status_name(status), err->msg);
    FZ_ASSERT(err->status == status, "%s: returned %s but err says %s", what,
              g4v_status_name(status), g4v_status_name(err->status));
    FZ_ASSERT(err->msg[0] != '\0', "%s: %s without a message", what, g4v_status_name(status));
    FZ_ASSERT(memchr(err->msg, '\0', sizeof err->msg) != NULL, "%s: unterminated message", what);
}
