/* encode_request.c - reading an encode request: its query parameters (tokens, dtype, exif,
 * resize, format) and Accept header into its settings (encode_params), its Content-Length
 * against --max-body-bytes (refused before the body is sent), and once the core has collected
 * the body (core/routes.c), the checks before it is handed to the queue. Whatever is wrong is
 * answered 4xx here, before any context is involved. */
#include "encode/encode_wing.h"
#include "encode/serve_format.h"
#include "frontend.h"

#include <stdlib.h>
#include <string.h>

enum MHD_Result encode_begin(request *q, struct MHD_Connection *c) {
    server *s = q->s;
    const char *v;
    long long n;
    encode_params *p = calloc(1, sizeof *p);
    if (!p) return MHD_NO; /* out of memory: drop the connection */
    q->data = p;
    p->budget = 0;
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "tokens"))) {
        char msg[160];
        if (fe_parse_int(v, 1, 1000000, &n) || g4v_budget_check((int)n, msg, sizeof msg))
            return svc_answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                    "tokens=%.40s: unsupported token budget (use one of %s)", v,
                                    SVC_BUDGETS);
        p->budget = (int)n;
    }
    p->bf16 = 0;
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "dtype"))) {
        if (!strcmp(v, "bf16"))
            p->bf16 = 1;
        else if (strcmp(v, "f32") && strcmp(v, "float32"))
            return svc_answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                    "dtype=%.40s: use f32 or bf16", v);
    }
    p->exif = -1;
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "exif"))) {
        if (strcmp(v, "0") && strcmp(v, "1"))
            return svc_answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                    "exif=%.40s: use 0 or 1", v);
        p->exif = v[0] == '1';
    }
    p->resize = -1;
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resize"))) {
        if (strcmp(v, "pillow") && strcmp(v, "torchvision"))
            return svc_answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                    "resize=%.40s: use pillow or torchvision", v);
        p->resize = !strcmp(v, "torchvision") ? G4V_RESIZE_TORCHVISION : G4V_RESIZE_PILLOW;
    }
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format"))) {
        if ((p->fmt = serve_format_from_name(v)) < 0)
            return svc_answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                    "format=%.40s: use json, npy or safetensors", v);
    } else {
        const char *accept =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
        if ((p->fmt = serve_format_from_accept(accept)) < 0)
            return svc_answer_error(q, MHD_HTTP_NOT_ACCEPTABLE, "G4V_ERR_ARG",
                                    "Accept: %.200s: this service answers application/json, "
                                    "application/x-npy or application/x-safetensors",
                                    accept);
    }
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && !fe_parse_int(cl, 0, (1ll << 62), &n) && (unsigned long long)n > s->a.max_body)
        return svc_answer_error(q, MHD_HTTP_CONTENT_TOO_LARGE, "G4V_ERR_LIMIT",
                                "body of %lld bytes is above this server's limit of %llu bytes "
                                "(--max-body-bytes)",
                                n, s->a.max_body);
    return MHD_YES; /* the body follows */
}

enum MHD_Result encode_finish(request *q) {
    server *s = q->s;
    if (q->too_big)
        return svc_answer_error(
            q, MHD_HTTP_CONTENT_TOO_LARGE, "G4V_ERR_LIMIT",
            "body is above this server's limit of %llu bytes (--max-body-bytes)", s->a.max_body);
    if (q->len == 0)
        return svc_answer_error(
            q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
            "empty body: POST the image's bytes (e.g. curl --data-binary @cat.jpg)");
    return svc_enqueue(q, ((encode_wing *)q->ctx)->pool, q->data);
}

void encode_done(request *q) { free(q->data); }
