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

Example:
    >>> cut_word_open("also outperforms TAPAS baseline models in all set-")
    True
"""

from __future__ import annotations

import re

__all__ = ["cut_word_open", "ends_sentence", "list_item"]

_CUT_RE = re.compile(r"[^\W\d_]{2}-$")  # "set-", not "--", "x-", "12-" or a dash standing alone
_CLOSERS = " )]\"'\u2019\u201d"  # after a sentence's full stop: a bracket, a quote
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
