"""Finding the printed text a foreign question quotes: Chinese or Japanese by characters, other scripts by words.

The token path (``lexical.tokens``) drops hiragana and CJK function characters: they are particles and
endings, not content, in a question. A quotation is the page's own text, though, and a Japanese one is
often mostly hiragana ("「てはいけませ」の後に…", "「す。ここでは」") or a common katakana word
with a particle ("「コマンドの別」"), so its tokens find nothing or every line. ``quote_scores``
compares the quotation with each box as characters: the share of the quotation's character bigrams (every
character, hiragana and punctuation included, whitespace dropped) that the box's text holds, each bigram
weighted by how rare it is on the page (1 / the number of boxes holding it; a bigram on no box, an OCR
misreading, keeps weight 1). A box holding the quotation whole scores 1; one holding the end of it (a
quotation broken across two lines) scores the share it holds.

Only quotations holding a CJK character are read this way (``lexical.query_terms`` reads the others as
tokens; ``quote_scores`` finds them whole), and only in questions worded in another language than English
(``lexical.foreign_words``). ``inline_values``: a box holding a quotation and more after it is the answer of
"what follows «...»?" (the matcher ranks it first).

Example:
    >>> quote_scores(["これはペンです。ここでは", "ここは東京です"], "「す。ここでは」の後は？")
    array([1.        , 0.11111111], dtype=float32)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..text import fold

# a quotation: 「…」, 『…』, “…”, „…“, «…», "…" (``lexical.query_terms`` reads them too)
QUOTED = re.compile(r"「([^」]+)」|『([^』]+)』|“([^”]+)”|„([^“”]+)[“”]|«\s*([^»]+?)\s*»|\"([^\"]+)\"")
_CJK = re.compile("[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")  # ``lexical._CJK``


# when a box holds the quotation and what follows it, the other candidates' scores are multiplied by this: the
# quotation locates the answer, so they come after it (the next line, where the answer may go on, still before
# the page's other text)
INLINE_OTHERS = 0.8
INLINE_SHARE = 0.75  # of a CJK quotation's bigrams a box must hold to hold the quotation (OCR misreads a character)
_NON_WORD = re.compile(r"[\W_]+")


def _words(text: str) -> str:
    """``text`` folded, every run of characters that are not letters or digits one space, padded with spaces."""
    return f" {_NON_WORD.sub(' ', fold(text)).strip()} "


def quotations(query: str) -> tuple[list[str], list[str]]:
    """The quotations of ``query``: those holding a CJK character (folded, whitespace dropped) and the others (as
    ``_words``: folded words between single spaces)."""
    cjk, other = [], []
    for m in QUOTED.finditer(query):
        span = next(g for g in m.groups() if g)
        if _CJK.search(span):
            flat = "".join(fold(span).split())
            if len(flat) >= 2:
                cjk.append(flat)
        elif _words(span).strip():
            other.append(_words(span))
    return list(dict.fromkeys(cjk)), list(dict.fromkeys(other))


def _bigrams(s: str) -> list[str]:
    return list(dict.fromkeys(s[i : i + 2] for i in range(len(s) - 1)))


def quote_scores(texts: Sequence[str], query: str) -> np.ndarray | None:
    """(N,) float32: each text's best rarity-weighted share of a CJK quotation's character bigrams (see the module
    docstring); None when ``query`` quotes no CJK text."""
    quotes, words = quotations(query)
    if not (quotes or words) or not texts:
        return None
    out = np.zeros(len(texts), dtype=np.float32)
    if words:  # a Latin-script quotation: a box holding its words in a row, whatever the punctuation between
        boxed = [_words(t) for t in texts]
        out[[i for i, t in enumerate(boxed) if any(w in t for w in words)]] = 1.0
    flat = ["".join(fold(t).split()) for t in texts]
    for quote in quotes:
        grams = _bigrams(quote)
        held = np.array([[g in t for t in flat] for g in grams], dtype=bool)  # (G, N)
        df = held.sum(axis=1)  # (G,) boxes holding each bigram
        w = 1.0 / np.maximum(df, 1)  # (G,)
        share = (w[:, None] * held).sum(axis=0) / w.sum()  # (N,)
        whole = np.array([quote in t for t in flat], dtype=bool)
        out = np.maximum(out, np.where(whole, 1.0, share).astype(np.float32))
    return out


def inline_values(texts: Sequence[str], query: str) -> np.ndarray | None:
    """(N,) float32: 1 for each text holding a quotation of ``query`` whole with more letters or digits after it,
    else 0; None when ``query`` quotes nothing. The question asks what follows the quotation; such a box holds it
    (a sentence, not a "Key:" label whose value lies beside or below it)."""
    quotes, words = quotations(query)
    if not (quotes or words):
        return None
    out = np.zeros(len(texts), dtype=np.float32)
    flats = ["".join(fold(t).split()) for t in texts]
    # a CJK quotation held by a share of its bigrams only where no box holds it whole (an OCR misreading): a box
    # holding "正则表达式" does not hold "正则表达式被" when another box does
    whole = {q: any(q in f for f in flats) for q in quotes}
    for i, t in enumerate(texts):
        boxed = _words(t)
        rest = [boxed.split(w, 1)[1] for w in words if w in boxed]
        rest += [_cjk_rest(flats[i], q, exact=whole[q]) for q in quotes]
        out[i] = float(any(_NON_WORD.sub("", r) for r in rest))
    return out


def _cjk_rest(flat: str, quote: str, exact: bool = False) -> str:
    """What ``flat`` holds after ``quote`` ("" when it does not hold it): the quotation whole, or (an OCR
    misreading, "ラルスクリーン" for "フルスクリーン") at least ``INLINE_SHARE`` of its character
    bigrams, then what follows the last one held; ``exact``: the quotation whole only."""
    if quote in flat:
        return flat.split(quote, 1)[1]
    if exact:
        return ""
    grams = _bigrams(quote)
    ends = [flat.find(g) + 2 for g in grams if g in flat]
    return flat[max(ends) :] if ends and len(ends) >= INLINE_SHARE * len(grams) else ""
