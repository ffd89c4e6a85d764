/* encoded.h - one medium's soft tokens copied out of libg4v's results (whose buffers live only
 * until the next encode on their context), in the form the chat session feeds them: the rows,
 * the rows per frame and, for a video, each frame's time. g4v chat's own encoder
 * (chat/chat_media.c) and g4v serve's encode wing (encode_vision.c) both fill it here. */
#ifndef G4V_FRONTEND_ENCODED_H
#define G4V_FRONTEND_ENCODED_H

#include "g4v.h"

typedef struct fe_encoded {
    float *rows;        /* malloc'ed n_rows x the model's dim */
    int n_rows;
    int n_frames;       /* 1 for an image */
    int *frame_rows;    /* malloc'ed [n_frames] rows per frame */
    char (*mmss)[16];   /* malloc'ed [n_frames] a video frame's time ("mm:ss"), NULL for an image */
    int width, height;  /* target size */
    int cache_hit;      /* served from the feature cache (a video: every frame) */
} fe_encoded;

/* e from an image's or a video's result: 0, or -1 out of memory (e then empty). */
int fe_encoded_image(fe_encoded *e, const g4v_result *r, int cache_hit);
int fe_encoded_video(fe_encoded *e, const g4v_video_result *r, int cache_hit);
/* Frees what e holds and empties it. */
void fe_encoded_free(fe_encoded *e);

#endif
