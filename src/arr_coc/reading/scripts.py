"""Which scripts the text path reads, and one line for the user about each word it cannot.

The shipped OCR model (PP-OCR through rapidocr, ``OcrConfig.charset="auto"``) reads Simplified and Traditional
Chinese, Japanese (kana and kanji) and Latin-script languages (English, German, French, Spanish, Italian,
Portuguese, ...); the lexical matcher tokenises all of them (``matching.lexical.tokens``). Words in any other script
cannot be found on a page, so they match nothing: a question with no readable word falls back to query-blind, as an
empty question does, and says so.

Example:
    >>> script_of("発"), script_of("é"), script_of("ب"), script_of("ก")
    ('cjk', 'latin', 'arabic', 'thai')
    >>> script_notes("合计金额是多少？")
    []
"""

from __future__ import annotations

import unicodedata

from .text import fold_homoglyphs

READ = ("latin", "cjk")  # the scripts the OCR and the matcher read
# the scripts a question may hold that the text path cannot read: why, in a few words
UNREAD = {
    "hangul": "Korean (Hangul): the shipped OCR model has no Korean classes (PP-OCR's separate Korean model is not "
    "shipped; set ocr.rec_model_path to it)",
    "arabic": "Arabic, a right-to-left script the shipped OCR model does not read",
    "hebrew": "Hebrew, a right-to-left script the shipped OCR model does not read",
    "devanagari": "Devanagari, which the shipped OCR model does not read",
    "thai": "Thai, which the shipped OCR model does not read",
    "cyrillic": "Cyrillic, which the shipped OCR model does not read",
    "greek": "Greek, which the shipped OCR model does not read",
    "other": "a script the shipped OCR model does not read",
}
_NAMES = (  # the first word of a character's Unicode name -> its script
    ("LATIN", "latin"), ("CJK", "cjk"), ("HIRAGANA", "cjk"), ("KATAKANA", "cjk"), ("HALFWIDTH KATAKANA", "cjk"),
    ("HANGUL", "hangul"), ("ARABIC", "arabic"), ("HEBREW", "hebrew"), ("DEVANAGARI", "devanagari"),
    ("THAI", "thai"), ("CYRILLIC", "cyrillic"), ("GREEK", "greek"),
)  # fmt: skip


def script_of(ch: str) -> str | None:
    """The script of one character ("latin", "cjk", "hangul", "arabic", ...; "other" for a letter of another
    script), None for a character that is not a letter (digits, punctuation, spaces, symbols)."""
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    for prefix, script in _NAMES:
        if name.startswith(prefix):
            return script
    return "other"


def script_notes(text: str) -> list[str]:
    """One line about the words of ``text`` the text path cannot read ([] when it reads them all).

    A question with no readable letter or digit is query-blind (information and salience decide), as an empty one;
    one with some readable words is matched on those, the others ignored. Right-to-left text (Arabic, Hebrew) and
    scripts the OCR does not read (Devanagari, Thai, Cyrillic, Korean, ...) get the same fallback.
    """
    text = fold_homoglyphs(text)  # "Tοpic" with a Greek omicron is the Latin word it looks like
    scripts = {script_of(ch) for ch in text}
    unread = sorted(s for s in scripts if s is not None and s not in READ)
    if not unread:
        if any(ch.isdigit() for ch in text) or scripts & set(READ):
            return []
        return [
            "the question was not understood (no letters or digits): the allocation is query-blind, as for an "
            "empty question (information and salience decide)"
        ]
    what = "; ".join(UNREAD.get(s, UNREAD["other"]) for s in unread)
    readable = any(ch.isdigit() or script_of(ch) in READ for ch in text)
    foreign = [w for w in text.split() if any(script_of(ch) in unread for ch in w)]
    if not readable:
        return [
            f"the question was not understood ({what}): the allocation is query-blind, as for an empty question "
            "(information and salience decide)"
        ]
    return [f"words the text path cannot read were ignored ({what}): {' '.join(foreign)[:80]}"]
