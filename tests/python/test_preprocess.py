"""gemma4_vision.preprocess against `g4v preprocess` (the same bytes, every option) and against
Pillow itself (the installed Pillow 9.x: its BICUBIC resize after exif_transpose is the image
processor's PIL backend, so pillow="9" must reproduce it byte for byte), and its errors."""
import os

import numpy as np
import pytest
from PIL import Image, ImageOps

import gemma4_vision as g4
from conftest import g4v, write_images


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("pre")
    paths = write_images(str(d), 5, sizes=[(300, 170), (64, 900), (120, 80), (57, 61), (480, 200)])
    # an EXIF-rotated JPEG (orientation 6: rotate 90 degrees clockwise to view)
    a = np.random.default_rng(3).integers(0, 256, (90, 160, 3), dtype=np.uint8)
    exif = Image.Exif()
    exif[0x0112] = 6
    p = os.path.join(str(d), "rot6.jpg")
    Image.fromarray(a).save(p, exif=exif.tobytes(), quality=95)
    return paths + [p]


def cli(path, out, *opts):
    g4v("preprocess", path, *opts, "-o", out)
    return (np.asarray(Image.open(out + ".png").convert("RGB")), np.load(out + ".npy"),
            np.load(out + ".positions.npy"))


@pytest.mark.parametrize("opts", [
    dict(tokens=70), dict(tokens=280, exif=False), dict(tokens=1120, pillow="9"),
    dict(tokens=140, resize="torchvision"), dict(tokens=560, pillow="12.2")])
def test_matches_cli(images, tmp_path, opts):
    args = ["--tokens", str(opts["tokens"])]
    if opts.get("exif") is False:
        args.append("--no-exif")
    if "resize" in opts:
        args += ["--resize", opts["resize"]]
    if "pillow" in opts:
        args += ["--pillow", opts["pillow"]]
    for i, path in enumerate(images):
        p = g4.preprocess(path, **opts)
        rgb, patches, pos = cli(path, str(tmp_path / f"o{i}"), *args)
        assert p.rgb.shape == (p.height, p.width, 3) and p.width % 48 == 0 and p.height % 48 == 0
        assert np.array_equal(p.rgb, rgb), path
        assert p.patches.dtype == np.float32 and np.array_equal(p.patches, patches), path
        assert p.positions.dtype == np.int32 and np.array_equal(p.positions, pos), path
        assert p.n_patches == (p.width // 16) * (p.height // 16)


def test_matches_pillow(images):
    """The installed Pillow (9.x) decodes, rotates and resizes: the same bytes with pillow="9";
    the patches are those bytes cut into 16x16 blocks over 255."""
    assert Image.__version__.split(".")[0] in ("9", "10", "11", "12")
    for path in images:
        p = g4.preprocess(path, tokens=280, pillow="9")
        im = ImageOps.exif_transpose(Image.open(path)).convert("RGB")
        assert p.oriented_size == im.size, path
        want = np.asarray(im.resize((p.width, p.height), Image.BICUBIC))
        assert np.array_equal(p.rgb, want), path
        gh, gw = p.height // 16, p.width // 16
        blocks = want.reshape(gh, 16, gw, 16, 3).transpose(0, 2, 1, 3, 4).reshape(gh * gw, 768)
        assert np.array_equal(p.patches, (blocks / 255.0).astype(np.float32)), path
        cols, rows = np.meshgrid(np.arange(gw), np.arange(gh))
        assert np.array_equal(p.positions, np.stack([cols.ravel(), rows.ravel()], 1)), path
    rot = g4.preprocess(images[-1])
    assert rot.format == "JPEG" and rot.orientation == 6
    assert rot.src_size == (160, 90) and rot.oriented_size == (90, 160)
    assert g4.preprocess(images[-1], exif=False).orientation == 1


def test_errors(images, tmp_path):
    with pytest.raises(g4.G4VError) as e:
        g4.preprocess(str(tmp_path / "missing.png"))
    assert e.value.status_name == "G4V_ERR_IO"
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    with pytest.raises(g4.G4VError) as e:
        g4.preprocess(str(bad))
    assert e.value.status_name == "G4V_ERR_IMAGE"
    with pytest.raises(g4.G4VError) as e:
        g4.preprocess(images[0], max_pixels=1000)
    assert e.value.status_name == "G4V_ERR_LIMIT" and "max_pixels" in str(e.value)
    with pytest.raises(g4.G4VError) as e:
        g4.preprocess(images[0], resize="torchvision", pillow="9")
    assert e.value.status_name == "G4V_ERR_ARG"
    with pytest.raises(ValueError):
        g4.preprocess(images[0], tokens=300)
    with pytest.raises(ValueError):
        g4.preprocess(images[0], pillow="8")
    with pytest.raises(ValueError):
        g4.preprocess(images[0], resize="nearest")
