/* math_option.c - the front ends' math-mode options (math_option.h). */
#include "math_option.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *opt, *name;
} aliases[] = {{"--precise", "precise"}, {"--int8", "int8"}, {"--int8=blocks", "int8-blocks"}};

const char *fe_math_alias(const char *opt) {
    for (size_t i = 0; opt && i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(opt, aliases[i].opt)) return aliases[i].name;
    return NULL;
}

int fe_math_option(const char *opt, const char *name, g4v_math_mode *mode, const char **given,
                   char *msg, size_t cap) {
    char why[160];
    g4v_math_mode m;
    if (g4v_math_mode_parse(name, &m, why, sizeof why)) {
        snprintf(msg, cap, "%s: %s", opt, why);
        return -1;
    }
    if (*given && m != *mode) {
        snprintf(msg, cap, "%s names the math mode %s, but %s already named %s: give one", opt,
                 g4v_math_mode_name(m), *given, g4v_math_mode_name(*mode));
        return -1;
    }
    *mode = m;
    *given = opt;
    return 0;
}
