"""Matching: how much each recognised box matters for a question, painted onto the visual-token grid.

    lexical.py      normalised tokens, fuzzy token similarity, per-box lexical score, answer types
                    (``answer_types``, ``has_type``, ``VALUE_PATTERNS``)
    semantic.py     ``MiniLMEmbedder`` (all-MiniLM-L6-v2: weights loaded with ``transformers``, the forward as plain
                    torch calls, ``BertEncoder``, bit-identical), per-box semantic score
    propagation.py  the layout rule (``propagate``: a key's weight to where its answer sits), ``paint_boxes`` (per-box
                    scores -> ``rows x cols`` grid), ``word_units`` (each word's cells, kept whole)
    matcher.py      ``QueryMatcher``: keys, answer-type prior, the layout rule, evidence chain, structural evidence,
                    final per-box scores and the painted map (the rules; or a ``BoxScorer`` over their quantities)
    learned.py      the learned scorer: ``box_features`` (63 features a box, ``FEATURE_GROUPS``) read from a
                    ``RuleQuantities`` (the matcher), ``BoxScorer`` (an ``nn.Module``)
    host_forward.py ``BoxScorer.box_scores`` in numpy on the calling thread (no wait on torch's intra-op pool)

Imports go one way: ``matcher`` -> ``learned`` -> ``lexical`` / ``semantic``; ``learned`` reads the matcher through the
``RuleQuantities`` protocol, never by importing it. Depends on ``arr_coc.reading.ocr`` (``TextBox``) and
``arr_coc.reading.layout``.
"""

from .learned import FEATURE_GROUPS, FEATURES, BoxScorer, RuleQuantities, box_features
from .lexical import MAX_QUERY_CHARS, MAX_QUERY_TOKENS, VALUE_PATTERNS, answer_types, has_type, lexical_scores, tokens
from .matcher import QueryMatcher, continuations
from .propagation import paint_boxes, propagate, word_units
from .semantic import EMBED_MAX_TOKENS, MiniLMEmbedder

__all__ = [
    "EMBED_MAX_TOKENS",
    "FEATURES",
    "FEATURE_GROUPS",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TOKENS",
    "VALUE_PATTERNS",
    "BoxScorer",
    "MiniLMEmbedder",
    "QueryMatcher",
    "RuleQuantities",
    "answer_types",
    "box_features",
    "continuations",
    "has_type",
    "lexical_scores",
    "paint_boxes",
    "propagate",
    "tokens",
    "word_units",
]
