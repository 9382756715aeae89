"""Named sections on real two-column papers, round 11 (issue 40; ``arr_coc.reading.layout.section_ends`` and
``sections``): two rules written from round 10's group (development from round 11 on) and kept by leave-one-group-out
validation: a short line with a run of words beside it on its row, in its own column (a line of prose that an inline
formula cut into pieces), is no heading; the words kept around an asked phrase are one box a line, the spaces
between them included (word boxes are interpolated from the OCR line's characters).

Each layout test also checks its premise: with the rule patched off, the old (wrong) answer comes back."""

from __future__ import annotations

from two_column_pages import LEFT, PITCH, RIGHT, H
from two_column_pages import box as _box
from two_column_pages import column as _column
from two_column_pages import covers as _covers
from two_column_pages import last_word_covered as _last_word_covered
from two_column_pages import prose as _prose

from arr_coc.reading.layout import sections
from arr_coc.reading.layout.section_ends import line_runs, row_fragment


def test_a_line_with_words_beside_it_on_its_row_is_a_fragment():
    line = (60, 421, 200, 443)
    assert row_fragment(line, [((250, 421, 560, 443), "is exponential in the number of")])
    assert not row_fragment(line, [((250, 421, 560, 443), "(3)")])  # an equation's number: no words
    assert not row_fragment(line, [((250, 460, 560, 482), "is exponential in the number of")])  # the next row
    assert not row_fragment(line, [((0, 421, 50, 443), "is exponential in the number of")])  # to its left
    assert not row_fragment(line, [])


def test_a_line_cut_by_an_inline_formula_does_not_end_the_section(monkeypatch):
    end = "fewer observations and fewer computational resources."
    left = [("5. Sample Complexity", 0), *[(t, 0) for t in _prose(6, 0, "these types of errors.")]]
    boxes = _column(LEFT, left)
    y = boxes[-1][1][1] + PITCH + 12  # a new paragraph, set apart
    boxes += [("First, although", (LEFT[0], y, LEFT[0] + 150, y + H))]
    boxes += [("is exponential in the number of", (LEFT[0] + 200, y, LEFT[1], y + H))]  # "|A|" between, dropped
    rest = [(t, 0) for t in _prose(6, 3)] + [(end, 0), ("6. Experimental Results", 14), *[(t, 0) for t in _prose(6, 7)]]
    boxes += _column(LEFT, rest, top=y + PITCH + 10)  # the formula's subscript pushes it down
    boxes += _column(RIGHT, [(t, 0) for t in _prose(24, 3)])
    assert _last_word_covered(boxes, "Sample Complexity", end)
    monkeypatch.setattr(sections, "ROW_FRAGMENT", False)
    assert not _last_word_covered(boxes, "Sample Complexity", end)


def test_line_runs_joins_the_consecutive_words_of_a_line():
    words = [(3, (10, 0, 40, 20)), (3, (50, 1, 90, 20)), (4, (10, 25, 30, 45)), (3, (100, 0, 120, 20))]
    assert line_runs(words) == [(10, 0, 90, 20), (10, 25, 30, 45), (100, 0, 120, 20)]
    assert line_runs([]) == []


def test_the_words_after_a_phrase_are_kept_with_the_spaces_between_them(monkeypatch):
    from arr_coc.reading.layout.structural_query import parse, resolve
    from arr_coc.reading.layout.structure import analyse

    left = [("Mill Records", 0), *[(t, 0) for t in _prose(6, 0)]]
    boxes = _column(LEFT, left) + _column(RIGHT, [(t, 0) for t in _prose(24, 3)])
    q = parse("Which word comes right after 'pier' in the section titled 'Mill Records'?")
    line = _box(boxes, _prose(6, 0)[0])  # "the old pier was built ...": 10 px a character
    space = (line[0] + 122, line[1], line[0] + 126, line[3])  # in the space after "pier"
    assert _covers(resolve(analyse(boxes), q).regions, space)
    monkeypatch.setattr(sections, "LINE_RUNS", False)
    assert not _covers(resolve(analyse(boxes), q).regions, space)
