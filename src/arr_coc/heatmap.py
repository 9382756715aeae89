"""Heatmap: the image with the relevance overlay, the kept cells outlined, and a legend.

Works from an ``Allocation`` (``allocate``) or from any scores/keep pair on a grid (``compress``'s
``last_allocation``). Pillow only.

Example:
    >>> from PIL import Image
    >>> from arr_coc import allocate
    >>> a = allocate(Image.new("RGB", (560, 280), "white"), "title?", budget=10, mode="texture")
    >>> render_heatmap(Image.new("RGB", (560, 280), "white"), a.scores, a.keep).size[0]
    560
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont

from .io import load_image

# A perceptually ordered colour map (dark blue -> teal -> yellow), 5 anchors interpolated to 256 entries.
_ANCHORS = np.array([[48, 18, 59], [40, 120, 200], [30, 190, 150], [170, 220, 50], [250, 235, 40]], dtype=np.float32)
LUT = np.stack([np.interp(np.linspace(0, 4, 256), np.arange(5), _ANCHORS[:, i]) for i in range(3)], 1).astype(np.uint8)
FONT_PATHS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "DejaVuSans.ttf")


def _font(size: int) -> ImageFont.ImageFont:
    for path in FONT_PATHS:
        try:
            return ImageFont.truetype(path, size)
        except OSError:
            continue
    return ImageFont.load_default()


def render_heatmap(
    image,
    scores: np.ndarray,
    keep: torch.Tensor | np.ndarray,
    title: str = "",
    alpha: float = 0.55,
    max_side: int = 1400,
) -> Image.Image:
    """Overlay ``scores`` (rows, cols) on ``image`` and outline the kept cells.

    Args:
        image: anything ``load_image`` accepts; it is stretched to the grid as the model's processor does.
        scores: (rows, cols) relevance.
        keep: kept indices ``r * cols + c``.
        title: a line for the legend (e.g. the query).
        alpha: overlay opacity.
        max_side: the picture is scaled so its longer side is at most this many pixels.

    Returns:
        An RGB image: the overlay on top, a legend strip below.
    """
    scores = np.asarray(scores, dtype=np.float32)
    rows, cols = scores.shape
    img = load_image(image)
    scale = min(1.0, max_side / max(img.width, img.height))
    cell = max(4, round(min(img.width / cols, img.height / rows) * scale))
    w, h = cols * cell, rows * cell
    base = img.resize((w, h), Image.Resampling.BILINEAR)
    lo, hi = float(np.nanmin(scores)), float(np.nanmax(scores))
    norm = np.nan_to_num((scores - lo) / max(hi - lo, 1e-8))
    heat = Image.fromarray(LUT[(norm * 255).astype(np.uint8)]).resize((w, h), Image.Resampling.NEAREST)
    keep_idx = np.asarray(torch.as_tensor(keep).cpu()).astype(int).ravel()
    mask = np.zeros(rows * cols, dtype=bool)
    mask[keep_idx] = True
    mask = mask.reshape(rows, cols)
    # Dropped cells are dimmed so what the model will see stands out.
    dim = Image.fromarray(
        np.where(np.kron(mask, np.ones((cell, cell), bool))[..., None], 255, 110).astype(np.uint8).repeat(3, 2)
    )
    out = Image.blend(base, heat, alpha)
    out = Image.fromarray((np.asarray(out, np.float32) * np.asarray(dim, np.float32) / 255).astype(np.uint8))
    draw = ImageDraw.Draw(out)
    edge = (255, 40, 40)
    for r, c in zip(*np.nonzero(mask), strict=True):
        x0, y0 = c * cell, r * cell
        if r == 0 or not mask[r - 1, c]:
            draw.line([(x0, y0), (x0 + cell - 1, y0)], fill=edge, width=2)
        if r == rows - 1 or not mask[r + 1, c]:
            draw.line([(x0, y0 + cell - 1), (x0 + cell - 1, y0 + cell - 1)], fill=edge, width=2)
        if c == 0 or not mask[r, c - 1]:
            draw.line([(x0, y0), (x0, y0 + cell - 1)], fill=edge, width=2)
        if c == cols - 1 or not mask[r, c + 1]:
            draw.line([(x0 + cell - 1, y0), (x0 + cell - 1, y0 + cell - 1)], fill=edge, width=2)
    return _with_legend(out, int(mask.sum()), rows * cols, title)


def _with_legend(picture: Image.Image, kept: int, total: int, title: str) -> Image.Image:
    size = max(12, min(22, picture.width // 40))
    font = _font(size)
    pad = size // 2
    strip_h = 3 * size + 4 * pad
    canvas = Image.new("RGB", (picture.width, picture.height + strip_h), (255, 255, 255))
    canvas.paste(picture, (0, 0))
    draw = ImageDraw.Draw(canvas)
    y = picture.height + pad
    draw.text(
        (pad, y), f"tokens kept: {kept} / {total} ({100.0 * kept / max(total, 1):.1f}%)", fill=(0, 0, 0), font=font
    )
    bar_x0, bar_w = picture.width - pad - min(260, picture.width // 3), min(260, picture.width // 3)
    bar = Image.fromarray(np.repeat(LUT[None, np.linspace(0, 255, bar_w).astype(int)], size, 0))
    canvas.paste(bar, (bar_x0, y))
    small = _font(size * 3 // 4)
    draw.text((bar_x0, y + size + 2), "low", fill=(0, 0, 0), font=small)
    high = "high relevance"
    draw.text((bar_x0 + bar_w - draw.textlength(high, font=small), y + size + 2), high, fill=(0, 0, 0), font=small)
    draw.rectangle([pad, y + size + pad + 2, pad + size, y + 2 * size + pad + 2], outline=(255, 40, 40), width=2)
    draw.text((pad + size + pad, y + size + pad), "kept token", fill=(0, 0, 0), font=font)
    if title:
        text = title if len(title) <= 120 else title[:117] + "..."
        draw.text((pad, y + 2 * size + 2 * pad), f"query: {text}", fill=(60, 60, 60), font=font)
    return canvas


def check_image_path(path: str | Path) -> Path:
    """``path`` as a ``Path`` if a picture can be written there, else a ``ValueError`` saying why.

    The format follows the suffix (``.png``, ``.jpg``, ``.webp``, ...: any Pillow can write); a path without one, or an
    existing folder, is refused before any work is done.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(
            f"heatmap path {str(path)!r} is a folder; give a file name such as {str(path / 'heatmap.png')!r}"
        )
    Image.init()
    writable = {ext for ext, fmt in Image.registered_extensions().items() if fmt in Image.SAVE}
    if path.suffix.lower() not in writable:
        what = f"has the extension {path.suffix!r}" if path.suffix else "has no extension"
        raise ValueError(
            f"heatmap path {str(path)!r} {what}, which names no picture format; end it in .png (or .jpg, .webp)"
        )
    return path


def save_heatmap(path: str | Path, image, scores: np.ndarray, keep, title: str = "") -> Path:
    """Render and save a heatmap picture (the format follows the suffix: ``check_image_path``); returns the path."""
    path = check_image_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    render_heatmap(image, scores, keep, title).save(path)
    return path
