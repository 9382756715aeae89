"""Rules where they are sure, the learned scorer elsewhere: a route per question by what the rules know exactly.

Issue 40 item 4 asks which relevance runs by default. The learned box scorer (``--relevance learned``) wins key ->
value and paraphrased questions; it loses real two-column section questions ("the word before 'w' in the section
S"). Why (``papermage_papermage_p5_q0``, a development question of ``weakspots/sections-r3``): the structural
evidence matched the phrase at its wrong occurrence (a code listing in the other column, inside the named
section's extent), so what the evidence keeps first does not hold the answer. The rules still keep the answer in the
rest of the budget: the question's phrase is a key and its neighbours (the line above it, where the word before it
ends) score high (0.956). The learned scorer, which reads the evidence as features (``ev_hit``), puts the rest of the
budget on the evidence's boxes and scores that neighbour 0.021: its ranking of the other boxes was learned where
the evidence was right, so it has no second guess where it is not.

:class:`RoutedScorer` (``--relevance routed``) therefore sends a question to the rules when the rules have an exact
layout relation for it, and every other question to the learned scorer. The route, written down before any figure
of it was measured (nothing numeric in it, so nothing is chosen on any fold or set):

1. **structural evidence**: ``QueryMatcher.evidence`` found the referent of a structural question on the page (an
   ``Evidence`` with regions: ``title``, ``after-phrase`` -- the word before / after a phrase, in a named section or
   not --, ``year-in-unit``, ``word-of-unit``, ``ordinal-unit``, ``compare``, ``implied-label``);
2. **a table cell by its header and row label**: ``QueryMatcher.table_cell`` (``arr_coc.reading.matching.crossing``)
   found the box on the label's line under the header's column.

Every other question (key -> value, paraphrased, a structural question whose referent was not found) goes to the
learned scorer. A question routed to the rules gets exactly the rules' map (the same ``box_scores`` call with the
same layout and implied keys as without a scorer); the evidence is painted on top in both cases, as before.

``routed-structure`` is the first criterion alone (a table cell goes to the learned scorer too). It was added AFTER
the first figures: on realdocs-dev's source folds, end to end, the crossing also fires on 11 form questions, where
the rules lose two the learned scorer keeps (results/learned_relevance.md); it is measured, not chosen, here.

``routed-tables`` (round 11, issue 40 item 4; opt-in, the default is unchanged) is the first criterion plus a third,
written in results/learned_relevance.md before any figure of it: a question goes to the rules when (a) its page
reads as a table and (b) it is a literal question. The words' precise meaning, fixed here before measuring:

- a **number or amount box** is a page box whose text matches the layout's number pattern (``layout.page``'s
  ``_NUMBER_RE``: digits with separators, an optional currency sign, sign, parentheses, per cent, a unit of up to
  four letters);
- a **line** is a run of boxes whose vertical extents overlap by at least half the smaller box's height (the boxes
  taken top to bottom by their centres, each joined to the line of the box before it when it overlaps that line's
  first box so);
- lines hold numbers **aligned in columns** when a number box of one overlaps horizontally (its x-range meets)
  a number box of another line that holds three or more number boxes;
- the page **reads as a table** (``table_page``) when three or more lines each hold three or more number boxes that
  are each aligned so;
- a **content word** of the question is a token (``lexical.tokens`` of its ``fold``-ed text: lower case, accents
  folded, stemmed, numbers canonical) that is not one of the lexicon's ``STOP_WORDS``; it is **printed** when some
  page box's ``fold``-ed text holds it as a token (the same ``tokens``); the question is **literal**
  (``literal_question``) when it has at least one content word and every one is printed.

No threshold here was chosen on any figure (three lines of three numbers is the criterion's own wording).

``routed-cells`` (round 12, issue 40 item 4; the default, ``arr_coc.model.DEFAULT_RELEVANCE``) is the first
criterion plus a fourth, written in results/learned_relevance.md before any held-out figure of it: a **printed-header
cell question** goes to the rules. The question is one when ``crossing.split_cell_query`` splits it into (header, row
label) -- "In the L row, what is the H?", "What is the H in the L row?", "What is the H for / of L?"; not
``cell_wording``'s loose wordings, not a row or column named by meaning -- and (a) it names the row as a row (the
first two wordings), or (b) ``crossing.cross_cells`` over those splits finds a box on the label's line under the
header's column, or (c) the page reads as a table (``table_page``). Why: a crossed cell is painted at 1 under every
scorer already (``QueryMatcher.relevance_and_evidence``), so what the learned scorer loses on such a question is the
rest of the budget (an answer wider than the crossed box, a crossing on another box, no crossing at all), where the
rules' ranking of the row's and column's boxes keeps it; loose wordings and receipt or form questions that only
look like "What is the name of the company ..." stay with the learned scorer unless their page reads as a table.

Names: ``routed`` / ``routed-structure`` / ``routed-tables`` / ``routed-cells`` wrap the built-in learned checkpoint,
``routed:FOLDER`` a checkpoint folder (and its fold scorers in the benchmarks), through
``arr_coc.reading.matching.gated.gate_of`` / ``wrap``. The route runs inside ``QueryMatcher.relevance_and_evidence``
(it needs the page's boxes and the question, which the box scorer's feature rows do not carry); called on feature
rows alone (``box_scores``), a ``RoutedScorer`` is the learned scorer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from torch import nn

if TYPE_CHECKING:  # pragma: no cover
    from ..layout.structural_query import Evidence
    from ..ocr.reader import TextBox

LEARNED = "learned"
RULES = "rules"
TABLE_LITERAL = "table-literal"  # the third criterion's reason (``routed-tables``)
TABLE_LINES = 3  # lines of numbers a table page holds, at least (the criterion's wording)
TABLE_NUMBERS = 3  # aligned number boxes each of those lines holds, at least (the criterion's wording)
CELL_ROW = "cell-row"  # the fourth criterion's reasons (``routed-cells``): (a) the question names its row as a row,
CELL_CROSSED = "cell-crossed"  # (b) the printed header and row words crossed on the page,
CELL_TABLE = "cell-table-page"  # (c) the page reads as a table


class RoutedScorer(nn.Module):
    """A ``BoxScorer`` for the questions the rules are not sure of; the rules for those they are (see the module).

    Same interface as ``BoxScorer`` for ``QueryMatcher`` (``features``, ``own_columns``, ``box_scores``, ``config``,
    ``save``) plus :meth:`route`, which the matcher asks first. The wrapped scorer is a submodule.

    Args:
        scorer: a trained ``BoxScorer`` (``arr_coc.reading.matching.learned``).
        cells: the second criterion (a crossed table cell goes to the rules); False: ``routed-structure``.
        tables: the third criterion (a literal question on a table page goes to the rules): ``routed-tables``.
        printed: the fourth criterion (a printed-header cell question goes to the rules): ``routed-cells``.

    Raises:
        ValueError: if ``scorer`` is None (``routed`` needs a learned scorer for the questions it sends to it).
    """

    def __init__(
        self, scorer: nn.Module | None, cells: bool = True, tables: bool = False, printed: bool = False
    ) -> None:
        super().__init__()
        if scorer is None:
            raise ValueError(
                "--relevance routed needs a learned box scorer (scorer.json + model.safetensors in the checkpoint "
                "folder) for the questions the rules are not sure of; this checkpoint has none (write one with "
                "arr-coc train, or use the built-in: --relevance routed)"
            )
        self.scorer = scorer
        self.cells = bool(cells)
        self.tables = bool(tables)
        self.printed = bool(printed)
        self.pages = {LEARNED: 0, RULES: 0}  # questions routed each way (one call a question and page), for reports
        self.reasons: Counter[str] = Counter()  # the rule behind each question routed to the rules

    @property
    def features(self) -> tuple[str, ...]:
        return self.scorer.features

    @property
    def config(self) -> dict[str, Any]:
        gate = "route" if self.cells else "route-structure"
        gate += ("-tables" if self.tables else "") + ("-cells" if self.printed else "")
        return {**self.scorer.config, "gate": gate}

    def save(self, folder: str | Path) -> None:
        """The wrapped scorer's files (the route is a name, ``routed:FOLDER``, not a file)."""
        self.scorer.save(folder)

    def own_columns(self, feats: np.ndarray) -> np.ndarray:
        return self.scorer.own_columns(feats)

    def box_scores(self, feats: np.ndarray) -> np.ndarray:
        """(N,) the learned scorer's relevance of each box (the questions :meth:`route` gave it)."""
        return self.scorer.box_scores(feats)

    def route(self, matcher: Any, boxes: Sequence[TextBox], query: str, evidence: Evidence | None) -> str:
        """``"rules"`` when the rules have an exact layout relation for ``query`` on this page, else ``"learned"``.

        Args:
            matcher: the ``QueryMatcher`` asking (its ``table_cell`` is called for the second criterion).
            boxes: the page's recognised text.
            query: the question.
            evidence: ``matcher.evidence(boxes, query)`` (None when no structural rule found a referent).
        """
        reason = why_rules(matcher, boxes, query, evidence, self.cells, self.tables, self.printed)
        side = LEARNED if reason is None else RULES
        self.pages[side] += 1
        if reason is not None:
            self.reasons[reason] += 1
        return side


def why_rules(
    matcher: Any,
    boxes: Sequence[TextBox],
    query: str,
    evidence: Evidence | None,
    cells: bool = True,
    tables: bool = False,
    printed: bool = False,
) -> str | None:
    """The route's reason to give ``query`` to the rules (the evidence's rule, ``"table-cell"``,
    ``"table-literal"`` or one of the ``CELL_*``), None when the learned scorer takes it. The criteria of the module
    docstring, in order (``cells=False``: not the second; ``tables=True``: the third too; ``printed=True``: the
    fourth too); nothing numeric."""
    if evidence is not None and evidence.regions:
        return evidence.rule
    if printed and boxes and query:
        why = printed_cell(matcher, boxes, query)
        if why is not None:
            return why
    cell = matcher.table_cell(boxes, query) if cells and boxes and query else None
    if cell is not None and cell.regions:
        return cell.rule
    if tables and boxes and query and table_page(boxes) and literal_question(query, boxes):
        return TABLE_LITERAL
    return None


def _lines(boxes: Iterable[TextBox]) -> list[list[TextBox]]:
    """The boxes in lines (module docstring): top to bottom by centre, a box joins the current line when its
    vertical extent overlaps the line's first box's by at least half the smaller height."""
    out: list[list[TextBox]] = []
    for b in sorted(boxes, key=lambda b: (b.box[1] + b.box[3]) / 2):
        if out:
            head = out[-1][0]
            overlap = min(b.box[3], head.box[3]) - max(b.box[1], head.box[1])
            if overlap >= 0.5 * min(b.height, head.height):
                out[-1].append(b)
                continue
        out.append([b])
    return out


def table_page(boxes: Sequence[TextBox]) -> bool:
    """Whether the page reads as a table: ``TABLE_LINES`` or more lines each holding ``TABLE_NUMBERS`` or more
    number or amount boxes aligned in columns with another such line (module docstring)."""
    from ..layout.page import _NUMBER_RE

    rows = [[b for b in line if _NUMBER_RE.match(b.text)] for line in _lines(boxes)]
    rows = [r for r in rows if len(r) >= TABLE_NUMBERS]

    def aligned(b: TextBox, i: int) -> bool:
        return any(c.box[0] <= b.box[2] and b.box[0] <= c.box[2] for j, row in enumerate(rows) if j != i for c in row)

    return sum(sum(aligned(b, i) for b in row) >= TABLE_NUMBERS for i, row in enumerate(rows)) >= TABLE_LINES


def literal_question(query: str, boxes: Sequence[TextBox]) -> bool:
    """Whether every content word of ``query`` (one at least) is printed on the page (module docstring)."""
    from ..text import fold
    from .lexical import STOP_WORDS, tokens

    words = {t for t in tokens(fold(query)) if t not in STOP_WORDS}
    if not words:
        return False
    printed = {t for b in boxes for t in tokens(fold(b.text))}
    return words <= printed


def printed_cell(matcher: Any, boxes: Sequence[TextBox], query: str) -> str | None:
    """The fourth criterion's reason (``CELL_ROW``, ``CELL_CROSSED``, ``CELL_TABLE``) when ``query`` is a
    printed-header cell question (module docstring), else None; off with ``structure.query_parsing`` or
    ``structure.table_cells`` off, as ``QueryMatcher.table_cell`` is."""
    from .crossing import _ROW_FIRST, _ROW_LAST, cross_cells, split_cell_query

    cfg = matcher.config
    if not (cfg.structure.query_parsing and cfg.structure.table_cells):
        return None
    text = matcher.clip(query)
    splits = split_cell_query(text)
    if not splits:
        return None
    if _ROW_FIRST.match(text) or _ROW_LAST.match(text):
        return CELL_ROW
    lay = cfg.layout
    cell = cross_cells(boxes, splits, lambda p: matcher.lexical_scores(boxes, p), lay.same_line, lay.column_pad)
    if cell is not None and cell.regions:
        return CELL_CROSSED
    return CELL_TABLE if table_page(boxes) else None
