"""The layout rule: where an answer sits relative to the text that names it; per-box scores painted onto the grid.

``propagate`` spreads each key's weight to its answer candidates: the same line to its right (a value after its label,
a table row), below it in the same column (a value under its label, a table column), above it (a chart bar's value
label above its axis label) and to its left; siblings of the key (same character shape: "Q3" -> "Q4", "A:" -> "B:")
are the next item of a list rather than its value and get a small share. All weights: ``LayoutConfig``.
``paint_boxes`` maps per-box scores onto the ``rows x cols`` grid."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..config import LayoutConfig
from ..ocr.reader import TextBox
from .lexical import tokens


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
    return CellPainter(boxes, rows, cols, original_size).paint(scores)


class CellPainter:
    """``paint_boxes`` for one page and grid with the boxes' cells found once (``QueryMatcher`` keeps one per page, so
    a page's second question paints its per-box scores with one ``np.maximum.at``: a float32 max of each cell's
    scores).

    Args:
        boxes, rows, cols, original_size: as ``paint_boxes``.

    Example:
        >>> boxes = [TextBox("a", (0, 0, 10, 10)), TextBox("b", (5, 0, 20, 10))]
        >>> CellPainter(boxes, 1, 2, (20, 10)).paint([0.5, 0.25]).tolist()
        [[0.5, 0.25]]
    """

    def __init__(self, boxes: Sequence[TextBox], rows: int, cols: int, original_size: tuple[int, int]) -> None:
        self.rows, self.cols = int(rows), int(cols)
        if self.rows < 1 or self.cols < 1:
            raise ValueError(f"rows and cols must be positive, got {rows}x{cols}")
        width, height = float(original_size[0]), float(original_size[1])
        if width <= 0 or height <= 0:
            raise ValueError(f"original_size must be a positive (width, height), got {original_size}")
        self.n = len(boxes)
        cells: list[np.ndarray] = []
        owners: list[np.ndarray] = []
        if self.n:
            spans = np.array([tb.box for tb in boxes], dtype=np.float64)
            for i, flat in zip(*span_cells(spans, self.rows, self.cols, (width, height)), strict=True):
                cells.append(flat)
                owners.append(np.full(flat.size, i, dtype=np.int64))
        self.cells = np.concatenate(cells) if cells else np.zeros(0, dtype=np.int64)  # (M,) flat cell indices
        self.owners = np.concatenate(owners) if owners else np.zeros(0, dtype=np.int64)  # (M,) whose cell

    def paint(self, scores: Iterable[float]) -> np.ndarray:
        """``paint_boxes(boxes, scores, ...)``: the (rows, cols) float32 map, max where boxes overlap."""
        values = np.clip(np.nan_to_num(np.asarray(list(scores), dtype=np.float64), nan=0.0), 0.0, 1.0)  # (N,)
        if len(values) != self.n:
            raise ValueError(f"one score per box: {self.n} boxes, {len(values)} scores")
        out = np.zeros(self.rows * self.cols, dtype=np.float32)
        v = values[self.owners]  # (M,)
        hit = v > 0.0
        np.maximum.at(out, self.cells[hit], v[hit].astype(np.float32))  # a float32 max: paint_boxes' bits
        return out.reshape(self.rows, self.cols)


def cell_spans(
    boxes: np.ndarray, rows: int, cols: int, original_size: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``paint_boxes``' rule for many boxes at once: which grid cells each ``(x0, y0, x1, y1)`` row of ``boxes``
    (N, 4) touches. Pixel ``(x, y)`` lies in column ``floor(x * cols / W)`` and row ``floor(y * rows / H)``; a box's
    right / bottom edge is exclusive, and a degenerate box still covers one cell.

    Returns:
        ``inside`` (N,) bool (False: the box lies entirely outside the image) and ``r0, r1, c0, c1`` (N,) int64: the
        box touches rows ``r0:r1`` and columns ``c0:c1``.
    """
    width, height = float(original_size[0]), float(original_size[1])
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)  # (N, 4)
    x0, x1 = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    y0, y1 = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    inside = (x1 >= 0) & (y1 >= 0) & (x0 <= width) & (y0 <= height)  # (N,)
    x0, x1 = np.clip(x0, 0, width), np.clip(x1, 0, width)
    y0, y1 = np.clip(y0, 0, height), np.clip(y1, 0, height)
    c0 = np.minimum(cols - 1, np.floor(x0 * cols / width)).astype(np.int64)
    r0 = np.minimum(rows - 1, np.floor(y0 * rows / height)).astype(np.int64)
    c1 = np.maximum(c0 + 1, np.minimum(cols, np.ceil(x1 * cols / width))).astype(np.int64)
    r1 = np.maximum(r0 + 1, np.minimum(rows, np.ceil(y1 * rows / height))).astype(np.int64)
    return inside, r0, r1, c0, c1


def cell_span(
    box: tuple[float, float, float, float], rows: int, cols: int, original_size: tuple[float, float]
) -> tuple[int, int, int, int] | None:
    """``(r0, r1, c0, c1)``: the grid rows ``r0:r1`` and columns ``c0:c1`` a box touches (``cell_spans`` for one
    box), or None when the box lies entirely outside the image."""
    inside, r0, r1, c0, c1 = cell_spans(np.asarray([box], dtype=np.float64), rows, cols, original_size)
    return (int(r0[0]), int(r1[0]), int(c0[0]), int(c1[0])) if inside[0] else None


def word_units(
    boxes: Sequence[TextBox], rows: int, cols: int, original_size: tuple[int, int], pad: float = 0.25
) -> list[np.ndarray]:
    """The cells each recognised word touches: one unit per word, for selection that keeps words whole.

    OCR gives a box per text line (or cell); a word's box is interpolated from its character positions in it
    (characters taken as equally wide) and widened by ``pad`` characters on each side, for the error of that
    estimate. Its cells follow ``paint_boxes``' rule.

    Args:
        boxes: Text boxes in original pixels.
        rows: Grid rows (>= 1).
        cols: Grid columns (>= 1).
        original_size: ``(width, height)`` of the original image.
        pad: Widening of each word box, in character widths (>= 0).

    Returns:
        One int64 array of raster cell indices (``r * cols + c``, ascending) per word that lies in the image.
    """
    if pad < 0:
        raise ValueError(f"pad must be >= 0, got {pad}")
    spans = []  # (x0, y0, x1, y1) of every word, padded
    for tb in boxes:
        x0, y0, x1, y1 = tb.box
        step = (x1 - x0) / max(1, len(tb.text))  # width of one character
        spans.extend(
            (x0 + step * (m.start() - pad), y0, x0 + step * (m.end() + pad), y1) for m in re.finditer(r"\S+", tb.text)
        )
    if not spans:
        return []
    return span_cells(np.asarray(spans, dtype=np.float64), rows, cols, original_size)[1]


def span_cells(
    spans: np.ndarray, rows: int, cols: int, original_size: tuple[float, float]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The raster cells (``r * cols + c``, ascending) each ``(x0, y0, x1, y1)`` row of ``spans`` (N, 4) touches, by
    ``cell_spans``' rule: the indices of the spans that lie in the image, and their cells (one array each)."""
    inside, r0, r1, c0, c1 = cell_spans(spans, rows, cols, original_size)  # (N,) each
    kept = np.flatnonzero(inside)
    return kept, [(np.arange(r0[i], r1[i])[:, None] * cols + np.arange(c0[i], c1[i])[None, :]).ravel() for i in kept]


@dataclass
class Geometry:
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
    def of(cls, boxes: Sequence[TextBox]) -> Geometry:
        arr = np.array([b.box for b in boxes], dtype=np.float64).reshape(-1, 4)
        return cls(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3])


@functools.lru_cache(maxsize=65536)
def shape(text: str) -> str:
    """Character-class shape of a text: letters -> 'a', digits -> '9', runs collapsed ("Q3" -> "a9", "$7.50" ->
    "$9.9", "Due date:" -> "a a:"). Memoised (a pure function of the text: a page's boxes are shaped once)."""
    out: list[str] = []
    for ch in text.strip():
        c = "a" if ch.isalpha() else "9" if ch.isdigit() else " " if ch.isspace() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


class Neighbours:
    """Where ``propagate`` looks from each box of one page as a key, found once per page and box: the boxes it reaches
    right, left, below and above (nearest first, at most ``*_max``, a column cut at its first wide box), their sibling
    factors and the sentence damping. They depend on the page and the layout settings only, so a page's second
    question only adds up the key weights along them.

    Args:
        boxes: the page's N text boxes.
        cfg: the layout settings.
    """

    def __init__(self, boxes: Sequence[TextBox], cfg: LayoutConfig) -> None:
        self.cfg = cfg
        self.n = len(boxes)
        self.g = Geometry.of(boxes)
        self.n_tokens = np.array([len(tokens(b.text)) for b in boxes])  # (N,)
        self.shapes = np.array([shape(b.text) for b in boxes], dtype=object)  # (N,)
        self.colon = np.array([sh.endswith(":") for sh in self.shapes], dtype=bool)  # (N,)
        self._of: dict[int, tuple[float, np.ndarray, np.ndarray, list[int], list[int], list[int], list[int]]] = {}

    def of(self, i: int) -> tuple[float, np.ndarray, np.ndarray, list[int], list[int], list[int], list[int]]:
        """Box ``i`` as a key: (sentence damping, horizontal and vertical sibling factors (N,), the boxes to its
        right, left, below and above that receive a share, nearest first)."""
        found = self._of.get(i)
        if found is None:
            found = self._of[i] = self._find(i)
        return found

    def _find(self, i: int) -> tuple[float, np.ndarray, np.ndarray, list[int], list[int], list[int], list[int]]:
        cfg, g = self.cfg, self.g
        # siblings (same shape as the key: the next axis label, the next header, the next "Label:") are not its
        # answer; they keep a small share so a row of headers still reads as a row
        sib = (self.shapes == self.shapes[i]) | (self.colon & self.colon[i])  # (N,)
        h_w = np.where(sib, cfg.sibling_horizontal, 1.0)  # (N,)
        v_w = np.where(sib, cfg.sibling_vertical, 1.0)  # (N,)
        hi = g.h[i]
        v_overlap = np.minimum(g.y1, g.y1[i]) - np.maximum(g.y0, g.y0[i])  # (N,)
        same_line = v_overlap >= cfg.same_line * np.minimum(g.h, hi)  # (N,)
        same_line[i] = False
        pad = cfg.column_pad * hi
        h_overlap = np.minimum(g.x1, g.x1[i] + pad) - np.maximum(g.x0, g.x0[i] - pad)  # (N,)
        same_col = (h_overlap > 0) & ~same_line  # (N,)
        same_col[i] = False
        # a sentence's neighbour is another column
        damp = cfg.sentence_damp if self.n_tokens[i] > cfg.sentence_tokens else 1.0
        right = np.flatnonzero(same_line & (g.cx > g.cx[i]))
        right = right[np.argsort(g.x0[right])]
        left = np.flatnonzero(same_line & (g.cx < g.cx[i]))
        left = left[np.argsort(-g.x1[left])]
        # a key in a row (table header, "Label: value") stops at the first much wider box: another region
        wide = (g.x1 - g.x0) > cfg.cross_width * (g.x1[i] - g.x0[i] + 2 * pad) if same_line.any() else None
        below = np.flatnonzero(same_col & (g.cy > g.cy[i]))
        below = _until_wide(below[np.argsort(g.y0[below])], wide, cfg.cross_width)
        above = np.flatnonzero(same_col & (g.cy < g.cy[i]))
        above = _until_wide(above[np.argsort(-g.y1[above])], wide, cfg.cross_width)
        return (
            damp,
            h_w,
            v_w,
            right[: cfg.right_max].tolist(),
            left[: cfg.left_max].tolist(),
            below[: cfg.below_max].tolist(),
            above[: cfg.above_max].tolist(),
        )


def propagate(
    boxes: Sequence[TextBox],
    keys: np.ndarray,
    cfg: LayoutConfig,
    contributions: bool = False,
    neighbours: Neighbours | None = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Layout rule: spread key weights to where answers sit; additive, then scaled to the strongest key.

    For each key i (``keys[i] > 0``) and each direction (right, left, below, above), the r-th nearest box j in that
    direction (0-based) receives ``keys[i] * gain * decay ** r * factor_j`` for at most ``max`` boxes, where
    ``factor_j`` is ``sibling_horizontal`` / ``sibling_vertical`` for siblings of the key and 1 otherwise, and
    right/left contributions of sentence-like keys (more than ``sentence_tokens`` tokens) are scaled by
    ``sentence_damp``. "Same line": vertical overlap at least ``same_line`` times the smaller height; "same column":
    horizontal overlap with the key widened by ``column_pad`` key heights on each side, not on the same line. A key
    with same-line neighbours (a table header, a "Label: value" row) reaches below/above only up to the first box
    wider than ``cross_width`` times its widened extent: a paragraph under a table is not the column's next cell.

    Args:
        boxes: N text boxes.
        keys: (N,) key weights in [0, 1].
        cfg: Layout settings.
        contributions: also return who gave what (the evidence chain from a candidate back to its keys).
        neighbours: the page's ``Neighbours`` for ``cfg`` when the caller keeps them (a page's second question
            finds no neighbour again); None: found here.

    Returns:
        (N,) float32 candidate scores; their maximum equals ``keys.max()`` (0 everywhere when nothing receives any).
        With ``contributions``, also the K key indices (int64, ascending) and a (K, N) float32 array: entry (k, j)
        is what key ``givers[k]`` gave box j, on the scale of the scores (K x N, not N x N: a page of thousands of
        boxes has few keys).
    """
    nb = neighbours if neighbours is not None else Neighbours(boxes, cfg)
    if nb.n != len(boxes) or nb.cfg != cfg:
        raise ValueError(f"neighbours of {nb.n} boxes (or another LayoutConfig) given for {len(boxes)} boxes")
    n = len(boxes)
    givers = np.flatnonzero(keys > 0)  # (K,)
    contrib = np.zeros((givers.size, n), dtype=np.float64)  # (K keys, N targets)
    for row, i in enumerate(givers):
        damp, h_w, v_w, right, left, below, above = nb.of(int(i))
        k = float(keys[i])
        acc = contrib[row]  # (N,) a view: what key i gives
        for r, j in enumerate(right):
            acc[j] += k * damp * h_w[j] * cfg.right_gain * cfg.right_decay**r
        for r, j in enumerate(left):
            acc[j] += k * damp * h_w[j] * cfg.left_gain * cfg.left_decay**r
        for r, j in enumerate(below):
            acc[j] += k * v_w[j] * cfg.below_gain * cfg.below_decay**r
        for r, j in enumerate(above):
            acc[j] += k * v_w[j] * cfg.above_gain * cfg.above_decay**r
    total = contrib.sum(0)  # (N,)
    top = total.max() if n else 0.0
    scale = float(keys.max()) / top if top > 0 else 0.0
    scores = (total * scale).astype(np.float32)
    return (scores, givers, (contrib * scale).astype(np.float32)) if contributions else scores


def _until_wide(order: np.ndarray, wide: np.ndarray | None, cross_width: float) -> np.ndarray:
    """``order`` (nearest first) cut before its first wide box (``wide`` None or ``cross_width`` 0: uncut)."""
    if wide is None or cross_width <= 0 or order.size == 0:
        return order
    hits = np.flatnonzero(wide[order])
    return order[: hits[0]] if hits.size else order
