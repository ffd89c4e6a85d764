/* hub_fs.c - the Hub client's file helpers (hub_internal.h): the two caches' folders, mkdir -p,
 * files written under a temporary name and renamed, safe repo paths, the disk-full message. */
#define _GNU_SOURCE
#include "hub_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int hub_fmt(char *out, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int hub_mkdirs(const char *path) {
    char p[HUB_PATH_MAX];
    if (hub_fmt(p, sizeof p, "%s", path)) return errno = ENAMETOOLONG, -1;
    for (char *c = p + 1;; c++) {
        if (*c != '/' && *c) continue;
        char keep = *c;
        *c = 0;
        struct stat st;
        if (stat(p, &st) == 0) {
            if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
        } else if (mkdir(p, 0755) && errno != EEXIST) {
            return -1;
        }
        if (!keep) return 0;
        *c = keep;
    }
}

void hub_rmtree(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[HUB_PATH_MAX];
            if (hub_fmt(p, sizeof p, "%s/%s", path, e->d_name)) continue;
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) hub_rmtree(p);
            else unlink(p);
        }
        closedir(d);
    }
    rmdir(path);
}

int hub_write_atomic(const char *path, const void *data, size_t n) {
    char tmp[HUB_PATH_MAX];
    if (hub_fmt(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid())) return errno = ENAMETOOLONG, -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    const char *p = data;
    size_t left = n;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = errno ? errno : EIO;
            close(fd);
            unlink(tmp);
            return errno = e, -1;
        }
        p += w;
        left -= (size_t)w;
    }
    if (close(fd) || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return errno = e, -1;
    }
    return 0;
}

int hub_disk_error(const char *path, const char *what, char *err, size_t ecap) {
    int e = errno;
    if (e == ENOSPC || e == EDQUOT || e == EFBIG)
        snprintf(err, ecap, "%s %s: the disk is full%s (free space there, or point HF_HUB_CACHE / "
                 "G4V_HUB_CACHE elsewhere, then run the command again: it resumes)", what, path,
                 e == EFBIG ? " or the file size limit is reached" : "");
    else
        snprintf(err, ecap, "%s %s: %s", what, path, strerror(e));
    return HUB_ERR_DISK;
}

int hub_path_safe(const char *p) {
    size_t n = strlen(p);
    if (!n || n > 1024 || p[0] == '/') return 0;
    for (const char *c = p; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '\\' || *c == ':') return 0;
    const char *s = p;
    for (;;) {
        const char *sl = strchr(s, '/');
        size_t k = sl ? (size_t)(sl - s) : strlen(s);
        if (k == 0 || (k == 1 && s[0] == '.') || (k == 2 && s[0] == '.' && s[1] == '.')) return 0;
        if (!sl) return 1;
        s = sl + 1;
    }
}

int hub_g4v_cache(char *out, size_t cap) {
    const char *e;
    if ((e = getenv("G4V_HUB_CACHE")) && *e) return hub_fmt(out, cap, "%s", e);
    if ((e = getenv("XDG_CACHE_HOME")) && *e) return hub_fmt(out, cap, "%s/g4v/hub", e);
    if ((e = getenv("HOME")) && *e) return hub_fmt(out, cap, "%s/.cache/g4v/hub", e);
    return -1;
}

int hub_hf_cache(char *out, size_t cap) {
    const char *e;
    if ((e = getenv("HF_HUB_CACHE")) && *e) return hub_fmt(out, cap, "%s", e);
    if ((e = getenv("HF_HOME")) && *e) return hub_fmt(out, cap, "%s/hub", e);
    if ((e = getenv("XDG_CACHE_HOME")) && *e) return hub_fmt(out, cap, "%s/huggingface/hub", e);
    if ((e = getenv("HOME")) && *e) return hub_fmt(out, cap, "%s/.cache/huggingface/hub", e);
    return -1;
}

int hub_is_commit(const char *s) {
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) return 0;
    return n == 40;
}
