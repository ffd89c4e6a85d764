/* encode_wing.h - what the files of the encode wing share (docs/SERVICE.md): POST /v1/encode
 * (an image in, its soft tokens out) and GET /v1/info, registered with the core (core/core.h)
 * by the wing descriptor svc_encode_wing:
 *   encode_wing.c     the descriptor: the job kind started, the routes added, GET /v1/info, the
 *                     encode lines of GET /metrics
 *   encode_request.c  an encode request: query parameters, Accept, Content-Length, the body
 *   encode_job.c      the job kind "encode": workers owning one g4v_ctx each, the encode, the
 *                     response and its X-G4V-* headers
 *   serve_format.c    the response bodies (JSON with base64 features, .npy, safetensors)
 *   encode_vision.c   the other wings' media (the chat slots' images and videos) encoded by the
 *                     same workers, contexts and feature cache, queued with the requests
 */
#ifndef G4V_SERVICE_ENCODE_WING_H
#define G4V_SERVICE_ENCODE_WING_H

#include "core/core.h"
#include "encoded.h" /* common/: fe_encoded */
#include "medium.h"  /* common/: fe_medium */

/* The wing's state: its pool of contexts (--contexts, --queue) and what it counts. */
typedef struct encode_wing {
    server *s;
    svc_pool *pool;
    int threads;       /* compute threads per context */
    uint64_t encodes;  /* under the server's mutex */
    uint64_t batched;  /* requests encoded in a pass with others (--batch); under the mutex */
    pthread_cond_t fed; /* an encode_client was fed or queued more (encode_vision.c) */
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
/* The encode wing's state in s (it always runs, and opens first). */
encode_wing *encode_wing_of(server *s);

/* ---- encode_vision.c: media encoded for the other wings ------------------------------------- */

/* One medium: what to encode, then (done) what came out. */
typedef struct encode_vision_job {
    fe_medium medium;  /* FE_MEDIUM_IMAGE or FE_MEDIUM_VIDEO */
    const char *path;   /* the file, or (data set) only a name */
    const void *data;   /* the bytes in memory, or NULL */
    size_t size;
    int budget;         /* soft tokens per image / per video frame */
    int frames;         /* frames of a video */
    struct encode_client *client;
    /* out */
    int status;         /* G4V_OK or libg4v's status */
    char error[512];    /* its message */
    fe_encoded out;     /* its soft tokens (G4V_OK), the caller's to free */
} encode_vision_job;

/* One user of the contexts (a chat slot): its feature cache, its jobs in flight, and whether the
 * media it got are still to be decoded (then the worker that encoded them waits, at most
 * ENCODE_FED_WAIT_MS, before taking another job: the conversation's prompt goes to the cores
 * before the next conversation's image; under the server's mutex). */
typedef struct encode_client {
    encode_wing *ew;
    g4v_cache *cache;
    int queued, unfed;
} encode_client;

/* Encodes jobs[0..n) on the wing's contexts, behind the requests already waiting (one FIFO),
 * together when --batch lets a worker take several; blocks until all are done (each with its
 * own status). 0, or -1 when the encode wing has stopped. */
int encode_vision_run(encode_client *c, encode_vision_job *jobs, int n);
/* What c's jobs encoded is decoded now, or never will be: the contexts go on. */
void encode_vision_fed(encode_client *c);
/* encode_job.c's run and run_batch hand their local jobs (q->local) to this, n >= 1. */
void encode_vision_jobs(svc_worker *w, request **qs, int n);
/* A compute team of ctx's threads in the server's gate around every encode (common/cpu_gate.h). */
int encode_gate_enter(encode_wing *ew);
void encode_gate_leave(encode_wing *ew, int taken);

#endif
