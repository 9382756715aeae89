"""Reading: text-aware query coupling for documents, offline (OCR + lexical/semantic matching + layout rules).

For document images the question usually names a *key* printed on the page ("Invoice No", "Amount due", the bar
labelled "Q3", the row "Widget B") and the answer sits at a predictable place next to it: right of the label on the
same line, directly below it, in the same table row or column, or above a chart's axis label. This package finds the
text with an OCR engine, scores each recognised box for how well the query refers to it, propagates that score to
where the answer should sit, and paints the result onto the model's ``rows x cols`` visual-token grid (see
``arr_coc.grid``). ``arr_coc.realizing.allocate(..., mode="text")`` keeps the tokens with the highest values.

Three rooms and what they share (imports go down this list, never up; ``tests/test_reading_imports.py`` checks it):
    errors.py        ``MissingExtraError`` (the optional OCR extra is missing) and its install hint
    text.py          the one normaliser (``clean``, ``fold``) of queries, boxes and structural questions
    scripts.py       which scripts the text path reads (Latin, Chinese, Japanese); one note for each it cannot
    layout/          page layout from box geometry alone (plain data in and out: no image, no query, no config file)
        structure.py         ``analyse`` -> ``Layout``: lines, columns, blocks, roles, sections, reading order,
                             tables, charts; its thresholds are ``PageLayoutConfig``
        page.py              the layout's data (``Layout``, ``Line``, ``Block``, ``Table``, ...,
                             ``PageLayoutConfig``) and the box helpers ``analyse`` and the tables share
        tables.py            tables: aligned baseline rows, their columns, header row and row-label column
        structural_query.py  ``parse`` / ``resolve``: a question about the page's structure -> ``Evidence``
        sections.py          a named section's extent (its column, on into the next, up to the next heading)
        section_ends.py      where a named section ends: lines that cannot head the next section (after a cut
                             word, a list's entry), the line its last sentence ends on
        column_split.py      ``separate_columns``: columns the layout joined (a tilted scan, a line across a
                             gutter) cut apart at the gutters between the OCR boxes
        scans.py             scanned pages: word units on tight lines, OCR-noise tolerant phrase matching
        scan_rows.py         scanned rows: a phrase matched token by token over words OCR joined; word evidence
                             painted on the ink band on tight lines
    config.py        ``ReadingConfig``: every weight and threshold of the text path in one serialisable object
                     (sections ocr, lexical, semantic, keys, layout, structure, and page = ``PageLayoutConfig``)
    ocr/             the OCR engine: page image -> ``TextBox`` es
        reader.py          ``TextReader`` (rapidocr's PP-OCR ONNX models, bundled with the wheel, so nothing
                           downloads), ``TextBox``, ``ReadResult``, ``OcrCache`` (each page is read once); lines are
                           split after a trailing-colon word ("Invoice No: 4711" -> "Invoice No:" | "4711")
        recognition.py     ``LineRecognizer``: the CTC line recogniser (each line in its script, width-sorted batches)
        lines.py           ``PageRecognizer``: a page's lines cut (one ``grid_sample``), recognised (one call) and
                           CTC-decoded (one copy back) on a torch device (``backend="torch"``)
        detection.py       ``LeanDBPostProcess``: rapidocr's DB box extraction with less host time a box, the same
                           boxes
        onnx_torch.py      ``OnnxModule``: the PP-OCR ONNX graphs run by torch on any device and dtype
        onnx_ops.py        the ONNX ops of those graphs, one small torch function each
        torch_backend.py   ``TorchOcrSession`` / ``TorchRapidOCR``: rapidocr with its networks on ``OnnxModule``
    matching/        how much each box matters for a question, painted onto the token grid
        lexical.py       normalised tokens, fuzzy token similarity, per-box lexical score, answer types
        semantic.py      ``MiniLMEmbedder`` (all-MiniLM-L6-v2 with plain ``transformers``), per-box semantic score
        semantic_keys.py a printed label read as a question, matched to the question by the MiniLM (off by
                         default: measured on dev, it lowers recall)
        propagation.py   the layout rule (``propagate``, the ``layout`` section), grid painting (``paint_boxes``),
                         word units
        crossing.py      a table cell named by its column header and row label: ``Evidence(rule="table-cell")``
        paraphrase.py    foreign questions that name no printed key: concepts -> the keys documents print (de/fr/es)
        spans.py         key spans: the question's words where they stand together, then the text after them
                         (``arr_coc.pages`` spends a document page's share from them first)
        quotes.py        a foreign question's quotation found as characters; the box holding it and more: the answer
        script_neutral.py  the learned features' text measures in any script (English values unchanged)
        paraphrase_en.py English questions that name no printed key: concepts -> printed keys, answer types
        question_roles.py the role an English question asks about, from its grammar ("Who's it from?": the sender)
        question_shapes.py the keys a question naming none asks for, from its answer's shape ("day it was written?")
        question_clauses.py the asking clause of a question apart from the asker's situation ("I need it for my log.")
        form_purposes.py form keys named by their purpose ("Who should get the reply?": FROM)
        cell_wording.py  a table-cell question in another wording: loose (header, label) splits
        table_meaning.py a table's row and column named by meaning ("Latino kids aged four": Hispanic x
                         4-Year-Old Cohort; "North Carolina": NC): their crossing, or a named row's one cell
        learned.py       the learned scorer: ``box_features``, ``BoxScorer`` (reads the matcher through the
                         ``RuleQuantities`` protocol: no import of ``matcher``)
        host_forward.py  the learned scorer's ``box_scores`` in numpy on the calling thread (no wait on torch's
                         intra-op pool when the host is busy; the torch forward's scores but a product's last bits)
        gated.py         ``--relevance hybrid`` / ``hybrid-floor``: the learned scorer where its ensemble agrees, else
                         the rules (opt-in; the default is the rules)
        routed.py        ``--relevance routed``: the rules where their layout relation is exact (structural evidence
                         found, a table cell crossed), the learned scorer elsewhere (opt-in)
        matcher.py       ``QueryMatcher``: keys, answer-type prior, layout rule, evidence chain, structural evidence,
                         final per-box scores, painting
    pipeline.py      ``Reading`` (reader + embedder + matchers, owned by the caller), ``default_reading()`` (the one
                     documented process-wide instance), ``text_relevance``: the three rooms tied together

Two words keep apart: the *layout rule* (``matching.propagation``, config section ``layout``, ``LayoutConfig``) and
the *page layout* (``layout.structure.Layout``, config section ``page``, ``PageLayoutConfig``).

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
from .layout.structure import PageLayoutConfig
from .matching.lexical import MAX_QUERY_CHARS, MAX_QUERY_TOKENS
from .matching.matcher import QueryMatcher
from .matching.propagation import paint_boxes, propagate
from .matching.semantic import EMBED_MAX_TOKENS, MiniLMEmbedder
from .ocr.reader import OcrCache, ReadResult, TextBox, TextReader
from .pipeline import Reading, default_reading, shared_matcher, shared_reader, text_relevance

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
    "PageLayoutConfig",
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
