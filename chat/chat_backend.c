/* chat_backend.c - llama.cpp's CPU backend: loaded once from libllama's directory, and described
 * (chat_backend.h, docs/CHAT.md §6). */
#define _GNU_SOURCE /* dladdr */
#include "chat_backend.h"
#include "chat_error.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

#define VARIANT_PREFIX "libggml-cpu-" /* ggml's name for a CPU module: libggml-cpu-<level>.so */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_status;       /* chat_backend_load's outcome: 0 or -1 */
static char g_err[1400];   /* the reason when g_status is -1 */

/* The file that holds the code at addr ("" when the loader does not know it). */
static void file_of(const void *addr, char *path, size_t n) {
    Dl_info info;
    if (dladdr(addr, &info) && info.dli_fname)
        snprintf(path, n, "%s", info.dli_fname);
    else
        snprintf(path, n, "%s", "");
}

/* The directory of the loaded libllama, found from the address of one of its functions. -1 when
 * that address is not in libllama (an executable that is not position-independent calls it
 * through a stub of its own). */
static int llama_dir(char *dir, size_t n) {
    union {
        void (*fn)(void);
        void *p;
    } u = {.fn = llama_backend_init};
    char path[1024];
    file_of(u.p, path, sizeof path);
    const char *base = strrchr(path, '/');
    if (!base || strncmp(base + 1, "libllama", strlen("libllama"))) return -1;
    snprintf(dir, n, "%.*s", (int)(base - path), path);
    return 0;
}

static void load_once(void) {
    if (ggml_backend_reg_by_name("CPU")) return; /* linked into libggml, or loaded already */
    char dir[1024];
    const char *where = dir;
    if (llama_dir(dir, sizeof dir) == 0) {
        ggml_backend_load_all_from_path(dir);
    } else { /* ggml's own search: GGML_BACKEND_DIR, the executable's directory, the cwd */
        ggml_backend_load_all();
        where = "the executable's directory or the current directory (libllama's was not found)";
    }
    if (!ggml_backend_reg_by_name("CPU")) {
        g_status = -1;
        snprintf(g_err, sizeof g_err,
                 "llama.cpp has no CPU backend: none of the " VARIANT_PREFIX "*.so modules in %s "
                 "could be loaded on this CPU (they are installed beside libllama by "
                 "scripts/build-llama.sh; docs/CHAT.md §6)",
                 where);
    }
}

int chat_backend_load(char *err, size_t errsz) {
    pthread_once(&g_once, load_once);
    if (g_status) seterr(err, errsz, "%s", g_err);
    return g_status;
}

/* Appends " NAME" (or " NAME=VALUE") to buf, dropping what does not fit. */
static void add_feature(char *buf, size_t n, const char *name, const char *value) {
    size_t used = strlen(buf);
    int one = !strcmp(value, "1");
    snprintf(buf + used, n - used, "%s%s%s%s", used ? " " : "", name, one ? "" : "=",
             one ? "" : value);
}

int chat_backend_cpu_get(chat_backend_cpu *out, char *err, size_t errsz) {
    memset(out, 0, sizeof *out);
    if (chat_backend_load(err, errsz)) return -1;
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("CPU");
    ggml_backend_get_features_t get_features =
        (ggml_backend_get_features_t)ggml_backend_reg_get_proc_address(reg,
                                                                       "ggml_backend_get_features");
    if (!get_features) {
        seterr(err, errsz, "llama.cpp's CPU backend does not list its features");
        return -1;
    }
    for (struct ggml_backend_feature *f = get_features(reg); f && f->name; f++)
        add_feature(out->features, sizeof out->features, f->name, f->value ? f->value : "1");
    /* the file that defines the backend's own functions is the module ggml chose */
    union {
        ggml_backend_get_features_t fn;
        void *p;
    } u = {.fn = get_features};
    file_of(u.p, out->path, sizeof out->path);
    /* a loadable module exports its entry point (ggml's GGML_BACKEND_DL_IMPL); a backend linked
     * into libggml has none */
    void *h = out->path[0] ? dlopen(out->path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    out->loaded_at_run_time = h && dlsym(h, "ggml_backend_init");
    if (h) dlclose(h);
    const char *base = strrchr(out->path, '/');
    base = base ? base + 1 : out->path;
    if (!strncmp(base, VARIANT_PREFIX, strlen(VARIANT_PREFIX))) {
        base += strlen(VARIANT_PREFIX);
        const char *so = strstr(base, ".so"); /* the level may hold dots: armv8.2_1 */
        size_t len = so ? (size_t)(so - base) : strlen(base);
        snprintf(out->variant, sizeof out->variant, "%.*s", (int)len, base);
    }
    return 0;
}

void chat_backend_cpu_summary(const chat_backend_cpu *c, char *buf, size_t n) {
    if (c->loaded_at_run_time)
        snprintf(buf, n, "%s%sloaded at run time (%s)", c->variant[0] ? c->variant : "",
                 c->variant[0] ? ", " : "", c->features[0] ? c->features : "no extensions");
    else
        snprintf(buf, n, "linked into libggml (%s)",
                 c->features[0] ? c->features : "no extensions");
}
