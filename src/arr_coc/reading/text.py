"""The text path's one normaliser: every query and every recognised box goes through these two functions.

``clean`` is what the query cues (``arr_coc.query``) see: NFKC (full-width and compatibility forms folded), whitespace
collapsed, case kept (capitals are a cue). ``fold`` is what matching compares: ``clean``, lower case, typographic
apostrophes and backticks folded to ``'``, thousands separators dropped between digits ("1,234.00" -> "1234.00").
Lexical matching (``lexical.tokens``), structural questions (``structural_query``) and the query cues all start
from them, so a query is normalised the same way everywhere.

Example:
    >>> fold("Total：  1,234.00 ’EUR’")
    "total: 1234.00 'eur'"
"""

from __future__ import annotations

import re
import unicodedata

_QUOTES = re.compile(r"[’‘`´]")
_THOUSANDS = re.compile(r"(?<=\d)[,\u2009\u202f'](?=\d{3}\b)")


_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"  # what a character that is not valid Unicode becomes (see ``clean``)


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate (U+D800-U+DFFF: not text, so no tokenizer or encoder takes it) as U+FFFD.

    They reach Python from a byte the terminal's encoding could not decode (``$'F\\xe4lligkeit'`` typed in a Latin-1
    terminal arrives in ``sys.argv`` as ``'F\\udce4lligkeit'``) or from a JSON ``"\\ud800"`` escape.
    """
    return _SURROGATE.sub(REPLACEMENT, str(text))


def clean(text: str) -> str:
    """NFKC-normalised ``valid_text(text)`` with runs of whitespace collapsed to one space (case kept)."""
    return " ".join(unicodedata.normalize("NFKC", valid_text(text)).split())


def fold(text: str) -> str:
    """``clean(text)`` in lower case, apostrophes folded, thousands separators between digits dropped."""
    s = _QUOTES.sub("'", clean(text).lower())
    return _THOUSANDS.sub("", s)
