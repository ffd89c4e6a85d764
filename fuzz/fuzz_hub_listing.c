/* fuzz_hub_listing.c - the input is what the Hub API answers for GET
 * /api/models/ORG/NAME/revision/REV?blobs=true (JSON: the commit sha and the siblings, each a
 * name, size, blob id and LFS sha256), parsed by the client's own parser (hub_parse_listing,
 * common/hub_parse.h) as `g4v pull` does before it joins a name to a folder or asks for a
 * byte. No network: the parser only. Checks: a refusal is HUB_ERR_INTEGRITY (or HUB_ERR_NOMEM)
 * with a message; an accepted listing has a 40-hex commit, at most HUB_MAX_FILES files, each name
 * safe to join under a folder (relative, no '.', '..' or empty part, no backslash, colon or
 * control character), no name twice or both a file and a folder, an exact size within
 * HUB_MAX_FILE_SIZE, a 64-hex (LFS) or 40-hex lower-case ETag; and asking for that commit by name
 * gives the same files. docs/LIMITS.md "Hub answers". */
#include "fuzz_common.h"
#include "hub_internal.h"

#include <stdlib.h>
#include <string.h>

static int lower_hex(const char *s, size_t n) {
    size_t k = 0;
    for (; s[k]; k++)
        if (!((s[k] >= '0' && s[k] <= '9') || (s[k] >= 'a' && s[k] <= 'f'))) return 0;
    return k == n;
}

static void check_refusal(int rc, const char *err) {
    FZ_ASSERT(rc == HUB_ERR_INTEGRITY || rc == HUB_ERR_NOMEM, "refusal status %d", rc);
    FZ_ASSERT(err[0], "a refusal without a message (status %d)", rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char commit[41], err[2048] = "";
    hub_file *f = NULL;
    int n = -1;
    int rc = hub_parse_listing((const char *)data, size, "org/name@main", "main", commit, &f, &n,
                               err, sizeof err);
    if (rc) {
        check_refusal(rc, err);
        return 0;
    }
    FZ_ASSERT(hub_is_commit(commit), "commit %.41s", commit);
    FZ_ASSERT(n >= 0 && n <= HUB_MAX_FILES, "%d files", n);
    for (int i = 0; i < n; i++) {
        const char *p = f[i].path;
        FZ_ASSERT(p && hub_path_safe(p), "an unsafe name accepted: %s", p ? p : "(null)");
        FZ_ASSERT(p[0] != '/' && strlen(p) <= 1024 && strcmp(p, "..") && strncmp(p, "../", 3) &&
                      !strstr(p, "/../") && !strstr(p, "//"),
                  "name %s", p);
        for (const char *c = p; *c; c++)
            FZ_ASSERT((unsigned char)*c >= 0x20 && *c != 0x7f && *c != '\\' && *c != ':',
                      "a control character, backslash or colon in %s", p);
        FZ_ASSERT((double)f[i].size <= HUB_MAX_FILE_SIZE, "size %llu",
                  (unsigned long long)f[i].size);
        FZ_ASSERT(lower_hex(f[i].etag, f[i].lfs ? 64 : 40), "ETag %s (lfs %d)", f[i].etag,
                  f[i].lfs);
        size_t la = strlen(p);
        for (int j = 0; j < n; j++)
            FZ_ASSERT(i == j || strncmp(p, f[j].path, la) ||
                          (f[j].path[la] != 0 && f[j].path[la] != '/'),
                      "%s twice or as a folder of %s", p, f[j].path);
    }
    /* the commit asked for by name: the same listing */
    char again[41], err2[2048] = "";
    hub_file *g = NULL;
    int m = -1;
    rc = hub_parse_listing((const char *)data, size, "org/name@commit", commit, again, &g, &m,
                           err2, sizeof err2);
    FZ_ASSERT(rc == HUB_OK && m == n && !strcmp(again, commit), "asked by commit: %d (%s)", rc,
              err2);
    for (int i = 0; i < n; i++)
        FZ_ASSERT(!strcmp(f[i].path, g[i].path) && f[i].size == g[i].size &&
                      !strcmp(f[i].etag, g[i].etag) && f[i].lfs == g[i].lfs,
                  "file %d differs when asked by commit", i);
    /* another commit asked: refused */
    char other[41];
    memcpy(other, commit, 41);
    other[0] = other[0] == 'a' ? 'b' : 'a';
    hub_file *h = NULL;
    int k = -1;
    rc = hub_parse_listing((const char *)data, size, "org/name@other", other, again, &h, &k, err2,
                           sizeof err2);
    FZ_ASSERT(rc == HUB_ERR_INTEGRITY, "a listing of %s accepted for commit %s", commit, other);
    hub_files_free(g, m);
    hub_files_free(f, n);
    return 0;
}
