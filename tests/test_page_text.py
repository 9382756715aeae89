"""A PDF page's text layer as the text path's boxes (``arr_coc.page_text``): exact words, no OCR."""

from __future__ import annotations

import pytest
from PIL import Image

from arr_coc.page_text import LayerReader


def test_layer_reader_scales_the_lines_to_the_picture():
    reader = LayerReader((("Amount due: 12", (0.1, 0.2, 0.5, 0.25)),))
    boxes = reader.read(Image.new("RGB", (400, 200)))
    assert [(b.text, b.box) for b in boxes] == [("Amount due: 12", (40.0, 40.0, 200.0, 50.0))]
    import numpy as np

    boxes = reader.read(np.zeros((100, 300, 3), dtype=np.uint8))  # an (H, W, 3) array: the same fractions
    assert boxes[0].box == pytest.approx((30.0, 20.0, 150.0, 25.0))


def test_layer_reader_without_lines_asks_its_fallback():
    class Fallback:
        def read(self, picture):
            return ["ocr"]

    assert LayerReader((), Fallback()).read(Image.new("RGB", (10, 10))) == ["ocr"]


@pytest.fixture
def report(tmp_path):
    from pdf_files import make_pdf

    pytest.importorskip("pypdfium2", reason="the [pdf] extra (pypdfium2) is not installed")
    pages = [[f"Chapter {i}", "General remarks on the weather", "and the seasons"] for i in range(3)]
    pages[1] = ["INVOICE", "Invoice number: 4711", "Amount due: 1,234.56 EUR"]
    path = tmp_path / "report.pdf"
    path.write_bytes(make_pdf(pages))
    return path


def test_pdf_pages_carry_their_text_layer_as_boxes(report):
    from arr_coc.documents import load_document
    from arr_coc.page_text import text_lines

    doc = load_document(str(report))
    texts = [t for t, _ in doc[1].lines]
    assert texts == ["INVOICE", "Invoice number: 4711", "Amount due: 1,234.56 EUR"]
    tops = [b[1] for _, b in doc[1].lines]
    assert tops == sorted(tops) and all(0 <= v <= 1 for _, b in doc[1].lines for v in b)
    x0, y0, x1, y1 = doc[1].lines[0][1]  # "INVOICE" at 72 pt from the left and the top of a 612 x 792 page
    assert x0 == pytest.approx(72 / 612, abs=0.01) and y1 == pytest.approx(72 / 792, abs=0.01)
    assert y0 < y1 and x1 > x0
    assert text_lines(_Empty(), 612, 792) == ()  # no text: () (the page is OCR-read)


class _Empty:
    def count_rects(self):
        return 0


def test_text_layer_replaces_the_ocr_of_a_pdf_page(report):
    from arr_coc.pages import allocate_pages
    from arr_coc.realizing import ocr_available

    if not ocr_available():
        pytest.skip("the [ocr] extra is not installed")

    class NoOcr:
        def read(self, picture):
            raise AssertionError("a PDF page with a text layer is not OCR-read")

    doc = allocate_pages(str(report), "What is the amount due?", budget=20, mode="text", reader=NoOcr())
    assert doc.specific and [p.budget for p in doc.pages] == [0, 20, 0]
    boxes = doc.pages[1].allocation.text_boxes
    assert [b.text for b in boxes] == ["INVOICE", "Invoice number: 4711", "Amount due: 1,234.56 EUR"]
    with pytest.raises(AssertionError, match="not OCR-read"):
        allocate_pages(str(report), "What is the amount due?", budget=20, mode="text", reader=NoOcr(), text_layer=False)


def test_loaded_pages_are_read_ahead_for_the_next_question(report):
    from arr_coc.documents import load_document
    from arr_coc.pages import allocate_pages
    from arr_coc.realizing import ocr_available

    if not ocr_available():
        pytest.skip("the [ocr] extra is not installed")
    pages = load_document(str(report))
    doc = allocate_pages(pages, "What is the amount due?", budget=20, mode="text")
    assert [p.read for p in doc.pages] == ["skipped", "text", "skipped"]
    assert doc.wait(timeout=120)  # the read-ahead rendered the two pages the question skipped
    assert all(p.rendered for p in pages)
    again = allocate_pages(pages, "What is the invoice number?", budget=20, mode="text")
    assert [p.budget for p in again.pages] == [0, 20, 0]  # the read-ahead changes no decision
    once = allocate_pages(str(report), "What is the amount due?", budget=20, mode="text")
    assert once.ahead is None  # a PDF the call opened (and closed) is not read ahead
