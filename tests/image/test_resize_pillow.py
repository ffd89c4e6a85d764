"""test_resize_pillow.py - the C resize against Pillow 9.4's resize(BICUBIC), byte for byte.

About 210 cases (seeded): random sizes up and down, Gemma 4 target sizes for every budget, the edge
sizes (docs/PREPROCESSING.md §8), extreme aspect ratios, and tall images (h > 100 w) in both resize
orders (Pillow >= 12.2 is emulated with two box resizes in Pillow 9.4, docs/PREPROCESSING.md §6.4).
Contents: noise, gradient, hard edges, gradient + noise, blurred noise. The C side (image_tool
resize, argv[1]) also checks that its portable kernels and its bottom-up streaming path give the
same bytes. Tolerance: 0. A mismatch prints the first differing pixel.
usage: pytest test_resize_pillow.py --arg=IMAGE_TOOL
"""
import os
import struct
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyutil  # noqa: E402  (also puts tests/image on sys.path)
import pillow_ref as ref  # noqa: E402

RNG = np.random.default_rng(7)
KINDS = ("noise", "gradient", "edges", "photo", "smooth")
CASES = []  # (group, (in_w, in_h), (out_w, out_h), order)


def loguniform(lo, hi):
    return int(round(np.exp(RNG.uniform(np.log(lo), np.log(hi)))))


def random_size(max_side, max_area):
    while True:
        w, h = loguniform(1, max_side), loguniform(1, max_side)
        if w * h <= max_area:
            return w, h


def build():
    for _ in range(90):
        w, h = random_size(1500, 300_000)
        while True:
            ow = max(1, min(2000, int(round(w * np.exp(RNG.uniform(-2.1, 2.1))))))
            oh = max(1, min(2000, int(round(h * np.exp(RNG.uniform(-2.1, 2.1))))))
            if ow * oh <= 400_000 and (ow, oh) != (w, h):
                break
        CASES.append(("random", (w, h), (ow, oh), "9"))
    for budget in (70, 140, 280, 560, 1120):
        for _ in range(12):
            w, h = random_size(1500, 250_000)
            th, tw = ref.target_size(h, w, budget)
            CASES.append((f"gemma@{budget}", (w, h), (tw, th), "9"))
    for (w, h), (ow, oh) in [((1, 1), (1, 1)), ((1, 1), (7, 5)), ((5, 3), (1, 1)),
                             ((5, 3), (768, 816)), ((5, 3), (2, 2)), ((2, 2), (3, 3)),
                             ((7, 7), (3, 3)), ((3, 3), (7, 7)), ((1024, 768), (912, 672)),
                             ((640, 480), (912, 672)), ((1, 7), (1, 3)), ((7, 1), (3, 1)),
                             ((2, 1), (1, 1)), ((1, 2), (48, 1440)), ((33, 1), (48, 48)),
                             ((100, 100), (100, 48)), ((100, 100), (48, 100)),
                             ((400, 300), (400, 300))]:
        CASES.append(("edge sizes", (w, h), (ow, oh), "9"))
    for (w, h), (ow, oh) in [((3000, 40), (1440, 48)), ((40, 3000), (48, 1440)),
                             ((3000, 40), (300, 4)), ((40, 3000), (4, 300)),
                             ((1, 2000), (48, 1440)), ((2000, 1), (1440, 48)),
                             ((9000, 30), (1440, 48)), ((4000, 1), (3360, 48)),
                             ((2500, 3), (13440, 48)), ((1200, 9), (48, 48)),
                             ((4000, 20), (48, 48))]:
        CASES.append(("extreme aspect", (w, h), (ow, oh), "9"))
    for budget, (w, h) in [(280, (4000, 20)), (70, (3500, 30)), (1120, (2, 3000))]:
        th, tw = ref.target_size(h, w, budget)
        CASES.append(("extreme aspect", (w, h), (tw, th), "9"))
    tall = [(30, 9000), (20, 4000), (7, 1500), (12, 2500), (3, 1000), (1, 800), (55, 6100),
            (9, 4000), (2, 333), (16, 1700)]
    for i, (w, h) in enumerate(tall):
        budget = (70, 140, 280, 560, 1120)[i % 5]
        th, tw = ref.target_size(h, w, budget)
        for order in ("9", "12.2"):
            CASES.append((f"tall, Pillow {'>= 12.2' if order == '12.2' else '9-12.1'}", (w, h),
                          (tw, th), order))
    for (w, h), (ow, oh) in [((30, 9000), (15, 100)), ((2, 500), (5, 70))]:
        for order in ("9", "12.2"):
            CASES.append((f"tall, Pillow {'>= 12.2' if order == '12.2' else '9-12.1'}", (w, h),
                          (ow, oh), order))
    # Pillow >= 13 runs the vertical pass first when the height loses more than twice as many
    # pixels as the width: widths that grow, stay or shrink a little while the height shrinks,
    # the rule's edge (h - oh == 2 (w - ow)) and its neighbours, and cases it leaves alone.
    for (w, h), (ow, oh) in [((451, 300), (480, 288)), ((300, 451), (288, 432)),
                             ((640, 480), (672, 432)), ((200, 900), (240, 96)),
                             ((451, 300), (440, 200)), ((451, 300), (440, 280)),
                             ((451, 300), (440, 278)), ((451, 300), (441, 280)),
                             ((1000, 999), (48, 48)), ((97, 64), (144, 48)),
                             ((3000, 4000), (576, 768)), ((64, 97), (48, 144))]:
        for order in ("9", "13"):
            CASES.append((f"Pillow {'>= 13' if order == '13' else '9-12.1'} order", (w, h),
                          (ow, oh), order))


def test_resize_pillow():
    tool = pyutil.arg(1)
    build()
    t0 = time.time()
    inputs = []
    blob = bytearray()
    for i, (g, (w, h), (ow, oh), order) in enumerate(CASES):
        a = ref.content(KINDS[i % len(KINDS)], h, w, RNG)
        inputs.append(a)
        blob += struct.pack("<5I", w, h, ow, oh, {"9": 0, "12.2": 1, "13": 3}[order]) + a.tobytes()
    r = subprocess.run([tool, "resize"], input=bytes(blob), capture_output=True)
    assert r.returncode == 0, r.stderr.decode()
    out = memoryview(r.stdout)
    pos, groups, fails = 0, {}, 0
    kinds = {}
    order_matters = {"12.2": [0, 0], "13": [0, 0]}
    for i, (g, (w, h), (ow, oh), order) in enumerate(CASES):
        status = out[pos]
        n = ow * oh * 3
        ours = np.frombuffer(out[pos + 1:pos + 1 + n], np.uint8).reshape(oh, ow, 3)
        pos += 1 + n
        exp = ref.pil_resize(inputs[i], ow, oh, order)
        if order != "9":  # does the order change Pillow's bytes here? (it must, sometimes)
            order_matters[order][1] += 1
            order_matters[order][0] += bool((ref.pil_resize(inputs[i], ow, oh, "9") != exp).any())
        msg = ""
        if status:
            msg = ("portable kernels differ " if status & 1 else "") + \
                  ("bottom-up streaming differs " if status & 2 else "") + \
                  ("resize failed" if status & 4 else "")
        elif (ours != exp).any():
            d = np.argwhere(ours != exp)
            y, x = d[0][:2]
            msg = (f"first differing pixel (x={x}, y={y}): ours {tuple(ours[y, x])} vs Pillow "
                   f"{tuple(exp[y, x])}; {len(d)} differing bytes")
        kind = KINDS[i % len(KINDS)]
        for key, table in ((g, groups), (kind, kinds)):
            s = table.setdefault(key, [0, 0])
            s[1] += 1
            s[0] += not msg
        if msg:
            fails += 1
            print(f"MISMATCH case {i} {g} {w}x{h} -> {ow}x{oh} ({kind}, order {order}): {msg}")
    for key, (ok, n) in list(groups.items()) + list(kinds.items()):
        print(f"{key:26s} {ok}/{n} identical to Pillow")
    for order, (n_diff, n) in order_matters.items():
        print(f"Pillow {order} order changes the bytes in {n_diff}/{n} of its cases")
        if n_diff == 0:
            print(f"FAIL: no case distinguishes the Pillow {order} order from Pillow 9's")
            fails += 1
    print(f"all: {len(CASES) - fails}/{len(CASES)} identical ({time.time() - t0:.1f} s)")
    assert not fails, f"{fails} of {len(CASES)} cases differ from Pillow (printed above)"
