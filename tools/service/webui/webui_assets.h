/* webui_assets.h - the chat page's files, built into the binary (cmake/EmbedPage.cmake writes
 * the table from tools/service/webui/page/ at build time). */
#ifndef G4V_SERVICE_WEBUI_ASSETS_H
#define G4V_SERVICE_WEBUI_ASSETS_H

#include <stddef.h>

typedef struct webui_asset {
    const char *path; /* "/" for index.html, else "/webui/NAME" */
    const char *type; /* its Content-Type */
    const unsigned char *data;
    size_t size;
} webui_asset;

/* every file of the page, ended by a row whose path is NULL */
extern const webui_asset webui_assets[];

#endif
