"""The text path's one normaliser: every query and every recognised box goes through these two functions.

``clean`` is what the query cues (``arr_coc.query``) see: NFKC (full-width and compatibility forms folded), Greek and
Cyrillic letters drawn like Latin ones folded to those when they sit inside a Latin word (``fold_homoglyphs``:
"Tοpic" with a Greek omicron is "Topic"), whitespace collapsed, case kept (capitals are a cue). ``fold`` is what
matching compares: ``clean``, lower case, typographic apostrophes and backticks folded to ``'``, thousands separators
dropped between digits ("1,234.00" -> "1234.00").
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


# Greek and Cyrillic letters that are drawn like a Latin letter (Unicode's confusables, the unambiguous ones): a
# "Tοpic" typed or pasted with a Greek omicron, a "Cоde" with a Cyrillic o, reads as the Latin word it looks like
HOMOGLYPHS = {
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοιρνκχ", "ABEZHIKMNOPTYXoipvkx", strict=True)),  # Greek
    **dict(zip("АВЕКМНОРСТХУЅІЈаеорсухѕіјԁһ", "ABEKMHOPCTXYSIJaeopcyxsijdh", strict=True)),  # Cyrillic
}
_HOMOGLYPH_TABLE = str.maketrans(HOMOGLYPHS)
_HOMOGLYPH_RE = re.compile("[" + "".join(HOMOGLYPHS) + "]")
_WORD = re.compile(r"[^\W\d_]+")


def _latin_word(word: re.Match[str]) -> str:
    w = word.group()
    if _HOMOGLYPH_RE.search(w) and any(ord(ch) < 0x250 for ch in w):  # a Latin letter beside a look-alike
        return w.translate(_HOMOGLYPH_TABLE)
    return w


def fold_homoglyphs(text: str) -> str:
    """``text`` with the Greek and Cyrillic look-alikes of Latin letters (``HOMOGLYPHS``) folded to those letters
    inside every word that also holds a Latin letter ("Tοpic" -> "Topic"); a word wholly in Greek or Cyrillic
    ("Τορ", "счёт") is left as it is.

    Example:
        >>> fold_homoglyphs("T\u03bfpic: \u0441чёт")
        'Topic: счёт'
    """
    if text.isascii() or not _HOMOGLYPH_RE.search(text):
        return text
    return _WORD.sub(_latin_word, text)


_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"  # what a character that is not valid Unicode becomes (see ``clean``)


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate (U+D800-U+DFFF: not text, so no tokenizer or encoder takes it) as U+FFFD.

    They reach Python from a byte the terminal's encoding could not decode (``$'F\\xe4lligkeit'`` typed in a Latin-1
    terminal arrives in ``sys.argv`` as ``'F\\udce4lligkeit'``) or from a JSON ``"\\ud800"`` escape.
    """
    return _SURROGATE.sub(REPLACEMENT, str(text))


def clean(text: str) -> str:
    """NFKC-normalised ``valid_text(text)``, Latin look-alikes folded (``fold_homoglyphs``), runs of whitespace
    collapsed to one space (case kept)."""
    return " ".join(fold_homoglyphs(unicodedata.normalize("NFKC", valid_text(text))).split())


def fold(text: str) -> str:
    """``clean(text)`` in lower case, apostrophes folded, thousands separators between digits dropped."""
    s = _QUOTES.sub("'", clean(text).lower())
    return _THOUSANDS.sub("", s)
