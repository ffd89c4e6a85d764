/* math_option.h - the math-mode options every front end takes (g4v encode, info, chat, serve):
 * `--math fast|precise|int8|int8-blocks`, parsed by libg4v's g4v_math_mode_parse, and the older
 * spellings kept as aliases: `--precise`, `--int8`, `--int8=blocks`. Naming two different modes
 * is a usage error; naming one twice is not. A command puts FE_OPT_MATH_ROWS in its option
 * table (options.h); the rows are the one place these options are spelled.
 */
#ifndef G4V_FRONTEND_MATH_OPTION_H
#define G4V_FRONTEND_MATH_OPTION_H

#include "g4v.h"
#include "options.h"

#include <stddef.h>

/* One math-mode option: opt as given on the command line ("--math" or an alias, for messages),
 * name the mode it names (--math's value, or the alias's mode). *mode takes the mode; *given
 * (NULL before the first math option) remembers that one was given and which. 0 on success; -1
 * with a message in msg for an unknown name or a second, different mode. */
int fe_math_option(const char *opt, const char *name, g4v_math_mode *mode, const char **given,
                   char *msg, size_t cap);

/* The rows' callback (FE_OPT_CALLBACK): row->off is the g4v_math_mode field, row->lo the offset
 * of the `const char *` that remembers the option given, row->hi the mode an alias names (-1:
 * --math, whose value names it). */
int fe_math_row(const fe_opt *row, const char *value, void *target, char *err, size_t cap);

/* The rows of a command whose settings struct `type` holds the mode in `member` (a
 * g4v_math_mode, FAST by default) and a `const char *given_member` (NULL by default). */
#define FE_OPT_MATH_ROWS(type, member, given_member)                                          \
    {.name = "math", .kind = FE_OPT_CALLBACK, FE_FIELD(type, member), .fn = fe_math_row,       \
     .lo = offsetof(type, given_member), .hi = -1, .arg = "MODE",                              \
     .help = "the math mode: fast (the default: bf16 GEMM inputs, ~3e-3 rel. error), precise " \
             "(f32 GEMM inputs, ~1e-6), int8 (opt-in: the vision blocks' linear layers as "    \
             "int8 x int8 -> int32, VNNI else AVX2, faster, ~2e-2) or int8-blocks (int8 with " \
             "scales per block of 32 inputs, llama.cpp's Q8_0; a Q8_0 GGUF's weights used as " \
             "stored: more accurate than int8, slower; docs/NUMERICS.md §12)"},               \
    {.name = "precise", .kind = FE_OPT_CALLBACK, .flags = FE_OPT_NO_VALUE,                     \
     FE_FIELD(type, member), .fn = fe_math_row, .lo = offsetof(type, given_member),            \
     .hi = G4V_MATH_PRECISE, .help = "the same as --math precise"},                           \
    {.name = "int8", .kind = FE_OPT_CALLBACK, .flags = FE_OPT_OPTIONAL_VALUE,                  \
     FE_FIELD(type, member), .fn = fe_math_row, .lo = offsetof(type, given_member),            \
     .hi = G4V_MATH_INT8, .arg = "blocks",                                                     \
     .help = "the same as --math int8; --int8=blocks: as --math int8-blocks"}

#endif
