/* math_option.h - the math-mode options every front end takes (g4v encode, info, chat, serve):
 * `--math fast|precise|int8|int8-blocks`, parsed by libg4v's g4v_math_mode_parse, and the older
 * spellings kept as aliases: `--precise`, `--int8`, `--int8=blocks`. Naming two different modes
 * is a usage error; naming one twice is not.
 */
#ifndef G4V_FRONTEND_MATH_OPTION_H
#define G4V_FRONTEND_MATH_OPTION_H

#include "g4v.h"

#include <stddef.h>

/* The mode name an alias option stands for ("--precise" -> "precise", "--int8" -> "int8",
 * "--int8=blocks" -> "int8-blocks"); NULL for any other text, "--math" included. */
const char *fe_math_alias(const char *opt);

/* One math-mode option: opt as given on the command line ("--math" or an alias, for messages),
 * name the mode it names (--math's value, or fe_math_alias(opt)). *mode takes the mode; *given
 * (0 before the first math option) remembers that one was given and which. 0 on success; -1 with
 * a message in msg for an unknown name or a second, different mode. */
int fe_math_option(const char *opt, const char *name, g4v_math_mode *mode, const char **given,
                   char *msg, size_t cap);

#endif
