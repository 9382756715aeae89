"""The vLLM plugin's document budget: ``{"arr_coc": {"budget": 0.01, "budget_scope": "prompt"}}`` spends ONE budget
over all the request's images (a document's pages), as ``compress(..., budget_scope="prompt")`` does
(:func:`arr_coc.integrations.document_budget.split_prompt`: the split of :func:`arr_coc.allocate_pages`).

Three things make it safe in vLLM:

* the split depends on every image of the request, so each image's cache key (vLLM's processor cache and encoder
  cache hash an item with ``mm_processor_kwargs``) also holds a digest of all the request's images
  (:func:`document_key`): an image is never reused from another document's split;
* the processor cache serves a request's images all or none (:class:`AllOrNone`): after an eviction that left some
  of them cached, all are processed again (each image's decision is deterministic under its key, so the ones still
  cached are identical);
* every image keeps at least ONE token (its most relevant): vLLM's processor requires one placeholder range per
  image item (``_validate_mm_placeholders``: "Expected there to be 3 prompt placeholders corresponding to 3 image
  items, but instead found 2"), so an image cannot keep zero placeholders as it can under ``compress``. That one
  token is taken from the request's total, which stays the requested budget (the floor of
  ``allocate_pages(floor=1)``); a budget below the number of images is refused with one clear line
  (HTTP 400), and the engine goes on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import torch


def document_key(hashes: Sequence[str]) -> str:
    """A digest of a request's images (their vLLM item hashes, in prompt order): what makes each image's cache key
    depend on the whole document."""
    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()[:32]


class AllOrNone:
    """vLLM's processor cache as a prompt-scope request sees it: its images hit all together or not at all.

    Every other call goes to the cache itself; after a partial hit, every image is processed again and offered to
    the cache, which keeps the copies it holds (identical: same key, same deterministic decision).
    """

    def __init__(self, cache: Any) -> None:
        self._cache = cache

    def is_cached(self, mm_hashes: list[str]) -> list[bool]:
        hits = list(self._cache.is_cached(mm_hashes))
        return hits if all(hits) or not any(hits) else [False] * len(hits)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cache, name)


def whole_document(processor: Any, inputs: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A prompt-scope request's processor inputs and ``mm_processor_kwargs``: the digest of all its images joins the
    options (each image's cache key), and the processor cache serves its images all or none (:class:`AllOrNone`)."""
    from dataclasses import replace

    from .options import DOCUMENT, KEY

    hashes = processor._get_mm_hashes(replace(inputs, hf_processor_mm_kwargs=kwargs))
    kwargs = {**kwargs, KEY: {**dict(kwargs[KEY]), DOCUMENT: document_key(hashes.get("image", []))}}
    if inputs.cache is not None:
        inputs = replace(inputs, cache=AllOrNone(inputs.cache))
    return inputs, kwargs


def split_request(decision: Any, questions: Sequence[str | None], budget: Any, realizer: Any) -> list[torch.Tensor]:
    """Each image's kept indices for ONE ``budget`` over the request's images, from ``Realizer.decide``'s scorings
    (their scores, word units, text prior, OCR words): :func:`~arr_coc.integrations.document_budget.split_prompt`.

    Returns:
        per image, torch.LongTensor of shape (k_i,) on the CPU (k_i >= 1); sum k_i = the budget resolved over all
        the request's tokens.

    Raises:
        ArrCocOptionError: the budget comes to fewer tokens than the request has images.
    """
    from arr_coc.attending import TokenBudget
    from arr_coc.integrations.document_budget import split_prompt

    from .options import ArrCocOptionError

    scorings = [d.scoring for d in decision.items]
    query = next((q for q in questions if q), None)
    scores = [s.scores.detach().float().flatten().cpu() for s in scorings]
    keeps = split_prompt(scores, TokenBudget.parse(budget), query, scorings, realizer, min_tokens=1)
    if any(k.numel() == 0 for k in keeps):
        raise ArrCocOptionError(
            f"arr_coc: budget_scope 'prompt' keeps at least one token per image in vLLM, but the budget {budget!r} "
            f"comes to {sum(int(k.numel()) for k in keeps)} tokens for {len(keeps)} images; ask for at least "
            f"{len(keeps)} tokens"
        )
    return [k.long().cpu() for k in keeps]
