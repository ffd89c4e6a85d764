/* chat_template.h - the text around a user turn for a Gemma 4 text model (docs/CHAT.md §2).
 *
 * Gemma 4's chat template (the Jinja template in the model's GGUF, e.g. llama.cpp's
 * models/templates/google-gemma-4-31B-it.jinja) renders a conversation as
 *     <bos><|turn>system\n{system}<turn|>\n                      (only with a system prompt)
 *     <|turn>user\n{media...}{text}<turn|>\n<|turn>model\n<|channel>thought\n<channel|>
 * with one <|image|> / <|video|> per medium in the user content (expanded by the processor into
 * <|image> + rows + <image|>, and per video frame "MM:SS " + that, frames joined by spaces) and,
 * with thinking off (the default), the empty thought channel after <|turn>model\n. libllama's
 * llama_chat_apply_template does not know this template (it detects Gemma 1-3's <start_of_turn>
 * only), so for a model whose template uses <|turn> -- or that has none -- we write this format
 * ourselves. A later turn continues the KV cache: "<turn|>\n" closes the model's answer, then the
 * next user turn as above. Any other template is rendered by llama_chat_apply_template. */
#ifndef G4V_CHAT_TEMPLATE_H
#define G4V_CHAT_TEMPLATE_H

#include <stddef.h>

#include "llama.h"

/* Placeholder for one medium in rendered text (split out again by the caller). */
#define CHAT_MEDIA_MARKER "\x1eg4v-media\x1e"

typedef struct chat_template {
    int builtin;      /* 1: Gemma 4's turn format written by us; 0: llama_chat_apply_template */
    char *tmpl;       /* the model's template (NULL when builtin) */
    /* generic: the conversation so far (role/content strings owned), re-rendered each turn */
    struct llama_chat_message *msgs;
    int n_msgs, cap_msgs;
} chat_template;

/* Picks the format for model. 0, or -1 with a message. */
int chat_template_init(chat_template *t, const struct llama_model *model, char *err,
                       size_t errsz);
void chat_template_free(chat_template *t);

/* The text to feed for a new user turn whose content is `content` (media already replaced by
 * CHAT_MEDIA_MARKER): first != 0 for the first turn of the conversation (system prompt, if any,
 * included; BOS is not part of the text). Returns a malloc'd string or NULL with a message. */
char *chat_template_user_turn(chat_template *t, const char *system, const char *content,
                              int first, char *err, size_t errsz);

/* Records the model's answer to the last user turn (generic templates re-render history). */
int chat_template_answer(chat_template *t, const char *answer);

/* Forgets the whole conversation (the format stays). */
void chat_template_reset(chat_template *t);

/* Forgets the last user turn (a turn refused after chat_template_user_turn). */
void chat_template_undo_user(chat_template *t);

#endif
