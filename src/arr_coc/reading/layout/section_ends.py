"""Where a named section ends (``sections.named_extent``): lines that look like the next section's heading but
cannot be one, from the text around them, and the line its last sentence ends on.

- ``cut_word_open``: the section's text so far ends in a word cut by a hyphen at a line's end ("in all set-"): the
  word goes on in the next line of running text, so no heading can come between (a table's bold header at the top
  of the next column, read as a heading above prose, is the table's and the section goes on under it);
- ``list_item``: a numbered line whose words after the number open with a label and a colon and go on in lower
  case ("I. Statistical: uses one or more ...", "II. Hybrid: defines ...") is an entry of a list, not a numbered
  heading (a heading's title does not go on into a sentence);
- ``ends_sentence``: a section's last word ends its last sentence; where the lines that close the extent end none
  (a formula's or an algorithm box's lines: "\u2200 build-feature: h-pos, d-pos"), the last line that ends one holds
  it too.

Round 10 (from round 7's group, development since this round):

- ``opens_list``: a line ending in a colon ("... In steps:", "as follows:") introduces what comes under it (a list,
  a formula): the next line is no heading;
- ``out_of_outline``: a numbered line whose number cannot come next in the page's outline is a list's entry, not a
  heading: a number not after the named heading's ("1. Threshold Cut" under "2.1.1 Gaussian prior", "1. Sample ..."
  under "4.2.2 In-place MSB"), or one that goes on a numbered list already inside the section ("5. Else range
  partition ..." after its "4. If not 1st pass ...");
- ``question_title``: a numbered heading may end in a question mark ("5.2 Where to include ELMo?").

Round 11 (from round 10's group, development since this round):

- ``row_fragment``: a short line that has a run of words beside it, to its right on the same row of its column, is
  the first piece of a line of prose that an inline formula cut apart ("First, although" | "|A|" | "is exponential
  in the number of"): no heading stands with prose beside it in its own column;
- ``line_runs``: the words kept around an asked phrase are one run of text: on each line, one box from the first
  kept word to the last, the spaces between them included (a word's box is interpolated from its OCR line's
  character positions, and the printed word may sit a few pixels off it, into the space beside it).

Round 12 (from round 11's group, development since this round):

- ``figure_label``: a short line with a figure's caption ("Figure 3: ...") close under it (within ``CAPTION_BELOW``
  of its height) is a label of that figure (an axis's "Recall"), not a heading: a heading stands above its text, and
  a figure's caption stands under the figure (a table's caption may stand above the table, so only figures count);
- ``capitalised_name``: a section named unquoted in title case in the question as asked ("in the Previous Work
  section"), whose first word the folded question reads as a position ("in the previous section") and so drops;
- ``taller_title``: where two lines spell the asked title equally well, the one printed clearly taller (by
  ``TALLER`` or more) is the heading ("Comparative physiological and metabolomics" as a paper's title, not its
  body-size copy in the citation box beside it).

Example:
    >>> cut_word_open("also outperforms TAPAS baseline models in all set-")
    True
"""

from __future__ import annotations

import re

__all__ = [
    "cut_word_open",
    "ends_sentence",
    "list_item",
    "opens_list",
    "out_of_outline",
    "outline",
    "question_title",
    "line_runs",
    "row_fragment",
    "figure_label",
    "taller_title",
    "long_section_name",
    "capitalised_name",
]

_CUT_RE = re.compile(r"[^\W\d_]{2}-$")  # "set-", not "--", "x-", "12-" or a dash standing alone
_CLOSERS = " )]\"'\u2019\u201d"  # after a sentence's full stop: a bracket, a quote
_OUTLINE_RE = re.compile(r"^\s*(\d{1,2}(?:\.\d{1,2})*)(?:[.)]|(?=\s))\s*(?=[^\W\d_])")  # "4.2.2 ", "1. ", "2) "
_QUESTION_RE = re.compile(r"^\s*(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,5}\.)\s+[^\W\d_][^?]{0,80}\?$")
_ITEM_RE = re.compile(r"^\s*(?:\d{1,2}|[IVX]{1,5}|[A-Ha-h])[.)]?\s+[^:\s][^:]{0,40}:\s+[a-z]")  # "I. Statistical: uses"


def cut_word_open(text: str) -> bool:
    """The line ends in a word cut by a hyphen (two letters, then "-" as its last character)."""
    return _CUT_RE.search(text.rstrip()) is not None


def list_item(text: str) -> bool:
    """The line, after its number, opens with a label and a colon and goes on in lower case ("I. Statistical: uses
    one or more ...", "2) Hybrid: defines ..."): a list's entry, not a heading."""
    return _ITEM_RE.match(text) is not None


def ends_sentence(text: str) -> bool:
    """The line ends a sentence: its last character, closing brackets and quotes aside, is ".", "!" or "?", after a
    word (three letters running somewhere in the line)."""
    return text.rstrip(_CLOSERS)[-1:] in (".", "!", "?") and re.search(r"[^\W\d_]{3}", text) is not None


def opens_list(text: str) -> bool:
    """The line ends in a colon after a word ("schemas with larger types than necessary. In steps:"): what comes
    under it is its list or formula, not the next section."""
    t = text.rstrip()
    return t.endswith(":") and re.search(r"[^\W\d_]{2}:$", t) is not None


def outline(text: str) -> tuple[int, ...] | None:
    """The arabic section number a line opens with ("4.2.2 In-place MSB" -> (4, 2, 2), "1. Sample" -> (1,)), or
    None."""
    m = _OUTLINE_RE.match(text)
    return tuple(int(v) for v in m.group(1).split(".")) if m else None


def out_of_outline(text: str, head: str, inside: list[str]) -> bool:
    """The numbered line ``text`` cannot be the heading after the named heading ``head``: its number does not come
    after the heading's own (both arabic), or it goes on a numbered list whose previous entry is one of the section's
    lines ``inside`` ("5. ..." after "4. ..."; the caller passes the lines set with as much space above them as
    ``text``, so a heading "5. EXPERIMENTAL EVALUATION" with white space above it goes on no list)."""
    num = outline(text)
    if num is None:
        return False
    own = outline(head)
    if own is not None and num <= own:
        return True
    prev = (*num[:-1], num[-1] - 1)
    return num[-1] > 1 and any(outline(t) == prev for t in inside)


def question_title(text: str) -> bool:
    """A numbered title that asks a question ("5.2 Where to include ELMo?"): short, a section number, a capital,
    a question mark at its end."""
    t = text.strip()
    return _QUESTION_RE.match(t) is not None and len(t.split()) <= 11 and t[len(t.split()[0]) :].strip()[:1].isupper()


ROW_WORDS = 3  # a piece beside a line on its row holds this many words to make the line a fragment of prose (round 11)


def row_fragment(box, beside: list[tuple[tuple[float, float, float, float], str]]) -> bool:
    """``box`` (a line's) is the first piece of a line of prose cut by an inline formula (round 11): one of ``beside``
    (the other lines of its column, as ``(box, text)``) starts to its right, on the same row (their heights overlap
    by half the shorter one), and holds ``ROW_WORDS`` words or more."""
    h = box[3] - box[1]
    for b, text in beside:
        overlap = min(box[3], b[3]) - max(box[1], b[1])
        if (
            b[0] >= box[2]
            and overlap >= 0.5 * min(h, b[3] - b[1])
            and len(re.findall(r"[^\W\d_]{2,}", text)) >= ROW_WORDS
        ):
            return True
    return False


def line_runs(words: list[tuple[int, tuple[float, float, float, float]]]) -> list[tuple[float, float, float, float]]:
    """``words`` (``(line, box)`` in reading order) as one box a run of consecutive words of a line (round 11)."""
    out: list[list[float]] = []
    last = None
    for line, b in words:
        if out and line == last:
            r = out[-1]
            out[-1] = [min(r[0], b[0]), min(r[1], b[1]), max(r[2], b[2]), max(r[3], b[3])]
        else:
            out.append(list(b))
        last = line
    return [tuple(r) for r in out]


CAPTION_BELOW = 1.5  # a figure's caption within this many of a line's heights under it makes it a label (round 12)
_FIGURE_RE = re.compile(
    r"^\s*fig(?:ure)?\.?\s*\d{1,2}(?:\.\d{1,2})?\s*[:.\u2013\u2014-]", re.I
)  # "Figure 3:", not "Figure 7 shows"


def figure_label(box, below: tuple[tuple[float, float, float, float], str] | None) -> bool:
    """``box`` (a heading-like line's) is a label inside a figure (round 12): ``below`` (the next line of its column,
    as ``(box, text)``) is the figure's caption and starts within ``CAPTION_BELOW`` of the line's height under it."""
    if below is None:
        return False
    b, text = below
    return _FIGURE_RE.match(text) is not None and 0 <= b[1] - box[3] <= CAPTION_BELOW * (box[3] - box[1])


TALLER = 1.3  # a title line this many times taller than an equally well spelled one is the heading (round 12)


def taller_title(cands: list[tuple[int, float]], chosen: int) -> int:
    """Of ``cands`` (``(position, height)`` of the lines that spell the asked title as well as the ``chosen``
    position's), the tallest where it is ``TALLER`` times the chosen line's height or more, else ``chosen``."""
    h = dict(cands).get(chosen, 0.0)
    pos, top = max(cands, key=lambda c: (c[1], -c[0]), default=(chosen, h))
    return pos if h > 0 and top >= TALLER * h else chosen


_LONG_NAME_RE = re.compile(
    r"\bin the (?!(?:first|second|third|last|next|previous|same|this|that|left|right|middle|other)\b)"
    r"([a-z0-9][^\"'\u201c\u201d\u2018\u2019\u00ab\u00bb?]{0,120}?)\s+(?:section|part|chapter)\b"
)


def long_section_name(q: str) -> str | None:
    """A section named unquoted by a long title in a folded question ("the next word after 'align' in the rq3: is it
    useful to align summary units section"), which ``structural_query.parse``'s short form (at most four plain
    words) misses; asked only where the question also asks a word after / before, a year or a first / last word,
    the questions ``named_evidence`` answers (here since round 12; ``sections`` re-exports it)."""
    m = _LONG_NAME_RE.search(q)
    return m.group(1).strip() if m else None


_CAPS_NAME_RE = re.compile(r"\bin the ((?:[A-Z][\w&-]*\s+){2,6}?)(?:section|part|chapter)\b")


def capitalised_name(query: str) -> str | None:
    """A section named unquoted by two to six capitalised words before "section" in ``query`` as asked (not folded):
    "in the Previous Work section" -> "Previous Work" (round 12)."""
    m = _CAPS_NAME_RE.search(query)
    return m.group(1).strip() if m else None
