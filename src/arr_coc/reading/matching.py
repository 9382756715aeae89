"""``QueryMatcher``: scores recognised text for a query (lexical + semantic keys, answer-type prior, the layout rule
that propagates key scores to where answers sit) and paints the result onto the token grid."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..structural_query import Evidence, parse, resolve
from ..structure import analyse, flat_layout
from .layout import _Geometry, _shape, paint_boxes
from .lexical import (
    MAX_QUERY_CHARS,
    _answer_types,
    _content_tokens_of_box,
    _has_type,
    _query_terms,
    _token_sim,
    _tokens,
)
from .ocr import TextBox
from .semantic import _digit_share, _MiniLM


class QueryMatcher:
    """Scores recognised text for a query and paints where the query's answer should be.

    1. Keys: which boxes the question names (``key_weights``).

       * lexical: the query's content tokens (stop words dropped; question words such as "value", "column", "chart"
         kept at weight 0.15; terms frequent on the page weigh less) are compared to the box's tokens after
         normalisation (case, punctuation, thousands separators and trailing zeros of numbers, common abbreviations
         such as No -> number, Qty -> quantity, PO -> purchase order, light stemming) with fuzzy similarity (edit
         distance <= 2 on words of 4+ letters, prefix/substring containment; numbers only match exactly, modulo
         O/0 and l/1 OCR slips). With R = how much of the query the box covers and P = how much of the box the
         query covers, the score is ``max((R + P) / 2, 0.75 R)``. Keys are the boxes scoring at least half the
         best, weighted ``(score / best) ** sharpness``.
       * semantic: MiniLM cosine similarity of question and box text; boxes within ``semantic_band`` of the page's
         best are keys, weighted linearly and by how convincing the best is (``semantic_scores``). Halved when a
         strong lexical match exists, so the question's own words win.

    2. Layout rule (``layout=True``): each key's weight is propagated to where answers sit: same line to its right
       (1.0, decaying slowly with order so a table row is covered), below it in the same column (0.85, decaying; a
       table column, a value under its label), above it (0.7; a chart bar's value label above its axis label) and to
       its left (0.5). Propagation from long sentence-like keys to the right/left is damped (multi-column pages), and
       so is propagation to *siblings* of the key (same character shape, "Q3" -> "Q4", or both "Label:"), which are
       the next item of a list rather than its value. Contributions add up, so the table cell in the key row AND the
       key column ranks first.
    3. Answer type: "when" asks for a date, "how much" for money, "how many" for a count (``type_prior``). Boxes of
       that type get at least ``type_prior_score`` (0.4) plus their layout score; other candidates are damped.
    4. Final box score = max(candidate score, 0.85 * key weight, ``other_text`` (0.15)); when no key is found (or the
       query is empty) all text gets ``no_match_text`` (0.5) and values of the asked-for type 0.75. Boxes are then
       painted onto the grid (``paint_boxes``); cells without text are 0.
    5. Structure (``query_parsing=True``): a question about the page's structure (title, the word after a quoted
       phrase, the last word of a named section, the n-th section of a column, a chart's extremes, "the third month")
       is parsed (``arr_coc.structural_query``) and resolved on the page's layout (``arr_coc.structure``); the
       evidence it needs paints 1 and everything else is damped by ``evidence_damp`` (the budget rule), and an implied
       label ("Mar") becomes a key for the layout rule. ``relevance_and_evidence`` also returns which rule fired.

    Queries longer than ``MAX_QUERY_CHARS`` (512) characters are truncated to that length before matching; at most
    ``MAX_QUERY_TOKENS`` (48) content tokens are used lexically and the embedding sees at most 128 word pieces.

    Args:
        lexical: Use lexical matching.
        semantic: Use MiniLM semantic matching (loads the model lazily on first use).
        layout: Propagate key scores to answer candidates; off, only the matched text itself is high.
        model_path: Directory of a sentence-transformers MiniLM checkpoint (default: the bundled one).
        other_text: Score of text that is neither key nor answer candidate once a key is found.
        no_match_text: Score of all text when the query matches nothing.
        min_match: Best match below this counts as "no match".
        semantic_weight: Weight of the semantic score against the lexical one (lexical hits win ties).
        semantic_floor: Best-match cosine similarity at which semantic keys start to count.
        semantic_ceiling: Best-match cosine similarity at which semantic keys count fully.
        semantic_band: Boxes within this cosine distance of the page's best semantic match are semantic keys.
        sharpness: Exponent turning relative match into key weight.
        type_prior_score: Score of boxes holding a value of the type the question asks for (dates for "when",
            amounts for "how much", counts for "how many"), see ``type_prior``.
        structure: Layout analysis of the boxes (``arr_coc.structure``: reading order, columns, sections, title);
            off, structural questions are resolved on the boxes in OCR order, each its own line (ablation).
        query_parsing: Parse structural references in the question (``arr_coc.structural_query``) and keep their
            evidence first (the budget rule); off, the question is matched by its words only.
        evidence_damp: Factor on every other box's score when structural evidence was found, so the evidence
            ranks first.
    """

    def __init__(
        self,
        lexical: bool = True,
        semantic: bool = True,
        layout: bool = True,
        model_path: str | None = None,
        other_text: float = 0.15,
        no_match_text: float = 0.5,
        min_match: float = 0.3,
        semantic_weight: float = 0.9,
        semantic_floor: float = 0.25,
        semantic_ceiling: float = 0.5,
        semantic_band: float = 0.12,
        sharpness: float = 3.0,
        type_prior_score: float = 0.4,
        structure: bool = True,
        query_parsing: bool = True,
        evidence_damp: float = 0.8,
    ) -> None:
        if not 0.0 <= other_text <= 1.0 or not 0.0 <= no_match_text <= 1.0:
            raise ValueError("other_text and no_match_text must be in [0, 1]")
        if semantic_ceiling <= semantic_floor:
            raise ValueError(f"semantic_ceiling ({semantic_ceiling}) must exceed semantic_floor ({semantic_floor})")
        self.lexical = bool(lexical)
        self.semantic = bool(semantic)
        self.layout = bool(layout)
        self.other_text = float(other_text)
        self.no_match_text = float(no_match_text)
        self.min_match = float(min_match)
        self.semantic_weight = float(semantic_weight)
        self.semantic_floor = float(semantic_floor)
        self.semantic_ceiling = float(semantic_ceiling)
        self.semantic_band = float(semantic_band)
        self.sharpness = float(sharpness)
        self.type_prior_score = float(type_prior_score)
        self.structure = bool(structure)
        self.query_parsing = bool(query_parsing)
        self.evidence_damp = float(evidence_damp)
        self._embedder = _MiniLM(model_path) if model_path is not None else None

    def warmup(self) -> None:
        """Load the MiniLM model now (a few seconds, mostly importing transformers) instead of on the first query.

        A no-op when ``semantic`` is off.
        """
        if self.semantic:
            (self._embedder or _MiniLM.shared()).embed(["warm up"])

    # -- scoring -------------------------------------------------------------------------------------------------

    def lexical_scores(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) lexical match of each box to ``query`` in [0, 1]."""
        n = len(boxes)
        out = np.zeros(n, dtype=np.float32)
        terms = _query_terms(query[:MAX_QUERY_CHARS])
        if not terms or n == 0:
            return out
        box_tokens = [_content_tokens_of_box(b.text) for b in boxes]
        # page frequency of each query term -> rarer terms weigh more (a term on every row does not locate a row)
        sims_per_box: list[np.ndarray] = []
        for toks in box_tokens:
            if not toks:
                sims_per_box.append(np.zeros((len(terms), 0), dtype=np.float32))
                continue
            sims_per_box.append(np.array([[_token_sim(q, t) for t in toks] for q, _ in terms], dtype=np.float32))
        df = np.array(
            [sum(1 for s in sims_per_box if s.shape[1] and s[i].max() >= 0.7) for i in range(len(terms))],
            dtype=np.float32,
        )
        weights = np.array([w for _, w in terms], dtype=np.float32) / np.sqrt(np.maximum(df, 1.0))
        wsum = float(weights.sum())
        for i, sims in enumerate(sims_per_box):
            if sims.shape[1] == 0 or sims.max() <= 0:
                continue
            recall = float((weights * sims.max(axis=1)).sum() / wsum)
            # how much of the box the query accounts for; a meta-word hit ("value") counts at its weight
            term_w = np.array([w for _, w in terms], dtype=np.float32)[:, None]
            precision = float((sims * term_w).max(axis=0).mean())
            # a label fully named by the query scores high; so does a sentence that contains the query's words
            out[i] = max(0.5 * recall + 0.5 * precision, 0.75 * recall)
        return np.clip(out, 0.0, 1.0)

    def semantic_similarities(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) raw MiniLM cosine similarity of each box text to ``query`` (mostly-digit boxes lowered by 0.15:
        they are values, not keys)."""
        n = len(boxes)
        query = query[:MAX_QUERY_CHARS].strip()
        if n == 0 or not query:
            return np.zeros(n, dtype=np.float32)
        embedder = self._embedder or _MiniLM.shared()
        texts = [b.text for b in boxes]
        vecs = embedder.embed([query, *texts])
        cos = vecs[1:] @ vecs[0]
        digit_share = np.array([_digit_share(t) for t in texts], dtype=np.float32)
        return np.where(digit_share > 0.5, cos - 0.15, cos).astype(np.float32)

    def semantic_scores(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) semantic key score in [0, 1].

        MiniLM similarities of a question to short labels fall in a narrow band (the right label typically scores
        0.4-0.55, the runner-up within a few hundredths), so the score is relative to the page's best match: boxes
        within ``semantic_band`` of the best get a linear share, scaled by how convincing the best match is
        (``(best - semantic_floor) / (semantic_ceiling - semantic_floor)``, clipped to [0, 1]).
        """
        cos = self.semantic_similarities(boxes, query)
        if cos.size == 0:
            return cos
        best = float(cos.max())
        conf = float(np.clip((best - self.semantic_floor) / (self.semantic_ceiling - self.semantic_floor), 0.0, 1.0))
        if conf <= 0.0:
            return np.zeros_like(cos)
        rel = np.clip((cos - (best - self.semantic_band)) / self.semantic_band, 0.0, 1.0)
        return (conf * rel).astype(np.float32)

    def match_scores(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) how strongly the query refers to each box: max of lexical and weighted semantic score."""
        n = len(boxes)
        m = np.zeros(n, dtype=np.float32)
        if n == 0 or not query or not query.strip():
            return m
        if self.lexical:
            m = np.maximum(m, self.lexical_scores(boxes, query))
        if self.semantic:
            m = np.maximum(m, self.semantic_weight * self.semantic_scores(boxes, query))
        return m

    def type_prior(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) weak prior for boxes whose text has the value type the question asks for (0 when untyped).

        "When ...?" makes every date on the page a candidate, "How much ...?" every amount of money, "How many ...?"
        every bare count; the prior (``type_prior_score``) sits above other text and below matched keys and
        their layout candidates. Off when ``layout`` is off (it is part of the answer-placement rule).
        """
        n = len(boxes)
        out = np.zeros(n, dtype=np.float32)
        if not self.layout or n == 0 or not query:
            return out
        kinds = _answer_types(query[:MAX_QUERY_CHARS])
        for i, b in enumerate(boxes):
            if any(_has_type(b.text, k) for k in kinds):
                out[i] = self.type_prior_score
        return out

    def key_weights(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) soft key selection: which boxes the query names, 0 when nothing matches well enough.

        Lexical keys are the boxes whose lexical score is at least half the page's best, weighted
        ``(score / best) ** sharpness`` and scaled down when the best is below 0.5. Semantic keys
        (``semantic_scores``) are already relative; they weigh ``semantic_weight``, halved when a strong lexical match
        (>= 0.6) exists, since then the question's own words locate the key.
        """
        n = len(boxes)
        keys = np.zeros(n, dtype=np.float32)
        if n == 0 or not query or not query.strip():
            return keys
        lex_best = 0.0
        if self.lexical:
            lex = self.lexical_scores(boxes, query)
            lex_best = float(lex.max())
            if lex_best >= self.min_match:
                rel = lex / lex_best
                keys = np.where(rel >= 0.5, rel**self.sharpness, 0.0) * min(1.0, lex_best / 0.5)
        if self.semantic:
            w = self.semantic_weight * (0.5 if lex_best >= 0.6 else 1.0)
            sem = w * self.semantic_scores(boxes, query)
            keys = np.maximum(keys, np.where(sem >= 0.5 * self.min_match, sem, 0.0))
        return keys.astype(np.float32)

    def box_scores(self, boxes: Sequence[TextBox], query: str, extra_keys: Sequence[int] = ()) -> np.ndarray:
        """(N,) final per-box relevance in [0, 1] (key, answer candidates, other text).

        ``extra_keys``: indices of boxes that are keys whatever the query's words say (an implied label found by
        ``arr_coc.structural_query``, e.g. "Mar" for "the third month").
        """
        n = len(boxes)
        if n == 0:
            return np.zeros(0, dtype=np.float32)
        keys = self.key_weights(boxes, query)
        if len(extra_keys):
            keys[np.asarray(extra_keys, dtype=np.int64)] = 1.0
        prior = self.type_prior(boxes, query)
        if not keys.any():
            # nothing named: all text is a candidate, values of the asked-for type a little more so
            base = np.full(n, self.no_match_text, dtype=np.float32)
            return np.where(prior > 0, self.no_match_text + 0.5 * (1.0 - self.no_match_text), base).astype(np.float32)
        values = self._propagate(boxes, keys) if self.layout else np.zeros(n, dtype=np.float32)
        if prior.any():
            # the question asks for a kind of value: candidates of that kind rank first, the rest are damped
            values = np.where(prior > 0, prior + (1.0 - prior) * values, 0.6 * values)
        scores = np.maximum.reduce([values, 0.85 * keys, np.full(n, self.other_text, dtype=np.float32)])
        return np.clip(scores, 0.0, 1.0).astype(np.float32)

    def _propagate(self, boxes: Sequence[TextBox], keys: np.ndarray) -> np.ndarray:
        """Layout rule: spread key weights to where answers sit; additive, then scaled to the strongest key."""
        g = _Geometry.of(boxes)
        n = len(boxes)
        acc = np.zeros(n, dtype=np.float64)
        n_tokens = np.array([len(_tokens(b.text)) for b in boxes])
        shapes = np.array([_shape(b.text) for b in boxes], dtype=object)
        colon = np.array([sh.endswith(":") for sh in shapes], dtype=bool)
        for i in np.flatnonzero(keys > 0):
            # siblings (same shape as the key: the next axis label, the next header, the next "Label:") are not its
            # answer; they keep a small share so a row of headers still reads as a row
            sib = (shapes == shapes[i]) | (colon & colon[i])
            h_w = np.where(sib, 0.3, 1.0)
            v_w = np.where(sib, 0.5, 1.0)
            k = float(keys[i])
            hi = g.h[i]
            # same line: vertical overlap at least half the smaller height
            v_overlap = np.minimum(g.y1, g.y1[i]) - np.maximum(g.y0, g.y0[i])
            same_line = v_overlap >= 0.5 * np.minimum(g.h, hi)
            same_line[i] = False
            # same column: horizontal overlap with the key widened by half its height (centred labels, numbers)
            pad = 0.5 * hi
            h_overlap = np.minimum(g.x1, g.x1[i] + pad) - np.maximum(g.x0, g.x0[i] - pad)
            same_col = (h_overlap > 0) & ~same_line
            same_col[i] = False
            damp = 0.3 if n_tokens[i] > 6 else 1.0  # sentences: their right neighbour is another column's text
            right = np.flatnonzero(same_line & (g.cx > g.cx[i]))
            right = right[np.argsort(g.x0[right])]
            for r, j in enumerate(right):
                acc[j] += k * damp * h_w[j] * 0.95**r
            left = np.flatnonzero(same_line & (g.cx < g.cx[i]))
            left = left[np.argsort(-g.x1[left])]
            for r, j in enumerate(left[:4]):
                acc[j] += k * damp * h_w[j] * 0.5 * 0.9**r
            below = np.flatnonzero(same_col & (g.cy > g.cy[i]))
            below = below[np.argsort(g.y0[below])]
            for r, j in enumerate(below[:15]):
                acc[j] += k * v_w[j] * 0.85 * 0.9**r
            above = np.flatnonzero(same_col & (g.cy < g.cy[i]))
            above = above[np.argsort(-g.y1[above])]
            for r, j in enumerate(above[:4]):
                acc[j] += k * v_w[j] * 0.7 * 0.8**r
        top = acc.max() if n else 0.0
        if top <= 0:
            return np.zeros(n, dtype=np.float32)
        return (acc / top * float(keys.max())).astype(np.float32)

    # -- painting ------------------------------------------------------------------------------------------------

    def relevance(
        self,
        boxes: list[TextBox],
        query: str,
        rows: int,
        cols: int,
        original_size: tuple[int, int],
    ) -> np.ndarray:
        """Relevance of each visual token for ``query``, from the recognised text.

        Args:
            boxes: Recognised text (``TextReader.read``), in original pixels.
            query: The question; may be empty (all text then scores ``no_match_text``).
            rows: Grid rows.
            cols: Grid columns.
            original_size: ``(width, height)`` of the original image, as PIL's ``Image.size``.

        Returns:
            ``(rows, cols)`` float32 map in [0, 1]: high on the text the query refers to and on where its answer
            should sit, ``other_text`` on other text, 0 where there is no text.
        """
        return self.relevance_and_evidence(boxes, query, rows, cols, original_size)[0]

    def evidence(self, boxes: Sequence[TextBox], query: str) -> Evidence | None:
        """The structural evidence the query needs (``arr_coc.structural_query.Evidence``), or None."""
        if not self.query_parsing or not boxes or not query:
            return None
        sq = parse(query[:MAX_QUERY_CHARS])
        if sq.rule is None:
            return None
        layout = analyse(boxes) if self.structure else flat_layout(boxes)
        return resolve(layout, sq)

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
        a comparison or count needs, or the span after a phrase) score 1 and every other box is damped by
        ``evidence_damp``, so the evidence is kept before anything else; ``Evidence.rule`` names the rule that fired.
        """
        ev = self.evidence(boxes, query or "")
        scores = self.box_scores(boxes, query or "", extra_keys=ev.keys if ev is not None else ())
        out = paint_boxes(boxes, scores, rows, cols, original_size)
        if ev is not None and ev.regions:
            regions = [TextBox("", r) for r in ev.regions]
            ev_map = paint_boxes(regions, [1.0] * len(regions), rows, cols, original_size)
            out = np.where(ev_map > 0, ev_map, self.evidence_damp * out).astype(np.float32)
        return out, ev
