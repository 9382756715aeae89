"""Named sections on real two-column papers, round 12 (issue 40; ``arr_coc.reading.layout.section_ends``,
``sections`` and ``structural_query``): three rules written from round 11's group (development from round 12 on) and
kept by leave-one-group-out validation: a short line with a figure's caption close under it is a label of the figure
(an axis's "Recall"), not a heading; of two lines that spell the asked title equally well, the clearly taller one is
the heading (a paper's title, not its copy in the citation box); a section named unquoted in title case ("in the
Previous Work section") is read as named although its first word reads as a position.

Each layout test also checks its premise: with the rule patched off, the old (wrong) answer comes back."""

from __future__ import annotations

from two_column_pages import LEFT, RIGHT
from two_column_pages import box as _box
from two_column_pages import column as _column
from two_column_pages import covers as _covers
from two_column_pages import last_word_covered as _last_word_covered
from two_column_pages import prose as _prose

from arr_coc.reading.layout import sections
from arr_coc.reading.layout.section_ends import capitalised_name, figure_label, long_section_name, taller_title


def test_a_line_over_a_figure_caption_is_a_label():
    line = (700, 800, 760, 820)
    assert figure_label(line, ((620, 838, 1120, 858), "Figure 3: The lexical constraint gives a boost"))
    assert figure_label(line, ((620, 838, 1120, 858), "Fig. 3. The lexical constraint"))
    assert not figure_label(line, ((620, 838, 1120, 858), "Figure 7 shows basic trace tree compilation"))  # prose
    assert not figure_label(line, ((620, 838, 1120, 858), "Table 2: Results on the test set"))  # may stand above
    assert not figure_label(line, ((620, 900, 1120, 920), "Figure 3: The lexical constraint"))  # far under it
    assert not figure_label(line, None)


def test_a_figure_label_does_not_end_the_section(monkeypatch):
    end = "the river bank was the town's in the end."
    left = [("3 RESULTS", 0), *[(t, 0) for t in _prose(30, 0, "along the bank.")]]
    right = [("0.2 0.4 0.6 0.8", 0, 60), ("RECALL", 10, 180), ("Figure 3: Precision and recall of each system.", 0)]
    right += [(t, 30) if k == 0 else (t, 0) for k, t in enumerate(_prose(8, 3))] + [(end, 0)]
    right += [("4 DISCUSSION", 14), *[(t, 0) for t in _prose(8, 5)]]
    boxes = _column(LEFT, left) + _column(RIGHT, right)
    assert _last_word_covered(boxes, "Results", end)
    monkeypatch.setattr(sections, "FIGURE_LABEL", False)  # the premise: the label in capitals ends the section
    assert not _last_word_covered(boxes, "Results", end)


def test_the_taller_of_equal_title_lines():
    assert taller_title([(3, 18.0), (9, 38.0)], 3) == 9
    assert taller_title([(3, 18.0), (9, 20.0)], 3) == 3  # about as tall: the first stays
    assert taller_title([(3, 18.0)], 3) == 3


def test_the_printed_title_not_its_copy_in_the_citation(monkeypatch):
    from arr_coc.reading.layout.structural_query import parse, resolve
    from arr_coc.reading.layout.structure import analyse

    title = "Comparative physiology of wheat"
    side = [("Citation: Thomason K (2018)", 0), (title, 0), ("the town Metabolomics core and the mill", 0)]
    boxes = _column((60, 380), [*side, *[(t, 0) for t in _prose(4, 1)]])
    big = [(title, (420, 100, 1100, 140))]
    body = _column((420, 1120), [(t, 0) for t in _prose(6, 2, "Integrated Metabolomics Center")], top=160)
    boxes += big + body
    q = parse(f"In the section titled '{title}', which word comes right before 'Metabolomics'?")
    answer = _box(boxes, body[-1][0])
    assert _covers(resolve(analyse(boxes), q).regions, answer)
    monkeypatch.setattr(sections, "TALLER_TITLE", False)
    assert not _covers(resolve(analyse(boxes), q).regions, answer)


def test_a_title_case_section_name_in_the_question():
    from arr_coc.reading.layout.structural_query import parse

    q = "What is the next word after 'system' in the Previous Work section?"
    assert long_section_name(q.lower()) is None  # the premise: its first word reads as a position
    assert capitalised_name(q) == "Previous Work"
    assert parse(q).named == "previous work" and parse(q).after == "system"
    assert capitalised_name("What is the next word after 'x' in the previous section?") is None
    assert capitalised_name("What is the next word after 'x' in the Previous section?") is None  # one word
    assert parse("Which word comes after 'x' in the next section?").named is None
