#!/usr/bin/python3
"""make_demo_image.py OUT.png [SIDE] - a 640x427 test picture for `make demo` (sky, sun, hills, a
house), drawn with Pillow so the demo needs no downloaded image; with SIDE, stretched to a
SIDE x SIDE square (`make bench-chat` uses 768). The format follows OUT's suffix. Deterministic."""
import sys

from PIL import Image, ImageDraw


def main():
    w, h = 640, 427
    img = Image.new("RGB", (w, h))
    d = ImageDraw.Draw(img)
    for y in range(h):  # sky gradient
        t = y / h
        d.line([(0, y), (w, y)], fill=(int(90 + 100 * t), int(150 + 70 * t), 235))
    d.ellipse([480, 40, 560, 120], fill=(255, 220, 90))
    d.polygon([(0, 300), (180, 210), (360, 290), (520, 220), (640, 280), (640, 427), (0, 427)],
              fill=(70, 140, 60))
    d.rectangle([250, 250, 370, 340], fill=(200, 80, 60))
    d.polygon([(240, 250), (310, 200), (380, 250)], fill=(120, 50, 40))
    d.rectangle([295, 295, 325, 340], fill=(90, 60, 30))
    if len(sys.argv) > 2:
        side = int(sys.argv[2])
        img = img.resize((side, side), Image.BICUBIC)
    img.save(sys.argv[1])


if __name__ == "__main__":
    main()
