/* tempdir.c - the front ends' private temporary directories (tempdir.h). */
#define _GNU_SOURCE /* mkdtemp, nftw */
#include "tempdir.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

int fe_temp_dir(char *dir, size_t cap, const char *prefix, const char **where) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    if (where) *where = tmp;
    int n = snprintf(dir, cap, "%s/%s-XXXXXX", tmp, prefix);
    if (n < 0 || (size_t)n >= cap || !mkdtemp(dir)) {
        if (cap) dir[0] = 0;
        return -1;
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void fe_temp_dir_remove(const char *dir) {
    if (dir[0]) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
