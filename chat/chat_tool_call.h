/* chat_tool_call.h - Gemma 4 tool calls: the grammar that makes the model write calls to the
 * request's tools, and the parser that reads them back (docs/CHAT.md "Grammar layer").
 *
 * Gemma 4 writes a call as <|tool_call>call:NAME{key:VALUE,...}<tool_call|>, as its chat
 * template renders one (macro format_argument): <|tool_call>, <tool_call|> and <|"|> are single
 * special tokens; strings are <|"|>text<|"|> with the text raw (no escapes); keys are bare and
 * sorted (the template's dictsort: case-insensitive); values are strings, numbers, true, false,
 * null, {key:value} objects and [a,b] arrays. Calls may follow each other (parallel calls); after
 * them the model writes <|tool_response>, the end of its turn for a call. */
#ifndef G4V_CHAT_TOOL_CALL_H
#define G4V_CHAT_TOOL_CALL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CHAT_TOOLS_MAX 128          /* tools in one request */
#define CHAT_TOOL_NAME_MAX 64       /* [a-zA-Z0-9_-]{1,64} */
#define CHAT_TOOL_ARGS_MAX_DEPTH 64 /* nesting of one call's arguments, parsing */

/* The request's OpenAI tools array checked: an array of at most CHAT_TOOLS_MAX objects
 * {"type":"function","function":{"name":..,"description":..,"parameters":{schema}}}, names
 * [a-zA-Z0-9_-]{1,64} and unique, parameters (absent: no arguments; {}: any object) an object
 * schema that passes chat_schema_check (chat_grammar.h) with property names a bare Gemma key can
 * hold (none of : , { } [ ] < > " \ |, spaces or control characters). 0, or -1 with a message
 * naming the tool. */
int chat_tools_check(const char *tools_json, char *err, size_t errsz);

typedef struct chat_tool_grammar_opts {
    const char *only_name; /* tool_choice naming a function: only that one; NULL: any */
    int min_calls;         /* 1 for tool_choice "required" or a named function */
    int max_calls;         /* -1: any number (parallel calls); 1: parallel_tool_calls false */
    int allow_thought;     /* an optional <|channel>...<channel|> thought first (thinking on) */
} chat_tool_grammar_opts;

/* GBNF (root rule "root") for llama_sampler_init_grammar with Gemma 4's vocabulary: optionally a
 * thought, then min..max calls to the tools (each call's arguments constrained by its parameters
 * schema), then optionally <|tool_response>. The grammar names the special tokens (<|tool_call>,
 * <|"|>, ...), so it needs a vocabulary that has them as single tokens. For tool_choice "auto"
 * use it lazily: llama_sampler_init_grammar_lazy_patterns with the trigger "<|tool_call>" (set
 * allow_thought 0 then: the trigger comes after any thought).
 * What the grammar enforces from a parameters schema: properties (in the template's sorted
 * order), required vs optional, no undeclared keys (additionalProperties is not generated),
 * type (incl. type arrays), enum/const of strings, numbers, booleans and null, integer vs
 * number, boolean, null, nested objects, arrays with items, minItems >= 1 and maxItems,
 * integers between minimum and maximum when the range holds at most 256 values, anyOf/oneOf,
 * $ref into $defs/definitions (recursion allowed). Falls back to any Gemma value of the type for:
 * pattern, format, minLength/maxLength (any string), other bounds (any integer/number),
 * minItems > 1, prefixItems (any array), allOf and enum values that are objects or
 * arrays (any value). chat_schema_validate checks those on the parsed arguments.
 * 0, or -1 with a message (the tools fail chat_tools_check, only_name is not among them). */
int chat_tool_grammar(const char *tools_json, const chat_tool_grammar_opts *o, char **gbnf,
                      char *err, size_t errsz);

typedef struct chat_tool_call {
    char *name;           /* the function's name */
    char *arguments_json; /* its arguments as a JSON object's text (OpenAI function.arguments) */
} chat_tool_call;

/* text: the answer with special tokens written out as their text. Finds every
 * <|tool_call>call:NAME{...}<tool_call|>, converts the Gemma-syntax arguments to JSON text (keys
 * in the order written, numbers as written, strings JSON-escaped); content_out (may be NULL): the
 * text outside the calls, up to a <|tool_response> (the end of the turn), malloc'ed, may be "".
 * *calls is malloc'ed (NULL when *n is 0). 0, or -1 with a message for a malformed call (an
 * unterminated string, a missing <tool_call|>, a bad number, ...); nothing to free then. */
/* A call cut short (the answer's token limit came first): text from its <|tool_call> on, as far as
 * the model wrote it. *name: the function's name as far as written; *args: the start of its
 * arguments as JSON text, as far as they go (OpenAI returns a cut call's arguments so: a prefix
 * of the JSON, not valid JSON). Both malloc'ed. 0, or -1 out of memory. */
int chat_tool_call_partial(const char *text, size_t len, char **name, char **args);
int chat_tool_calls_parse(const char *text, size_t len, chat_tool_call **calls, int *n,
                          char **content_out, char *err, size_t errsz);
void chat_tool_calls_free(chat_tool_call *calls, int n);

#ifdef __cplusplus
}
#endif

#endif
