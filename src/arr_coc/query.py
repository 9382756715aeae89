"""Query analysis: what a question asks for, in features the scorers and the balancer can use without a model.

A question like "What is the invoice number?" is *specific* (it names a thing to find) and *textual* (the answer
is written); "Describe the image" is *vague*; "What colour is the car in the top left?" carries a spatial cue
(top, left) and a colour cue. These cues steer the training-free participatory scorer on the texture path and the
tension balancer on every path.

Example:
    >>> cues = parse_query("What is written in the top left corner?")
    >>> cues.wants_text, cues.where
    (True, {'top': 1.0, 'left': 1.0})
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .reading.text import REPLACEMENT, clean, fold

if TYPE_CHECKING:
    from .config import RelevanceConfig

MAX_QUERY_CHARS = 4000  # longer queries are cut to this many characters (documented clamp)

_WORD = re.compile(r"[^\W_]+(?:['.,-][^\W_]+)*", re.UNICODE)
STOP_WORDS = frozenset(
    """a an the of in on at to for from by with and or is are was were be been it its this that these those what
    which who whom whose when where why how much many does do did can could should would will shall may might
    there here their them they he she his her you your we our i me my please tell give find show say says said must
    need needs image picture photo document page shown written write displayed listed stated mentioned value""".split()
)
_VAGUE = frozenset(
    """describe description overall summary summarize summarise general scene everything happening whole caption
    main gist""".split()
)
_TEXT = frozenset(
    """text written write says say said read word words title heading label labelled labeled number numbers name
    date total amount price cost sum due invoice receipt table row column cell value code id address phone email
    sign caption letter letters digit digits figure percent percentage chart bar year paid pay owed due""".split()
)
_WHERE = {
    "top": "top", "upper": "top", "above": "top", "header": "top", "heading": "top", "title": "top",
    "bottom": "bottom", "lower": "bottom", "below": "bottom", "footer": "bottom", "footnote": "bottom",
    "left": "left", "right": "right", "centre": "centre", "center": "centre", "middle": "centre",
}  # fmt: skip
COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (0.85, 0.1, 0.1), "green": (0.1, 0.65, 0.2), "blue": (0.1, 0.25, 0.85), "yellow": (0.95, 0.85, 0.1),
    "orange": (0.95, 0.55, 0.1), "purple": (0.5, 0.2, 0.6), "pink": (0.95, 0.5, 0.7), "brown": (0.5, 0.3, 0.15),
    "black": (0.05, 0.05, 0.05), "white": (0.95, 0.95, 0.95), "gray": (0.5, 0.5, 0.5), "grey": (0.5, 0.5, 0.5),
}  # fmt: skip


@dataclass(frozen=True)
class QueryCues:
    """Cues read off a query's words."""

    text: str  # the query, normalised (NFKC, whitespace collapsed, cut to MAX_QUERY_CHARS)
    content_words: tuple[str, ...]  # lower-case words that are not stop words
    specificity: float  # in [0, 1]: names something to find (content words, numbers, quotes, capitals)
    vagueness: float  # in [0, 1]: asks about the whole image ("describe", "what is happening")
    wants_text: bool  # the answer is probably written (document/OCR question)
    where: dict[str, float] = field(default_factory=dict)  # spatial cues: top/bottom/left/right/centre -> 1.0
    colours: tuple[tuple[float, float, float], ...] = ()  # RGB targets of colour words


def normalize_text(text: str) -> str:
    """NFKC-normalise, collapse whitespace, cut to MAX_QUERY_CHARS characters."""
    return clean(text)[:MAX_QUERY_CHARS]  # the text path's one normaliser (``arr_coc.reading.text``)


def broken_text_notes(text: str) -> list[str]:
    """A note when ``text`` holds characters that are not valid text (U+FFFD, or lone surrogates ``clean`` turns
    into U+FFFD): ``[]`` otherwise."""
    broken = sum(ch == REPLACEMENT or "\ud800" <= ch <= "\udfff" for ch in str(text))
    if not broken:
        return []
    return [
        f"the question has {broken} character(s) that are not valid text (a byte from a terminal that is not UTF-8, "
        "or a lone surrogate escape in JSON); they were read as U+FFFD and match nothing: use UTF-8"
    ]


def words(text: str) -> list[str]:
    """Lower-case word tokens of ``text`` (letters/digits, keeping inner '.', ',', '-' and apostrophes)."""
    return _WORD.findall(fold(text))  # the text path's one normaliser (``arr_coc.reading.text``)


def parse_query(query: str | None, config: RelevanceConfig | None = None) -> QueryCues:
    """Read the cues of ``query``; ``None`` or an empty query gives a vague, cue-free result.

    ``config`` (default ``RelevanceConfig()``) holds the specificity and vagueness weights.
    """
    if config is None:
        from .config import RelevanceConfig

        config = RelevanceConfig()
    text = normalize_text(query or "")
    toks = words(text)
    content = tuple(w for w in toks if w not in STOP_WORDS)
    quoted = len(re.findall(r"[\"“'‘][^\"”'’]+[\"”'’]", text))
    numbers = sum(any(ch.isdigit() for ch in w) for w in content)
    capitals = sum(1 for w in _WORD.findall(text)[1:] if w[:1].isupper())
    vague_hits = sum(w in _VAGUE for w in toks)
    n_content = len([w for w in content if w not in _VAGUE and w not in _WHERE])
    specificity = min(
        1.0,
        config.specificity_per_word * n_content
        + config.specificity_per_number * (quoted + numbers)
        + config.specificity_per_capital * capitals,
    )
    no_content = config.vagueness_no_content if n_content == 0 else 0.0
    vagueness = 1.0 if not toks else min(1.0, config.vagueness_per_word * vague_hits + no_content)
    where = {_WHERE[w]: 1.0 for w in toks if w in _WHERE}
    colours = tuple(COLOURS[w] for w in toks if w in COLOURS)
    wants_text = quoted > 0 or numbers > 0 or any(w in _TEXT for w in toks)
    return QueryCues(text, content, specificity, vagueness, wants_text, where, colours)
