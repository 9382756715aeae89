"""Columns on a page the layout read as one: the gutters between the OCR boxes themselves (a tilted scan's tall
boxes, a narrow gutter the reader boxed across), and the page again with each column's boxes moved one page width
apart (``separate_columns``; ``unshift`` moves a box back). Split out of ``sections`` (issue 40, round 5); only the
named-section path uses the moved layout."""

from __future__ import annotations

import numpy as np

from .page import Layout

NARROW = 0.6  # a column's line is narrower than this share of the page's text width
PROSE_SHARE = 0.8  # where no gutter shows, again from the narrow lines at least this share of their median length
GUTTER_SHARE = 0.1  # a gutter is covered by at most this share of the narrow lines (an author block) ...
GUTTER_MIN = 1.0  # ... and at least this many body line heights wide ...
CUT_START = 3.0  # a box is cut at a gutter where it starts within this many line heights of its column's edge
SIDE_SHARE = 0.15  # ... with at least this share of the narrow lines wholly on each side


def _gutter_cuts(narrow: list, x0: float, width: float, h: float) -> list[float]:
    """The x of each gutter among ``narrow`` lines: a run at least ``GUTTER_MIN`` line heights wide that at most
    ``GUTTER_SHARE`` of them cover, with ``SIDE_SHARE`` of them wholly on each side."""
    n = int(width) + 1
    cuts: list[float] = []
    for x, end in _free_runs([(ln.box[0], ln.box[2]) for ln in narrow], x0, n):
        cut = x0 + (x + end) / 2
        left = sum(1 for ln in narrow if ln.box[2] <= cut)
        right = sum(1 for ln in narrow if ln.box[0] >= cut)
        if x > 0 and end < n and end - x >= GUTTER_MIN * h and min(left, right) >= SIDE_SHARE * len(narrow):
            cuts.append(cut)
    return cuts


def _free_runs(spans: list[tuple[float, float]], lo: float, n: int) -> list[tuple[int, int]]:
    """The runs ``[x, end)`` of the ``n`` whole x from ``lo`` that at most ``GUTTER_SHARE`` of ``spans`` (page x
    ranges) cover (at most one where there are few), left to right."""
    cover = np.zeros(n + 1, dtype=np.int32)
    for u, v in spans:
        cover[int(u - lo)] += 1
        cover[min(n, int(v - lo) + 1)] -= 1
    free = np.cumsum(cover)[:n] <= max(1, int(GUTTER_SHARE * len(spans)))
    runs, x = [], 0
    while x < n:
        if not free[x]:
            x += 1
            continue
        end = x
        while end < n and free[end]:
            end += 1
        runs.append((x, end))
        x = end
    return runs


SKEWS = np.linspace(-0.03, 0.03, 25)  # slopes tried for a scanned page's tilt (about +-1.7 degrees)
SPLIT_SIDE = SIDE_SHARE  # a gutter between OCR boxes has this share of the narrow ones wholly on each side
EDGE, EDGE_LINES = 2.0, 3  # at least 3 prose lines end (begin) within 2 line heights of a gutter on each side
TRIM = 0.3  # line heights trimmed off both ends of each box when looking for a gutter between boxes


def _box_gutters(boxes: list[tuple[float, ...]], h: float) -> tuple[float, list[float]]:
    """(slope, gutters): the x of each gutter between the page's OCR boxes (after ``x - slope * y``, the page's
    tilt undone, and each narrow box trimmed by ``TRIM`` line heights at both ends: a tilted line's box, and the
    reader's margin round it, reach into a narrow gutter): a run of x that at most ``GUTTER_SHARE`` of the narrow
    boxes cover, with ``SPLIT_SIDE`` of them wholly on each side, and ``EDGE_LINES`` lines of a column's prose (about
    the usual narrow line's width: a table's cells are shorter) ending (beginning) within ``EDGE`` line heights of
    it on each side; the slope whose gutters are widest."""
    x0 = min(b[0] for b in boxes)
    width = max(b[2] for b in boxes) - x0
    narrow = [b for b in boxes if b[2] - b[0] < NARROW * width and b[2] - b[0] > 2 * TRIM * h + 1]
    if len(narrow) < 8:
        return 0.0, []
    usual = float(np.median([b[2] - b[0] for b in narrow])) - 2 * TRIM * h
    best: tuple[float, float, list] = (0.0, 0.0, [])
    for slope in SKEWS:
        sh = [
            (b[0] + TRIM * h - slope * (b[1] + b[3]) / 2, b[2] - TRIM * h - slope * (b[1] + b[3]) / 2) for b in narrow
        ]
        lo = min(u for u, _ in sh)
        n = int(max(v for _, v in sh) - lo) + 2
        # a column's prose on each side of a gutter: lines of about the usual narrow line's width that end (begin)
        # at it (a table's cells are shorter)
        wide = [(u, v) for u, v in sh if v - u >= PROSE_SHARE * usual]
        runs = []
        for x, end in _free_runs(sh, lo, n):
            a, b = lo + x, lo + end
            left = sum(1 for _, v in sh if v <= b)
            right = sum(1 for u, _ in sh if u >= a)
            ends = sum(1 for u, v in wide if a - EDGE * h <= v <= b)
            starts = sum(1 for u, v in wide if a <= u <= b + EDGE * h)
            if x > 0 and end < n and min(left, right) >= SPLIT_SIDE * len(narrow) and min(ends, starts) >= EDGE_LINES:
                runs.append((a, b))
        total = sum(b - a for a, b in runs)
        if total > best[0]:
            best = (total, float(slope), [(a + b) / 2 for a, b in runs])
    return best[1], best[2]


def separate_columns(layout: Layout) -> tuple[Layout, float] | None:
    """``(layout, shift)``: the page again with the OCR boxes of column k moved ``k * shift`` to the right, where
    the layout joined boxes of two columns into one line (None where it joined none). The reader boxes each
    column's line apart, but on a scanned page (tilted: every box is taller than its text) with justified text the
    layout reads two boxes side by side on one baseline as one line; the gutter shows between the boxes themselves
    (``_box_gutters``), and on a narrow gutter the reader itself may box two columns' lines as one, which is cut
    at the gutter (``_cut``) where it lies below the top of the columns' prose (``_column_tops``); a box across a
    gutter above it (a title, an abstract) belongs to no column and is left out. A box is in the column its centre
    lies in; ``shift`` exceeds the page's width, so a box of the moved layout lies in column ``x0 // shift``
    (``unshift``)."""
    pairs = [(t, tuple(float(v) for v in b)) for t, b in layout.boxes]
    if len(pairs) < 8:
        return None
    h = max(1.0, layout.body_height)
    slope, gutters = _box_gutters([b for _, b in pairs], h)
    if not gutters:
        return None

    def crossed(b: tuple[float, ...]) -> list[float]:
        off = slope * (b[1] + b[3]) / 2
        return [g for g in gutters if b[0] + TRIM * h - off < g < b[2] - TRIM * h - off]

    def column(b: tuple[float, ...]) -> int:
        return sum(1 for g in gutters if g < (b[0] + b[2]) / 2 - slope * (b[1] + b[3]) / 2)

    joined = any(len({column(pairs[i][1]) for i in ln.boxes}) > 1 for ln in layout.lines)
    tops = _column_tops([b for _, b in pairs], gutters, slope)
    edges = [min(b[0] for _, b in pairs), *gutters, max(b[2] for _, b in pairs)]
    pieces: list[tuple[str, tuple]] = []
    for text, b in pairs:
        across = crossed(b)
        if not across:
            pieces.append((text, b))
        elif b[1] >= max(tops[g] for g in across) - 0.5 * h and _spans_columns(b, edges, slope, h):
            pieces += _cut(text, b, across, slope, h)  # two columns' lines the reader boxed as one
            joined = True
        # else: a title, an abstract, a wide figure or a wide table's row above or across the columns: in no column
    if not joined:
        return None
    from .structure import analyse

    shift = float(np.ceil(max(b[2] for _, b in pairs))) + 1.0
    moved = [(t, (b[0] + column(b) * shift, b[1], b[2] + column(b) * shift, b[3])) for t, b in pieces]
    return analyse(moved), shift


def _column_tops(boxes: list[tuple[float, ...]], gutters: list[float], slope: float) -> dict[float, float]:
    """For each gutter, the y where the prose of the columns on both its sides has begun: the later of the two
    columns' first line at least ``PROSE_SHARE`` of the usual narrow line's width (a running header, a heading
    or a figure's label is shorter)."""
    width = max(b[2] for b in boxes) - min(b[0] for b in boxes)
    narrow = [b for b in boxes if b[2] - b[0] < NARROW * width]
    usual = float(np.median([b[2] - b[0] for b in narrow])) if narrow else 0.0
    prose = [b for b in narrow if b[2] - b[0] >= PROSE_SHARE * usual]
    edges = [-np.inf, *gutters, np.inf]
    out = {}
    for k, g in enumerate(gutters):
        sides = []
        for lo, hi in ((edges[k], g), (g, edges[k + 2])):
            ys = [b[1] for b in prose if lo < (b[0] + b[2]) / 2 - slope * (b[1] + b[3]) / 2 < hi]
            sides.append(min(ys) if ys else np.inf)
        out[g] = max(sides)
    return out


def _spans_columns(box: tuple, edges: list[float], slope: float, h: float) -> bool:
    """``box``, across a gutter, starts near its column's left edge (``edges``: the text's left edge, the gutters,
    its right edge; within ``CUT_START`` line heights): two columns' lines the reader boxed as one, not a wide
    table's row or a figure's label that starts inside a column and crosses the gutter."""
    off = slope * (box[1] + box[3]) / 2
    return any(abs(box[0] - (e + off)) <= CUT_START * h for e in edges[:-1])


def _cut(text: str, box: tuple, across: list[float], slope: float, h: float) -> list[tuple[str, tuple]]:
    """A box holding the lines of columns on both sides of the gutters ``across`` cut at each: the text at the space
    whose place (the characters' share of the box's width) lies nearest to the gutter."""
    off = slope * (box[1] + box[3]) / 2
    out: list[tuple[str, tuple]] = []
    x0 = box[0]
    for g in across:
        gx = g + off
        words = text.strip()
        spaces = [i for i, c in enumerate(words) if c == " "]
        if not spaces:
            break
        want = len(words) * (gx - x0) / max(1.0, box[2] - x0)
        k = min(spaces, key=lambda i: abs(i - want))
        out.append((words[:k], (x0, box[1], gx - 0.5 * TRIM * h, box[3])))
        text, x0 = words[k + 1 :], gx + 0.5 * TRIM * h
    out.append((text.strip(), (x0, box[1], box[2], box[3])))
    return [(t, b) for t, b in out if t]


def unshift(box: tuple, shift: float) -> tuple:
    """A box of ``separate_columns``' layout in the page's own pixels."""
    k = int(box[0] // shift)
    return (box[0] - k * shift, box[1], box[2] - k * shift, box[3])
