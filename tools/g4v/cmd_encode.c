/* cmd_encode.c - `g4v encode`: placeholder until its issue lands; says so and fails. */
#include "cli.h"

#include <stdio.h>

int cmd_encode(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "g4v encode: not implemented yet\n");
    return G4V_EXIT_INTERNAL;
}
