/* ffmpeg_dl.c - dlopen of FFmpeg at the first video (ffmpeg_dl.h says why), and the two
 * process-wide FFmpeg settings of g4v.h, which must not load FFmpeg themselves. */
#define G4V_FFMPEG_DL_IMPL 1
#include "ffmpeg_dl.h"

#include "g4v.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

g4v_ffmpeg g4v_ff;

#define G4V_STR2(x) #x
#define G4V_STR(x) G4V_STR2(x)

/* Sonames of the major versions the headers declare; libavformat brings libavcodec and
 * libavutil as its dependencies, libswscale is separate. */
static const char *const SONAMES[] = {
    "libavutil.so." G4V_STR(LIBAVUTIL_VERSION_MAJOR),
    "libavcodec.so." G4V_STR(LIBAVCODEC_VERSION_MAJOR),
    "libavformat.so." G4V_STR(LIBAVFORMAT_VERSION_MAJOR),
    "libswscale.so." G4V_STR(LIBSWSCALE_VERSION_MAJOR),
};
enum { NLIBS = sizeof SONAMES / sizeof SONAMES[0] };

static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_int loaded;         /* 1 once every symbol is in g4v_ff */
static char failure[768];         /* why loading failed ("" after success) */
static pthread_mutex_t settings_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t pending_cap;        /* g4v_video_cap_allocations before FFmpeg was loaded, 0: none */
static int pending_cap_set, pending_quiet;

static void *open_lib(const char *soname, int flags) {
    const char *dir = getenv("G4V_FFMPEG_DIR");
    if (!dir || !*dir) return dlopen(soname, flags);
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, soname) >= (int)sizeof path) return NULL;
    return dlopen(path, flags);
}

static void load_once(void) {
    void *h[NLIBS];
    for (int i = 0; i < NLIBS; i++) {
        /* RTLD_GLOBAL: libavformat must find the libavcodec/libavutil loaded here (the same
         * sonames are its own dependencies, so they resolve to these copies either way). */
        h[i] = open_lib(SONAMES[i], RTLD_NOW | RTLD_GLOBAL);
        if (!h[i]) {
            const char *why = dlerror();
            snprintf(failure, sizeof failure,
                     "video input needs FFmpeg's %s, which cannot be loaded (%s); install FFmpeg's "
                     "runtime libraries (Debian: libavformat%d, libavcodec%d, libswscale%d)%s",
                     SONAMES[i], why ? why : "not found", LIBAVFORMAT_VERSION_MAJOR,
                     LIBAVCODEC_VERSION_MAJOR, LIBSWSCALE_VERSION_MAJOR,
                     getenv("G4V_FFMPEG_DIR") ? " or fix G4V_FFMPEG_DIR" : "");
            return; /* the handles stay open: a process does not unload FFmpeg */
        }
    }
    g4v_ffmpeg t;
    void *sym;
#define G4V_FFMPEG_RESOLVE(name)                                                                   \
    sym = NULL;                                                                                    \
    for (int i = 0; i < NLIBS && !sym; i++)                                                        \
        sym = dlsym(h[i], #name);                                                                  \
    if (!sym) {                                                                                    \
        snprintf(failure, sizeof failure,                                                          \
                 "the FFmpeg libraries loaded (%s, ...) lack %s: a different FFmpeg than the one " \
                 "libg4v was built against",                                                       \
                 SONAMES[2], #name);                                                               \
        return;                                                                                    \
    }                                                                                              \
    *(void **)&t.name = sym;
    G4V_FFMPEG_FUNCTIONS(G4V_FFMPEG_RESOLVE)
#undef G4V_FFMPEG_RESOLVE
    g4v_ff = t;
    failure[0] = 0;
    /* the settings asked for before this moment take effect now */
    pthread_mutex_lock(&settings_lock);
    if (pending_cap_set) g4v_ff.av_max_alloc(pending_cap);
    if (pending_quiet) g4v_ff.av_log_set_level(AV_LOG_QUIET);
    atomic_store(&loaded, 1);
    pthread_mutex_unlock(&settings_lock);
}

int g4v_ffmpeg_load(g4v_err *err) {
    pthread_once(&once, load_once);
    if (atomic_load(&loaded)) return G4V_OK;
    return g4v_fail(err, G4V_ERR_UNSUPPORTED, "%s", failure);
}

/* A setting applies now to the FFmpeg in the process (ours, or the program's own copy: the
 * settings are process-wide for every FFmpeg user, g4v.h), else load_once applies it. This is
 * the libavutil function `name` when some libavutil is already loaded, else NULL. */
static void *present_avutil_function(const char *name) {
    if (atomic_load(&loaded)) return NULL; /* the caller uses g4v_ff */
    void *h = open_lib(SONAMES[0], RTLD_NOW | RTLD_NOLOAD);
    if (!h) return NULL;
    void *f = dlsym(h, name);
    dlclose(h); /* drops our reference only: whoever loaded it keeps it loaded */
    return f;
}

void g4v_video_cap_allocations(size_t max_bytes) {
    /* FFmpeg's own default: INT_MAX (libavutil/mem.c) */
    size_t cap = max_bytes ? max_bytes : (size_t)INT_MAX;
    pthread_mutex_lock(&settings_lock);
    pending_cap = cap;
    pending_cap_set = 1;
    void (*set)(size_t) = NULL;
    *(void **)&set = atomic_load(&loaded) ? (void *)g4v_ff.av_max_alloc
                                          : present_avutil_function("av_max_alloc");
    if (set) set(cap);
    pthread_mutex_unlock(&settings_lock);
}

void g4v_video_quiet_ffmpeg(void) {
    pthread_mutex_lock(&settings_lock);
    pending_quiet = 1;
    void (*set)(int) = NULL;
    *(void **)&set = atomic_load(&loaded) ? (void *)g4v_ff.av_log_set_level
                                          : present_avutil_function("av_log_set_level");
    if (set) set(AV_LOG_QUIET);
    pthread_mutex_unlock(&settings_lock);
}
