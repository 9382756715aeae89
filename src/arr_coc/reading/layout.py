"""Layout: box geometry, the character-class shape of a text (siblings), and painting per-box scores onto the
visual-token grid."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .ocr import TextBox


def paint_boxes(
    boxes: Sequence[TextBox],
    scores: Iterable[float],
    rows: int,
    cols: int,
    original_size: tuple[int, int],
) -> np.ndarray:
    """Paint per-box scores onto the ``rows x cols`` token grid (max where boxes overlap).

    A box covers every cell it overlaps: original pixel ``(x, y)`` lies in column ``floor(x * cols / W)`` and row
    ``floor(y * rows / H)``; a box's right/bottom edge is exclusive, and a degenerate box still covers one cell.

    Args:
        boxes: Text boxes in original pixels (clipped to the image; boxes entirely outside it are ignored).
        scores: One score per box, clipped to [0, 1].
        rows: Grid rows (>= 1).
        cols: Grid columns (>= 1).
        original_size: ``(width, height)`` of the original image, as PIL's ``Image.size``.

    Returns:
        ``(rows, cols)`` float32 map in [0, 1]; 0 wherever no box lies.
    """
    rows, cols = int(rows), int(cols)
    if rows < 1 or cols < 1:
        raise ValueError(f"rows and cols must be positive, got {rows}x{cols}")
    width, height = float(original_size[0]), float(original_size[1])
    if width <= 0 or height <= 0:
        raise ValueError(f"original_size must be a positive (width, height), got {original_size}")
    out = np.zeros((rows, cols), dtype=np.float32)
    for tb, s in zip(boxes, scores, strict=True):
        s = float(np.clip(np.nan_to_num(s, nan=0.0), 0.0, 1.0))
        if s <= 0.0:
            continue
        x0, y0, x1, y1 = tb.box
        x0, x1 = sorted((x0, x1))
        y0, y1 = sorted((y0, y1))
        if x1 < 0 or y1 < 0 or x0 > width or y0 > height:
            continue  # entirely outside the image
        x0, x1 = sorted((min(max(x0, 0.0), width), min(max(x1, 0.0), width)))
        y0, y1 = sorted((min(max(y0, 0.0), height), min(max(y1, 0.0), height)))
        c0 = min(cols - 1, int(math.floor(x0 * cols / width)))
        r0 = min(rows - 1, int(math.floor(y0 * rows / height)))
        c1 = max(c0 + 1, min(cols, int(math.ceil(x1 * cols / width))))
        r1 = max(r0 + 1, min(rows, int(math.ceil(y1 * rows / height))))
        region = out[r0:r1, c0:c1]
        np.maximum(region, s, out=region)
    return out


@dataclass
class _Geometry:
    """Box geometry as arrays, for vectorised neighbour search."""

    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    h: np.ndarray = field(init=False)
    cx: np.ndarray = field(init=False)
    cy: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.h = np.maximum(self.y1 - self.y0, 1.0)
        self.cx = (self.x0 + self.x1) / 2
        self.cy = (self.y0 + self.y1) / 2

    @classmethod
    def of(cls, boxes: Sequence[TextBox]) -> _Geometry:
        arr = np.array([b.box for b in boxes], dtype=np.float64).reshape(-1, 4)
        return cls(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3])


def _shape(text: str) -> str:
    """Character-class shape of a text: letters -> 'a', digits -> '9', runs collapsed ("Q3" -> "a9", "$7.50" ->
    "$9.9", "Due date:" -> "a a:")."""
    out: list[str] = []
    for ch in text.strip():
        c = "a" if ch.isalpha() else "9" if ch.isdigit() else " " if ch.isspace() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)
