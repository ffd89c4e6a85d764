/* g4v.h - the public API of libg4v: Gemma 4 vision embeddings ("soft tokens") on the CPU.
 *
 * This header is the whole public surface. Everything else under src/ is internal.
 * Conventions: every call returns a g4v_status; G4V_OK is 0. Nothing in the library prints,
 * exits or aborts on bad input; a failed call leaves a message readable with the
 * corresponding *_last_error() function or g4v_status_name().
 */
#ifndef G4V_H
#define G4V_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define G4V_VERSION_MAJOR 0
#define G4V_VERSION_MINOR 1
#define G4V_VERSION_PATCH 0

/* Status codes. Stable numbers: callers may switch on them. */
typedef enum g4v_status {
    G4V_OK = 0,
    G4V_ERR_ARG = 1,         /* a caller argument is invalid (NULL, unsupported budget, ...) */
    G4V_ERR_IO = 2,          /* a file cannot be opened, read or mapped */
    G4V_ERR_MODEL = 3,       /* the checkpoint is malformed or disagrees with its config */
    G4V_ERR_IMAGE = 4,       /* the image cannot be decoded (corrupt, truncated, unsupported) */
    G4V_ERR_LIMIT = 5,       /* an input exceeds a configured limit (pixels, header size, ...) */
    G4V_ERR_NOMEM = 6,       /* an allocation failed */
    G4V_ERR_UNSUPPORTED = 7, /* a valid input that this library does not handle */
    G4V_ERR_INTERNAL = 8     /* a bug: please report it */
} g4v_status;

/* Short constant name of a status ("G4V_ERR_MODEL"); never NULL. */
const char *g4v_status_name(int status);

/* Library version as "MAJOR.MINOR.PATCH". */
const char *g4v_version(void);

#ifdef __cplusplus
}
#endif
#endif
