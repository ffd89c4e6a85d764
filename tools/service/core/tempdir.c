/* tempdir.c - the service's private temporary directories (e.g. the chat slots' feature cache
 * when no --cache is given): made under $TMPDIR (else /tmp) with a unique name, removed with
 * everything in them when the service stops. */
#define _GNU_SOURCE /* mkdtemp, nftw */
#include "core/core.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

int svc_temp_dir(char *dir, size_t cap, const char *prefix, const char *what) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    snprintf(dir, cap, "%s/%s-XXXXXX", tmp, prefix);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "g4v serve: cannot create %s under %s\n", what, tmp);
        dir[0] = 0;
        return -1;
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void svc_temp_dir_remove(const char *dir) {
    if (dir[0]) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
