"""The demo's document section (arr_coc.demo_pages), in-process: a strip of pages with their share of one budget."""

from __future__ import annotations

import pytest

gr = pytest.importorskip("gradio")

from PIL import Image, ImageDraw  # noqa: E402

from arr_coc import demo, demo_pages  # noqa: E402
from arr_coc.pages import allocate_pages  # noqa: E402


def _page_files(tmp_path, n=3):
    paths = []
    for i in range(n):
        img = Image.new("RGB", (420, 560), "white")
        ImageDraw.Draw(img).rectangle((40 + 30 * i, 60, 200 + 30 * i, 140), fill="black")
        path = tmp_path / f"p{i + 1}.png"
        img.save(path)
        paths.append(path)
    return paths


def test_strip_of_pages_matches_the_cli_json(tmp_path):
    paths = _page_files(tmp_path)
    uploads = [{"path": str(p), "orig_name": f"scan {i + 1}.png"} for i, p in enumerate(paths)]
    strip, record, summary = demo_pages.allocate_document(uploads, "", "0.02", "qwen2.5-vl", "texture")
    assert len(strip) == 3 and all(isinstance(img, Image.Image) for img, _ in strip)
    assert [p["image"] for p in record["pages"]] == ["scan 1.png", "scan 2.png", "scan 3.png"]  # not server paths
    assert record["budget"] == sum(p["budget"] for p in record["pages"]) > 0
    for (_, caption), page in zip(strip, record["pages"], strict=True):
        share = round(100 * page["budget"] / record["budget"])
        assert caption.startswith(f"scan {record['pages'].index(page) + 1}.png: {page['budget']} tokens ({share}%")
    assert f"→ {record['budget']}** over 3 pages" in summary and summary.count("\n| ") == 4  # header + 3 pages
    api = allocate_pages(paths, "", 0.02, mode="texture").to_json()  # the Python API decides the same
    assert [p["kept"] for p in api["pages"]] == [p["kept"] for p in record["pages"]]


def test_a_pdf_page_range_and_bad_input(tmp_path):
    pytest.importorskip("pypdfium2")
    paths = _page_files(tmp_path, 2)
    pdf = tmp_path / "doc.pdf"
    Image.open(paths[0]).save(pdf, save_all=True, append_images=[Image.open(paths[1])])
    strip, record, _ = demo_pages.allocate_document([str(pdf)], "", "16", "qwen2.5-vl", "texture", pages="2")
    assert [p["page"] for p in record["pages"]] == [2] and record["budget"] == 16 and len(strip) == 1
    for files, words in [(None, "Upload a PDF"), ([str(pdf), str(paths[0])], "one PDF"), ([str(pdf)], "outside")]:
        with pytest.raises(gr.Error) as err:
            demo_pages.allocate_document(files, "", "16", "qwen2.5-vl", "texture", pages="5" if files else "")
        assert words in err.value.message and str(tmp_path) not in err.value.message


def test_the_app_has_the_document_endpoint():
    blocks = demo.build_app(examples=[])
    names = [d.get("api_name") for d in blocks.config["dependencies"]]
    assert "allocate" in names and "allocate_document" in names
