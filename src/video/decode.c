/* decode.c - video bytes to sampled RGB24 frames with FFmpeg (libavformat, libavcodec, libswscale).
 *
 * Two passes over the bytes, both from memory through our own AVIOContext (no FFmpeg protocol is
 * ever opened, so a file cannot make FFmpeg read another file or a URL):
 *   1. demux only: count the best video stream's packets (what the reference's exact-mode scan
 *      counts) and take the stream's time span from their presentation times, begin = min(pts),
 *      end = max(pts + duration); fps = frames / (end - begin), the reference's average fps.
 *   2. decode every frame, converting the frames at the indices sampled from that count to
 *      RGB24 with swscale as PyAV's to_ndarray(format="rgb24") does (SWS_BILINEAR, swscale's
 *      default colorspace and the range implied by the pixel format), handing each on. The
 *      frame count is the number of frames decoded, never the container's claim: when it is not
 *      the packet count (empty or undecodable packets) the sampling is redone for it, a third
 *      pass that ordinary files never need.
 * Memory stays at one decoded frame; frame count and duration limits are enforced by the cheap
 * first pass, before anything is decoded.
 * Limits: the container's declared size, duration and frame count are checked before decoding;
 * the decoded count, time span and frame size are checked again while decoding, and FFmpeg's
 * decoders are told max_pixels so they refuse a huge frame before allocating it. Any error the
 * demuxer or decoder reports other than the end of the stream fails the call. A file cut short
 * where its demuxer sees a clean end (Matroska, for one) gives the frames before the cut, as it
 * does in PyAV and the reference. Only demuxers of the common containers are allowed
 * (format_whitelist below).
 */
#include "video.h"

#include "base/alloc.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>

#include "ffmpeg_dl.h" /* FFmpeg's functions through the table loaded at the first video */

#include <limits.h>
#include <math.h>
#include <string.h>

/* The demuxers we let FFmpeg pick from (probing by content, among these only). */
#define ALLOWED_DEMUXERS "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,mpegts,flv,ogg"
#define AVIO_BUFFER 32768

typedef struct mem_source {
    const uint8_t *data;
    int64_t size, pos;
} mem_source;

static int mem_read(void *opaque, uint8_t *buf, int n) {
    mem_source *s = opaque;
    int64_t left = s->size - s->pos;
    if (left <= 0) return AVERROR_EOF;
    if (n > left) n = (int)left;
    memcpy(buf, s->data + s->pos, (size_t)n);
    s->pos += n;
    return n;
}

static int64_t mem_seek(void *opaque, int64_t offset, int whence) {
    mem_source *s = opaque;
    int64_t base;
    switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE:
        return s->size;
    case SEEK_SET:
        base = 0;
        break;
    case SEEK_CUR:
        base = s->pos;
        break;
    case SEEK_END:
        base = s->size;
        break;
    default:
        return AVERROR(EINVAL);
    }
    if (offset > INT64_MAX - base) return AVERROR(EINVAL);
    int64_t p = base + offset;
    if (p < 0 || p > s->size) return AVERROR(EINVAL);
    s->pos = p;
    return p;
}

/* One open demuxer + decoder over the bytes. */
typedef struct vreader {
    mem_source src;
    AVIOContext *pb;
    AVFormatContext *fmt;
    AVCodecContext *dec;
    AVPacket *pkt;
    AVFrame *frame;
    int stream;
} vreader;

static void reader_close(vreader *r) {
    avcodec_free_context(&r->dec);
    if (r->fmt) avformat_close_input(&r->fmt);
    if (r->pb) av_freep(&r->pb->buffer);
    avio_context_free(&r->pb);
    av_packet_free(&r->pkt);
    av_frame_free(&r->frame);
}

static const char *av_msg(int code, char *buf, size_t cap) {
    if (code == AVERROR(ENOMEM)) /* most often a header's claim over the allocation cap */
        snprintf(buf, cap,
                 "FFmpeg could not allocate what the headers ask for (corrupt, or "
                 "over g4v_video_cap_allocations)");
    else if (av_strerror(code, buf, cap) < 0)
        snprintf(buf, cap, "FFmpeg error %d", code);
    return buf;
}

static int reader_open(vreader *r, const void *bytes, size_t n, const g4v_video_limits *lim,
                       g4v_err *err) {
    memset(r, 0, sizeof *r);
    char m[128];
    r->src = (mem_source){bytes, (int64_t)n, 0};
    uint8_t *buf = av_malloc(AVIO_BUFFER);
    if (buf) r->pb = avio_alloc_context(buf, AVIO_BUFFER, 0, &r->src, mem_read, NULL, mem_seek);
    if (!r->pb) {
        av_free(buf);
        return g4v_fail(err, G4V_ERR_NOMEM, "out of memory opening the video");
    }
    r->fmt = avformat_alloc_context();
    r->pkt = av_packet_alloc();
    r->frame = av_frame_alloc();
    if (!r->fmt || !r->pkt || !r->frame)
        return g4v_fail(err, G4V_ERR_NOMEM, "out of memory opening the video");
    r->fmt->pb = r->pb;
    r->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    r->fmt->format_whitelist = av_strdup(ALLOWED_DEMUXERS);
    if (!r->fmt->format_whitelist) return g4v_fail(err, G4V_ERR_NOMEM, "out of memory");
    int ret = avformat_open_input(&r->fmt, NULL, NULL, NULL);
    if (ret < 0) /* avformat_open_input frees fmt on failure */
        return g4v_fail(err, G4V_ERR_IMAGE,
                        "not a video FFmpeg can read (MP4/MOV, MKV/WebM, AVI, ...): %s",
                        av_msg(ret, m, sizeof m));
    /* find_stream_info decodes a few frames with its own decoders: hold them to max_pixels too,
     * so a frame header claiming a huge size is refused before its buffer is allocated. */
    unsigned ns = r->fmt->nb_streams;
    AVDictionary **opts = ns ? av_calloc(ns, sizeof *opts) : NULL;
    if (ns && !opts) return g4v_fail(err, G4V_ERR_NOMEM, "out of memory opening the video");
    char px[32];
    snprintf(px, sizeof px, "%llu", (unsigned long long)lim->max_pixels);
    for (unsigned i = 0; i < ns; i++)
        av_dict_set(&opts[i], "max_pixels", px, 0);
    ret = avformat_find_stream_info(r->fmt, opts);
    for (unsigned i = 0; i < ns; i++)
        av_dict_free(&opts[i]);
    av_free(opts);
    if (ret < 0)
        return g4v_fail(err, G4V_ERR_IMAGE, "cannot read the video's streams: %s",
                        av_msg(ret, m, sizeof m));
    const AVCodec *codec = NULL;
    r->stream = av_find_best_stream(r->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (r->stream == AVERROR_STREAM_NOT_FOUND)
        return g4v_fail(err, G4V_ERR_IMAGE, "the file has no video stream (audio only?)");
    if (r->stream < 0 || !codec)
        return g4v_fail(err, G4V_ERR_UNSUPPORTED, "no decoder for the video stream (%s)",
                        r->stream >= 0
                            ? avcodec_get_name(r->fmt->streams[r->stream]->codecpar->codec_id)
                            : "unknown codec");
    AVStream *st = r->fmt->streams[r->stream];
    /* What the container declares, checked before any frame is decoded. */
    int w = st->codecpar->width, h = st->codecpar->height;
    if (w > lim->max_dimension || h > lim->max_dimension ||
        (uint64_t)(w > 0 ? w : 0) * (uint64_t)(h > 0 ? h : 0) > lim->max_pixels)
        return g4v_fail(err, G4V_ERR_LIMIT,
                        "declared frame size %dx%d exceeds the limits (max_pixels %llu, "
                        "max_dimension %d)",
                        w, h, (unsigned long long)lim->max_pixels, lim->max_dimension);
    double declared = st->duration > 0       ? st->duration * av_q2d(st->time_base)
                      : r->fmt->duration > 0 ? (double)r->fmt->duration / AV_TIME_BASE
                                             : 0;
    if (declared > lim->max_seconds)
        return g4v_fail(err, G4V_ERR_LIMIT,
                        "declared duration %.1f s, above the limit of %.1f s (max_video_seconds)",
                        declared, lim->max_seconds);
    if (st->nb_frames > 0 && (uint64_t)st->nb_frames > lim->max_frames)
        return g4v_fail(err, G4V_ERR_LIMIT,
                        "declared %lld frames, above the limit of %llu (max_video_frames)",
                        (long long)st->nb_frames, (unsigned long long)lim->max_frames);
    r->dec = avcodec_alloc_context3(codec);
    if (!r->dec) return g4v_fail(err, G4V_ERR_NOMEM, "out of memory for the video decoder");
    if ((ret = avcodec_parameters_to_context(r->dec, st->codecpar)) < 0)
        return g4v_fail(err, G4V_ERR_IMAGE, "bad video stream parameters: %s",
                        av_msg(ret, m, sizeof m));
    r->dec->pkt_timebase = st->time_base;
    r->dec->thread_count = 1; /* the caller's threads encode; decoding is a small share */
    /* the decoder refuses frames over max_pixels before allocating them */
    r->dec->max_pixels = lim->max_pixels < INT64_MAX ? (int64_t)lim->max_pixels : INT64_MAX;
    if ((ret = avcodec_open2(r->dec, codec, NULL)) < 0)
        return g4v_fail(err, G4V_ERR_UNSUPPORTED, "cannot open the %s decoder: %s", codec->name,
                        av_msg(ret, m, sizeof m));
    return G4V_OK;
}

/* A pass over the stream. Demux only (decode 0): counts the stream's packets and measures their
 * time span. Decoding (decode 1): frames come out in presentation order, through on_decoded. */
typedef struct pass {
    const g4v_video_limits *lim;
    int decode;
    int64_t packets;    /* of the stream, not marked for discarding */
    int64_t frames;     /* decoded so far */
    int64_t begin, end; /* packet presentation span, stream time base */
    double tb;          /* seconds per time-base unit */
    int width, height;  /* of the first frame */
    int (*on_decoded)(struct pass *p, AVFrame *f, g4v_err *err);
    void *user;
} pass;

static int check_frame(pass *p, const AVFrame *f, g4v_err *err) {
    if (p->frames == 0) {
        if (f->width <= 0 || f->height <= 0)
            return g4v_fail(err, G4V_ERR_IMAGE, "decoded frame has no size");
        if (f->width > p->lim->max_dimension || f->height > p->lim->max_dimension ||
            (uint64_t)f->width * (uint64_t)f->height > p->lim->max_pixels)
            return g4v_fail(err, G4V_ERR_LIMIT,
                            "frame size %dx%d exceeds the limits (max_pixels %llu, "
                            "max_dimension %d)",
                            f->width, f->height, (unsigned long long)p->lim->max_pixels,
                            p->lim->max_dimension);
        p->width = f->width;
        p->height = f->height;
    } else if (f->width != p->width || f->height != p->height) {
        return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                        "frame %lld is %dx%d but the video started at %dx%d (a size change "
                        "mid-stream is not supported)",
                        (long long)p->frames, f->width, f->height, p->width, p->height);
    }
    if ((uint64_t)p->frames + 1 > p->lim->max_frames)
        return g4v_fail(err, G4V_ERR_LIMIT, "more than %llu frames (max_video_frames)",
                        (unsigned long long)p->lim->max_frames);
    return G4V_OK;
}

/* Receives every frame the decoder has ready. */
static int drain(vreader *r, pass *p, g4v_err *err) {
    char m[128];
    for (;;) {
        int ret = avcodec_receive_frame(r->dec, r->frame);
        if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return G4V_OK;
        if (ret < 0)
            return g4v_fail(err, G4V_ERR_IMAGE, "video decoder error after frame %lld: %s",
                            (long long)p->frames, av_msg(ret, m, sizeof m));
        int st = check_frame(p, r->frame, err);
        if (!st && p->on_decoded) st = p->on_decoded(p, r->frame, err);
        av_frame_unref(r->frame);
        if (st) return st;
        p->frames++;
    }
}

static int run_pass(vreader *r, pass *p, g4v_err *err) {
    char m[128];
    AVStream *st = r->fmt->streams[r->stream];
    p->tb = av_q2d(st->time_base);
    p->begin = INT64_MAX;
    p->end = INT64_MIN;
    for (;;) {
        int ret = av_read_frame(r->fmt, r->pkt);
        if (ret == AVERROR_EOF) break;
        if (ret < 0)
            return g4v_fail(err, G4V_ERR_IMAGE,
                            "video is truncated or corrupt after frame %lld: %s",
                            (long long)p->frames, av_msg(ret, m, sizeof m));
        if (r->pkt->stream_index != r->stream) {
            av_packet_unref(r->pkt);
            continue;
        }
        if (!(r->pkt->flags & AV_PKT_FLAG_DISCARD)) {
            if ((uint64_t)++p->packets > p->lim->max_frames) {
                av_packet_unref(r->pkt);
                return g4v_fail(err, G4V_ERR_LIMIT, "more than %llu frames (max_video_frames)",
                                (unsigned long long)p->lim->max_frames);
            }
            int64_t t = r->pkt->pts != AV_NOPTS_VALUE ? r->pkt->pts : r->pkt->dts;
            if (t != AV_NOPTS_VALUE && t > INT64_MIN / 2 && t < INT64_MAX / 2) {
                int64_t d =
                    r->pkt->duration > 0 && r->pkt->duration < INT64_MAX / 4 ? r->pkt->duration : 0;
                if (t < p->begin) p->begin = t;
                if (t + d > p->end) p->end = t + d;
                if (p->end > p->begin &&
                    (double)(p->end - p->begin) * p->tb > p->lim->max_seconds) {
                    av_packet_unref(r->pkt);
                    return g4v_fail(err, G4V_ERR_LIMIT,
                                    "video longer than %.1f s (max_video_seconds)",
                                    p->lim->max_seconds);
                }
            }
        }
        /* an empty packet (a dropped frame in some muxers) would read as the end of the stream */
        if (!p->decode || r->pkt->size == 0) {
            av_packet_unref(r->pkt);
            continue;
        }
        ret = avcodec_send_packet(r->dec, r->pkt);
        av_packet_unref(r->pkt);
        if (ret < 0 && ret != AVERROR(EAGAIN))
            return g4v_fail(err, G4V_ERR_IMAGE, "video decoder error after frame %lld: %s",
                            (long long)p->frames, av_msg(ret, m, sizeof m));
        int s = drain(r, p, err);
        if (s) return s;
    }
    if (!p->decode) return G4V_OK;
    int ret = avcodec_send_packet(r->dec, NULL); /* flush the frames the decoder holds back */
    if (ret < 0 && ret != AVERROR_EOF)
        return g4v_fail(err, G4V_ERR_IMAGE, "video decoder error at the end: %s",
                        av_msg(ret, m, sizeof m));
    return drain(r, p, err);
}

/* The decoding pass: converts the frames at the sampled indices and hands them on. */
typedef struct sampler {
    const int64_t *idx;
    int n, next;
    struct SwsContext *sws;
    int sws_format;
    uint8_t *rgb;
    int stride;
    g4v_video_frame_fn on_frame;
    void *user;
} sampler;

static int sample_frame(pass *p, AVFrame *f, g4v_err *err) {
    sampler *s = p->user;
    if (s->next >= s->n || p->frames != s->idx[s->next]) return G4V_OK;
    if (!s->rgb) {
        /* rows padded to 64 bytes: swscale's SIMD stores may run past the last pixel */
        s->stride = FFALIGN(f->width * 3, 64) + 64;
        s->rgb = g4v_malloc((size_t)s->stride * (size_t)f->height);
        if (!s->rgb) return g4v_fail(err, G4V_ERR_NOMEM, "out of memory for a video frame");
    }
    if (!s->sws || s->sws_format != f->format) {
        sws_freeContext(s->sws);
        s->sws = sws_getContext(f->width, f->height, f->format, f->width, f->height,
                                AV_PIX_FMT_RGB24, SWS_BILINEAR, NULL, NULL, NULL);
        s->sws_format = f->format;
        if (!s->sws)
            return g4v_fail(err, G4V_ERR_UNSUPPORTED, "cannot convert pixel format %s to RGB",
                            av_get_pix_fmt_name(f->format) ? av_get_pix_fmt_name(f->format) : "?");
    }
    uint8_t *dst[4] = {s->rgb, NULL, NULL, NULL};
    int dst_stride[4] = {s->stride, 0, 0, 0};
    if (sws_scale(s->sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, dst,
                  dst_stride) != f->height)
        return g4v_fail(err, G4V_ERR_IMAGE, "converting frame %lld to RGB failed",
                        (long long)p->frames);
    int k = s->next++;
    return s->on_frame ? s->on_frame(s->user, k, p->frames, s->rgb, f->width, f->height,
                                     (size_t)s->stride, err)
                       : G4V_OK;
}

/* Decodes the whole stream, handing on the frames at the indices sampled for total frames. */
static int sample_pass(const void *bytes, size_t n, const g4v_video_limits *lim, int64_t total,
                       int wanted, g4v_video_frame_fn on_frame, void *user, int64_t *idx,
                       int *count, pass *p, g4v_err *err) {
    int st = g4v_video_sample_indices(total, wanted, idx, count, err);
    if (st) return st;
    sampler s = {.idx = idx, .n = *count, .on_frame = on_frame, .user = user};
    *p = (pass){.lim = lim, .decode = 1, .on_decoded = sample_frame, .user = &s};
    vreader r;
    st = reader_open(&r, bytes, n, lim, err);
    if (!st) st = run_pass(&r, p, err);
    reader_close(&r);
    sws_freeContext(s.sws);
    g4v_free(s.rgb);
    if (!st && p->frames == 0) st = g4v_fail(err, G4V_ERR_IMAGE, "the video stream has no frames");
    return st;
}

int g4v_video_decode(const void *bytes, size_t n, const g4v_video_limits *lim, int wanted,
                     g4v_video_frame_fn on_frame, void *user, g4v_video_info *info, int64_t *idx,
                     int *n_sampled, g4v_err *err) {
    if (n_sampled) *n_sampled = 0;
    if (info) memset(info, 0, sizeof *info);
    if (!bytes || !lim || n == 0 || n > INT64_MAX)
        return g4v_fail(err, G4V_ERR_ARG, "empty video buffer");
    if (wanted < 1 || wanted > G4V_VIDEO_MAX_SAMPLED)
        return g4v_fail(err, G4V_ERR_ARG, "frames to sample must be 1..%d, found %d",
                        G4V_VIDEO_MAX_SAMPLED, wanted);
    int loaded = g4v_ffmpeg_load(err);
    if (loaded) return loaded;
    /* 1. Demux only: the packet count (a frame count to sample from, usually exact), the time
     * span, and the limits on both, before any frame is decoded. */
    g4v_video_info vi;
    memset(&vi, 0, sizeof vi);
    vreader r;
    pass p = {.lim = lim};
    double header_fps = 0;
    int st = reader_open(&r, bytes, n, lim, err);
    if (!st) st = run_pass(&r, &p, err);
    if (!st && p.packets == 0) st = g4v_fail(err, G4V_ERR_IMAGE, "the video stream has no frames");
    if (!st) {
        vi.duration = p.end > p.begin ? (double)(p.end - p.begin) * p.tb : 0.0;
        header_fps = av_q2d(r.fmt->streams[r.stream]->r_frame_rate);
        snprintf(vi.codec, sizeof vi.codec, "%s", r.dec->codec->name);
        snprintf(vi.container, sizeof vi.container, "%s", r.fmt->iformat->name);
        char *comma = strchr(vi.container, ',');
        if (comma) *comma = '\0';
    }
    reader_close(&r);
    if (st) return st;
    /* 2. Decode everything, converting the sampled frames. The frame count is what the decoder
     * gives; where it differs from the packet count (empty or undecodable packets), the frames
     * handed on so far are withdrawn (k = -1) and the sampling is redone for the true count. */
    int64_t local_idx[G4V_VIDEO_MAX_SAMPLED];
    int count = 0;
    pass d;
    st = sample_pass(bytes, n, lim, p.packets, wanted, on_frame, user, local_idx, &count, &d, err);
    if (!st && d.frames != p.packets) {
        int64_t decoded = d.frames;
        if (on_frame) st = on_frame(user, -1, -1, NULL, 0, 0, 0, err);
        if (!st)
            st = sample_pass(bytes, n, lim, decoded, wanted, on_frame, user, local_idx, &count, &d,
                             err);
        if (!st && d.frames != decoded)
            st = g4v_fail(err, G4V_ERR_INTERNAL, "two decodes gave %lld and %lld frames",
                          (long long)decoded, (long long)d.frames);
    }
    if (st) return st;
    vi.total_frames = d.frames;
    vi.width = d.width;
    vi.height = d.height;
    /* The reference falls back to the header's rate, then to 24 fps, when the packets carry no
     * usable times. */
    vi.fps = vi.duration > 0                          ? (double)d.frames / vi.duration
             : header_fps > 0 && isfinite(header_fps) ? header_fps
                                                      : 24.0;
    if (info) *info = vi;
    if (idx) memcpy(idx, local_idx, (size_t)count * sizeof *idx);
    if (n_sampled) *n_sampled = count;
    return G4V_OK;
}

int g4v_video_sniff(const void *bytes, size_t n) {
    const uint8_t *b = bytes;
    if (!b) return 0;
    if (n >= 12 && (!memcmp(b + 4, "ftyp", 4) || !memcmp(b + 4, "moov", 4) ||
                    !memcmp(b + 4, "mdat", 4) || !memcmp(b + 4, "wide", 4)))
        return 1; /* ISO-BMFF / QuickTime */
    if (n >= 4 && b[0] == 0x1A && b[1] == 0x45 && b[2] == 0xDF && b[3] == 0xA3) return 1; /* EBML */
    if (n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "AVI ", 4)) return 1;
    return 0;
}
