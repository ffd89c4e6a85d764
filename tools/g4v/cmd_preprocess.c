/* cmd_preprocess.c - `g4v preprocess`: placeholder until its issue lands; says so and fails. */
#include "cli.h"

#include <stdio.h>

int cmd_preprocess(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "g4v preprocess: not implemented yet\n");
    return G4V_EXIT_INTERNAL;
}
