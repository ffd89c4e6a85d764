/* chat_jinja.h - render a model's Jinja chat template (docs/CHAT.md "Jinja engine").
 *
 * The engine is llama.cpp's own (common/jinja in the pinned llama.cpp tree, the one llama-server
 * renders chat templates with), compiled from that tree by cmake/ChatJinja.cmake; this is its C
 * API. Templates see what transformers' apply_chat_template gives them: trim_blocks and
 * lstrip_blocks, raise_exception(msg), strftime_now(fmt), namespace(), the tojson filter (no HTML
 * escaping, non-ASCII kept), plus the context's variables. Only built with libllama
 * (G4V_HAVE_CHAT_JINJA in CMake, target g4v_jinja).
 *
 * Thread safety: a compiled template is immutable; any number of threads may render the same
 * one at once (each render has its own context). The engine's strftime_now reads the clock with
 * localtime(), which is not reentrant: renders of templates that name it are serialised (one
 * process-wide lock; no Gemma 4 template calls it), other code calling localtime() meanwhile
 * could still race with them. */
#ifndef G4V_CHAT_JINJA_H
#define G4V_CHAT_JINJA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct chat_jinja chat_jinja; /* a compiled template */

/* Compiles the template text `source` (UTF-8). NULL with a message (a syntax error names the
 * line and column) on failure. */
chat_jinja *chat_jinja_compile(const char *source, char *err, size_t errsz);

/* Renders with a context given as JSON text: an object whose members become the template's
 * variables (messages, tools, add_generation_prompt, enable_thinking, bos_token, eos_token,
 * ...), in the order given (dicts keep it, as in Python). Returns a malloc'd UTF-8 string, or
 * NULL with a message: raise_exception's text as the template wrote it, else the engine's error
 * (where in the template, and why), or the JSON's parse error. */
char *chat_jinja_render(const chat_jinja *t, const char *context_json, char *err, size_t errsz);

void chat_jinja_free(chat_jinja *t);

#ifdef __cplusplus
}
#endif

#endif
