"""Named sections on real two-column papers, round 7 (issue 40; ``arr_coc.reading.layout.sections``): three of
round 6's four rules, kept by leave-one-group-out validation (each was written from round 5's group and changes the
structural evidence of no question in any other development group; round 6's fourth rule, a table's header row above
short cells, lost a question on round 3's last group and was left out): a numbered line that goes on with an open
sentence above it (not a heading), a page number in the margin at a section's foot (not its last line), a reference's
last line under a hanging indent (not a heading).

Each test also checks its premise: with the new rule patched off, the old (wrong) extent comes back."""

from __future__ import annotations

from two_column_pages import LEFT, RIGHT
from two_column_pages import box as _box
from two_column_pages import column as _column
from two_column_pages import covers as _covers
from two_column_pages import prose as _prose

from arr_coc.reading.layout import sections
from arr_coc.reading.layout.sections import named_extent
from arr_coc.reading.layout.structural_query import parse, resolve
from arr_coc.reading.layout.structure import analyse


def _texts(boxes, name):
    layout = analyse(boxes)
    ext = named_extent(layout, name)
    assert ext is not None, name
    return [layout.lines[i].text for i in ext.lines]


def test_a_numbered_line_under_an_open_sentence_goes_on_with_it(monkeypatch):
    open_line = "the old pier was built by the town and the ratio is no more than"
    numbered = "2. All other algorithms have an average ratio of"
    left = [("4.2 Simulation results", 0), *[(t, 0) for t in _prose(6, 0)], (open_line, 0), (numbered, 0)]
    left += [(t, 0) for t in _prose(4, 3, "in the end.")]
    left += [("4.3 Discussion", 12), *[(t, 0) for t in _prose(8, 7)]]
    boxes = _column(LEFT, left) + _column(RIGHT, [(t, 0) for t in _prose(20, 2)])
    assert numbered in _texts(boxes, "Simulation results")
    assert "4.3 Discussion" not in _texts(boxes, "Simulation results")
    monkeypatch.setattr(sections, "_open_above", lambda *a: False)
    monkeypatch.setattr(sections, "LISTED", False)  # round 10: "2." cannot follow "4.2" in the outline either
    assert numbered not in _texts(boxes, "Simulation results")


def test_a_page_number_in_the_margin_is_not_a_sections_last_line(monkeypatch):
    left = [(t, 0) for t in _prose(20, 0)]
    right = [(t, 0) for t in _prose(6, 2)] + [("5. CONCLUDING REMARKS", 12), *[(t, 0) for t in _prose(5, 5)]]
    right += [("mix of different types of jobs.", 0), ("6. REFERENCES", 10), *[(t, 0) for t in _prose(6, 8)]]
    boxes = _column(LEFT, left) + _column(RIGHT, right)
    y = _box(boxes, "mix of different types of jobs.")[3]
    boxes.append(("450", (RIGHT[0] - 30, y + 4, RIGHT[0] - 12, y + 15)))  # a small folio left of the column
    query = "What is the last word of the section titled 'CONCLUDING REMARKS'?"
    good = _box(boxes, "mix of different types of jobs.")
    layout = analyse(boxes)
    ext = named_extent(layout, "CONCLUDING REMARKS")
    assert ext is not None and layout.lines[ext.lines[-1]].text == "450"  # the page number closes the extent
    assert _covers(resolve(layout, parse(query)).regions, good)
    monkeypatch.setattr(sections, "_wordy", lambda text: True)
    monkeypatch.setattr(sections, "ends_sentence", lambda text: True)  # round 8's last-sentence rule finds it too
    assert not _covers(resolve(analyse(boxes), parse(query)).regions, good)


def test_a_references_last_line_under_a_hanging_indent_does_not_end_the_section(monkeypatch):
    refs = []
    for first, rest, tail in [
        (
            "Akamatsu H, Taga M (1999) Molecular karyotypes",
            "for plant pathogens known to produce",
            "PLANT J 25:305-314",
        ),
        (
            "Brown DW, Adams TH (1996) Aspergillus has distinct",
            "fatty acid synthases for the primary",
            "CURR GENET 35:64",
        ),
        (
            "Hayashi N, Tanabe K (1990) Determination of host",
            "toxin production during spore growth",
            "PHYTOPATHOLOGY 80:1088",
        ),
    ]:
        refs += [(first, 0), (rest, 0, 16), (tail, 0, 16)]
    left = [(t, 0) for t in _prose(8, 0)] + [("REFERENCES", 12), *refs]
    boxes = _column(LEFT, left) + _column(RIGHT, [(t, 0) for t in _prose(20, 2)])
    assert "toxin production during spore growth" in _texts(boxes, "REFERENCES")
    monkeypatch.setattr(sections, "_hanging", lambda *a: False)
    assert "toxin production during spore growth" not in _texts(boxes, "REFERENCES")
