/* inputs.h - expands the IMAGE arguments of `g4v encode` into a list of files:
 * a file is taken as is; a directory contributes its regular files with an image or .npy
 * extension (.png .jpg .jpeg .webp .gif .bmp .npy, videos .mp4 .mov .m4v .mkv .webm .avi;
 * any case), sorted by name, not recursive;
 * @FILE reads one path per line (blank lines and lines starting with # skipped). */
#ifndef G4V_CLI_INPUTS_H
#define G4V_CLI_INPUTS_H

typedef struct {
    char **paths;
    int count, cap;
} input_list;

/* Appends the expansion of arg. 0, or -1 with a message on stderr. */
int inputs_add(input_list *l, const char *arg);
void inputs_free(input_list *l);

#endif
