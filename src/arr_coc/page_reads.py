"""Reading a document's pages for a question: what is done before the likely pages are read (:func:`prepare_pages`:
their boxes embedded in one pass, their pictures sized), and after the answer (:func:`read_ahead`: the pages the
question skipped, prepared in a background thread for the next question). ``arr_coc.pages.allocate_pages`` calls
both; the page decision itself is in ``arr_coc.pages``.

Why: a first question on a 20-page PDF reads the first look's likely pages (up to 4) at once; their cost is MiniLM on
each page's boxes (a dense page: ~150 ms on one core). Embedding the union of their boxes once (a line that several
pages print, once), split over the cores (the embedder runs its forward passes outside its lock), is what keeps the
first question near twice a one-page one on 2 cores. A one-page question never comes here (nothing to share).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PIL import Image

from .documents import Page
from .realizing import Realizer


def sized(page: Page, size: tuple[int, int]) -> Any:
    """``page``'s image resized to ``size`` (W, H) as the processor resizes it (PIL bicubic), kept on the page: a
    page whose boxes come from its text layer is scored on this picture (``allocate`` resizes it to the same size:
    a copy, the same frames), so a next question skips the resize of the rendered page and the hash of its pixels."""
    if size not in page.sized:
        image = page.image
        page.sized[size] = image if image.size == size else image.resize(size, Image.Resampling.BICUBIC)
    return page.sized[size]


_AHEAD_STOP = threading.Event()  # set at exit: a read-ahead stops after its current page
_AHEAD: list[threading.Thread] = []


@atexit.register
def _stop_read_ahead() -> None:
    """At exit, let running read-aheads finish their page (a thread killed inside torch aborts the process)."""
    _AHEAD_STOP.set()
    for t in list(_AHEAD):
        t.join(timeout=30)


def read_ahead(pages: Sequence[Page], todo: Sequence[int], run: Any, text_options: Any, realizer: Realizer) -> None:
    """Prepare pages a question did not read, for the next question (one page at a time, in the caller's thread):
    render it, embed its text layer's boxes (MiniLM: the first question's cost on a dense page; each text is cached
    by the embedder) and compute its texture (the engine's page cache). ``run(i, "texture")`` allocates page i."""
    from .text_prior import reading_for

    _, matcher = reading_for(text_options, realizer)
    for i in todo:
        if _AHEAD_STOP.is_set():
            return
        page = pages[i]
        _ = page.image  # rendered now (kept on the page)
        if page.lines and matcher.semantic:
            matcher.embedder.embed([t for t, _ in page.lines])
        run(i, "texture")


def prepare_pages(
    pages: Sequence[Page], todo: Sequence[int], sizes: Sequence[tuple[int, int]], text_options: Any, realizer: Realizer,
    workers: int,
) -> None:  # fmt: skip
    """Before several pages of a PDF are read at once (a first question): embed the text-layer boxes of all of
    them in one pass, each text once (a header, a footer, a line that several pages print), split over ``workers``
    threads (the embedder's forward passes run outside its lock), while the same pool renders each page and resizes
    it to its grid (``sizes[i]``: (W, H); :func:`sized`). The page reads that follow find their boxes embedded and
    their pictures ready. Pages without a text layer are left to their reader, and so are pages already prepared
    (a next question: read, or read ahead); nothing is done for fewer than two new pages."""
    from .text_prior import reading_for

    with_layer = [i for i in todo if sizes[i] not in pages[i].sized and pages[i].lines]
    if len(with_layer) < 2:
        return
    _, matcher = reading_for(text_options, realizer)
    texts = list(dict.fromkeys(t for i in with_layer for t, _ in pages[i].lines))
    jobs: list[Any] = []
    if matcher.semantic and texts:
        by_length = sorted(texts, key=len)  # each share spans the lengths alike: its batches are padded little
        jobs += [lambda part=by_length[k::workers]: matcher.embedder.embed(part) for k in range(workers)]
    jobs += [lambda i=i: sized(pages[i], sizes[i]) for i in with_layer]
    with ThreadPoolExecutor(min(workers, len(jobs))) as pool:
        for done in [pool.submit(job) for job in jobs]:
            done.result()


__all__ = ["prepare_pages", "read_ahead", "sized"]
