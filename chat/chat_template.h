/* chat_template.h - a conversation and its prompt text (docs/CHAT.md §2 "The prompt").
 *
 * The conversation is kept as messages and rendered whole, every time, the way transformers'
 * apply_chat_template renders it: the model's own Jinja template when its files carry one (the
 * text GGUF's tokenizer.chat_template, else chat_template.jinja beside a Hugging Face checkpoint,
 * else a file given with --chat-template), rendered by a real Jinja engine (chat_jinja.h) with the
 * variables transformers passes (messages with content parts, add_generation_prompt,
 * enable_thinking, bos_token); only without one, our own rendering of Gemma 4's format, equal to
 * the official July 2026 templates of its two families:
 *     <|turn>system\n[<|think|>\n]{system}<turn|>\n     (with a system prompt or thinking on)
 *     <|turn>user\n{media...}{text}<turn|>\n             (a user turn: media first, text trimmed)
 *     <|turn>model\n{answer, thinking stripped}<turn|>\n (an earlier answer)
 *     <|turn>model\n[<|channel>thought\n<channel|>]    (the generation prompt; the empty thought
 *                                                        block only for 26B/31B with thinking off)
 * Every medium becomes one <|image|> / <|video|> in the template's output, which the caller gets
 * as CHAT_MEDIA_MARKER and expands like the processor (<|image> + rows + <image|>; per video
 * frame "MM:SS " + that, frames joined by spaces). The prompt cache and prefix reuse compare the
 * whole rendering with what the context holds, so a template that rewrites earlier turns (their
 * thinking stripped) costs only the positions after the first difference. */
#ifndef G4V_CHAT_TEMPLATE_H
#define G4V_CHAT_TEMPLATE_H

#include <stddef.h>

#include "llama.h"
#include "medium.h" /* common/: fe_medium */

/* Placeholder for one medium in rendered text (split out again by the caller). */
#define CHAT_MEDIA_MARKER "\x1eg4v-media\x1e"

struct chat_jinja;

/* A part of a user message, in the order the client gave them. */
enum { CHAT_PART_TEXT, CHAT_PART_MEDIUM };
typedef struct chat_msg_part {
    int kind;
    char *text;        /* CHAT_PART_TEXT's */
    fe_medium medium;  /* CHAT_PART_MEDIUM's: which kind (its placeholder, its "type") */
} chat_msg_part;

/* The placeholder a Gemma 4 template writes for one medium of the kind: "<|image|>", "<|video|>"
 * (the processor's image_token / video_token); NULL for a value that is not a kind. */
const char *chat_medium_placeholder(fe_medium m);

/* One message of the conversation (the system prompt is not one: it is given to the render). */
typedef struct chat_msg {
    int assistant;       /* 0: the user's (or a tool's); 1: the model's answer */
    int tool;            /* 1: a tool's result (role "tool"): text is its content */
    int system;          /* 1: a system message after the start of the conversation (role
                            "system"; the first system prompt is given to the render) */
    char *text;          /* an answer's text (as the model said it after its thinking) */
    char *reasoning;     /* an answer's thinking, or NULL */
    char *tool_calls;    /* an answer's tool calls: a JSON array of OpenAI tool_calls whose
                            function.arguments are objects (as templates take them), or NULL */
    char *tool_call_id;  /* a tool result's tool_call_id, or NULL */
    chat_msg_part *parts; /* a user message's content */
    int n_parts;
} chat_msg;

typedef struct chat_template {
    int builtin;              /* 1: rendered by us (the files carry no template) */
    int empty_thought;        /* builtin: the 26B/31B family's empty thought block */
    struct chat_jinja *jinja; /* the model's template, compiled (NULL when builtin) */
    char origin[600];         /* where it came from, for messages and g4v chat --json */
    char *bos_text;           /* the BOS token's text (bos_token); the render leaves it out */
    int tool_role;            /* the template renders role "tool" messages itself (the July 2026
                                 templates); else a tool's results are folded into the answer
                                 that called it as tool_responses, the older templates' form */
    char *tools;              /* the tools offered (OpenAI tools array, JSON), or NULL */
    chat_msg *msgs;
    int n_msgs, cap_msgs;
} chat_template;

/* Where the template comes from: override (a file, "builtin" for ours, or NULL), else the text
 * model's tokenizer.chat_template, else hf_dir/chat_template.jinja (hf_dir may be NULL or not a
 * directory), else ours, of the family the model's GGUF says (E2B/E4B have per-layer inputs).
 * 0, or -1 with a message (a template that does not compile). */
int chat_template_init(chat_template *t, const struct llama_model *model, const char *override,
                       const char *hf_dir, char *err, size_t errsz);
void chat_template_free(chat_template *t);

/* Appends a message (copies). 0, or -1 out of memory. */
int chat_template_add_user(chat_template *t, const chat_msg_part *parts, int n_parts);
int chat_template_add_answer(chat_template *t, const char *text, const char *reasoning);
/* An answer that calls tools (tool_calls: see chat_msg; text may be empty), and a tool's result
 * (tool_call_id: the call it answers, may be NULL). 0, or -1 out of memory. */
int chat_template_add_tool_calls(chat_template *t, const char *text, const char *reasoning,
                                 const char *tool_calls);
int chat_template_add_tool_result(chat_template *t, const char *tool_call_id,
                                  const char *content);
/* A system (or developer) message in the conversation's order, as the template renders it
 * (Gemma 4's: a <|turn>system turn of its own). 0, or -1 out of memory. */
int chat_template_add_system(chat_template *t, const char *text);
/* The tools offered to the model (an OpenAI tools array as JSON text; NULL: none): the template
 * declares them in the system turn. 0, or -1 out of memory. */
int chat_template_set_tools(chat_template *t, const char *tools);
/* Drops the last message. */
void chat_template_pop(chat_template *t);
/* Forgets the whole conversation (the template stays). */
void chat_template_reset(chat_template *t);

/* The whole conversation as prompt text, BOS left out, each medium as CHAT_MEDIA_MARKER in the
 * order of the messages: system (or NULL), thinking on or off, the generation prompt. Returns a
 * malloc'd string, or NULL with a message (the template raised an error, or its output does not
 * hold the media in order: a text that itself holds <|image|> or <|video|>; tools, tool calls or
 * tool results with our own rendering, which has no tool format). */
char *chat_template_render(const chat_template *t, const char *system, int enable_thinking,
                           int add_generation_prompt, char *err, size_t errsz);

/* Our rendering alone (the fallback), for tests: the same arguments. */
char *chat_template_render_builtin(const chat_template *t, const char *system,
                                   int enable_thinking, int add_generation_prompt);

#endif
