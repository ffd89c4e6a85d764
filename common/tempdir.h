/* tempdir.h - the front ends' private temporary directories (a feature cache for one `g4v chat`
 * run, or for `g4v serve --lm` without --cache): made under $TMPDIR (else /tmp) with a unique
 * name, removed with everything in them when their owner is done. The one implementation for
 * the CLI, the service and chat. */
#ifndef G4V_FRONTEND_TEMPDIR_H
#define G4V_FRONTEND_TEMPDIR_H

#include <stddef.h>

/* Makes "$TMPDIR/PREFIX-XXXXXX" into dir (cap bytes). 0, or -1 with dir empty and the parent
 * directory it tried in *where (for the caller's message). */
int fe_temp_dir(char *dir, size_t cap, const char *prefix, const char **where);
/* Removes dir and everything under it (without following symlinks); an empty dir is a no-op. */
void fe_temp_dir_remove(const char *dir);

#endif
