/* fuzz_chat_request.c - the input is the body of a POST /v1/chat/completions (docs/CHAT_API.md),
 * parsed by the chat endpoint's real parser (tools/service/chat/chat_request.c) into a chat job, as
 * `g4v serve --lm` does before anything reaches a model. No model is loaded: the parser sees only
 * the server's options (2 images, 4 messages, a 4096-token context; no --allow-files, so no path
 * reaches the file system). Checks: whatever the bytes, no crash, leak or hang; a refusal has a
 * status of 400/403/413/500, a type, a code and a message; an accepted job keeps the limits (at
 * most 2 images, a conversation that ends with a user turn or a tool result, budgets (the
 * request's and each image's) and stop strings as documented) and every image has bytes. */
#include "chat/chat_wing.h"
#include "fuzz_common.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static server s;
    static int init;
    if (!init) {
        g4v_service_options_init(&s.a);
        s.a.model = "vision";
        s.a.lm = "models/lm.gguf";
        s.a.max_images = 2;
        s.a.max_messages = 4;
        s.a.lm_ctx = 4096;
        init = 1;
    }
    chat_fail f;
    memset(&f, 0, sizeof f);
    chat_job *j = chat_request_parse(&s, (const char *)data, size, &f);
    if (!j) {
        FZ_ASSERT(f.http == 400 || f.http == 403 || f.http == 413 || f.http == 500,
                  "refusal status %d", f.http);
        FZ_ASSERT(f.type && f.code && f.msg[0], "a refusal without type, code or message");
        return 0;
    }
    FZ_ASSERT(j->n_images <= 2, "%d images accepted over the limit 2", j->n_images);
    FZ_ASSERT(!j->n_turns || j->turns[j->n_turns - 1].role != CHAT_ROLE_ASSISTANT,
              "a final assistant message kept as a turn, not as the answer's start");
    FZ_ASSERT(j->n_turns || j->system || j->prefill, "an empty conversation accepted");
    const chat_params *pa = &j->params;
    FZ_ASSERT(pa->max_tokens >= 1 && pa->max_tokens <= 4096, "max_tokens %d", pa->max_tokens);
    FZ_ASSERT(j->n_stop <= CHAT_MAX_STOP, "%d stop strings", j->n_stop);
    FZ_ASSERT(pa->budget == 0 || pa->budget == 70 || pa->budget == 140 || pa->budget == 280 ||
                  pa->budget == 560 || pa->budget == 1120,
              "budget %d", pa->budget);
    int n = 0;
    for (int t = 0; t < j->n_turns; t++) {
        FZ_ASSERT(j->turns[t].text != NULL, "turn %d without text", t);
        for (int i = 0; i < j->turns[t].n_media; i++, n++) {
            const chat_media *im = &j->turns[t].media[i];
            FZ_ASSERT(im->path && im->path[0] != '/' && im->data && im->size,
                      "image %d: no bytes, or a file's path (not its name)", n);
            FZ_ASSERT(im->budget == 0 || im->budget == 70 || im->budget == 140 ||
                          im->budget == 280 || im->budget == 560 || im->budget == 1120,
                      "image %d: budget %d", n, im->budget);
            fz_touch(im->data, im->size);
        }
    }
    FZ_ASSERT(n == j->n_images, "%d images counted, %d in the turns", j->n_images, n);
    chat_job_unref(j);
    return 0;
}
