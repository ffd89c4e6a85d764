/* service_request.c - reading an encode request: its query parameters (tokens, dtype, exif,
 * resize, format) and Accept header into the job's settings, its Content-Length against
 * --max-body-bytes (refused before the body is sent), its body collected up to that limit, and
 * once complete the checks before it is handed to the queue. Whatever is wrong is answered 4xx
 * here, before any context is involved. */
#include "frontend.h"
#include "serve_format.h"
#include "service_internal.h"

#include <stdlib.h>
#include <string.h>

enum MHD_Result svc_begin_encode(request *q, struct MHD_Connection *c) {
    server *s = q->s;
    const char *v;
    long long n;
    q->budget = 0;
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "tokens"))) {
        char msg[160];
        if (fe_parse_int(v, 1, 1000000, &n) || g4v_budget_check((int)n, msg, sizeof msg))
            return svc_answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                    "tokens=%.40s: unsupported token budget (use one of %s)", v,
                                    SVC_BUDGETS);
        q->budget = (int)n;
    }
    q->bf16 = 0;
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "dtype"))) {
        if (!strcmp(v, "bf16"))
            q->bf16 = 1;
        else if (strcmp(v, "f32") && strcmp(v, "float32"))
            return svc_answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                    "dtype=%.40s: use f32 or bf16", v);
    }
    q->exif = -1;
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "exif"))) {
        if (strcmp(v, "0") && strcmp(v, "1"))
            return svc_answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                    "exif=%.40s: use 0 or 1", v);
        q->exif = v[0] == '1';
    }
    q->resize = -1;
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resize"))) {
        if (strcmp(v, "pillow") && strcmp(v, "torchvision"))
            return svc_answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                    "resize=%.40s: use pillow or torchvision", v);
        q->resize = !strcmp(v, "torchvision") ? G4V_RESIZE_TORCHVISION : G4V_RESIZE_PILLOW;
    }
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format"))) {
        if ((q->fmt = serve_format_from_name(v)) < 0)
            return svc_answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                    "format=%.40s: use json, npy or safetensors", v);
    } else {
        const char *accept =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
        if ((q->fmt = serve_format_from_accept(accept)) < 0)
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

enum MHD_Result svc_receive(request *q, const char *data, size_t n) {
    server *s = q->s;
    if (q->too_big || q->len + n > s->a.max_body) { /* a body without a Content-Length */
        q->too_big = 1;
        return MHD_YES; /* read and dropped; answered 413 at the end */
    }
    if (q->len + n > q->cap) {
        size_t cap = q->cap ? q->cap : 65536;
        while (cap < q->len + n)
            cap *= 2;
        if (cap > s->a.max_body) cap = s->a.max_body;
        unsigned char *b = realloc(q->body, cap);
        if (!b) return MHD_NO; /* out of memory: drop the connection */
        q->body = b;
        q->cap = cap;
    }
    memcpy(q->body + q->len, data, n);
    q->len += n;
    return MHD_YES;
}

enum MHD_Result svc_finish_encode(request *q) {
    server *s = q->s;
    if (q->too_big)
        return svc_answer_error(
            q, MHD_HTTP_CONTENT_TOO_LARGE, "G4V_ERR_LIMIT",
            "body is above this server's limit of %llu bytes (--max-body-bytes)", s->a.max_body);
    if (q->len == 0)
        return svc_answer_error(
            q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
            "empty body: POST the image's bytes (e.g. curl --data-binary @cat.jpg)");
    return svc_enqueue(q);
}
