/* version.c - g4v_version(). */
#include "g4v.h"

#define G4V_STR2(x) #x
#define G4V_STR(x) G4V_STR2(x)

const char *g4v_version(void) {
    return G4V_STR(G4V_VERSION_MAJOR) "." G4V_STR(G4V_VERSION_MINOR) "." G4V_STR(G4V_VERSION_PATCH);
}
