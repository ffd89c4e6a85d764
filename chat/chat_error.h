/* chat_error.h - how the chat engine reports a failure: a message into the caller's buffer
 * (err may be NULL or errsz 0: then nothing is written). */
#ifndef G4V_CHAT_ERROR_H
#define G4V_CHAT_ERROR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline void seterr(char *err, size_t errsz, const char *fmt, ...) {
    if (!err || !errsz) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsz, fmt, ap);
    va_end(ap);
}

#endif
