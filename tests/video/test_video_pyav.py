#!/usr/bin/python3
"""test_video_pyav.py - video input against PyAV (Debian's python3-av) and the image path.

Videos are made at test time with Debian's ffmpeg (H.264/MP4 with B-frames, VP9/WebM,
MJPEG/AVI, FFV1/MKV at an odd size, a variable frame rate, fewer than 32 frames, NTSC's
29.97 (30000/1001) fps, and with PyAV's muxer one packet more than frames; then, at 32 frames only, 10-bit 4:2:2, 4:4:4 at an
odd size, planar RGB, PNG, MPEG-2/TS, HEVC, AV1) into a temporary directory. For each, with 32 and other frame counts:
  - the frame count equals the number of frames PyAV decodes;
  - fps equals frames / (max(pts + duration) - min(pts)) over PyAV's demuxed packets;
  - the sampled indices equal the reference formula trunc(k * (T / n)), computed here;
  - the sampled RGB24 frames are byte-identical to PyAV's to_ndarray(format="rgb24").
Through `g4v encode` on a tiny synthetic checkpoint: the video's rows equal, bit for bit, those
of encoding PyAV's frames as raw RGB .npy images at budget 70; the JSON's indices, timestamps
(index / fps), MM:SS labels (Python's own formatting, as the reference processor writes it),
tokens per frame (the target-size rule, recomputed here) and the prompt text are checked; the
safetensors metadata; and tests/video/test_video_api.c (the C API) on the same model and
video. Hostile inputs: truncated, garbage, audio only, a video stream with no
frame, declared size / duration / frame count over the limits.
--arg: the video_tool helper (tests/video/video_tool.c).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import av
import av.logging
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402
from pyutil import check, target_size  # noqa: E402

TOOL = pyutil.arg(1)


def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True, timeout=120)


def has_encoder(name):
    out = subprocess.run(["ffmpeg", "-hide_banner", "-encoders"], capture_output=True, text=True).stdout
    return any(line.split()[1:2] == [name] for line in out.splitlines() if line.startswith(" "))


def make_videos(d):
    """name -> path of the test videos (small: 64x48 .. 200x150, 1-3 s)."""
    src = "testsrc2=size=%s:rate=%s:duration=%s"
    v = {}
    h264 = ["-c:v", "libx264", "-pix_fmt", "yuv420p"] if has_encoder("libx264") else ["-c:v", "mpeg4"]
    v["h264.mp4"] = h264 + []
    ffmpeg("-f", "lavfi", "-i", src % ("64x48", 30, 2), *h264, os.path.join(d, "h264.mp4"))
    ffmpeg("-f", "lavfi", "-i", src % ("200x150", 24, 1.5), "-c:v", "libvpx-vp9", "-b:v", "200k",
           "-deadline", "realtime", os.path.join(d, "vp9.webm"))
    ffmpeg("-f", "lavfi", "-i", src % ("96x72", 25, 1), "-c:v", "mjpeg", "-q:v", "5",
           os.path.join(d, "mjpeg.avi"))
    ffmpeg("-f", "lavfi", "-i", src % ("96x72", 25, 1), "-vf", "scale=97:71", "-c:v", "ffv1",
           os.path.join(d, "odd.mkv"))
    # variable frame rate: 20 frames 20 ms apart, then 100 ms apart
    ffmpeg("-f", "lavfi", "-i", src % ("64x48", 25, 2), "-vf",
           "setpts='if(lt(N,20),N*0.02,0.4+(N-20)*0.1)/TB'", "-fps_mode", "vfr", *h264,
           os.path.join(d, "vfr.mp4"))
    ffmpeg("-f", "lavfi", "-i", src % ("80x60", 10, 1), "-c:v", "mpeg4", os.path.join(d, "short.mp4"))
    # NTSC's 30000/1001 (29.97) fps: a rate that is not an integer, 60 frames over 2.002 s
    ffmpeg("-f", "lavfi", "-i", src % ("64x48", "30000/1001", 2), *h264, os.path.join(d, "ntsc.mp4"))
    # a stream with one packet more than it has frames: packet 7 is replaced by a bare MPEG-4
    # VOP start code, which decodes to nothing (the frame count is then the decoded one)
    ffmpeg("-f", "lavfi", "-i", src % ("64x48", 10, 2), "-c:v", "mpeg4", "-bf", "0",
           os.path.join(d, "src.mkv"))
    with av.open(os.path.join(d, "src.mkv")) as inp, \
            av.open(os.path.join(d, "holes.mkv"), "w") as out:
        s = out.add_stream(template=inp.streams.video[0])
        for i, p in enumerate(inp.demux(video=0)):
            if p.dts is None:
                continue
            if i == 7:
                e = av.Packet(b"\x00\x00\x01\xb6")
                e.pts, e.dts, e.time_base = p.pts, p.dts, p.time_base
                p = e
            p.stream = s
            out.mux(p)
    names = ["h264.mp4", "vp9.webm", "mjpeg.avi", "odd.mkv", "vfr.mp4", "short.mp4", "holes.mkv",
             "ntsc.mp4"]
    return {n: os.path.join(d, n) for n in names}


def make_format_videos(d):
    """More codecs and pixel formats (checked at 32 frames only): 10-bit 4:2:2, 4:4:4 at an odd
    size, planar RGB, RGB24 itself (PNG), MPEG-2 in MPEG-TS, HEVC and AV1 where Debian's ffmpeg
    has the encoders."""
    src = ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25:duration=1"]
    cases = {"h264_422p10.mkv": ["-c:v", "libx264", "-pix_fmt", "yuv422p10le"],
             "h264_444_odd.mp4": ["-vf", "scale=161:91", "-c:v", "libx264", "-pix_fmt", "yuv444p"],
             "h264_gbrp.mkv": ["-c:v", "libx264rgb"],
             "png.mov": ["-c:v", "png"],
             "mpeg2.ts": ["-c:v", "mpeg2video"],
             "hevc.mp4": ["-c:v", "libx265", "-x265-params", "log-level=none"],
             "av1.mkv": ["-c:v", "libaom-av1", "-cpu-used", "8"]}
    out = {}
    for name, args in cases.items():
        enc = args[args.index("-c:v") + 1]
        if enc != "png" and enc != "mpeg2video" and not has_encoder(enc):
            print(f"     ({name}: no {enc} encoder in this ffmpeg, skipped)")
            continue
        ffmpeg(*src, *args, os.path.join(d, name))
        out[name] = os.path.join(d, name)
    return out


def pyav_reference(path):
    """(frames as uint8 [H, W, 3] arrays, fps from the packets' presentation times)."""
    with av.open(path) as c:
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    packets = 0
    with av.open(path) as c:
        s = c.streams.video[0]
        lo, hi = None, None
        for p in c.demux(s):
            if p.size == 0 and p.pts is None:
                continue  # the demuxer's end-of-stream marker
            packets += 1
            t = p.pts if p.pts is not None else p.dts
            if t is None:
                continue
            d = p.duration if p.duration and p.duration > 0 else 0
            lo = t if lo is None else min(lo, t)
            hi = t + d if hi is None else max(hi, t + d)
        tb = float(s.time_base)
    dur = (hi - lo) * tb
    if path.endswith("holes.mkv"):
        check(packets == len(frames) + 1, f"holes.mkv: {packets} packets, {len(frames)} frames")
    return frames, len(frames) / dur


def sample(T, n):
    """torch.arange(0, T, T / n).int() for n a power of two (exact); trunc(k*T/n) in integers."""
    n = min(n, T)
    return [k * T // n for k in range(n)]


def mmss(t):
    return f"{int(t // 60):02d}:{int(t % 60):02d}"


def run_tool(path, n, env=None):
    out = os.path.join(os.path.dirname(path), "frames.rgb")
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([TOOL, path, str(n), out], capture_output=True, text=True, env=e)
    if p.returncode:
        return None, p.stdout.strip(), None
    return json.loads(p.stdout), "", np.fromfile(out, dtype=np.uint8)


def check_decode(videos, refs, counts=(32, 8, 1, 100)):
    for name, path in videos.items():
        frames, fps = refs[name]
        T = len(frames)
        for n in counts:
            info, err, raw = run_tool(path, n)
            if not check(info is not None, f"{name} n={n}: decodes ({err})"):
                continue
            idx = sample(T, n)
            ref = np.concatenate([frames[i].ravel() for i in idx])
            check(info["total"] == T, f"{name} n={n}: {info['total']} frames, PyAV decodes {T}")
            check(info["fps"] == fps, f"{name} n={n}: fps {info['fps']!r} == {fps!r} from the packets")
            check(info["indices"] == idx, f"{name} n={n}: indices == trunc(k*T/n)")
            check(raw.shape == ref.shape and bool((raw == ref).all()),
                  f"{name} n={n}: {len(idx)} frames byte-identical to PyAV rgb24 "
                  f"({frames[0].shape[1]}x{frames[0].shape[0]})")


def check_cli(tmp, videos, refs, ck):
    for name in ("h264.mp4", "odd.mkv", "vfr.mp4", "holes.mkv", "ntsc.mp4"):
        path = videos[name]
        frames, fps = refs[name]
        n = 6
        out = os.path.join(tmp, name + ".npy")
        p = pyutil.g4v("encode", "--model", ck, path, "--frames", str(n), "--json", "-o", out)
        if not check(p.returncode == 0, f"cli {name}: exit 0 ({p.stderr.strip()})"):
            continue
        j = json.loads(p.stdout)
        idx = sample(len(frames), n)
        h, w = frames[0].shape[:2]
        th, tw = target_size(h, w, 70)
        per = (th // 48) * (tw // 48)
        check([f["index"] for f in j["frames"]] == idx, f"cli {name}: json frame indices")
        stamps = [f["timestamp"] for f in j["frames"]]
        # bit for bit: the JSON prints the shortest text that reads back exactly (for the NTSC
        # clip 1.0010000000000001, not cJSON's 1.001). An fps rounded to 30 is off by 0.1%.
        check(stamps == [i / fps for i in idx] and j["fps"] == fps,
              f"cli {name}: timestamps == index / fps, fps exact")
        if name == "ntsc.mp4":
            st = os.path.join(tmp, "ntsc.safetensors")
            p = pyutil.g4v("encode", "--model", ck, path, "--frames", str(n), "-o", st)
            meta = pyutil.st_read(st)[1] if p.returncode == 0 else {}
            check([float(x) for x in meta.get("ntsc.timestamps", "").split(",") if x] ==
                  [i / fps for i in idx], f"cli {name}: safetensors timestamps == index / fps")
        check([f["mmss"] for f in j["frames"]] == [mmss(i / fps) for i in idx], f"cli {name}: MM:SS")
        check(all(f["tokens"] == per for f in j["frames"]) and j["tokens"] == per * len(idx),
              f"cli {name}: {per} tokens per frame ({tw}x{th} at budget 70)")
        text = " ".join(f"{mmss(i / fps)} <|image>" + "<|video|>" * per + "<image|>" for i in idx)
        check(j["prompt_text"] == text, f"cli {name}: prompt text")
        check(j["prompt_ids"] == {"boi": 255999, "video": 258884, "eoi": 258882}, f"cli {name}: ids")
        # the same frames through the image path (raw RGB .npy -> g4v_encode_rgb), budget 70
        fdir = os.path.join(tmp, name + ".frames")
        os.makedirs(fdir, exist_ok=True)
        for k, i in enumerate(idx):
            np.save(os.path.join(fdir, f"f{k:03d}.npy"), frames[i])
        odir = os.path.join(tmp, name + ".img")
        p = pyutil.g4v("encode", "--model", ck, "--tokens", "70", "--quiet", fdir, "-o", odir)
        check(p.returncode == 0, f"cli {name}: frames as images encode ({p.stderr.strip()})")
        rows = np.load(out)
        img = np.concatenate([np.load(os.path.join(odir, f"f{k:03d}.npy")) for k in range(len(idx))])
        check(rows.shape == img.shape and rows.tobytes() == img.tobytes(),
              f"cli {name}: rows {rows.shape} bit-identical to the frames encoded as images")
    # stdout spans and safetensors metadata
    st = os.path.join(tmp, "v.safetensors")
    p = pyutil.g4v("encode", "--model", ck, videos["short.mp4"], videos["mjpeg.avi"], "-o", st)
    check(p.returncode == 0, f"cli safetensors of two videos ({p.stderr.strip()})")
    _, meta, _ = pyutil.st_read(st)
    check(meta.get("short.frames") == "10" and meta.get("short.frame_indices") ==
          ",".join(str(i) for i in range(10)), "cli safetensors: frames, frame_indices (short: all 10)")
    check(meta.get("mjpeg.frames") == "25", "cli safetensors: mjpeg 25 frames (fewer than 32)")
    check(p.stdout.count("ids: 255999 258884x") == 2 and p.stdout.count("# ") == 2,
          "cli stdout: one span block per video")
    p = pyutil.g4v("encode", "--help")
    check(p.returncode == 0 and "--frames N" in p.stdout and "--video" in p.stdout and
          "<|video|>" in p.stdout, "cli encode --help documents video")
    p = pyutil.g4v("encode", "--model", ck, videos["short.mp4"], "--frames", "0", "-o", "x.npy")
    check(p.returncode == 1 and "--frames" in p.stderr, "cli --frames 0 is a usage error")
    p = pyutil.g4v("encode", "--model", ck, videos["short.mp4"], "--tokens", "140", "--json",
                   "-o", os.path.join(tmp, "b.npy"))
    j = json.loads(p.stdout) if p.returncode == 0 else {}
    th, tw = target_size(60, 80, 140)
    check(j.get("budget") == 140 and j.get("tokens_per_frame") == (th // 48) * (tw // 48),
          "cli --tokens 140 applies to the frames")


def check_python(tmp, videos, ck):
    """gemma4_vision.Model.encode_video: the CLI's rows, frames and prompt, path and bytes."""
    path = videos["h264.mp4"]
    out = os.path.join(tmp, "py-ref.npy")
    p = pyutil.g4v("encode", "--model", ck, path, "--frames", "5", "--json", "-o", out)
    if not check(p.returncode == 0, f"python: reference CLI run ({p.stderr.strip()})"):
        return
    j = json.loads(p.stdout)
    env = dict(os.environ, PYTHONPATH=os.path.join(pyutil.SRC, "python"),
               G4V_LIBRARY=os.path.join(pyutil.BUILD, "libg4v.so"))
    code = ("import sys, json, numpy as np\n"
            "from gemma4_vision import Model, G4VError\n"
            "j = json.loads(sys.argv[4])\n"
            "with Model(sys.argv[1], threads=2) as m:\n"
            "    v = m.encode_video(sys.argv[2], frames=5)\n"
            "    w = m.encode_video(open(sys.argv[2], 'rb').read(), frames=5, bf16=True)\n"
            "    ref = np.load(sys.argv[3])\n"
            "    assert v.features.tobytes() == ref.tobytes() == w.features.tobytes()\n"
            "    assert [f['index'] for f in v.frames] == [f['index'] for f in j['frames']]\n"
            "    assert [f['mmss'] for f in v.frames] == [f['mmss'] for f in j['frames']]\n"
            "    assert v.prompt == j['prompt_text'], (v.prompt[:80], j['prompt_text'][:80])\n"
            "    per = v.frames[0]['tokens']\n"
            "    span = [255999] + [258884] * per + [258882]\n"
            "    assert v.prompt_ids.tolist() == span * v.n_frames\n"
            "    assert w.features_bf16.shape == w.features.shape\n"
            "    try:\n"
            "        m.encode_video(b'not a video')\n"
            "        raise SystemExit('garbage accepted')\n"
            "    except G4VError as e:\n"
            "        assert e.status_name == 'G4V_ERR_IMAGE', e\n"
            "    print(v)\n")
    r = subprocess.run([sys.executable, "-c", code, ck, path, out, p.stdout], capture_output=True,
                       text=True, env=env)
    check(r.returncode == 0, "python Model.encode_video == g4v encode (rows, frames, prompt, ids; "
                             f"path and bytes; garbage refused) {(r.stdout + r.stderr)[-300:]}")


def check_hostile(tmp, videos, ck):
    d = os.path.join(tmp, "bad")
    os.makedirs(d)
    with open(videos["h264.mp4"], "rb") as f:
        mp4 = f.read()
    cases = {}
    cases["truncated.mp4"] = mp4[: len(mp4) // 2] if mp4[4:8] == b"ftyp" else mp4[:100]
    cases["header_only.mp4"] = mp4[:40]
    cases["garbage.mp4"] = bytes(np.random.default_rng(3).integers(0, 256, 5000, dtype=np.uint8))
    for n, b in cases.items():
        with open(os.path.join(d, n), "wb") as f:
            f.write(b)
    ffmpeg("-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac", os.path.join(d, "audio.m4a"))
    ffmpeg("-f", "lavfi", "-i", "sine=duration=1", "-f", "lavfi", "-i",
           "testsrc2=size=64x48:rate=25:duration=1", "-map", "0:a", "-map", "1:v", "-c:a",
           "libvorbis", "-c:v", "mpeg4", "-frames:v", "0", os.path.join(d, "zero.mkv"))
    expect = {"truncated.mp4": "not a video", "header_only.mp4": "not a video",
              "garbage.mp4": "not a video", "audio.m4a": "no video stream",
              "zero.mkv": "no frames"}
    for n, words in expect.items():
        p = pyutil.g4v("encode", "--model", ck, "--video", os.path.join(d, n), "-o",
                       os.path.join(tmp, "x.npy"))
        check(p.returncode == 2 and words in p.stderr and n in p.stderr,
              f"hostile {n}: exit 2, '{words}' ({p.returncode}: {p.stderr.strip()[:120]})")
    # limits, checked on what the container declares before decoding, then while decoding
    lim = {"VIDEO_TOOL_MAX_DIMENSION": ("199", videos["vp9.webm"], "declared frame size 200x150"),
           "VIDEO_TOOL_MAX_SECONDS": ("1.5", videos["h264.mp4"], "declared duration 2.0 s"),
           "VIDEO_TOOL_MAX_FRAMES": ("59", videos["h264.mp4"], "(max_video_frames)")}
    for var, (val, path, words) in lim.items():
        info, err, _ = run_tool(path, 32, {var: val})
        check(info is None and err.startswith("error G4V_ERR_LIMIT") and words in err,
              f"limit {var}={val}: {err[:110]}")
    # WebM declares no frame count: the decoded count is held to the limit while decoding
    info, err, _ = run_tool(videos["vp9.webm"], 32, {"VIDEO_TOOL_MAX_FRAMES": "35"})
    check(info is None and "more than 35 frames (max_video_frames)" in err,
          f"limit max_frames while decoding: {err[:110]}")
    info, _, _ = run_tool(videos["h264.mp4"], 32, {"VIDEO_TOOL_MAX_FRAMES": "60"})
    check(info is not None, "limit max_frames 60 admits the 60-frame video")
    # a decoder error mid-stream: packet 10's VP9 frame marker destroyed (PyAV raises too)
    with av.open(videos["vp9.webm"]) as c:
        data = [bytes(p) for p in c.demux(video=0) if p.size][10]
    with open(videos["vp9.webm"], "rb") as f:
        webm = bytearray(f.read())
    at = webm.find(data)
    webm[at:at + 3] = b"\xff\xff\xff"
    bad = os.path.join(d, "bad_frame.webm")
    with open(bad, "wb") as f:
        f.write(webm)
    p = pyutil.g4v("encode", "--model", ck, bad, "-o", os.path.join(tmp, "x.npy"))
    check(p.returncode == 2 and "video decoder error after frame 10" in p.stderr,
          f"hostile bad_frame.webm: decoder error mid-stream ({p.stderr.strip()[:120]})")
    try:
        with av.open(bad) as c:
            sum(1 for _ in c.decode(video=0))
        check(False, "PyAV decodes bad_frame.webm (the case no longer makes a decoder error)")
    except av.AVError:
        pass
    # a truncated WebM ends cleanly for its demuxer: the frames before the cut, like PyAV
    with open(videos["vp9.webm"], "rb") as f:
        webm = f.read()
    cut = os.path.join(d, "cut.webm")
    with open(cut, "wb") as f:
        f.write(webm[: len(webm) * 2 // 3])
    info, err, _ = run_tool(cut, 32)
    with av.open(cut) as c:
        n_ref = sum(1 for _ in c.decode(video=0))
    check(info is not None and info["total"] == n_ref, f"cut WebM: {n_ref} frames as PyAV ({err})")


def test_video_pyav():
    av.logging.set_level(av.logging.PANIC)  # swscale's notes on yuvj formats are not failures
    with tempfile.TemporaryDirectory(dir=os.getcwd()) as tmp:
        videos = make_videos(tmp)
        refs = {n: pyav_reference(p) for n, p in videos.items()}
        for n, (frames, fps) in refs.items():
            print(f"     {n}: {len(frames)} frames {frames[0].shape[1]}x{frames[0].shape[0]}, "
                  f"{fps:.6g} fps")
        fps = refs["ntsc.mp4"][1]
        check(abs(fps - 30000 / 1001) < 1e-6, f"ntsc.mp4: {fps!r} fps from the packets (29.97)")
        check_decode(videos, refs)
        formats = make_format_videos(tmp)
        check_decode(formats, {n: pyav_reference(p) for n, p in formats.items()}, counts=(32,))
        ck = os.path.join(tmp, "tiny")
        pyutil.gen_checkpoint(ck, "--config", "tiny", "--seed", "5", quiet=True)
        check_cli(tmp, videos, refs, ck)
        check_python(tmp, videos, ck)
        check_hostile(tmp, videos, ck)
        api = os.environ.get("G4V_VIDEO_API_TEST")
        if check(api is not None, "the C API test is built (G4V_VIDEO_API_TEST)"):
            p = subprocess.run([api, ck, videos["h264.mp4"]], capture_output=True, text=True)
            check(p.returncode == 0, "test_video_api: " + (p.stdout + p.stderr).strip()[-800:])

