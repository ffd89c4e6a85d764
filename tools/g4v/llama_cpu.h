/* llama_cpu.h - what `g4v chat --version` and `g4v info` say about the CPU backend llama.cpp runs
 * the language model on (chat/chat_backend.h, docs/CHAT.md §6). */
#ifndef G4V_CLI_LLAMA_CPU_H
#define G4V_CLI_LLAMA_CPU_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* One line for people: "zen4, loaded at run time (SSE3 ... AVX512_BF16 ...)", "linked into
 * libggml (...)", or why there is none. 0 when a backend is there, -1 otherwise (this g4v has
 * no libllama, or no CPU backend could be loaded: the line says which). */
int cli_llama_cpu_line(char *buf, size_t n);

/* The file the backend was loaded from into buf ("" when there is none). */
void cli_llama_cpu_path(char *buf, size_t n);

/* The "llama_cpu_backend" value of the JSON outputs: {"variant": "zen4" or null,
 * "loaded_at_run_time": bool, "features": ["SSE3", ...], "path": "...", "extra_buffers": the
 * object below}, {"error": "..."} when no CPU backend could be loaded, or JSON null without
 * libllama. NULL: out of memory. */
cJSON *cli_llama_cpu_json(void);

/* Whether the text model's quantized weights go to llama.cpp's extra buffer types (AMX,
 * CPU_REPACK) after the start-up check (chat/chat_llama_probe.h): one line for people
 * ("AMX CPU_REPACK (checked: probe)", "off: why"), and as JSON {"used": bool, "types": [...],
 * "checked": "probe"|"cache"|"environment"|"none", "reason": "..." or null}; JSON null without
 * libllama, NULL when out of memory. */
void cli_llama_extra_line(char *buf, size_t n);
cJSON *cli_llama_extra_json(void);

#endif
