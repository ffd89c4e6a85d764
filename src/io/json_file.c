/* json_file.c - bounded reading of small JSON files and typed field access (see json_file.h). */
#include "io/json_file.h"

#include "base/alloc.h"
#include "io/fsutil.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

/* cJSON records where its last parse failed in one process-wide variable (cJSON_GetErrorPtr)
 * that every cJSON_Parse* call writes, on success too. Two loads, or a load and a cache read, in
 * two threads would race on it. So every parse in libg4v goes through g4v_json_parse_text, under
 * this one mutex: the library's only global mutable state, and it guards state that is cJSON's,
 * not ours. Programs that parse with cJSON beside the library take it too (g4v_json_lock, g4v.h).
 * We never read cJSON's variable (the end pointer it returns is per call). */
static pthread_mutex_t cjson_parse_lock = PTHREAD_MUTEX_INITIALIZER;

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define G4V_TSAN_BUILD 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define G4V_TSAN_BUILD 1
#endif
#ifdef G4V_TSAN_BUILD
/* The system's libcjson is not instrumented, so ThreadSanitizer cannot see its writes to the
 * global error variable. Under TSan we repeat that write here, where TSan sees it, so an unlocked
 * parse is reported (tests/api/test_json_race.c). */
static const char *volatile cjson_error_mirror; /* volatile: written, never read */
#endif

/* Public (g4v.h): programs that parse with cJSON too take the same lock. */
void g4v_json_lock(void) { pthread_mutex_lock(&cjson_parse_lock); }

void g4v_json_unlock(void) { pthread_mutex_unlock(&cjson_parse_lock); }

cJSON *g4v_json_parse_text(const char *text, size_t n, const char **end) {
    g4v_json_lock();
#ifdef G4V_TSAN_BUILD
    cjson_error_mirror = NULL; /* what cJSON_ParseWithLengthOpts does first */
#endif
    cJSON *root = cJSON_ParseWithLengthOpts(text, n, end, 0);
#ifdef G4V_TSAN_BUILD
    if (!root) cjson_error_mirror = end ? *end : text; /* ... and on failure */
#endif
    g4v_json_unlock();
    return root;
}

cJSON *g4v_json_parse(const char *text, size_t n, const char *what, g4v_err *err) {
    const char *end = NULL;
    cJSON *root = g4v_json_parse_text(text, n, &end);
    if (!root) {
        size_t at = end && end >= text && (size_t)(end - text) <= n ? (size_t)(end - text) : 0;
        g4v_fail(err, G4V_ERR_MODEL, "%s: malformed JSON near byte %zu of %zu", what, at, n);
        return NULL;
    }
    /* cJSON stops after the first value; anything but whitespace after it is corruption. */
    for (size_t i = (size_t)(end - text); i < n; i++) {
        char c = text[i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            cJSON_Delete(root);
            g4v_fail(err, G4V_ERR_MODEL, "%s: malformed JSON: unexpected data at byte %zu of %zu",
                     what, i, n);
            return NULL;
        }
    }
    return root;
}

int g4v_json_load(const char *path, uint64_t max_bytes, cJSON **out, g4v_err *err) {
    *out = NULL;
    unsigned char *buf;
    size_t size;
    int st = g4v_read_file(path, max_bytes, "max_config_bytes", &buf, &size, err);
    if (st) return st;
    *out = g4v_json_parse((const char *)buf, size, path, err);
    g4v_free(buf);
    return *out ? G4V_OK : (err ? err->status : G4V_ERR_MODEL);
}

int64_t g4v_json_uint(const cJSON *v) {
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!isfinite(d) || d < 0 || d > 9007199254740992.0 || d != floor(d)) return -1;
    return (int64_t)d;
}

static const cJSON *field(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

int g4v_json_int_field(const cJSON *obj, const char *key, int64_t lo, int64_t hi, const char *what,
                       int64_t *out, g4v_err *err) {
    const cJSON *v = field(obj, key);
    if (!v) return G4V_OK;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi)
        return g4v_fail(err, G4V_ERR_MODEL, "%s.%s must be an integer in [%lld, %lld]", what, key,
                        (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return G4V_OK;
}

int g4v_json_double_field(const cJSON *obj, const char *key, double lo, double hi, const char *what,
                          double *out, g4v_err *err) {
    const cJSON *v = field(obj, key);
    if (!v) return G4V_OK;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= lo && d <= hi)) /* also rejects NaN */
        return g4v_fail(err, G4V_ERR_MODEL, "%s.%s must be a number in [%g, %g]", what, key, lo,
                        hi);
    *out = d;
    return G4V_OK;
}

int g4v_json_bool_field(const cJSON *obj, const char *key, const char *what, int *out,
                        g4v_err *err) {
    const cJSON *v = field(obj, key);
    if (!v) return G4V_OK;
    if (!cJSON_IsBool(v))
        return g4v_fail(err, G4V_ERR_MODEL, "%s.%s must be true or false", what, key);
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return G4V_OK;
}
