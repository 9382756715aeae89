"""Rows of scanned pages that OCR reads with noise: phrases over words OCR joined, evidence on tight lines.

Two slips of the text path on real scans (issue 40, round 4; ``benchmarks/scans_data.py``'s development sources):

- **Words holding several tokens.** OCR reads "New-York." as one word; the question quotes it as "New-York But", whose
  tokens are ``new york but``. A phrase matched word by word compares the page word ``new york`` with the token
  ``new`` and misses the true occurrence, so a weaker one elsewhere ("New York) and") wins. ``word_tokens`` spreads
  every page word into its tokens (each remembering its word) so a phrase is matched token by token and the span
  mapped back to the words.
- **Evidence on tight lines.** On running text set tight, PP-OCR's line boxes are about twice as tall as the ink and
  overlap the lines above and below (``scans.tight_prose``); the word units are then built from each box's ink band
  (``scans.core_boxes``). The structural evidence ("the word right before 'of any'") was still painted with the full
  boxes, so its top-scored cells fell in the ink bands of the neighbouring lines, whose words were kept first and
  spent the budget (a DIBCO fragment at 12 x 31 cells: the answer's word passed for the line above).
  ``ink_regions`` paints word evidence (the phrase and its neighbours) on the same ink band as the units, on those
  pages only.

Depends on ``.scans`` only (plain boxes and strings in, plain boxes and indices out).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .scans import core_boxes, tight_prose

WORD_RULE = "after-phrase"  # the structural rule whose regions are single words (``structural_query.resolve``)


def word_tokens(words: Sequence[Sequence[str]]) -> tuple[list[str], list[int], list[int]]:
    """Every word's tokens in reading order, flattened.

    Args:
        words: each page word's tokens (a word OCR read as "New-York." gives ``["new", "york"]``; a word without
            any, ``[""]`` or ``[]``).

    Returns:
        ``(tokens, owner, first)``: the tokens (a word without tokens contributes one empty token, so no word is
        lost), the word index of each token, and each word's first token index followed by the token count (so
        ``first[i]:first[i + 1]`` are word ``i``'s tokens and ``first[len(words)]`` ends the list).
    """
    toks: list[str] = []
    owner: list[int] = []
    first: list[int] = []
    for i, w in enumerate(words):
        first.append(len(toks))
        for t in list(w) or [""]:
            toks.append(t)
            owner.append(i)
    first.append(len(toks))
    return toks, owner, first


def ink_regions(regions: Sequence[Any], boxes: Sequence[Any], rule: str) -> list[Any]:
    """``regions`` (``TextBox``-like) on their ink band where they are words (``rule`` ``after-phrase``: the phrase
    and its neighbours, one OCR word box each) and the page is tight running text (``tight_prose`` of its OCR
    ``boxes``, the rule its word units follow); unchanged otherwise (a section, a table's cells, a block of lines:
    their regions span several lines and keep their extent)."""
    return core_boxes(regions) if rule == WORD_RULE and tight_prose(boxes) else list(regions)
