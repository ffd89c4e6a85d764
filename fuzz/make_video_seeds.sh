#!/bin/bash
# make_video_seeds.sh - regenerates fuzz/corpus/video (the seeds of fuzz_video): tiny videos, a
# few KB each, made with Debian's ffmpeg (and PyAV for the one ffmpeg will not write). Encoder
# versions change the bytes, not what the seeds exercise.
set -euo pipefail
D=$(cd "$(dirname "$0")" && pwd)/corpus/video
mkdir -p "$D"
cd "$D"
SRC="testsrc2=size=32x24:rate=10:duration=0.5"
F() { ffmpeg -nostdin -v error -y -f lavfi -i "$SRC" "$@"; }
F -c:v libx264 -pix_fmt yuv420p h264.mp4
F -c:v libx264 -movflags +faststart -pix_fmt yuv444p h264-444.mov
F -c:v libvpx-vp9 -deadline realtime -b:v 50k vp9.webm
F -c:v libvpx -b:v 50k vp8.mkv
F -c:v mjpeg -q:v 20 mjpeg.avi
F -vf scale=17:13 -c:v ffv1 ffv1-odd.mkv
F -c:v mpeg4 mpeg4.avi
F -c:v mpeg4 -f mpegts mpeg4.ts
F -c:v flv1 flv1.flv
F -vf "setpts='if(lt(N,3),N*0.02,0.1+N*0.2)/TB'" -fps_mode vfr -c:v libx264 vfr.mp4
F -c:v libtheora -q:v 3 theora.ogv
ffmpeg -nostdin -v error -y -f lavfi -i sine=duration=0.2 -c:a aac audio-only.m4a
# one packet (the 4th) replaced by a bare MPEG-4 VOP start code: a packet without a frame
tmp=$(mktemp --suffix=.mkv)
ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=32x24:rate=10:duration=0.8 -c:v mpeg4 -bf 0 "$tmp"
/usr/bin/python3 - "$tmp" <<'PY'
import sys
import av
with av.open(sys.argv[1]) as inp, av.open("packet-without-frame.mkv", "w") as out:
    s = out.add_stream(template=inp.streams.video[0])
    for i, p in enumerate(inp.demux(video=0)):
        if p.dts is None:
            continue
        if i == 3:
            e = av.Packet(b"\x00\x00\x01\xb6")
            e.pts, e.dts, e.time_base = p.pts, p.dts, p.time_base
            p = e
        p.stream = s
        out.mux(p)
PY
rm -f "$tmp"
ls -l "$D"
