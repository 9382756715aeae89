"""``Reading``: one OCR reader (with its page cache) and one MiniLM embedder, owned together, handing out matchers;
the one documented default instance; and ``text_relevance`` (read an image, score it for a query).

The only process-wide object of the reading package is the default ``Reading`` returned by ``default_reading()``:
created on first use under a lock, so that ``arr_coc.allocate`` loads the OCR and embedding models once per process.
Callers who want their own settings, cache or model lifetimes create a ``Reading(config)`` and pass it (or its
``reader`` / ``matcher()``) explicitly.
"""

from __future__ import annotations

import threading

import numpy as np
from PIL import Image

from .config import ReadingConfig
from .matching.learned import BoxScorer
from .matching.matcher import QueryMatcher
from .matching.semantic import MiniLMEmbedder
from .ocr.reader import TextBox, TextReader, to_rgb_pil


class Reading:
    """The text path's models and caches, owned by the caller: one ``TextReader`` (with its ``OcrCache``) and one
    ``MiniLMEmbedder`` shared by every ``QueryMatcher`` it hands out. Thread-safe.

    Args:
        config: Settings of the whole text path (default ``ReadingConfig()``).
        scorer: a trained box scorer (``arr_coc.reading.matching.learned.BoxScorer``) every matcher uses; None: the
            rules.

    Example:
        >>> reading = Reading()
        >>> relevance, boxes = reading.relevance(image, "How much must be paid?", rows=36, cols=29)
        >>> relevance, boxes = reading.relevance(image, "Who is it for?", rows=36, cols=29)  # OCR from the cache
    """

    def __init__(self, config: ReadingConfig | None = None, scorer: BoxScorer | None = None) -> None:
        self.config = config if config is not None else ReadingConfig()
        if not isinstance(self.config, ReadingConfig):
            raise TypeError(f"config must be a ReadingConfig, got {type(self.config).__name__}")
        self.reader = TextReader(self.config.ocr)
        self.embedder = MiniLMEmbedder.from_config(self.config.semantic)
        self.scorer = scorer
        self._matchers: dict[tuple[tuple[str, bool | None], ...], QueryMatcher] = {}
        self._lock = threading.Lock()

    def with_scorer(self, scorer: BoxScorer | None) -> Reading:
        """A ``Reading`` sharing this one's config, OCR reader (its page cache) and embedder, whose matchers use
        ``scorer`` (the default relevance's box scorer on the default text path: no second set of models)."""
        other = object.__new__(Reading)
        other.config, other.reader, other.embedder, other.scorer = self.config, self.reader, self.embedder, scorer
        other._matchers, other._lock = {}, threading.Lock()
        return other

    def matcher(self, **switches: bool | None) -> QueryMatcher:
        """The matcher for these ablation switches (``ReadingConfig.with_switches``: lexical, semantic, layout,
        structure, query_parsing, whole_words; None: as in the config), sharing this object's embedder."""
        key = tuple(sorted(switches.items()))
        with self._lock:
            if key not in self._matchers:
                self._matchers[key] = QueryMatcher(self.config, embedder=self.embedder, scorer=self.scorer, **switches)
            return self._matchers[key]

    def clear(self) -> None:
        """Forget every page and text seen (OCR cache, embeddings, the matchers' per-page layouts and word cells);
        the models stay loaded. The next question about any page is a first question again."""
        self.reader.cache.clear()
        self.embedder.clear()
        with self._lock:
            matchers = list(self._matchers.values())
        for m in matchers:
            m.clear()

    def warmup(self, ocr: bool = True, semantic: bool = True) -> None:
        """Load the OCR models and (if semantic matching is on) the MiniLM model now, not on first use."""
        if ocr and not self.reader.loaded:
            self.reader.warmup()
        if semantic and self.config.semantic.enabled and not self.embedder.loaded:
            self.embedder.warmup()

    def relevance(
        self,
        image: Image.Image | np.ndarray,
        query: str,
        rows: int,
        cols: int,
        **switches: bool | None,
    ) -> tuple[np.ndarray, list[TextBox]]:
        """Read ``image`` (from the cache when seen before) and return the ``(rows, cols)`` text relevance map for
        ``query`` and the recognised boxes (see ``text_relevance``)."""
        pil = to_rgb_pil(image)
        boxes = self.reader.read(pil)
        return self.matcher(**switches).relevance(boxes, query, rows, cols, pil.size), boxes


_default: Reading | None = None
_default_lock = threading.Lock()


def default_reading(warm: bool = False) -> Reading:
    """The process-wide default ``Reading`` (``ReadingConfig()``), created on first use; models loaded if ``warm``.

    This is the one documented shared instance of the reading package (used by ``arr_coc.allocate`` and the text
    prior of ``compress``); its OCR cache holds at most ``OcrConfig.cache_items`` pages.
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = Reading()
        reading = _default
    if warm:
        reading.warmup()
    return reading


def shared_reader(warm: bool = False) -> TextReader:
    """The default ``Reading``'s ``TextReader`` (its models loaded if ``warm``)."""
    reading = default_reading()
    if warm:
        reading.warmup(ocr=True, semantic=False)
    return reading.reader


def shared_matcher(warm: bool = False, **switches: bool | None) -> QueryMatcher:
    """The default ``Reading``'s matcher for these ablation switches (its MiniLM model loaded if ``warm``)."""
    matcher = default_reading().matcher(**switches)
    if warm:
        matcher.warmup()
    return matcher


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
        reader: OCR reader to use (default: the default ``Reading``'s, so models load once and pages are cached).
        matcher: Matcher to use (default: the default ``Reading``'s).

    Raises:
        MissingExtraError: if the OCR extra is not installed.
    """
    reader = reader or shared_reader()
    matcher = matcher or shared_matcher()
    pil = to_rgb_pil(image)
    boxes = reader.read(pil)
    return matcher.relevance(boxes, query, rows, cols, pil.size), boxes
