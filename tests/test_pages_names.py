"""A compound name in the question ("column.count.back", "asn1_der_decoding", "std::vector") counts as one word of
its own in the document decision's word scores (``arr_coc.pages``): the page that prints it is the first look's best
and ranks first; a question without such a name scores exactly as before."""

from __future__ import annotations

import math
import re

import pytest

from arr_coc.pages import _STOP, PagesConfig, _words, first_look, word_scores
from arr_coc.query import normalize_text

# three pages of a parameter reference: every page prints "column", "count" and "back"; one prints the name whole
PAGES = [
    "column count back the number of columns on back pages of the index",
    "column.count.back Number of columns on back matter pages. column count back",
    "column.count.front count of columns on front pages; back and column both appear here",
]


def _old_word_scores(texts: list[str | None], query: str) -> list[float]:
    """The formula before compound names: plain words only (pages' short texts: the old 4,000-character cut is moot)."""
    text = normalize_text(query)
    keys = {w.lower() for w in re.findall(r"[A-Za-z0-9]+", text) if len(w) > 1 and w.isupper()}
    q = {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 1 and (w not in _STOP or w in keys)}
    if not q:
        return [0.0] * len(texts)
    bags = [set(re.findall(r"[a-z0-9]+", normalize_text(t).lower())) if t else set() for t in texts]
    idf = {w: math.log((len(texts) + 1) / (0.5 + sum(w in b for b in bags))) for w in q}
    total = sum(idf.values()) or 1.0
    return [sum(idf[w] for w in q if w in b) / total for b in bags]


def test_a_dotted_name_printed_on_one_page_tells_its_page():
    query = "What is column.count.back?"
    assert "column.count.back" in _words(query)
    assert {"count", "back"} <= _words(query)  # its parts still count
    scores = word_scores(PAGES, query)
    assert max(range(3), key=lambda i: scores[i]) == 1
    assert scores[1] > 2 * max(scores[0], scores[2])
    assert first_look(PAGES, query, PagesConfig(look_max=1)) == [1]
    # without the whole name the parts tie: every page prints them
    old = _old_word_scores(PAGES, query)
    assert old[0] == pytest.approx(old[1])


def test_other_joiners_and_numbers():
    assert {"asn1_der_decoding", "std::vector", "e-mail"} <= _words("asn1_der_decoding, std::vector or e-mail?")
    assert "3.14" not in _words("Is it 3.14?")  # a number stays its parts
    assert _words("What is back. Or front?") == {"back", "front"}  # a sentence's full stop joins nothing


@pytest.mark.parametrize(
    "query",
    [
        "What is the total due?",
        "What does gcry_md_open return?",  # a compound no page prints: scores as its parts
        "What is written next to TO?",
        "Which options does the column count take",
        "What is this document about?",
        "",
    ],
)
def test_a_question_without_a_printed_name_scores_as_before(query):
    texts = [*PAGES, "total due 42 TO FROM", None, "weather total gcry md open"]
    assert word_scores(texts, query) == pytest.approx(_old_word_scores(texts, query), abs=0.0)


def test_a_long_page_counts_whole():
    """A dense reference page prints 7,000-17,000 characters: a word past the first 4,000 still counts."""
    long_page = "filler words here " * 300 + "column.count.back select 1"
    texts = ["column count back", long_page, "column count back front"]
    assert len(long_page) > 4000
    scores = word_scores(texts, "What is column.count.back?")
    assert max(range(3), key=lambda i: scores[i]) == 1
