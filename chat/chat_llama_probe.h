/* chat_llama_probe.h - does libllama's weight repacking run on this machine? Checked once, in a
 * child process, before a text model is loaded (docs/CHAT.md §6 "The start-up check").
 *
 * llama.cpp's CPU backend offers "extra buffer types" for quantized weights: AMX (Intel's tile
 * unit, Q4_0/Q4_1/Q8_0/Q4_K/Q5_K/Q6_K/IQ4_XS) and CPU_REPACK (interleaved AVX2/AVX-512/NEON
 * layouts). A text model loaded with them (llama_model_params.use_extra_bufts, the default) runs
 * its matrix products there. When such a path is broken on a machine -- the pinned llama.cpp
 * built by GCC 12 configured empty AMX tiles and died with SIGILL, a hypervisor may refuse the
 * tile state -- the whole process dies at the first prompt. The probe runs a Q4_0, a Q8_0 and a
 * Q4_K matrix product through each extra buffer type in a forked child and compares it with the
 * plain CPU buffer's result; if the child dies, hangs or differs, the text model is loaded
 * without extra buffer types (slower, but it answers) and the reason is reported by
 * `g4v info --json` and GET /v1/info.
 *
 * The verdict is cached per libllama + CPU backend module + CPU (a small file under
 * $G4V_LLAMA_PROBE_DIR, else $XDG_CACHE_HOME/g4v/llama-probe, else ~/.cache/g4v/llama-probe), so
 * the child runs the first time a combination is seen. G4V_LLAMA_EXTRA_BUFFERS=0 turns the extra
 * buffer types off without a probe, =1 on without one; unset or "auto": probe. */
#ifndef G4V_CHAT_LLAMA_PROBE_H
#define G4V_CHAT_LLAMA_PROBE_H

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct chat_llama_probe {
    int use_extra_buffers; /* what to set llama_model_params.use_extra_bufts to */
    char types[128];       /* the extra buffer types the CPU backend offers ("AMX CPU_REPACK"),
                              "" for none */
    const char *checked;   /* how the verdict was reached: "probe", "cache", "environment",
                              "none" (no extra buffer types to check), or "skipped (a
                              ThreadSanitizer build)" (no threads in a forked child there) */
    char reason[800];      /* why they are off ("" when on): what died or differed, and what
                              to do */
} chat_llama_probe;

/* The verdict for this process (thread-safe; the first call decides, later calls return it).
 * Loads llama.cpp's backends (chat_backend_load) first. 0, or -1 with err when no CPU backend
 * could be loaded. */
int chat_llama_probe_get(chat_llama_probe *out, char *err, size_t errsz);

/* The verdict as JSON, for `g4v info --json` and GET /v1/info: {"used": bool, "types": ["AMX",
 * "CPU_REPACK"], "checked": "probe"|"cache"|"environment"|"none", "reason": "..." or null}, or
 * {"error": "..."} without a CPU backend. NULL: out of memory. */
cJSON *chat_llama_probe_json(void);

#endif
