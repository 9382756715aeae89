"""Page layout: how a page's text boxes are organised, from box geometry alone (plain data in, plain data out).

    structure.py         ``analyse`` -> ``Layout`` (lines, columns, blocks with roles, title, sections, reading
                         order, tables with headers, chart values and labels); thresholds in ``PageLayoutConfig``
                         (``ReadingConfig.page``)
    structural_query.py  ``parse`` a question about the page's structure ("the second section of the left
                         column", "the word after 'ability to'") into a ``StructuralQuery``; ``resolve`` it on a
                         ``Layout`` into the ``Evidence`` to keep
    sections.py          ``named_extent``: the lines a named section's heading governs (its column, on into the
                         next column, up to the next heading that stands above prose)
    section_ends.py      where a named section ends: lines that cannot head the next section (after a word
                         cut by a hyphen, a numbered list's entry), the line its last sentence ends on
    column_split.py      ``separate_columns``: a page whose columns the layout joined (a tilted scan) again with
                         each column's boxes moved apart (the named-section path only)

Depends on ``arr_coc.reading.text`` only (no OCR engine, no matcher): any OCR output works.
"""

from .structural_query import Evidence, StructuralQuery, parse, resolve
from .structure import Box, Layout, PageLayoutConfig, analyse, flat_layout

__all__ = [
    "Box",
    "Evidence",
    "Layout",
    "PageLayoutConfig",
    "StructuralQuery",
    "analyse",
    "flat_layout",
    "parse",
    "resolve",
]
