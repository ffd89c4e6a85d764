#!/usr/bin/python3
"""make_fixtures.py OUT --llama-src DIR - the synthetic models and inputs of the chat tests.

OUT/lm-{e2b,e4b,31b,12b}.gguf  Gemma 4 text models (tools/gen_lm_gguf.py; the real tokenizer from
                            DIR/models/ggml-vocab-gemma-4.gguf, gguf-py from DIR/gguf-py)
OUT/lm-31b-{q4_0,q8_0,q4_k}.gguf  the 31b text model with quantized matrices (--quant)
OUT/lm-llama.gguf           a header-only GGUF whose architecture is "llama" (the error case)
OUT/vis-{e2b,e4b,31b,12b}   vision checkpoints whose soft-token width is the text model's:
                            the tiny tower at 1536, 2560 and 512, the tiny unified embedder at 384
OUT/mmproj-*.gguf           the same as llama.cpp mmproj files (tools/gguf_from_checkpoint.py)
OUT/img1.png img2.png       768x768 and 672x864: sizes the budget-280 resize keeps, so mtmd's
                            own preprocessing gives the same token counts (256, 252)
OUT/bad.jpg                 a corrupt JPEG;  OUT/clip.mp4  2 s of testsrc at 10 fps (ffmpeg)
Made once: OUT/done holds a digest of the generators and is written last.
"""
import argparse
import hashlib
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = sys.executable


def run(*args, env=None):
    subprocess.run([PY, *args], check=True, env=env)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--llama-src", required=True)
    a = ap.parse_args()
    gen_lm = os.path.join(ROOT, "tools", "gen_lm_gguf.py")
    gen_ck = os.path.join(ROOT, "tools", "gen_checkpoint.py")
    to_gguf = os.path.join(ROOT, "tools", "gguf_from_checkpoint.py")
    vocab = os.path.join(a.llama_src, "models", "ggml-vocab-gemma-4.gguf")
    gguf_py = os.path.join(a.llama_src, "gguf-py")
    h = hashlib.sha256()
    for f in (gen_lm, gen_ck, to_gguf, os.path.abspath(__file__)):
        h.update(open(f, "rb").read())
    digest = h.hexdigest()
    done = os.path.join(a.out, "done")
    if os.path.exists(done) and open(done).read().strip() == digest:
        print("chat fixtures: up to date in", a.out)
        return 0
    os.makedirs(a.out, exist_ok=True)
    o = lambda n: os.path.join(a.out, n)  # noqa: E731
    for cfg in ("e2b", "e4b", "31b", "12b"):
        run(gen_lm, o(f"lm-{cfg}.gguf"), "--config", cfg, "--vocab", vocab, "--gguf-py", gguf_py)
    for q in ("q4_0", "q8_0", "q4_k"):  # llama.cpp's AMX / repacked kernels (test_chat_quant.py)
        run(gen_lm, o(f"lm-31b-{q}.gguf"), "--config", "31b", "--quant", q, "--vocab", vocab,
            "--gguf-py", gguf_py)
    sys.path.insert(0, gguf_py)
    import gguf  # noqa: E402
    w = gguf.GGUFWriter(o("lm-llama.gguf"), "llama")
    w.add_uint32("llama.block_count", 1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    for name, args in (("e2b", ["--config", "tiny", "--text-hidden", "1536"]),
                       ("e4b", ["--config", "tiny", "--text-hidden", "2560"]),
                       ("31b", ["--config", "tiny", "--text-hidden", "512"]),
                       ("12b", ["--config", "unified-tiny", "--text-hidden", "384"])):
        run(gen_ck, o(f"vis-{name}"), *args)
        run(to_gguf, o(f"vis-{name}"), o(f"mmproj-{name}.gguf"), "--outtype", "f16")
    import numpy as np
    from PIL import Image
    for n, (wd, ht) in (("img1.png", (768, 768)), ("img2.png", (672, 864))):
        y, x = np.mgrid[0:ht, 0:wd]
        px = np.stack([x * 255 // wd, y * 255 // ht, ((x + y) * 7) % 256], -1).astype(np.uint8)
        Image.fromarray(px).save(o(n))
    with open(o("bad.jpg"), "wb") as f:
        f.write(b"\xff\xd8\xff\xe0 not a jpeg")
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc=size=320x240:rate=10", "-t", "2", "-pix_fmt", "yuv420p",
                    o("clip.mp4")], check=True)
    with open(done, "w") as f:
        f.write(digest + "\n")
    print("chat fixtures: written to", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
