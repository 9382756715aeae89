"""A table cell whose row and column the question names by their meaning, not by the printed words: "What share of
Latino kids aged four ...?" for the cell under "4-Year-Old Cohort" on the "Hispanic" row; "How many school systems
in North Carolina ...?" for the only number on the row "NC".

``crossing`` finds a cell from two phrases the question prints; a question in its own words prints neither.
``printed_forms`` lists the words a table prints for the question's words, each by a small named rule:

- ``NUMBERS``: number words as digits ("four" -> 4), a spelled range as the printed one ("six to seventeen",
  "between 6 and 17" -> 6-17), an age as a table prints it ("aged four", "4 years old" -> 4-year-old);
- ``STATES``: a US state's name as its postal code ("North Carolina" -> NC);
- ``SYNONYMS``: the everyday word for a category a table prints under its formal name (group names of censuses
  and surveys: "Latino" -> Hispanic; both sexes -> Total / Persons; tiers: "mid-tier" -> middle, "top" -> upper).

``named_boxes`` marks the boxes the question names: a short box (a header or a row label) most of whose words are
among the question's words and their printed forms, every number of it among the question's (a "3-Year-Old" box is
not named by "aged four"); a word OCR split ("Y ear") counts where its joined halves are named. A box is named
*by meaning* where the question's own words alone do not name it.

``meaning_cell`` then crosses the named boxes that play a table's roles (``table_roles``: a row label has a number
right of it on its line; a column header reaches a number going down its column through short sub-headers only, so a
paragraph's "4-year-old children" is no header): ``crossing.cross_cells`` over (header, label) splits in which one at
least is named by meaning, the named headers together first ("Person" over "Total"), then each alone. Where no
header is named, a row label named by meaning in a table's label column whose row holds one cell, or one number,
gives that cell (``sole_cell``). The result is ``Evidence(rule="table-cell")``; ``QueryMatcher.table_cell`` asks it
only where the printed words crossed nothing, and never for a question in another language. Where nothing is named
by meaning nothing changes: a question in the printed words is left to the crossing.

Example:
    >>> printed_forms("What share of kids between six and seventeen in Tinsukia go to class, boys and girls together?")
    ('6', '17', '6-17', 'persons', 'person', 'total')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from ..layout.structural_query import Evidence
from ..ocr.reader import TextBox
from .crossing import _VALUE, cross_cells
from .lexical import content_tokens

__all__ = ["printed_forms", "named_boxes", "meaning_cell", "sole_cell"]

_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen".split()
NUMBER_WORDS = {
    **{w: i for i, w in enumerate(_UNITS)},
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
}
_NUM = r"(\d+|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")"
_RANGE = re.compile(rf"\b(?:between\s+|from\s+)?{_NUM}\s*(?:-|to|and|through|–)\s*{_NUM}\b", re.I)
# an age: "aged four", "4 years old", "children who are four" (a person's age, not "who are 4 percent": no unit after)
_AGE = re.compile(
    rf"\b(?:aged?\s+{_NUM}|{_NUM}[\s-]+years?[\s-]+olds?|"
    rf"(?:children|kids|boys|girls|people|persons|pupils|students|those) (?:who|that) (?:are|were) {_NUM}"
    r"(?!\s*(?:%|percent|per|times|of|or more|and|to)\b))\b",
    re.I,
)

STATES = {
    "alabama": "al", "alaska": "ak", "arizona": "az", "arkansas": "ar", "california": "ca", "colorado": "co",
    "connecticut": "ct", "delaware": "de", "district of columbia": "dc", "florida": "fl", "georgia": "ga",
    "hawaii": "hi", "idaho": "id", "illinois": "il", "indiana": "in", "iowa": "ia", "kansas": "ks", "kentucky": "ky",
    "louisiana": "la", "maine": "me", "maryland": "md", "massachusetts": "ma", "michigan": "mi", "minnesota": "mn",
    "mississippi": "ms", "missouri": "mo", "montana": "mt", "nebraska": "ne", "nevada": "nv", "new hampshire": "nh",
    "new jersey": "nj", "new mexico": "nm", "new york": "ny", "north carolina": "nc", "north dakota": "nd",
    "ohio": "oh", "oklahoma": "ok", "oregon": "or", "pennsylvania": "pa", "puerto rico": "pr", "rhode island": "ri",
    "south carolina": "sc", "south dakota": "sd", "tennessee": "tn", "texas": "tx", "utah": "ut", "vermont": "vt",
    "virginia": "va", "washington": "wa", "west virginia": "wv", "wisconsin": "wi", "wyoming": "wy",
}  # fmt: skip
_STATE = re.compile(r"\b(" + "|".join(sorted(STATES, key=len, reverse=True)) + r")\b", re.I)

# (cue in the question, lower case; the words a table prints for it; the rules it rules out, by their first word)
SYNONYMS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    (  # a group named by what it is not ("neither Black nor Hispanic", "other than Hispanic") is the table's "Other"
        r"\bneither\b[\w\s,/-]{1,40}?\bnor\b|\bother than\b|\b(?:not|none of) (?:the )?(?:above|listed|named)\b",
        ("other",),
        ("hispanic", "black", "white"),
    ),
    (
        r"\b(?:both sexes|both genders|boys and girls|girls and boys|men and women|women and men|males and females)\b",
        ("persons", "person", "total"),
        ("male", "female"),  # "boys and girls together" asks for neither sex's column
    ),
    (r"\b(?:together|combined|altogether|overall|in all|all told)\b", ("total",), ()),
    (r"\blatin[oax]s?\b", ("hispanic",), ()),
    (r"\bafrican[\s-]americans?\b", ("black",), ()),
    (r"\bcaucasians?\b", ("white",), ()),
    (r"\b(?:remaining|all other|the rest)\b", ("other",), ()),
    (r"\b(?:boys?|men|males)\b", ("male",), ()),
    (r"\b(?:girls?|women|females)\b", ("female",), ()),
    (
        r"\b(?:mid[\s-]?tier|mid[\s-]?level|medium|mid-?range|"
        r"(?:centre|center|central|middle)[\s-]+(?:tier|bracket|band|level|group|range))\b",
        ("middle",),
        (),
    ),
    (r"\b(?:top|highest)[\s-]+(?:tier|bracket|band|level|group)\b", ("upper",), ()),
    (r"\b(?:bottom|lowest)[\s-]+(?:tier|bracket|band|level|group)\b", ("low", "lower"), ()),
    # tiers of income or wealth in everyday words: the poorest / richest, "modest" for "moderate"
    (r"\b(?:poorest|least (?:well[\s-]off|affluent|wealthy)|worst[\s-]off)\b", ("low", "lower"), ()),
    (r"\b(?:richest|wealthiest|most affluent|best[\s-]off|well[\s-]off)\b", ("upper",), ()),
    (r"\bmodest\b", ("moderate",), ()),
)
# the groups a question excludes ("neither Black nor Hispanic", "other than Hispanic"): their words name no row
_NEXT = r"(?:\s+(?!(?:in|of|for|at|on|the|and|or|who|that|what|which|with|kids|children|people)\b)[\w/-]+)?"
_EXCLUDED = re.compile(rf"\bneither\b[\w\s,/-]{{1,40}}?\bnor\s+[\w/-]+{_NEXT}|\bother than\s+[\w/-]+{_NEXT}", re.I)
_RESIDUAL = re.compile(r"\bothers?\b", re.I)  # ("other" is a stop word: no content token names it)
TOTAL_WORDS = frozenset({"total", "totals", "person", "persons", "overall"})  # a column summing its siblings
MIN_COVER = 0.5  # a box is named when the question names at least this share of its words
MAX_WORDS = 8  # longer boxes are sentences, not headers or row labels
STACK = 4  # a header's column reaches a value within this many boxes below it (a header and its sub-headers)
MAX_PAIRS = 24  # (header, label) splits handed to the crossing


def _number(tok: str) -> str:
    return tok if tok.isdigit() else str(NUMBER_WORDS[tok.lower()])


def printed_forms(question: str) -> tuple[str, ...]:
    """The words a table prints for the question's words (the module's rules, in order, without repeats)."""
    q = question.lower()
    out: list[str] = []
    for m in _RANGE.finditer(q):
        lo, hi = _number(m.group(1)), _number(m.group(2))
        if int(lo) < int(hi):
            out += [lo, hi, f"{lo}-{hi}"]
    for m in _AGE.finditer(q):
        n = _number(next(g for g in m.groups() if g))
        out += [n, f"{n}-year-old"]
    for word, n in NUMBER_WORDS.items():  # alone; not "one" ("which one?") nor "zero"
        if n > 1 and re.search(rf"\b{word}\b", q):
            out.append(str(n))
    out += [STATES[m.group(1)] for m in _STATE.finditer(q)]
    ruled_out: set[str] = set()
    for cue, words, rules_out in SYNONYMS:
        if words[0] not in ruled_out and re.search(cue, q):
            out += words
            ruled_out.update(rules_out)
    return tuple(dict.fromkeys(out))


def _cover(box: tuple[str, ...], named: frozenset[str]) -> float:
    """Share of a box's tokens ``named`` holds; a token split by OCR ("y", "ear") counts where its join is named."""
    hit = [t in named for t in box]
    for i in range(len(box) - 1):
        if box[i] + box[i + 1] in named:
            hit[i] = hit[i + 1] = True
    return sum(hit) / len(box)


def _named(tokens: tuple[str, ...], words: frozenset[str]) -> bool:
    if not tokens or len(tokens) > MAX_WORDS:
        return False
    if any(t.isdigit() and t not in words for t in tokens):  # its numbers must all be the question's
        return False
    letters = [t for t in tokens if not t.isdigit()]
    return bool(letters) and _cover(tokens, words) >= MIN_COVER and _cover(tuple(letters), words) > 0


def named_boxes(texts: Sequence[str], question: str) -> tuple[np.ndarray, np.ndarray]:
    """(N,) bool: the boxes the question names (its words and their ``printed_forms``), and those of them that its
    own words alone do not name (named by meaning)."""
    own = frozenset(content_tokens(_EXCLUDED.sub(" ", question)))  # not the groups it excludes
    forms = printed_forms(question)
    every = own | frozenset(t for f in forms for t in content_tokens(f))
    named = np.zeros(len(texts), dtype=bool)
    meaning = np.zeros(len(texts), dtype=bool)
    if not forms:
        return named, meaning
    residual = _EXCLUDED.search(question) is not None  # the rest: a label printing "Other" ("White/Other")
    for i, text in enumerate(texts):
        toks = content_tokens(text)
        if _named(toks, every):
            named[i] = True
            meaning[i] = not _named(toks, own)
        elif residual and _RESIDUAL.search(text) and len(text.split()) <= MAX_WORDS:
            named[i] = meaning[i] = True
    return named, meaning


def sole_cell(boxes: Sequence[TextBox], label: int, same_line: float) -> int | None:
    """The one cell of the row whose label is box ``label``: the only box right of it on its line, or the only
    number there; None where the label is not in a table's label column (two more boxes at its left edge, each with a
    box to its right) or the row holds more than one candidate."""
    arr = np.array([b.box for b in boxes], dtype=np.float64).reshape(-1, 4)
    x0, y0, x1, y1 = arr.T
    h = np.maximum(y1 - y0, 1.0)

    def right_of(a: int) -> np.ndarray:
        ov = np.minimum(y1, y1[a]) - np.maximum(y0, y0[a])
        return np.flatnonzero((ov >= same_line * np.minimum(h, h[a])) & (x0 >= x1[a] - 0.5 * h[a]))

    column = np.flatnonzero(np.abs(x0 - x0[label]) <= h[label])
    rows = [a for a in column if a != label and len(right_of(int(a)))]
    if len(rows) < 2:
        return None
    cells = right_of(label)
    if len(cells) == 1:
        return int(cells[0])
    numbers = [int(c) for c in cells if _value(boxes[c].text)]
    return numbers[0] if len(numbers) == 1 else None


def _value(text: str) -> bool:
    """A number or amount, an approximate one too ("~100", "<5")."""
    return bool(_VALUE.match(text.strip().lstrip("~≈<>≤≥ ")))


def table_roles(boxes: Sequence[TextBox], same_line: float) -> tuple[np.ndarray, np.ndarray]:
    """(N,) bool each: a row label (a number or amount right of it on its line: a data row) and a column header
    (going down its column, a number or amount within ``STACK`` boxes, every box before it short: its sub-headers,
    not a paragraph)."""
    arr = np.array([b.box for b in boxes], dtype=np.float64).reshape(-1, 4)
    x0, y0, x1, y1 = arr.T
    h = np.maximum(y1 - y0, 1.0)
    value = np.array([_value(b.text) for b in boxes])
    short = np.array([len(content_tokens(b.text)) <= 4 for b in boxes])
    label = np.zeros(len(boxes), dtype=bool)
    header = np.zeros(len(boxes), dtype=bool)
    for a in range(len(boxes)):
        ov = np.minimum(y1, y1[a]) - np.maximum(y0, y0[a])
        label[a] = bool(np.any((ov >= same_line * np.minimum(h, h[a])) & (x0 >= x1[a] - 0.5 * h[a]) & value))
        below = np.flatnonzero((np.minimum(x1, x1[a]) - np.maximum(x0, x0[a]) > 0) & (y0 >= y1[a] - 0.5 * h[a]))
        for b in below[np.argsort(y0[below])][:STACK]:
            if value[b]:
                header[a] = True
                break
            if not short[b]:
                break
    return label, header


def summed_parts(
    boxes: Sequence[TextBox], heads: np.ndarray, header: np.ndarray, same_line: float
) -> tuple[np.ndarray, list[int]]:
    """The named headers with the parts of a total replaced by it: on a header line that prints a total ("Total",
    "Persons"), two or more named columns ("rural and urban") or a named total itself ask for the total column, not
    its parts. Returns the headers and the total boxes put in."""
    arr = np.array([b.box for b in boxes], dtype=np.float64).reshape(-1, 4)
    y0, y1 = arr[:, 1], arr[:, 3]
    h = np.maximum(y1 - y0, 1.0)
    total = np.array([bool(t) and set(t) <= TOTAL_WORDS for t in (content_tokens(b.text) for b in boxes)]) & header
    keep, added = {int(b) for b in heads}, []
    for t in np.flatnonzero(total):
        ov = np.minimum(y1, y1[t]) - np.maximum(y0, y0[t])
        line = {int(b) for b in np.flatnonzero(ov >= same_line * np.minimum(h, h[t]))}
        on_line = keep & line
        if len(on_line - set(np.flatnonzero(total))) >= 2 or on_line & set(np.flatnonzero(total)):
            keep -= on_line
            added += [int(b) for b in sorted(line) if total[b]]
    keep |= set(added)
    return np.array(sorted(keep), dtype=int), sorted(set(added))


def meaning_cell(
    boxes: Sequence[TextBox],
    question: str,
    lexical: Callable[[str], np.ndarray],
    same_line: float = 0.5,
    column_pad: float = 0.5,
) -> Evidence | None:
    """The cell at a row and a column the question names, one of them at least by meaning (see the module)."""
    if len(boxes) < 3:
        return None
    named, meaning = named_boxes([b.text for b in boxes], question)
    if not meaning.any():
        return None
    label, header = table_roles(boxes, same_line)
    rows = np.flatnonzero(named & label)
    heads = np.flatnonzero(named & header & ~label)
    heads, totals = summed_parts(boxes, heads, header & ~label, same_line)
    meaning = meaning.copy()
    meaning[totals] = True
    # the named headers together first (a spanning header and its sub-header: "Person" over "Total"), then each
    together = " ".join(dict.fromkeys(boxes[b].text for b in heads))
    groups = [[(together, bool(meaning[heads].any()))]] if len(heads) > 1 else []
    groups.append([(boxes[b].text, bool(meaning[b])) for b in heads])
    for phrases in groups:
        splits = [(p, boxes[r].text) for r in rows for p, by_meaning in phrases if by_meaning or meaning[r]]
        splits = list(dict.fromkeys(splits))[:MAX_PAIRS]
        found = cross_cells(boxes, splits, lexical, same_line, column_pad) if splits else None
        if found is not None:
            detail = "meaning: " + found.detail
            return Evidence(rule="table-cell", regions=found.regions, weights=found.weights, detail=detail)
    cells = {(c, int(a)) for a in np.flatnonzero(meaning) if (c := sole_cell(boxes, int(a), same_line)) is not None}
    if len(cells) != 1:
        return None
    (c, a) = cells.pop()
    return Evidence(
        rule="table-cell",
        regions=[tuple(boxes[c].box), tuple(boxes[a].box)],
        weights=[1.0, 0.9],
        detail=f"meaning: the one cell of row {boxes[a].text!r}",
    )
