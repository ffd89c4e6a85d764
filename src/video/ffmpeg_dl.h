/* ffmpeg_dl.h - FFmpeg loaded on the first video, not when the program starts.
 *
 * Linking libavformat/libavcodec pulls in ~130 shared libraries whose loading and relocation
 * cost every process tens of milliseconds at start (dozens of times an unlinked program's
 * start), paid by every `g4v` command and every `import gemma4_vision`
 * although most never decode a video. So the library is compiled against FFmpeg's headers but
 * not linked with it: g4v_ffmpeg_load() dlopens the four libraries by the soname of the major
 * version the headers declare (ABI-compatible by FFmpeg's rules) and fills a table of function
 * pointers; the FFmpeg calls in decode.c go through it (the defines below). A machine without
 * FFmpeg's runtime libraries encodes images as before and gets a clear error for a video.
 *
 * Include this after FFmpeg's headers, and only from the files that call FFmpeg. */
#ifndef G4V_VIDEO_FFMPEG_DL_H
#define G4V_VIDEO_FFMPEG_DL_H

#include "base/error.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

/* Every FFmpeg function libg4v calls (X(name)); their types come from FFmpeg's own headers. */
#define G4V_FFMPEG_FUNCTIONS(X)                                                                    \
    X(av_calloc)                                                                                   \
    X(av_dict_free)                                                                                \
    X(av_dict_set)                                                                                 \
    X(av_find_best_stream)                                                                         \
    X(av_frame_alloc)                                                                              \
    X(av_frame_free)                                                                               \
    X(av_frame_unref)                                                                              \
    X(av_free)                                                                                     \
    X(av_freep)                                                                                    \
    X(av_get_pix_fmt_name)                                                                         \
    X(av_log_set_level)                                                                            \
    X(av_malloc)                                                                                   \
    X(av_max_alloc)                                                                                \
    X(av_packet_alloc)                                                                             \
    X(av_packet_free)                                                                              \
    X(av_packet_unref)                                                                             \
    X(av_read_frame)                                                                               \
    X(av_strdup)                                                                                   \
    X(av_strerror)                                                                                 \
    X(avcodec_alloc_context3)                                                                      \
    X(avcodec_free_context)                                                                        \
    X(avcodec_get_name)                                                                            \
    X(avcodec_open2)                                                                               \
    X(avcodec_parameters_to_context)                                                               \
    X(avcodec_receive_frame)                                                                       \
    X(avcodec_send_packet)                                                                         \
    X(avformat_alloc_context)                                                                      \
    X(avformat_close_input)                                                                        \
    X(avformat_find_stream_info)                                                                   \
    X(avformat_open_input)                                                                         \
    X(avio_alloc_context)                                                                          \
    X(avio_context_free)                                                                           \
    X(sws_freeContext)                                                                             \
    X(sws_getContext)                                                                              \
    X(sws_scale)

typedef struct g4v_ffmpeg {
#define G4V_FFMPEG_FIELD(name) __typeof__(name) *name;
    G4V_FFMPEG_FUNCTIONS(G4V_FFMPEG_FIELD)
#undef G4V_FFMPEG_FIELD
} g4v_ffmpeg;

/* The table, valid after g4v_ffmpeg_load() returned G4V_OK. */
extern g4v_ffmpeg g4v_ff;

/* Loads FFmpeg once per process (thread-safe; later calls return the first result). On failure:
 * G4V_ERR_UNSUPPORTED naming the library that could not be loaded and the package to install.
 * G4V_FFMPEG_DIR in the environment, when set, is the directory the libraries are loaded from
 * (an FFmpeg outside the loader's search path; the tests point it at an empty one). */
int g4v_ffmpeg_load(g4v_err *err);

#ifndef G4V_FFMPEG_DL_IMPL /* the loader itself names the real symbols */
#define av_calloc g4v_ff.av_calloc
#define av_dict_free g4v_ff.av_dict_free
#define av_dict_set g4v_ff.av_dict_set
#define av_find_best_stream g4v_ff.av_find_best_stream
#define av_frame_alloc g4v_ff.av_frame_alloc
#define av_frame_free g4v_ff.av_frame_free
#define av_frame_unref g4v_ff.av_frame_unref
#define av_free g4v_ff.av_free
#define av_freep g4v_ff.av_freep
#define av_get_pix_fmt_name g4v_ff.av_get_pix_fmt_name
#define av_log_set_level g4v_ff.av_log_set_level
#define av_malloc g4v_ff.av_malloc
#define av_max_alloc g4v_ff.av_max_alloc
#define av_packet_alloc g4v_ff.av_packet_alloc
#define av_packet_free g4v_ff.av_packet_free
#define av_packet_unref g4v_ff.av_packet_unref
#define av_read_frame g4v_ff.av_read_frame
#define av_strdup g4v_ff.av_strdup
#define av_strerror g4v_ff.av_strerror
#define avcodec_alloc_context3 g4v_ff.avcodec_alloc_context3
#define avcodec_free_context g4v_ff.avcodec_free_context
#define avcodec_get_name g4v_ff.avcodec_get_name
#define avcodec_open2 g4v_ff.avcodec_open2
#define avcodec_parameters_to_context g4v_ff.avcodec_parameters_to_context
#define avcodec_receive_frame g4v_ff.avcodec_receive_frame
#define avcodec_send_packet g4v_ff.avcodec_send_packet
#define avformat_alloc_context g4v_ff.avformat_alloc_context
#define avformat_close_input g4v_ff.avformat_close_input
#define avformat_find_stream_info g4v_ff.avformat_find_stream_info
#define avformat_open_input g4v_ff.avformat_open_input
#define avio_alloc_context g4v_ff.avio_alloc_context
#define avio_context_free g4v_ff.avio_context_free
#define sws_freeContext g4v_ff.sws_freeContext
#define sws_getContext g4v_ff.sws_getContext
#define sws_scale g4v_ff.sws_scale
#endif

#endif
