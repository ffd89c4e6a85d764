/* webui_wing.c - the chat page (docs/WEBUI.md): with --lm, unless --no-webui, GET / is a page to
 * talk to the model about images and videos, and GET /webui/NAME its scripts and styles, all
 * built into the binary (webui_assets.h), so the page works offline and nothing is fetched.
 *
 * The page's files are open without the API key: a browser's navigation cannot send one, and
 * they hold nothing but the page. Everything the page does goes through the API (POST
 * /v1/chat/completions, GET /v1/models) with the key the person enters, like any client.
 * Every file is sent with a Content-Security-Policy that allows scripts, styles and connections
 * only from this server and no inline script or style, so that text the model or a file name
 * brings can never run even if the page had a bug that put it into the document as HTML. */
#include "core/core.h"
#include "webui/webui_assets.h"

#include <string.h>

/* connect-src 'self': the page's API calls; img/media blob: the attachments' previews, data:
 * the favicon left empty. */
#define WEBUI_CSP                                                                              \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "    \
    "media-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; "        \
    "frame-ancestors 'none'"

static enum MHD_Result serve_file(request *q, struct MHD_Connection *c) {
    (void)c;
    const webui_asset *a = q->ctx;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(a->size, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (r) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->type);
        MHD_add_response_header(r, "Content-Security-Policy", WEBUI_CSP);
        MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    }
    return svc_answer(q, MHD_HTTP_OK, r);
}

static int wanted(const g4v_service_options *o) { return o->lm != NULL && !o->no_webui; }

static int open_wing(server *s, void **state) {
    *state = NULL;
    for (const webui_asset *a = webui_assets; a->path; a++) {
        svc_route row = {.path = a->path,
                         .methods = SVC_GET,
                         /* only the page itself is listed among the endpoints, not its files */
                         .flags = SVC_OPEN | (strcmp(a->path, "/") ? SVC_UNLISTED : 0),
                         .begin = serve_file};
        if (svc_routes_add(s, &row, 1, (void *)a)) return G4V_SERVICE_ERR_INTERNAL;
    }
    return G4V_SERVICE_OK;
}

const svc_wing svc_webui_wing = {
    .name = "webui",
    .wanted = wanted,
    .open = open_wing,
    .off_paths = {"/", NULL},
    .off_text = "the chat page is served by g4v serve with --lm (and without --no-webui); "
                "docs/WEBUI.md",
};
