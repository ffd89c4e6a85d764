/* math_mode.c - g4v_math_mode's names: one table for the name every output prints (fingerprint,
 * cache key, `g4v info`, /v1/info) and the parse every front end's --math uses. */
#include "g4v.h"

#include <stdio.h>
#include <string.h>

/* Indexed by g4v_math_mode. The first three are the names the fingerprint and the cache key have
 * always hashed: changing one changes every stored key. */
static const char *const names[] = {"fast", "precise", "int8", "int8-blocks"};
#define N_MODES (sizeof names / sizeof names[0])

const char *g4v_math_mode_name(g4v_math_mode mode) {
    return (unsigned)mode < N_MODES ? names[mode] : "unknown";
}

g4v_status g4v_math_mode_parse(const char *name, g4v_math_mode *out, char *errbuf,
                               size_t errbuf_size) {
    if (errbuf && errbuf_size) errbuf[0] = '\0';
    for (size_t i = 0; name && i < N_MODES; i++)
        if (!strcmp(name, names[i])) {
            if (out) *out = (g4v_math_mode)i;
            return G4V_OK;
        }
    if (errbuf && errbuf_size)
        snprintf(errbuf, errbuf_size, "unknown math mode '%s' (use fast, precise, int8 or "
                 "int8-blocks)", name ? name : "(null)");
    return G4V_ERR_ARG;
}
