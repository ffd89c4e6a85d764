/* exit_status.c - the CLI's map from a library status to an exit code (cli.h), on its own so
 * that the subcommands (cmd_*.c) use it without calling back into main.c, which calls them. */
#include "cli.h"

int cli_exit_for_status(int status, int model_context) {
    switch (status) {
    case G4V_OK:
        return G4V_EXIT_OK;
    case G4V_ERR_ARG:
        return G4V_EXIT_USAGE;
    case G4V_ERR_MODEL:
        return G4V_EXIT_MODEL;
    case G4V_ERR_IO:
        return model_context ? G4V_EXIT_MODEL : G4V_EXIT_INPUT;
    case G4V_ERR_IMAGE:
    case G4V_ERR_LIMIT:
    case G4V_ERR_UNSUPPORTED:
        return model_context ? G4V_EXIT_MODEL : G4V_EXIT_INPUT;
    default:
        return G4V_EXIT_INTERNAL;
    }
}
