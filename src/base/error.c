/* error.c - status names and message formatting for g4v_err. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *g4v_status_name(g4v_status status) {
    switch (status) {
    case G4V_OK: return "G4V_OK";
    case G4V_ERR_ARG: return "G4V_ERR_ARG";
    case G4V_ERR_IO: return "G4V_ERR_IO";
    case G4V_ERR_MODEL: return "G4V_ERR_MODEL";
    case G4V_ERR_IMAGE: return "G4V_ERR_IMAGE";
    case G4V_ERR_LIMIT: return "G4V_ERR_LIMIT";
    case G4V_ERR_NOMEM: return "G4V_ERR_NOMEM";
    case G4V_ERR_UNSUPPORTED: return "G4V_ERR_UNSUPPORTED";
    case G4V_ERR_INTERNAL: return "G4V_ERR_INTERNAL";
    default: return "G4V_ERR_UNKNOWN";
    }
}

void g4v_err_clear(g4v_err *err) {
    if (!err) return;
    err->status = G4V_OK;
    err->msg[0] = '\0';
}

int g4v_fail(g4v_err *err, int status, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

void g4v_err_prefix(g4v_err *err, const char *fmt, ...) {
    if (!err) return;
    char prefix[G4V_ERR_MSG_MAX], old[G4V_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* Truncation is acceptable for a message; build it piecewise so the compiler can see that. */
    size_t n = strlen(prefix);
    if (n > sizeof err->msg - 3) n = sizeof err->msg - 3;
    memcpy(err->msg, prefix, n);
    memcpy(err->msg + n, ": ", 2);
    size_t room = sizeof err->msg - n - 3, m = strlen(old);
    if (m > room) m = room;
    memcpy(err->msg + n + 2, old, m);
    err->msg[n + 2 + m] = '\0';
}
