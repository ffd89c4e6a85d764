/* gguf_info.c - g4v_gguf_read_info (g4v.h): a GGUF file's header facts for programs that choose
 * files (g4v's model stores), through the library's one GGUF reader (io/gguf.h), so no front end
 * parses GGUF itself. */
#include "api_internal.h"
#include "io/checkpoint.h"
#include "io/gguf.h"

#include <string.h>

/* A string key into buf, "" when absent, of another type or longer than buf. */
static void read_str(const g4v_gguf_file *g, const char *key, char *buf, size_t cap) {
    g4v_err ignored;
    int present = 0;
    if (g4v_gguf_get_str(g, key, buf, cap, &present, &ignored) || !present) buf[0] = 0;
}

g4v_status g4v_gguf_read_info_sized(const char *path, g4v_gguf_info *out, size_t out_size,
                                    char *errbuf, size_t errbuf_size) {
    g4v_api_copy_msg(errbuf, errbuf_size, "");
    if (!path || !out || out_size == 0) {
        g4v_api_copy_msg(errbuf, errbuf_size,
                         "g4v_gguf_read_info: path and info must not be NULL, and info_size "
                         "must be sizeof(g4v_gguf_info)");
        return G4V_ERR_ARG;
    }
    g4v_checkpoint_limits lim;
    g4v_checkpoint_limits_default(&lim);
    g4v_gguf_file g;
    g4v_err err;
    g4v_err_clear(&err);
    if (g4v_gguf_open(path, &lim, &g, &err)) {
        g4v_api_copy_msg(errbuf, errbuf_size, err.msg);
        return (g4v_status)err.status;
    }
    g4v_gguf_info info;
    memset(&info, 0, sizeof info);
    read_str(&g, "general.architecture", info.architecture, sizeof info.architecture);
    read_str(&g, "general.type", info.type, sizeof info.type);
    read_str(&g, "clip.projector_type", info.projector_type, sizeof info.projector_type);
    if (!info.projector_type[0])
        read_str(&g, "clip.vision.projector_type", info.projector_type,
                 sizeof info.projector_type);
    info.has_chat_template = g4v_gguf_find(&g, "tokenizer.chat_template") != NULL;
    info.tensors = (int64_t)g.nt;
    for (size_t i = 0; i < g.nt; i++)
        if (!strncmp(g.t[i].name, "v.", 2)) info.vision_tensors++;
    g4v_gguf_close(&g);
    g4v_api_write_out(out, out_size, &info, sizeof info);
    return G4V_OK;
}
