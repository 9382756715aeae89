"""Documents: a PDF or a list of page images -> the pages, in order, as RGB images (the input of ``allocate_pages``).

    report.pdf ──► pypdfium2 (page sizes read first: bounds checked) ──► render each chosen page ──► Page
    [page images] ─► arr_coc.io.load_image (per-page bomb guard) ──────────────────────────────────► Page

A PDF is rendered with **pypdfium2** (the ``[pdf]`` extra): Google's PDFium, the renderer of Chrome, in a wheel with
no system dependency for every platform, kept up to date (monthly releases, Apache-2.0 / BSD), fast (20-60 ms a page
here), and it reads the text layer too (the first look of ``arr_coc.pages``). pdf2image needs poppler installed on
the system, PyMuPDF is AGPL, pypdf does not render.

Bounds, checked BEFORE any page is rendered (page sizes come from the PDF's page boxes): at most ``MAX_PAGES`` (200)
pages a document (a 2,000-page PDF is refused with one line that says how to pick a range) and at most
``MAX_DOCUMENT_PIXELS`` (400 megapixels) rendered over all its pages. Each page is rendered at the resolution the
model will see, twice over (``target_pixels``; at most 300 dpi), not at the PDF's 72-dpi points.

Every refusal is a ``ValueError`` of one line: an encrypted PDF, a damaged file, a page range outside the document, a
document above a bound.

Example:
    >>> parse_page_range("3-5,8", 10)
    [2, 3, 4, 7]
"""

from __future__ import annotations

import functools
import math
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from .io import MAX_PIXELS_IN, ImageLike, load_image_with_size
from .page_text import text_lines

# Most pages one document may have (after --pages): a page is ~1,000 visual tokens, so 200 pages are 200,000 tokens,
# above any Qwen-VL context; the bound keeps a 2,000-page PDF from rendering for minutes into gigabytes.
MAX_PAGES = 200
# Most pixels rendered over all the chosen pages of one document (about 1.2 GB of RGB): 200 pages at ~2 megapixels.
MAX_DOCUMENT_PIXELS = 400_000_000
MAX_DPI = 300  # a page is never rendered finer than this (a scanner's resolution)


_RENDER_LOCK = threading.Lock()  # PDFium is not thread-safe: one page rendered at a time in the process


class _Layer:
    """``Page.lines``: a PDF page's text-layer boxes, read from the open PDF when first asked (``Page.layer``), so a
    20-page document whose first look points to 4 pages reads 4 pages' boxes, not 20 (the first look needs only each
    page's text). () once the PDF is closed if they were never asked for; set directly like a plain field."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, page: Any, owner: type | None = None) -> tuple:
        if page is None:
            return ()  # the field's default
        if page.__dict__.get("layer") is not None:
            with _RENDER_LOCK:
                layer = page.__dict__.get("layer")
                if layer is not None:
                    page.__dict__[self.slot] = layer()
                    page.__dict__["layer"] = None
        return page.__dict__.get(self.slot, ())

    def __set__(self, page: Any, value: tuple) -> None:
        if value is self:  # ``__init__``'s default (``field(default=...)`` passes the descriptor itself)
            page.__dict__.setdefault(self.slot, ())
            return
        page.__dict__[self.slot] = tuple(value)
        page.__dict__["layer"] = None  # a value given: nothing left to read


@dataclass
class Page:
    """One page of a document; a PDF's page is rendered when its pixels are first asked for (:attr:`image`), so a
    question that needs three pages of a 20-page PDF renders three.

    Attributes:
        original: (W, H) of the page as rendered or loaded (the JSON's ``original``; known before rendering).
        label: ``"page"`` (a PDF's page) or ``"image"`` (a page image).
        name: the page's 1-based number in its PDF, or the image's path (``str``; ``"#i"`` for in-memory images).
        text: the PDF's text layer of this page ("" if it has none), or None for a page image.
        pixels: the page, RGB, upright, once loaded or rendered (else None).
        render: makes the pixels of a page not yet rendered.
    """

    original: tuple[int, int]
    label: str
    name: int | str
    text: str | None = None
    pixels: Image.Image | None = field(default=None, repr=False)
    render: Callable[[], Image.Image] | None = field(default=None, repr=False)
    handle: Any = field(default=None, repr=False)  # the open PDF a page not yet rendered renders from
    lines: tuple = field(default=_Layer(), repr=False)  # a PDF page's text layer as boxes (``arr_coc.page_text``)
    layer: Callable[[], tuple] | None = field(default=None, repr=False)  # reads ``lines`` when first asked (PDF)
    sized: dict = field(default_factory=dict, repr=False)  # the page resized to a model's grid, by (W, H)

    @property
    def image(self) -> Image.Image:
        """The page, RGB (rendered now if it was not; thread-safe)."""
        if self.pixels is None:
            with _RENDER_LOCK:
                if self.pixels is None:
                    if self.render is None:
                        raise ValueError(
                            f"page {self.name} was never rendered and its PDF is closed; load the PDF with "
                            "arr_coc.documents.load_document and pass its pages to keep it open"
                        )
                    self.pixels = self.render()
        return self.pixels

    @property
    def rendered(self) -> bool:
        return self.pixels is not None


def close_document(pages: Sequence[Page]) -> None:
    """Close the PDF behind ``pages`` (pages not yet rendered can then no longer render); nothing for images."""
    with _RENDER_LOCK:
        for handle in {id(p.handle): p.handle for p in pages if p.handle is not None}.values():
            handle.close()
        for p in pages:
            if p.pixels is None:
                p.render = None
            p.handle = None
            p.__dict__["layer"] = None  # boxes never asked for stay unread: ``lines`` is () (``text`` is kept)


def is_pdf(source: Any) -> bool:
    """Whether ``source`` is a PDF: a path or bytes starting with ``%PDF-`` (a path ending in .pdf counts too)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source[:5]) == b"%PDF-"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.suffix.lower() == ".pdf":
            return True
        try:
            with open(path, "rb") as f:
                return f.read(5) == b"%PDF-"
        except OSError:
            return False
    return False


def parse_page_range(spec: str | None, n_pages: int) -> list[int]:
    """0-based indices of a 1-based page range such as ``"3-10"``, ``"1,4,7-9"`` or ``"5-"`` (to the end).

    Raises:
        ValueError: a malformed range, or one outside the document's ``n_pages`` pages.
    """
    if spec is None or str(spec).strip() == "":
        return list(range(n_pages))
    out: list[int] = []
    for part in str(spec).replace(" ", "").split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d*))?", part)
        if not m:
            raise ValueError(f"page range {spec!r} is not understood: give pages like 3-10, 1,4,7-9 or 5- (1-based)")
        lo = int(m.group(1))
        hi = lo if m.group(2) is None else (int(m.group(2)) if m.group(2) else n_pages)
        if lo < 1 or hi < lo:
            raise ValueError(f"page range {spec!r} is empty or backwards: pages count from 1, as in 3-10")
        if hi > n_pages:
            raise ValueError(
                f"page range {spec!r} is outside the document: it has {n_pages} page{'s' * (n_pages != 1)} "
                f"(1-{n_pages})"
            )
        out.extend(i for i in range(lo - 1, hi) if i not in out)
    return out


def _check_count(n: int, what: str, max_pages: int) -> None:
    if n > max_pages:
        raise ValueError(
            f"{what} has {n:,} pages, above the limit of {max_pages} pages a document (arr_coc.documents.MAX_PAGES); "
            f'pick at most {max_pages} with --pages (e.g. --pages 1-{max_pages}) or a batch line\'s "pages"'
        )


def _check_pixels(total: int, what: str, limit: int) -> None:
    if total > limit:
        raise ValueError(
            f"{what} would render {total / 1e6:,.0f} megapixels over its pages, above the limit of {limit / 1e6:g} "
            "megapixels a document (arr_coc.documents.MAX_DOCUMENT_PIXELS); pick fewer pages with --pages"
        )


def pdf_page_count(source: str | os.PathLike | bytes) -> int:
    """How many pages a PDF has (nothing rendered); a ``ValueError`` for an encrypted or damaged PDF."""
    pdf = _open_pdf(source)
    try:
        return len(pdf)
    finally:
        pdf.close()


def _open_pdf(source: str | os.PathLike | bytes):
    try:
        import pypdfium2 as pdfium
    except ImportError as err:
        raise ImportError(
            "reading a PDF needs the [pdf] extra (pypdfium2): pip install 'arr-coc-vis[pdf]'; or give page images"
        ) from err
    name = f"PDF {str(source)!r}" if isinstance(source, (str, os.PathLike)) else "the PDF"
    if isinstance(source, (str, os.PathLike)) and not Path(source).is_file():
        raise ValueError(f"{name} does not exist or is not a file")
    try:
        data = bytes(source) if isinstance(source, (bytes, bytearray, memoryview)) else Path(source).read_bytes()
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as err:
        why = str(err)
        if "password" in why.lower():
            raise ValueError(
                f"{name} is encrypted (password-protected); decrypt it first (e.g. qpdf --decrypt)"
            ) from None
        raise ValueError(f"{name} is damaged or not a PDF ({why.rstrip('.')}); repair or re-export it") from None


def load_pdf(
    source: str | os.PathLike | bytes,
    pages: str | None = None,
    target_pixels: int = 2 * 1280 * 28 * 28,
    max_pages: int = MAX_PAGES,
    max_document_pixels: int = MAX_DOCUMENT_PIXELS,
) -> list[Page]:
    """The chosen pages of a PDF, each with its text layer, rendered when first used (:attr:`Page.image`).

    Args:
        source: the PDF's path or bytes.
        pages: a 1-based range (``parse_page_range``), or None for every page.
        target_pixels: render each page at about this many pixels (the model's resize area, twice over; at most
            ``MAX_DPI``, and never above ``arr_coc.io.MAX_PIXELS_IN`` a page).
        max_pages, max_document_pixels: the bounds, checked before anything is rendered.

    Raises:
        ValueError: an encrypted or damaged PDF, a range outside it, a document above a bound (one line each).
    """
    pdf = _open_pdf(source)
    what = f"PDF {str(source)!r}" if isinstance(source, (str, os.PathLike)) else "the PDF"
    try:
        chosen = parse_page_range(pages, len(pdf))
        if not chosen:
            raise ValueError(f"{what} has no pages")
        _check_count(len(chosen), what if pages is None else f"the page range {pages!r} of {what}", max_pages)
        scales, total = [], 0
        for i in chosen:  # the page boxes, in points: the pixel total is known before rendering
            w, h = pdf[i].get_size()
            if not (w > 0 and h > 0):
                raise ValueError(f"page {i + 1} of {what} has an empty page box ({w}x{h} points); the PDF is damaged")
            scale = min(MAX_DPI / 72, (target_pixels / (w * h)) ** 0.5, (MAX_PIXELS_IN / (w * h)) ** 0.5)
            scales.append(scale)
            total += math.ceil(w * scale) * math.ceil(h * scale)
        _check_pixels(total, what, max_document_pixels)
        out = []
        for i, scale in zip(chosen, scales, strict=True):
            page = pdf[i]
            try:
                textpage = page.get_textpage()
                text = textpage.get_text_range()
                w, h = page.get_size()
                textpage.close()
            except Exception as err:  # PDFium's own errors on a broken page  # noqa: BLE001
                raise ValueError(f"page {i + 1} of {what} could not be read ({err}); the PDF may be damaged") from None
            finally:
                page.close()
            size = (math.ceil(w * scale), math.ceil(h * scale))  # what PDFium renders
            render = functools.partial(_render, pdf, i, scale, size, what)
            layer = functools.partial(_layer, pdf, i, what)  # the boxes: read when a question needs the page
            out.append(Page(size, "page", i + 1, text, render=render, handle=pdf, layer=layer))
        return out
    except BaseException:
        pdf.close()
        raise


def _layer(pdf: Any, index: int, what: str) -> tuple:
    """Page ``index``'s text-layer boxes (:func:`~arr_coc.page_text.text_lines`; the caller holds the render lock)."""
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            w, h = page.get_size()
            return text_lines(textpage, w, h)
        finally:
            textpage.close()
    except Exception as err:  # PDFium's own errors on a broken page  # noqa: BLE001
        raise ValueError(f"page {index + 1} of {what} could not be read ({err}); the PDF may be damaged") from None
    finally:
        page.close()


def _render(pdf: Any, index: int, scale: float, size: tuple[int, int], what: str) -> Image.Image:
    """Page ``index`` of an open PDF at ``scale``, RGB (the caller holds the render lock)."""
    page = pdf[index]
    try:
        image = page.render(scale=scale).to_pil().convert("RGB")
    except Exception as err:  # PDFium's own errors on a broken page stream  # noqa: BLE001
        raise ValueError(f"page {index + 1} of {what} could not be rendered ({err}); the PDF may be damaged") from None
    finally:
        page.close()
    if image.size != size:
        image = image.resize(size)  # never expected: PDFium renders ceil(points * scale)
    return image


def load_images(
    images: Sequence[ImageLike],
    target_pixels: int | None = None,
    max_pages: int = MAX_PAGES,
    max_pixels_in: int = MAX_PIXELS_IN,
) -> list[Page]:
    """Load a list of page images (paths, bytes, PIL images or arrays; ``arr_coc.io.load_image`` rules each)."""
    images = list(images)
    if not images:
        raise ValueError("a document needs at least one page image")
    _check_count(len(images), "the list of page images", max_pages)
    out = []
    for i, source in enumerate(images):
        img, size = load_image_with_size(source, max_pixels_in, target_pixels)
        name = str(source) if isinstance(source, (str, os.PathLike)) else f"#{i + 1}"
        out.append(Page(size, "image", name, None, pixels=img))
    return out


def load_document(
    source: str | os.PathLike | bytes | Sequence[ImageLike] | Sequence[Page],
    pages: str | None = None,
    target_pixels: int = 2 * 1280 * 28 * 28,
    max_pages: int = MAX_PAGES,
    max_document_pixels: int = MAX_DOCUMENT_PIXELS,
) -> list[Page]:
    """The pages of ``source``: a PDF (path or bytes), a list of page images, or pages already loaded.

    ``pages`` (a 1-based range) picks pages of a PDF or of a list alike.
    """
    if isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview)):
        if is_pdf(source):
            return load_pdf(source, pages, target_pixels, max_pages, max_document_pixels)
        source = [source]  # one image: a one-page document
    items = list(source)
    if pages is not None:
        items = [items[i] for i in parse_page_range(pages, len(items))]
    if items and all(isinstance(p, Page) for p in items):
        _check_count(len(items), "the document", max_pages)
        return items  # type: ignore[return-value]
    return load_images(items, target_pixels, max_pages)  # type: ignore[arg-type]


__all__ = [
    "DOCUMENT_FIELDS",
    "MAX_DOCUMENT_PIXELS",
    "MAX_PAGES",
    "Page",
    "close_document",
    "document_fields",
    "is_pdf",
    "load_document",
    "load_images",
    "load_pdf",
    "parse_page_range",
    "pdf_page_count",
]


DOCUMENT_FIELDS = (
    '{"id", "pdf": path[, "pages": "1-8"], "query"[, "budget"]} or {"id", "images": [path, ...], "query"[, "budget"]}'
)


def document_fields(item: dict, root: Path) -> tuple[str | list[str], str | None]:
    """``(source, pages)`` of a batch line that names a document (``"pdf"`` or ``"images"``), paths made relative
    to the batch file's folder ``root``; a ``ValueError`` naming the field at fault."""
    if ("pdf" in item) == ("images" in item):
        raise ValueError(f'a document line has "pdf" or "images", not both; each line is {DOCUMENT_FIELDS}')
    pages = item.get("pages")
    if pages is not None and not isinstance(pages, (str, int)):
        raise ValueError(f'"pages" must be a range string such as "1-8", got {pages!r}')
    pages = None if pages is None else str(pages)

    def path(value: object, what: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{what} must be a non-empty path string, got {value!r}")
        p = Path(value)
        return str(p if p.is_absolute() else root / p)

    if "pdf" in item:
        return path(item["pdf"], '"pdf"'), pages
    images = item["images"]
    if not isinstance(images, list) or not images:
        raise ValueError(f'"images" must be a non-empty list of paths, got {images!r}')
    return [path(v, '"images" entry') for v in images], pages
