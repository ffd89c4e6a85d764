/* llama_cpu.c - the CPU backend of llama.cpp as g4v chat --version and g4v info show it
 * (llama_cpu.h). Without libllama every answer says so. */
#include "llama_cpu.h"

#include <stdio.h>
#include <string.h>

#ifdef G4V_HAVE_LLAMA
#include "chat_backend.h"
#include "chat_llama_probe.h"
#include "llama.h"

/* llama.cpp's log (ggml's "loaded CPU backend from ..."): errors only, the answer says the rest */
static void errors_only(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

/* chat_backend_cpu_get with llama.cpp's log kept quiet */
static int get(chat_backend_cpu *c, char *err, size_t errsz) {
    llama_log_set(errors_only, NULL);
    return chat_backend_cpu_get(c, err, errsz);
}

int cli_llama_cpu_line(char *buf, size_t n) {
    chat_backend_cpu c;
    char err[1400];
    if (get(&c, err, sizeof err)) {
        snprintf(buf, n, "none: %s", err);
        return -1;
    }
    chat_backend_cpu_summary(&c, buf, n);
    return 0;
}

void cli_llama_extra_line(char *buf, size_t n) {
    chat_llama_probe p;
    char err[1400];
    llama_log_set(errors_only, NULL);
    if (chat_llama_probe_get(&p, err, sizeof err))
        snprintf(buf, n, "none: %s", err);
    else if (!p.types[0])
        snprintf(buf, n, "%s", "none offered by this CPU backend");
    else if (p.use_extra_buffers)
        snprintf(buf, n, "%s (checked: %s)", p.types, p.checked);
    else
        snprintf(buf, n, "off: %s", p.reason);
}

cJSON *cli_llama_extra_json(void) {
    llama_log_set(errors_only, NULL);
    return chat_llama_probe_json();
}

void cli_llama_cpu_path(char *buf, size_t n) {
    chat_backend_cpu c;
    if (get(&c, NULL, 0))
        snprintf(buf, n, "%s", "");
    else
        snprintf(buf, n, "%s", c.path);
}

cJSON *cli_llama_cpu_json(void) {
    chat_backend_cpu c;
    char err[1400];
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    if (get(&c, err, sizeof err)) {
        if (!cJSON_AddStringToObject(o, "error", err)) goto oom;
        return o;
    }
    if (!(c.variant[0] ? cJSON_AddStringToObject(o, "variant", c.variant)
                       : cJSON_AddNullToObject(o, "variant")) ||
        !cJSON_AddBoolToObject(o, "loaded_at_run_time", c.loaded_at_run_time))
        goto oom;
    cJSON *feats = cJSON_AddArrayToObject(o, "features");
    if (!feats) goto oom;
    char *save = NULL;
    for (char *f = strtok_r(c.features, " ", &save); f; f = strtok_r(NULL, " ", &save)) {
        cJSON *s = cJSON_CreateString(f);
        if (!s) goto oom;
        cJSON_AddItemToArray(feats, s);
    }
    if (!cJSON_AddStringToObject(o, "path", c.path)) goto oom;
    cJSON *extra = cli_llama_extra_json();
    if (!extra) goto oom;
    cJSON_AddItemToObject(o, "extra_buffers", extra);
    return o;
oom:
    cJSON_Delete(o);
    return NULL;
}

#else

int cli_llama_cpu_line(char *buf, size_t n) {
    snprintf(buf, n, "%s", "none: this g4v was built without llama.cpp's libllama");
    return -1;
}

void cli_llama_cpu_path(char *buf, size_t n) {
    snprintf(buf, n, "%s", "");
}

void cli_llama_extra_line(char *buf, size_t n) {
    snprintf(buf, n, "%s", "none: this g4v was built without llama.cpp's libllama");
}

cJSON *cli_llama_extra_json(void) {
    return cJSON_CreateNull();
}

cJSON *cli_llama_cpu_json(void) {
    return cJSON_CreateNull();
}

#endif
