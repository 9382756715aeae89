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


def clean(text: str) -> str:
    """NFKC-normalised ``text`` with runs of whitespace collapsed to one space (case kept)."""
    return " ".join(unicodedata.normalize("NFKC", str(text)).split())


def fold(text: str) -> str:
    """``clean(text)`` in lower case, apostrophes folded, thousands separators between digits dropped."""
    s = _QUOTES.sub("'", clean(text).lower())
    return _THOUSANDS.sub("", s)
