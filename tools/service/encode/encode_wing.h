/* encode_wing.h - what the files of the encode wing share (docs/SERVICE.md): POST /v1/encode
 * (an image in, its soft tokens out) and GET /v1/info, registered with the core (core/core.h)
 * by the wing descriptor svc_encode_wing:
 *   encode_wing.c     the descriptor: the job kind started, the routes added, GET /v1/info, the
 *                     encode lines of GET /metrics
 *   encode_request.c  an encode request: query parameters, Accept, Content-Length, the body
 *   encode_job.c      the job kind "encode": workers owning one g4v_ctx each, the encode, the
 *                     response and its X-G4V-* headers
 *   serve_format.c    the response bodies (JSON with base64 features, .npy, safetensors)
 */
#ifndef G4V_SERVICE_ENCODE_WING_H
#define G4V_SERVICE_ENCODE_WING_H

#include "core/core.h"

/* The wing's state: its pool of contexts (--contexts, --queue) and what it counts. */
typedef struct encode_wing {
    server *s;
    svc_pool *pool;
    int threads;       /* compute threads per context */
    uint64_t encodes;  /* under the server's mutex */
    uint64_t batched;  /* requests encoded in a pass with others (--batch); under the mutex */
} encode_wing;

/* One encode request's settings (the request's data, then its job). */
typedef struct encode_params {
    int budget, bf16, exif, fmt, resize;
} encode_params;

/* encode_request.c: the row's handlers (q->ctx is the encode_wing) */
enum MHD_Result encode_begin(request *q, struct MHD_Connection *c);
enum MHD_Result encode_finish(request *q);
void encode_done(request *q);

/* encode_job.c */
extern const svc_kind encode_kind;

/* encode_wing.c */
extern const svc_wing svc_encode_wing;

#endif
