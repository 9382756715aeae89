"""Documents as input (arr_coc.documents): PDFs rendered with pypdfium2, page ranges, bounds, bad files."""

from __future__ import annotations

import pytest
from pdf_files import make_pdf  # noqa: E402
from PIL import Image

from arr_coc.documents import (
    Page,
    document_fields,
    is_pdf,
    load_document,
    load_pdf,
    parse_page_range,
    pdf_page_count,
)

pdfium = pytest.importorskip("pypdfium2", reason="the [pdf] extra (pypdfium2) is not installed")


def test_page_ranges():
    assert parse_page_range("3-5,8", 10) == [2, 3, 4, 7]
    assert parse_page_range("9-", 10) == [8, 9]
    assert parse_page_range(None, 3) == [0, 1, 2]
    assert parse_page_range("2,2,1", 3) == [1, 0]
    with pytest.raises(ValueError, match=r"outside the document: it has 8 pages \(1-8\)"):
        parse_page_range("3-10", 8)
    for bad in ("a-b", "0-2", "5-3", "1;2"):
        with pytest.raises(ValueError, match="page range"):
            parse_page_range(bad, 8)


def test_pdf_pages_rendered_in_order_with_their_text(tmp_path):
    path = tmp_path / "report.pdf"
    path.write_bytes(make_pdf([["Introduction"], ["Invoice", "Total due 42.00"], ["Appendix"]]))
    assert is_pdf(path) and is_pdf(path.read_bytes()) and pdf_page_count(path) == 3
    pages = load_pdf(path, target_pixels=200_000)
    assert not any(p.rendered for p in pages)  # rendered when first used
    assert [p.name for p in pages] == [1, 2, 3] and {p.label for p in pages} == {"page"}
    assert "Total due 42.00" in pages[1].text and "Appendix" in pages[2].text
    w, h = pages[0].original
    assert pages[0].image.size == (w, h) and abs(w * h - 200_000) < 5_000  # rendered near the asked area
    assert 612 / 792 == pytest.approx(w / h, rel=0.01)
    assert [p.name for p in load_document(str(path), pages="2-3", target_pixels=100_000)] == [2, 3]


def test_image_only_pdf_from_pil_has_no_text_layer(tmp_path):
    path = tmp_path / "scan.pdf"
    Image.new("RGB", (300, 400), "white").save(path, save_all=True, append_images=[Image.new("RGB", (300, 400))])
    pages = load_document(path, target_pixels=50_000)
    assert len(pages) == 2 and all(p.text == "" for p in pages)


def test_bad_pdfs_get_one_clear_line(tmp_path):
    enc = tmp_path / "locked.pdf"
    enc.write_bytes(make_pdf([["secret"]], encrypt=True))
    with pytest.raises(ValueError, match="is encrypted") as err:
        load_pdf(enc)
    assert "\n" not in str(err.value)
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(make_pdf([["a"], ["b"]])[:150])
    with pytest.raises(ValueError, match="damaged") as err:
        load_pdf(broken)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="does not exist"):
        load_pdf(tmp_path / "missing.pdf")


def test_bounds_are_checked_before_rendering(tmp_path, monkeypatch):
    def no_render(*args, **kwargs):
        raise AssertionError("rendered a page of a document above a bound")

    monkeypatch.setattr(pdfium.PdfPage, "render", no_render)
    big = tmp_path / "big.pdf"
    big.write_bytes(make_pdf([[f"page {i}"] for i in range(2000)]))
    with pytest.raises(ValueError, match=r"has 2,000 pages, above the limit of 200 pages") as err:
        load_pdf(big)
    assert "--pages" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ValueError, match="megapixels over its pages"):
        load_pdf(big, pages="1-100", max_document_pixels=10_000_000)
    with pytest.raises(ValueError, match="outside the document"):
        load_pdf(big, pages="1990-2010")


def test_a_list_of_images_and_loaded_pages(tmp_path):
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"p{i}.png")
        Image.new("RGB", (100 + i, 80), "white").save(paths[-1])
    pages = load_document([str(p) for p in paths], pages="2-3")
    assert [p.name for p in pages] == [str(paths[1]), str(paths[2])] and pages[0].label == "image"
    assert pages[1].original == (102, 80) and pages[0].text is None
    assert load_document(pages) is not None and isinstance(load_document(pages)[0], Page)
    with pytest.raises(ValueError, match="at least one page"):
        load_document([])


def test_document_fields_of_a_batch_line(tmp_path):
    assert document_fields({"pdf": "a.pdf", "pages": "1-8"}, tmp_path) == (str(tmp_path / "a.pdf"), "1-8")
    assert document_fields({"images": ["x.png", "/abs/y.png"]}, tmp_path) == (
        [str(tmp_path / "x.png"), "/abs/y.png"],
        None,
    )
    for bad in ({"pdf": "a.pdf", "images": ["b.png"]}, {"images": []}, {"pdf": 3}, {"pdf": "a.pdf", "pages": [1]}):
        with pytest.raises(ValueError):
            document_fields(bad, tmp_path)


def test_close_document_keeps_rendered_pages(tmp_path):
    from arr_coc.documents import close_document

    pages = load_pdf(make_pdf([["a"], ["b"]]), target_pixels=50_000)
    first = pages[0].image
    close_document(pages)
    assert pages[0].image is first
    with pytest.raises(ValueError, match="never rendered and its PDF is closed"):
        pages[1].image  # noqa: B018
