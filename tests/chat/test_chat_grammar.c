/* test_chat_grammar.c - the grammar layer (chat/chat_grammar.h, chat_tool_call.h) driven
 * through libllama's grammar sampler with Gemma 4's real vocabulary (llama.cpp's
 * models/ggml-vocab-gemma-4.gguf, loaded vocab-only): candidate answers are tokenized (special
 * tokens as tokens) and fed token by token; a valid answer must be accepted to the end and then
 * allow the end of generation, an invalid one must be refused at the token that holds its first
 * wrong byte. Then hostile schemas: each refused quickly with the expected message.
 * usage: test_chat_grammar VOCAB.gguf */
#include "chat_grammar.h"
#include "chat_tool_call.h"

#include <llama.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
static const struct llama_vocab *vocab;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void quiet_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

enum { ACCEPT, REFUSE };

/* Feeds text through the grammar. Returns 0 when every token is accepted and then the end of
 * generation is allowed; otherwise *at is the byte offset of the refused token's start and
 * *at_end its end (the whole text's length when only the end was refused). -1: no sampler. */
static llama_token lazy_trigger = LLAMA_TOKEN_NULL; /* set: a lazy grammar, from that token */

static const char *start_rule = "root";

static int drive(const char *gbnf, const char *text, size_t *at, size_t *at_end) {
    struct llama_sampler *smpl =
        lazy_trigger == LLAMA_TOKEN_NULL
            ? llama_sampler_init_grammar(vocab, gbnf, start_rule)
            : llama_sampler_init_grammar_lazy_patterns(vocab, gbnf, "root", NULL, 0, &lazy_trigger, 1);
    if (!smpl) return -1;
    int len = (int)strlen(text);
    llama_token *toks = malloc(sizeof *toks * (size_t)(len + 8));
    int n = llama_tokenize(vocab, text, len, toks, len + 8, false, true);
    int rc = 0;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        char piece[256];
        int pl = llama_token_to_piece(vocab, toks[i], piece, sizeof piece, 0, true);
        llama_token_data d = {toks[i], 0.0f, 0.0f};
        llama_token_data_array arr = {&d, 1, -1, false};
        llama_sampler_apply(smpl, &arr);
        if (d.logit == -INFINITY) {
            *at = off, *at_end = off + (size_t)(pl > 0 ? pl : 0);
            rc = 1;
            break;
        }
        llama_sampler_accept(smpl, toks[i]);
        off += (size_t)(pl > 0 ? pl : 0);
    }
    if (!rc) {
        llama_token eog = llama_vocab_eot(vocab);
        if (eog == LLAMA_TOKEN_NULL) eog = llama_vocab_eos(vocab);
        llama_token_data d = {eog, 0.0f, 0.0f};
        llama_token_data_array arr = {&d, 1, -1, false};
        llama_sampler_apply(smpl, &arr);
        if (d.logit == -INFINITY) *at = *at_end = (size_t)len, rc = 1;
    }
    free(toks);
    llama_sampler_free(smpl);
    return rc;
}

/* expect ACCEPT, or REFUSE at the first byte of `marker` in text (the token holding it). */
static void expect(const char *what, const char *gbnf, const char *text, int want,
                   const char *marker) {
    size_t at = 0, at_end = 0;
    int rc = drive(gbnf, text, &at, &at_end);
    CHECK(rc >= 0, "%s: the grammar does not load into libllama", what);
    if (rc < 0) return;
    if (want == ACCEPT) {
        CHECK(rc == 0, "%s: refused at byte %zu (\"%.20s\") of %s", what, at, text + at, text);
        return;
    }
    const char *m = marker ? strstr(text, marker) : text + strlen(text);
    size_t pos = m ? (size_t)(m - text) : 0;
    CHECK(rc == 1, "%s: accepted but should not be: %s", what, text);
    if (rc == 1)
        CHECK(at <= pos && (pos < at_end || (at == at_end && pos == at)),
              "%s: refused at bytes [%zu,%zu) (\"%.20s\"), expected at byte %zu (\"%.20s\")", what,
              at, at_end, text + at, pos, text + pos);
}

/* The string quote <|"|> spelled by ordinary tokens (one per character: the tokenizer itself
 * always makes the text <|"|> the one token, a user-defined token) inside a string is refused:
 * the parser, reading text, would end the string there. */
static void spelled_quote(const char *gbnf) {
    static const char head[] = "<|tool_call>call:get_weather{city:<|\"|>Os", tail[] = "lo<|\"|>}<tool_call|>";
    llama_token toks[128];
    int n = llama_tokenize(vocab, head, (int)strlen(head), toks, 64, false, true);
    int first_spelled = n;
    for (const char *c = "<|\"|>"; *c; c++) n += llama_tokenize(vocab, c, 1, toks + n, 4, false, false);
    int end_spelled = n;
    n += llama_tokenize(vocab, tail, (int)strlen(tail), toks + n, 128 - n, false, true);
    CHECK(end_spelled - first_spelled == 5, "the quote spelled is %d token(s)", end_spelled - first_spelled);
    struct llama_sampler *smpl = llama_sampler_init_grammar(vocab, gbnf, "root");
    int refused = -1;
    for (int i = 0; i < n && refused < 0; i++) {
        llama_token_data d = {toks[i], 0.0f, 0.0f};
        llama_token_data_array arr = {&d, 1, -1, false};
        llama_sampler_apply(smpl, &arr);
        if (d.logit == -INFINITY) refused = i;
        else llama_sampler_accept(smpl, toks[i]);
    }
    /* "<", "|", "\"" and "|" may follow each other in a string; ">" may not */
    CHECK(refused == end_spelled - 1,
          "the quote spelled by ordinary tokens: refused at token %d, expected %d", refused,
          end_spelled - 1);
    llama_sampler_free(smpl);
}

static char *schema_gbnf(const char *schema) {
    char *g = NULL, err[512];
    int rc = chat_schema_grammar(schema, strlen(schema), &g, err, sizeof err);
    CHECK(rc == 0, "schema refused: %s (%s)", err, schema);
    return g;
}

static void test_schemas(void) {
    const char *person =
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
        "\"age\":{\"type\":\"integer\"},\"color\":{\"enum\":[\"red\",\"green\"]},"
        "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":2}},"
        "\"required\":[\"name\",\"age\",\"color\"],\"additionalProperties\":false}";
    char *g = schema_gbnf(person);
    if (g) {
        expect("person", g, "{\"name\":\"Ann\",\"age\":31,\"color\":\"red\"}", ACCEPT, NULL);
        expect("person spaced", g, "{ \"name\": \"Ann \\\"A\\\" \\u00e9\", \"age\": -4, \"color\": \"green\", \"tags\": [\"a\", \"b\"] }", ACCEPT, NULL);
        expect("person unicode", g, "{\"name\":\"Zoë 日本\",\"age\":0,\"color\":\"red\"}", ACCEPT, NULL);
        expect("missing required", g, "{\"name\":\"Ann\",\"color\":\"red\"}", REFUSE, "color");
        expect("wrong enum", g, "{\"name\":\"Ann\",\"age\":31,\"color\":\"blue\"}", REFUSE, "blue");
        expect("wrong type", g, "{\"name\":\"Ann\",\"age\":\"31\",\"color\":\"red\"}", REFUSE, "\"31");
        expect("extra key", g, "{\"name\":\"Ann\",\"age\":31,\"color\":\"red\",\"x\":1}", REFUSE, "x\"");
        expect("too many items", g, "{\"name\":\"A\",\"age\":1,\"color\":\"red\",\"tags\":[\"a\",\"b\",\"c\"]}", REFUSE, ",\"c\"");
        expect("not finished", g, "{\"name\":\"Ann\",\"age\":31", REFUSE, NULL);
        free(g);
    }
    /* patterns inside the converter's subset pass both the check and the converter */
    static const char *const patterns[] = {
        "^[a-z]+(?:-[a-z]+)*$", "^\\\\+?[0-9]{1,3}$", "^a|b$", "^\\\\x41\\\\u00e9\\\\.$", "^.{2,5}$",
        "^[^\\\\\\\"<]*$", "^(ab|c)?d{2}[x\\\\-y]+$", "^\\\\(\\\\)\\\\[\\\\]\\\\{\\\\}\\\\*\\\\?\\\\|\\\\^\\\\$$", "^\\t\\n$"};
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
        char schema[256];
        snprintf(schema, sizeof schema, "{\"type\":\"string\",\"pattern\":\"%s\"}", patterns[i]);
        free(schema_gbnf(schema));
    }
    /* "pattern" inside values (enum, const, default, examples) is data, not a keyword */
    g = schema_gbnf("{\"type\":\"object\",\"default\":{\"pattern\":\"\\\\d\"},\"properties\":{\"p\":"
                    "{\"enum\":[{\"pattern\":\"(?=x)\"}],\"examples\":[{\"pattern\":\"x\"}]}}}");
    free(g);
    g = schema_gbnf("{\"type\":\"object\"}"); /* response_format json_object */
    if (g) {
        /* thinking on: an optional thought first (its own start rule) */
        char *t = strdup(g), err[256];
        CHECK(chat_grammar_allow_thought(&t, err, sizeof err) == 0, "allow_thought: %s", err);
        start_rule = CHAT_GRAMMAR_THOUGHT_ROOT;
        expect("thought + json", t, "<|channel>thought\nThe user wants {JSON}.<channel|>{\"a\":1}", ACCEPT, NULL);
        expect("json, thought allowed", t, "{\"a\":1}", ACCEPT, NULL);
        expect("thought + text", t, "<|channel>thought\nhm<channel|>Sure: {}", REFUSE, "Sure");
        start_rule = "root";
        expect("thought refused by root", t, "<|channel>thought\nhm<channel|>{}", REFUSE, "<|channel>");
        CHECK(chat_grammar_allow_thought(&t, err, sizeof err) == -1 && strstr(err, "already"),
              "allow_thought twice: %s", err);
        free(t);
        expect("json_object", g, "{\"a\":[1,2.5e3,{\"b\":null}],\"c\":\"d\",\"e\":true}", ACCEPT, NULL);
        expect("json_object empty", g, "{}", ACCEPT, NULL);
        expect("json_object array", g, "[1,2]", REFUSE, "[");
        expect("json_object text", g, "Sure! {}", REFUSE, "Sure");
        free(g);
    }
    g = schema_gbnf("{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},"
                    "\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},"
                    "\"required\":[\"v\"],\"additionalProperties\":false}},\"$ref\":\"#/$defs/node\"}");
    if (g) {
        expect("recursive", g, "{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[]}]}", ACCEPT, NULL);
        expect("recursive bad", g, "{\"v\":1,\"kids\":[{\"w\":2}]}", REFUSE, "w\"");
        free(g);
    }
    g = schema_gbnf("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":1,"
                    "\"maximum\":12},\"d\":{\"type\":\"string\",\"format\":\"date\"},"
                    "\"code\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}-[0-9]{2}$\"},"
                    "\"x\":{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"boolean\"}]}},"
                    "\"required\":[\"n\",\"d\",\"code\",\"x\"],\"additionalProperties\":false}");
    if (g) {
        expect("bounds", g, "{\"n\":12,\"d\":\"2026-12-03\",\"code\":\"ABC-12\",\"x\":null}", ACCEPT, NULL);
        expect("over maximum", g, "{\"n\":13,\"d\":\"2026-12-03\",\"code\":\"ABC-12\",\"x\":true}", REFUSE, "3,");
        expect("bad date", g, "{\"n\":1,\"d\":\"2026-13-03\",\"code\":\"ABC-12\",\"x\":true}", REFUSE, "3-03");
        expect("bad pattern", g, "{\"n\":1,\"d\":\"2026-12-03\",\"code\":\"AB-12\",\"x\":true}", REFUSE, "-12\"");
        expect("bad anyOf", g, "{\"n\":1,\"d\":\"2026-12-03\",\"code\":\"ABC-12\",\"x\":1}", REFUSE, "1}");
        free(g);
    }
}

static const char TOOLS[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"unit\":{\"type\":\"string\","
    "\"enum\":[\"celsius\",\"fahrenheit\"]},\"city\":{\"type\":\"string\"},"
    "\"days\":{\"type\":\"integer\"}},\"required\":[\"city\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"search\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"query\":{\"type\":\"string\"},\"filters\":{\"type\":\"object\",\"properties\":"
    "{\"lang\":{\"type\":\"string\"},\"max\":{\"type\":\"number\"},\"safe\":{\"type\":\"boolean\"}}},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"extra\":{}},"
    "\"required\":[\"query\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"now\"}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"free\",\"parameters\":{}}}]";

static char *tools_gbnf(const char *only, int min, int max, int thought) {
    chat_tool_grammar_opts o = {only, min, max, thought};
    char *g = NULL, err[512];
    int rc = chat_tool_grammar(TOOLS, &o, &g, err, sizeof err);
    CHECK(rc == 0, "tools refused: %s", err);
    return g;
}

#define Q "<|\"|>"
static void test_tools(void) {
    char *g = tools_gbnf(NULL, 1, -1, 0);
    if (g) {
        expect("call", g, "<|tool_call>call:get_weather{city:" Q "Paris" Q ",unit:" Q "celsius" Q "}<tool_call|>", ACCEPT, NULL);
        expect("call + response", g, "<|tool_call>call:get_weather{city:" Q "Saint-Étienne, \"FR\" {x:1} <b>" Q ",days:3}<tool_call|><|tool_response>", ACCEPT, NULL);
        expect("parallel", g, "<|tool_call>call:get_weather{city:" Q "Oslo" Q "}<tool_call|><|tool_call>call:search{filters:{lang:" Q "en" Q ",max:1.5e-05,safe:false},query:" Q "a\nb" Q ",tags:[" Q "x" Q "," Q "y" Q "]}<tool_call|>", ACCEPT, NULL);
        expect("any extra", g, "<|tool_call>call:search{extra:{a:[1,null,{b:" Q "c" Q "}]},query:" Q "q" Q "}<tool_call|>", ACCEPT, NULL);
        expect("< in strings", g, "<|tool_call>call:get_weather{city:" Q "a<b <|tool_call> <|\"x <<|\"| <|\"|" Q "}<tool_call|>", ACCEPT, NULL);
        spelled_quote(g);
        expect("params {}", g, "<|tool_call>call:free{a:1,b:{c:" Q "d" Q "}}<tool_call|>", ACCEPT, NULL);
        expect("params {} not an object", g, "<|tool_call>call:free[1]<tool_call|>", REFUSE, "[1]");
        expect("no params", g, "<|tool_call>call:now{}<tool_call|>", ACCEPT, NULL);
        expect("undeclared", g, "<|tool_call>call:get_time{city:" Q "Oslo" Q "}<tool_call|>", REFUSE, "time");
        expect("missing required", g, "<|tool_call>call:get_weather{unit:" Q "celsius" Q "}<tool_call|>", REFUSE, "unit");
        expect("wrong enum", g, "<|tool_call>call:get_weather{city:" Q "Oslo" Q ",unit:" Q "kelvin" Q "}<tool_call|>", REFUSE, "kelvin");
        expect("wrong type", g, "<|tool_call>call:get_weather{city:" Q "Oslo" Q ",days:" Q "3" Q "}<tool_call|>", REFUSE, Q "3");
        expect("undeclared key", g, "<|tool_call>call:get_weather{city:" Q "Oslo" Q ",zone:1}<tool_call|>", REFUSE, "zone");
        expect("JSON key", g, "<|tool_call>call:get_weather{\"city\":" Q "Oslo" Q "}<tool_call|>", REFUSE, "\"city");
        expect("text first", g, "Sure.<|tool_call>call:now{}<tool_call|>", REFUSE, "Sure");
        expect("no call", g, "<|tool_response>", REFUSE, "<|tool_response>");
        free(g);
    }
    g = tools_gbnf("search", 1, 1, 0);
    if (g) {
        expect("named", g, "<|tool_call>call:search{query:" Q "q" Q "}<tool_call|>", ACCEPT, NULL);
        expect("named other", g, "<|tool_call>call:get_weather{city:" Q "Oslo" Q "}<tool_call|>", REFUSE, "get_");
        expect("max 1", g, "<|tool_call>call:search{query:" Q "q" Q "}<tool_call|><|tool_call>call:search{query:" Q "r" Q "}<tool_call|>", REFUSE, "<|tool_call>call:search{query:" Q "r");
        free(g);
    }
    g = tools_gbnf(NULL, 1, -1, 1);
    if (g) {
        expect("thought", g, "<|channel>thought\nThe user wants {weather}: " Q " call it.<channel|><|tool_call>call:now{}<tool_call|>", ACCEPT, NULL);
        expect("no thought", g, "<|tool_call>call:now{}<tool_call|>", ACCEPT, NULL);
        free(g);
    }
    /* tool_choice "auto": the grammar lazy, from the token <|tool_call> on (text before it free) */
    g = tools_gbnf(NULL, 1, -1, 0);
    if (g) {
        llama_token t[4];
        CHECK(llama_tokenize(vocab, "<|tool_call>", 12, t, 4, false, true) == 1, "<|tool_call> is not one token");
        lazy_trigger = t[0];
        expect("lazy text", g, "Just an answer, no call.", ACCEPT, NULL);
        expect("lazy call", g, "Let me look. <|tool_call>call:now{}<tool_call|>", ACCEPT, NULL);
        expect("lazy bad call", g, "Let me look. <|tool_call>call:nope{}<tool_call|>", REFUSE, "nope");
        lazy_trigger = LLAMA_TOKEN_NULL;
        free(g);
    }
    char err[256];
    chat_tool_grammar_opts o = {"nope", 1, 1, 0};
    char *none = NULL;
    CHECK(chat_tool_grammar(TOOLS, &o, &none, err, sizeof err) == -1 && strstr(err, "nope"),
          "tool_choice naming an undeclared function: %s", err);
}

typedef struct hostile {
    const char *what;
    char *schema;
    const char *message;
} hostile;

static char *repeat_fmt(const char *head, const char *each, int n, const char *sep,
                        const char *tail) {
    size_t cap = strlen(head) + strlen(tail) + (size_t)n * (strlen(each) + strlen(sep) + 256) + 1;
    char *s = malloc(cap), *p = s;
    p += sprintf(p, "%s", head);
    for (int i = 0; i < n; i++) p += sprintf(p, i ? "%s" : "", sep), p += sprintf(p, each, i);
    sprintf(p, "%s", tail);
    return s;
}

/* n arrays of arrays: {"type":"array","items":{...{}...}} */
static char *nested(int n) {
    char *s = malloc((size_t)n * 32 + 8), *p = s;
    for (int i = 0; i < n; i++) p += sprintf(p, "{\"type\":\"array\",\"items\":");
    p += sprintf(p, "{}");
    for (int i = 0; i < n; i++) *p++ = '}';
    *p = 0;
    return s;
}

static void test_hostile(void) {
    hostile h[] = {
        {"unknown keyword", strdup("{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"object\",\"patternProperties\":{}}}}"), "\"patternProperties\" at /properties/x is not supported"},
        {"$ref #", strdup("{\"$ref\":\"#\"}"), "does not resolve"},
        {"$ref a->b->a", strdup("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}"), "comes back to itself"},
        {"$ref a->anyOf[a]", strdup("{\"$defs\":{\"a\":{\"anyOf\":[{\"type\":\"string\"},{\"$ref\":\"#/$defs/a\"}]}},\"$ref\":\"#/$defs/a\"}"), "comes back to itself"},
        {"$ref missing", strdup("{\"$ref\":\"#/$defs/zz\"}"), "does not resolve"},
        {"$ref siblings", strdup("{\"$defs\":{\"a\":{\"type\":\"string\"}},\"type\":\"object\",\"properties\":{\"x\":{\"$ref\":\"#/$defs/a\",\"maxLength\":3}}}"), "$ref must stand alone"},
        {"nullable", strdup("{\"type\":\"string\",\"nullable\":true}"), "nullable"},
        {"minimum untyped", strdup("{\"minimum\":3}"), "need \"type\""},
        {"wrong family", strdup("{\"type\":\"string\",\"minimum\":3}"), "does not apply"},
        {"required undeclared", strdup("{\"type\":\"object\",\"properties\":{},\"required\":[\"a\"]}"), "required names \"a\""},
        {"format", strdup("{\"type\":\"string\",\"format\":\"email\"}"), "format \"email\""},
        {"pattern \\d", strdup("{\"type\":\"string\",\"pattern\":\"^\\\\d+$\"}"), "escape \\d"},
        {"pattern unanchored", strdup("{\"type\":\"string\",\"pattern\":\"abc\"}"), "anchored"},
        {"pattern lookahead", strdup("{\"type\":\"string\",\"pattern\":\"^(?=a)b$\"}"), "lookaround"},
        {"pattern repeat", strdup("{\"type\":\"string\",\"pattern\":\"^a{5000}$\"}"), "repetition count"},
        {"maxLength", strdup("{\"type\":\"string\",\"maxLength\":100000}"), "over the limit of 1024"},
        {"enum mismatch", strdup("{\"type\":\"string\",\"enum\":[\"a\",1]}"), "enum value 1"},
        {"depth", nested(40), "deeper than 32"},
        {"enum size", repeat_fmt("{\"enum\":[", "%d", 2000, ",", "]}"), "over the limit of 1024"},
        {"enum text", repeat_fmt("{\"enum\":[", "\"%0200d\"", 400, ",", "]}"), "bytes of JSON, over the limit"},
        {"properties", repeat_fmt("{\"type\":\"object\",\"properties\":{", "\"p%d\":{}", 200, ",", "}}"), "over the limit of 128"},
        {"nodes", repeat_fmt("{\"anyOf\":[", "{\"type\":\"integer\",\"minimum\":%d}", 5000, ",", "]}"), "more than 4096 subschemas"},
        {"size", repeat_fmt("{\"description\":\"", "%08d", 40000, "", "\"}"), "over the limit of 262144"},
        {"not JSON", strdup("{\"type\":"), "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
        char err[1024] = "", *g = NULL;
        double t = now();
        int rc = chat_schema_grammar(h[i].schema, strlen(h[i].schema), &g, err, sizeof err);
        double dt = now() - t;
        CHECK(rc == -1 && strstr(err, h[i].message), "hostile %s: rc %d, message \"%s\", want \"%s\"",
              h[i].what, rc, err, h[i].message);
        CHECK(dt < 0.5, "hostile %s took %.3f s", h[i].what, dt);
        free(g);
        free(h[i].schema);
    }

    /* the worst schema inside the limits we found: 31 objects of 128 optional properties (the
     * converter's optional-property rules are quadratic), additionalProperties a schema */
    char *worst = malloc(1 << 20), *p = worst;
    p += sprintf(p, "{\"type\":\"object\",\"properties\":{");
    for (int j = 0; j < 31; j++) {
        p += sprintf(p, "%s\"o%d\":{\"type\":\"object\",\"properties\":{", j ? "," : "", j);
        for (int i = 0; i < 128; i++) p += sprintf(p, "%s\"p%d\":{\"type\":\"string\"}", i ? "," : "", i);
        p += sprintf(p, "},\"additionalProperties\":{\"type\":\"integer\"}}");
    }
    sprintf(p, "}}");
    char err[512], *g = NULL;
    double t = now();
    int rc = chat_schema_grammar(worst, strlen(worst), &g, err, sizeof err);
    double dt = now() - t;
    CHECK(rc == 0, "the worst accepted schema: %s", err);
    struct llama_sampler *s = NULL;
    double t2 = now();
    if (g) s = llama_sampler_init_grammar(vocab, g, "root");
    double dt2 = now() - t2;
    CHECK(s != NULL, "the worst accepted schema's grammar does not load");
    printf("worst accepted schema: %zu bytes -> %zu bytes of GBNF in %.3f s; "
           "llama_sampler_init_grammar %.3f s\n", strlen(worst), g ? strlen(g) : 0, dt, dt2);
    CHECK(dt < 5.0, "the worst accepted schema took %.3f s", dt);
    if (s) llama_sampler_free(s);
    free(g);
    free(worst);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_chat_grammar VOCAB.gguf\n");
        return 2;
    }
    llama_log_set(quiet_log, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "cannot load the vocabulary %s\n", argv[1]);
        return 1;
    }
    vocab = llama_model_get_vocab(model);
    test_schemas();
    test_tools();
    test_hostile();
    llama_model_free(model);
    llama_backend_free();
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("test_chat_grammar: all passed\n");
    return 0;
}
