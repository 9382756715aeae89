"""A table cell named by its row and its column: "What is the <header> for <label>?", "In the <label> row, what is
the <header>?". The answer is the cell on the label's line under the header's column, however far down the table the
row is and whether or not the table has ruling lines: found by alignment on the OCR boxes, not by a detected grid.

``split_cell_query`` splits such a question into (header, label) phrases (every split point of "for" / "of" is
tried); ``cross_cells`` finds, for each split, the boxes that lie right of a box matching the label (same line) and
below boxes matching the header (overlapping their column, widened by ``column_pad`` box heights); a header that
spans sub-columns ("Accidental Deaths" over "Incidence" and "Rate") adds up with the sub-header it stands over, so
the cell under both wins. The best crossing becomes ``Evidence(rule="table-cell")``: the cell, its label and its
header are kept before anything else (``QueryMatcher.relevance_and_evidence``), as structural evidence is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from ..layout.structural_query import Evidence
from ..ocr.reader import TextBox

__all__ = ["split_cell_query", "cross_cells", "MIN_MATCH"]

_VERB = r"(?:what|which)\s+(?:is|are|was|were)\s+(?:the\s+)?"
_END = r"\s*[?.!]*\s*$"
_ROW_FIRST = re.compile(rf"^\s*in\s+the\s+(?P<l>.+?)\s+row\s*,?\s*{_VERB}(?P<h>.+?){_END}", re.I)
_ROW_LAST = re.compile(rf"^\s*{_VERB}(?P<h>.+?)\s+(?:in|on|of)\s+the\s+(?P<l>.+?)\s+row{_END}", re.I)
_FOR = re.compile(rf"^\s*{_VERB}(?P<rest>.+?){_END}", re.I)
MIN_MATCH = 0.5  # a header / label phrase must match a box at least this well (lexical score)
LEFT = 0.8  # a cell left of the row's label counts this much of one right of it
ORDER = 0.9  # a key box printing the phrase's numbers in another order counts this much (``ordered``)
_NUM = re.compile(r"\d+(?:\.\d+)?")
KEY_SHARE = 0.8  # a box matching the label this share of its row's label's match is a key, not a cell
LOOSE = 0.9  # a box matching a label of 2+ words only loosely, where another spells it, counts this much
_WORD = re.compile(r"\w+")
_VALUE = re.compile(r"^[\d\s.,%()$€£+/-]*\d[\d\s.,%()$€£+/-]*$")  # a number or amount read on its own
_MANY = object()  # ``_cross``: a crossing found, but too many equal boxes to be one cell
SHIFTED = 0.5  # where no crossing is found, boxes overlapping by this share of ``same_line`` share a line


def split_cell_query(query: str) -> list[tuple[str, str]]:
    """Candidate (header, label) splits of a table-cell question, most specific wording first; [] for others.

    >>> split_cell_query("In the 1985 row, what is the Suicides Incidence?")
    [('Suicides Incidence', '1985')]
    >>> split_cell_query("What is the Rate of Tax for Sales?")
    [('Rate', 'Tax for Sales'), ('Rate of Tax', 'Sales')]
    """
    for pat in (_ROW_FIRST, _ROW_LAST):
        m = pat.match(query)
        if m:
            return [(m["h"].strip(), m["l"].strip())]
    m = _FOR.match(query)
    if not m:
        return []
    rest = m["rest"]
    out = []
    for sep in re.finditer(r"\s+(?:for|of)\s+", rest, re.I):
        h, lab = rest[: sep.start()].strip(), rest[sep.end() :].strip()
        if h and lab:
            out.append((h, lab))
    return out


def cross_cells(
    boxes: Sequence[TextBox],
    splits: Sequence[tuple[str, str]],
    lexical: Callable[[str], np.ndarray],
    same_line: float = 0.5,
    column_pad: float = 0.5,
) -> Evidence | None:
    """The best row x column crossing over ``splits`` (``split_cell_query``), or None.

    Args:
        boxes: the page's N OCR boxes.
        splits: (header, label) phrase pairs.
        lexical: phrase -> (N,) lexical match of each box in [0, 1] (``QueryMatcher.lexical_scores``).
        same_line: two boxes share a line when they overlap vertically by this share of the smaller height.
        column_pad: a header's column is its box widened by this many of its heights on each side.
    """
    if len(boxes) < 3 or not splits:
        return None
    memo: dict[str, np.ndarray] = {}

    def cached(phrase: str, _score: Callable[[str], np.ndarray] = lexical) -> np.ndarray:  # every split re-asks
        if phrase not in memo:
            memo[phrase] = _score(phrase)
        return memo[phrase]

    parts = _joined(boxes, {" ".join(lab.lower().split()) for _, lab in splits})
    boxes = [*boxes, *parts]  # the parts join the page's boxes; the lexical match is asked of the page's own only

    def asked(phrase: str) -> np.ndarray:
        return np.concatenate([cached(phrase), np.zeros(len(parts))])

    # a row whose cells OCR reads a little higher or lower than its label ("creator" beside "Creating application"):
    # a looser line, only where the strict one crossed nothing at all (many equal crossings give nothing, as before)
    found = _cross(boxes, splits, asked, same_line, column_pad, same_line)
    if found is None:
        found = _cross(boxes, splits, asked, same_line, column_pad, SHIFTED * same_line)
    return None if found is _MANY else found


def _cross(
    boxes: Sequence[TextBox],
    splits: Sequence[tuple[str, str]],
    lexical: Callable[[str], np.ndarray],
    same_line: float,
    column_pad: float,
    row_line: float,
) -> Evidence | object | None:
    """``cross_cells`` with a row's cells sharing its label's line by ``row_line`` of the smaller height; ``_MANY``
    where the best crossing is many equal boxes."""
    n = len(boxes)
    printed = [_norm(b.text) for b in boxes]

    def ordered(phrase: str) -> np.ndarray:
        """(N,) 1, or ``ORDER`` for a box printing the phrase's numbers in another order ("0.00, 0.75, 0.00" for
        "= 0.00, 0.00, 0.75"; "cel[0][2]" for "cell[2][0]"): a bag of words cannot tell them apart."""
        want = _NUM.findall(phrase)
        if len(want) < 2:
            return np.ones(n)
        return np.array([1.0 if _in_order(_NUM.findall(t), want) else ORDER for t in printed])

    def named(phrase: str) -> np.ndarray:
        """A key phrase's match: a box that prints the phrase whole names it fully, even where its words are stop
        words ("May") or too short to weigh ("4g", which a lexical match scores no higher than "4d"). Only for a
        whole header or label: a header's single words ("of", "100") printed alone elsewhere name nothing."""
        whole = _norm(phrase)
        return np.maximum(lexical(phrase), np.array([float(bool(whole) and t == whole) for t in printed]))

    def row_named(phrase: str) -> np.ndarray:
        """A label's match (``named``): where a box spells a label of 2+ words as printed, a box matching it only
        loosely ("Northern district" for "Southern district", a neighbouring row) names it less (``LOOSE``)."""
        score = named(phrase)
        words = _WORD.findall(_norm(phrase))
        if len(words) < 2:
            return score
        spelled = np.array([_spells(_WORD.findall(t), words) for t in printed])
        return np.where(spelled | ~spelled.any(), score, LOOSE * score)

    orders: dict[str, np.ndarray] = {}

    arr = np.array([b.box for b in boxes], dtype=np.float64).reshape(-1, 4)
    x0, y0, x1, y1 = arr.T
    h = np.maximum(y1 - y0, 1.0)
    cy = (y0 + y1) / 2
    has_text = np.array([bool(b.text.strip()) for b in boxes])
    best: tuple[float, np.ndarray, list[int], list[int], str, str] | None = None
    for head, label in splits:
        oh, ol = orders.setdefault(head, ordered(head)), orders.setdefault(label, ordered(label))
        lh, ll = named(head) * oh, row_named(label) * ol  # (N,), (N,)
        if lh.max(initial=0.0) < MIN_MATCH or ll.max(initial=0.0) < MIN_MATCH:
            continue
        labels = np.flatnonzero(ll >= max(MIN_MATCH, 0.5 * ll.max()))
        # row[c]: the best label box on c's line, left of c; col[c]: the header boxes above c over its column
        row = np.zeros(n)
        row_of: dict[int, int] = {}
        for a in labels:
            ov = np.minimum(y1, y1[a]) - np.maximum(y0, y0[a])
            line = (ov >= row_line * np.minimum(h, h[a])) & has_text
            line[a] = False
            # the row's cells right of its label; left of it (a label column on the right) a little less
            w = np.where(x0 >= x1[a] - 0.5 * h[a], 1.0, np.where(x1 <= x0[a] + 0.5 * h[a], LEFT, 0.0))
            better = line & (ll[a] * w > row)
            row[better] = ll[a] * w[better]
            for c in np.flatnonzero(better):
                row_of[int(c)] = int(a)
        if not row.any():
            continue
        col, col_of = _column_cover(head, lh, lexical, (x0, y0, x1, y1, h, cy), same_line, column_pad, row > 0, oh)
        if col.max(initial=0.0) < MIN_MATCH:
            continue
        score = row * col
        # a key box itself is not the answer: a box that names the label about as well as its row's label does. A
        # value that only shares some of the label's digits or words stays ("0.82, 0.86, 0.81" in the row of
        # "= 0.82, 0.15, 0.81": on a grid whose cells are all named by one rule every cell partly spells the label)
        row_label = np.zeros(n)
        for c, a in row_of.items():
            row_label[c] = ll[a]
        score[labels[ll[labels] >= KEY_SHARE * row_label[labels]]] = 0.0
        top = float(score.max())
        if top < MIN_MATCH * MIN_MATCH or (best is not None and top <= best[0]):
            continue
        cells = np.flatnonzero(score >= 0.95 * top)
        lab_boxes = sorted({row_of[int(c)] for c in cells})
        above = {b for c in cells for b in col_of.get(int(c), [])}
        # the header boxes kept with the cell: the nearest above it that match the phrase best (not a later table's)
        strong = [b for b in above if lh[b] >= 0.5 * max(lh[list(above)], default=0.0)]
        head_boxes = sorted(sorted(strong, key=lambda b: -y1[b])[:3])
        best = (top, cells, lab_boxes, head_boxes, head, label)
    if best is None:
        return None
    top, cells, lab_boxes, head_boxes, head, label = best
    if len(cells) > 4:  # many equal crossings: the row or the column is not one
        return _MANY
    regions = [tuple(boxes[i].box) for i in cells] + [tuple(boxes[i].box) for i in lab_boxes + head_boxes]
    weights = [1.0] * len(cells) + [0.9] * (len(lab_boxes) + len(head_boxes))
    return Evidence(
        rule="table-cell",
        regions=list(regions),
        weights=weights,
        detail=f"column {head!r} x row {label!r}: {len(cells)} box(es), score {top:.2f}",
    )


def _in_order(got: list[str], want: list[str]) -> bool:
    """Whether the numbers of ``got`` that ``want`` holds come in ``want``'s order (a subsequence of it)."""
    it = iter(want)
    return all(any(g == w for w in it) for g in got if g in want)


def _spells(got: list[str], want: list[str]) -> bool:
    """Whether the words ``want`` occur in ``got`` as one contiguous run."""
    k = len(want)
    return any(got[i : i + k] == want for i in range(len(got) - k + 1))


def _joined(boxes: Sequence[TextBox], labels: set[str]) -> list[TextBox]:
    """Boxes in which OCR joined a row's label and its first value ("Southern district 23,151"): the label's part
    and the value's part as two boxes, cut where their characters fall (the value's part is the cell)."""
    out = []
    for b in boxes:
        text = " ".join(b.text.split())
        low = text.lower()
        for lab in labels:
            if low.startswith(lab + " ") and _VALUE.match(text[len(lab) + 1 :]):
                x0, y0, x1, y1 = b.box
                cut = x0 + (x1 - x0) * (len(lab) + 0.5) / len(text)
                out += [TextBox(text[: len(lab)], (x0, y0, cut, y1)), TextBox(text[len(lab) + 1 :], (cut, y0, x1, y1))]
                break
    return out


def _norm(text: str) -> str:
    """A box's or phrase's text for a whole match: lower case, spaces collapsed, end punctuation dropped."""
    return " ".join(text.lower().split()).strip(" :.,;*")


def _column_cover(
    head: str,
    lh: np.ndarray,
    lexical: Callable[[str], np.ndarray],
    geom: tuple[np.ndarray, ...],
    same_line: float,
    column_pad: float,
    wanted: np.ndarray,
    order: np.ndarray | None = None,
) -> tuple[np.ndarray, dict[int, list[int]]]:
    """(N,) how much of the header phrase the boxes above each box in its column spell (each word of the phrase
    counted once, at its best match among them: a spanning header and its sub-header add up, a header repeated by
    a later table does not), and for each ``wanted`` box the header boxes above it."""
    x0, y0, x1, y1, h, cy = geom
    n = len(x0)
    cx = (x0 + x1) / 2
    words = [w for w in dict.fromkeys(re.findall(r"\w[\w.%/-]*", head)) if w]
    per_word = [lexical(w) for w in words] if len(words) > 1 else []  # one word: the header's own match
    per_word = [v for v in per_word if v.max(initial=0.0) >= MIN_MATCH] or [lh]
    heads = np.flatnonzero(np.max(per_word, axis=0) >= MIN_MATCH)
    cover = np.zeros((len(per_word), n))
    col_of: dict[int, list[int]] = {}
    for b in heads:
        lo, hi = _column(b, x0, y0, x1, y1, h, same_line, column_pad)
        pad = column_pad * h[b]
        ov = np.minimum(y1, y1[b]) - np.maximum(y0, y0[b])
        inside = (np.minimum(x1, x1[b] + pad) - np.maximum(x0, x0[b] - pad) > 0) | ((cx >= lo) & (cx <= hi))
        over = inside & (cy > y1[b]) & (ov < same_line * np.minimum(h, h[b]))
        for k, v in enumerate(per_word):
            np.maximum(cover[k], np.where(over, v[b] * (1.0 if order is None else order[b]), 0.0), out=cover[k])
        for c in np.flatnonzero(over & wanted):
            col_of.setdefault(int(c), []).append(int(b))
    return cover.mean(0), col_of


def _column(
    b: int,
    x0: np.ndarray,
    y0: np.ndarray,
    x1: np.ndarray,
    y1: np.ndarray,
    h: np.ndarray,
    same_line: float,
    column_pad: float,
) -> tuple[float, float]:
    """The x extent of header box ``b``'s column: halfway to the next box on its line on each side (a header that
    spans sub-columns is centred over them, wider than its words), at most one box width beyond it where its line
    has no box on that side; never narrower than the box widened by ``column_pad`` of its height."""
    ov = np.minimum(y1, y1[b]) - np.maximum(y0, y0[b])
    line = ov >= 0.5 * same_line * np.minimum(h, h[b])  # a header row's boxes sit a little up and down
    line[b] = False
    w = x1[b] - x0[b]
    pad = column_pad * h[b]
    left = x1[line & (x1 <= x0[b] + pad)]
    right = x0[line & (x0 >= x1[b] - pad)]
    lo = (left.max() + x0[b]) / 2 if left.size else x0[b] - w
    hi = (right.min() + x1[b]) / 2 if right.size else x1[b] + w
    return min(lo, x0[b] - pad), max(hi, x1[b] + pad)
