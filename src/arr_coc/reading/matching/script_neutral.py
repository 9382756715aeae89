"""What the learned box scorer's features (``learned.page_features``, ``learned.box_features``) measure of a text,
in any script the text path reads: the same value as before for text without CJK characters (every English box and
question), a comparable one for Chinese and Japanese.

- ``word_count``: CJK is written without spaces, so a whitespace split makes a whole Chinese line one "word"; a CJK
  run counts as its characters / 2 words (about the length of a Chinese or Japanese word).
- ``cased_share``: the share of capitals among the letters that have case (Han and kana have none: "合计" is not a
  lower-case word).
- ``cjk_org``: a Chinese or Japanese legal form or kind of business ("有限公司", "株式会社", "商店"): the
  organisation words of ``lexical.VALUE_PATTERNS["org"]`` are Latin-script ones.
- ``spaced``: a space between a CJK character and a digit or Latin letter beside it, so patterns written with word
  boundaries (``\\b\\d{6,8}\\b``, a date, an amount) find "号码12345678" and "日期2026-11-28" (Python's ``\\b`` sees no
  boundary there: Han characters are word characters).

Example:
    >>> word_count("Total due: 12.00"), word_count("合计金额"), cased_share("Größe"), spaced("号码12345678")
    (3, 2.0, 0.2, '号码 12345678')
"""

from __future__ import annotations

import re

from .lexical import _CJK

_CJK_RUN = re.compile(f"[{_CJK}]+")
_CJK_ORG = re.compile(
    r"有限公司|股份|公司|集团|商店|商行|商场|超市|酒店|饭店|餐厅|株式会社|有限会社|合同会社|[（(]株[)）]|集団|商会"
)
_CJK_EDGE = re.compile(rf"(?<=[{_CJK}])(?=[0-9A-Za-z])|(?<=[0-9A-Za-z])(?=[{_CJK}])")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Chinese or Japanese character (Han, kana)."""
    return _CJK_RUN.search(text) is not None


def word_count(text: str) -> float:
    """Words of ``text``: its whitespace-separated words, a CJK run counted as its characters / 2 (``len(text.split())``
    exactly when ``text`` holds no CJK character)."""
    if not has_cjk(text):
        return len(text.split())
    cjk = sum(len(run) for run in _CJK_RUN.findall(text))
    return len(_CJK_RUN.sub(" ", text).split()) + cjk / 2


def cased_share(text: str) -> float:
    """Share of upper-case letters among the letters of ``text`` that have case (0 when none has)."""
    cased = [c for c in text if c.isupper() or c.islower()]
    return sum(c.isupper() for c in cased) / max(len(cased), 1)


def cjk_org(text: str) -> bool:
    """Whether ``text`` names a Chinese or Japanese organisation by its legal form or kind of business."""
    return _CJK_ORG.search(text) is not None


def spaced(text: str) -> str:
    """``text`` with a space between each CJK character and an ASCII letter or digit beside it (``text`` itself when
    it holds no CJK character)."""
    return _CJK_EDGE.sub(" ", text) if has_cjk(text) else text
