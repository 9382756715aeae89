"""Structural queries: parse references to a page's structure and resolve them to the evidence that must be kept.

A question such as "Which word comes right after 'ability to'?", "What is the last word of the section titled
'Soil'?", "What is the heading of the second section in the left column?", "What is the title of this page?",
"Which city has the lowest value?" or "What is the value for the third month of the year?" does not name the box
that holds its answer. ``parse`` turns the wording into a ``StructuralQuery`` (ordinals in digits and words, month
and weekday names as ordinals, left/right/top/bottom, "section/column/paragraph titled X", first/last word of,
right after/before a quoted phrase, superlatives and comparisons). ``resolve`` finds the referent in a
``arr_coc.reading.layout.structure.Layout`` and returns an ``Evidence``: regions to keep and, for implied labels, the
key boxes the reading path's layout rule should propagate from.

The budget rule (``Evidence.rule``): evidence that is not a single box (a comparison needs every candidate value
and its label; a count needs every heading up to the one counted; a phrase needs the span that follows it across
line breaks) is kept whole, before anything else; the rule that fired is named so an allocation can report it:

    ==================  ===========================================================================================
    rule                what is kept first
    ==================  ===========================================================================================
    ``title``           the title's lines
    ``after-phrase``    the quoted phrase and the words after it (before it, for "before"); "assigned to x": the
                        code line from ``x =`` on; with a named section ("in the section titled 'Soil'") the phrase
                        is looked for inside that section only, and its heading is kept too
    ``year-in-unit``    the years printed in the named section (a heading governs its column until the next heading,
                        and on into the next column), and the section's heading
    ``word-of-unit``    the first/last line of the named section or paragraph, and its heading / first words
    ``ordinal-unit``    every heading (or paragraph start) of the column up to the counted one, and that unit's head
    ``compare``         every value label and every category label (chart or table): what the question asks for
                        first (the labels for "which month ...", the values for "what is the highest value"), then
                        the other, then the page's other short texts (``COMPARE_WEIGHTS``)
    ``implied-label``   the label an ordinal month/weekday names and its band across the plot (its value)
    ``table-cell``      "the <header> for <label>": the box on the label's line under the header's column, the label
                        and the header (``arr_coc.reading.matching.crossing``; applied after the scores)
    ==================  ===========================================================================================

Example:
    >>> parse("Which word comes right after 'ability to'?").after
    'ability to'
    >>> parse("What is the value for the third month of the year?").implied_labels[:2]
    ('march', 'mar')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..text import fold
from .scan_rows import word_tokens
from .scans import match_span
from .section_ends import capitalised_name
from .sections import long_section_name, named_evidence, tok_eq
from .structure import Box, Layout

__all__ = ["StructuralQuery", "Evidence", "parse", "resolve", "ORDINALS", "RULES"]

RULES = (
    "title",
    "after-phrase",
    "year-in-unit",
    "word-of-unit",
    "ordinal-unit",
    "compare",
    "implied-label",
    "table-cell",  # resolved by ``arr_coc.reading.matching.crossing`` (a column header x a row label)
)

ORDINALS: dict[str, int] = {
    w: i + 1
    for i, w in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth "
        "fifteenth sixteenth seventeenth eighteenth nineteenth twentieth".split()
    )
}
ORDINALS.update({"last": -1, "final": -1, "penultimate": -2, "next-to-last": -2, "second-to-last": -2})
MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
UNITS = {
    "section": "section",
    "chapter": "section",
    "part": "section",
    "heading": "section",
    "paragraph": "paragraph",
    "passage": "paragraph",
    "column": "column",
    "row": "row",
    "line": "line",
    "block": "paragraph",
}
AFTER_PHRASE_WORDS = 3  # words kept after the phrase ("the span that follows it")
# A comparison's evidence, in the order the budget keeps it: what the question asks for (the category labels for
# "which city ...", the values for "what is the highest value"), then what the comparison needs besides (the other
# of the two), then the page's other short texts (title, legend, axis titles).
COMPARE_WEIGHTS = {"asked": 1.0, "needed": 0.8, "other": 0.5}

_Q = r"[\"'“”‘’«»]"  # quote characters
_ORD_RE = r"(\d{1,2})(?:st|nd|rd|th)|" + "|".join(sorted((re.escape(k) for k in ORDINALS), key=len, reverse=True))
_UNIT_RE = "|".join(UNITS)


# "top" or "bottom" saying where on the page the answer sits ("the name at the very top", "printed up top", "look near
# the top or bottom", "on top"), not a superlative; a ranking's verb before it ("ranks / comes / finished at the top")
# keeps the superlative
_WHERE_ON_PAGE = re.compile(
    r"(?<!\brank )(?<!\branks )(?<!\branked )(?<!\bcomes )(?<!\bcame )(?<!\bfinished )(?<!\bends )(?<!\bended )"
    r"\b(?:at|near|on|up|along|by|towards?|from|to) (?:the )?(?:very )?(?:top|bottom)\b"
    r"(?: or (?:the )?(?:top|bottom)\b)?"
)
# a superlative besides "top" / "bottom"
_SUPERLATIVE = re.compile(
    r"\b(?:highest|largest|biggest|greatest|most|maximum|max|peak|peaked|top|best|tallest|longest|lowest|smallest|"
    r"least|fewest|minimum|min|weakest|worst|shortest|bottom)\b"
)


@dataclass(frozen=True)
class StructuralQuery:
    """What a question says about the page's structure (all fields optional)."""

    title: bool = False  # asks for the page's title
    after: str | None = None  # "right after 'X'": the phrase X
    before: str | None = None  # "right before 'X'"
    word_of: str | None = None  # "first" | "last": a word position inside a unit
    unit: str | None = None  # "section" | "paragraph" | "column" | "row" | "line"
    ordinal: int | None = None  # 1-based; negative counts from the end (-1: last)
    column: str | int | None = None  # "left" | "right" | "middle" or a 1-based column number
    named: str | None = None  # the unit's heading ("titled X") ...
    starts_with: str | None = None  # ... or its first words ("that begins with X")
    compare: str | None = None  # "max" | "min" | "more" | "less"
    wants_value: bool = False  # a comparison asks for the value ("what is the highest value"), not the label
    implied_labels: tuple[str, ...] = ()  # labels an ordinal month/weekday stands for ("march", "mar")
    assigned: str | None = None  # "what is assigned to X": a code variable whose right-hand side is asked for
    year: bool = False  # asks for a year ("which year ... in the section titled X")

    @property
    def rule(self) -> str | None:
        """The budget rule this query would fire (before resolution), or None for an ordinary key question."""
        if self.after or self.before or self.assigned:
            return "after-phrase"
        if self.year and (self.named or self.starts_with):
            return "year-in-unit"
        if self.word_of and (self.named or self.starts_with or self.unit):
            return "word-of-unit"
        if self.ordinal is not None and self.unit in ("section", "paragraph"):
            return "ordinal-unit"
        if self.title:
            return "title"
        if self.compare:
            return "compare"
        if self.implied_labels:
            return "implied-label"
        return None


@dataclass
class Evidence:
    """What a structural question needs kept, and which rule decided it."""

    rule: str  # one of RULES
    regions: list[Box] = field(default_factory=list)  # pixel boxes kept before anything else
    weights: list[float] = field(default_factory=list)  # each region's priority in (0, 1] (empty: all 1)
    keys: list[int] = field(default_factory=list)  # input box indices the layout rule should treat as keys
    detail: str = ""  # what was found ("section 'Soil', last line")


def _norm(text: str) -> str:
    return fold(text)  # the text path's one normaliser (``arr_coc.reading.text``)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", _norm(text))


def _ordinal(tok: str) -> int | None:
    m = re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)?", tok)
    if m:
        return int(m.group(1))
    return ORDINALS.get(tok)


def parse(query: str) -> StructuralQuery:
    """Parse the structural references of ``query`` (an ordinary key question gives an empty ``StructuralQuery``)."""
    q = _norm(query or "")[:512]
    f: dict = {}
    # right after / before a quoted phrase ("follows", "comes next after", "is printed just before")
    m = re.search(
        rf"(?:after|follows?|following|behind)\s+(?:the\s+(?:words?|phrase|text)\s+)?{_Q}(.+?){_Q}(?![a-z])", q
    )
    if m:
        f["after"] = m.group(1).strip()
    m = re.search(
        rf"(?:before|precedes?|preceding|ahead of)\s+(?:the\s+(?:words?|phrase|text)\s+)?{_Q}(.+?){_Q}(?![a-z])", q
    )
    if m and "after" not in f:
        f["before"] = m.group(1).strip()
    m = re.search(r"\bassigned to\s+[`'\"]?([a-z_][a-z0-9_.]*)", q)
    if m:
        f["assigned"] = m.group(1)
    # first / last word of a unit; "at the end of the paragraph", "how does ... end"
    m = re.search(r"\b(first|opening|last|final|closing)\s+(?:word|term)\b", q)
    if m:
        f["word_of"] = "first" if m.group(1) in ("first", "opening") else "last"
    elif re.search(
        r"\b(?:at the end of|ends? with|how does .* end|closes with|at the close of|does .* (?:end|close|finish))\b", q
    ):
        f["word_of"] = "last"
    elif re.search(r"\b(?:at the (?:start|beginning) of|opens with)\b", q):
        f["word_of"] = "first"
    # named unit: titled / headed / called 'X'; begins with 'X'
    m = re.search(
        rf"\b(?:titled|entitled|headed|called|named|under the heading|with the heading|heading)\s+"
        rf"(?:{_Q}(.+?){_Q}|([a-z0-9][^?.,;:]*))",
        q,
    )
    if m:
        f["named"] = (m.group(1) or m.group(2)).strip()
    else:  # "the 'Soil' section", "in the Early History section"
        m = re.search(rf"{_Q}([^\"'“”‘’«»]+){_Q}\s+(?:section|part|chapter)\b", q) or re.search(
            rf"\bin the ((?:(?!{_ORD_RE}\b|left\b|right\b|middle\b|same\b|next\b|previous\b|this\b|that\b)"
            rf"[a-z0-9][a-z0-9&-]*\s+){{1,4}}?)(?:section|part|chapter)\b",
            q,
        )
        if m:
            f["named"] = m.group(1).strip()
    if re.search(r"\b(?:which|what) year\b|\byear (?:is|was) (?:mentioned|given|named|stated)\b", q):
        f["year"] = True
    if "named" not in f and f.keys() & {"after", "before", "word_of", "year"} and (name := long_section_name(q)):
        f["named"] = name  # a long unquoted title (``sections.long_section_name``)
    if "named" not in f and f.keys() & {"after", "before", "word_of", "year"} and (name := capitalised_name(query)):
        f["named"] = _norm(name)  # "in the Previous Work section" (``section_ends.capitalised_name``, round 12)
    m = re.search(rf"\b(?:begins?|starts?|beginning|starting|opens?|opening)\s+(?:with\s+)?{_Q}(.+?){_Q}", q)
    if m:
        f["starts_with"] = m.group(1).strip()
    # ordinal + unit ("second section", "3rd paragraph", "last section")
    m = re.search(rf"\b({_ORD_RE})\s+(?:\w+\s+)?({_UNIT_RE})s?\b", q)
    if m:
        f["ordinal"] = _ordinal(m.group(1))
        f["unit"] = UNITS[m.group(m.lastindex)]
    else:
        m = re.search(rf"\b({_UNIT_RE})s?\b", q)
        if m and ("word_of" in f or "named" in f or "starts_with" in f or "year" in f):
            f["unit"] = UNITS[m.group(1)]
    # which column: left/right/middle, or an ordinal column
    m = re.search(r"\b(left|right|middle|centre|center)(?:-hand|most)?\s+(?:\w+\s+)?column\b", q)
    if m:
        f["column"] = {"centre": "middle", "center": "middle"}.get(m.group(1), m.group(1))
    else:
        m = re.search(rf"\b({_ORD_RE})\s+column\b", q)
        if m:
            f["column"] = _ordinal(m.group(1))
    if f.get("unit") == "column" and "column" in f:  # "second column" names the column, not a unit in it
        f.pop("unit")
        f.pop("ordinal", None)
    # the page's title
    if re.search(
        r"\b(?:title|headline|main heading|name) of (?:this|the) (?:page|document|article|report|sheet|text)"
        r"|\b(?:page|document|article|report|text) (?:is )?(?:called|titled|entitled)\b"
        r"|\bwhat is (?:this|the) (?:page|document|article|report)'?s? (?:title|headline)\b"
        r"|\bheadline\b|\bpage title\b|\bdocument title\b",
        q,
    ):
        f["title"] = True
    # superlatives and comparisons
    if re.search(r"\b(?:highest|largest|biggest|greatest|most|maximum|max|peak|peaked|top|best|tallest|longest)\b", q):
        f["compare"] = "max"
    elif re.search(r"\b(?:lowest|smallest|least|fewest|minimum|min|weakest|worst|shortest|bottom)\b", q):
        f["compare"] = "min"
    elif re.search(r"\b(?:more|greater|higher|larger|exceed(?:s|ed)?|above)\s+than\b|\bexceed", q):
        f["compare"] = "more"
    elif re.search(r"\b(?:less|fewer|lower|smaller)\s+than\b|\bbelow\b", q):
        f["compare"] = "less"
    if f.get("compare") in ("max", "min") and re.search(r"\b(?:top|bottom)\s+(?:of|row|line|left|right)\b", q):
        f.pop("compare")  # "top of the page", "bottom row" are positions, not superlatives
    if (
        f.get("compare") in ("max", "min")
        and _WHERE_ON_PAGE.search(q)
        and not _SUPERLATIVE.search(_WHERE_ON_PAGE.sub(" ", q))
    ):
        f.pop("compare")  # "the name at the top", "look near the top or bottom": where to look, not a superlative
    if f.get("compare") and (
        re.search(r"\bhow (?:much|many|high|low)\b", q)
        or (
            re.search(
                r"\b(?:what|which) (?:is|was|are|were) (?:the )?(?:\w+ )?(?:value|number|amount|figure|count|"
                r"total|score|level|reading)s?\b",
                q,
            )
            and not re.search(
                r"\b(?:which|what) \w+ (?:has|had|have|"
                r"shows?|showed|reached|reaches)\b",
                q,
            )
        )
    ):
        f["wants_value"] = True
    # ordinal month / weekday ("the third month of the year", "the second day of the week")
    m = re.search(rf"\b({_ORD_RE})\s+month\b", q)
    if m and (n := _ordinal(m.group(1))) and 1 <= n <= 12:
        name = MONTHS[n - 1]
        f["implied_labels"] = (name, name[:3]) if len(name) > 3 else (name,)
    m = re.search(rf"\b({_ORD_RE})\s+(?:\w+\s+)?day of the (?:working )?week\b", q)
    if m and (n := _ordinal(m.group(1))) and 1 <= n <= 7:
        name = WEEKDAYS[n - 1]
        f["implied_labels"] = (name, name[:3])
    return StructuralQuery(**f)


# ------------------------------------------------------------------------------------------------- resolution


def _match_words(layout: Layout, phrase: str, start: int = 0, end: int | None = None) -> tuple[int, int] | None:
    """(first, last) word indices of the best occurrence of ``phrase`` in ``layout.words[start:end]`` (reading
    order, so a phrase can run over a line break); fuzzy: the most phrase tokens in order, ties to the earliest."""
    target = _words(phrase)
    if not target:
        return None
    # token by token: a word OCR read as "New-York." holds two tokens (layout.scan_rows)
    toks, owner, first = word_tokens([_words(w.text) for w in layout.words])
    start, end = first[start], first[len(layout.words) if end is None else end]
    best, best_at = 0.0, None
    n = len(target)
    for i in range(start, max(start, end - n + 1)):
        window = toks[i : i + n]
        score = sum(tok_eq(a, b) for a, b in zip(window, target, strict=False)) / n
        if score > best + 1e-9:
            best, best_at = score, i
    if best_at is None or best < 0.6:
        got = match_span(toks, target, start, end)  # OCR noise: glued, split or misread words (layout.scans)
        return None if got is None else (owner[got[0]], owner[got[1]])
    return owner[best_at], owner[best_at + n - 1]


def _text_score(text: str, name: str) -> float:
    """Share of ``name``'s words found in ``text`` (OCR slips allowed)."""
    want = _words(name)
    have = _words(text)
    if not want or not have:
        return 0.0
    return sum(max(tok_eq(w, h) for h in have) for w in want) / len(want)


def _word_regions(layout: Layout, idx: range | list[int]) -> list[Box]:
    return [layout.words[k].box for k in idx if 0 <= k < len(layout.words)]


def _line_boxes(layout: Layout, lines: tuple[int, ...] | list[int]) -> list[Box]:
    return [layout.lines[i].box for i in lines]


def _column_index(layout: Layout, col: str | int) -> int | None:
    n = len(layout.columns)
    if n == 0:
        return None
    if isinstance(col, int):
        k = col - 1 if col > 0 else n + col
        return k if 0 <= k < n else None
    return {"left": 0, "right": n - 1, "middle": n // 2}.get(col)


_YEAR_RE = re.compile(r"\W*(1[5-9]\d\d|20\d\d)(?:s|'s)?\W*")


def _named_section(layout: Layout, name: str) -> int | None:
    """Index into ``layout.sections`` of the section whose heading reads ``name`` best (None below 0.6)."""
    scored = [
        (_text_score(layout.block_text(s.heading), name), k)
        for k, s in enumerate(layout.sections)
        if s.heading is not None
    ]
    if scored and (best := max(scored))[0] >= 0.6:
        return best[1]
    return None


def _heading_regions(layout: Layout, sec: int) -> list[Box]:
    """The heading line(s) of section ``sec`` (the evidence chain's name of the unit)."""
    head = layout.sections[sec].heading
    return [] if head is None else _line_boxes(layout, layout.blocks[head].lines)


def _unit_blocks(layout: Layout, sq: StructuralQuery) -> tuple[list[int], str] | None:
    """Blocks of the unit the query names (section by heading, paragraph by first words, or by ordinal)."""
    if sq.named and (k := _named_section(layout, sq.named)) is not None:
        sec = layout.sections[k]
        return list(sec.blocks), f"section {layout.block_text(sec.heading)!r}"
    if sq.starts_with:
        n = len(_words(sq.starts_with))
        scored = [
            (_text_score(" ".join(_words(layout.block_text(b))[: n + 1]), sq.starts_with), b)
            for b in range(len(layout.blocks))
            if layout.blocks[b].role != "title"
        ]
        if scored and (best := max(scored))[0] >= 0.6:
            return [best[1]], f"paragraph starting {sq.starts_with!r}"
    if sq.ordinal is not None and sq.unit in ("section", "paragraph"):
        units = _ordinal_units(layout, sq)
        if units:
            k = sq.ordinal - 1 if sq.ordinal > 0 else len(units) + sq.ordinal
            if 0 <= k < len(units):
                return units[k], f"{sq.unit} #{sq.ordinal}"
    return None


def _ordinal_units(layout: Layout, sq: StructuralQuery) -> list[list[int]]:
    """The sections (lists of blocks) or paragraphs (single blocks) that an ordinal counts, in reading order."""
    col = _column_index(layout, sq.column) if sq.column is not None else None
    if sq.unit == "section":
        secs = [s for s in layout.sections if s.heading is not None and (col is None or s.column == col)]
        return [list(s.blocks) for s in secs]
    return [[k] for k, b in enumerate(layout.blocks) if b.role == "paragraph" and (col is None or b.column == col)]


def _label_band(layout: Layout, i: int) -> Box:
    """Where a category label's value lies in a chart: the band from the label across the plot, up (labels side
    by side on an x axis) or to the right (labels stacked on a y axis), as far as the page's numbers reach; so the
    value is kept even where OCR missed it (a small number on the plotted line)."""
    x0, y0, x1, y1 = layout.boxes[i][1]
    h = y1 - y0
    side_by_side = sum(
        1
        for j in layout.labels
        if j != i and min(y1, layout.boxes[j][1][3]) - max(y0, layout.boxes[j][1][1]) >= 0.5 * h
    )
    stacked = sum(
        1
        for j in layout.labels
        if j != i and min(x1, layout.boxes[j][1][2]) - max(x0, layout.boxes[j][1][0]) >= 0.5 * (x1 - x0)
    )
    nums = [layout.boxes[j][1] for j in layout.values] or [layout.boxes[i][1]]
    if side_by_side >= stacked:
        pad = 0.5 * (x1 - x0)
        return (x0 - pad, min(b[1] for b in nums), x1 + pad, y1)
    return (x0, y0, max(b[2] for b in nums), y1)


def _aligned(layout: Layout, idx: tuple[int, ...] | list[int]) -> list[int]:
    """The boxes of ``idx`` that line up with at least two others of them, side by side (sharing half the larger
    height) or stacked (sharing half the larger width): a chart's category labels along an axis, a table's row
    labels; a title or a lone axis title does not line up."""
    out = []
    for i in idx:
        x0, y0, x1, y1 = layout.boxes[i][1]
        row = col = 0
        for j in idx:
            if j == i:
                continue
            a0, b0, a1, b1 = layout.boxes[j][1]
            row += min(y1, b1) - max(y0, b0) >= 0.5 * max(y1 - y0, b1 - b0)
            col += min(x1, a1) - max(x0, a0) >= 0.5 * max(x1 - x0, a1 - a0)
        if max(row, col) >= 2:
            out.append(i)
    return out


def resolve(layout: Layout, sq: StructuralQuery) -> Evidence | None:
    """The evidence ``sq`` needs on ``layout``, or None when the query is not structural or nothing was found.

    Args:
        layout: ``arr_coc.reading.layout.structure.analyse`` of the page's OCR boxes.
        sq: ``parse`` of the question.
    """
    if not layout.words:
        return None
    if (named := named_evidence(layout, sq)) is not None:  # a named section's extent (``.sections``)
        return Evidence(named[0], named[1], detail=named[2])
    if sq.assigned:
        # "x = ..." in reading order: the variable, then "=" (its own word or glued to it), then what follows
        for i, w in enumerate(layout.words):
            name = w.text.rstrip("=:").lower()
            glued = w.text.endswith("=")
            nxt = layout.words[i + 1].text if i + 1 < len(layout.words) else ""
            if name == sq.assigned and (glued or nxt.startswith("=")):
                return Evidence(
                    "after-phrase",
                    _word_regions(layout, range(i, i + 2 + AFTER_PHRASE_WORDS)),
                    detail=f"assignment to {sq.assigned!r} at word {i}",
                )
    if sq.after or sq.before:
        phrase = sq.after or sq.before
        sec = _named_section(layout, sq.named) if sq.named else None
        span, head = None, []
        if sec is not None:  # the phrase inside the named section only (its words are contiguous in reading order)
            ids = layout.section_words(sec)
            span = _match_words(layout, phrase, min(ids), max(ids) + 1) if ids else None
            head = _heading_regions(layout, sec)
        if span is None:
            span, head = _match_words(layout, phrase), []
        if span is not None:
            a, b = span
            idx = range(a, b + 1 + AFTER_PHRASE_WORDS) if sq.after else range(a - AFTER_PHRASE_WORDS, b + 1)
            return Evidence("after-phrase", _word_regions(layout, idx) + head, detail=f"phrase {phrase!r} at word {a}")
    if sq.year and sq.named:
        sec = _named_section(layout, sq.named)
        if sec is not None:
            years = [k for k in layout.section_words(sec) if _YEAR_RE.fullmatch(_norm(layout.words[k].text))]
            if years:
                return Evidence(
                    "year-in-unit",
                    _word_regions(layout, years) + _heading_regions(layout, sec),
                    detail=f"section {layout.block_text(layout.sections[sec].heading)!r}, {len(years)} year(s)",
                )
    if sq.word_of:
        found = _unit_blocks(layout, sq)
        if found is not None:
            blocks, what = found
            body = [b for b in blocks if layout.blocks[b].role != "heading"] or blocks
            first_line = layout.blocks[body[0]].lines[0]
            last_line = layout.blocks[body[-1]].lines[-1]
            target = last_line if sq.word_of == "last" else first_line
            # the evidence chain: the unit's name (heading or first words) and the line holding the word
            head = [layout.blocks[blocks[0]].lines[0]] if layout.blocks[blocks[0]].role == "heading" else [first_line]
            return Evidence(
                "word-of-unit", _line_boxes(layout, sorted({target, *head})), detail=f"{what}, {sq.word_of} word"
            )
    if sq.ordinal is not None and sq.unit in ("section", "paragraph"):
        units = _ordinal_units(layout, sq)
        k = None
        if units:
            k = sq.ordinal - 1 if sq.ordinal > 0 else len(units) + sq.ordinal
        if k is not None and 0 <= k < len(units):
            # counting needs every unit up to the counted one: keep each one's first line, and the counted unit's
            # head and first body line
            heads = [layout.blocks[u[0]].lines[0] for u in units[: k + 1]] if k >= 0 else []
            target = units[k]
            body = [layout.blocks[b].lines[0] for b in target[:2]]
            return Evidence(
                "ordinal-unit",
                _line_boxes(layout, sorted({*heads, *body})),
                detail=f"{sq.unit} {k + 1} of {len(units)}",
            )
    if sq.title and layout.title:
        return Evidence(
            "title", _line_boxes(layout, layout.title), detail=" ".join(layout.line_text(i) for i in layout.title)
        )
    if sq.compare and len(layout.values) >= 2:
        categories = set(_aligned(layout, layout.labels))
        others = [i for i in layout.labels if i not in categories]
        w = COMPARE_WEIGHTS
        groups = [
            (layout.values, w["asked"] if sq.wants_value else w["needed"]),
            (sorted(categories), w["needed"] if sq.wants_value else w["asked"]),
            (others, w["other"]),
        ]
        regions = [layout.boxes[i][1] for idx, _ in groups for i in idx]
        weights = [wt for idx, wt in groups for _ in idx]
        return Evidence(
            "compare",
            regions,
            weights=weights,
            detail=f"{len(layout.values)} values, {len(categories)} category labels, {len(others)} other labels",
        )
    if sq.implied_labels:
        keys = [i for i, (t, _) in enumerate(layout.boxes) if any(w in sq.implied_labels for w in _words(t))]
        if keys:
            regions = [layout.boxes[i][1] for i in keys] + [_label_band(layout, i) for i in keys]
            return Evidence("implied-label", regions, keys=keys, detail=f"label {sq.implied_labels[0]!r}")
    return None
