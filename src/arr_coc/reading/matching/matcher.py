"""``QueryMatcher``: scores recognised text for a query (lexical + semantic keys, answer-type prior, the layout rule
that propagates key scores to where answers sit) and paints the result onto the token grid."""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict, deque
from collections.abc import Sequence

import numpy as np

from ...attending import WordUnits
from ..config import ReadingConfig
from ..layout.scan_rows import ink_regions
from ..layout.scans import core_boxes, tight_prose
from ..layout.structural_query import Evidence, parse, resolve
from ..layout.structure import Layout, analyse, flat_layout
from ..ocr.reader import TextBox
from .cell_wording import loose_cell_splits
from .crossing import cross_cells, split_cell_query
from .learned import BoxScorer, box_features
from .lexical import LexicalPage, answer_types, foreign_words, has_type, lexical_scores
from .propagation import CellPainter, Neighbours, paint_boxes, propagate, word_units
from .quotes import INLINE_OTHERS, inline_values
from .semantic import MiniLMEmbedder, semantic_scores, semantic_similarities
from .semantic_keys import key_similarities, semantic_keys
from .table_meaning import meaning_cell


def _typed(boxes: Sequence[TextBox], kind: str) -> np.ndarray:
    """(N,) bool: which boxes hold a value of type ``kind`` (``has_type``)."""
    return np.array([has_type(b.text, kind) for b in boxes], dtype=bool)


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a``, made read-only (a value shared through ``page_cached``)."""
    a.setflags(write=False)
    return a


def first_line(boxes: Sequence[TextBox]) -> np.ndarray:
    """(N,) bool: the boxes of the page's first text line, where a document names who issued it (a letterhead, a
    shop's name at the head of a receipt). The line is the top-most box holding at least two letters, with every box
    whose vertical centre lies within its height.

    Example:
        >>> boxes = [TextBox("ACME LTD", (0, 5, 50, 15)), TextBox("x", (0, 0, 5, 4)), TextBox("Date", (0, 30, 9, 40))]
        >>> first_line(boxes).tolist()
        [True, False, False]
    """
    n = len(boxes)
    out = np.zeros(n, dtype=bool)
    worded = [i for i, b in enumerate(boxes) if sum(ch.isalpha() for ch in b.text) >= 2]
    if not worded:
        return out
    top = min(worded, key=lambda i: (boxes[i].box[1], i))
    y0, y1 = boxes[top].box[1], boxes[top].box[3]
    for i in worded:
        yc = (boxes[i].box[1] + boxes[i].box[3]) / 2
        out[i] = y0 <= yc <= y1
    return out


def continuations(layout: Layout, keys: Sequence[int]) -> list[tuple[int, int]]:
    """``(key, box)`` pairs where a key's text goes on in another column: the key box ends the last line of a
    paragraph and the next paragraph in reading order starts in another column ("The bridge in Leipzig is" at the
    foot of the left column, "1,142 metres long." at the top of the right one). Geometry alone (``propagate``) never
    links the two; the layout analysis' reading order does.

    Args:
        layout: ``arr_coc.reading.layout.structure.analyse`` of the boxes.
        keys: indices of the key boxes.

    Returns:
        Pairs of box indices (the key, each box of the next paragraph's first line).
    """
    keys = set(int(k) for k in keys)
    out: list[tuple[int, int]] = []
    for b, nxt in zip(layout.blocks, layout.blocks[1:], strict=False):
        if b.role != "paragraph" or nxt.role != "paragraph" or nxt.column == b.column:
            continue
        last = layout.lines[b.lines[-1]]
        first = layout.lines[nxt.lines[0]]
        out.extend((i, j) for i in last.boxes if i in keys for j in first.boxes)
    return out


class PageKey:
    """A page's boxes as a dictionary key: the tuple of them, hashed once (a question looks a page up in several
    caches; hashing its boxes each time cost more than the look-ups). Equal to any ``PageKey`` of equal boxes."""

    __slots__ = ("_hash", "boxes")

    def __init__(self, boxes: Sequence[TextBox]) -> None:
        self.boxes = tuple(boxes)
        self._hash = hash(self.boxes)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PageKey) and self._hash == other._hash and self.boxes == other.boxes


class QueryMatcher:
    """Scores recognised text for a query and paints where the query's answer should be.

    1. Keys: which boxes the question names (``key_weights``).

       * lexical: the query's content tokens (stop words dropped; question words such as "value", "column", "chart"
         kept at weight ``lexical.meta_weight``; terms frequent on the page weigh less) are compared to the box's
         tokens after normalisation (case, punctuation, thousands separators and trailing zeros of numbers, common
         abbreviations such as No -> number, Qty -> quantity, PO -> purchase order, light stemming) with fuzzy
         similarity (edit distance <= 2 on words of 4+ letters, prefix/substring containment; numbers only match
         exactly, modulo O/0 and l/1 OCR slips). With R = how much of the query the box covers and P = how much of
         the box the query covers, the score is ``max((R + P) / 2, 0.75 R)``. Keys are the boxes scoring at least
         ``keys.relative`` of the best, weighted ``(score / best) ** keys.sharpness``.
       * semantic: MiniLM cosine similarity of question and box text; boxes within ``semantic.band`` of the page's
         best are keys, weighted linearly and by how convincing the best is (``semantic_scores``). Halved when a
         strong lexical match exists, so the question's own words win.

    2. Layout rule (``layout.enabled``, ``arr_coc.reading.matching.propagation.propagate``): each key's weight is
       propagated to where answers sit: same line to its right (1.0, decaying slowly with order so a table row is
       covered), below it in the same column (0.85, decaying; a table column, a value under its label), above it (0.7; a
       chart bar's value label above its axis label) and to its left (0.5). Propagation from long sentence-like keys to
       the right/left is damped (multi-column pages), and so is propagation to *siblings* of the key (same character
       shape, "Q3" -> "Q4", or both "Label:"), which are the next item of a list rather than its value.
       Contributions add up, so the table cell in the key row AND the key column ranks first.
    3. Answer type: "when" asks for a date, "how much" for money, "how many" for a count (``type_prior``). Boxes of
       that type get at least ``keys.type_prior_score`` (0.4) plus their layout score; other candidates are damped.
    4. Evidence chain: a key scores at least ``keys.link`` (0.9) times the best candidate it points to (times its
       share in that candidate's score), so the value is kept with the key that makes it the answer ("Amount due:"
       beside "$18,324.18"); a table cell among the best candidates (``keys.header_top``) keeps its row and column
       headers (``arr_coc.reading.layout.structure.Layout.headers_of``) at ``keys.link`` times its score. A key in a row
       (table header, "Label: value") reaches below/above only up to the first much wider box
       (``layout.cross_width``): fine print under a table is not the table's next cell. With layout analysis
       (``structure.enabled``), a key ending a paragraph at the foot of a column also reaches the first line of the
       next paragraph in reading order, in the next column (``continuations``): a sentence goes on there.
    5. Final box score = max(candidate score, 0.85 * key weight, ``keys.other_text`` (0.15)); when no key is found
       (or the query is empty) all text gets ``keys.no_match_text`` (0.5) and values of the asked-for type 0.75.
       Boxes are then painted onto the grid (``paint_boxes``); cells without text are 0. ``units`` gives the cells
       of each word, which the selection keeps whole (``layout.whole_words``).
    6. Structure (``structure.query_parsing``): a question about the page's structure (title, the word after a quoted
       phrase, the last word of a named section, the n-th section of a column, a chart's extremes, "the third month")
       is parsed (``arr_coc.reading.layout.structural_query``) and resolved on the page's layout
       (``arr_coc.reading.layout.structure``); the evidence it needs paints 1 and everything else is damped by
       ``structure.evidence_damp`` (the budget rule), and an implied label ("Mar") becomes a key for the layout rule.
       ``relevance_and_evidence`` also returns which rule fired.

    Queries longer than ``lexical.max_query_chars`` (512) characters are truncated to that length before matching;
    at most ``lexical.max_query_tokens`` (48) content tokens are used lexically and the embedding sees at most
    ``semantic.max_tokens`` (128) word pieces. All numbers: ``ReadingConfig`` (defaults in parentheses).

    A matcher holds no per-query state (only a small per-page cache of layouts, ``layout_of``); one instance can
    serve several threads (its embedder and that cache lock).

    Args:
        config: Settings (default ``ReadingConfig()``); only its matching sections are used.
        lexical: Override ``config.lexical.enabled`` (ablation switch; None keeps it).
        semantic: Override ``config.semantic.enabled``.
        layout: Override ``config.layout.enabled``.
        structure: Override ``config.structure.enabled`` (layout analysis; off, structural questions are resolved on
            the boxes in OCR order, each its own line).
        query_parsing: Override ``config.structure.query_parsing`` (off, the question is matched by its words only).
        whole_words: Override ``config.layout.whole_words`` (off, ``units`` is empty: plain top-k over cells).
        embedder: MiniLM embedder to use (shared between matchers by ``arr_coc.reading.Reading``); default: this
            matcher's own, created from ``config.semantic`` and loaded on the first semantic query.
        scorer: a trained ``arr_coc.reading.matching.learned.BoxScorer``: each box's final score is its output on
            ``box_features`` instead of the rules' ``box_scores`` (None: the rules).
    """

    PAGE_ENTRIES = 32  # names ``page_cached`` keeps a page (its tokens, types, neighbours, cells per grid, ...)

    def __init__(
        self,
        config: ReadingConfig | None = None,
        *,
        lexical: bool | None = None,
        semantic: bool | None = None,
        layout: bool | None = None,
        structure: bool | None = None,
        query_parsing: bool | None = None,
        whole_words: bool | None = None,
        embedder: MiniLMEmbedder | None = None,
        scorer: BoxScorer | None = None,
    ) -> None:
        config = config if config is not None else ReadingConfig()
        if not isinstance(config, ReadingConfig):
            raise TypeError(f"config must be a ReadingConfig, got {type(config).__name__}")
        self.config = config.with_switches(
            lexical=lexical,
            semantic=semantic,
            layout=layout,
            structure=structure,
            query_parsing=query_parsing,
            whole_words=whole_words,
        )
        self._embedder = embedder
        self.scorer = scorer
        self._layouts: OrderedDict[PageKey, Layout] = OrderedDict()  # per page, bounded LRU
        self._layouts_lock = threading.Lock()
        self._page_cache: OrderedDict[PageKey, dict[str, object]] = OrderedDict()  # per page: name -> value
        # the last pages' box tuples with their keys: a key found again by its boxes' identity
        self._recent: deque[tuple[tuple[TextBox, ...], PageKey]] = deque(maxlen=8)
        if embedder is None and self.config.semantic.enabled:
            self._embedder = MiniLMEmbedder.from_config(self.config.semantic)  # cheap: nothing loads until used

    @property
    def lexical(self) -> bool:
        """Whether lexical matching is on."""
        return self.config.lexical.enabled

    @property
    def semantic(self) -> bool:
        """Whether semantic matching is on."""
        return self.config.semantic.enabled

    @property
    def layout(self) -> bool:
        """Whether the layout rule is on."""
        return self.config.layout.enabled

    @property
    def structure(self) -> bool:
        """Whether layout analysis is on (``arr_coc.reading.layout.structure``)."""
        return self.config.structure.enabled

    @property
    def query_parsing(self) -> bool:
        """Whether structural references in the question are parsed (``arr_coc.reading.layout.structural_query``)."""
        return self.config.structure.query_parsing

    @property
    def evidence_damp(self) -> float:
        """Factor on every other box once structural evidence was found (``structure.evidence_damp``)."""
        return self.config.structure.evidence_damp

    @property
    def embedder(self) -> MiniLMEmbedder:
        """The MiniLM embedder (this matcher's own unless one was given)."""
        if self._embedder is None:
            self._embedder = MiniLMEmbedder.from_config(self.config.semantic)
        return self._embedder

    def warmup(self) -> None:
        """Load the MiniLM model now (a few seconds, mostly importing transformers) instead of on the first query.

        A no-op when ``semantic`` is off.
        """
        if self.semantic:
            self.embedder.warmup()

    def clip(self, query: str | None) -> str:
        """The query as every stage sees it: at most ``lexical.max_query_chars`` characters ("" for None)."""
        return (query or "")[: self.config.lexical.max_query_chars]

    # -- scoring -------------------------------------------------------------------------------------------------

    def lexical_scores(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) lexical match of each box to ``query`` in [0, 1]
        (``arr_coc.reading.matching.lexical.lexical_scores``)."""
        texts = [b.text for b in boxes]
        page = self.page_cached("lexical", boxes, lambda: LexicalPage(texts))  # the page's tokens, once per page
        return lexical_scores(texts, self.clip(query), self.config.lexical, page)

    def semantic_similarities(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) raw MiniLM cosine similarity of each box text to ``query`` (mostly-digit boxes lowered by
        ``semantic.digit_penalty``: they are values, not keys)."""
        return semantic_similarities(
            self.embedder, [b.text for b in boxes], query, self.config.semantic, self.config.lexical.max_query_chars
        )

    def label_keys(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) the printed label an English question asks about, read as a question (``semantic_keys``)."""
        texts = [b.text for b in boxes]
        return semantic_keys(
            texts, key_similarities(self.embedder, texts, query, self.config.semantic), self.config.semantic
        )

    def semantic_scores(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) semantic key score in [0, 1], relative to the page's best match
        (``arr_coc.reading.matching.semantic.semantic_scores``)."""
        return semantic_scores(self.semantic_similarities(boxes, query), self.config.semantic)

    def match_scores(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) how strongly the query refers to each box: max of lexical and weighted semantic score."""
        n = len(boxes)
        m = np.zeros(n, dtype=np.float32)
        query = self.clip(query)
        if n == 0 or not query.strip():
            return m
        if self.lexical:
            m = np.maximum(m, self.lexical_scores(boxes, query))
        if self.semantic:
            m = np.maximum(m, self.config.semantic.weight * self.semantic_scores(boxes, query))
        return m

    def type_prior(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) weak prior for boxes whose text has the value type the question asks for (0 when untyped).

        "When ...?" makes every date on the page a candidate, "How much ...?" every amount of money, "How many ...?"
        every bare count, "Which shop ...?" every name with a legal form or a kind of business and the page's
        ``first_line`` (where a document names its issuer); the prior (``keys.type_prior_score``) sits above other
        text and below matched keys and their layout candidates. Off when ``layout`` is off (it is part of the
        answer-placement rule).
        """
        n = len(boxes)
        out = np.zeros(n, dtype=np.float32)
        query = self.clip(query)
        if not self.layout or n == 0 or not query:
            return out
        kinds = answer_types(query)
        typed = np.zeros(n, dtype=bool)  # (N,) each kind's boxes found once per page
        for kind in kinds:
            typed |= self.page_cached(f"type {kind}", boxes, lambda k=kind: _read_only(_typed(boxes, k)))
        if "org" in kinds:
            typed |= self.page_cached("first line", boxes, lambda: _read_only(first_line(boxes)))
        out[typed] = self.config.keys.type_prior_score
        return out

    def key_weights(
        self, boxes: Sequence[TextBox], query: str, found: dict[str, np.ndarray] | None = None
    ) -> np.ndarray:
        """(N,) soft key selection: which boxes the query names, 0 when nothing matches well enough.

        Lexical keys are the boxes whose lexical score is at least ``keys.relative`` of the page's best, weighted
        ``(score / best) ** keys.sharpness`` and scaled down when the best is below ``keys.full_at``. Semantic keys
        (``semantic_scores``) are already relative; they weigh ``semantic.weight``, times
        ``semantic.lexical_strong_factor`` when a strong lexical match (>= ``semantic.lexical_strong``) exists, since
        then the question's own words locate the key (``semantic.foreign_strong_factor`` for a question worded in
        another language, ``lexical.foreign_words``: the English MiniLM reads it poorly). ``found``, when given,
        receives the lexical scores (``lex``) and semantic similarities (``sim``) computed on the way.
        """
        n = len(boxes)
        keys = np.zeros(n, dtype=np.float32)
        query = self.clip(query)
        if n == 0 or not query.strip():
            return keys
        kc, sc = self.config.keys, self.config.semantic
        lex_best = 0.0
        if self.lexical:
            lex = self.lexical_scores(boxes, query)  # (N,)
            if found is not None:
                found["lex"] = lex
            lex_best = float(lex.max())
            if lex_best >= kc.min_match:
                rel = lex / lex_best  # (N,)
                keys = np.where(rel >= kc.relative, rel**kc.sharpness, 0.0) * min(1.0, lex_best / kc.full_at)
        if self.semantic:
            strong = sc.foreign_strong_factor if foreign_words(query) else sc.lexical_strong_factor
            w = sc.weight * (strong if lex_best >= sc.lexical_strong else 1.0)
            sim = self.semantic_similarities(boxes, query)  # (N,)
            if found is not None:
                found["sim"] = sim
            sem = w * semantic_scores(sim, self.config.semantic)  # (N,)
            keys = np.maximum(keys, np.where(sem >= kc.semantic_min * kc.min_match, sem, 0.0))
            if lex_best < sc.lexical_strong and sc.key_weight > 0 and not foreign_words(query):  # ``semantic_keys``
                keys = np.maximum(keys, self.label_keys(boxes, query))
        return keys.astype(np.float32)

    def clear(self) -> None:
        """Forget the per-page caches (layouts and ``page_cached`` values); the embedder's cache is its own."""
        with self._layouts_lock:
            self._layouts.clear()
            self._page_cache.clear()
            self._recent.clear()

    def layout_of(self, boxes: Sequence[TextBox]) -> Layout:
        """The page's layout: ``arr_coc.reading.layout.structure.analyse`` (``structure.enabled``) or, off,
        ``flat_layout`` (boxes in OCR order, no columns, tables or reading order).

        The last ``structure.layout_cache_items`` pages' layouts are kept (keyed on the boxes themselves), so a second
        question about a page does not analyse it again; the returned ``Layout`` is shared: do not modify it.
        """
        key = self.page_key(boxes)
        with self._layouts_lock:
            if key in self._layouts:
                self._layouts.move_to_end(key)
                return self._layouts[key]
        layout = analyse(boxes, self.config.page) if self.structure else flat_layout(boxes, self.config.page)
        bound = self.config.structure.layout_cache_items
        with self._layouts_lock:
            self._layouts[key] = layout
            while len(self._layouts) > bound:
                self._layouts.popitem(last=False)
        return layout

    def page_key(self, boxes: Sequence[TextBox]) -> PageKey:
        """The key of the per-page caches for ``boxes``: the key of a recent page whose boxes are the very same
        objects, in order (``TextReader.read`` hands out a page's cached boxes, so each question about a page finds
        its key without hashing them), else the key of a recent page of equal boxes (other objects: the same page
        read again, e.g. by a reader that makes new boxes; the caches hold that key object, so their look-ups find it
        by identity instead of comparing every box each time), else a new ``PageKey``."""
        with self._layouts_lock:
            recent = tuple(self._recent)
        for seen, key in recent:
            if len(seen) == len(boxes) and all(map(operator.is_, seen, boxes)):
                return key
        key = PageKey(boxes)
        key = next((known for _, known in recent if known == key), key)  # once a new box list, not per look-up
        with self._layouts_lock:
            self._recent.appendleft((tuple(boxes), key))
        return key

    def page_cached(self, name: str, boxes: Sequence[TextBox], compute):
        """``compute()`` for this page, remembered for the last ``structure.layout_cache_items`` pages (keyed on the
        boxes, then ``name``; at most ``PAGE_ENTRIES`` names a page, the oldest first out), so a second question about
        a page reuses what does not depend on the question."""
        key = self.page_key(boxes)
        with self._layouts_lock:
            entries = self._page_cache.get(key)
            if entries is not None:
                self._page_cache.move_to_end(key)
                if name in entries:
                    return entries[name]
        value = compute()
        with self._layouts_lock:
            entries = self._page_cache.setdefault(key, {})
            self._page_cache.move_to_end(key)
            entries[name] = value
            while len(entries) > self.PAGE_ENTRIES:
                entries.pop(next(iter(entries)))
            while len(self._page_cache) > self.config.structure.layout_cache_items:
                self._page_cache.popitem(last=False)
        return value

    def box_scores(
        self,
        boxes: Sequence[TextBox],
        query: str,
        extra_keys: Sequence[int] = (),
        layout: Layout | None = None,
    ) -> np.ndarray:
        """(N,) final per-box relevance in [0, 1] (key, answer candidates, other text).

        ``extra_keys``: indices of boxes that are keys whatever the query's words say (an implied label found by
        ``arr_coc.reading.layout.structural_query``, e.g. "Mar" for "the third month"). ``layout``: the page's
        ``layout_of(boxes)`` when the caller has it already.
        """
        return self.box_parts(boxes, query, extra_keys, layout)["scores"]

    def box_parts(
        self,
        boxes: Sequence[TextBox],
        query: str,
        extra_keys: Sequence[int] = (),
        layout: Layout | None = None,
    ) -> dict[str, np.ndarray]:
        """The rule's per-box quantities, each (N,) float32: ``keys`` (key weights), ``prior`` (answer-type prior),
        ``values`` (candidate scores from the layout rule, after the type prior), ``chain`` (evidence-chain score of
        each key), ``headers`` (table headers of the best candidates) and ``scores`` (the final ``box_scores``).
        The learned scorer (``arr_coc.reading.matching.learned``) reads them as features."""
        n = len(boxes)
        zeros = np.zeros(n, dtype=np.float32)
        parts = {k: zeros.copy() for k in ("keys", "prior", "values", "chain", "headers", "scores")}
        if n == 0:
            return parts
        kc = self.config.keys
        found: dict[str, np.ndarray] = {}
        keys = self.key_weights(boxes, query, found)  # (N,)
        parts.update(found)  # "lex", "sim" when computed (the learned scorer's features)
        if len(extra_keys):
            keys[np.asarray(extra_keys, dtype=np.int64)] = 1.0
        prior = self.type_prior(boxes, query)  # (N,)
        parts["keys"], parts["prior"] = keys, prior
        if not keys.any():
            parts["scores"] = self._nothing_named(prior)
            return parts
        if self.layout:
            # (N,) candidates, (K,) key indices, (K, N) what each key gave
            cfg = self.config.layout
            neighbours = self.page_cached("neighbours", boxes, lambda: Neighbours(boxes, cfg))
            values, givers, contrib = propagate(boxes, keys, cfg, contributions=True, neighbours=neighbours)
            layout = layout if layout is not None else self.layout_of(boxes)
            row = {int(i): r for r, i in enumerate(givers)}
            for i, j in continuations(layout, givers):
                contrib[row[i], j] += keys[i] * self.config.layout.below_gain
            values = np.maximum(values, contrib.sum(0).clip(max=float(keys.max())))
        else:
            givers = np.zeros(0, dtype=np.int64)
            values, contrib = np.zeros(n, dtype=np.float32), np.zeros((0, n), dtype=np.float32)
        if prior.any():
            # the question asks for a kind of value: candidates of that kind rank first, the rest are damped
            values = np.where(prior > 0, prior + (1.0 - prior) * values, kc.off_type_damp * values)
        inline = inline_values([b.text for b in boxes], query) if foreign_words(query) else None
        if inline is not None and inline.any():  # a box holding the quoted text and what follows it: the answer
            values = np.where(inline > 0, np.float32(1.0), np.float32(INLINE_OTHERS) * values)
        scores = np.maximum.reduce([values, kc.key_score * keys, np.full(n, kc.other_text, dtype=np.float32)])
        chain = self._chain(contrib, values)
        scores[givers] = np.maximum(scores[givers], chain)
        parts["chain"][givers] = chain
        if self.layout and layout is not None and layout.tables:
            parts["headers"] = self._headers(layout, values).astype(np.float32)
            scores = np.maximum(scores, parts["headers"])
        parts["values"] = np.asarray(values, dtype=np.float32)
        parts["scores"] = np.clip(scores, 0.0, 1.0).astype(np.float32)
        return parts

    def _headers(self, layout: Layout, values: np.ndarray) -> np.ndarray:
        """(N,) a table cell's row and column headers (``Layout.headers_of``) score ``keys.link`` times the cell's
        candidate score, for the cells within ``keys.header_top`` of the best candidate: the answer is read with
        the row and column that name it."""
        kc = self.config.keys
        out = np.zeros_like(values)
        top = float(values.max()) if values.size else 0.0
        if top <= 0:
            return out
        for j in np.flatnonzero(values >= kc.header_top * top):
            for h in layout.headers_of(int(j)):
                out[h] = max(out[h], kc.link * float(values[j]))
        return out

    def _nothing_named(self, prior: np.ndarray) -> np.ndarray:
        """(N,) scores when the question names no box: all text is a candidate (``keys.no_match_text``), values of
        the asked-for type a little more so (``keys.no_match_type_lift``)."""
        kc = self.config.keys
        lifted = kc.no_match_text + kc.no_match_type_lift * (1.0 - kc.no_match_text)
        return np.where(prior > 0, lifted, kc.no_match_text).astype(np.float32)

    def _chain(self, contrib: np.ndarray, values: np.ndarray) -> np.ndarray:
        """(K,) the evidence chain: each key scores at least ``keys.link`` times the best candidate it points to,
        times its share in that candidate (its contribution over the largest one), so a value is kept with the key
        that makes it the answer ("Amount due:" with "$18,324.18"; a table cell's row and column headers).

        Args:
            contrib: (K keys, N targets) what each key gave each box (``propagate(..., contributions=True)``).
            values: (N,) candidate scores.
        """
        top = contrib.max(0, initial=0.0)  # (N,) the strongest contribution each box received
        share = np.divide(contrib, top, out=np.zeros_like(contrib), where=top > 0)  # (K, N)
        return (self.config.keys.link * share * values[None, :]).max(1, initial=0.0).astype(np.float32)

    # -- painting ------------------------------------------------------------------------------------------------

    def relevance(
        self,
        boxes: Sequence[TextBox],
        query: str | None,
        rows: int,
        cols: int,
        original_size: tuple[int, int],
    ) -> np.ndarray:
        """Relevance of each visual token for ``query``, from the recognised text.

        Args:
            boxes: Recognised text (``TextReader.read``), in original pixels.
            query: The question; may be empty (all text then scores ``keys.no_match_text``).
            rows: Grid rows.
            cols: Grid columns.
            original_size: ``(width, height)`` of the original image, as PIL's ``Image.size``.

        Returns:
            ``(rows, cols)`` float32 map in [0, 1]: high on the text the query refers to and on where its answer
            should sit, ``keys.other_text`` on other text, 0 where there is no text.
        """
        return self.relevance_and_evidence(boxes, query, rows, cols, original_size)[0]

    def units(self, boxes: Sequence[TextBox], rows: int, cols: int, original_size: tuple[int, int]) -> WordUnits:
        """The cells of each recognised word (``arr_coc.reading.matching.propagation.word_units``), for a selection
        that keeps words whole (``arr_coc.attending.select``); empty when ``layout.whole_words`` is off. They depend
        on the page only: computed once per page and grid (``page_cached``) as read-only ``WordUnits``, whose
        selection tables are then built once per budget for every question on the page."""
        if not self.config.layout.whole_words:
            return WordUnits(())
        pad = self.config.layout.word_pad
        return self.page_cached(
            f"units {rows} {cols} {tuple(original_size)}",
            boxes,
            lambda: WordUnits(
                word_units(core_boxes(boxes) if tight_prose(boxes) else boxes, rows, cols, original_size, pad)
            ),
        )

    def evidence(self, boxes: Sequence[TextBox], query: str, layout: Layout | None = None) -> Evidence | None:
        """The structural evidence the query needs (``arr_coc.reading.layout.structural_query.Evidence``), or None
        (``layout``: the page's ``layout_of(boxes)`` when the caller has it)."""
        if not self.query_parsing or not boxes or not query:
            return None
        sq = parse(self.clip(query))
        if sq.rule is None:
            return None
        return resolve(layout if layout is not None else self.layout_of(boxes), sq)

    def table_cell(self, boxes: Sequence[TextBox], query: str) -> Evidence | None:
        """``Evidence(rule="table-cell")`` when the question names a table cell by its column and row ("What is the
        <header> for <label>?") and the page has a box on the label's line under the header's column
        (``arr_coc.reading.matching.crossing``); None otherwise or with ``structure.table_cells`` off. Applied after
        the scores (rules or learned), so the scorer's own inputs do not change."""
        if not (self.query_parsing and self.config.structure.table_cells and boxes and query):
            return None
        splits = split_cell_query(self.clip(query))
        if not splits and not foreign_words(query):  # another wording of a cell question ("For 1985, ... under X?")
            splits = loose_cell_splits(self.clip(query))
        lay = self.config.layout
        found = None
        if splits:
            found = cross_cells(boxes, splits, lambda p: self.lexical_scores(boxes, p), lay.same_line, lay.column_pad)
        if found is None and not foreign_words(query):  # the row and column named by meaning (``table_meaning``)
            found = meaning_cell(
                boxes, self.clip(query), lambda p: self.lexical_scores(boxes, p), lay.same_line, lay.column_pad
            )
        return found

    def relevance_and_evidence(
        self,
        boxes: list[TextBox],
        query: str,
        rows: int,
        cols: int,
        original_size: tuple[int, int],
    ) -> tuple[np.ndarray, Evidence | None]:
        """``relevance`` and the structural ``Evidence`` behind it (None for an ordinary key question).

        The budget rule: when the question refers to the page's structure, the evidence regions (the whole structure
        a comparison or count needs, or the span after a phrase) score 1 (or their ``Evidence.weights``: a
        comparison keeps what it asks for first) and every other box is damped by
        ``evidence_damp``, so the evidence is kept before anything else; ``Evidence.rule`` names the rule that fired.
        """
        if self.scorer is not None:
            layout = self.layout_of(boxes) if boxes else None
            ev = self.evidence(boxes, query or "", layout)
            route = getattr(self.scorer, "route", None)  # routed.py: the rules where their layout relation is exact
            if route is not None and route(self, boxes, query or "", ev) == "rules":
                scores = self.box_scores(boxes, query or "", ev.keys if ev is not None else (), layout)
            else:
                feats = box_features(self, boxes, query or "", layout, ev, original_size)  # (N, F)
                scores = self.scorer.box_scores(self.scorer.own_columns(feats))
        else:
            layout = self.layout_of(boxes) if boxes and (self.layout or self.query_parsing) else None
            ev = self.evidence(boxes, query or "", layout)
            scores = self.box_scores(boxes, query or "", extra_keys=ev.keys if ev is not None else (), layout=layout)
        if ev is None:
            ev = self.table_cell(boxes, query or "")
        key = f"painter {rows} {cols} {tuple(original_size)}"
        out = self.page_cached(key, boxes, lambda: CellPainter(boxes, rows, cols, original_size)).paint(scores)
        if ev is not None and ev.regions:
            regions = ink_regions([TextBox("", r) for r in ev.regions], boxes, ev.rule)  # tight lines: ink (scan_rows)
            ev_map = paint_boxes(regions, ev.weights or [1.0] * len(regions), rows, cols, original_size)
            out = np.where(ev_map > 0, ev_map, self.evidence_damp * out).astype(np.float32)
        return out, ev
