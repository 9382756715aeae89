"""Semantic key matching: the page's printed key that a reworded English question asks about, found by the MiniLM.

A question in another writer's words names no printed key ("Where is their office?" for "Address:", "How much was
charged in total?" for "Amount due"): its words match no box, the English lexicon (``paraphrase_en``) knows only the
concepts it lists, and the MiniLM's similarity of the question to a bare label is weak and noisy (a question and a
two-word label are texts of different kinds: the best box is as often a value or a line of running text).

Here each key-like box of the page (``key_like``: a short label of words, at most ``SemanticConfig.key_words``) is
read as the question that asks for it, ``KEY_TEMPLATE`` ("What is the address?"), and compared with the question:
question to question is what the MiniLM was trained on. The best such key counts as a key (``SemanticConfig.
key_weight``) when it is convincing: its similarity at least ``key_min_sim`` and ahead of every other printed label
by ``key_margin``. The layout rule then lifts the boxes right of and below it, as for any key.

``QueryMatcher.key_weights`` asks for it only for an English question whose own words (and the lexicon's keys) name
no key strongly (best lexical score under ``semantic.lexical_strong``) and only when ``key_weight`` > 0; with semantic
matching off nothing changes. The labels' question texts go through the embedder's per-text cache, so a second
question about a page embeds only the question itself.

**Off by default** (``key_weight`` 0): measured on realdocs-dev's development paraphrases (styles A, B, C, 1035
questions; results/weak_spots.md, "Semantic keys"), it lowers recall at every threshold tried. The MiniLM finds the
printed key among a form's labels for 53-60% of questions (the bare label: 45-54%), and a receipt's issuer and date,
which print no key, lose to labels such as "Cashier" or "Tax Invoice". Kept as a measured, switchable experiment.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from ..config import SemanticConfig

KEY_TEMPLATE = "What is the {}?"  # a printed label read as the question that asks for it
KEY_ALPHA = 0.6  # a key-like box: at least this share of its letters and digits are letters


@functools.lru_cache(maxsize=65536)
def key_text(text: str, max_words: int) -> str | None:
    """The label ``text`` read as a question (``KEY_TEMPLATE``), or None when ``text`` is not key-like: 1 to
    ``max_words`` words, mostly letters (a value, a date or an amount is not a key). A trailing colon is dropped.

    Example:
        >>> key_text("Address:", 6), key_text("9/ 3/ 92", 6), key_text("a long line of running text here now", 6)
        ('What is the Address?', None, None)
    """
    label = text.strip().rstrip(":").strip()
    words = label.split()
    chars = [c for c in label if c.isalnum()]
    if not 1 <= len(words) <= max_words or not chars or sum(c.isalpha() for c in chars) < KEY_ALPHA * len(chars):
        return None
    return KEY_TEMPLATE.format(label)


def key_similarities(embedder, texts: Sequence[str], query: str, cfg: SemanticConfig) -> np.ndarray:
    """(N,) cosine similarity of ``query`` to each key-like text read as a question (``key_text``); -1 for the
    others (N = len(texts))."""
    out = np.full(len(texts), -1.0, dtype=np.float32)
    asked = [key_text(t, cfg.key_words) for t in texts]
    idx = [i for i, a in enumerate(asked) if a is not None]
    if not idx or not query.strip():
        return out
    vecs = embedder.embed([query, *(asked[i] for i in idx)])  # (1 + K, 384) unit vectors
    out[idx] = vecs[1:] @ vecs[0]
    return out


def semantic_keys(texts: Sequence[str], sims: np.ndarray, cfg: SemanticConfig) -> np.ndarray:
    """(N,) key weight from ``key_similarities``: ``cfg.key_weight`` on the boxes of the best label (every box
    printing it) when its similarity is at least ``cfg.key_min_sim`` and exceeds every other label's by
    ``cfg.key_margin``; 0 elsewhere (and everywhere when no label convinces).

    Example:
        >>> cfg = SemanticConfig(key_weight=0.9)
        >>> [round(v, 2) for v in semantic_keys(["Address:", "Date:", "x"], np.array([0.7, 0.3, -1.0]), cfg).tolist()]
        [0.9, 0.0, 0.0]
    """
    out = np.zeros(len(texts), dtype=np.float32)
    if sims.size == 0 or float(sims.max()) < cfg.key_min_sim:
        return out
    label = [t.strip().rstrip(":").strip().lower() for t in texts]
    best = int(np.argmax(sims))
    same = np.array([lab == label[best] for lab in label])  # (N,) the best label, wherever it is printed
    others = sims[~same]
    if others.size and float(sims[best] - others.max()) < cfg.key_margin:
        return out
    out[same & (sims >= 0)] = cfg.key_weight
    return out
