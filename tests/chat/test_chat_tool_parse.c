/* test_chat_tool_parse.c - Gemma 4 tool calls parsed back (chat_tool_calls_parse) and JSON values
 * checked against schemas (chat_schema_validate); no model, no vocabulary.
 * Round trips: JSON arguments -> Gemma call syntax as the official template's format_argument
 * renders it (bare keys, sorted case-insensitively; <|"|> strings, raw) -> parsed -> equal JSON.
 * usage: test_chat_tool_parse            the tests
 *        test_chat_tool_parse --parse    stdin's text parsed: one JSON line per call
 *                                        {"name":..,"arguments":{..}}, then {"content":..}
 *                                        (test_chat_tool_template.py drives it) */
#include "chat_grammar.h"
#include "chat_tool_call.h"

#include <cjson/cJSON.h>

#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

#define Q "<|\"|>"

/* ---- format_argument, re-done in C for the round trips ------------------------------------ */

typedef struct out {
    char buf[1 << 16];
    size_t n;
} out;

static void put(out *o, const char *s) {
    size_t k = strlen(s);
    if (o->n + k < sizeof o->buf) memcpy(o->buf + o->n, s, k + 1), o->n += k;
}

static int key_cmp(const void *a, const void *b) {
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    return strcasecmp(x->string, y->string);
}

static void render(out *o, const cJSON *v) {
    if (cJSON_IsNull(v)) put(o, "null");
    else if (cJSON_IsTrue(v)) put(o, "true");
    else if (cJSON_IsFalse(v)) put(o, "false");
    else if (cJSON_IsString(v)) put(o, Q), put(o, v->valuestring), put(o, Q);
    else if (cJSON_IsNumber(v)) {
        char *t = cJSON_PrintUnformatted(v);
        put(o, t);
        free(t);
    } else if (cJSON_IsArray(v)) {
        put(o, "[");
        const cJSON *e;
        cJSON_ArrayForEach(e, v) put(o, e == v->child ? "" : ","), render(o, e);
        put(o, "]");
    } else if (cJSON_IsObject(v)) {
        int n = cJSON_GetArraySize(v), i = 0;
        const cJSON **k = malloc(sizeof *k * (size_t)(n + 1)), *e;
        cJSON_ArrayForEach(e, v) k[i++] = e;
        qsort(k, (size_t)n, sizeof *k, key_cmp);
        put(o, "{");
        for (i = 0; i < n; i++) put(o, i ? "," : ""), put(o, k[i]->string), put(o, ":"), render(o, k[i]);
        put(o, "}");
        free(k);
    }
}

static void round_trip(const char *name, const char *args_json) {
    cJSON *args = cJSON_Parse(args_json);
    CHECK(args != NULL, "%s: bad test JSON", name);
    if (!args) return;
    out *o = calloc(1, sizeof *o);
    put(o, "Let me check.<|tool_call>call:");
    put(o, name);
    render(o, args);
    put(o, "<tool_call|><|tool_response>");
    chat_tool_call *calls;
    int n;
    char *content, err[256];
    int rc = chat_tool_calls_parse(o->buf, o->n, &calls, &n, &content, err, sizeof err);
    CHECK(rc == 0 && n == 1, "%s: %s (%s)", name, rc ? err : "not one call", o->buf);
    if (rc == 0 && n == 1) {
        cJSON *back = cJSON_Parse(calls[0].arguments_json);
        CHECK(back && cJSON_Compare(back, args, 1), "%s: %s came back as %s", name, args_json,
              calls[0].arguments_json);
        CHECK(!strcmp(calls[0].name, name), "%s: name %s", name, calls[0].name);
        CHECK(!strcmp(content, "Let me check."), "%s: content \"%s\"", name, content);
        cJSON_Delete(back);
    }
    if (rc == 0) chat_tool_calls_free(calls, n), free(content);
    free(o);
    cJSON_Delete(args);
}

static void test_round_trips(void) {
    round_trip("get_weather", "{\"city\":\"Paris\",\"unit\":\"celsius\"}");
    round_trip("empty", "{}");
    round_trip("escapes", "{\"s\":\"a \\\"quoted\\\" \\\\ back\\nslash\\ttab\\u0001 {x:1,[y]} <b>\"}");
    round_trip("unicode", "{\"city\":\"Zürich 日本 🙂\",\"Émile\":\"é\"}");
    round_trip("numbers", "{\"i\":-42,\"z\":0,\"f\":1.5,\"e\":1e-05,\"big\":12345678901234,\"neg\":-0.25}");
    round_trip("nested", "{\"filters\":{\"taken\":{\"from\":\"2024-01-01\"},\"min_width\":640,"
                         "\"colors\":[\"red\",\"green\"]},\"boxes\":[{\"x\":1,\"label\":\"cat\"},"
                         "{\"x\":2.5}],\"ok\":true,\"none\":null,\"empty\":[],\"eo\":{}}");
    round_trip("Mixed_Case-keys", "{\"b\":1,\"A\":2,\"a\":3,\"B_c\":[[1,[2,[3]]]]}");
    round_trip("empty_string", "{\"s\":\"\"}");
}

static void test_parser(void) {
    chat_tool_call *calls;
    int n;
    char *content, err[256];
    const char *two = "<|tool_call>call:a{x:1}<tool_call|>between<|tool_call>call:b-2{y:" Q "z" Q
                      "}<tool_call|>";
    CHECK(chat_tool_calls_parse(two, strlen(two), &calls, &n, &content, err, sizeof err) == 0 &&
              n == 2 && !strcmp(calls[0].name, "a") && !strcmp(calls[1].name, "b-2") &&
              !strcmp(calls[0].arguments_json, "{\"x\":1}") &&
              !strcmp(calls[1].arguments_json, "{\"y\":\"z\"}") && !strcmp(content, "between"),
          "two calls: %s", err);
    chat_tool_calls_free(calls, n), free(content);

    const char *plain = "Just text, no call.";
    CHECK(chat_tool_calls_parse(plain, strlen(plain), &calls, &n, &content, err, sizeof err) == 0 &&
              n == 0 && calls == NULL && !strcmp(content, plain),
          "no call");
    free(content);

    /* quoted keys (format_argument's escape_keys=True) are read too */
    const char *qk = "<|tool_call>call:f{" Q "k" Q ":[1,{" Q "n" Q ":null}]}<tool_call|>";
    CHECK(chat_tool_calls_parse(qk, strlen(qk), &calls, &n, NULL, err, sizeof err) == 0 && n == 1 &&
              !strcmp(calls[0].arguments_json, "{\"k\":[1,{\"n\":null}]}"),
          "quoted keys: %s", n == 1 ? calls[0].arguments_json : err);
    chat_tool_calls_free(calls, n);

    /* text after <|tool_response> is not the model's */
    const char *after = "<|tool_call>call:f{}<tool_call|><|tool_response>response:f{}";
    CHECK(chat_tool_calls_parse(after, strlen(after), &calls, &n, &content, err, sizeof err) == 0 &&
              n == 1 && !*content,
          "after the end");
    chat_tool_calls_free(calls, n), free(content);

    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"<|tool_call>call:f{x:" Q "open}<tool_call|>", "not closed"},
        {"<|tool_call>call:f{x:1}", "<tool_call|>"},
        {"<|tool_call>call:f{x:1,}<tool_call|>", "key is missing"},
        {"<|tool_call>call:f{x:01}<tool_call|>", "expected ','"},
        {"<|tool_call>call:f{x:1.}<tool_call|>", "no digits after the point"},
        {"<|tool_call>call:f{x:nan}<tool_call|>", "not a string, number"},
        {"<|tool_call>call:f{x}<tool_call|>", "not followed by ':'"},
        {"<|tool_call>f{x:1}<tool_call|>", "call:"},
        {"<|tool_call>call:f<tool_call|>", "not followed by its {arguments}"},
        {"<|tool_call>call:f{x:[1,2}<tool_call|>", "expected ','"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        calls = (chat_tool_call *)1;
        int rc = chat_tool_calls_parse(bad[i].text, strlen(bad[i].text), &calls, &n, &content,
                                       err, sizeof err);
        CHECK(rc == -1 && strstr(err, bad[i].msg) && calls == NULL && n == 0,
              "malformed %s: rc %d \"%s\", want \"%s\"", bad[i].text, rc, err, bad[i].msg);
    }
    /* deep nesting is bounded */
    char deep[400] = "<|tool_call>call:f{x:";
    for (int i = 0; i < 100; i++) strcat(deep, "[");
    CHECK(chat_tool_calls_parse(deep, strlen(deep), &calls, &n, NULL, err, sizeof err) == -1 &&
              strstr(err, "deeper"),
          "deep: %s", err);
}

static void test_validate(void) {
    const char *s = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"minLength\":2},"
                    "\"age\":{\"type\":\"integer\",\"minimum\":0,\"exclusiveMaximum\":150},"
                    "\"color\":{\"enum\":[\"red\",\"green\"]},\"d\":{\"type\":\"string\",\"format\":\"date-time\"},"
                    "\"code\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}(?:-[0-9]+)?$\"},"
                    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":2},"
                    "\"pt\":{\"prefixItems\":[{\"type\":\"number\"},{\"type\":\"number\"}]},"
                    "\"x\":{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"number\",\"minimum\":0.5}]},"
                    "\"node\":{\"$ref\":\"#/$defs/node\"}},"
                    "\"required\":[\"name\",\"age\"],\"additionalProperties\":false,"
                    "\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"kids\":{\"type\":"
                    "\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},\"additionalProperties\":false}}}";
    static const struct {
        const char *value;
        int want;
        const char *msg;
    } cases[] = {
        {"{\"name\":\"Ann\",\"age\":31}", 0, NULL},
        {"{\"name\":\"Zoë\",\"age\":0,\"color\":\"red\",\"d\":\"2026-12-03T05:00:00Z\",\"code\":\"ABC-12\","
         "\"tags\":[\"a\"],\"pt\":[1,2.5],\"x\":0.75,\"node\":{\"kids\":[{\"kids\":[]}]}}", 0, NULL},
        {"{\"age\":31}", 1, "/ (the value): the required key \"name\" is missing"},
        {"{\"name\":\"A\",\"age\":31}", 1, "/name: shorter than minLength"},
        {"{\"name\":\"Ann\",\"age\":150}", 1, "/age: not below exclusiveMaximum"},
        {"{\"name\":\"Ann\",\"age\":-1}", 1, "/age: below minimum"},
        {"{\"name\":\"Ann\",\"age\":3.5}", 1, "/age: not of type"},
        {"{\"name\":\"Ann\",\"age\":3,\"color\":\"blue\"}", 1, "/color: not one of the enum"},
        {"{\"name\":\"Ann\",\"age\":3,\"zzz\":1}", 1, "/zzz: this key is not allowed"},
        {"{\"name\":\"Ann\",\"age\":3,\"d\":\"2026-12-03 05:00\"}", 1, "/d: not of the format"},
        {"{\"name\":\"Ann\",\"age\":3,\"code\":\"AB-1\"}", 1, "/code: does not match the pattern"},
        {"{\"name\":\"Ann\",\"age\":3,\"tags\":[\"a\",\"b\",\"c\"]}", 1, "/tags: too many items"},
        {"{\"name\":\"Ann\",\"age\":3,\"tags\":[\"a\",1]}", 1, "/tags/1: not of type"},
        {"{\"name\":\"Ann\",\"age\":3,\"pt\":[1]}", 1, "/pt: not as many items"},
        {"{\"name\":\"Ann\",\"age\":3,\"x\":1}", 1, "/x: matches more than one of oneOf"},
        {"{\"name\":\"Ann\",\"age\":3,\"x\":0.25}", 1, "/x: matches none of oneOf"},
        {"{\"name\":\"Ann\",\"age\":3,\"node\":{\"kids\":[{\"kid\":1}]}}", 1, "/node/kids/0/kid: this key"},
        {"[1]", 1, "not of type"},
        {"{\"name\":", -1, "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256] = "";
        int rc = chat_schema_validate(s, cases[i].value, err, sizeof err);
        CHECK(rc == cases[i].want && (!cases[i].msg || strstr(err, cases[i].msg)),
              "validate %s: rc %d \"%s\", want %d \"%s\"", cases[i].value, rc, err, cases[i].want,
              cases[i].msg ? cases[i].msg : "");
    }
}

static void test_tools_check(void) {
    static const struct {
        const char *tools, *msg;
    } bad[] = {
        {"{}", "must be an array"},
        {"[{\"type\":\"function\",\"function\":{\"name\":\"a b\"}}]", "function.name"},
        {"[{\"type\":\"function\",\"function\":{\"name\":\"a\"}},{\"type\":\"function\",\"function\":{\"name\":\"a\"}}]", "declared twice"},
        {"[{\"type\":\"code\",\"function\":{\"name\":\"a\"}}]", "tools[0]"},
        {"[{\"type\":\"function\",\"function\":{\"name\":\"a\",\"parameters\":{\"type\":\"string\"}}}]", "object schema"},
        {"[{\"type\":\"function\",\"function\":{\"name\":\"a\",\"parameters\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\",\"patternProperties\":{}}}}}}]",
         "tools[0].function.parameters: the schema keyword \"patternProperties\" at /properties/x"},
        {"[{\"type\":\"function\",\"function\":{\"name\":\"a\",\"parameters\":{\"type\":\"object\",\"properties\":{\"a:b\":{}}}}}]", "bare key"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[512] = "";
        int rc = chat_tools_check(bad[i].tools, err, sizeof err);
        CHECK(rc == -1 && strstr(err, bad[i].msg), "tools %s: rc %d \"%s\", want \"%s\"",
              bad[i].tools, rc, err, bad[i].msg);
    }
}

static int parse_stdin(void) {
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap);
    for (size_t k; (k = fread(text + n, 1, cap - n, stdin)) > 0;) {
        n += k;
        if (n == cap) text = realloc(text, cap *= 2);
    }
    chat_tool_call *calls;
    int count;
    char *content, err[512];
    if (chat_tool_calls_parse(text, n, &calls, &count, &content, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    for (int i = 0; i < count; i++) {
        cJSON *line = cJSON_CreateObject();
        cJSON_AddStringToObject(line, "name", calls[i].name);
        cJSON_AddItemToObject(line, "arguments", cJSON_Parse(calls[i].arguments_json));
        char *s = cJSON_PrintUnformatted(line);
        printf("%s\n", s);
        free(s);
        cJSON_Delete(line);
    }
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "content", content);
    char *s = cJSON_PrintUnformatted(c);
    printf("%s\n", s);
    free(s);
    cJSON_Delete(c);
    chat_tool_calls_free(calls, count);
    free(content);
    free(text);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--parse")) return parse_stdin();
    test_round_trips();
    test_parser();
    test_validate();
    test_tools_check();
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("test_chat_tool_parse: all passed\n");
    return 0;
}
