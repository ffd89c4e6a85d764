/* chat_identity.c - what a saved context state depends on besides its items, as text for the
 * prompt cache's key (docs/PROMPT_CACHE.md): the text model file, the vision model and its math
 * mode, libllama's CPU features and the CPU backend variant it loaded (chat_backend.c), and the context settings that change the state's bytes or the
 * results decoded from it.
 *
 * The text model is identified by its size and SHA-256 over its first 8 MiB (the GGUF header:
 * every key and tensor description) and 64 KiB at 64 evenly spaced offsets: reading a 20 GB file
 * whole at every start would cost seconds; a file edited only between the samples, keeping its
 * size and header, is not told apart (a documented limit). The vision model has its own full
 * fingerprint (g4v_model_fingerprint). */
#include "chat_backend.h"
#include "chat_llama_probe.h"
#include "chat_error.h"
#include "chat_session_impl.h"
#include "frontend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { HEAD_BYTES = 8 << 20, SAMPLES = 64, SAMPLE_BYTES = 64 << 10 };

static int lm_fingerprint(const char *path, char hex[65], char *err, size_t errsz) {
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st)) {
        if (f) fclose(f);
        seterr(err, errsz, "%s: cannot read the text model", path);
        return -1;
    }
    unsigned char *buf = malloc(HEAD_BYTES);
    if (!buf) {
        fclose(f);
        seterr(err, errsz, "out of memory");
        return -1;
    }
    fe_sha256_ctx h;
    fe_sha256_init(&h);
    uint64_t size = (uint64_t)st.st_size;
    fe_sha256_update(&h, &size, sizeof size);
    size_t n = fread(buf, 1, HEAD_BYTES, f);
    fe_sha256_update(&h, buf, n);
    for (int i = 0; i < SAMPLES && size > HEAD_BYTES; i++) {
        uint64_t off = HEAD_BYTES + (size - HEAD_BYTES) / SAMPLES * (uint64_t)i;
        if (fseeko(f, (off_t)off, SEEK_SET)) break;
        n = fread(buf, 1, SAMPLE_BYTES, f);
        fe_sha256_update(&h, buf, n);
    }
    free(buf);
    fclose(f);
    unsigned char d[32];
    fe_sha256_final(&h, d);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return 0;
}

int chat_session_identity(chat_session *s, char *out, size_t cap, char *err, size_t errsz) {
    char lm[65], vis[80];
    if (lm_fingerprint(s->o.lm_path, lm, err, errsz)) return -1;
    if (g4v_model_fingerprint(s->vm, vis, sizeof vis, err, errsz)) return -1;
    chat_backend_cpu cpu;
    if (chat_backend_cpu_get(&cpu, err, errsz)) return -1;
    chat_llama_probe probe; /* AMX or repacked weights compute other bits than plain ones */
    if (chat_llama_probe_get(&probe, err, errsz)) return -1;
    int n = snprintf(out, cap,
                     "lm %s\nvision %s math %s\nllama %s\ncpu %s %s\nextra_buffers %s\n"
                     "n_batch %d n_ubatch %d swa_full 1 non_causal %d kv f16\n"
                     "state sequence with window cells, streams %d\n",
                     lm, vis, g4v_math_mode_name(s->vinfo.math), llama_print_system_info(),
                     cpu.variant, cpu.features, probe.use_extra_buffers ? probe.types : "off",
                     s->n_batch, s->n_batch, s->non_causal, chat_engine_n_seq(s->engine));
    if (n < 0 || (size_t)n >= cap) {
        seterr(err, errsz, "the session's identity does not fit %zu bytes", cap);
        return -1;
    }
    return 0;
}
