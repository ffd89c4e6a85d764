/* cmd_info.c - `g4v info`: placeholder until its issue lands; says so and fails. */
#include "cli.h"

#include <stdio.h>

int cmd_info(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "g4v info: not implemented yet\n");
    return G4V_EXIT_INTERNAL;
}
