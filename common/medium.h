/* medium.h - the kind of one input medium the front ends hand a model (docs/ARCHITECTURE.md §8):
 * an image or a video, one enum where the chat items, the prompt spans, the per-medium results
 * of a turn and the service's request parts say which. Each kind has a name ("image", "video"),
 * the word of the chat API's "<name>_url" parts, of g4v chat's --<name> and /<name> and of the
 * "type" of its results. A third medium (audio) is a value here, a name in fe_medium_name, its
 * placeholder in chat/chat_template.c's table, and its decoder in chat_media.c; the code
 * that carries an fe_medium does not change.
 *
 * The values are fixed: they are hashed into the chat wing's affinity keys and the content hashes
 * of chat_items.h (chat_media_hash), so a new kind takes the next value and no value moves. */
#ifndef G4V_FRONTEND_MEDIUM_H
#define G4V_FRONTEND_MEDIUM_H

#include <string.h>

typedef enum fe_medium {
    FE_MEDIUM_IMAGE = 0, /* one still image: g4v_encode_file / _memory */
    FE_MEDIUM_VIDEO = 1, /* frames sampled from a video: g4v_encode_video_file / _memory */
    FE_MEDIUM_COUNT     /* kinds above; a new one goes before this */
} fe_medium;

/* "image", "video"; NULL for a value that is not a kind. */
static inline const char *fe_medium_name(fe_medium m) {
    switch (m) {
    case FE_MEDIUM_IMAGE: return "image";
    case FE_MEDIUM_VIDEO: return "video";
    default: return NULL;
    }
}

/* The kind whose name is the len bytes at s, or -1. */
static inline int fe_medium_from_name(const char *s, size_t len) {
    for (int m = 0; m < FE_MEDIUM_COUNT; m++) {
        const char *n = fe_medium_name((fe_medium)m);
        if (strlen(n) == len && !memcmp(s, n, len)) return m;
    }
    return -1;
}

#endif
