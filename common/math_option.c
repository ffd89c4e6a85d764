/* math_option.c - the front ends' math-mode options (math_option.h). */
#include "math_option.h"

#include <stdio.h>
#include <string.h>

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

int fe_math_row(const fe_opt *row, const char *value, void *target, char *err, size_t cap) {
    g4v_math_mode *mode = (g4v_math_mode *)(void *)((char *)target + row->off);
    const char **given = (const char **)(void *)((char *)target + row->lo);
    if (row->size != sizeof *mode) {
        snprintf(err, cap, "internal error: the row of --%s does not fit its field", row->name);
        return -1;
    }
    if (row->hi < 0) return fe_math_option("--math", value, mode, given, err, cap);
    if (row->hi == G4V_MATH_INT8 && value) { /* --int8=blocks */
        if (strcmp(value, "blocks")) {
            snprintf(err, cap, "--int8: '%s' is not blocks", value);
            return -1;
        }
        return fe_math_option("--int8=blocks", "int8-blocks", mode, given, err, cap);
    }
    /* the alias's own spelling, a literal that outlives the parse (*given keeps it) */
    const char *opt = row->hi == G4V_MATH_PRECISE ? "--precise" : "--int8";
    return fe_math_option(opt, g4v_math_mode_name((g4v_math_mode)row->hi), mode, given, err,
                          cap);
}
