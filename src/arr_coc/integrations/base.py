"""Family-independent pieces of the ``compress`` integration: what a scorer sees, what gets recorded, what an encoder
returns.

The wrapper in ``compress.py`` never reaches into a model directly: everything it needs from a model goes through
its family's adapter (the contract: :mod:`.contract`; the Qwen line's adapter: :mod:`.qwen_common`, still importable
here as ``FamilyAdapter``), which uses only the model's public seams.

This module also defines the scorers (:func:`default_scorer`: the realizer's relevance; :func:`cosine_scorer`:
query-embedding similarity alone) and the :class:`ImageContext` every scorer receives.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from arr_coc.attending import TokenScores
from arr_coc.tensors import joined

if TYPE_CHECKING:
    from arr_coc.realizing import Realizer

Kind = str  # "image" or "video"


@dataclass
class ImageContext:
    """Everything a relevance scorer may use for ONE image or video of one sample.

    Attributes:
        kind: ``"image"`` or ``"video"``.
        sample: index of the sample (row of ``input_ids``) that holds this image/video.
        index: index of the image among the batch's images (or of the video among its videos), i.e. its row in
            ``image_grid_thw`` / ``video_grid_thw``.
        pixel_values (torch.Tensor of shape (t*h*w, C*temporal_patch_size*patch_size**2)): this item's patches,
            exactly the rows of the processor's ``pixel_values`` (or ``pixel_values_videos``) that belong to it.
        grid_thw: (t, h, w) patch grid, as in ``image_grid_thw`` (NOT merged).
        merged_grid: (t, h // merge_size, w // merge_size), the grid of visual tokens.
        patch_size: vision patch side in pixels (14 or 16).
        merge_size: patches merged per token side (2).
        temporal_patch_size: frames per temporal patch (2).
        token_feats (torch.Tensor of shape (N, D) or None): merged visual tokens (the merger's output, in the
            language model's embedding space), N = t*h*w / merge_size**2, raster order over (t, h/merge, w/merge).
            ``None`` under ``compress(..., foveate=True)``: the tokens are scored BEFORE the vision tower runs, so a
            scorer has only ``pixel_values``, the positions and the query; scorers must cope with ``None``.
        positions (torch.LongTensor of shape (3, N)): the tokens' M-RoPE (t, h, w) positions in the full sequence.
        query_ids (torch.LongTensor of shape (Q,)): token ids of the query (empty if none was found).
        query_embeds (torch.Tensor of shape (Q, D) or None): the language model's input embeddings of ``query_ids``.
        query_text: the query as text, when a tokenizer or an explicit ``query=`` was given; else ``None``.
        config: the model's config (``model.config``).
        scorer_config: ``compress(..., scorer_config=...)``, for a custom scorer to use as it likes (the default
            scorer reads the typed fields below, never this).
        image_mean, image_std: the processor's per-channel normalisation of ``pixel_values`` (from
            ``compress(processor=...)``, else the family's default), so a scorer can recover the exact pixels.
        realizer: the relevance model ``compress`` decides with (``compress(realizer=...)``, else the default one):
            the default scorer scores with it, and its config resolves the budget whatever the scorer.
        text_prior: whether the default scorer adds the OCR text prior (``compress(text_prior=True)`` and a question).
        text_options: the text prior's ablation switches (``ReadingConfig.with_switches``), or None.
    """

    kind: Kind
    sample: int
    index: int
    pixel_values: torch.Tensor
    grid_thw: tuple[int, int, int]
    merged_grid: tuple[int, int, int]
    patch_size: int
    merge_size: int
    temporal_patch_size: int
    token_feats: torch.Tensor | None
    positions: torch.Tensor
    query_ids: torch.Tensor
    query_embeds: torch.Tensor | None
    query_text: str | None
    config: Any
    scorer_config: Any = None
    image_mean: tuple[float, ...] | None = None
    image_std: tuple[float, ...] | None = None
    realizer: Realizer | None = None
    text_prior: bool = False
    text_options: dict[str, Any] | None = None

    @property
    def n_tokens(self) -> int:
        """Number of visual tokens N of this image/video."""
        t, h, w = self.merged_grid
        return t * h * w


Scorer = Callable[[ImageContext], torch.Tensor | TokenScores]
"""A scorer: (N,) relevance of an item's tokens, or ``TokenScores(scores, units)`` whose units (cell sets, e.g. the
cells of one recognised word) the selection keeps whole (``arr_coc.attending.select``)."""


@dataclass
class VisualAllocation:
    """What ``compress`` kept of one image or video (one entry of ``CompressedModel.last_allocation``).

    Attributes:
        kind: ``"image"`` or ``"video"``.
        grid: (t, h, w) in MERGED tokens (``h``, ``w`` already divided by the merge size).
        keep (torch.LongTensor of shape (budget,)): kept indices into this item's visual-token sequence (raster order
            over (t, h, w)), strictly increasing.
        scores (torch.Tensor of shape (t, h, w)): the relevance the scorer gave every token.
        budget: number of tokens kept (``len(keep)``).
        index: row of this item in ``image_grid_thw`` / ``video_grid_thw``.
        deepstack_levels (torch.LongTensor of shape (budget,) or None): Qwen3-VL only, with ``deepstack_tiers``: how
            many DeepStack levels each kept token receives (the first ``n`` levels); ``None`` means all levels.
        detail: with ``compress(..., detail=...)``, the image's ``arr_coc.integrations.detail.DetailPlan`` (fine
            tokens, coarse cells or thumbnail); then ``budget`` counts every token the image costs (fine + coarse)
            and ``keep`` holds the kept placeholder positions of the image (fine tokens and mixed-mode anchors).
    """

    kind: Kind
    grid: tuple[int, int, int]
    keep: torch.Tensor
    scores: torch.Tensor
    budget: int
    index: int = 0
    deepstack_levels: torch.Tensor | None = None
    detail: Any = None

    @property
    def mask(self) -> torch.Tensor:
        """Bool tensor of shape (t, h, w): True where the token was kept."""
        m = torch.zeros(math.prod(self.grid), dtype=torch.bool, device=self.keep.device)
        m[self.keep] = True
        return m.view(self.grid)


@dataclass
class EncodedVisual:
    """Output of the vision tower for all images (or all videos) of a batch, split per item.

    Attributes:
        raw: the ``ModelOutput`` returned by ``get_image_features`` / ``get_video_features``.
        features: one tensor per item, each of shape (N_i, D) (the ``pooler_output``).
        deepstack: Qwen3-VL only: one list per DeepStack level, each with one (N_i, D) tensor per item.
    """

    raw: Any
    features: list[torch.Tensor]
    deepstack: list[list[torch.Tensor]] | None = None


def __getattr__(name: str) -> Any:
    """``FamilyAdapter``: the Qwen line's adapter (:class:`~arr_coc.integrations.qwen_common.QwenAdapter`), under the
    name the registry rows and older code import from here; the family-neutral contract is
    :class:`~arr_coc.integrations.contract.Adapter`."""
    if name == "FamilyAdapter":
        from .qwen_common import QwenAdapter

        return QwenAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def take_rows(
    tensors: Sequence[torch.Tensor], keeps: Sequence[torch.Tensor | None], flat: torch.Tensor | None = None
) -> tuple[torch.Tensor, ...]:
    """The kept rows of each item's tensor: ``tensors[i][keeps[i]]`` (``None``: all rows).

    With ``flat`` (the kept rows of every item as ONE index into the items' rows stacked in order), one gather for
    all items instead of one per item (plus a copy to stack the items, unless they already lie side by side, as the
    splits of the tower's one output do); the result is the same rows, split per item.

    Args:
        tensors: per item, (N_i, D).
        keeps: per item, (k_i,) kept row indices, or None (all N_i rows).
        flat (torch.LongTensor of shape (sum k_i,) or None): ``keeps[i] + sum(N_j for j < i)``, concatenated.

    Returns:
        Per item, (k_i, D).
    """
    if flat is None:
        return tuple(f if k is None else f[k.to(f.device)] for f, k in zip(tensors, keeps, strict=True))
    sizes = [int(f.shape[0]) if k is None else int(k.numel()) for f, k in zip(tensors, keeps, strict=True)]
    stacked = joined(list(tensors))  # (sum N_i, D): a view when the items are the parts of one output, as the tower's
    return tuple(stacked.index_select(0, flat.to(stacked.device)).split(sizes))  # each (k_i, D)


def _normalize(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.normalize(x.detach().float(), dim=-1)


def cosine_scorer(ctx: ImageContext) -> torch.Tensor:
    """Training-free relevance: cosine similarity between each merged visual token and the query's LM embeddings.

    The merger projects visual tokens into the language model's input-embedding space, so a token that "looks
    like" a query word scores high. Per token we take the mean of its top-3 similarities over the query tokens
    (max would let one stop-word dominate; mean over all dilutes the few words that matter).

    Without a query (no text in the turn and no ``query=``) the score is distinctiveness: one minus the cosine
    similarity to the item's mean token, which favours tokens that differ from the background.

    Returns:
        torch.Tensor of shape (N,), float32, on the device of the token features.
    """
    if ctx.token_feats is None:
        raise ValueError(
            "the cosine scorer compares the vision tower's features with the query, but under foveate=True tokens are "
            "scored before the tower runs (ImageContext.token_feats is None); use scorer='auto' or a pixel-based scorer"
        )
    feats = _normalize(ctx.token_feats)  # (N, D)
    if ctx.query_embeds is None or ctx.query_embeds.shape[0] == 0:
        mean = _normalize(feats.mean(0, keepdim=True))  # (1, D)
        return (1.0 - feats @ mean.T).squeeze(1)  # (N,)
    query = _normalize(ctx.query_embeds.to(feats.device))  # (Q, D)
    sim = feats @ query.T  # (N, Q)
    top = sim.topk(min(3, sim.shape[1]), dim=1).values  # (N, min(3, Q))
    return top.mean(1)  # (N,)


def default_scorer(ctx: ImageContext) -> TokenScores:
    """The default scorer (``scorer="auto"``): ``ctx.realizer``'s :meth:`~arr_coc.realizing.Realizer.score` on the
    item's own pixels (``arr_coc.score_visual_tokens``: texture scorers, query cues, the model's
    token / question coupling when the features exist, the OCR text prior with ``ctx.text_prior``), with the words'
    units. ``compress`` runs it through :meth:`~arr_coc.realizing.Realizer.decide` directly; a wrapper of it (e.g. a
    timer) gets it per item through this function, with the same result.
    """
    from .qwen_patches import score_visual_tokens

    out = score_visual_tokens(
        ctx.pixel_values,
        ctx.grid_thw,
        ctx.patch_size,
        ctx.merge_size,
        ctx.temporal_patch_size,
        token_feats=ctx.token_feats,
        query_embeds=ctx.query_embeds,
        query_text=ctx.query_text,
        text_prior=ctx.text_prior,
        text_options=ctx.text_options,
        realizer=ctx.realizer,
        image_mean=ctx.image_mean,
        image_std=ctx.image_std,
        return_units=True,
    )
    assert isinstance(out, TokenScores)
    return out


def realizing_scorer() -> Scorer:
    """The default scorer (:func:`default_scorer`), as ``resolve_scorer("auto")`` returns it."""
    return default_scorer


def resolve_scorer(scorer: str | Scorer | None) -> Scorer:
    """Turn the ``scorer=`` option into a callable.

    ``"auto"`` / ``None`` / ``"realizing"``: :func:`default_scorer` (the realizer's relevance; ``compress`` then
    decides with ``Realizer.decide``);
    ``"cosine"``: :func:`cosine_scorer` (query-embedding similarity alone); a callable
    ``f(ImageContext) -> Tensor (N,)`` is used as is.
    """
    if callable(scorer):
        return scorer
    if scorer is None or scorer in ("auto", "realizing"):
        return default_scorer
    if scorer == "cosine":
        return cosine_scorer
    raise ValueError(
        f"scorer must be 'auto', 'cosine', 'realizing' or a callable(ImageContext) -> Tensor, got {scorer!r}"
    )
