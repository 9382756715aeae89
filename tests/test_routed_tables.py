"""``routed-tables`` (issue 40 item 4, round 11): the third route criterion, a literal question on a table page goes
to the rules, on tiny pages built here (the words' meaning is fixed in ``arr_coc.reading.matching.routed``)."""

from __future__ import annotations

import numpy as np
import pytest

from arr_coc.reading import QueryMatcher, TextBox
from arr_coc.reading.matching.gated import GATE_NAMES, gate_of, wrap
from arr_coc.reading.matching.routed import TABLE_LITERAL, RoutedScorer, literal_question, table_page, why_rules
from tests.test_routed_relevance import FORM, Flat, route_maps
from tests.test_table_cells import page as table_page_boxes


def grid(
    lines: int = 4, cols: int = 3, shift: float = 0.0, text: str = "1,2{r}{k}.50", step: float = 100.0
) -> list[TextBox]:
    """A header line and ``lines`` rows of ``cols`` amounts, 50 px wide, ``step`` apart; row r's amounts are moved
    right by ``r * shift``."""
    boxes = [TextBox("Region", (20, 10, 80, 25))]
    boxes += [TextBox(f"Q{k + 1} sales", (120 + 100 * k, 10, 180 + 100 * k, 25)) for k in range(cols)]
    for r in range(lines):
        y = 40 + 20 * r
        boxes.append(TextBox(f"North {r}" if r else "Total", (20, y, 80, y + 15)))
        for k in range(cols):
            x = 120 + step * k + r * shift
            boxes.append(TextBox(text.format(r=r, k=k), (x, y, x + 50, y + 15)))
    return boxes


def test_a_page_of_three_number_lines_aligned_in_columns_reads_as_a_table() -> None:
    assert table_page(grid(3, 3))
    assert table_page(grid(4, 5, text="$ {r}{k}"))  # amounts with a currency sign
    assert table_page(table_page_boxes(3))  # the crossing's table page: years and rates


@pytest.mark.parametrize(
    "boxes",
    [
        grid(2, 5),  # two lines of numbers only
        grid(5, 2),  # lines of two numbers only
        grid(4, 3, shift=60.0, step=250.0),  # each line's numbers moved past the line above's: no two overlap
        grid(4, 3, shift=60.0),  # staggered: only the two middle lines have three numbers under another's
        grid(4, 3, text="item {r}{k}"),  # words, not numbers
        FORM,
        [],
    ],
)
def test_pages_that_do_not_read_as_a_table(boxes: list[TextBox]) -> None:
    assert not table_page(boxes)


def test_three_numbers_on_a_line_but_only_two_aligned_do_not_count() -> None:
    boxes = grid(3, 2)
    for r in range(3):  # a third number on each line, each in its own place (no other line's number above it)
        y = 40 + 20 * r
        boxes.append(TextBox(f"{r}7", (400 + 80 * r, y, 440 + 80 * r, y + 15)))
    assert not table_page(boxes)
    assert table_page(grid(3, 3))


def test_a_literal_question_has_every_content_word_printed() -> None:
    boxes = grid()
    assert literal_question("What is the Q2 sales for North 2?", boxes)  # stop words need not be printed
    assert literal_question("what is the TOTAL q1 Sales", boxes)  # folded: case does not matter
    assert literal_question("What is the Total for the Q3 sales?", boxes)
    assert not literal_question("What is the Q2 revenue for North 2?", boxes)  # "revenue" is not printed
    assert not literal_question("What is the value in the Total row?", boxes)  # nor "value", "row"
    assert not literal_question("What is it?", boxes)  # no content word at all
    assert not literal_question("What is the Q2 sales for North 2?", [])


def _maps(boxes: list[TextBox], query: str, size=(600, 200)):
    return route_maps(boxes, query, size, cells=False, tables=True)


def test_a_literal_question_on_a_table_page_goes_to_the_rules() -> None:
    got, rules, learned, routed = _maps(grid(), "What is the Q2 sales for North 2?")
    np.testing.assert_array_equal(got, rules)
    assert not np.array_equal(got, learned)
    assert routed.pages == {"learned": 0, "rules": 1} and routed.reasons == {TABLE_LITERAL: 1}


@pytest.mark.parametrize(
    ("boxes", "query"),
    [
        (grid(), "How much revenue did the North region make in Q2?"),  # a paraphrase: not every word printed
        (grid(2, 3), "What is the Q2 sales for North 1?"),  # literal, but the page is no table
        (FORM, "What is the invoice number?"),  # a literal key -> value question on a form
    ],
)
def test_other_questions_stay_with_routed_structure(boxes: list[TextBox], query: str) -> None:
    got, rules, learned, routed = _maps(boxes, query)
    np.testing.assert_array_equal(got, learned)
    assert routed.pages == {"learned": 1, "rules": 0} and not routed.reasons


def test_the_third_criterion_is_opt_in() -> None:
    m, boxes, query = QueryMatcher(semantic=False), grid(), "What is the Q2 sales for North 2?"
    assert why_rules(m, boxes, query, None, cells=False) is None  # routed-structure: the learned scorer
    assert why_rules(m, boxes, query, None, cells=False, tables=True) == TABLE_LITERAL
    assert why_rules(m, [], query, None, cells=False, tables=True) is None
    assert gate_of("routed-tables") == ("route-structure-tables", "learned")
    assert gate_of("routed-tables:/x/run") == ("route-structure-tables", "/x/run")
    scorer = wrap(Flat(), GATE_NAMES["routed-tables"])
    assert scorer.tables and not scorer.cells and scorer.config["gate"] == "route-structure-tables"
    assert not wrap(Flat(), "route-structure").tables and not wrap(Flat(), "route").tables
    assert wrap(Flat(), "route").config["gate"] == "route"


def test_from_pretrained_builds_routed_tables_and_it_is_not_the_default() -> None:
    from arr_coc.model import DEFAULT_RELEVANCE
    from arr_coc.realizing import Realizer

    r = Realizer.from_pretrained("routed-tables")
    assert isinstance(r.box_scorer, RoutedScorer) and r.box_scorer.tables and not r.box_scorer.cells
    assert DEFAULT_RELEVANCE == "routed-cells"  # round 12: the printed-header cell criterion, not routed-tables
