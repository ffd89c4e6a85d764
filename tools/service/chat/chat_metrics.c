/* chat_metrics.c - the chat wing's lines of GET /metrics (after the encode wing's):
 * answers, refusals and hang-ups, prefill and generation tokens and seconds (their ratio is the
 * tokens per second), time to first token, the queue, slot use, and images encoded vs read from
 * the feature cache. Names are an interface: add, never rename. Nothing without --lm. */
#include "chat/chat_wing.h"
#ifdef G4V_HAVE_LLAMA
#include "chat_engine.h"       /* chat/: only with libllama */
#include "chat_prompt_cache.h"
#endif

#include <stdio.h>

size_t chat_metrics_text(server *s, chat_wing *cw, char *b, size_t cap) {
    const svc_pool *p = cw->pool;
    size_t n = 0;
    /* the core's one writer of metrics lines (core.h), under a short local name */
#define METRIC(name, type, help, value) n = svc_metric(b, cap, n, name, type, help, (double)(value))
    pthread_mutex_lock(&s->mu);
    METRIC("g4v_chat_requests_total", "counter", "Chat requests answered in full.", cw->requests);
    METRIC("g4v_chat_failed_total", "counter",
           "Chat requests admitted and then refused (bad image, context, timeout in queue).",
           cw->failed);
    METRIC("g4v_chat_rejected_total", "counter", "Chat requests answered 429 (queue full).",
           p->rejected);
    METRIC("g4v_chat_cancelled_total", "counter", "Chats whose client hung up before the end.",
           cw->cancelled);
    METRIC("g4v_chat_timeouts_total", "counter", "Chats stopped by --request-timeout.",
           cw->timeouts);
    METRIC("g4v_chat_queue_depth", "gauge", "Chat requests waiting for a slot.", p->queued);
    METRIC("g4v_chat_queue_capacity", "gauge", "Waiting chat requests allowed before 429.",
           s->a.max_queue);
    METRIC("g4v_chat_slots", "gauge", "Language-model slots.", p->n);
    METRIC("g4v_chat_slots_busy", "gauge", "Slots answering now.", p->busy);
    METRIC("g4v_chat_prompt_tokens_total", "counter",
           "Prompt positions fed (text tokens and image rows).", cw->prompt_tokens);
    METRIC("g4v_chat_prefill_seconds_total", "counter", "Seconds spent encoding and prefilling.",
           cw->prefill_s);
    METRIC("g4v_chat_prefill_tokens_per_second", "gauge",
           "Prompt positions per second of prefill, over all answers.",
           cw->prefill_s > 0 ? (double)cw->prompt_tokens / cw->prefill_s : 0);
    METRIC("g4v_chat_generated_tokens_total", "counter", "Tokens sampled.", cw->gen_tokens);
    METRIC("g4v_chat_generate_seconds_total", "counter", "Seconds spent sampling.", cw->gen_s);
    METRIC("g4v_chat_generate_tokens_per_second", "gauge",
           "Tokens sampled per second, over all answers.",
           cw->gen_s > 0 ? (double)cw->gen_tokens / cw->gen_s : 0);
    METRIC("g4v_chat_images_encoded_total", "counter", "Chat images encoded.", cw->images_encoded);
    METRIC("g4v_chat_images_cached_total", "counter",
           "Chat images read from the feature cache instead.", cw->images_cached);
    METRIC("g4v_chat_cached_tokens_total", "counter",
           "Prompt positions a slot held already and did not decode again (prompt reuse).",
           cw->cached_tokens);
    METRIC("g4v_chat_images_reused_total", "counter",
           "Chat images a slot held already: neither encoded nor decoded again.",
           cw->images_reused);
#ifdef G4V_HAVE_LLAMA
    if (cw->engine) { /* the shared decode calls (docs/CHAT_API.md §3) */
        chat_engine_stats es;
        chat_engine_get_stats(cw->engine, &es);
        METRIC("g4v_chat_decode_calls_total", "counter",
               "Decode calls of prompt text and answer tokens, all slots together.", es.steps);
        METRIC("g4v_chat_decode_tokens_total", "counter", "Tokens in them.", es.step_tokens);
        METRIC("g4v_chat_decode_sequences_total", "counter",
               "Conversations in them, summed over the calls (over calls: conversations per "
               "call).", es.step_seqs);
        METRIC("g4v_chat_decode_shared_calls_total", "counter",
               "Decode calls that carried two or more conversations.", es.shared_steps);
    }
    if (cw->pc) { /* docs/PROMPT_CACHE.md */
        chat_pcache_stats ps;
        chat_pcache_get_stats(cw->pc, &ps);
        METRIC("g4v_chat_prompt_cache_hits_total", "counter",
               "Prompts resumed from a saved state of the prompt cache.", ps.hits);
        METRIC("g4v_chat_prompt_cache_disk_hits_total", "counter",
               "Of those, states read from the disk tier.", ps.hits_disk);
        METRIC("g4v_chat_prompt_cache_misses_total", "counter",
               "Prompt cache lookups that found no better state.", ps.misses);
        METRIC("g4v_chat_prompt_cache_reused_tokens_total", "counter",
               "Prompt positions the prompt cache's states held.", ps.positions_reused);
        METRIC("g4v_chat_prompt_cache_stores_total", "counter", "States saved.", ps.stores);
        METRIC("g4v_chat_prompt_cache_too_large_total", "counter",
               "States larger than every tier's bound, not kept.", ps.too_large);
        METRIC("g4v_chat_prompt_cache_ram_evictions_total", "counter",
               "States evicted from RAM by its bound.", ps.evictions_ram);
        METRIC("g4v_chat_prompt_cache_disk_evictions_total", "counter",
               "State files evicted from disk by its bound.", ps.evictions_disk);
        METRIC("g4v_chat_prompt_cache_refused_total", "counter",
               "State files found bad (truncated, corrupted) and deleted.", ps.refused);
        METRIC("g4v_chat_prompt_cache_write_errors_total", "counter",
               "State files that could not be written.", ps.write_errors);
        METRIC("g4v_chat_prompt_cache_ram_bytes", "gauge", "Bytes of states in RAM.",
               ps.ram_bytes);
        METRIC("g4v_chat_prompt_cache_ram_bytes_limit", "gauge", "--prompt-cache-ram.",
               ps.ram_bound);
        METRIC("g4v_chat_prompt_cache_ram_entries", "gauge", "States in RAM.", ps.ram_entries);
        METRIC("g4v_chat_prompt_cache_disk_bytes", "gauge", "Bytes of state files on disk.",
               ps.disk_bytes);
        METRIC("g4v_chat_prompt_cache_disk_bytes_limit", "gauge", "--prompt-cache-disk.",
               ps.disk_bound);
        METRIC("g4v_chat_prompt_cache_disk_entries", "gauge", "State files on disk.",
               ps.disk_entries);
    }
#endif
    n += svc_hist_text(&cw->ttft, "g4v_chat_time_to_first_token_seconds",
                       "From a chat request's arrival to its first token.", b + n,
                       n < cap ? cap - n : 0);
    pthread_mutex_unlock(&s->mu);
#undef METRIC
    return n;
}
