/* chat_vision.c - the chat slots' encoder (chat/chat_session.h, chat_vision): a slot's images
 * and videos are encoded by the encode wing's contexts (encode/encode_vision.c), the same job
 * kind as POST /v1/encode, instead of a g4v_ctx of each slot's own: one vision model, one
 * feature cache, one queue and --batch seam, and the encodes inside the server's CPU budget
 * with the text model's decode calls (docs/SERVICE.md "Threads"). */
#include "chat/chat_wing.h"
#include "encode/encode_wing.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef G4V_HAVE_LLAMA

#include "chat_session.h"

#include <string.h>

/* One slot's: what its session is given, and its place among the encode wing's clients. */
struct chat_slot_vision {
    chat_vision v;
    encode_client c;
};

static int encode(void *ctx, const chat_media *media, const int *budgets, int frames, int n,
                  chat_encoded *out, char *err, size_t errsz) {
    struct chat_slot_vision *sv = ctx;
    encode_vision_job *js = calloc((size_t)n, sizeof *js);
    if (!js) {
        snprintf(err, errsz, "out of memory");
        return CHAT_ERR_INTERNAL;
    }
    for (int i = 0; i < n; i++)
        js[i] = (encode_vision_job){.medium = media[i].medium,
                                    .path = media[i].path,
                                    .data = media[i].data,
                                    .size = media[i].size,
                                    .budget = budgets[i],
                                    .frames = frames};
    int rc = CHAT_OK;
    if (encode_vision_run(&sv->c, js, n)) {
        snprintf(err, errsz, "the server is shutting down: its encode contexts have stopped");
        rc = CHAT_ERR_INTERNAL;
    }
    for (int i = 0; i < n; i++) {
        encode_vision_job *j = &js[i];
        if (!rc && j->status) rc = chat_media_error(&media[i], j->status, j->error, err, errsz);
        if (rc) /* this one failed, or one before it: the outs from here on stay empty */
            fe_encoded_free(&j->out);
        else
            out[i] = j->out;
    }
    free(js);
    return rc;
}

static void fed(void *ctx) {
    struct chat_slot_vision *sv = ctx;
    encode_vision_fed(&sv->c);
}

int chat_vision_open(chat_wing *cw) {
    encode_wing *ew = encode_wing_of(cw->s);
    if (!ew) {
        fprintf(stderr, "g4v serve: --lm: the encode wing is not running\n");
        return G4V_SERVICE_ERR_INTERNAL;
    }
    cw->vision = calloc((size_t)cw->s->a.lm_slots, sizeof *cw->vision);
    if (!cw->vision) return G4V_SERVICE_ERR_INTERNAL;
    for (int i = 0; i < cw->s->a.lm_slots; i++) {
        struct chat_slot_vision *sv = &cw->vision[i];
        sv->v = (chat_vision){.ctx = sv, .encode = encode, .fed = fed};
        sv->c = (encode_client){.ew = ew, .cache = cw->cache};
    }
    return G4V_SERVICE_OK;
}

const struct chat_vision *chat_vision_of(chat_wing *cw, int slot) { return &cw->vision[slot].v; }

#endif

void chat_vision_close(chat_wing *cw) {
    free(cw->vision);
    cw->vision = NULL;
}
