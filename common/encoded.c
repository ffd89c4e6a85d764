/* encoded.c - libg4v's results copied into an fe_encoded (encoded.h). */
#include "encoded.h"

#include <stdlib.h>
#include <string.h>

void fe_encoded_free(fe_encoded *e) {
    if (!e) return;
    free(e->rows);
    free(e->frame_rows);
    free(e->mmss);
    memset(e, 0, sizeof *e);
}

/* The rows and the per-frame array, sized; -1 out of memory (e emptied). */
static int take(fe_encoded *e, const float *features, int n_tokens, int dim, int n_frames,
                int width, int height, int cache_hit) {
    size_t n = (size_t)n_tokens * (size_t)dim;
    *e = (fe_encoded){.n_rows = n_tokens, .n_frames = n_frames, .width = width,
                      .height = height, .cache_hit = cache_hit};
    e->rows = malloc(n ? n * sizeof(float) : 1);
    e->frame_rows = malloc((size_t)n_frames * sizeof(int));
    if (!e->rows || !e->frame_rows) {
        fe_encoded_free(e);
        return -1;
    }
    memcpy(e->rows, features, n * sizeof(float));
    return 0;
}

int fe_encoded_image(fe_encoded *e, const g4v_result *r, int cache_hit) {
    if (take(e, r->features, r->n_tokens, r->dim, 1, r->width, r->height, cache_hit)) return -1;
    e->frame_rows[0] = r->n_tokens;
    return 0;
}

int fe_encoded_video(fe_encoded *e, const g4v_video_result *r, int cache_hit) {
    if (take(e, r->features, r->n_tokens, r->dim, r->n_frames, r->width, r->height, cache_hit))
        return -1;
    e->mmss = malloc((size_t)r->n_frames * sizeof *e->mmss);
    if (!e->mmss) {
        fe_encoded_free(e);
        return -1;
    }
    for (int k = 0; k < r->n_frames; k++) {
        e->frame_rows[k] = r->frames[k].n_tokens;
        memcpy(e->mmss[k], r->frames[k].mmss, sizeof e->mmss[k]);
    }
    return 0;
}
