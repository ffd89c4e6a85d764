/* cli.h - shared pieces of the g4v command-line tool: the subcommand table and exit codes.
 *
 * Exit codes (documented in `g4v --help` and README):
 *   0 success, 1 usage error, 2 input error (image unreadable, unsupported budget, ...),
 *   3 model error (checkpoint missing/malformed), 4 output error (cannot write), 5 internal error.
 */
#ifndef G4V_CLI_H
#define G4V_CLI_H

#include "g4v.h"

enum {
    G4V_EXIT_OK = 0,
    G4V_EXIT_USAGE = 1,
    G4V_EXIT_INPUT = 2,
    G4V_EXIT_MODEL = 3,
    G4V_EXIT_OUTPUT = 4,
    G4V_EXIT_INTERNAL = 5
};

/* "70, 140, 280, 560, 1120" for help texts: the budget list from g4v.h, spelled once. */
#define CLI_STR_(...) #__VA_ARGS__
#define CLI_STR(...) CLI_STR_(__VA_ARGS__)
#define CLI_BUDGETS CLI_STR(G4V_BUDGETS)

/* Each subcommand: argv[0] is the subcommand name. Returns an exit code. */
int cmd_info(int argc, char **argv);
int cmd_preprocess(int argc, char **argv);
int cmd_encode(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_pull(int argc, char **argv);

/* Maps a library status (g4v_status) to the exit code for a failure of that kind
 * (exit_status.c). model_context: nonzero when the failure happened while loading the model. */
int cli_exit_for_status(int status, int model_context);

#endif
