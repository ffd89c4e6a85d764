/* fuzz_video.c - the input is a video file (any container FFmpeg's allowed demuxers take).
 *
 * Per input: g4v_video_decode from memory (our AVIOContext, the demuxer, the decoder, swscale to
 * RGB24) sampling 1..8 frames (from the input length), with low limits (262,144 pixels per frame,
 * 300 frames, 60 s) so each input stays fast. Every sampled frame is read to its last byte. The
 * invariants the video layer promises: a failure has a proper status and message; on success
 * the frame count is positive, the samples are min(wanted, frames) strictly increasing indices
 * below it, given in order, all of the reported size and within the limits.
 * FFmpeg's allocations are capped as the g4v tool caps them (g4v_video_cap_allocations).
 * FFmpeg itself is not instrumented for coverage here (Debian's build): the feedback comes from
 * our code around it, and ASan sees FFmpeg's memory through its interceptors only.
 */
#include "fuzz_common.h"

#include "video/video.h"

#include <string.h>

#define FZ_MAX_PIXELS (1u << 18)
#define FZ_MAX_DIM (1 << 14)

typedef struct seen {
    int count, width, height;
    int64_t last;
} seen;

static int on_frame(void *user, int k, int64_t index, const uint8_t *rgb, int width, int height,
                    size_t stride, g4v_err *err) {
    (void)err;
    seen *s = user;
    if (k < 0) { /* frames withdrawn: sampling restarts */
        FZ_ASSERT(rgb == NULL, "a withdrawal with pixels");
        *s = (seen){.last = -1};
        return G4V_OK;
    }
    FZ_ASSERT(k == s->count, "frame %d delivered as sample %d", s->count, k);
    FZ_ASSERT(index > s->last, "index %lld after %lld", (long long)index, (long long)s->last);
    FZ_ASSERT(width > 0 && height > 0 && (uint64_t)width * (uint64_t)height <= FZ_MAX_PIXELS &&
                  stride >= (size_t)width * 3,
              "frame %dx%d, stride %zu", width, height, stride);
    FZ_ASSERT(s->count == 0 || (width == s->width && height == s->height),
              "frame size changed to %dx%d", width, height);
    for (int y = 0; y < height; y++)
        fz_touch(rgb + (size_t)y * stride, (size_t)width * 3);
    s->width = width;
    s->height = height;
    s->last = index;
    s->count++;
    return G4V_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* as in g4v encode / serve: FFmpeg's demuxers may size a table from a header's claim
     * (an MP4 stss of 2^28 entries asked for 1 GB in one av_malloc) */
    static int capped;
    if (!capped) g4v_video_cap_allocations(G4V_VIDEO_ALLOC_CAP), capped = 1;
    g4v_video_limits lim = {.max_frames = 300,
                            .max_seconds = 60,
                            .max_pixels = FZ_MAX_PIXELS,
                            .max_dimension = FZ_MAX_DIM};
    int wanted = 1 + (int)(size % 8);
    seen s = {.last = -1};
    g4v_video_info info;
    int64_t idx[8];
    int n = -1;
    g4v_err err;
    int st = g4v_video_decode(data, size, &lim, wanted, on_frame, &s, &info, idx, &n, &err);
    if (st) {
        fz_check_failure(st, &err, "g4v_video_decode");
        FZ_ASSERT(n == 0, "failed decode reports %d samples", n);
        return 0;
    }
    FZ_ASSERT(info.total_frames > 0 && (uint64_t)info.total_frames <= lim.max_frames, "%lld frames",
              (long long)info.total_frames);
    int want_n = info.total_frames < wanted ? (int)info.total_frames : wanted;
    FZ_ASSERT(n == want_n && s.count == n, "sampled %d, delivered %d, expected %d", n, s.count,
              want_n);
    for (int i = 0; i < n; i++)
        FZ_ASSERT(idx[i] >= 0 && idx[i] < info.total_frames && (i == 0 || idx[i] > idx[i - 1]),
                  "index %d = %lld of %lld", i, (long long)idx[i], (long long)info.total_frames);
    FZ_ASSERT(info.width == s.width && info.height == s.height, "info %dx%d, frames %dx%d",
              info.width, info.height, s.width, s.height);
    FZ_ASSERT(info.fps > 0 && info.duration >= 0 && info.duration <= lim.max_seconds,
              "fps %g, duration %g", info.fps, info.duration);
    return 0;
}
