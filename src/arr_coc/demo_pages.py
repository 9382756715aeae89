"""The demo's document section: a PDF (or several page images) as a strip of pages, each with its heatmap and its
share of the document's one budget (``arr_coc.pages.allocate_pages``).

    upload (one PDF | page images) ──► arr_coc.documents.load_document ──► allocate_pages (one budget)
        ──► per page: heatmap of its scores, kept cells outlined, caption "page 3: 41 tokens (64% of the budget)"
        ──► gallery (the strip), the JSON of ``arr-coc allocate report.pdf --json``, a summary table

A page the first look did not read (``read == "skipped"``) is shown without a heatmap: it keeps nothing. The handler
is a plain function (testable without a server, tests/test_demo_pages.py); :func:`document_section` adds its
controls to the demo's Blocks (``arr_coc.demo.build_app``).

Example:
    >>> from PIL import Image
    >>> strip, record, summary = allocate_document(
    ...     [Image.new("RGB", (280, 280), "white")] * 2, "", "8", "qwen2.5-vl", "texture")
    >>> [p["budget"] for p in record["pages"]], len(strip)
    ([4, 4], 2)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .attending import parse_budget
from .documents import close_document, is_pdf, load_document
from .heatmap import render_heatmap
from .pages import DocumentAllocation, PageResult, allocate_pages

STRIP_SIDE = 700  # each page's picture in the strip: longer side at most this many pixels


def _error(message: str) -> Exception:
    try:
        import gradio as gr

        return gr.Error(message, duration=None, print_exception=False)
    except ImportError:  # the handler is usable without gradio (doctest)
        return ValueError(message)


def _source(item: Any) -> tuple[Any, str | None]:
    """(what to open, the user's name) for a Gradio file record, a path or an in-memory image."""
    if isinstance(item, dict) or hasattr(item, "path") and not isinstance(item, (str, Path)):
        get = item.get if isinstance(item, dict) else lambda key: getattr(item, key, None)
        path = get("path")
        return path, get("orig_name") or (Path(path).name if path else None)
    if isinstance(item, (str, Path)):
        return str(item), Path(item).name
    return item, None


def page_picture(result: PageResult, total: int, query: str) -> tuple[Image.Image, str]:
    """One page of the strip: its heatmap with the kept cells outlined (or the bare page if it was not read) and a
    caption with its share of the document's budget."""
    rows, cols = result.grid
    share = result.budget / total if total else 0.0
    label = f"page {result.page.name}" if result.page.label == "page" else str(result.page.name)
    relevance = "" if result.relevance is None else f", match {result.relevance:.2f}"
    caption = f"{label}: {result.budget} tokens ({100 * share:.0f}% of the budget){relevance}, {result.read}"
    scores = (
        np.asarray(result.allocation.scores, dtype=np.float32)
        if result.allocation is not None
        else np.zeros((rows, cols), dtype=np.float32)
    )
    title = f"{label}: {result.budget} / {result.n_tokens} tokens" + ("" if result.read != "skipped" else " (not read)")
    picture = render_heatmap(result.page.image, scores, result.keep, title, max_side=STRIP_SIDE)
    return picture, caption


def summary_markdown(doc: DocumentAllocation) -> str:
    """One line for the document, then a table: page, tokens kept / of, share of the budget, match, how it was read."""
    t = doc.timings_ms
    lines = [
        f"**Visual tokens: {doc.n_tokens} → {doc.budget}** over {len(doc.pages)} pages "
        f"({100 * doc.budget / max(1, doc.n_tokens):.2f}% kept), mode {doc.mode}, "
        + ("the budget went where the question matched" if doc.specific else "split evenly (no page stood out)")
        + f"; {t.get('total', 0.0):.0f} ms (render {t.get('load', 0.0):.0f}, read {t.get('read', 0.0):.0f})",
        "",
        "| page | kept / tokens | share of the budget | match | read |",
        "|---|---:|---:|---:|---|",
    ]
    for p in doc.pages:
        match = "" if p.relevance is None else f"{p.relevance:.2f}"
        share = 100 * p.budget / max(1, doc.budget)
        lines.append(f"| {p.page.name} | {p.budget} / {p.n_tokens} | {share:.0f}% | {match} | {p.read} |")
    lines += [f"\n{note}" for note in doc.notes]
    return "\n".join(lines)


def allocate_document(
    files: Any,
    question: str,
    budget: str,
    family: str = "qwen2.5-vl",
    mode: str = "auto",
    pages: str = "",
    realizer: Any = None,
) -> tuple[list[tuple[Image.Image, str]], dict[str, Any], str]:
    """Allocate one budget over a document's pages for ``question``.

    Args:
        files: one PDF, or several page images (paths, Gradio file records, PIL images), in page order.
        question: the question ("" allowed: the budget is split evenly).
        budget: ``"0.01"`` (a fraction of all the pages' tokens), ``"512"`` or ``"adaptive"``.
        family, mode: as the demo's single-image section.
        pages: a 1-based page range (``"3-10"``), or "" for all.
        realizer: the relevance model (None: the default one, ``routed-cells``).

    Returns:
        (the strip: per page (picture, caption), the JSON of ``arr-coc allocate DOC --json``, a summary in markdown).
    """
    items = [] if files is None else list(files) if isinstance(files, (list, tuple)) else [files]
    if not items:
        raise _error("Upload a PDF or several page images first.")
    sources = [_source(item) for item in items]
    names = [name for _, name in sources]
    opened = [src for src, _ in sources]
    pdfs = [i for i, src in enumerate(opened) if isinstance(src, (str, bytes)) and is_pdf(src)]
    if pdfs and len(opened) > 1:
        raise _error("Upload one PDF, or page images only (not a PDF together with other files).")
    document = opened[0] if pdfs else opened
    stem = Path(names[0]).stem if names and names[0] else None
    try:
        parsed = parse_budget(str(budget))
        loaded = load_document(document, pages.strip() or None)  # kept open: pages the look skipped still render
    except (ValueError, ImportError, OSError) as err:
        raise _error(_hide(str(err), opened, names)) from None
    by_path = {src: name for src, name in sources if isinstance(src, str) and name}
    for page in loaded:
        if page.label == "image" and str(page.name) in by_path:
            page.name = by_path[str(page.name)]  # the user's file name, not the server's upload path
    try:
        doc = allocate_pages(loaded, question or "", parsed, family, mode=mode, realizer=realizer)
        strip = [page_picture(p, doc.budget, doc.query) for p in doc.pages]
    except (ValueError, ImportError) as err:
        raise _error(_hide(str(err), opened, names)) from None
    finally:
        close_document(loaded)
    return strip, doc.to_json(id=stem), summary_markdown(doc)


def _hide(text: str, sources: list[Any], names: list[str | None]) -> str:
    for src, name in zip(sources, names, strict=True):
        if isinstance(src, str) and src:
            text = text.replace(src, name or "the upload")
    return text[:1].upper() + text[1:]


def document_section(realizer: Any = None) -> None:
    """The document controls and outputs, added to the Gradio Blocks being built (call inside ``gr.Blocks()``)."""
    import gradio as gr

    def handler(files, question, budget, family, mode, pages):
        return allocate_document(files, question, budget, family, mode, pages, realizer)

    from .families import family_names
    from .realizing import MODES

    with gr.Accordion("documents: one PDF or several page images, one budget over the pages", open=False):
        with gr.Row():
            with gr.Column(scale=1):
                files = gr.File(
                    label="PDF or page images (in order)", file_count="multiple", type="filepath",
                    file_types=[".pdf", "image"], elem_id="document-files",
                )  # fmt: skip
                question = gr.Textbox(label="question", placeholder="e.g. What is the total amount due?")
                budget = gr.Textbox(label="budget over the document: fraction (0.01), count (512) or adaptive",
                                    value="0.01")  # fmt: skip
                pages = gr.Textbox(label="pages (e.g. 3-10; empty: all)", value="")
                family = gr.Dropdown(choices=list(family_names()), value="qwen2.5-vl", label="model family")
                mode = gr.Radio(choices=list(MODES), value="auto", label="mode")
                run = gr.Button("Allocate over the pages", variant="primary", elem_id="document-button")
            with gr.Column(scale=2):
                strip = gr.Gallery(label="pages: heatmap and share of the budget", columns=4, elem_id="page-strip")
                summary = gr.Markdown(elem_id="document-summary")
                with gr.Accordion("document JSON (as arr-coc allocate report.pdf --json)", open=False):
                    record = gr.JSON(label="document")
        run.click(handler, [files, question, budget, family, mode, pages], [strip, record, summary],
                  api_name="allocate_document")  # fmt: skip


__all__ = ["allocate_document", "document_section", "page_picture", "summary_markdown"]
