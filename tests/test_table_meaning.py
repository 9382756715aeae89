"""A table's row and column named by their meaning (issue 40, ``arr_coc.reading.matching.table_meaning``): number
words and spelled ranges as digits, an age as a table prints it, a US state as its postal code, census group names
and tiers by their everyday words; the cell at a row and a column named so, or the one cell of a named row."""

from __future__ import annotations

from arr_coc.reading import QueryMatcher, TextBox
from arr_coc.reading.matching.table_meaning import meaning_cell, named_boxes, printed_forms, sole_cell


def _cell(boxes: list[TextBox], query: str) -> set[str] | None:
    m = QueryMatcher(semantic=False)
    ev = meaning_cell(boxes, query, lambda p: m.lexical_scores(boxes, p))
    if ev is None:
        return None
    cells = [tuple(r) for r, w in zip(ev.regions, ev.weights, strict=True) if w == 1.0]
    return {b.text for b in boxes if tuple(b.box) in cells}


def cohort_table() -> list[TextBox]:
    """Race / ethnicity rows by age-cohort columns under a paragraph that also says "4-year-old children"."""
    boxes = [TextBox("4-year-old children who were randomly assigned to either:", (40, 0, 700, 24))]
    boxes += [TextBox("Sample of the study by race and by age", (40, 40, 600, 64))]
    heads = ["Child Race/Ethnicity", "3-Y ear-Old Cohort", "4-Y ear-Old C ohort"]
    boxes += [TextBox(h, (40 + 250 * j, 100, 240 + 250 * j, 124)) for j, h in enumerate(heads)]
    rows = [("Hispanic", "37.4%", "51.6%"), ("Black", "32.8%", "17.5%"), ("White/Other", "29.8%", "30.8%")]
    for i, (lab, three, four) in enumerate(rows):
        y = 140 + 30 * i
        boxes.append(TextBox(lab, (40, y, 140, y + 24)))
        boxes += [TextBox(three, (340, y, 400, y + 24)), TextBox(four, (590, y, 650, y + 24))]
    return boxes


def state_table() -> list[TextBox]:
    """States by postal code; Yes/No columns and one number column."""
    boxes = [TextBox(h, (40 + 150 * j, 20, 140 + 150 * j, 44)) for j, h in enumerate(["State", "Included", "Count"])]
    for i, (code, n) in enumerate([("NC", "5"), ("ND", "na"), ("OH", "~100"), ("SD", "14")]):
        y = 60 + 30 * i
        boxes += [TextBox(code, (40, y, 80, y + 24)), TextBox("Yes", (190, y, 230, y + 24))]
        boxes.append(TextBox(n, (340, y, 380, y + 24)))
    return boxes


def test_printed_forms_numbers_ranges_and_ages() -> None:
    assert {"6", "17", "6-17"} <= set(printed_forms("kids between six and seventeen"))
    assert "6-17" in printed_forms("children aged 6 to 17")
    assert "4-year-old" in printed_forms("Latino kids aged four")
    assert "3-year-old" in printed_forms("children who are three years old")
    assert printed_forms("Which one is it?") == ()  # "one" alone is no number
    assert "17-6" not in printed_forms("from seventeen to six") and "6-17" not in printed_forms("from seventeen to six")


def test_printed_forms_states_and_groups() -> None:
    assert "nc" in printed_forms("in North Carolina")
    assert "wv" in printed_forms("West Virginia") and "va" not in printed_forms("West Virginia")[:1]
    assert "hispanic" in printed_forms("Latino children")
    assert "black" in printed_forms("African-American kids")
    assert {"white", "other"} <= set(printed_forms("Caucasian and remaining-race children"))
    assert "middle" in printed_forms("the mid-tier bracket")
    assert "upper" in printed_forms("a top-bracket earner")
    assert "low" in printed_forms("the bottom bracket")
    assert printed_forms("What is the total amount?") == ()  # a printed word is no meaning of its own


def test_both_sexes_rules_out_each_sex() -> None:
    forms = printed_forms("what share go to class, boys and girls together?")
    assert "total" in forms and "male" not in forms and "female" not in forms
    assert printed_forms("what percent of boys go to class?") == ("male",)


def test_named_boxes_by_meaning_and_numbers() -> None:
    texts = ["3-Y ear-Old Cohort", "4-Y ear-Old C ohort", "Hispanic", "Black", "Cohort"]
    named, meaning = named_boxes(texts, "For Latino kids aged four, what share does the table report?")
    assert list(named) == [False, True, True, False, False]  # the 3-year-old box's number is not the question's
    assert list(meaning) == [False, True, True, False, False]
    named, meaning = named_boxes(texts, "What is the Black 4-year-old figure?")
    assert not meaning.any()  # no printed form: nothing named by meaning


def test_cell_at_row_and_column_named_by_meaning() -> None:
    boxes = cohort_table()
    assert _cell(boxes, "For Latino kids aged four, what share does the table report?") == {"51.6%"}
    assert _cell(boxes, "What's the percentage for Caucasian and remaining-race children aged three?") == {"29.8%"}


def test_sole_number_of_a_row_named_by_meaning() -> None:
    boxes = state_table()
    assert _cell(boxes, "How many school systems in South Dakota got a waiver?") == {"14"}
    assert _cell(boxes, "Roughly how many Ohio school systems received waivers?") == {"~100"}
    assert _cell(boxes, "How many school systems in North Dakota got a waiver?") is None  # "na" is no number
    assert _cell(boxes, "How many school systems in Texas got a waiver?") is None  # no such row


def test_sole_cell_needs_a_label_column() -> None:
    """A lone "label  value" line is no table row: no two more rows at its left edge."""
    boxes = [TextBox("NC", (40, 60, 80, 84)), TextBox("5", (340, 60, 380, 84))]
    assert sole_cell(boxes, 0, 0.5) is None
    assert sole_cell(state_table(), 3, 0.5) == 5  # "NC": its one number


def test_nothing_by_meaning_leaves_the_question_to_the_crossing() -> None:
    assert _cell(cohort_table(), "What is the 4-Year-Old Cohort for Black?") is None
    assert _cell(state_table(), "What is the Count for SD?") is None


def census_table() -> list[TextBox]:
    """Person / Male / Female, each over Total / Rural / Urban; district rows."""
    boxes = [TextBox(h, (300 + 300 * j, 10, 380 + 300 * j, 34)) for j, h in enumerate(["Person", "Male", "Female"])]
    for j in range(9):
        boxes.append(TextBox(["Total", "Rural", "Urban"][j % 3], (220 + 100 * j, 40, 290 + 100 * j, 64)))
    for i, lab in enumerate(["Barpeta", "Karimganj", "Tinsukia"]):
        y = 80 + 30 * i
        boxes.append(TextBox(lab, (40, y, 160, y + 24)))
        boxes += [TextBox(f"{80 + i}.{j}", (230 + 100 * j, y, 280 + 100 * j, y + 24)) for j in range(9)]
    return boxes


def test_both_sexes_and_all_together_are_the_total_columns() -> None:
    boxes = census_table()
    assert _cell(boxes, "What share of kids in Tinsukia go to class, boys and girls together?") == {"82.0"}
    assert _cell(boxes, "Karimganj: what share of boys are enrolled, town and country combined?") == {"81.3"}


def test_two_named_parts_ask_for_their_total() -> None:
    """ "across rural and urban areas": Rural and Urban named, their line's Total asked (the girls' one here)."""
    boxes = census_table()
    assert _cell(boxes, "What's the girls' enrolment figure for Karimganj across rural and urban areas?") == {"81.6"}


def income_table() -> list[TextBox]:
    """Income tiers by one column: the share of the area's median income each tier's cut-off is."""
    boxes = [
        TextBox("Income level", (150, 700, 640, 724)),
        TextBox("% of the area median income", (650, 700, 1120, 724)),
    ]
    rows = [
        ("Low-income", "Less than 50"),
        ("Moderate-income", "At least 50 and less than 80"),
        ("Middle-income", "At least 80 and less than 120"),
        ("Upper-income", "120 or more"),
    ]
    for i, (lab, cut) in enumerate(rows):
        y = 730 + 30 * i
        boxes += [TextBox(lab, (150, y, 640, y + 24)), TextBox(cut, (660, y, 980, y + 24))]
    return boxes


def test_printed_forms_everyday_tiers_and_statistics() -> None:
    """Tiers of income or wealth in everyday words (round 12, para11)."""
    assert "middle" in printed_forms("the central band of earners")
    assert "middle" in printed_forms("households in the center bracket")
    assert "low" in printed_forms("the poorest households")
    assert "upper" in printed_forms("the wealthiest households")
    assert "moderate" in printed_forms("families of modest means")
    assert printed_forms("What is the middle value?") == ()  # "middle" printed: no meaning of its own


def test_group_named_by_what_it_is_not() -> None:
    """ "neither X nor Y" and "other than X" name the table's "Other" group, not X or Y (round 12, para11)."""
    forms = printed_forms("children in the group that is neither African American nor Latino")
    assert "other" in forms and "black" not in forms and "hispanic" not in forms
    forms = printed_forms("kids of a race other than Hispanic")
    assert "other" in forms and "hispanic" not in forms
    assert "other" not in printed_forms("Latino children")


def test_printed_forms_an_age_said_as_who_are() -> None:
    assert "4-year-old" in printed_forms("among children who are four")
    assert "3-year-old" in printed_forms("kids who were three")
    assert "4-year-old" not in printed_forms("people who are 4 percent of the sample")


def test_cells_named_by_everyday_words() -> None:
    boxes = cohort_table()
    assert _cell(boxes, "Among children who are four, what share is shown for African American kids?") == {"17.5%"}
    assert _cell(boxes, "What share of kids aged three are in the group that is neither Black nor Latino?") == {"29.8%"}
    boxes = income_table()
    assert _cell(boxes, "For the central band of earners, what share of typical local earnings is the cut-off?") == {
        "At least 80 and less than 120"
    }
    assert _cell(boxes, "Where do households of modest means sit, against what typical local households earn?") == {
        "At least 50 and less than 80"
    }
    assert _cell(boxes, "For the poorest households, what share of typical local earnings is the cut-off?") == {
        "Less than 50"
    }
