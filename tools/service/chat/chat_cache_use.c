/* chat_cache_use.c - the chat slots' use of the prompt cache (docs/PROMPT_CACHE.md; the cache
 * itself is chat/chat_prompt_cache.c): opened with a key of what the slots' states depend
 * on, consulted before a slot feeds its plan (what the slot holds saved when another
 * conversation takes it, a cached state loaded when it shares more with the plan), and a slot's
 * state saved when it closes, so that a conversation's prompt outlives its slot. */
#ifdef G4V_HAVE_LLAMA

#include "chat_slots_impl.h"
#include "chat_items.h"
#include "chat_prompt_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A cached state replaces what a slot holds only when it saves this many more positions: loading
 * a state costs about as much as decoding a few dozen tokens. */
enum { PCACHE_MIN_GAIN = 32 };

/* The slot's sequence into the prompt cache (docs/PROMPT_CACHE.md). */
void chat_cache_use_save(chat_wing *cw, chat_session *cs) {
    int n;
    const uint64_t *items = chat_session_items(cs, &n);
    if (!n) return;
    void *state;
    size_t size;
    char err[512];
    if (chat_session_state_save(cs, &state, &size, err, sizeof err)) {
        fprintf(stderr, "g4v serve: prompt cache: %s\n", err);
        return;
    }
    chat_pcache_put(cw->pc, items, n, state, size);
    free(state);
}

/* Before a slot feeds its plan: when the plan would drop most of what the slot holds (another
 * conversation takes it), that goes to the prompt cache first; when the cache holds a state that
 * shares more with the plan (by PCACHE_MIN_GAIN positions), it takes the slot's place. */
void chat_cache_use_consult(chat_wing *cw, chat_session *cs) {
    if (!cw->pc) return;
    uint64_t *plan;
    int np, nh;
    if (chat_session_plan_items(cs, &plan, &np)) return;
    const uint64_t *held = chat_session_items(cs, &nh);
    int common = chat_items_common(plan, np, held, nh), common_pos = 0;
    for (int i = 0; i < common; i++)
        common_pos += chat_item_n_pos(held[i]);
    chat_pcache_hit hit;
    int found = chat_pcache_find(cw->pc, plan, np, common + 1, &hit) == 1;
    if (found && hit.n_common_pos < common_pos + PCACHE_MIN_GAIN) {
        chat_pcache_hit_free(&hit);
        found = 0;
    }
    int covered = found && chat_items_common(held, nh, hit.items, hit.n_items) == nh;
    if (nh && !covered && (found || 2 * common < nh)) chat_cache_use_save(cw, cs);
    if (found) {
        char err[512];
        if (chat_session_state_load(cs, hit.items, hit.n_items, hit.state, hit.size, err,
                                    sizeof err))
            fprintf(stderr, "g4v serve: prompt cache: %s; the prompt is decoded instead\n", err);
        chat_pcache_hit_free(&hit);
    }
    free(plan);
}

/* The prompt cache, keyed by what the slots' states depend on; NULL (no cache) when both tiers
 * are off or reuse is. 0, or a G4V_SERVICE_ERR_* printed. */
int chat_cache_use_open(chat_wing *cw) {
    const g4v_service_options *a = &cw->s->a;
    uint64_t disk = a->cache ? a->prompt_cache_disk : 0;
    if (a->no_prompt_reuse || (!a->prompt_cache_ram && !disk)) return G4V_SERVICE_OK;
    char id[2048], err[512];
    if (chat_session_identity(cw->slots[0].cs, id, sizeof id, err, sizeof err)) {
        fprintf(stderr, "g4v serve: prompt cache: %s\n", err);
        return G4V_SERVICE_ERR_MODEL;
    }
    chat_pcache_options po;
    memset(&po, 0, sizeof po);
    po.ram_bytes = (size_t)a->prompt_cache_ram;
    po.dir = disk ? a->cache : NULL;
    po.disk_bytes = disk;
    const char *parts[] = {"g4v serve prompt states", id};
    chat_pcache_key(po.key, parts, 2);
    if (chat_pcache_open(&po, &cw->pc, err, sizeof err)) {
        fprintf(stderr, "g4v serve: prompt cache: %s\n", err);
        return G4V_SERVICE_ERR_LISTEN;
    }
    return G4V_SERVICE_OK;
}

#endif
