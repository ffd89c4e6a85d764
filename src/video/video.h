/* video.h - from video bytes to sampled RGB24 frames, as Gemma 4's reference processor does.
 *
 *   g4v_video_sample_indices  which source frames: k * (T / n) truncated, k = 0..n-1 (sample.c)
 *   g4v_video_timestamp       a sampled frame's time, index / fps, and its "MM:SS" label
 *   g4v_video_decode          demux + decode (FFmpeg) from memory, count the frames exactly,
 *                             convert the sampled ones to RGB24 and hand each to a callback
 * docs/VIDEO.md explains the choices. Limits are checked before work where the container
 * declares sizes, and again while decoding (a container may lie). Reentrant: no global state
 * (FFmpeg's own logging is the library's process-wide level; we never change it).
 */
#ifndef G4V_VIDEO_VIDEO_H
#define G4V_VIDEO_VIDEO_H

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

#define G4V_VIDEO_DEFAULT_FRAMES 32 /* num_frames of Gemma 4's video processor */
#define G4V_VIDEO_MAX_SAMPLED 1024  /* a fixed cap on frames sampled from one video */

/* Sampled frame indices into a video of total frames: n = min(wanted, total) indices, written
 * to idx (capacity wanted). wanted in 1..G4V_VIDEO_MAX_SAMPLED, total >= 1; else G4V_ERR_ARG. */
int g4v_video_sample_indices(int64_t total, int wanted, int64_t *idx, int *n, g4v_err *err);

/* index / fps in seconds (fps > 0), and the label "MM:SS" of such a time: minutes = floor(t/60)
 * (at least two digits, not capped), seconds = the remainder truncated (two digits). buf gets at
 * most cap bytes, NUL included; returns the label's length. */
double g4v_video_timestamp(int64_t index, double fps);
int g4v_video_mmss(double seconds, char *buf, size_t cap);

typedef struct g4v_video_limits {
    uint64_t max_frames; /* decoded frames in the stream */
    double max_seconds;  /* the stream's duration */
    uint64_t max_pixels; /* per frame */
    int max_dimension;   /* per frame, the longer side */
} g4v_video_limits;

/* What the decode found. */
typedef struct g4v_video_info {
    int64_t total_frames; /* frames the decoder produced (every frame decoded once) */
    double fps;           /* total_frames / (end - begin) of the packets' presentation times */
    double duration;      /* end - begin, seconds */
    int width, height;    /* every frame's size */
    char codec[32];       /* the decoder's short name ("h264", "vp9", "mjpeg", ...) */
    char container[32];   /* the demuxer's short name */
} g4v_video_info;

/* Called once per sampled frame, in order: k-th sample, its source index, RGB24 rows stride bytes
 * apart. A non-zero return stops the decode and is returned (the callback fills err). A call
 * with k = -1 (rgb NULL) withdraws every frame given so far: the sampling restarts at k = 0
 * (the stream decoded to fewer or more frames than it has packets). */
typedef int (*g4v_video_frame_fn)(void *user, int k, int64_t index, const uint8_t *rgb, int width,
                                  int height, size_t stride, g4v_err *err);

/* Decodes the video in bytes (any container and codec FFmpeg reads), samples `wanted` frames
 * and calls on_frame for each (on_frame may be NULL: probe only). *n_sampled (may be NULL)
 * receives the frames sampled, idx (capacity wanted, may be NULL) their indices. Errors:
 * G4V_ERR_IMAGE (not a video, corrupt, no video stream, no frame, decoder error mid-stream),
 * G4V_ERR_LIMIT (over a limit, naming the max_video_* / max_* option), G4V_ERR_UNSUPPORTED
 * (a frame size that changes mid-stream, or FFmpeg's libraries cannot be loaded), G4V_ERR_NOMEM,
 * G4V_ERR_ARG. */
int g4v_video_decode(const void *bytes, size_t n, const g4v_video_limits *lim, int wanted,
                     g4v_video_frame_fn on_frame, void *user, g4v_video_info *info, int64_t *idx,
                     int *n_sampled, g4v_err *err);

/* g4v_video_sniff (g4v.h) is defined in decode.c, g4v_video_cap_allocations and
 * g4v_video_quiet_ffmpeg in ffmpeg_dl.c (FFmpeg is loaded at the first g4v_video_decode:
 * ffmpeg_dl.h); decoding does not rely on them. */

#endif
