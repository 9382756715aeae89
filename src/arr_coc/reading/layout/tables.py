"""Tables on a page's OCR boxes: runs of baseline rows whose separate cells align into columns, with a header row
and a row-label column (:func:`_tables`, called by :func:`~arr_coc.reading.layout.structure.analyse`). Moved from
:mod:`.structure` unchanged; :mod:`.structure` re-exports ``_tables``."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .page import _NUMBER_RE, Box, PageLayoutConfig, Table, _cw, _height, _union

# --------------------------------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class _Cell:
    """A table cell candidate: the boxes of one phrase on a baseline, left to right."""

    boxes: tuple[int, ...]
    box: Box
    text: str
    parts: tuple[tuple[str, Box], ...]  # text and box of each of its boxes


@dataclass(frozen=True)
class _Row:
    """The cells of one baseline, left to right."""

    cells: tuple[_Cell, ...]
    cy: float  # median centre height of the cells
    height: float  # median cell height
    x0: float
    x1: float


def _tables(pairs: list[tuple[str, Box]], cw: float, cfg: PageLayoutConfig) -> list[Table]:
    """Tables: runs of consecutive baseline rows (top to bottom, overlapping in x) of >= 2 short cells each, whose
    cells align into the same columns; a row that does not fit (a prose line, a single cell, a cell across two
    columns, a gap much larger than the table's row pitch) ends the runs it overlaps. Tables side by side stay
    apart (each run only meets the rows that overlap it in x)."""
    rows = _baseline_rows(pairs, cw, cfg)
    pad = cfg.table_align * cw / 2
    open_runs: list[list[_Row]] = []
    done: list[list[_Row]] = []
    for row in rows:
        cand = len(row.cells) >= 2 and _median([len(c.text.split()) for c in row.cells]) <= cfg.table_cell_words
        placed = False
        keep: list[list[_Row]] = []
        for run in open_runs:
            if not (row.x0 < max(r.x1 for r in run) and row.x1 > min(r.x0 for r in run)):
                keep.append(run)
            elif cand and not placed and _fits(run, row, pad, cfg):
                run.append(row)
                keep.append(run)
                placed = True
            else:
                done.append(run)
        open_runs = keep
        if cand and not placed:
            open_runs.append([row])
    done += open_runs
    tables = [t for run in done if len(run) >= cfg.table_min_rows for t in _table(run, pad, cfg)]
    tables.sort(key=lambda t: (t.box[1], t.box[0]))
    return tables


def _median(v: Sequence[float]) -> float:
    """Median of a short non-empty list (``np.median``'s overhead dominates at this size)."""
    s = sorted(v)
    k = len(s) // 2
    return float(s[k]) if len(s) % 2 else (s[k - 1] + s[k]) / 2


def _baseline_rows(pairs: list[tuple[str, Box]], cw: float, cfg: PageLayoutConfig) -> list[_Row]:
    """Boxes grouped by baseline whatever the gaps between them (a box joins the row whose neighbours of it in x it
    overlaps vertically by >= ``line_overlap`` of the smaller height, and horizontally by less than that share of the
    narrower width), then each row's boxes closer than ``table_cell_gap * cw`` merged into one cell (the words of a
    phrase; two numbers stay apart, and so do a "Key:" box and the box after it). Rows sorted top to bottom."""
    bx = [b for _, b in pairs]
    hs = [_height(b) for b in bx]
    cys = [(b[1] + b[3]) / 2 for b in bx]
    order = sorted(range(len(pairs)), key=lambda i: (cys[i], bx[i], pairs[i][0]))
    max_h = max(hs)
    groups: list[list[int]] = []  # box indices of each group, sorted by x0 (boxes of a row do not overlap in x)
    lefts: list[list[float]] = []  # their x0, for bisection
    bottoms: list[float] = []  # lowest box bottom of each group
    active: list[int] = []  # groups that may still take boxes (their boxes reach down near the current one)
    for i in order:
        x0, y0, x1, y1 = bx[i]
        h = hs[i]
        active = [g for g in active if bottoms[g] >= cys[i] - max_h]
        best, best_ov, best_pos = None, 0.0, 0
        for g in active:
            pos = bisect.bisect_left(lefts[g], x0)
            ov = 0.0
            for j in groups[g][max(0, pos - 1) : pos + 1]:  # the neighbours in x: the only boxes it may overlap
                o = bx[j]
                if min(x1, o[2]) - max(x0, o[0]) > cfg.line_overlap * min(x1 - x0, o[2] - o[0]):  # one above the other
                    ov = 0.0
                    break
                ov = max(ov, (min(y1, o[3]) - max(y0, o[1])) / min(h, hs[j]))
            if ov >= cfg.line_overlap and ov > best_ov:
                best, best_ov, best_pos = g, ov, pos
        if best is None:
            groups.append([i])
            lefts.append([x0])
            bottoms.append(y1)
            active.append(len(groups) - 1)
        else:
            groups[best].insert(best_pos, i)
            lefts[best].insert(best_pos, x0)
            bottoms[best] = max(bottoms[best], y1)
    rows: list[_Row] = []
    for g in groups:
        cells: list[list[int]] = [[g[0]]]
        for j in g[1:]:
            gap = pairs[j][1][0] - max(pairs[k][1][2] for k in cells[-1])
            left = pairs[cells[-1][-1]][0]
            numbers = _NUMBER_RE.match(pairs[j][0]) and _NUMBER_RE.match(left)  # neighbouring values: two cells
            if gap < cfg.table_cell_gap * cw and not numbers and not left.rstrip().endswith(":"):  # "Key:" | value
                cells[-1].append(j)
            else:
                cells.append([j])
        cs = tuple(_cell(c, tuple(pairs[k] for k in c)) for c in cells)
        rows.append(_row(cs))
    rows.sort(key=lambda r: (r.cy, r.x0))
    return rows


def _cell(boxes: Sequence[int], parts: Sequence[tuple[str, Box]]) -> _Cell:
    return _Cell(tuple(boxes), _union([b for _, b in parts]), " ".join(t for t, _ in parts), tuple(parts))


def _row(cells: Sequence[_Cell]) -> _Row:
    return _Row(
        tuple(cells),
        _median([(c.box[1] + c.box[3]) / 2 for c in cells]),
        _median([_height(c.box) for c in cells]),
        cells[0].box[0],
        max(c.box[2] for c in cells),
    )


def _fits(run: list[_Row], row: _Row, pad: float, cfg: PageLayoutConfig) -> bool:
    """Whether ``row`` continues the table ``run``: close enough below it, holding key/value pairs when the run's
    body does and only then, and its cells fall into distinct columns of the run (and leave every earlier row's
    cells in distinct columns). Only the first row and the ``table_window`` rows above ``row`` are looked at, so
    that a long table costs linear time; ``_table`` checks the whole run once at the end."""
    step = row.cy - run[-1].cy
    recent = run[-cfg.table_window :]
    if len(run) == 1:
        if step > cfg.table_first_gap * max(row.height, run[0].height):
            return False
    elif step > cfg.table_row_gap * _median(
        [b.cy - a.cy for a, b in zip(recent, recent[1:], strict=False)] or [run[1].cy - run[0].cy]
    ):
        return False
    if len(run) >= 2 and _keyed(row) != _keyed(run[-1]):  # "Subtotal:  $x" under line items: another structure
        return False
    rows = _split_first([run[0], *run[1:][-cfg.table_window :], row], pad)
    return _assign(rows, _table_columns(rows, pad)) is not None


def _keyed(row: _Row) -> bool:
    """Whether a row holds a "Key:" cell followed by another cell (a key/value pair)."""
    return any(c.text.rstrip().endswith(":") for c in row.cells[:-1])


def _body_columns(rows: list[_Row], pad: float) -> list[list[float]]:
    """The union of the body rows' (all rows' for one row) cells widened by ``pad`` on each side, left to right,
    except that a cell whose row already has a cell in the column starts the next one (OCR boxes of a key and its
    value may touch or overlap: they are still two columns)."""
    ivs = sorted((c.box[0] - pad, c.box[2] + pad, r) for r, row in enumerate(rows[1:] or rows) for c in row.cells)
    cols: list[list[float]] = []
    members: set[int] = set()  # rows with a cell in the last column
    for a, b, r in ivs:
        if cols and a <= cols[-1][1] and r not in members:
            cols[-1][1] = max(cols[-1][1], b)
            members.add(r)
        else:
            cols.append([a, b])
            members = {r}
    return cols


def _split_first(rows: list[_Row], pad: float) -> list[_Row]:
    """The rows with the first row's cells of several boxes cut where their boxes fall over different body columns
    (word-level OCR merges "Unit price" and "Amount" of a cramped header into one phrase)."""
    if len(rows) < 2 or all(len(c.boxes) == 1 for c in rows[0].cells):
        return rows
    cols = _body_columns(rows, pad)

    def col(b: Box) -> int | None:
        k = max(range(len(cols)), key=lambda k: min(b[2], cols[k][1]) - max(b[0], cols[k][0]))
        return k if min(b[2], cols[k][1]) > max(b[0], cols[k][0]) else None

    cells: list[_Cell] = []
    for c in rows[0].cells:
        groups: list[list[int]] = []  # positions in c.parts
        last: int | None = None
        for p, (_, b) in enumerate(c.parts):
            k = col(b)
            if groups and (k is None or last is None or k == last):
                groups[-1].append(p)
            else:
                groups.append([p])
            last = k if k is not None else last
        cells += [_cell([c.boxes[p] for p in g], [c.parts[p] for p in g]) for g in groups]
    return [_row(cells), *rows[1:]]


def _table_columns(rows: list[_Row], pad: float) -> list[tuple[float, float]]:
    """Column x-ranges: the union of the body rows' cells widened by ``pad`` on each side (aligned cells overlap),
    then the first row's cells that meet none of them: each joins the nearest column no other first-row cell meets
    (a header aligned otherwise than its body), else makes a column of its own (one the body leaves empty)."""
    cols = _body_columns(rows, pad)
    if len(rows) > 1:
        body_n = len(cols)
        heads = [(c.box[0] - pad, c.box[2] + pad) for c in rows[0].cells]
        claimed = {k for a, b in heads for k in range(body_n) if a < cols[k][1] and b > cols[k][0]}
        for a, b in heads:
            if any(a < y and b > x for x, y in cols):
                continue
            # a header aligned otherwise than its column (centred above right-aligned numbers): the nearest column
            # that no other header cell sits on, else a column of its own
            k = min(range(body_n), key=lambda k: max(cols[k][0] - b, a - cols[k][1]))
            if k in claimed:
                cols.append([a, b])
            else:
                claimed.add(k)
                cols[k] = [min(a, cols[k][0]), max(b, cols[k][1])]
        cols.sort()
    return [(a, b) for a, b in cols]


def _assign(rows: list[_Row], cols: list[tuple[float, float]]) -> list[list[int]] | None:
    """Each cell's column: the one it overlaps most, or (columns may overlap a little) the next column to the right
    when its left neighbour in the row took that one and it overlaps the next one too; None when two cells of a row
    still share a column."""
    starts = [a for a, _ in cols]  # sorted
    out: list[list[int]] = []
    for r in rows:
        ks: list[int] = []
        for c in r.cells:
            x0, x1 = c.box[0], c.box[2]
            k, best = -1, -float("inf")
            # right to left from the first column starting at or after the cell's end (the nearest, when the cell
            # overlaps no column: a header a little beside its column)
            j = min(bisect.bisect_left(starts, x1), len(cols) - 1)
            while j >= 0:
                ov = min(x1, cols[j][1]) - max(x0, cols[j][0])
                if ov > best:
                    k, best = j, ov
                if cols[j][1] < x0 and j < k:  # columns further left end even earlier (they barely overlap)
                    break
                j -= 1
            if ks and k <= ks[-1]:
                k = ks[-1] + 1
                if k >= len(cols) or min(x1, cols[k][1]) - max(x0, cols[k][0]) <= 0:
                    return None
            ks.append(k)
        out.append(ks)
    return out


def _table(run: list[_Row], pad: float, cfg: PageLayoutConfig) -> list[Table]:
    """The tables of a run of rows: its grid, split where a key/value stack sits beside other columns."""
    whole = run
    run = _split_first(run, pad)
    cols = _table_columns(run, pad)
    assign = _assign(run, cols)
    if assign is None:  # rows that each fit their window but not the whole table: cut at the longest good prefix
        k = len(whole) - 1
        while (
            k > cfg.table_min_rows
            and _assign(_split_first(whole[:k], pad), _table_columns(_split_first(whole[:k], pad), pad)) is None
        ):
            k -= 1
        return [t for part in (whole[:k], whole[k:]) if len(part) >= cfg.table_min_rows for t in _table(part, pad, cfg)]
    grid: list[list[_Cell | None]] = [[None] * len(cols) for _ in run]
    for r, (row, ks) in enumerate(zip(run, assign, strict=True)):
        for c, k in zip(row.cells, ks, strict=True):
            grid[r][k] = c
    return _grid_tables(grid, [r.cy for r in run], cfg)


def _caps(c: _Cell) -> bool:
    """Whether a cell's text is in capitals (two letters or more, none lower-case)."""
    letters = [ch for ch in c.text if ch.isalpha()]
    return len(letters) >= 2 and all(ch.isupper() for ch in letters)


def _numeric(c: _Cell | None) -> bool:
    return c is not None and bool(_NUMBER_RE.match(c.text))


def _grid_tables(grid: list[list[_Cell | None]], cys: list[float], cfg: PageLayoutConfig) -> list[Table]:
    """Header row and row-label column of a grid (rows: top to bottom, centre heights ``cys``); none with fewer
    than ``table_min_rows`` rows or ``table_min_cols`` columns filled in two rows or more, or with neither a header
    row nor a row-label column (two short lines of neighbouring text columns align too, but nothing names them).

    The first row is the header row when its cells are text above numbers, or larger (bold), set apart, all
    "Key:" or all capitals over a body that is not (never numbers; never above a key/value stack). The row-label
    column is the first column of text filled in most of two or more body rows with a column of numbers to its
    right, or a column of "Key:" labels.

    A column of "Key:" labels makes a key/value stack of itself and the column after it; columns on either side
    (an address beside the stack, another stack) are tables of their own, so a key labels only its own value.
    """
    keep = [r for r, row in enumerate(grid) if any(c is not None for c in row)]
    grid, cys = [grid[r] for r in keep], [cys[r] for r in keep]
    n, m = len(grid), len(grid[0]) if grid else 0
    if (
        n < cfg.table_min_rows
        or sum(sum(grid[r][k] is not None for r in range(n)) >= 2 for k in range(m)) < cfg.table_min_cols
    ):
        return []
    body = range(1, n)
    filled = [[grid[r][k] for r in body if grid[r][k] is not None] for k in range(m)]
    is_num = [bool(f) and sum(map(_numeric, f)) > cfg.table_numeric_share * len(f) for f in filled]
    colon = [sum(c.text.rstrip().endswith(":") for c in f) > len(f) / 2 if f else False for f in filled]
    header_col = next(
        (
            k
            for k in range(m)
            if len(filled[k]) >= cfg.table_label_fill * len(body)
            and not any(map(_numeric, filled[k]))
            and (colon[k] or (len(body) >= 2 and any(is_num[k + 1 :])))
        ),
        None,
    )
    if header_col is not None and colon[header_col] and m > 2:
        parts = [(0, header_col), (header_col, header_col + 2), (header_col + 2, m)]
        return [t for a, b in parts if b > a for t in _grid_tables([row[a:b] for row in grid], cys, cfg)]
    header_row = None
    top = [grid[0][k] for k in range(m) if k != header_col and grid[0][k] is not None]
    if top and not any(map(_numeric, top)) and not (header_col is not None and colon[header_col]):  # (key/value)
        rest = [grid[r][k] for r in body for k in range(m) if k != header_col and grid[r][k] is not None]
        by_numbers = any(is_num[k] for k in range(m) if k != header_col)
        larger = bool(rest) and (
            np.median([_cw(c.text, c.box) for c in top])
            >= cfg.table_header_size * np.median([_cw(c.text, c.box) for c in rest])
        )
        steps = [b - a for a, b in zip(cys[1:], cys[2:], strict=False)]
        separated = bool(steps) and cys[1] - cys[0] >= cfg.table_header_gap * float(np.median(steps))
        colons = all(c.text.rstrip().endswith(":") for c in top) and not any(colon)  # "Bill to:  Ship to:"
        caps = all(map(_caps, top)) and not all(map(_caps, rest))  # "NAME  CITY" over "Ada Byron  London"
        if by_numbers or larger or separated or colons or caps:
            header_row = 0
    if header_row is None and header_col is None:  # nothing names its cells: words that happen to align
        return []
    cells = tuple(tuple(None if c is None else c.boxes[0] for c in row) for row in grid)
    extents = tuple(
        (min(c.box[0] for c in col), max(c.box[2] for c in col))
        for col in ([grid[r][k] for r in range(n) if grid[r][k] is not None] for k in range(m))
    )
    parts = tuple(c.boxes for row in grid for c in row if c is not None and len(c.boxes) > 1)
    box = _union([c.box for row in grid for c in row if c is not None])
    return [Table(cells, extents, header_row, header_col, box, parts)]
