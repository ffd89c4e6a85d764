/* sample.c - which frames of a video are encoded, and the time label of each.
 *
 * The reference samples n frames of T with torch.arange(0, T, T / n).int(): frame k is
 * trunc(k * (T / n)). We compute floor(k * T / n) in integers, which is the same number whenever
 * n is a power of two (the default 32: T / n and k * (T / n) are then exact in binary floating
 * point); for other n the reference's float arithmetic may land one frame lower where k * T / n
 * is an integer. When n > T the reference refuses the video; we take every frame instead.
 * Timestamps are index / fps (the source's average fps, not the sampling rate), labelled with
 * Python's float floor division and modulo, as the reference's f"{int(t // 60):02d}:{int(t %
 * 60):02d}" does: minutes are not capped at 59 hours or anything else.
 */
#include "video.h"

#include <math.h>
#include <stdio.h>

int g4v_video_sample_indices(int64_t total, int wanted, int64_t *idx, int *n, g4v_err *err) {
    if (n) *n = 0;
    if (wanted < 1 || wanted > G4V_VIDEO_MAX_SAMPLED)
        return g4v_fail(err, G4V_ERR_ARG, "frames to sample must be 1..%d, found %d",
                        G4V_VIDEO_MAX_SAMPLED, wanted);
    if (total < 1) return g4v_fail(err, G4V_ERR_ARG, "a video needs at least one frame");
    /* total is bounded by max_video_frames (far below 2^53 / 1024), so k * total cannot overflow */
    if (total > ((int64_t)1 << 52))
        return g4v_fail(err, G4V_ERR_ARG, "frame count %lld is too large", (long long)total);
    int count = total < wanted ? (int)total : wanted;
    for (int k = 0; k < count && idx; k++)
        idx[k] = (int64_t)k * total / count;
    if (n) *n = count;
    return G4V_OK;
}

double g4v_video_timestamp(int64_t index, double fps) {
    return fps > 0 ? (double)index / fps : 0.0;
}

int g4v_video_mmss(double t, char *buf, size_t cap) {
    if (!(t >= 0) || t > 1e12) t = 0; /* NaN or absurd: a label must still be printable */
    /* Python: t % 60 = fmod(t, 60) for t >= 0; t // 60 = floor((t - t % 60) / 60). */
    double mod = fmod(t, 60.0);
    double div = floor((t - mod) / 60.0);
    return snprintf(buf, cap, "%02lld:%02d", (long long)div, (int)mod);
}
