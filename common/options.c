/* options.c - the option-table parser and help printer of the g4v subcommands (options.h). */
#include "options.h"
#include "frontend.h"
#include "g4v.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HELP_WIDTH 100   /* help lines are wrapped to this many columns */
#define HELP_MAX_LEFT 24 /* a wider "  --name VALUE" puts its help on the next line */
#define MAX_ROWS 128     /* rows per table (the required-row bookkeeping) */

const fe_opt_choice fe_opt_resize_choices[] = {
    {"pillow", G4V_RESIZE_PILLOW}, {"torchvision", G4V_RESIZE_TORCHVISION}, {NULL, 0}};

int fe_opt_check_budget(long long value, char *err, size_t cap) {
    return g4v_budget_check((int)value, err, cap) == G4V_OK ? 0 : -1;
}

void fe_opt_list_free(fe_opt_list *l) {
    free(l->items);
    memset(l, 0, sizeof *l);
}

/* "--name", "-c" or the positional's value name: how messages name a row. */
static const char *row_name(const fe_opt *r, char *buf, size_t cap) {
    if (r->name)
        snprintf(buf, cap, "--%s", r->name);
    else if (r->shortopt)
        snprintf(buf, cap, "-%c", r->shortopt);
    else
        snprintf(buf, cap, "%s", r->arg ? r->arg : "argument");
    return buf;
}

/* "pillow or torchvision", "one of 9, 12.2, 13" */
static void choice_list(const fe_opt_choice *c, char *buf, size_t cap) {
    size_t n = 0, used = 0;
    while (c[n].name) n++;
    buf[0] = '\0';
    if (n > 2) used += (size_t)snprintf(buf, cap, "one of ");
    for (size_t i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s",
                                 i == 0 ? "" : n == 2 ? " or " : ", ", c[i].name);
}

/* Stores v (already range-checked) in the row's field, whose size says its type. */
static int store_int(const fe_opt *r, void *target, long long v, int is_signed) {
    char *p = (char *)target + r->off;
    if (r->size == sizeof(int32_t)) {
        if (is_signed) {
            int32_t x = (int32_t)v;
            memcpy(p, &x, sizeof x);
        } else {
            uint32_t x = (uint32_t)v;
            memcpy(p, &x, sizeof x);
        }
    } else if (r->size == sizeof(int64_t)) {
        if (is_signed) {
            int64_t x = (int64_t)v;
            memcpy(p, &x, sizeof x);
        } else {
            uint64_t x = (uint64_t)v;
            memcpy(p, &x, sizeof x);
        }
    } else {
        return -1;
    }
    return 0;
}

static int list_add(fe_opt_list *l, const char *s) {
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        const char **v = realloc(l->items, (size_t)cap * sizeof *v);
        if (!v) return -1;
        l->items = v;
        l->cap = cap;
    }
    l->items[l->count++] = s;
    return 0;
}

/* Applies one occurrence of row r with value v (NULL: none given). 0, or -1 with err filled. */
static int apply(const fe_opt *r, const char *v, void *target, char *err, size_t cap) {
    char nm[64];
    row_name(r, nm, sizeof nm);
    char *field = (char *)target + r->off;
    long long x;
    switch (r->kind) {
    case FE_OPT_FLAG:
        if (store_int(r, target, r->lo, 1)) break;
        return 0;
    case FE_OPT_INT:
    case FE_OPT_UINT:
        if (fe_parse_int(v, r->lo, r->hi, &x)) {
            snprintf(err, cap, "%s needs an integer from %lld to %lld, not '%s'", nm, r->lo, r->hi,
                     v);
            return -1;
        }
        if (r->check) {
            char why[160] = "";
            if (r->check(x, why, sizeof why)) {
                snprintf(err, cap, "%s: %s", nm, why);
                return -1;
            }
        }
        if (store_int(r, target, x, r->kind == FE_OPT_INT)) break;
        return 0;
    case FE_OPT_REAL: {
        double d;
        if (fe_parse_double(v, r->dlo, r->dhi, &d)) {
            snprintf(err, cap, "%s needs a number from %g to %g, not '%s'", nm, r->dlo, r->dhi, v);
            return -1;
        }
        if (r->size == sizeof(float)) {
            float f = (float)d;
            memcpy(field, &f, sizeof f);
        } else if (r->size == sizeof(double)) {
            memcpy(field, &d, sizeof d);
        } else {
            break;
        }
        return 0;
    }
    case FE_OPT_STRING:
        if (r->size != sizeof v) break;
        memcpy(field, &v, sizeof v);
        return 0;
    case FE_OPT_CHOICE: {
        int value = (int)r->lo;
        if (v) {
            const fe_opt_choice *c = r->choices;
            while (c->name && strcmp(c->name, v)) c++;
            if (!c->name) {
                char names[256];
                choice_list(r->choices, names, sizeof names);
                snprintf(err, cap, "%s: '%s' is not %s", nm, v, names);
                return -1;
            }
            value = c->value;
        }
        if (r->size != sizeof value) break;
        memcpy(field, &value, sizeof value);
        return 0;
    }
    case FE_OPT_LIST:
        if (r->size != sizeof(fe_opt_list)) break;
        if (list_add((fe_opt_list *)(void *)field, v)) {
            snprintf(err, cap, "out of memory");
            return -1;
        }
        return 0;
    case FE_OPT_CALLBACK:
        err[0] = '\0';
        return r->fn(r, v, target, err, cap) ? -1 : 0;
    default:
        break;
    }
    snprintf(err, cap, "internal error: the row of %s does not fit its field", nm);
    return -1;
}

static int takes_value(const fe_opt *r) {
    return r->kind != FE_OPT_FLAG && !(r->flags & FE_OPT_NO_VALUE);
}

int fe_opt_parse(const fe_cmd *cmd, int argc, char **argv, void *target, char *err, size_t cap) {
    unsigned char seen[MAX_ROWS] = {0};
    const fe_opt *pos = NULL;
    err[0] = '\0';
    if (cmd->n_opts > MAX_ROWS) {
        snprintf(err, cap, "internal error: more than %d option rows", MAX_ROWS);
        return FE_OPT_USAGE;
    }
    for (size_t k = 0; k < cmd->n_opts && !pos; k++)
        if (cmd->opts[k].flags & FE_OPT_POSITIONAL) pos = &cmd->opts[k];
    int only_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = NULL;
        const fe_opt *r = NULL;
        if (only_positional || s[0] != '-' || s[1] == '\0') {
            if (!pos || (pos->kind == FE_OPT_STRING && seen[pos - cmd->opts])) {
                char nm[64];
                if (pos)
                    snprintf(err, cap, "unexpected argument '%s' (one %s only)", s,
                             row_name(pos, nm, sizeof nm));
                else
                    snprintf(err, cap, "unexpected argument '%s' (see --help)", s);
                return FE_OPT_USAGE;
            }
            if (apply(pos, s, target, err, cap)) return FE_OPT_USAGE;
            seen[pos - cmd->opts] = 1;
            continue;
        }
        if (!strcmp(s, "--")) {
            only_positional = 1;
            continue;
        }
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) return FE_OPT_HELP;
        int has_eq = 0;
        if (s[1] == '-') {
            const char *name = s + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            for (size_t k = 0; k < cmd->n_opts && !r; k++) {
                const fe_opt *c = &cmd->opts[k];
                if (c->name && c->kind != FE_OPT_TEXT && strlen(c->name) == len &&
                    !strncmp(c->name, name, len))
                    r = c;
            }
            if (eq) v = eq + 1, has_eq = 1;
        } else if (s[2] == '\0') {
            for (size_t k = 0; k < cmd->n_opts && !r; k++)
                if (cmd->opts[k].shortopt == s[1] && cmd->opts[k].kind != FE_OPT_TEXT)
                    r = &cmd->opts[k];
        }
        if (!r) {
            snprintf(err, cap, "unknown option '%s' (see --help)", s);
            return FE_OPT_USAGE;
        }
        char nm[64];
        row_name(r, nm, sizeof nm);
        if (!takes_value(r) && has_eq) {
            snprintf(err, cap, "%s takes no value", nm);
            return FE_OPT_USAGE;
        }
        if (takes_value(r) && !has_eq && !(r->flags & FE_OPT_OPTIONAL_VALUE)) {
            if (i + 1 >= argc) {
                snprintf(err, cap, "%s needs a value", nm);
                return FE_OPT_USAGE;
            }
            v = argv[++i];
        }
        if (apply(r, v, target, err, cap)) return FE_OPT_USAGE;
        seen[r - cmd->opts] = 1;
    }
    for (size_t k = 0; k < cmd->n_opts; k++) {
        const fe_opt *r = &cmd->opts[k];
        if (!(r->flags & FE_OPT_REQUIRED) || seen[k]) continue;
        char nm[64];
        row_name(r, nm, sizeof nm);
        if (r->name || r->shortopt)
            snprintf(err, cap, "%s%s%s is required (see --help)", nm, r->arg ? " " : "",
                     r->arg ? r->arg : "");
        else
            snprintf(err, cap, "%s is required (see --help)", nm);
        return FE_OPT_USAGE;
    }
    return FE_OPT_OK;
}

int fe_opt_run(const fe_cmd *cmd, int argc, char **argv, void *target) {
    char err[512];
    int rc = fe_opt_parse(cmd, argc, argv, target, err, sizeof err);
    if (rc == FE_OPT_HELP)
        fe_opt_help(cmd, stdout);
    else if (rc == FE_OPT_USAGE && err[0])
        fprintf(stderr, "g4v %s: %s\n", cmd->name, err);
    return rc;
}

/* "  -o, --out FILE", "  --resize pillow|torchvision", "  --int8[=blocks]", "  IMAGE..." */
static size_t left_text(const fe_opt *r, char *buf, size_t cap) {
    char choices[128] = "";
    if (r->kind == FE_OPT_CHOICE && r->choices) {
        size_t used = 0;
        for (const fe_opt_choice *c = r->choices; c->name && used < sizeof choices; c++)
            used += (size_t)snprintf(choices + used, sizeof choices - used, "%s%s",
                                     c == r->choices ? "" : "|", c->name);
    }
    const char *arg = r->arg ? r->arg : choices;
    int n;
    if (!r->name && !r->shortopt)
        n = snprintf(buf, cap, "  %s", arg);
    else
        n = snprintf(buf, cap, "  %s%s%s%s%s%s%s%s", r->shortopt ? "-" : "",
                     r->shortopt ? (char[2]){r->shortopt, 0} : "",
                     r->shortopt && r->name ? ", " : "", r->name ? "--" : "",
                     r->name ? r->name : "",
                     !takes_value(r)                        ? ""
                     : (r->flags & FE_OPT_OPTIONAL_VALUE) ? "[="
                                                           : " ",
                     takes_value(r) ? arg : "",
                     takes_value(r) && (r->flags & FE_OPT_OPTIONAL_VALUE) ? "]" : "");
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* Prints text from column col (the first line where the cursor already is), each '\n'-line
 * wrapped at spaces to HELP_WIDTH; a line's leading spaces indent its wrapped part too. */
static void print_wrapped(FILE *f, const char *text, size_t col) {
    const char *line = text;
    int first = 1;
    while (*line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        size_t indent = 0;
        while (indent < len && line[indent] == ' ') indent++;
        size_t width = HELP_WIDTH > col + indent + 20 ? HELP_WIDTH - col : 20 + indent;
        const char *p = line, *end = line + len;
        int cont = 0;
        while (p < end) {
            size_t room = width - (cont ? indent : 0), take = (size_t)(end - p);
            if (take > room) { /* break at the last space that fits, else the first after */
                size_t lo = cont ? 0 : indent, b = room;
                while (b > lo && p[b] != ' ') b--;
                if (b == lo)
                    for (b = lo + 1; b < take && p[b] != ' ';) b++;
                take = b;
            }
            if (!first) fprintf(f, "%*s", (int)(col + (cont ? indent : 0)), "");
            fprintf(f, "%.*s\n", (int)take, p);
            first = 0;
            p += take;
            while (p < end && *p == ' ') p++;
            cont = 1;
        }
        if (len == 0) { /* an empty line: no trailing spaces */
            fputc('\n', f);
            first = 0;
        }
        line = nl ? nl + 1 : end;
    }
    if (first) fputc('\n', f);
}

void fe_opt_help(const fe_cmd *cmd, FILE *f) {
    char left[160];
    size_t col = strlen("  -h, --help");
    for (size_t k = 0; k < cmd->n_opts; k++) {
        const fe_opt *r = &cmd->opts[k];
        if (r->kind == FE_OPT_TEXT || (r->flags & FE_OPT_HIDDEN)) continue;
        size_t n = left_text(r, left, sizeof left);
        if (n <= HELP_MAX_LEFT && n > col) col = n;
    }
    col += 2;
    fprintf(f, "usage: g4v %s\n", cmd->usage);
    if (cmd->about) fprintf(f, "\n%s", cmd->about);
    fputc('\n', f);
    if (cmd->heading) fprintf(f, "%s\n", cmd->heading);
    for (size_t k = 0; k < cmd->n_opts; k++) {
        const fe_opt *r = &cmd->opts[k];
        if (r->flags & FE_OPT_HIDDEN) continue;
        if (r->kind == FE_OPT_TEXT) {
            fputs(r->help, f);
            continue;
        }
        size_t n = left_text(r, left, sizeof left);
        fputs(left, f);
        if (n + 2 > col) {
            fputc('\n', f);
            n = 0;
        }
        fprintf(f, "%*s", (int)(col - n), "");
        print_wrapped(f, r->help ? r->help : "", col);
    }
    fprintf(f, "  -h, --help%*sthis help\n", (int)(col - strlen("  -h, --help")), "");
    if (cmd->epilog) fprintf(f, "\n%s", cmd->epilog);
}
