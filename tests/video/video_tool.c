/* video_tool.c - test helper: decodes a video with src/video and writes what the tests compare
 * with PyAV. Usage: video_tool VIDEO NUM_FRAMES OUT.rgb
 * stdout: one JSON line {"total":T,"fps":F,"duration":D,"width":W,"height":H,"codec":"..",
 * "indices":[...]} (fps and duration with 17 significant digits); OUT.rgb: the sampled frames'
 * RGB24 bytes at the decoded size, one after another. On failure: "error <status> <message>" on
 * stdout and exit code 2.
 */
#include "base/alloc.h"
#include "io/fsutil.h"
#include "video/video.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int write_frame(void *user, int k, int64_t index, const uint8_t *rgb, int width, int height,
                       size_t stride, g4v_err *err) {
    (void)index;
    FILE *f = user;
    if (k < 0) { /* frames withdrawn: start the output again */
        rewind(f);
        return ftruncate(fileno(f), 0) ? g4v_fail(err, G4V_ERR_IO, "cannot truncate") : G4V_OK;
    }
    for (int y = 0; y < height; y++)
        if (fwrite(rgb + (size_t)y * stride, 3, (size_t)width, f) != (size_t)width)
            return g4v_fail(err, G4V_ERR_IO, "cannot write the frames");
    return G4V_OK;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: video_tool VIDEO NUM_FRAMES OUT.rgb\n");
        return 1;
    }
    g4v_err err;
    g4v_err_clear(&err);
    unsigned char *buf;
    size_t n;
    int st = g4v_read_file(argv[1], (uint64_t)1 << 30, "max_file_bytes", &buf, &n, &err);
    FILE *out = fopen(argv[3], "wb");
    if (!out) return 1;
    g4v_video_limits lim = {
        .max_frames = 216000, .max_seconds = 3600, .max_pixels = 178956970, .max_dimension = 65500};
    const char *e;
    if ((e = getenv("VIDEO_TOOL_MAX_FRAMES"))) lim.max_frames = strtoull(e, NULL, 10);
    if ((e = getenv("VIDEO_TOOL_MAX_SECONDS"))) lim.max_seconds = atof(e);
    if ((e = getenv("VIDEO_TOOL_MAX_DIMENSION"))) lim.max_dimension = atoi(e);
    g4v_video_info info;
    int64_t idx[G4V_VIDEO_MAX_SAMPLED];
    int count = 0;
    if (!st)
        st = g4v_video_decode(buf, n, &lim, atoi(argv[2]), write_frame, out, &info, idx, &count,
                              &err);
    if (!st) g4v_free(buf);
    fclose(out);
    if (st) {
        printf("error %s %s\n", g4v_status_name(st), err.msg);
        return 2;
    }
    printf("{\"total\":%lld,\"fps\":%.17g,\"duration\":%.17g,\"width\":%d,\"height\":%d,"
           "\"codec\":\"%s\",\"container\":\"%s\",\"indices\":[",
           (long long)info.total_frames, info.fps, info.duration, info.width, info.height,
           info.codec, info.container);
    for (int i = 0; i < count; i++)
        printf("%s%lld", i ? "," : "", (long long)idx[i]);
    printf("]}\n");
    return 0;
}
