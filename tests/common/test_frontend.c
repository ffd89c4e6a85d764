/* test_frontend.c - the front ends' own helpers (common/frontend.h): the UTF-8 repairs and
 * the clock, which are common/'s code, and the UTF-8 check, the JSON parse and SHA-256 it
 * takes from g4v.h. */
#include "frontend.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static void test_utf8(void) {
    static const struct {
        const char *s;
        size_t len; /* what g4v_utf8_seq_len gives at s[0] */
    } cases[] = {
        {"A", 1},
        {"\xC3\xA9", 2},             /* e acute */
        {"\xE2\x82\xAC", 3},         /* euro sign */
        {"\xF0\x9F\x98\x80", 4},     /* U+1F600 */
        {"\xF4\x8F\xBF\xBF", 4},     /* U+10FFFF, the last */
        {"\x80", 0},                 /* a stray continuation byte */
        {"\xC0\xAF", 0},             /* overlong '/' */
        {"\xE0\x80\xAF", 0},         /* overlong, 3 bytes */
        {"\xED\xA0\x80", 0},         /* a surrogate, U+D800 */
        {"\xF4\x90\x80\x80", 0},     /* U+110000 */
        {"\xE2\x82", 0},             /* cut short */
        {"\xFF", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_MSG(g4v_utf8_seq_len(cases[i].s, strlen(cases[i].s)) == cases[i].len, "case %zu",
                  i);
    CHECK(g4v_utf8_seq_len("A", 0) == 0);
    CHECK(fe_utf8_valid("caf\xC3\xA9 \xE2\x82\xAC", 9));
    CHECK(!fe_utf8_valid("caf\xC3", 4));
    char s[] = "a\xC3(b\xFF\xE2\x82\xAC";
    fe_utf8_sanitize(s);
    CHECK(!strcmp(s, "a?(b?\xE2\x82\xAC"));
    char *c = fe_utf8_copy("x\xE2\x82\xAC", 3); /* a token cut inside a character */
    CHECK(c && !strcmp(c, "x??"));
    free(c);
}

static void test_clock_json_hash(void) {
    double t0 = fe_now_s(), t1 = fe_now_s();
    CHECK(t0 > 0 && t1 >= t0);
    const char *end = NULL;
    const char text[] = "{\"a\": [1, 2]} tail";
    cJSON *j = fe_json_parse_text(text, strlen(text), &end);
    CHECK(j && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "a")) == 2);
    CHECK(end == text + 13);
    cJSON_Delete(j);
    CHECK(fe_json_parse_text("{\"a\":", 5, NULL) == NULL);
    static const uint8_t abc[FE_SHA256_BYTES] = {
        0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
        0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
    uint8_t d[FE_SHA256_BYTES];
    fe_sha256("abc", 3, d);
    CHECK(!memcmp(d, abc, sizeof d));
}

int main(void) {
    test_utf8();
    test_clock_json_hash();
    return test_summary("test_frontend");
}
