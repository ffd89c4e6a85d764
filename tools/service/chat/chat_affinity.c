/* chat_affinity.c - which language-model slot a chat request goes to (docs/CHAT.md "Prompt
 * reuse"). Every turn of a request gets a key that stands for the conversation up to and
 * including it (the system prompt, the budget, each turn's role, text and media, chained); a
 * slot remembers the keys of the conversation its context holds, its answer included. A request
 * goes to the free slot that shares the most keys with it from the start, else to the free slot
 * used longest ago. A user turn has two keys, one after its media (which the template puts
 * before its text) and one after its text: a new question about the same image, under the same
 * system prompt, goes to the slot that holds that image. The choice is only a guess that is cheap to make (no tokenizing, no image
 * decoding): the slot's session then compares the prompt token by token and decodes only what
 * differs. */
#include "chat/chat_wing.h"

#include <string.h>
#include <sys/stat.h>

static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull; /* FNV-1a */
    }
    return h;
}

static uint64_t mix_str(uint64_t h, const char *s) {
    size_t n = s ? strlen(s) + 1 : 0; /* the NUL keeps "ab"+"c" apart from "a"+"bc" */
    return mix(h, s ? s : "", n);
}

static int push_key(chat_job *j, uint64_t h) {
    if (j->n_keys == CHAT_MAX_KEYS) return -1;
    j->keys[j->n_keys++] = h;
    return 0;
}

void chat_job_keys(chat_job *j) {
    uint64_t h = 0xcbf29ce484222325ull;
    h = mix_str(h, j->system);
    h = mix(h, &j->params.budget, sizeof j->params.budget);
    j->n_keys = 0;
    j->keys_complete = 0;
    for (int t = 0; t < j->n_turns; t++) {
        const chat_turn_in *ti = &j->turns[t];
        h = mix(h, &ti->role, sizeof ti->role);
        for (int i = 0; i < ti->n_media; i++) {
            const chat_media *im = &ti->media[i];
            int medium = (int)im->medium; /* as an int, whatever the enum's size */
            h = mix(h, &medium, sizeof medium);
            if (im->url) { /* fetched later: its URL stands for it */
                h = mix_str(h, im->url);
            } else if (im->data) {
                h = mix(h, im->data, im->size);
            } else { /* a file: its name, size and time stand for it here */
                struct stat st;
                h = mix_str(h, im->path);
                if (im->path && !stat(im->path, &st)) {
                    h = mix(h, &st.st_size, sizeof st.st_size);
                    h = mix(h, &st.st_mtime, sizeof st.st_mtime);
                }
            }
        }
        if (ti->role == CHAT_ROLE_USER && push_key(j, h)) return;
        h = mix_str(h, ti->text);
        if (push_key(j, h)) return;
    }
    j->keys_complete = 1;
}

uint64_t chat_answer_key(uint64_t prev, const char *text, size_t n) {
    int role = CHAT_ROLE_ASSISTANT; /* as chat_job_keys hashes an assistant turn */
    uint64_t h = mix(prev, &role, sizeof role);
    h = mix(h, text, n);
    return mix(h, "", 1);
}

int chat_affinity_pick(const chat_slot *slots, int n, const chat_job *j) {
    int best = -1, best_common = 0;
    for (int i = 0; i < n; i++) {
        const chat_slot *sl = &slots[i];
        if (sl->busy || !sl->cs) continue;
        int c = 0;
        while (c < sl->n_keys && c < j->n_keys && sl->keys[c] == j->keys[c])
            c++;
        if (best < 0 || c > best_common ||
            (c == best_common && sl->last_used < slots[best].last_used)) {
            best = i;
            best_common = c;
        }
    }
    return best;
}
