/* chat_grammar.h - JSON Schema -> GBNF grammar for structured output (OpenAI response_format),
 * the schema check that comes first, and a validator of JSON values against a schema
 * (docs/CHAT.md "Grammar layer", docs/CHAT_API.md "Supported JSON Schema").
 *
 * The grammar comes from llama.cpp's own converter (llama.cpp/common/json-schema-to-grammar.cpp,
 * the one llama-server uses for response_format), compiled from the pinned llama.cpp tree
 * (cmake/ChatJinja.cmake, target g4v_chat_schema; G4V_HAVE_CHAT_SCHEMA). Before it sees a schema,
 * chat_schema_check() (C, cJSON) refuses what the converter would silently loosen or could not
 * bound: unknown keywords, keyword combinations the converter ignores, unsupported patterns and
 * formats, and hostile sizes (the CHAT_SCHEMA_MAX_* limits below). The grammar it returns is
 * what llama_sampler_init_grammar(vocab, gbnf, "root") takes.
 *
 * Thread safety: no shared state; any number of threads may call these at once (cJSON parses go
 * through fe_json_parse_text's lock). */
#ifndef G4V_CHAT_GRAMMAR_H
#define G4V_CHAT_GRAMMAR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Limits on a schema (hostile input must be refused cheaply, before any conversion). */
#define CHAT_SCHEMA_MAX_BYTES (256 * 1024)  /* the schema's JSON text */
#define CHAT_SCHEMA_MAX_DEPTH 32            /* nested subschemas */
#define CHAT_SCHEMA_MAX_NODES 4096          /* subschemas in all, $defs included */
#define CHAT_SCHEMA_MAX_PROPERTIES 128     /* properties of one object (the converter's optional-
                                              property rules grow with the square of it) */
#define CHAT_SCHEMA_MAX_ENUM 1024           /* values of one enum */
#define CHAT_SCHEMA_MAX_ENUM_TEXT (64 * 1024) /* JSON text of one enum's values or one const */
#define CHAT_SCHEMA_MAX_REPEAT 1024         /* minLength/maxLength/minItems/maxItems, {m,n} */
#define CHAT_SCHEMA_MAX_BOUND 9007199254740991.0 /* |minimum|, |maximum|: 2^53 - 1 */
#define CHAT_SCHEMA_MAX_GRAMMAR (1024 * 1024) /* bytes of GBNF produced */

/* schema: JSON text of a JSON Schema (OpenAI response_format.json_schema.schema), len bytes (no
 * NUL needed). Checks it (chat_schema_check), converts it with llama.cpp's converter and writes a
 * malloc'ed GBNF grammar whose root rule is named "root" into *gbnf. 0, or -1 with a message
 * naming the problem (the keyword and its JSON pointer path). {"type":"json_object"} is
 * chat_schema_grammar("{\"type\":\"object\"}"): any JSON object. Without the C++ converter
 * (a build with no C++ compiler) always -1 saying so. */
int chat_schema_grammar(const char *schema, size_t len, char **gbnf, char *err, size_t errsz);

/* The check alone: 0 when the schema is inside the supported subset and limits, -1 with a
 * message like 'the schema keyword "patternProperties" at /properties/x is not supported
 * (supported: ...)'. prefix starts the message ("response_format", "tools[0].function.parameters";
 * NULL for "schema"). */
int chat_schema_check(const char *schema, size_t len, const char *prefix, char *err, size_t errsz);

/* value_json against schema (both JSON text, NUL-terminated), in the section of JSON Schema
 * chat_schema_check accepts: type, properties, required, additionalProperties, items,
 * prefixItems, minItems, maxItems, enum, const, anyOf, oneOf (exactly one), allOf, $ref into
 * $defs/definitions, minLength/maxLength (code points), minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum, pattern (POSIX extended after "(?:" -> "("; a pattern regcomp refuses is not
 * checked), format date/time/date-time/uuid. 0 valid, 1 invalid with the first failing path and
 * why in err, -1 bad input (either text not JSON, the schema not a schema). */
int chat_schema_validate(const char *schema, const char *value_json, char *err, size_t errsz);

/* Thinking on: Gemma 4 may think first (<|channel>thought...<channel|>), which a grammar rooted
 * at the answer would refuse. Appends to the malloc'ed *gbnf (any grammar with a rule "root") a
 * rule CHAT_GRAMMAR_THOUGHT_ROOT matching an optional thought (<|channel>, any tokens but
 * <channel|>, <channel|>) then root; give that name as llama_sampler_init_grammar's grammar_root.
 * The thought is told apart by token (chat_thought.c), so its text is not constrained. 0, or -1
 * (out of memory, or the grammar already has a rule of that name; *gbnf is untouched then). */
#define CHAT_GRAMMAR_THOUGHT_ROOT "g4v-thought-then-root"
int chat_grammar_allow_thought(char **gbnf, char *err, size_t errsz);

/* The converter alone, without the check (chat_schema_grammar.cpp; G4V_HAVE_CHAT_SCHEMA). Callers
 * want chat_schema_grammar. */
int chat_schema_convert(const char *schema, size_t len, char **gbnf, char *err, size_t errsz);

#ifdef __cplusplus
}
#endif

#endif
