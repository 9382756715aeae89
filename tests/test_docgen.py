"""Tests for the evidence-recall benchmark: the document generator and the metric / baseline functions.

Why: the benchmark's numbers are only as good as its answer boxes and its cell arithmetic, so this checks that
generation is deterministic, boxes sit on the rendered answer, splits cover every kind, answer cells are exact on
a hand-worked case, baselines keep exactly k cells in raster order, and the oracle scores 1.0.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from arr_coc.evaluation import docgen
from arr_coc.evaluation import evidence as er
from arr_coc.evaluation.allocators import stride_keep

N_DEV = 3  # per kind: with PARAPHRASE_EVERY = 3 exactly one in three is paraphrased
N_TEST = 1  # per kind (plus the real scan); kept small so the file runs in seconds


@pytest.fixture(scope="module")
def samples() -> dict[str, list[docgen.Sample]]:
    return {"dev": docgen.generate("dev", N_DEV, seed=0), "test": docgen.generate("test", N_TEST, seed=0)}


def _ink_share(image: Image.Image, box: tuple[int, int, int, int]) -> float:
    """Share of pixels in ``box`` that differ from the box's median grey by more than 60 levels."""
    region = np.asarray(image.convert("L").crop(box), dtype=np.float32)
    return float((np.abs(region - np.median(region)) > 60).mean())


def test_same_seed_same_samples_and_other_seed_differs() -> None:
    for kind in docgen.KINDS:
        a, b = docgen.make_sample("dev", kind, 2, seed=5), docgen.make_sample("dev", kind, 2, seed=5)
        assert (a.query, a.answer, a.answer_box, a.paraphrased) == (b.query, b.answer, b.answer_box, b.paraphrased)
        assert a.image.tobytes() == b.image.tobytes()
    a, c = docgen.make_sample("test", "table", 0, seed=5), docgen.make_sample("test", "table", 0, seed=6)
    assert c.image.tobytes() != a.image.tobytes()


def test_every_kind_in_both_splits_and_real_scan_only_in_test(samples) -> None:
    for split, ss in samples.items():
        kinds = {s.kind for s in ss}
        assert set(docgen.KINDS) <= kinds
        assert (docgen.REAL_SCAN_KIND in kinds) == (split == "test")
        assert len({s.id for s in ss}) == len(ss)


def test_boxes_inside_image_non_degenerate_and_inked(samples) -> None:
    for ss in samples.values():
        for s in ss:
            w, h = s.image.size
            x0, y0, x1, y1 = s.answer_box
            assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h, s.id
            assert x1 - x0 >= 4 and y1 - y0 >= 4, s.id
            assert s.image.mode == "RGB"
            if s.kind != docgen.REAL_SCAN_KIND:
                assert 700 <= w <= 1700 and 700 <= h <= 1700, (s.id, s.image.size)
            assert _ink_share(s.image, s.answer_box) > 0.03, s.id
            assert s.query and s.answer


def test_box_is_tight_on_the_clean_render() -> None:
    """Before the scan look: the box holds ink, and thin strips just left and right of it on the same rows hold
    (almost) none, so the box neither misses nor cuts through the answer."""
    for split in docgen.SPLITS:
        for kind, build in docgen.BUILDERS.items():
            for i in range(2):
                built = build(random.Random(f"tight|{split}|{kind}|{i}"), split, i % 3 == 1)
                img = built.canvas.image
                x0, y0, x1, y1 = built.box
                assert _ink_share(img, built.box) > 0.03, (split, kind, i)
                region = np.asarray(img.convert("L"), dtype=np.float32)
                bg = np.median(region[y0:y1, max(0, x0 - 12) : x0 - 2])
                if kind == "line_chart":
                    continue  # the plotted line may run right past a point's value label
                strips = [(x0 - 3, x0 - 1)]
                if kind not in ("text_page", "running_text"):  # in running text a full stop may follow directly
                    strips.append((x1 + 1, x1 + 3))
                for xa, xb in strips:
                    strip = region[y0:y1, max(0, xa) : max(0, xb)]
                    if strip.size:
                        assert (np.abs(strip - bg) > 60).mean() < 0.1, (split, kind, i, xa)


def test_answer_occurs_once_in_the_document() -> None:
    for split in docgen.SPLITS:
        for kind, build in docgen.BUILDERS.items():
            built = build(random.Random(f"once|{split}|{kind}"), split, False)
            n = docgen._occurrences(built.canvas.all_text(), built.answer)
            assert n >= 1, (split, kind, built.answer)  # the answer was drawn; make_sample redraws when n > 1


def test_a_third_paraphrased_and_paraphrases_avoid_the_key(samples) -> None:
    dev = samples["dev"]
    assert sum(s.paraphrased for s in dev) == len(dev) // 3
    for name, concept in docgen.CONCEPTS.items():
        for split, questions in concept.paraphrases.items():
            for q in questions:
                for key in concept.keys[split]:
                    words = {w.strip(".#:").lower() for w in key.split()} - {"", "no", "of", "to", "by"}
                    assert not words & {w.strip("?,.'s").lower() for w in q.split()}, (name, q, key)


def test_splits_use_different_fonts_and_vocabulary() -> None:
    assert not set(docgen.font_files("dev")) & set(docgen.font_files("test"))
    for concept in docgen.CONCEPTS.values():
        assert not set(concept.keys["dev"]) & set(concept.keys["test"])
    assert not set(docgen.PHOTOS["dev"]) & set(docgen.PHOTOS["test"])


def test_rotate_box_follows_pil_rotation() -> None:
    img = Image.new("L", (400, 300), 255)
    ImageDraw.Draw(img).rectangle((250, 40, 299, 79), fill=0)
    for angle in (-1.2, 0.7, 5.0):
        rot = np.asarray(img.rotate(angle, resample=Image.BICUBIC, fillcolor=255))
        ys, xs = np.nonzero(rot < 128)
        x0, y0, x1, y1 = docgen._rotate_box((250, 40, 300, 80), angle, img.size)
        assert abs(xs.min() - x0) <= 1 and abs(ys.min() - y0) <= 1
        assert abs(xs.max() + 1 - x1) <= 1 and abs(ys.max() + 1 - y1) <= 1


def test_real_scan_box_holds_the_code_line() -> None:
    s = docgen.real_scan_sample()
    assert s.image.size == (384, 191)
    assert _ink_share(s.image, s.answer_box) > 0.1
    x0, y0, x1, y1 = s.answer_box
    above = np.asarray(s.image.convert("L").crop((x0, y0 - 20, x1, y0 - 8)), dtype=np.float32)
    assert (np.abs(above - np.median(above)) > 60).mean() < 0.02  # blank band above the code line


def test_answer_cells_hand_checked() -> None:
    # 100x100 image, 10x10 grid of 10 px cells; box (15,15)-(35,22): area 140, 20% = 28; cell 20% = 20.
    # overlaps row 1: 25, 50, 25 (cols 1-3); row 2: 10, 20, 10 -> cells 11, 12, 13 and 22 (20 >= 20 exactly)
    assert er.answer_cells((15, 15, 35, 22), 100, 100, 10, 10).tolist() == [11, 12, 13, 22]
    # tiny box: 100% of the box lies in cell 0
    assert er.answer_cells((1, 1, 2, 2), 100, 100, 10, 10).tolist() == [0]
    # a thin line across the whole width: every cell holds 10% of the box and 15% of a cell -> only the argmax
    assert er.answer_cells((0, 0, 100, 1.5), 100, 100, 10, 10).tolist() == [0]
    # non-square cells: 200x100 image, 2x4 grid (50x50 cells); box covers cell (1, 2) fully
    assert er.answer_cells((100, 50, 150, 100), 200, 100, 2, 4).tolist() == [6]
    with pytest.raises(ValueError):
        er.answer_cells((300, 300, 310, 310), 100, 100, 10, 10)


def test_metrics_hand_checked() -> None:
    assert er.evidence_recall([1, 2, 3], [2, 3, 4, 5]) == 0.5
    assert not er.full_hit([1, 2, 3], [2, 3, 4, 5])
    assert er.full_hit([2, 3, 4, 5, 9], [2, 3, 4, 5])
    assert er.budget_k(1 / 9, 1237) == 137 and er.budget_k(1 / 9, 3) == 1
    with pytest.raises(ValueError):
        er.evidence_recall([1], [])


def test_aggregate_hand_checked() -> None:
    res = [
        er.SampleResult("a", "k1", 10, 2, {"x": {b: 1.0 for b, _ in er.BUDGETS}}, {"x": 0.0}),
        er.SampleResult("b", "k1", 10, 2, {"x": {b: 0.5 for b, _ in er.BUDGETS}}, {"x": 0.0}),
        er.SampleResult("c", "k2", 10, 2, {"x": {b: 0.0 for b, _ in er.BUDGETS}}, {"x": 0.0}),
    ]
    agg = er.aggregate(res, "x", ["k1", "k2"])["11.1%"]
    assert agg["k1"] == {"recall": 0.75, "full_hit": 0.5, "n": 2}
    assert agg["overall"]["recall"] == pytest.approx(0.5) and agg["overall"]["full_hit"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("rows,cols", [(3, 3), (7, 14), (36, 29)])
def test_baselines_respect_budget_and_raster_order(rows: int, cols: int) -> None:
    n = rows * cols
    rankers = {
        "random": er.top_k(er.random_scores(rows, cols, 1)),
        "centre": er.top_k(er.centre_scores(rows, cols)),
        "stride": lambda k: stride_keep(n, k),
    }
    for frac in (1 / 9, 2 / 9, 1 / 3, 1.0):
        k = er.budget_k(frac, n)
        for name, rank in rankers.items():
            keep = np.asarray(rank(k))
            assert len(keep) == k and np.all(np.diff(keep) > 0), name
            assert keep.min() >= 0 and keep.max() < n, name
    assert er.top_k(er.centre_scores(3, 3))(1).tolist() == [4]
    assert stride_keep(9, 3).tolist() == [1, 4, 7]


def test_oracle_gets_full_recall_and_random_is_near_the_budget(tmp_path: Path, run_benchmark) -> None:
    """``benchmarks/evidence_recall.py`` on the test split, one document a kind: the oracle keeps every answer cell,
    random keeps about its budget's share."""
    out = tmp_path / "er.md"
    argv = ["--split", "test", "--n-per-kind", str(N_TEST), "--allocators", "random,stride,centre,oracle"]
    run_benchmark("evidence_recall.py", *argv, "--out", str(out))
    samples = json.loads(out.with_suffix(".json").read_text())["samples"]
    assert len(samples) == N_TEST * len(docgen.KINDS) + 1  # and the real scan
    for s in samples:
        assert all(v == 1.0 for v in s["recall"]["oracle"].values()), s["id"]
    assert 0.1 < float(np.mean([s["recall"]["random"]["33.3%"] for s in samples])) < 0.6


def test_main_writes_markdown_and_json(tmp_path: Path, run_benchmark) -> None:
    out = tmp_path / "er.md"
    argv = ["--split", "dev", "--n-per-kind", "1", "--allocators", "random,stride,centre,oracle"]
    run_benchmark("evidence_recall.py", *argv, "--kinds", "receipt,table", "--out", str(out))
    text = out.read_text()
    assert "| oracle | 1.000 | 1.000 | 1.000 |" in text and "receipt" in text
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["summary"]["oracle"]["22.2%"]["overall"]["recall"] == 1.0
    assert len(data["samples"]) == 2


def test_every_kind_has_a_docvqa_category_and_structural_kinds_ask_structure() -> None:
    from arr_coc.reading.layout.structural_query import parse

    assert set(docgen.KINDS) | {docgen.REAL_SCAN_KIND} <= set(docgen.CATEGORIES)
    assert {docgen.CATEGORIES[k] for k in docgen.KINDS} == {
        "form",
        "table/list",
        "figure/chart",
        "running text",
        "layout",
        "photo",
    }
    for split in docgen.SPLITS:
        for kind in ("page_layout", "running_text", "line_chart"):
            for i in range(3):
                s = docgen.make_sample(split, kind, i)
                assert s.category == docgen.CATEGORIES[kind]
                if split == "dev" and "code" not in s.query.lower():  # the parser is tuned on dev wordings only
                    assert parse(s.query).rule is not None, s.query


def test_structural_answer_boxes_hold_the_answer_text() -> None:
    """The answer box of a structural question is where the answer text was drawn (recorded canvas item)."""
    for split in docgen.SPLITS:
        for kind in ("page_layout", "running_text", "line_chart"):
            for i in range(4):
                built = docgen.BUILDERS[kind](random.Random(f"box|{split}|{kind}|{i}"), split, i % 3 == 1)
                assert (built.answer, built.box) in built.canvas.items, (split, kind, i, built.query)


def test_test_split_structural_wordings_differ_from_dev() -> None:
    for table in (docgen.ARTICLE_QUESTIONS, docgen.LINE_QUESTIONS):
        for kind, by_split in table.items():
            assert not set(by_split["dev"]) & set(by_split["test"]), kind
    for part in ("noun", "headings", "titles", "templates"):
        assert not set(docgen.PROSE["dev"][part]) & set(docgen.PROSE["test"][part]), part


def test_second_reader_helpers() -> None:
    img = Image.new("RGB", (40, 20), (0, 0, 0))
    out = np.asarray(er.mask_dropped(img, [0, 3], rows=2, cols=4))  # 10 px cells; keep (0,0) and (0,3)
    assert (out[:10, :10] == 0).all() and (out[:10, 30:] == 0).all()
    assert (out[:10, 10:30] == 255).all() and (out[10:] == 255).all()
    assert er.reader_region((12, 2, 18, 8), 40, 20, 2, 4) == (2, 0, 28, 18)
    assert er.answer_found("Total: $1,234.50 due", "$1,234.50")
    assert er.answer_found("x = np.zeros_like( coins)", "np.zeros_like(coins)")
    assert not er.answer_found("1,234.5", "1,234.50") and not er.answer_found("anything", "")


@pytest.mark.skipif(__import__("shutil").which("tesseract") is None, reason="tesseract-ocr not installed")
def test_tesseract_reads_a_word_and_not_a_blank() -> None:
    font = docgen._font(docgen.font_files("dev")[0] if docgen.font_files("dev") else "", 32)
    img = Image.new("RGB", (300, 60), "white")
    ImageDraw.Draw(img).text((10, 10), "Harbour 4711", font=font, fill="black")
    assert er.answer_found(er.tesseract_text(img), "4711")
    assert not er.answer_found(er.tesseract_text(er.mask_dropped(img, [0], 6, 30)), "4711")
