"""The routed relevance option (issue 40 item 4): the rules where they have an exact layout relation for the
question (structural evidence found, a table cell crossed), the learned scorer for every other question."""

from __future__ import annotations

import numpy as np
import pytest
from torch import nn

from arr_coc.reading import QueryMatcher, TextBox
from arr_coc.reading.matching.gated import gate_of, wrap
from arr_coc.reading.matching.routed import RoutedScorer, why_rules
from tests.test_structure import PAGE
from tests.test_table_cells import page as table_page

SIZE, ROWS, COLS = (800, 600), 20, 27
FORM = [
    TextBox("Invoice number:", (40, 40, 200, 60)),
    TextBox("INV-2041", (210, 40, 300, 60)),
    TextBox("Date:", (40, 80, 100, 100)),
    TextBox("12/03/2024", (110, 80, 220, 100)),
]


class Flat(nn.Module):
    """A stand-in learned scorer: every box scores 0.25, so a map painted from it is told apart from the rules'."""

    features = ("rule",)
    config: dict = {}

    def own_columns(self, feats: np.ndarray) -> np.ndarray:
        return feats[:, -1:]

    def box_scores(self, feats: np.ndarray) -> np.ndarray:
        return np.full(len(feats), 0.25, dtype=np.float32)


def route_maps(boxes: list[TextBox], query: str, size=SIZE, **route: bool):
    """(routed map, rules' map, learned map, the routed scorer) of ``query`` on ``boxes``; ``route``: the
    ``RoutedScorer``'s criteria (``cells``, ``tables``, ``printed``), shared by the later routes' tests."""
    routed = RoutedScorer(Flat(), **route)
    out = []
    for scorer in (routed, None, Flat()):
        rel, _ = QueryMatcher(semantic=False, scorer=scorer).relevance_and_evidence(boxes, query, ROWS, COLS, size)
        out.append(rel)
    return (*out, routed)


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("Which word comes right after 'to trade'?", "after-phrase"),
        ("What is the last word of the section titled 'Ferries'?", "word-of-unit"),
        ("What is the heading of the second section in the right column?", "ordinal-unit"),
        ("What is the title of this page?", "title"),
    ],
)
def test_structural_questions_go_to_the_rules(query: str, reason: str) -> None:
    boxes = [TextBox(t, b) for t, b in PAGE]
    got, rules, learned, routed = route_maps(boxes, query)
    np.testing.assert_array_equal(got, rules)  # exactly the rules' map, evidence painted on top as before
    assert not np.array_equal(got, learned)
    assert routed.pages == {"learned": 0, "rules": 1} and routed.reasons == {reason: 1}


def test_a_crossed_table_cell_goes_to_the_rules() -> None:
    boxes = table_page(12)
    size = (500, 320)
    got, rules, learned, routed = route_maps(boxes, "What is the Births Rate for 1972?", size)
    np.testing.assert_array_equal(got, rules)
    assert routed.reasons == {"table-cell": 1}


@pytest.mark.parametrize(
    ("boxes", "query"),
    [
        (FORM, "What is the invoice number?"),  # key -> value: the learned scorer's kind
        (FORM, "How much was charged in total?"),  # a paraphrase naming no printed key
        ([TextBox(t, b) for t, b in PAGE], "Which word comes right after 'zebra crossing'?"),  # no referent found
        (table_page(12), "What is the Births Rate for 2090?"),  # no such row: nothing crossed
    ],
)
def test_other_questions_go_to_the_learned_scorer(boxes: list[TextBox], query: str) -> None:
    size = SIZE if boxes is not FORM else (400, 200)
    got, rules, learned, routed = route_maps(boxes, query, size)
    np.testing.assert_array_equal(got, learned)
    assert routed.pages == {"learned": 1, "rules": 0} and not routed.reasons


def test_routed_structure_leaves_table_cells_to_the_learned_scorer() -> None:
    boxes, query, size = table_page(12), "What is the Births Rate for 1972?", (500, 320)
    routed = RoutedScorer(Flat(), cells=False)
    got, _ = QueryMatcher(semantic=False, scorer=routed).relevance_and_evidence(boxes, query, ROWS, COLS, size)
    learned, _ = QueryMatcher(semantic=False, scorer=Flat()).relevance_and_evidence(boxes, query, ROWS, COLS, size)
    np.testing.assert_array_equal(got, learned)
    assert routed.pages == {"learned": 1, "rules": 0} and routed.config["gate"] == "route-structure"
    assert gate_of("routed-structure") == ("route-structure", "learned")
    assert wrap(Flat(), "route-structure").cells is False and wrap(Flat(), "route").cells is True


def test_why_rules_without_a_page_or_question() -> None:
    m = QueryMatcher(semantic=False)
    assert why_rules(m, [], "What is the Births Rate for 1972?", None) is None
    assert why_rules(m, FORM, "", None) is None


def test_routed_names_and_the_missing_scorer_error(tmp_path) -> None:
    from arr_coc.realizing import Realizer, RelevanceModel

    assert gate_of("routed") == ("route", "learned")
    assert gate_of("routed:/x/run") == ("route", "/x/run")
    with pytest.raises(ValueError, match="routed needs a learned box scorer"):
        RoutedScorer(None)
    with pytest.raises(ValueError, match="needs a learned box scorer"):
        wrap(None, "agree")
    RelevanceModel().save_pretrained(tmp_path)  # config.json only: the rules, no scorer to route to
    with pytest.raises(ValueError, match="routed needs a learned box scorer"):
        Realizer.from_pretrained(f"routed:{tmp_path}")
    assert Realizer.from_pretrained(tmp_path).box_scorer is None  # without the name: the rules, as before


def test_from_pretrained_routes_the_builtin() -> None:
    from arr_coc.reading.matching.learned import BoxScorer
    from arr_coc.realizing import Realizer

    routed = Realizer.from_pretrained("routed")
    assert isinstance(routed.box_scorer, RoutedScorer) and isinstance(routed.box_scorer.scorer, BoxScorer)
    assert routed.box_scorer.config["gate"] == "route"
    assert routed.box_scorer.features == Realizer.from_pretrained("learned").box_scorer.features
    feats = np.zeros((3, len(routed.box_scorer.features)), dtype=np.float32)
    np.testing.assert_array_equal(routed.box_scorer.box_scores(feats), routed.box_scorer.scorer.box_scores(feats))
