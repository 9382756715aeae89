"""Reading: text-aware query coupling for documents, offline (OCR + lexical/semantic matching + layout rules).

For document images the question usually names a *key* printed on the page ("Invoice No", "Amount due", the bar
labelled "Q3", the row "Widget B") and the answer sits at a predictable place next to it: right of the label on the
same line, directly below it, in the same table row or column, or above a chart's axis label. This package finds the
text with an OCR engine, scores each recognised box for how well the query refers to it, propagates that score to
where the answer should sit, and paints the result onto the model's ``rows x cols`` visual-token grid (see
``arr_coc.grid``). ``arr_coc.realizing.allocate(..., mode="text")`` keeps the tokens with the highest values.

One module a stage:
    config.py    ``ReadingConfig``: every weight and threshold of the text path (sections ocr, lexical, semantic,
                 keys, layout), serialisable to/from JSON
    ocr.py       ``TextReader`` (rapidocr's PP-OCR ONNX models, bundled with the wheel, so nothing downloads),
                 ``TextBox``, ``OcrCache`` (each page is read once); lines are split after a trailing-colon word
                 ("Invoice No: 4711" -> "Invoice No:" | "4711")
    lexical.py   normalisation, tokens, fuzzy token similarity, per-box lexical score, answer types
    semantic.py  ``MiniLMEmbedder`` (all-MiniLM-L6-v2 with plain ``transformers``), per-box semantic score
    layout.py    the layout rule (``propagate``) and grid painting (``paint_boxes``)
    matching.py  ``QueryMatcher``: keys, answer-type prior, layout, final per-box scores, painting
    pipeline.py  ``Reading`` (reader + embedder + matchers, owned by the caller), ``default_reading()`` (the one
                 documented process-wide instance), ``text_relevance``

Every stage degrades gracefully: an empty query or a query that matches nothing yields a flat "all text is
moderately relevant" map; an image without text yields all zeros.

Example:
    >>> from PIL import Image
    >>> page = Image.open("examples/invoice.jpg")
    >>> relevance, boxes = text_relevance(page, "How much must be paid?", rows=36, cols=29)
    >>> relevance.shape
    (36, 29)
"""

from .config import KeyConfig, LayoutConfig, LexicalConfig, OcrConfig, ReadingConfig, SemanticConfig, StructureConfig
from .errors import INSTALL_HINT, MissingExtraError
from .layout import paint_boxes, propagate
from .lexical import MAX_QUERY_CHARS, MAX_QUERY_TOKENS
from .matching import QueryMatcher
from .ocr import OcrCache, ReadResult, TextBox, TextReader
from .pipeline import Reading, default_reading, shared_matcher, shared_reader, text_relevance
from .semantic import EMBED_MAX_TOKENS, MiniLMEmbedder

__all__ = [
    "EMBED_MAX_TOKENS",
    "INSTALL_HINT",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TOKENS",
    "KeyConfig",
    "LayoutConfig",
    "StructureConfig",
    "LexicalConfig",
    "MiniLMEmbedder",
    "MissingExtraError",
    "OcrCache",
    "OcrConfig",
    "QueryMatcher",
    "ReadResult",
    "Reading",
    "ReadingConfig",
    "SemanticConfig",
    "TextBox",
    "TextReader",
    "default_reading",
    "paint_boxes",
    "propagate",
    "shared_matcher",
    "shared_reader",
    "text_relevance",
]
