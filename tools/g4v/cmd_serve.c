/* cmd_serve.c - `g4v serve`: the HTTP encode service (docs/SERVICE.md), which lives in
 * tools/service (service.h). This command only parses its arguments, runs it and turns how it
 * ended into the tool's exit code.
 *
 *   g4v serve --model DIR [--host 127.0.0.1] [--port N] [--contexts K] [--threads N]
 *             [--queue Q] [--cache DIR] ...
 */
#include "cli.h"
#include "model_store.h"
#include "service.h"

static int exit_code(int rc) {
    switch (rc) {
    case G4V_SERVICE_OK:
    case G4V_SERVICE_HELP:
        return G4V_EXIT_OK;
    case G4V_SERVICE_ERR_USAGE:
        return G4V_EXIT_USAGE;
    case G4V_SERVICE_ERR_MODEL:
        return G4V_EXIT_MODEL;
    case G4V_SERVICE_ERR_LISTEN:
        return G4V_EXIT_OUTPUT;
    default:
        return G4V_EXIT_INTERNAL;
    }
}

int cmd_serve(int argc, char **argv) {
    g4v_service_options o;
    g4v_service_options_init(&o);
    int rc = g4v_service_parse_args(argc, argv, &o);
    ms_paths where; /* o.model and o.lm may point into it: the real paths of stored models */
    if (rc == G4V_SERVICE_OK) {
        int ms = ms_resolve_front("serve", &where, &o.model, &o.lm, o.ollama, o.revision, 0);
        if (ms) return ms == MS_ERR_USAGE ? G4V_EXIT_USAGE : G4V_EXIT_MODEL;
        rc = g4v_service_run(&o);
    }
    g4v_service_options_free(&o);
    return exit_code(rc);
}
