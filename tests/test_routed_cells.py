"""``routed-cells`` (issue 40 item 4, round 12): the fourth route criterion, a printed-header cell question goes to
the rules, on tiny pages built here (the criterion's wording is fixed in ``arr_coc.reading.matching.routed``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from arr_coc.reading import QueryMatcher, TextBox
from arr_coc.reading.matching.gated import GATE_NAMES, gate_of, wrap
from arr_coc.reading.matching.routed import CELL_CROSSED, CELL_ROW, CELL_TABLE, printed_cell, why_rules
from tests.test_routed_relevance import FORM, Flat, route_maps
from tests.test_routed_tables import grid

# a two-row "table" with no numbers (it does not read as a table): a header line and two labelled rows
WORDS = [
    TextBox("Plan", (20, 10, 80, 25)),
    TextBox("Small", (120, 10, 180, 25)),
    TextBox("Large", (220, 10, 280, 25)),
    TextBox("Storage", (20, 40, 80, 55)),
    TextBox("Low", (120, 40, 180, 55)),
    TextBox("High", (220, 40, 280, 55)),
    TextBox("Support", (20, 60, 80, 75)),
    TextBox("Email", (120, 60, 180, 75)),
    TextBox("Phone", (220, 60, 280, 75)),
]


def _maps(boxes: list[TextBox], query: str, size=(600, 200)):
    return route_maps(boxes, query, size, cells=False, printed=True)


@pytest.mark.parametrize(
    ("boxes", "query", "why"),
    [
        (WORDS, "In the Storage row, what is the Large?", CELL_ROW),  # (a) names its row as a row
        (WORDS, "What is the Large in the Storage row?", CELL_ROW),
        (WORDS, "What is the Large for Storage?", CELL_CROSSED),  # (b) the printed words cross, no table page
        (grid(), "What is the Q2 sales for Southwest?", CELL_TABLE),  # (c) no crossing ("Southwest" is not printed)
    ],
)
def test_a_printed_header_cell_question_goes_to_the_rules(boxes: list[TextBox], query: str, why: str) -> None:
    assert printed_cell(QueryMatcher(semantic=False), boxes, query) == why
    got, rules, learned, routed = _maps(boxes, query)
    np.testing.assert_array_equal(got, rules)
    assert not np.array_equal(got, learned)
    assert routed.pages == {"learned": 0, "rules": 1} and routed.reasons == {why: 1}


@pytest.mark.parametrize(
    ("boxes", "query"),
    [
        (WORDS, "What is the Medium for Storage?"),  # no crossing ("Medium" not printed), no table page, no "row"
        (WORDS, "How much storage does the large plan give?"),  # not a cell wording
        (grid(), "How much did the North region sell in Q2?"),  # a paraphrase on a table page
        (FORM, "What is the invoice number?"),  # a key -> value question
        (FORM, "What is the name of the company that issued this receipt?"),  # a "for / of" wording on no table
    ],
)
def test_other_questions_stay_with_the_learned_scorer(boxes: list[TextBox], query: str) -> None:
    assert printed_cell(QueryMatcher(semantic=False), boxes, query) is None
    got, rules, learned, routed = _maps(boxes, query)
    np.testing.assert_array_equal(got, learned)
    assert routed.pages == {"learned": 1, "rules": 0} and not routed.reasons


def test_the_fourth_criterion_follows_the_table_cell_switches_and_is_off_elsewhere() -> None:
    query = "In the Storage row, what is the Large?"
    m = QueryMatcher(semantic=False)
    assert why_rules(m, WORDS, query, None, cells=False) is None  # routed-structure: the learned scorer
    assert why_rules(m, WORDS, query, None, cells=False, tables=True) is None  # routed-tables: not literal here
    assert why_rules(m, WORDS, query, None, cells=False, printed=True) == CELL_ROW
    assert why_rules(m, [], query, None, cells=False, printed=True) is None
    cfg = m.config
    assert (
        printed_cell(QueryMatcher(replace(cfg, structure=replace(cfg.structure, table_cells=False))), WORDS, query)
        is None
    )
    assert printed_cell(QueryMatcher(cfg, semantic=False, query_parsing=False), WORDS, query) is None


def test_routed_cells_is_named_and_built() -> None:
    assert gate_of("routed-cells") == ("route-structure-cells", "learned")
    assert gate_of("routed-cells:/x/run") == ("route-structure-cells", "/x/run")
    scorer = wrap(Flat(), GATE_NAMES["routed-cells"])
    assert scorer.printed and not scorer.cells and not scorer.tables
    assert scorer.config["gate"] == "route-structure-cells"
    assert not wrap(Flat(), "route-structure").printed and not wrap(Flat(), "route-structure-tables").printed
