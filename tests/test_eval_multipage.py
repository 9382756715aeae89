"""eval's multi-page tasks (arr_coc.evaluation.multipage): local MP-DocVQA / SlideVQA copies, docgen pages, the
document decision against the even split."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from arr_coc.evaluation.datasets import BadSample
from arr_coc.evaluation.multipage import docgen_pages, open_pages, run_pages_eval, score_sample


def test_docgen_pages_put_the_answer_on_one_page():
    samples = docgen_pages(3, n_pages=3)
    assert [s.answer_page for s in samples] == [0, 1, 2]
    for s in samples:
        assert len(s.pages) == 3 and s.answer_box is not None
        x0, y0, x1, y1 = s.answer_box
        w, h = s.pages[s.answer_page].size
        assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
    assert [s.id for s in docgen_pages(3, n_pages=3)] == [s.id for s in samples]  # deterministic


def test_local_copies_in_the_datasets_own_fields(tmp_path):
    (tmp_path / "images" / "deck").mkdir(parents=True)
    for name in ["a", "b", "deck/slide_2", "deck/slide_10", "deck/slide_1"]:
        Image.new("RGB", (64, 64), "white").save(tmp_path / "images" / f"{name}.jpg")
    mp = tmp_path / "mp.jsonl"
    mp.write_text(
        json.dumps({"questionId": 7, "question": "q?", "page_ids": ["a", "b"], "answers": ["x"], "answer_page_idx": 1})
        + "\n{broken\n"
        + json.dumps({"questionId": 8, "question": "q?", "page_ids": ["a"], "answers": ["x"], "answer_page_idx": 3})
        + "\n"
    )
    good, broken, outside = open_pages("mpdocvqa", mp)
    assert good.id == "7" and good.answer_page == 1 and good.pages[1].endswith("images/b.jpg")
    assert isinstance(broken, BadSample) and isinstance(outside, BadSample) and "answer page 4" in outside.error
    sv = tmp_path / "sv.jsonl"
    sv.write_text(json.dumps({"qa_id": 3, "question": "q?", "answer": "y", "evidence_pages": [2], "deck_name": "deck"}))
    (s,) = open_pages("slidevqa", sv)
    assert s.answer_page == 1 and [p.split("/")[-1] for p in s.pages] == ["slide_1.jpg", "slide_2.jpg", "slide_10.jpg"]
    gen = tmp_path / "g.jsonl"
    gen.write_text(json.dumps({"id": "g", "question": "q?", "images": ["images/a.jpg"], "answer_page": 0,
                               "answers": "z"}))  # fmt: skip
    assert open_pages("pages", gen)[0].answers == ["z"]


def test_the_document_decision_against_the_even_split_texture():
    s = docgen_pages(1, n_pages=2)[0]
    records = score_sample(s, [0.02, 64], mode="texture")
    assert [(r["allocator"], r["budget"]) for r in records] == [("document", 0.02), ("even", 0.02),
                                                                 ("document", 64), ("even", 64)]  # fmt: skip
    for r in records:
        assert 0 <= r["answer_share"] <= 1 and 0 <= r["recall"] <= 1
    assert records[2]["tokens"] == records[3]["tokens"] == 64  # one budget for the document, both allocators


def test_text_mode_sends_the_budget_to_the_answer_page():
    from arr_coc.realizing import ocr_available

    if not ocr_available():
        pytest.skip("the [ocr] extra is not installed")
    records, table = run_pages_eval("docgen-pages", budgets=(0.02,), limit=2, n_pages=2)
    assert "| document | 0.02 | 2 |" in table and "| even | 0.02 | 2 |" in table
    doc = [r for r in records if r["allocator"] == "document"]
    even = [r for r in records if r["allocator"] == "even"]
    assert sum(r["answer_share"] for r in doc) >= sum(r["answer_share"] for r in even)


def test_cli_eval_multipage_task_needs_no_model(tmp_path, capsys):
    from arr_coc.cli import main
    from arr_coc.realizing import ocr_available

    assert main(["eval", "--task", "docgen", "--out", str(tmp_path / "x")]) == 2  # a single-page task needs --model
    assert "needs --model" in capsys.readouterr().err
    if not ocr_available():
        pytest.skip("the [ocr] extra is not installed")
    out = tmp_path / "pages"
    assert main(["eval", "--task", "docgen-pages", "--limit", "1", "--budgets", "64", "--out", str(out)]) == 0
    lines = (out / "pages.jsonl").read_text().splitlines()
    assert [json.loads(x)["allocator"] for x in lines] == ["document", "even"]
    assert "| document | 64 | 1 |" in (out / "results.md").read_text()
