/* webui_wing.h - the chat page's wing (webui_wing.c; docs/WEBUI.md): GET / and its files. */
#ifndef G4V_SERVICE_WEBUI_WING_H
#define G4V_SERVICE_WEBUI_WING_H

#include "core/core.h"

extern const svc_wing svc_webui_wing;

#endif
