"""Named sections on real two-column papers, round 5 (issue 40; ``arr_coc.reading.layout.sections`` and
``column_split``): a running header at the top of the column a section goes on in, a body-size title set apart by
white space that the layout joins to the paragraphs around it, a footnote's first line (raised by its marker), a
title wrapped onto a second line, a table's cells closing a section's extent, a wide table's row across the gutter.

The running-header test also checks its premise (with the rule patched off the old answer comes back); the
synthetic pages of the other rules are read right by the old rules too (the layout classes their titles as
headings), so those tests guard the behaviour, not the premise; the real pages are in results/weak_spots.md."""

from __future__ import annotations

import pytest
from two_column_pages import LEFT, RIGHT, H
from two_column_pages import box as _box
from two_column_pages import column as _column
from two_column_pages import covers as _covers
from two_column_pages import prose as _prose

from arr_coc.reading.layout import column_split, sections
from arr_coc.reading.layout.sections import named_extent
from arr_coc.reading.layout.structural_query import parse, resolve
from arr_coc.reading.layout.structure import analyse


def _cx(box):
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def _inside(regions, box) -> bool:
    """A region (a year's word box) lies inside ``box`` (its line)."""
    return any(box[0] <= _cx(r)[0] <= box[2] and box[1] <= _cx(r)[1] <= box[3] for r in regions)


def _evidence(boxes, query):
    ev = resolve(analyse(boxes), parse(query))
    assert ev is not None, query
    return ev.regions


def test_a_running_header_at_the_top_of_the_next_column_does_not_end_the_section(monkeypatch):
    left = [("7", 0), *[(t, 0) for t in _prose(3, 0, "in 1887.")], ("2. Methods", 12)]
    left += [(t, 0) for t in _prose(14, 3, "raise issues important to")]
    right = [("Journal of Quiet River Studies", 0)]  # the header, set apart above the column's text
    right += [("their lives and the town hall archive.", 40), *[(t, 0) for t in _prose(4, 5, "in the end.")]]
    right += [("last of all the ferry stopped.", 0), ("3. Results", 12), *[(t, 0) for t in _prose(6, 9)]]
    boxes = _column(LEFT, left) + _column(RIGHT, right, top=60.0)
    query = "What is the last word of the section titled 'Methods'?"
    good = _box(boxes, "last of all the ferry stopped.")
    assert _covers(_evidence(boxes, query), good)
    ext = named_extent(analyse(boxes), "Methods")
    assert ext is not None and "Journal of Quiet River Studies" not in [analyse(boxes).lines[i].text for i in ext.lines]
    monkeypatch.setattr(sections, "_running_head", lambda *a: False)
    assert not _covers(_evidence(boxes, query), good)


def test_a_spaced_body_size_title_ends_the_section_of_a_spaced_title():
    # the titles are set at the body's size with white space above them, inside one block of text
    left = [(t, 0) for t in _prose(5, 0, "between test sessions.")]
    left += [("Potential confounders", 10), *[(t, 0) for t in _prose(6, 2, "ended in 1931.")]]
    left += [("Statistical analysis", 10), *[(t, 0) for t in _prose(7, 4, "was examined.")]]
    right = [(t, 0) for t in _prose(16, 6, "and the end.")]
    boxes = _column(LEFT, left) + _column(RIGHT, right)
    query = "With which word does the 'Potential confounders' section close?"
    good = _box(boxes, _prose(6, 2, "ended in 1931.")[-1])
    bad = _box(boxes, _prose(16, 6, "and the end.")[-1])
    regions = _evidence(boxes, query)
    assert _covers(regions, good) and not _covers(regions, bad)
    year = _evidence(boxes, "Which year is mentioned in the section titled 'Potential confounders'?")
    assert _inside(year, good)


def test_a_spaced_paragraph_after_a_list_is_no_title():
    left = [("2. Methods", 0), *[(t, 0) for t in _prose(4, 1, "including:")]]
    left += [("(i) the old pier,", 6), ("(ii) the mill.", 6)]
    left += [("The order of the questions varied according to the", 12), *[(t, 0) for t in _prose(4, 3, "end.")]]
    left += [("3. Results", 12), *[(t, 0) for t in _prose(8, 5, "in 1955.")]]
    boxes = _column(LEFT, left) + _column(RIGHT, [(t, 0) for t in _prose(20, 7, "done.")])
    regions = _evidence(boxes, "What is the last word of the section titled 'Methods'?")
    assert _covers(regions, _box(boxes, _prose(4, 3, "end.")[-1]))


def test_a_footnote_whose_marker_raises_its_first_line_is_no_numbered_heading():
    left = [("6 Analysis", 0), *[(t, 0) for t in _prose(10, 0, "have high correlation")]]
    foot = [("13 We tried both the pier and the mill with the", 10), ("road and the bank and the town.", 0)]
    boxes = _column(LEFT, left)
    y = boxes[-1][1][3] + 24
    for t, _ in foot:  # a footnote: smaller type; its first line as tall as the body's (the raised marker)
        h = H if t.startswith("13") else 14
        boxes.append((t, (LEFT[0] + (20 if t.startswith("13") else 0), y, LEFT[0] + 9 * len(t), y + h)))
        y += 17
    right = [(t, 0) for t in _prose(4, 3, "in 2014 and the last.")]
    right += [("7 Conclusion", 12), *[(t, 0) for t in _prose(8, 6)]]
    boxes += _column(RIGHT, right)
    query = "What year does the 'Analysis' section give?"
    good = _box(boxes, _prose(4, 3, "in 2014 and the last.")[-1])
    assert _inside(_evidence(boxes, query), good)


def test_a_title_wrapped_onto_a_second_line_is_not_the_next_section():
    left = [("2 CHARACTERIZING EXPOSITORY", 0), ("WRITING", -4)]
    left += [(t, 0) for t in _prose(8, 2, "and a group.")]
    left += [("3 DESIGN GOALS", 12), *[(t, 0) for t in _prose(8, 4)]]
    boxes = _column(LEFT, left) + _column(RIGHT, [(t, 0) for t in _prose(20, 7, "done.")])
    layout = analyse(boxes)
    ext = named_extent(layout, "CHARACTERIZING EXPOSITORY")
    assert ext is not None and len(ext.lines) >= 8
    assert "3 DESIGN GOALS" not in [layout.lines[i].text for i in ext.lines]


def test_a_tables_cells_are_not_the_sections_last_line_of_prose():
    left = [("2.5 Filtering", 0), *[(t, 0) for t in _prose(8, 2, "to improve corpus quality.")]]
    left += [("Filter", 10), ("No title", 0), ("< 100 chars of text", 0), ("Not English", 0)]
    left += [("Table 2: Post-processing data quality filters", 6), ("2.6 Linking", 14)]
    left += [(t, 0) for t in _prose(5, 4)]
    boxes = _column(LEFT, left) + _column(RIGHT, [(t, 0) for t in _prose(20, 7, "done.")])
    regions = _evidence(boxes, "What is the last word of the section titled 'Filtering'?")
    assert _covers(regions, _box(boxes, _prose(8, 2, "to improve corpus quality.")[-1]))
    assert not _covers(regions, _box(boxes, "< 100 chars of text"))


@pytest.mark.parametrize("start", [147.0, 487.0])
def test_a_box_across_the_gutter_is_cut_only_where_it_starts_at_its_columns_edge(start):
    edges = [147.0, 620.0, 1120.0]  # a wide table's row starts inside the left column, two joined lines at its edge
    box = (start, 300.0, 1090.0, 320.0)
    assert column_split._spans_columns(box, edges, 0.0, 20.0) == (start == 147.0)
