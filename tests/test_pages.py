"""One budget over a document's pages (arr_coc.pages): the share, the first look, the JSON, the CLI and batch."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

import arr_coc
from arr_coc.cli import main
from arr_coc.pages import PagesConfig, allocate_pages, first_look, share


def test_share_spends_one_budget_where_the_best_page_is():
    scores = [torch.rand(50, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    keeps = share(scores, [0.5, 1.0, 0.55], 20, [0, 0, 0])
    assert [len(k) for k in keeps] == [0, 20, 0]
    assert keeps[1].tolist() == torch.topk(scores[1], 20).indices.sort().values.tolist()
    tied = share(scores, [1.0, 1.0, 1.0], 30, [0, 0, 0])  # an ambiguous question: the pages share alike
    assert sum(len(k) for k in tied) == 30 and all(len(k) > 0 for k in tied)
    floored = share(scores, [0.5, 1.0, 0.55], 20, [3, 3, 3])
    assert [len(k) for k in floored] == [3, 14, 3]
    assert floored[0].tolist() == torch.topk(scores[0], 3).indices.sort().values.tolist()
    skipped = share([scores[0], torch.zeros(0)], [1.0, 0.0], 10, [0, 0])
    assert len(skipped[0]) == 10 and len(skipped[1]) == 0


def test_share_keeps_words_whole_across_pages():
    s = [torch.tensor([0.5, 0.5, 0.5, 0.5]), torch.tensor([0.9, 0.8, 0.0, 0.0])]
    keeps = share(s, [1.0, 1.0], 2, [0, 0], units=[[], [np.array([0, 3])]])  # page 2's word is cells 0 and 3
    assert keeps[1].tolist() == [0, 3] and keeps[0].tolist() == []


def test_first_look_reads_the_pages_that_share_the_question_rarer_words():
    texts = ["Weather report. Total rain.", "Invoice. Total amount due 42", "Weather again. Total sun.", ""]
    assert first_look(texts, "What is the amount due?") == [1, 3]  # page 4 has no text layer: it must be read
    assert first_look(texts[:3], "What is the colour of the sky?") == [0, 1, 2]  # nothing matches: read them all
    assert first_look(texts[:3], "total", PagesConfig(look_max=1)) == [0]


def _pages(n: int) -> list[Image.Image]:
    out = []
    for i in range(n):
        img = Image.new("RGB", (420, 560), "white")
        ImageDraw.Draw(img).rectangle((40 + 20 * i, 60, 200 + 20 * i, 120), fill="black")
        out.append(img)
    return out


def test_texture_pages_every_page_in_order_one_budget():
    doc = allocate_pages(_pages(3), "", budget=0.01, mode="texture")
    n = sum(p.n_tokens for p in doc.pages)
    assert doc.budget == round(0.01 * n) == doc.requested and not doc.specific
    j = doc.to_json(id="d")
    assert list(j)[:4] == ["id", "query", "budget", "pages"] and len(j["pages"]) == 3
    assert [p["image"] for p in j["pages"]] == ["#1", "#2", "#3"]
    for p in j["pages"]:
        assert {"grid", "resized", "original", "kept", "budget"} <= set(p) and p["budget"] == len(p["kept"])
    one = allocate_pages(_pages(3), "", budget=2, mode="texture")
    assert [p.budget for p in one.pages] == [1, 1, 0] and one.pages[2].to_json()["kept"] == []


def test_one_page_keeps_what_allocate_keeps():
    page = _pages(1)[0]
    for budget in (7, 0.05):
        doc = allocate_pages([page], "What is in the top left corner?", budget=budget, mode="texture")
        alone = arr_coc.allocate(page, "What is in the top left corner?", budget, mode="texture")
        assert doc.pages[0].keep.tolist() == alone.keep.tolist()


def test_bad_floor_and_budget_are_refused_before_any_work():
    with pytest.raises(ValueError, match="floor"):
        allocate_pages(["/nonexistent.png"], "q", floor=-1)
    with pytest.raises(ValueError, match="budget"):
        allocate_pages(["/nonexistent.png"], "q", budget=0)


@pytest.fixture
def report(tmp_path):
    from pdf_files import make_pdf

    pytest.importorskip("pypdfium2", reason="the [pdf] extra (pypdfium2) is not installed")
    pages = [[f"Chapter {i}", "General remarks on the weather", "and the seasons"] for i in range(5)]
    pages[3] = ["INVOICE", "Invoice number: 4711", "Amount due: 1,234.56 EUR"]
    path = tmp_path / "report.pdf"
    path.write_bytes(make_pdf(pages))
    return path


def test_text_pages_send_the_budget_to_the_answer_page(report):
    from arr_coc.realizing import ocr_available

    if not ocr_available():
        pytest.skip("the [ocr] extra is not installed")
    doc = allocate_pages(str(report), "What is the amount due?", budget=40, mode="text")
    assert doc.specific and [p.budget for p in doc.pages] == [0, 0, 0, 40, 0]
    assert [p.read for p in doc.pages] == ["skipped"] * 3 + ["text", "skipped"]  # the first look read one page
    assert [p.page.rendered for p in doc.pages] == [False] * 3 + [True, False]  # and rendered one
    again = allocate_pages(str(report), "What is this document about?", budget=40, mode="text")
    assert not again.specific and [p.budget for p in again.pages] == [8] * 5


def test_cli_pdf_json_and_pages(report, tmp_path, capsys):
    out = tmp_path / "a.json"
    args = ["allocate", str(report), "--query", "", "--budget", "10", "--mode", "texture", "--pages", "2-4"]
    assert main([*args, "--json", str(out)]) == 0
    j = json.loads(out.read_text())
    assert j["budget"] == 10 and [p["page"] for p in j["pages"]] == [2, 3, 4]
    assert main(["allocate", str(report), "--query", "x", "--pages", "4-9", "--mode", "texture"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "outside the document: it has 5 pages" in err[0]


def test_batch_goes_on_past_a_bad_document(report, tmp_path):
    Image.new("RGB", (300, 200), "white").save(tmp_path / "p.png")
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.4 not really")
    lines = [
        {"id": "a", "pdf": report.name, "pages": "1-3", "query": ""},
        {"id": "b", "pdf": "bad.pdf", "query": "x"},
        {"id": "c", "images": ["p.png", "p.png"], "query": "", "budget": 4},
        {"id": "d", "pdf": report.name, "pages": "7-8", "query": "x"},
    ]
    batch = tmp_path / "in.jsonl"
    batch.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["allocate", "--batch", str(batch), "--out", str(out), "--mode", "texture", "--budget", "6"]) == 1
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in recs] == ["a", "b", "c", "d"]
    assert recs[0]["budget"] == 6 and [p["page"] for p in recs[0]["pages"]] == [1, 2, 3]
    assert "damaged" in recs[1]["error"] and "outside the document" in recs[3]["error"]
    assert recs[2]["budget"] == 4 and len(recs[2]["pages"]) == 2


def test_floors_with_words_still_spend_exactly_the_budget():
    g = torch.Generator().manual_seed(3)
    scores = [torch.rand(30, generator=g) for _ in range(4)]
    units = [[np.arange(j, j + 3) for j in range(0, 30, 3)] for _ in range(4)]  # every cell in a 3-cell word
    keeps = share(scores, [1.0, 0.9, 0.2, 0.2], 25, [2, 2, 2, 2], units)
    assert sum(len(k) for k in keeps) == 25 and all(len(k) >= 2 for k in keeps)


def test_select_at_another_budget_equals_deciding_again():
    pages = _pages(3)
    doc = allocate_pages(pages, "", budget=0.01, mode="texture")
    again = allocate_pages(pages, "", budget=0.03, mode="texture")
    assert [k.tolist() for k in doc.select(0.03)] == [p.keep.tolist() for p in again.pages]


def test_a_page_stands_out_by_its_match_or_a_margin_over_the_median():
    from arr_coc.pages import stands_out

    assert stands_out({0: 0.5, 1: 0.85, 2: 0.5})  # a strong match
    assert stands_out({0: 0.7, 1: 0.3, 2: 0.3, 3: 0.7, 4: 0.25})  # a weak match few pages share
    assert not stands_out({0: 0.55, 1: 0.5, 2: 0.52})  # nothing matches: an even split
    assert not stands_out({})


def test_printed_keys_in_capitals_are_content_words():
    from arr_coc.pages import _words

    assert _words("What is written next to TO?") == {"to"}
    assert _words("What is this document about?") == set()
    assert _words("How much must be paid?") == {"much", "must", "paid"}


def test_adaptive_and_floor_options():
    pages = _pages(3)
    doc = allocate_pages(pages, "", budget="adaptive", mode="texture")
    assert 1 <= doc.budget == doc.requested <= sum(p.n_tokens for p in doc.pages)
    floored = allocate_pages(pages, "", budget=30, mode="texture", floor=4)
    assert all(p.budget >= 4 for p in floored.pages) and floored.budget == 30
