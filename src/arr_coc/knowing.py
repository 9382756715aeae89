"""Knowing: three scorers that each say how much a visual token matters, in their own way.

* ``InformationScorer`` (propositional knowing): how much content a cell carries: Shannon entropy of its grey
  levels, edge density and gradient energy. Text, drawings and detail score high; blank paper and sky low.
* ``PerspectivalScorer`` (salience): what stands out from its surroundings: spectral residual, centre-surround
  contrast, colour rarity.
* ``ParticipatoryScorer`` (query-content coupling): what matters *for this question*: the text-aware map from
  OCR (``arr_coc.reading``) when given, the similarity of visual tokens to the query's token embeddings inside a
  loaded model (``compress``), and the query's own spatial, colour and "is it text?" cues on the texture.

Each scorer is a small ``nn.Module`` whose parameters start at the training-free defaults of
:class:`arr_coc.config.RelevanceConfig`, so a later training run can learn them; each takes a batch of texture
arrays ``(B, 13, H, W)`` and returns scores ``(B, H, W)`` in [0, 1], normalised per sample (never across the batch,
so a sample's scores do not depend on its neighbours). Everything runs on the texture's device: the parameters are
used as ``param.to(texture)`` (a no-op once the module sits on that device) and no other tensor is made elsewhere.

Example:
    >>> import torch
    >>> InformationScorer()(torch.rand(2, 13, 4, 5)).shape
    torch.Size([2, 4, 5])
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .config import CHANNELS, RelevanceConfig
from .query import QueryCues
from .tensors import constant

_CH = {name: i for i, name in enumerate(CHANNELS)}


def unit(x: torch.Tensor) -> torch.Tensor:
    """Rescale each sample of ``x`` (B, ...) to [0, 1] on its own; a constant sample becomes all zeros."""
    flat = x.flatten(1)
    lo = flat.min(1).values.view(-1, *[1] * (x.dim() - 1))
    hi = flat.max(1).values.view(-1, *[1] * (x.dim() - 1))
    return (x - lo) / (hi - lo).clamp_min(1e-8) * (hi > lo + 1e-8)


def concentration(scores: torch.Tensor) -> torch.Tensor:
    """How peaked each map of (B, ...) is, in [0, 1]: one minus its mean after ``unit``; 0 for a constant map.

    A few sharp peaks on a flat floor give nearly 1, uniform noise about 0.5, a map high almost everywhere ~0.
    """
    flat = scores.flatten(1)
    varies = (flat.max(1).values - flat.min(1).values) > 1e-8
    return (1 - unit(flat).mean(1)) * varies


class _ChannelMix(nn.Module):
    """Weighted sum of a few texture channels, each first rescaled to [0, 1] per sample."""

    def __init__(self, weights: dict[str, float]):
        super().__init__()
        self.channels = tuple(weights)
        self.index = [_CH[c] for c in self.channels]
        self.weight = nn.Parameter(torch.tensor([float(w) for w in weights.values()]))

    def forward(self, texture: torch.Tensor) -> torch.Tensor:
        """texture (B, 13, H, W) -> scores (B, H, W) in [0, 1]."""
        feats = torch.stack([unit(texture[:, i]) for i in self.index], 1)  # (B, C, H, W)
        return unit(torch.einsum("bchw,c->bhw", feats, self.weight.to(texture)))


class InformationScorer(_ChannelMix):
    """Propositional knowing: entropy of content, plus edge density and gradient energy."""

    def __init__(self, config: RelevanceConfig | None = None):
        super().__init__((config or RelevanceConfig()).information)


class PerspectivalScorer(_ChannelMix):
    """Salience: spectral residual, centre-surround contrast and colour rarity."""

    def __init__(self, config: RelevanceConfig | None = None):
        super().__init__((config or RelevanceConfig()).perspectival)


class ParticipatoryScorer(nn.Module):
    """Query-content coupling.

    Terms, each in [0, 1] per sample, averaged with learnable weights over the terms that are present:
        prior     a query-conditioned map given by the caller (the OCR text map of ``arr_coc.reading``)
        coupling  cosine similarity of visual tokens to the query's token embeddings (inside a loaded model)
        cues      the query's own cues on the texture: where (top/left/...), colour words, "the answer is text"
    """

    def __init__(self, config: RelevanceConfig | None = None):
        super().__init__()
        cfg = config or RelevanceConfig()
        # Term weights (prior, coupling, cues) and the sharpness of the spatial / colour cues.
        self.term_weight = nn.Parameter(torch.tensor([float(w) for w in cfg.term_weights]))
        self.where_scale = nn.Parameter(torch.tensor(float(cfg.where_scale)))
        self.colour_scale = nn.Parameter(torch.tensor(float(cfg.colour_scale)))
        self.top_k = int(cfg.coupling_top_k)
        self.entropy_bins = int(cfg.entropy_bins)

    def forward(
        self,
        texture: torch.Tensor,
        cues: list[QueryCues],
        prior: torch.Tensor | None = None,
        token_feats: torch.Tensor | None = None,
        query_embeds: list[torch.Tensor | None] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Score each cell for the query.

        Args:
            texture (torch.Tensor of shape (B, 13, H, W)): texture arrays.
            cues: B parsed queries.
            prior (torch.Tensor of shape (B, H, W) or None): query-conditioned map in [0, 1] (e.g. OCR text
                relevance).
            token_feats (torch.Tensor of shape (B, H * W, D) or None): visual tokens in the language model's
                embedding space.
            query_embeds: B tensors of shape (Q, D), the query's token embeddings (None where a sample has none).

        Returns:
            scores (B, H, W) in [0, 1] and ``signal`` (B,) in [0, 1]: how much query-specific evidence there was
            (0 when the query gave nothing to couple to, so the balancer can lean elsewhere).
        """
        b, _, h, w = texture.shape
        if len(cues) != b:
            raise ValueError(f"got {len(cues)} queries for a batch of {b} texture arrays")
        term_weight = self.term_weight.to(texture)  # (3,)
        terms, weights = [], []
        if prior is not None:
            prior = prior.to(texture)
            terms.append(prior.clamp(0, 1))
            weights.append(term_weight[0] * (prior.flatten(1).amax(1) > 0).to(texture.dtype))
        if token_feats is not None and query_embeds is not None:
            sims, has = [], []
            for i in range(b):
                q = query_embeds[i]
                if q is None or q.numel() == 0:
                    sims.append(texture.new_zeros(h, w))
                    has.append(0.0)
                    continue
                feats = F.normalize(token_feats[i].to(texture), dim=-1)  # (N, D)
                cos = feats @ F.normalize(q.to(texture), dim=-1).T  # (N, Q)
                top = cos.topk(min(self.top_k, cos.shape[1]), dim=1).values.mean(1)  # (N,)
                sims.append(top.view(h, w))
                has.append(1.0)
            terms.append(unit(torch.stack(sims)))
            weights.append(term_weight[1] * constant(has, texture))
        cue_maps, has_cue = self._cue_maps(texture, cues)
        terms.append(cue_maps)
        weights.append(term_weight[2] * has_cue)
        stacked = torch.stack(terms, 1)  # (B, T, H, W)
        wts = torch.stack(weights, 1)  # (B, T)
        total = wts.sum(1)  # (B,)
        scores = torch.einsum("bthw,bt->bhw", stacked, wts) / total.clamp_min(1e-8).view(b, 1, 1)
        return scores, (total > 0).to(texture.dtype) * concentration(scores)

    def _cue_maps(self, texture: torch.Tensor, cues: list[QueryCues]) -> tuple[torch.Tensor, torch.Tensor]:
        """The query's own cues on the texture: (B, H, W) maps and (B,) 1.0 where a sample had any cue."""
        y, x = texture[:, _CH["pos_y"]], texture[:, _CH["pos_x"]]  # (B, H, W)
        rgb = texture[:, 0:3]
        entropy = texture[:, _CH["entropy"]] / math.log(self.entropy_bins)
        textness = unit(unit(texture[:, _CH["edge_density"]]) + entropy)  # (B, H, W)
        # 0-dim parameters: torch lets a 0-dim CPU tensor act as a number next to tensors on any device
        where_scale, colour_scale = self.where_scale.to(texture.dtype), self.colour_scale.to(texture.dtype)
        maps, has = [], []
        for i, cue in enumerate(cues):
            parts = []
            if cue.where:
                d = {
                    "top": y[i], "bottom": 1 - y[i], "left": x[i], "right": 1 - x[i],
                    "centre": 2 * torch.sqrt((y[i] - 0.5) ** 2 + (x[i] - 0.5) ** 2),
                }  # distance from the named side, in [0, 1]  # fmt: skip
                parts.append(torch.exp(-sum(d[k] for k in cue.where) / (where_scale * len(cue.where))))
            if cue.colours:
                target = constant(cue.colours, texture)  # (K, 3)
                target = target.view(-1, 3, 1, 1)  # (K, 3, 1, 1)
                dist = ((rgb[i][None] - target) ** 2).sum(1).amin(0)  # (H, W)
                parts.append(torch.exp(-dist / colour_scale))
            if cue.wants_text:
                parts.append(textness[i])
            has.append(1.0 if parts else 0.0)
            maps.append(unit(torch.stack(parts).prod(0)[None])[0] if parts else y.new_zeros(y.shape[1:]))
        return torch.stack(maps), constant(has, texture)
