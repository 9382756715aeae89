"""Table-cell questions in other wordings: "For 1985, what figure is given under Suicides Incidence?", "Looking at
Cora, what is its Own brands market share?", "Hispanic / 3-Year-Old Cohort?".

``crossing.split_cell_query`` reads the two wordings realdocs asks in ("What is the <header> for <label>?", "In the
<label> row, what is the <header>?"). ``loose_cell_splits`` reads any question made of two named phrases around a
separator ("for", "under", "in the", "on", "at", "of", a comma, a possessive "'s", a slash): the question words and
the words about the table itself ("what", "figure", "value", "column", "show", "given", ...) are stripped from both
ends of each phrase, and both orders are tried (which phrase names the column is not known).
``crossing.cross_cells`` then keeps a split only where both phrases match a box (``crossing.MIN_MATCH``) and a box
lies on the label's line under the header's column, so a question about no table finds no crossing.

Example:
    >>> loose_cell_splits("For 1985, what figure is given under Accidental Deaths Incidence?")[:2]
    [('1985', 'Accidental Deaths Incidence'), ('Accidental Deaths Incidence', '1985')]
"""

from __future__ import annotations

import re

from .lexical import META_WORDS, STOP_WORDS

# words that frame a cell question rather than name its row or column: the stop words and the words about the
# question or the document (``lexical.STOP_WORDS``, ``lexical.META_WORDS``), and a few verbs of asking
FRAME = (
    STOP_WORDS
    | META_WORDS
    | frozenset(
        """whats what's figure figures given giving gives entry entries looking look reported report stated""".split()
    )
)
_SEPARATORS = re.compile(r"\s*,\s*|\s+/\s+|'s\s+|\s+(?:for|under|in the|in|on|at|of|against|by)\s+", re.I)
_WORD = re.compile(r"\S+")


def _bare(word: str) -> str:
    return word.lower().strip("?.!,;:'\"")


def _strip(phrase: str) -> str:
    words = _WORD.findall(phrase)
    while words and _bare(words[0]) in FRAME:
        words.pop(0)
    while words and _bare(words[-1]) in FRAME:
        words.pop()
    return " ".join(words).strip(" ,;:")


def loose_cell_splits(query: str, max_splits: int = 8) -> list[tuple[str, str]]:
    """Candidate (header, label) splits of a question naming a cell by two phrases in any wording, both orders of
    each split, at most ``max_splits``; [] when no separator leaves a named phrase on both sides."""
    text = query.strip().rstrip("?.! ")
    out: list[tuple[str, str]] = []
    for sep in _SEPARATORS.finditer(text):
        a, b = _strip(text[: sep.start()]), _strip(text[sep.end() :])
        if a and b:
            for pair in ((a, b), (b, a)):
                if pair not in out:
                    out.append(pair)
    return out[:max_splits]
