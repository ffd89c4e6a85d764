/* chat_metrics.c - the chat endpoint's lines of GET /metrics (appended to service_metrics.c's):
 * answers, refusals and hang-ups, prefill and generation tokens and seconds (their ratio is the
 * tokens per second), time to first token, the queue, slot use, and images encoded vs read from
 * the feature cache. Names are an interface: add, never rename. Nothing without --lm. */
#include "chat_service.h"

#include <stdio.h>

size_t svc_chat_metrics_text(server *s, char *b, size_t cap) {
    lm_pool *p = s->lm;
    if (!p) return 0;
    size_t n = 0;
#define OUT(...) n += (size_t)snprintf(b + n, n < cap ? cap - n : 0, __VA_ARGS__)
#define METRIC(name, type, help, value)                                                            \
    OUT("# HELP " name " " help "\n# TYPE " name " " type "\n" name " %.17g\n", (double)(value))
    static const double le[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                0.5,   1,      2.5,   5,    10,    30,   60};
    pthread_mutex_lock(&s->mu);
    METRIC("g4v_chat_requests_total", "counter", "Chat requests answered in full.", p->requests);
    METRIC("g4v_chat_failed_total", "counter",
           "Chat requests admitted and then refused (bad image, context, timeout in queue).",
           p->failed);
    METRIC("g4v_chat_rejected_total", "counter", "Chat requests answered 429 (queue full).",
           p->rejected);
    METRIC("g4v_chat_cancelled_total", "counter", "Chats whose client hung up before the end.",
           p->cancelled);
    METRIC("g4v_chat_timeouts_total", "counter", "Chats stopped by --request-timeout.",
           p->timeouts);
    METRIC("g4v_chat_queue_depth", "gauge", "Chat requests waiting for a slot.", p->queued);
    METRIC("g4v_chat_queue_capacity", "gauge", "Waiting chat requests allowed before 429.",
           s->a.max_queue);
    METRIC("g4v_chat_slots", "gauge", "Language-model slots.", p->n);
    METRIC("g4v_chat_slots_busy", "gauge", "Slots answering now.", p->busy);
    METRIC("g4v_chat_prompt_tokens_total", "counter",
           "Prompt positions fed (text tokens and image rows).", p->prompt_tokens);
    METRIC("g4v_chat_prefill_seconds_total", "counter", "Seconds spent encoding and prefilling.",
           p->prefill_s);
    METRIC("g4v_chat_prefill_tokens_per_second", "gauge",
           "Prompt positions per second of prefill, over all answers.",
           p->prefill_s > 0 ? (double)p->prompt_tokens / p->prefill_s : 0);
    METRIC("g4v_chat_generated_tokens_total", "counter", "Tokens sampled.", p->gen_tokens);
    METRIC("g4v_chat_generate_seconds_total", "counter", "Seconds spent sampling.", p->gen_s);
    METRIC("g4v_chat_generate_tokens_per_second", "gauge",
           "Tokens sampled per second, over all answers.",
           p->gen_s > 0 ? (double)p->gen_tokens / p->gen_s : 0);
    METRIC("g4v_chat_images_encoded_total", "counter", "Chat images encoded.", p->images_encoded);
    METRIC("g4v_chat_images_cached_total", "counter",
           "Chat images read from the feature cache instead.", p->images_cached);
    OUT("# HELP g4v_chat_time_to_first_token_seconds From a chat request's arrival to its first "
        "token.\n# TYPE g4v_chat_time_to_first_token_seconds histogram\n");
    uint64_t cum = 0;
    for (int i = 0; i < SVC_NBUCKETS; i++) {
        cum += p->ttft_hist[i];
        OUT("g4v_chat_time_to_first_token_seconds_bucket{le=\"%g\"} %llu\n", le[i],
            (unsigned long long)cum);
    }
    cum += p->ttft_hist[SVC_NBUCKETS];
    OUT("g4v_chat_time_to_first_token_seconds_bucket{le=\"+Inf\"} %llu\n",
        (unsigned long long)cum);
    OUT("g4v_chat_time_to_first_token_seconds_sum %.6f\n", p->ttft_sum);
    OUT("g4v_chat_time_to_first_token_seconds_count %llu\n", (unsigned long long)p->ttft_count);
    pthread_mutex_unlock(&s->mu);
#undef METRIC
#undef OUT
    return n;
}
