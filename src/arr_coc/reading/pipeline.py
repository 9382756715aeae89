"""The process-wide default reader and matchers, and ``text_relevance`` (read an image, score it for a query)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from PIL import Image

from .matching import QueryMatcher
from .ocr import TextBox, TextReader, _to_rgb_pil

_shared: dict[str, Any] = {}  # process-wide reader and matchers (by options), so their models load once
_shared_lock = threading.Lock()


def shared_reader(warm: bool = False) -> TextReader:
    """The process-wide default ``TextReader``, created on first use (and its models loaded then if ``warm``)."""
    with _shared_lock:
        if "reader" not in _shared:
            reader = TextReader()
            if warm:
                reader.warmup()
            _shared["reader"] = reader
        return _shared["reader"]


def shared_matcher(warm: bool = False, **options: Any) -> QueryMatcher:
    """The process-wide ``QueryMatcher`` for these options (one per distinct set; the MiniLM model is shared)."""
    key = repr(sorted(options.items()))
    with _shared_lock:
        if key not in _shared:
            matcher = QueryMatcher(**options)
            if warm:
                matcher.warmup()
            _shared[key] = matcher
        return _shared[key]


def text_relevance(
    image: Image.Image | np.ndarray,
    query: str,
    rows: int,
    cols: int,
    reader: TextReader | None = None,
    matcher: QueryMatcher | None = None,
) -> tuple[np.ndarray, list[TextBox]]:
    """Read ``image`` and return the ``(rows, cols)`` text relevance map for ``query`` and the recognised boxes.

    Args:
        image: The ORIGINAL image (PIL or uint8 array); the grid is a plain stretch of it.
        query: The question.
        rows: Grid rows (``arr_coc.grid``).
        cols: Grid columns.
        reader: OCR wrapper to use (default: a process-wide ``TextReader()``, so models load once).
        matcher: Matcher to use (default: a process-wide ``QueryMatcher()``).

    Raises:
        MissingExtraError: if the OCR extra is not installed.
    """
    reader = reader or shared_reader()
    matcher = matcher or shared_matcher()
    pil = _to_rgb_pil(image)
    boxes = reader.read(pil)
    return matcher.relevance(boxes, query, rows, cols, pil.size), boxes
