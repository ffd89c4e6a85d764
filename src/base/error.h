/* error.h - how failures travel inside libg4v.
 *
 * Every internal function that can fail takes a `g4v_err *` (may be NULL) and returns a
 * g4v_status. g4v_fail() records the status and a formatted, specific message ("which file,
 * which tensor, expected vs found") and returns the status, so a failure site is one line:
 *     return g4v_fail(err, G4V_ERR_MODEL, "%s: tensor %s: expected shape [%d], found [%d]", ...);
 * Nothing below src/api prints; the API copies err->msg to the caller.
 */
#ifndef G4V_BASE_ERROR_H
#define G4V_BASE_ERROR_H

#include "g4v.h"

#define G4V_ERR_MSG_MAX 768

typedef struct g4v_err {
    int status;
    char msg[G4V_ERR_MSG_MAX];
} g4v_err;

/* Resets err (if not NULL) to G4V_OK with an empty message. */
void g4v_err_clear(g4v_err *err);

/* Records status + printf-style message in err (if not NULL) and returns status. */
int g4v_fail(g4v_err *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes the existing message with printf-style context ("loading x.png: <old msg>"). */
void g4v_err_prefix(g4v_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
