/* options.h - the option-table parser of the g4v subcommands and `g4v serve`: a command declares
 * its options as a table of rows (name, kind, the field it sets, range or choices, help), and
 * one parser reads argv into the command's settings struct, gives every command the same syntax
 * and the same error messages, and prints --help from the same table.
 *
 * Syntax: `--name VALUE`, `--name=VALUE`, `-c VALUE` for a row with a short name; a flag takes no
 * value; a row marked FE_OPT_OPTIONAL_VALUE takes one only as `--name=VALUE` (`--int8=blocks`);
 * `--` ends the options; `-h` and `--help` print the help. A `-` alone is a positional argument.
 *
 * A row names a field of the settings struct by offset and size (FE_FIELD), so a table is a
 * static const array: every command's table can be read, tested and printed without running it.
 */
#ifndef G4V_OPTIONS_H
#define G4V_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

typedef enum fe_opt_kind {
    FE_OPT_END = 0,   /* (a zeroed row: not a valid row) */
    FE_OPT_FLAG,      /* no value: stores .lo into an int (several flags may share one field) */
    FE_OPT_INT,       /* a base-10 integer in [.lo, .hi] into an int or a long long */
    FE_OPT_UINT,      /* a base-10 integer in [.lo, .hi] (.lo >= 0) into a uint32 or a uint64 */
    FE_OPT_REAL,      /* a finite decimal number in [.dlo, .dhi] into a float or a double */
    FE_OPT_STRING,    /* the argument itself (a const char *; argv outlives the settings) */
    FE_OPT_CHOICE,    /* one of .choices' names: stores its value into an int */
    FE_OPT_LIST,      /* repeatable: each value is appended to an fe_opt_list */
    FE_OPT_CALLBACK,  /* .fn does what the value means */
    FE_OPT_TEXT       /* not an option: .help is printed as it is, where the row stands */
} fe_opt_kind;

/* Row flags. */
enum {
    FE_OPT_POSITIONAL = 1,     /* the row takes the arguments that are not options */
    FE_OPT_REQUIRED = 2,       /* the command cannot run without it: "X is required" */
    FE_OPT_OPTIONAL_VALUE = 4, /* CHOICE: no value stores .lo; a value only as --name=VALUE
                                  (CALLBACK: called with NULL or the value) */
    FE_OPT_HIDDEN = 8,         /* parsed but not listed by --help (an alias its help text names) */
    FE_OPT_NO_VALUE = 16       /* CALLBACK: a flag, the callback is called with value NULL */
};

typedef struct fe_opt_choice {
    const char *name;
    int value;
} fe_opt_choice;

/* What FE_OPT_LIST appends to (fe_opt_list_free releases it; the strings are argv's). */
typedef struct fe_opt_list {
    const char **items;
    int count, cap;
} fe_opt_list;

struct fe_opt;
/* FE_OPT_CALLBACK: 0, or -1 with the reason in err (err left empty: the callback has printed it
 * already). row is the callback's own row (its .lo is free for the callback's use). */
typedef int (*fe_opt_fn)(const struct fe_opt *row, const char *value, void *target, char *err,
                         size_t cap);
/* An extra check of an INT value inside the range: 0, or -1 with the reason in err. */
typedef int (*fe_opt_check)(long long value, char *err, size_t cap);

typedef struct fe_opt {
    const char *name;    /* the long name without "--" ("tokens"), or NULL */
    char shortopt;       /* 'o' for -o, or 0 */
    fe_opt_kind kind;
    unsigned flags;      /* FE_OPT_POSITIONAL, ... */
    size_t off, size;    /* the field it sets (FE_FIELD); unused by CALLBACK and TEXT */
    long long lo, hi;    /* INT, UINT: the range; FLAG and OPTIONAL_VALUE: the value stored */
    double dlo, dhi;     /* REAL: the range */
    const fe_opt_choice *choices; /* CHOICE: ended by a {NULL, 0} entry */
    fe_opt_check check;  /* INT: an extra check after the range, or NULL */
    fe_opt_fn fn;        /* CALLBACK */
    const char *arg;     /* the value's name in the help ("N", "DIR"); CHOICE: default "a|b" */
    const char *help;    /* the help text; '\n' breaks a line, long lines are wrapped */
} fe_opt;

/* A command: what the messages and the help say about it, and its table. */
typedef struct fe_cmd {
    const char *name;     /* "encode": messages read "g4v encode: ..." */
    const char *usage;    /* the synopsis after "usage: " (may hold '\n' and its indent) */
    const char *about;    /* the paragraphs between the usage line and the options, or NULL */
    const char *heading;  /* a line above the options ("options:"), or NULL */
    const fe_opt *opts;
    size_t n_opts;
    const char *epilog;   /* free text after the options (endpoints, exit codes), or NULL */
} fe_cmd;

#define FE_OPTS(table) .opts = (table), .n_opts = sizeof(table) / sizeof((table)[0])
/* The field a row sets: FE_FIELD(encode_args, tokens), FE_FIELD(chat_args, o.temp). */
#define FE_FIELD(type, member) .off = offsetof(type, member), .size = sizeof(((type *)0)->member)

/* A macro's value as text, for help strings: FE_STR(G4V_DEFAULT_BUDGET) is "280". */
#define FE_STR_(...) #__VA_ARGS__
#define FE_STR(...) FE_STR_(__VA_ARGS__)

/* fe_opt_parse's results. */
enum { FE_OPT_OK = 0, FE_OPT_USAGE = 1, FE_OPT_HELP = 2 };

/* Parses argv[1..argc) (argv[0] is the command's name) into target over the values it holds.
 * Returns FE_OPT_OK; FE_OPT_HELP for -h/--help (nothing printed); FE_OPT_USAGE with the reason
 * in err (without the "g4v CMD: " prefix; empty when a callback printed it itself). */
int fe_opt_parse(const fe_cmd *cmd, int argc, char **argv, void *target, char *err, size_t cap);
/* fe_opt_parse, then what a command does next: the help printed on stdout (FE_OPT_HELP), or
 * "g4v CMD: reason" on stderr (FE_OPT_USAGE). Returns fe_opt_parse's result. */
int fe_opt_run(const fe_cmd *cmd, int argc, char **argv, void *target);
/* Writes the command's help: "usage: g4v ...", the about text, every row that is not hidden
 * (names and value aligned, help wrapped to 100 columns), -h/--help, the epilog. */
void fe_opt_help(const fe_cmd *cmd, FILE *f);
void fe_opt_list_free(fe_opt_list *l);

/* ---- rows the commands share ------------------------------------------------------------- */

/* An INT check: the value is one of G4V_BUDGETS (g4v_budget_check's message otherwise). */
int fe_opt_check_budget(long long value, char *err, size_t cap);

/* --resize pillow|torchvision: G4V_RESIZE_PILLOW or G4V_RESIZE_TORCHVISION into an int. */
extern const fe_opt_choice fe_opt_resize_choices[];
#define FE_OPT_RESIZE(type, member, help_)                                                     \
    {.name = "resize", .kind = FE_OPT_CHOICE, FE_FIELD(type, member),                          \
     .choices = fe_opt_resize_choices, .help = (help_)}

/* --threads N, the CLI's commands' and the server's, up to FE_OPT_THREADS_MAX; lo_ is 0 where 0
 * asks for the default, else 1. */
#define FE_OPT_THREADS_MAX 4096
#define FE_OPT_THREADS(type, member, lo_, help_)                                               \
    {.name = "threads", .kind = FE_OPT_INT, FE_FIELD(type, member), .lo = (lo_),               \
     .hi = FE_OPT_THREADS_MAX, .arg = "N", .help = (help_)}

/* --tokens N, a soft-token budget: one of G4V_BUDGETS (fe_opt_check_budget); the range before
 * that check is 1..FE_OPT_TOKENS_MAX, the same in every command. */
#define FE_OPT_TOKENS_MAX (1 << 20)
#define FE_OPT_TOKENS(type, member, help_)                                                     \
    {.name = "tokens", .kind = FE_OPT_INT, FE_FIELD(type, member), .lo = 1,                    \
     .hi = FE_OPT_TOKENS_MAX, .check = fe_opt_check_budget, .arg = "N", .help = (help_)}

#endif
