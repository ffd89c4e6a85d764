/* fsutil.c - open/read/stat helpers with specific messages (see fsutil.h). */
#include "io/fsutil.h"

#include "base/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int g4v_open_regular(const char *path, int *fd, uint64_t *size, g4v_err *err) {
    *fd = -1;
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0) return g4v_fail(err, G4V_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        int e = errno;
        close(f);
        return g4v_fail(err, G4V_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return g4v_fail(err, G4V_ERR_IO, "%s: not a regular file", path);
    }
    *fd = f;
    *size = (uint64_t)st.st_size;
    return G4V_OK;
}

void g4v_close_fd(int fd) {
    if (fd >= 0) close(fd);
}

int g4v_pread_full(int fd, void *buf, size_t n, uint64_t offset, const char *path, g4v_err *err) {
    unsigned char *p = buf;
    while (n) {
        ssize_t got = pread(fd, p, n, (off_t)offset);
        if (got < 0) {
            if (errno == EINTR) continue;
            return g4v_fail(err, G4V_ERR_IO, "%s: read failed at byte %llu: %s", path,
                            (unsigned long long)offset, strerror(errno));
        }
        if (got == 0) /* the file shrank under us */
            return g4v_fail(err, G4V_ERR_MODEL, "%s: file truncated at byte %llu", path,
                            (unsigned long long)offset);
        p += got;
        n -= (size_t)got;
        offset += (uint64_t)got;
    }
    return G4V_OK;
}

int g4v_read_file(const char *path, uint64_t max_bytes, const char *limit_name, unsigned char **out,
                  size_t *size, g4v_err *err) {
    *out = NULL;
    *size = 0;
    int fd;
    uint64_t n = 0;
    int st = g4v_open_regular(path, &fd, &n, err);
    if (st) return st;
    unsigned char *buf = NULL;
    if (n > max_bytes || n >= SIZE_MAX)
        st = g4v_fail(err, G4V_ERR_LIMIT,
                      "%s: file is %llu bytes, above the limit of %llu bytes (%s)", path,
                      (unsigned long long)n, (unsigned long long)max_bytes, limit_name);
    else if (!(buf = g4v_malloc((size_t)n + 1)))
        st = g4v_fail(err, G4V_ERR_NOMEM, "%s: out of memory for %llu bytes", path,
                      (unsigned long long)n);
    else
        st = g4v_pread_full(fd, buf, (size_t)n, 0, path, err);
    g4v_close_fd(fd);
    if (st) {
        g4v_free(buf);
        return st;
    }
    buf[n] = '\0';
    *out = buf;
    *size = (size_t)n;
    return G4V_OK;
}

int g4v_is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int g4v_path_join(char *out, size_t cap, const char *dir, const char *name, g4v_err *err) {
    size_t len = strlen(dir);
    const char *sep = len && dir[len - 1] == '/' ? "" : "/"; /* "dir/" stays readable */
    int n = snprintf(out, cap, "%s%s%s", dir, sep, name);
    if (n < 0 || (size_t)n >= cap)
        return g4v_fail(err, G4V_ERR_IO, "path too long: %s/%s", dir, name); /* ENAMETOOLONG */
    return G4V_OK;
}
