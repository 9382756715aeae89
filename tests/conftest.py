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


@pytest.fixture(scope="session")
def run_benchmark():
    """``run(script, *argv)``: run ``benchmarks/<script>`` as a reader runs it (its own process, from the repository
    root) and return the finished process; a non-zero exit fails the test with the script's stderr. Tests never
    import a benchmark script."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]

    def run(script: str, *argv: str, timeout: float = 1800) -> subprocess.CompletedProcess:
        cmd = [sys.executable, str(root / "benchmarks" / script), *argv]
        done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"{' '.join(cmd[1:])} exited {done.returncode}:\n{done.stderr[-4000:]}"
        return done

    return run
