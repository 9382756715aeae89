"""Shared fixtures: small images drawn on the fly (no files, no network)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.truetype(FONT, size)
    except OSError:
        return ImageFont.load_default()


@pytest.fixture
def form_image() -> Image.Image:
    """A small key-value form: dark text on white paper."""
    img = Image.new("RGB", (700, 500), "white")
    d = ImageDraw.Draw(img)
    f = font(26)
    d.text((40, 40), "ACME Supplies Ltd.", fill="black", font=font(34))
    d.text((40, 150), "Invoice No:", fill="black", font=f)
    d.text((330, 150), "4711", fill="black", font=f)
    d.text((40, 230), "Date:", fill="black", font=f)
    d.text((330, 230), "2024-03-01", fill="black", font=f)
    d.text((40, 310), "Amount due:", fill="black", font=f)
    d.text((330, 310), "$1,234.00", fill="black", font=f)
    return img


@pytest.fixture
def noise_image() -> Image.Image:
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 256, (300, 420, 3), dtype=np.uint8))


@pytest.fixture(scope="session")
def tiny_checkpoint_folder(tmp_path_factory):
    """``folder(family, max_pixels=None)``: a tiny checkpoint (``arr_coc.testing.tiny_checkpoint``), written once."""
    made = {}

    def folder(family: str, max_pixels: int | None = None):
        key = (family, max_pixels)
        if key not in made:
            from arr_coc.testing import tiny_checkpoint

            path = tmp_path_factory.mktemp(f"tiny-{family}-{max_pixels or 'default'}")
            made[key] = tiny_checkpoint(family, path, max_pixels=max_pixels)
        return made[key]

    return folder
