"""Bad and odd images: a clear ValueError or a documented conversion, never a crash deep inside a library."""

from __future__ import annotations

import io
import struct
import sys
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from PIL import Image

from arr_coc import GridSpec, allocate
from arr_coc.io import load_image, load_image_with_size


def _png_bytes(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _with_fake_size(png: bytes, width: int, height: int) -> bytes:
    """A PNG whose header claims width x height (a decompression bomb as far as the header goes)."""
    ihdr = png[16:29]
    new = struct.pack(">II", width, height) + ihdr[8:]
    crc = struct.pack(">I", zlib.crc32(b"IHDR" + new) & 0xFFFFFFFF)
    return png[:16] + new + crc + png[33:]


def test_corrupt_and_non_images(tmp_path) -> None:
    text = tmp_path / "notes.png"
    text.write_text("this is not an image")
    with pytest.raises(ValueError, match="not an image"):
        load_image(text)
    png = _png_bytes(Image.new("RGB", (64, 64), "red"))
    truncated = tmp_path / "cut.png"
    truncated.write_bytes(png[: len(png) // 2])
    with pytest.raises(ValueError, match="corrupt|truncated|decoded|opened"):
        load_image(truncated)
    with pytest.raises(ValueError, match="does not exist"):
        load_image(tmp_path / "missing.jpg")
    with pytest.raises(ValueError, match="cannot read"):
        load_image(12345)


def test_decompression_bomb_refused_before_decoding() -> None:
    bomb = _with_fake_size(_png_bytes(Image.new("L", (8, 8))), 100_000, 100_000)
    with pytest.raises(ValueError, match="decompression-bomb"):
        load_image(bomb)


def test_pixel_limit_is_per_call_and_pillows_global_is_left_alone(monkeypatch) -> None:
    """Threads with different limits: each call gets its own verdict, and Image.MAX_IMAGE_PIXELS never changes.

    Pillow's own guard is set absurdly low here (a 64 x 64 image is above twice it, which Image.open refuses): our
    loader reads the size from the header and applies only its per-call ``max_pixels_in``.
    """
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    png = _png_bytes(Image.new("RGB", (64, 64), "red"))  # 4096 pixels
    with pytest.raises(Image.DecompressionBombError):
        Image.open(io.BytesIO(png))  # what swapping or keeping Pillow's global would run into

    def one(i: int) -> str:
        limit = 4096 if i % 2 == 0 else 4095
        try:
            return "ok" if load_image(png, max_pixels_in=limit).size == (64, 64) else "wrong size"
        except ValueError as err:
            return "refused" if "decompression-bomb" in str(err) else f"other: {err}"

    seen, done = set(), threading.Event()

    def watch() -> None:  # what every other thread of the process sees while the loads run
        while not done.is_set():
            seen.add(Image.MAX_IMAGE_PIXELS)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so a swap of the global would be seen
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            verdicts = list(pool.map(one, range(400)))
    finally:
        done.set()
        watcher.join()
        sys.setswitchinterval(interval)
    assert verdicts == ["ok" if i % 2 == 0 else "refused" for i in range(400)]
    assert seen == {1000} and Image.MAX_IMAGE_PIXELS == 1000


@pytest.mark.parametrize(
    "img",
    [
        Image.new("L", (30, 20), 128),
        Image.new("LA", (30, 20)),
        Image.new("RGBA", (30, 20), (255, 0, 0, 0)),
        Image.new("CMYK", (30, 20), (0, 255, 0, 0)),
        Image.new("1", (30, 20), 1),
        Image.new("P", (30, 20)),
        Image.new("I;16", (30, 20), 4000),
        Image.new("I", (30, 20), 70000),
        Image.new("F", (30, 20), 0.25),
    ],
    ids=lambda im: im.mode,
)
def test_modes_become_rgb(img: Image.Image) -> None:
    out = load_image(img)
    assert out.mode == "RGB" and out.size == img.size


def test_transparent_becomes_white_and_input_untouched() -> None:
    img = Image.new("RGBA", (4, 4), (255, 0, 0, 0))
    out = load_image(img)
    assert out.getpixel((0, 0)) == (255, 255, 255)
    assert img.mode == "RGBA" and img.getpixel((0, 0)) == (255, 0, 0, 0)


def test_exif_rotation_is_applied() -> None:
    img = Image.new("RGB", (40, 20), "white")
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    buf = io.BytesIO()
    img.save(buf, format="JPEG", exif=exif.tobytes())
    assert load_image(buf.getvalue()).size == (20, 40)


def test_a_pil_image_is_rotated_by_its_exif_and_an_upright_rgb_one_is_not_copied() -> None:
    upright = Image.new("RGB", (40, 20), "white")
    assert load_image_with_size(upright) == (upright, (40, 20))  # nothing to change: the same image, no copy
    img = Image.new("RGB", (40, 20), "white")
    img.putpixel((0, 0), (255, 0, 0))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    img.info["exif"] = exif.tobytes()
    turned, size = load_image_with_size(img)
    assert turned is not img and turned.size == size == (20, 40) and turned.getpixel((19, 0)) == (255, 0, 0)
    assert img.size == (40, 20) and img.getpixel((0, 0)) == (255, 0, 0)  # the caller's image is left as it was


def test_sixteen_bit_png_roundtrip(tmp_path) -> None:
    a = (np.arange(600, dtype=np.uint16).reshape(20, 30) * 100).astype(np.uint16)
    path = tmp_path / "deep.png"
    Image.fromarray(a).save(path)
    out = np.asarray(load_image(path))
    assert out.shape == (20, 30, 3) and out.max() == 255 and out.min() == 0


@pytest.mark.parametrize(
    "array",
    [np.zeros((10, 12), np.uint8), np.random.rand(10, 12, 3), np.zeros((10, 12, 1), np.uint16),
     np.ones((10, 12, 4), np.uint8), np.zeros((5, 5), bool)],
)  # fmt: skip
def test_arrays(array: np.ndarray) -> None:
    out = load_image(array)
    assert out.mode == "RGB" and out.size == (array.shape[1], array.shape[0])


@pytest.mark.parametrize("array", [np.zeros((0, 5)), np.zeros((4, 4, 2)), np.full((3, 3), np.nan)])
def test_bad_arrays(array: np.ndarray) -> None:
    with pytest.raises(ValueError, match="array"):
        load_image(array)


def test_tiny_and_elongated_images() -> None:
    a = allocate(Image.new("RGB", (1, 1)), "what?", budget=4, mode="texture")
    assert a.grid == (2, 2) and a.budget == 4  # min_pixels upscales a 1x1 image to 56x56
    with pytest.raises(ValueError, match="aspect ratio"):
        allocate(Image.new("RGB", (3000, 10)), "what?", budget=4, mode="texture")


def test_large_image_is_fine(tmp_path) -> None:
    path = tmp_path / "big.jpg"
    Image.new("RGB", (6000, 4000), "white").save(path, quality=50)
    a = allocate(path, "title?", budget=0.1, mode="texture")
    assert a.original == (6000, 4000)  # the true size, though the JPEG was decoded at reduced scale
    grid = GridSpec.for_family("qwen2.5-vl").grid_for(4000, 6000)
    assert a.grid == (grid.rows, grid.cols) and a.n_tokens <= 1280
