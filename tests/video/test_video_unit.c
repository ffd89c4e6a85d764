/* test_video_unit.c - the sampling formula and the MM:SS labels (src/video/sample.c) against
 * values worked out by hand from the reference's definitions, and argument checks; FFmpeg loaded
 * only by the first decode, and the allocation cap set before that applied then, on a hostile
 * MP4 (argv[1]: fuzz/regressions/video/mov-stss-count-oom.mov). With --no-ffmpeg (run with
 * G4V_FFMPEG_DIR naming an empty directory): the error a machine without FFmpeg gets. */
#include "test_util.h"
#include "video/video.h"

#include <libavformat/version.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_indices(void) {
    int64_t idx[G4V_VIDEO_MAX_SAMPLED];
    int n = -1;
    /* 150 frames, 32 samples: trunc(k * 4.6875) (worked out by hand for a few k) */
    CHECK(g4v_video_sample_indices(150, 32, idx, &n, NULL) == G4V_OK && n == 32);
    CHECK(idx[0] == 0 && idx[1] == 4 && idx[2] == 9 && idx[3] == 14 && idx[4] == 18);
    CHECK(idx[31] == 145); /* 31 * 4.6875 = 145.3125 */
    /* exactly 32 frames: every frame */
    CHECK(g4v_video_sample_indices(32, 32, idx, &n, NULL) == G4V_OK && n == 32);
    for (int k = 0; k < 32; k++)
        CHECK(idx[k] == k);
    /* fewer frames than asked: every frame, once */
    CHECK(g4v_video_sample_indices(5, 32, idx, &n, NULL) == G4V_OK && n == 5);
    for (int k = 0; k < 5; k++)
        CHECK(idx[k] == k);
    CHECK(g4v_video_sample_indices(1, 32, idx, &n, NULL) == G4V_OK && n == 1 && idx[0] == 0);
    /* one sample: the first frame */
    CHECK(g4v_video_sample_indices(1000, 1, idx, &n, NULL) == G4V_OK && n == 1 && idx[0] == 0);
    /* 33 frames, 32 samples: 33/32 = 1.03125, k*1.03125 truncated: 0,1,...,30, and 31.96875 -> 31
     */
    CHECK(g4v_video_sample_indices(33, 32, idx, &n, NULL) == G4V_OK && n == 32);
    CHECK(idx[30] == 30 && idx[31] == 31);
    /* 64 frames, 32 samples: every second frame */
    CHECK(g4v_video_sample_indices(64, 32, idx, &n, NULL) == G4V_OK && idx[31] == 62);
    /* large T: no overflow, strictly increasing, last < T */
    CHECK(g4v_video_sample_indices(216000, 1024, idx, &n, NULL) == G4V_OK && n == 1024);
    int inc = 1;
    for (int k = 1; k < n; k++)
        inc &= idx[k] > idx[k - 1];
    CHECK(inc && idx[n - 1] < 216000 && idx[1] == 210); /* 216000/1024 = 210.9375 */
    /* bad arguments */
    g4v_err err;
    CHECK(g4v_video_sample_indices(10, 0, idx, &n, &err) == G4V_ERR_ARG && n == 0);
    CHECK(g4v_video_sample_indices(10, G4V_VIDEO_MAX_SAMPLED + 1, idx, &n, &err) == G4V_ERR_ARG);
    CHECK(g4v_video_sample_indices(0, 32, idx, &n, &err) == G4V_ERR_ARG);
    CHECK(g4v_video_sample_indices(-5, 32, idx, &n, &err) == G4V_ERR_ARG);
}

static void test_labels(void) {
    char b[16];
    CHECK(g4v_video_mmss(0.0, b, sizeof b) == 5 && !strcmp(b, "00:00"));
    CHECK(g4v_video_mmss(4.83, b, sizeof b) == 5 && !strcmp(b, "00:04")); /* truncated */
    CHECK(g4v_video_mmss(59.999, b, sizeof b) == 5 && !strcmp(b, "00:59"));
    CHECK(g4v_video_mmss(60.0, b, sizeof b) == 5 && !strcmp(b, "01:00"));
    CHECK(g4v_video_mmss(125.5, b, sizeof b) == 5 && !strcmp(b, "02:05"));
    CHECK(g4v_video_mmss(4500.0, b, sizeof b) == 5 && !strcmp(b, "75:00")); /* minutes not capped */
    CHECK(g4v_video_mmss(6001.0, b, sizeof b) == 6 && !strcmp(b, "100:01"));
    CHECK(g4v_video_mmss(-1.0, b, sizeof b) == 5 && !strcmp(b, "00:00")); /* nonsense: printable */
    /* timestamps: index / fps */
    CHECK(g4v_video_timestamp(145, 30.0) == 145.0 / 30.0);
    CHECK(g4v_video_timestamp(3, 0.0) == 0.0);
}

/* An MP4 of 960 bytes whose stss atom claims 201,326,592 key frames: FFmpeg 5.1 asks for
 * 805 MB in one av_malloc before it reads them (found by fuzz_video). Under the cap it fails
 * cleanly, saying why; without the cap FFmpeg reserves the memory and then reports bad data. */
static void test_allocation_cap(const char *path) {
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f, "cannot open %s", path);
    if (!f) return;
    unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    g4v_video_limits lim = {
        .max_frames = 1000, .max_seconds = 60, .max_pixels = 1u << 20, .max_dimension = 4096};
    g4v_video_info info;
    int64_t idx[4];
    int count = -1;
    g4v_err err;
    g4v_video_cap_allocations(G4V_VIDEO_ALLOC_CAP);
    int st = g4v_video_decode(buf, n, &lim, 4, NULL, NULL, &info, idx, &count, &err);
    CHECK_MSG(st == G4V_ERR_IMAGE && count == 0 && strstr(err.msg, "g4v_video_cap_allocations"),
              "capped: status %d, %s", st, err.msg);
    g4v_video_cap_allocations(0); /* FFmpeg's default again: the file is still refused */
    st = g4v_video_decode(buf, n, &lim, 4, NULL, NULL, &info, idx, &count, &err);
    CHECK_MSG(st == G4V_ERR_IMAGE && count == 0, "uncapped: status %d, %s", st, err.msg);
}

#define STR2(x) #x
#define STR(x) STR2(x)
static const char AVFORMAT_SONAME[] = "libavformat.so." STR(LIBAVFORMAT_VERSION_MAJOR);

/* Whether FFmpeg's libavformat is in this process. */
static int avformat_loaded(void) {
    void *h = dlopen(AVFORMAT_SONAME, RTLD_LAZY | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != NULL;
}

/* With the libraries out of reach, a decode fails with G4V_ERR_UNSUPPORTED naming the library
 * and what to install; the cap and quiet settings are harmless no-ops. */
static void test_no_ffmpeg(const char *path) {
    g4v_video_cap_allocations(G4V_VIDEO_ALLOC_CAP);
    g4v_video_quiet_ffmpeg();
    unsigned char buf[64] = {0};
    g4v_video_limits lim = {
        .max_frames = 1000, .max_seconds = 60, .max_pixels = 1u << 20, .max_dimension = 4096};
    g4v_err err;
    for (int i = 0; i < 2; i++) { /* the second call gives the same answer */
        int st = g4v_video_decode(buf, sizeof buf, &lim, 4, NULL, NULL, NULL, NULL, NULL, &err);
        CHECK_MSG(st == G4V_ERR_UNSUPPORTED && strstr(err.msg, "libavutil.so.") &&
                      strstr(err.msg, "install") && strstr(err.msg, "G4V_FFMPEG_DIR"),
                  "without FFmpeg (%s): status %d, %s", path, st, err.msg);
    }
    CHECK(!avformat_loaded());
}

int main(int argc, char **argv) {
    test_indices();
    test_labels();
    if (argc > 1 && !strcmp(argv[1], "--no-ffmpeg")) {
        test_no_ffmpeg(getenv("G4V_FFMPEG_DIR") ? getenv("G4V_FFMPEG_DIR") : "(unset)");
        return test_summary("test_video_unit --no-ffmpeg");
    }
    /* nothing so far needed FFmpeg, and setting the cap does not load it either */
    CHECK_MSG(!avformat_loaded(), "%s is loaded before any video", AVFORMAT_SONAME);
    g4v_video_cap_allocations(G4V_VIDEO_ALLOC_CAP);
    CHECK_MSG(!avformat_loaded(), "g4v_video_cap_allocations loaded %s", AVFORMAT_SONAME);
    if (argc > 1) {
        test_allocation_cap(argv[1]);
        CHECK_MSG(avformat_loaded(), "%s is not loaded after a decode", AVFORMAT_SONAME);
    }
    else
        CHECK_MSG(0, "usage: test_video_unit HOSTILE_MP4");
    return test_summary("test_video_unit");
}
