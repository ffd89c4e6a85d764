/* fsutil.h - the few POSIX file operations the loader needs, each failing with the path and
 * strerror in the message: open a regular file read-only, read exactly n bytes at an offset
 * (retrying short reads and EINTR), read a whole file under a size limit, test for existence,
 * and join a directory and a file name.
 */
#ifndef G4V_IO_FSUTIL_H
#define G4V_IO_FSUTIL_H

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

/* Opens path read-only; it must be a regular file. Missing -> G4V_ERR_IO. */
int g4v_open_regular(const char *path, int *fd, uint64_t *size, g4v_err *err);
void g4v_close_fd(int fd);

/* Reads exactly n bytes at offset; a short file is G4V_ERR_MODEL (truncated), errors G4V_ERR_IO. */
int g4v_pread_full(int fd, void *buf, size_t n, uint64_t offset, const char *path, g4v_err *err);

/* Reads the whole regular file path into *out (g4v_malloc'ed, free with g4v_free): *size bytes
 * and a NUL after them, so text parsers may rely on termination. A file above max_bytes is
 * G4V_ERR_LIMIT before anything is allocated; limit_name names the setting that raises the
 * limit (e.g. "max_file_bytes") in the message. */
int g4v_read_file(const char *path, uint64_t max_bytes, const char *limit_name, unsigned char **out,
                  size_t *size, g4v_err *err);

/* 1 if path names an existing regular file, 0 otherwise. */
int g4v_is_file(const char *path);

/* out = dir + "/" + name; G4V_ERR_IO (as open's ENAMETOOLONG) if it does not fit in cap bytes. */
int g4v_path_join(char *out, size_t cap, const char *dir, const char *name, g4v_err *err);

#endif
