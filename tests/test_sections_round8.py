"""Named sections on real two-column papers, round 8 (issue 40; ``arr_coc.reading.layout.section_ends``): where a
named section ends, three rules each written from one development group's miss and kept by leave-one-group-out
validation (each changes the structural evidence of no question in any development group it was not written from):
a word cut by a hyphen at the section's last line goes on (no heading can come between), a numbered list's entry
("I. Statistical: uses ...") is no numbered heading, and where a formula's lines close the extent the line that ends
its last sentence holds its last word too.

Each layout test also checks its premise: with the new rule patched off, the old (wrong) answer comes back."""

from __future__ import annotations

import pytest
from two_column_pages import LEFT, RIGHT
from two_column_pages import column as _column
from two_column_pages import last_word_covered as _last_word_covered
from two_column_pages import prose as _prose

from arr_coc.reading.layout import sections
from arr_coc.reading.layout.section_ends import cut_word_open, ends_sentence, list_item
from arr_coc.reading.layout.sections import named_extent
from arr_coc.reading.layout.structure import analyse


@pytest.mark.parametrize(
    ("text", "cut"),
    [("baseline models in all set-", True), ("state-of-the-art", False), ("a dash --", False), ("pages 12-", False)],
)
def test_a_cut_word_is_two_letters_and_a_hyphen_at_the_end(text, cut):
    assert cut_word_open(text) is cut


@pytest.mark.parametrize(
    ("text", "item"),
    [
        ("I. Statistical: uses one or more statistical models", True),
        ("2) Hybrid: defines a small number of rules", True),
        ("4.1 Approaches", False),
        ("2 Background: Transformers", False),
        ("III. EXPERIMENTS", False),
    ],
)
def test_a_list_entry_is_a_label_a_colon_and_a_sentence_in_lower_case(text, item):
    assert list_item(text) is item


@pytest.mark.parametrize(
    ("text", "ends"),
    [
        ("with the form and once with the lemma.", True),
        ("(see Appendix 2).", True),
        ("the end of the staff \u201d", False),
    ],
)
def test_a_sentence_ends_with_a_full_stop_after_a_word(text, ends):
    assert ends_sentence(text) is ends
    assert not ends_sentence("3.1.")


def test_a_word_cut_at_a_columns_foot_goes_on_past_a_heading_like_line(monkeypatch):
    """The left column's foot ends "in all set-"; the right column opens with a numbered line standing above prose
    (a table's header, read as the next heading): the section goes on under it, to its real end."""
    left = [("5.1 Main Results", 0), *[(t, 0) for t in _prose(10, 0)], ("also outperforms the mill in all set-", 0)]
    end = "the old pier was built by the town near the BART model."
    right = [("2 Before Perturb", 0), *[(t, 0) for t in _prose(3, 4)], (end, 0)]
    right += [("5.2 Ablation Study", 14), *[(t, 0) for t in _prose(6, 7)]]
    boxes = _column(LEFT, left) + _column(RIGHT, right)
    assert _last_word_covered(boxes, "Main Results", end)
    monkeypatch.setattr(sections, "cut_word_open", lambda text: False)
    monkeypatch.setattr(sections, "LISTED", False)  # round 10: "2" cannot follow "5.1" in the outline either
    assert not _last_word_covered(boxes, "Main Results", end)


def test_a_numbered_list_entry_is_not_the_next_heading(monkeypatch):
    left = [("4.1 Approaches", 0), *[(t, 0) for t in _prose(3, 0)], ("extraction and linking:", 0)]
    left += [("I. Statistical: uses one or more statistical models", 0), *[(t, 0) for t in _prose(3, 2)]]
    left += [("II. Hybrid: defines a small number of rules for", 0), *[(t, 0) for t in _prose(3, 5)]]
    end = "the old pier was built by the town with high precision."
    left += [(end, 0), ("4.2 Evaluation", 14), *[(t, 0) for t in _prose(6, 7)]]
    boxes = _column(LEFT, left) + _column(RIGHT, [(t, 0) for t in _prose(24, 3)])
    layout = analyse(boxes)
    texts = [layout.lines[i].text for i in named_extent(layout, "Approaches").lines]
    assert "II. Hybrid: defines a small number of rules for" in texts and "4.2 Evaluation" not in texts
    assert _last_word_covered(boxes, "Approaches", end)
    monkeypatch.setattr(sections, "list_item", lambda text: False)
    monkeypatch.setattr(sections, "LISTED", False)  # round 10: the colon above the list opens it too
    assert not _last_word_covered(boxes, "Approaches", end)


def test_a_formula_closing_a_section_leaves_its_last_sentence_end_kept(monkeypatch):
    end = "Selected morphologic parsing features."
    left = [("6 Selected Parsing Features", 0), *[(t, 0) for t in _prose(8, 0, "the lemma.")], (end, 30)]
    left += [("\u2200 h-morpheme head-morphologic-feature-set do", 10)]
    left += [("\u2200 build-feature: h-pos, d-pos, h-morpheme, d-morpheme", 0)]
    left += [("7 Implementation Aspects", 40), *[(t, 0) for t in _prose(8, 7)]]
    boxes = _column(LEFT, left) + _column(RIGHT, [(t, 0) for t in _prose(24, 3)])
    assert _last_word_covered(boxes, "Selected Parsing Features", end)
    monkeypatch.setattr(sections, "ends_sentence", lambda text: True)
    assert not _last_word_covered(boxes, "Selected Parsing Features", end)
