"""Text read out of PDFs (``benchmarks/realdocs_extra.py`` builds questions from it): what counts as decoded text.

pdfplumber is no extra's requirement (only that benchmark reads PDFs); ``.ci/run`` installs it, so the reading test
runs in CI, and skips elsewhere with the install line.
"""

from __future__ import annotations

import importlib.util

import pytest

from arr_coc.training.data import decoded_text

NO_PDFPLUMBER = "needs pdfplumber (no extra holds it: pip install pdfplumber; .ci/run installs it)"


def test_undecoded_glyphs_are_not_text() -> None:
    assert decoded_text("How does the text continue after")
    assert not decoded_text("(cid:9)(cid:15)(cid:8) (cid:13)")
    assert not decoded_text("블록체인에(cid:52970)")


def _one_page_pdf(text: str) -> bytes:
    """A valid one-page PDF that prints ``text`` in Helvetica (a standard font: every glyph maps to Unicode)."""
    stream = f"BT /F1 24 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


@pytest.mark.skipif(importlib.util.find_spec("pdfplumber") is None, reason=NO_PDFPLUMBER)
def test_pdfplumber_text_of_a_standard_font_is_decoded(tmp_path) -> None:
    import pdfplumber

    path = tmp_path / "page.pdf"
    path.write_bytes(_one_page_pdf("Amount due 18.00"))
    with pdfplumber.open(path) as pdf:
        words = [w["text"] for w in pdf.pages[0].extract_words()]
    assert words == ["Amount", "due", "18.00"]
    assert all(decoded_text(w) for w in words)
