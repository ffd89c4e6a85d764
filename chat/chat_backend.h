/* chat_backend.h - llama.cpp's CPU backend for the language model: loaded once per process from
 * where libllama lives, and described (docs/CHAT.md §6).
 *
 * A libllama built with GGML_BACKEND_DL (scripts/build-llama.sh's default) has no CPU backend
 * until one is loaded: its lib/ holds one module per instruction-set level
 * (libggml-cpu-haswell.so, libggml-cpu-zen4.so, ...) and ggml loads the best one this CPU runs.
 * A libllama whose CPU backend is linked in (--avx2, --bench builds) needs nothing loaded; the
 * same code serves both and says which it found. */
#ifndef G4V_CHAT_BACKEND_H
#define G4V_CHAT_BACKEND_H

#include <stddef.h>

/* What the language model computes on. */
typedef struct chat_backend_cpu {
    int loaded_at_run_time; /* 1: a module chosen at run time; 0: linked into libggml */
    char variant[64];       /* the module's level ("haswell", "zen4", "armv8.2_2"); "" when the
                               backend is linked in or a module without variants */
    char features[512];     /* what its kernels use, as ggml names them: "SSE3 AVX AVX2 F16C FMA
                               BMI2 ..." (a feature with a value other than 1 as NAME=VALUE) */
    char path[1024];        /* the file its code was loaded from */
} chat_backend_cpu;

/* Loads llama.cpp's backends once per process (thread-safe; later calls return the first
 * outcome): every module in the directory of the loaded libllama, the best of each kind. Call it
 * before llama_backend_init and before any llama_* or mtmd_* call that needs a device.
 * 0, or -1 with the reason in err (no CPU backend could be loaded: the directory searched and
 * what to do). */
int chat_backend_load(char *err, size_t errsz);

/* Loads (chat_backend_load) and describes the CPU backend in use. 0, or -1 with err. */
int chat_backend_cpu_get(chat_backend_cpu *out, char *err, size_t errsz);

/* One line for people: "haswell, loaded at run time (SSE3 SSSE3 AVX AVX2 ...)" or "linked into
 * libggml (SSE3 ... AVX2 ...)". */
void chat_backend_cpu_summary(const chat_backend_cpu *c, char *buf, size_t n);

#endif
