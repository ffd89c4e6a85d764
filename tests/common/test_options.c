/* test_options.c - the option-table parser of the front ends (common/options.h) on a table
 * with a row of every kind: both value forms, ranges at and past their ends, missing values,
 * unknown options, choices, flags that share a field, the optional =value, lists, callbacks,
 * positionals, required rows, the messages of each failure, and the help printed from the table
 * (every row listed, aligned, wrapped, hidden rows left out). */
#include "options.h"
#include "test_util.h"

#include "g4v.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct settings {
    const char *model, *out, *in;
    int mode, tokens, threads, resize, quiet, int8, calls;
    long long big;
    uint32_t seed;
    unsigned long long bytes;
    float temp;
    double ratio;
    fe_opt_list tags;
} settings;

static int count_call(const fe_opt *row, const char *value, void *target, char *err, size_t cap) {
    settings *s = target;
    if (!strcmp(value, "bad")) {
        snprintf(err, cap, "--call: 'bad' refused by the callback (%lld)", row->lo);
        return -1;
    }
    s->calls++;
    return 0;
}

static const fe_opt_choice colours[] = {{"red", 1}, {"green", 2}, {"blue", 3}, {NULL, 0}};

#define O(member) FE_FIELD(settings, member)

/* an optional-value choice, as --int8[=blocks] was */
static const fe_opt_choice int8_choices[] = {{"blocks", 2}, {NULL, 0}};

static const fe_opt rows[] = {
    {.name = "model", .kind = FE_OPT_STRING, .flags = FE_OPT_REQUIRED, O(model), .arg = "DIR",
     .help = "the model"},
    {.kind = FE_OPT_STRING, .flags = FE_OPT_POSITIONAL, O(in), .arg = "IMAGE",
     .help = "the one input"},
    {.shortopt = 'o', .kind = FE_OPT_STRING, O(out), .arg = "OUT", .help = "the output"},
    {.name = "fast", .kind = FE_OPT_FLAG, O(mode), .lo = 0, .help = "mode 0"},
    {.name = "precise", .kind = FE_OPT_FLAG, O(mode), .lo = 7, .help = "mode 7"},
    {.name = "tokens", .kind = FE_OPT_INT, O(tokens), .lo = 1, .hi = 1000000,
     .check = fe_opt_check_budget, .arg = "N", .help = "a budget"},
    {.name = "threads", .kind = FE_OPT_INT, O(threads), .lo = -3, .hi = 4096, .arg = "N",
     .help = "threads"},
    {.name = "big", .kind = FE_OPT_INT, O(big), .lo = 0, .hi = 1ll << 40, .arg = "N",
     .help = "a long long"},
    {.name = "seed", .kind = FE_OPT_UINT, O(seed), .lo = 0, .hi = 0xFFFFFFFEll, .arg = "N",
     .help = "a uint32"},
    {.name = "bytes", .kind = FE_OPT_UINT, O(bytes), .lo = 1, .hi = 1ll << 62, .arg = "N",
     .help = "a uint64"},
    {.name = "temp", .kind = FE_OPT_REAL, O(temp), .dlo = 0, .dhi = 2, .arg = "T",
     .help = "a float"},
    {.name = "ratio", .kind = FE_OPT_REAL, O(ratio), .dlo = -1, .dhi = 1, .arg = "R",
     .help = "a double"},
    FE_OPT_RESIZE(settings, resize, "the resize"),
    {.name = "colour", .kind = FE_OPT_CHOICE, O(mode), .choices = colours, .help = "a colour"},
    {.name = "int8", .kind = FE_OPT_CHOICE, .flags = FE_OPT_OPTIONAL_VALUE, O(int8), .lo = 1,
     .choices = int8_choices, .help = "int8\n=blocks: per block"},
    {.name = "quiet", .shortopt = 'q', .kind = FE_OPT_FLAG, O(quiet), .lo = 1, .help = "quiet"},
    {.name = "tag", .kind = FE_OPT_LIST, O(tags), .arg = "T", .help = "repeatable"},
    {.name = "call", .kind = FE_OPT_CALLBACK, .fn = count_call, .lo = 42, .arg = "X",
     .help = "a callback"},
    {.name = "alias", .kind = FE_OPT_FLAG, .flags = FE_OPT_HIDDEN, O(mode), .lo = 9,
     .help = "hidden"},
    {.kind = FE_OPT_TEXT, .help = "\nA section:\n"},
    {.name = "a-rather-long-option-name", .kind = FE_OPT_STRING, O(out), .arg = "VALUE",
     .help = "words words words words words words words words words words words words words "
             "words words words words words words words words words words words words words\n"
             "  indented line"},
};

#undef O

static const fe_cmd cmd = {.name = "test",
                           .usage = "test --model DIR [options]",
                           .about = "About the test.\n",
                           .heading = "options:",
                           FE_OPTS(rows),
                           .epilog = "The epilog.\n"};

/* Parses the NULL-ended words after the command name into *s (from its defaults). */
static int parse(settings *s, char *err, size_t cap, ...) {
    char *argv[64] = {"test"};
    int argc = 1;
    va_list ap;
    va_start(ap, cap);
    for (char *w; (w = va_arg(ap, char *)) && argc < 63;) argv[argc++] = w;
    va_end(ap);
    fe_opt_list_free(&s->tags);
    memset(s, 0, sizeof *s);
    s->mode = -1;
    s->tokens = 280;
    return fe_opt_parse(&cmd, argc, argv, s, err, cap);
}

#define M "--model", "m"

static void test_values(void) {
    settings s = {0};
    char err[512];
    REQUIRE(parse(&s, err, sizeof err, M, "--tokens", "70", "--threads=-3", "--big",
                  "1099511627776", "--seed=4294967294", "--bytes", "4611686018427387904",
                  "--temp", "0.25", "--ratio=-0.5", "-o", "x.npy", "img.png", NULL) == FE_OPT_OK);
    CHECK(!strcmp(s.model, "m") && !strcmp(s.out, "x.npy") && !strcmp(s.in, "img.png"));
    CHECK(s.tokens == 70 && s.threads == -3 && s.big == (1ll << 40));
    CHECK(s.seed == 4294967294u && s.bytes == (1ull << 62));
    CHECK(s.temp == 0.25f && s.ratio == -0.5);
    CHECK(s.mode == -1 && s.quiet == 0 && s.int8 == 0); /* untouched without their options */
    /* --name=value and --name value are the same; a value may start with '-' */
    REQUIRE(parse(&s, err, sizeof err, "--model=a=b", "-o", "-", NULL) == FE_OPT_OK);
    CHECK(!strcmp(s.model, "a=b") && !strcmp(s.out, "-"));
    /* -- ends the options: a file named like an option */
    REQUIRE(parse(&s, err, sizeof err, M, "--", "--quiet", NULL) == FE_OPT_OK);
    CHECK(!strcmp(s.in, "--quiet") && s.quiet == 0);
    /* a lone - is a positional argument (stdin by convention) */
    REQUIRE(parse(&s, err, sizeof err, M, "-", NULL) == FE_OPT_OK);
    CHECK(s.in && !strcmp(s.in, "-"));
}

static void test_flags_choices(void) {
    settings s = {0};
    char err[512];
    /* several flags set one field; the last one given wins */
    REQUIRE(parse(&s, err, sizeof err, M, "--precise", NULL) == FE_OPT_OK);
    CHECK(s.mode == 7);
    REQUIRE(parse(&s, err, sizeof err, M, "--precise", "--fast", NULL) == FE_OPT_OK);
    CHECK(s.mode == 0);
    REQUIRE(parse(&s, err, sizeof err, M, "--fast", "--colour", "blue", "--alias", NULL) ==
            FE_OPT_OK);
    CHECK(s.mode == 9);
    REQUIRE(parse(&s, err, sizeof err, M, "--colour=green", "-q", NULL) == FE_OPT_OK);
    CHECK(s.mode == 2 && s.quiet == 1);
    REQUIRE(parse(&s, err, sizeof err, M, "--resize", "torchvision", NULL) == FE_OPT_OK);
    CHECK(s.resize == G4V_RESIZE_TORCHVISION);
    REQUIRE(parse(&s, err, sizeof err, M, "--resize=pillow", NULL) == FE_OPT_OK);
    CHECK(s.resize == G4V_RESIZE_PILLOW);
    /* the optional value: only as --int8=VALUE; --int8 X leaves X to the positional */
    REQUIRE(parse(&s, err, sizeof err, M, "--int8", NULL) == FE_OPT_OK);
    CHECK(s.int8 == 1);
    REQUIRE(parse(&s, err, sizeof err, M, "--int8=blocks", NULL) == FE_OPT_OK);
    CHECK(s.int8 == 2);
    REQUIRE(parse(&s, err, sizeof err, M, "--int8", "blocks", NULL) == FE_OPT_OK);
    CHECK(s.int8 == 1 && s.in && !strcmp(s.in, "blocks"));
    /* lists keep every value in order; callbacks see each one */
    REQUIRE(parse(&s, err, sizeof err, M, "--tag", "a", "--call", "x", "--tag=b", "--call=y",
                  NULL) == FE_OPT_OK);
    CHECK(s.tags.count == 2 && !strcmp(s.tags.items[0], "a") && !strcmp(s.tags.items[1], "b"));
    CHECK(s.calls == 2);
    fe_opt_list_free(&s.tags);
    CHECK(s.tags.count == 0 && s.tags.items == NULL);
}

/* The parse fails with FE_OPT_USAGE and err contains want. */
#define FAILS(want, ...)                                                                       \
    do {                                                                                       \
        settings s_ = {0};                                                                     \
        char e_[512];                                                                          \
        int rc_ = parse(&s_, e_, sizeof e_, __VA_ARGS__, NULL);                                \
        CHECK_MSG(rc_ == FE_OPT_USAGE, "%s: rc %d", want, rc_);                                \
        if (rc_ == FE_OPT_USAGE) CHECK_CONTAINS(e_, want);                                     \
        fe_opt_list_free(&s_.tags);                                                            \
    } while (0)

static void test_errors(void) {
    FAILS("unknown option '--frobnicate' (see --help)", M, "--frobnicate");
    FAILS("unknown option '--frobnicate=1' (see --help)", M, "--frobnicate=1");
    FAILS("unknown option '-x' (see --help)", M, "-x");
    FAILS("unknown option '-qq' (see --help)", M, "-qq");
    FAILS("unknown option '--mod' (see --help)", "--mod", "m"); /* no prefix matching */
    FAILS("--tokens needs a value", M, "--tokens");
    FAILS("-o needs a value", M, "-o");
    FAILS("--quiet takes no value", M, "--quiet=1");
    FAILS("--tokens needs an integer from 1 to 1000000, not 'abc'", M, "--tokens", "abc");
    FAILS("--tokens needs an integer from 1 to 1000000, not ''", M, "--tokens=");
    FAILS("--tokens needs an integer from 1 to 1000000, not '0'", M, "--tokens", "0");
    FAILS("--tokens needs an integer from 1 to 1000000, not '1000001'", M, "--tokens=1000001");
    FAILS("--tokens: unsupported token budget 300", M, "--tokens", "300"); /* the row's check */
    FAILS("--threads needs an integer from -3 to 4096, not '-4'", M, "--threads", "-4");
    FAILS("--threads needs an integer from -3 to 4096, not '4097'", M, "--threads", "4097");
    FAILS("--threads needs an integer from -3 to 4096, not '1.5'", M, "--threads", "1.5");
    FAILS("--seed needs an integer from 0 to 4294967294, not '4294967295'", M, "--seed",
          "4294967295");
    FAILS("--bytes needs an integer from 1 to 4611686018427387904", M, "--bytes",
          "4611686018427387905");
    FAILS("--temp needs a number from 0 to 2, not '2.5'", M, "--temp", "2.5");
    FAILS("--temp needs a number from 0 to 2, not 'nan'", M, "--temp", "nan");
    FAILS("--ratio needs a number from -1 to 1, not 'x'", M, "--ratio=x");
    FAILS("--resize: 'foo' is not pillow or torchvision", M, "--resize", "foo");
    FAILS("--colour: 'pink' is not one of red, green, blue", M, "--colour=pink");
    FAILS("--int8: 'rows' is not blocks", M, "--int8=rows");
    FAILS("--call: 'bad' refused by the callback (42)", M, "--call", "bad");
    FAILS("unexpected argument 'b.png' (one IMAGE only)", M, "a.png", "b.png");
    FAILS("--model DIR is required (see --help)", "-q");
    FAILS("--model needs a value", "--model"); /* before it is missed as required */
    /* a required row given with = counts */
    settings s = {0};
    char err[512];
    CHECK(parse(&s, err, sizeof err, "--model=", NULL) == FE_OPT_OK && !strcmp(s.model, ""));
    /* --help wins wherever it stands, even after an error-free prefix, and parses no further */
    CHECK(parse(&s, err, sizeof err, "-q", "--help", "--frobnicate", NULL) == FE_OPT_HELP);
    CHECK(parse(&s, err, sizeof err, "-h", NULL) == FE_OPT_HELP);
}

/* A row whose field has a size its kind cannot store is refused, not written past. */
static void test_bad_row(void) {
    typedef struct {
        char small;
        int after;
    } tiny;
    static const fe_opt bad[] = {{.name = "n", .kind = FE_OPT_INT, FE_FIELD(tiny, small), .lo = 0,
                                  .hi = 9, .arg = "N", .help = "a char"}};
    static const fe_cmd c = {.name = "bad", .usage = "bad", FE_OPTS(bad)};
    tiny t = {0, 5};
    char *argv[] = {"bad", "--n", "3"}, err[256];
    CHECK(fe_opt_parse(&c, 3, argv, &t, err, sizeof err) == FE_OPT_USAGE);
    CHECK_CONTAINS(err, "internal error");
    CHECK(t.small == 0 && t.after == 5);
}

static void test_help(void) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    REQUIRE(f);
    fe_opt_help(&cmd, f);
    fclose(f);
    REQUIRE(text);
    CHECK(!strncmp(text, "usage: g4v test --model DIR [options]\n\nAbout the test.\n\noptions:\n",
                   strlen("usage: g4v test --model DIR [options]\n\nAbout the test.\n\noptions:\n")));
    /* every visible row is listed, with its value, at one help column (the widest left part
     * that fits, "  --resize pillow|torchvision" being too wide, is "  --tokens N" etc.) */
    const char *want[] = {
        "  --model DIR      the model\n",
        "  IMAGE            the one input\n",
        "  -o OUT           the output\n",
        "  --fast           mode 0\n",
        "  --precise        mode 7\n",
        "  --tokens N       a budget\n",
        "  --seed N         a uint32\n",
        "  --temp T         a float\n",
        "  --resize pillow|torchvision\n                   the resize\n",
        "  --colour red|green|blue\n                   a colour\n",
        "  --int8[=blocks]  int8\n                   =blocks: per block\n",
        "  -q, --quiet      quiet\n",
        "  --tag T          repeatable\n",
        "  --call X         a callback\n",
        "\nA section:\n  --a-rather-long-option-name VALUE\n                   words words",
        "  -h, --help       this help\n\nThe epilog.\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) CHECK_CONTAINS(text, want[i]);
    CHECK(strstr(text, "alias") == NULL && strstr(text, "hidden") == NULL);
    /* each row of the table appears (hidden ones excepted): the help is the table */
    for (size_t k = 0; k < cmd.n_opts; k++) {
        const fe_opt *r = &cmd.opts[k];
        if (!r->name || (r->flags & FE_OPT_HIDDEN)) continue;
        char name[64];
        snprintf(name, sizeof name, "--%s", r->name);
        CHECK_CONTAINS(text, name);
    }
    /* wrapped to 100 columns at spaces; a wrapped line keeps the column; "  indented line" keeps
     * its indent; no trailing spaces */
    int lines = 0, words = 0;
    for (char *l = text, *nl; *l; l = nl + 1) {
        nl = strchr(l, '\n');
        REQUIRE(nl);
        size_t n = (size_t)(nl - l);
        CHECK_MSG(n <= 100, "line of %zu columns: %.*s", n, (int)n, l);
        CHECK_MSG(n == 0 || l[n - 1] != ' ', "trailing space: %.*s", (int)n, l);
        if (n > 19 && !strncmp(l, "                   words", 24)) {
            words++;
            CHECK(n > 90); /* filled, not broken early */
        }
        lines++;
    }
    CHECK(words == 2);
    CHECK_CONTAINS(text, " words\n                     indented line\n");
    CHECK(lines > 20);
    free(text);
}

int main(void) {
    test_values();
    test_flags_choices();
    test_errors();
    test_bad_row();
    test_help();
    return test_summary("test_options");
}
