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
used as ``param_like(param, texture)`` (``arr_coc.tensors``: the parameter itself once the module sits on that device,
else its copy there, made once while the parameter is unchanged) and no other tensor is made elsewhere.

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
from .tensors import CONSTANTS, cached_constant, joined, param_like

_CH = {name: i for i, name in enumerate(CHANNELS)}


def unit(x: torch.Tensor) -> torch.Tensor:
    """Rescale each sample of ``x`` (B, ...) to [0, 1] on its own; a constant sample becomes all zeros.

    Idempotent bit for bit: the result's minimum is exactly 0 and its maximum exactly 1 (or it is all zeros), so
    ``unit(unit(x))`` equals ``unit(x)``.
    """
    return unit_last(x, x.dim() - 1)


def unit_last(x: torch.Tensor, n: int) -> torch.Tensor:
    """:func:`unit` over the last ``n`` dims of ``x``, for every index of the leading ones (one pass for a stack of
    maps): (..., *S) -> (..., *S). The same float operations as :func:`unit` on each map alone."""
    flat = x.flatten(x.dim() - n) if n > 1 else x  # (..., prod(S))
    return _unit_flat(flat)[0].view(x.shape)


def _unit_flat(flat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`unit` over the last dim of ``flat`` (..., N): the rescaled maps and their span ``max - min`` (..., 1)."""
    lo, hi = torch.aminmax(flat, dim=-1, keepdim=True)  # (..., 1) each
    span = hi - lo  # (..., 1)
    # The bits of (flat - lo) / span.clamp_min(1e-8) * (hi > lo + 1e-8) in one op fewer: where hi > lo + 1e-8 the
    # span is already >= 1e-8 (hi lies above the rounded lo + 1e-8, so above the exact sum: rounding is monotonic),
    # so the clamp does nothing; elsewhere dividing by inf gives the 0 (of the same sign) that multiplying by 0 gave,
    # and NaN / inf stay NaN (a NaN map stays all NaN: NaN <= x is False, the span stays NaN)
    divisor = span.masked_fill(hi <= lo + 1e-8, float("inf"))  # (..., 1)
    return (flat - lo) / divisor, span


def concentration(scores: torch.Tensor) -> torch.Tensor:
    """How peaked each map of (B, ...) is, in [0, 1]: one minus its mean after ``unit``; 0 for a constant map.

    A few sharp peaks on a flat floor give nearly 1, uniform noise about 0.5, a map high almost everywhere ~0.
    """
    rescaled, span = _unit_flat(scores.flatten(1))  # (B, N), (B, 1)
    varies = (span > 1e-8)[:, 0]  # (B,); the span the rescaling computed, not a second subtraction
    return (1 - rescaled.mean(1)) * varies


def _stack(tensors: list[torch.Tensor]) -> torch.Tensor:
    """``torch.stack(tensors, 1)``; one tensor is only unsqueezed (the same values, no copy)."""
    return tensors[0].unsqueeze(1) if len(tensors) == 1 else torch.stack(tensors, 1)


def _in_sample_order(blocks: list[tuple[list[int], torch.Tensor]], b: int, like: torch.Tensor) -> torch.Tensor:
    """Maps computed per group of samples, ``[(samples, maps (G, H, W)), ...]``, back in sample order: (B, H, W), zeros
    for a sample in no group. One ``cat`` and one ``index_select`` (a cached index) whatever the number of groups,
    instead of a write per group into zeros; the same bits (rows are copied). One group of every sample, in order,
    is returned as it is."""
    h, w = like.shape[-2:]
    if not blocks:
        return like.new_zeros(b, h, w)
    order = [i for members, _ in blocks for i in members]
    if order == list(range(b)) and len(blocks) == 1:
        return blocks[0][1]
    maps = [m for _, m in blocks]
    if len(order) < b:  # one zero row for every sample without a map
        maps.append(CONSTANTS.get(("knowing.zero_row", h, w, like.device, like.dtype), lambda: like.new_zeros(1, h, w)))
    row = {i: r for r, i in enumerate(order)}
    rows = tuple(row.get(i, len(order)) for i in range(b))  # each sample's row in the cat
    index = CONSTANTS.get(("knowing.rows", rows, like.device), lambda: torch.tensor(rows).to(like.device))
    return torch.cat(maps).index_select(0, index)  # (B, H, W)


def channel_index(channels: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
    """The channel indices as a LongTensor on ``like``'s device, cached."""
    return CONSTANTS.get(
        ("knowing.index", channels, like.device), lambda: torch.tensor(channels, dtype=torch.long).to(like.device)
    )


class _ChannelMix(nn.Module):
    """Weighted sum of a few texture channels, each first rescaled to [0, 1] per sample."""

    def __init__(self, weights: dict[str, float]):
        super().__init__()
        self.channels = tuple(weights)
        self.index = [_CH[c] for c in self.channels]
        self.weight = nn.Parameter(torch.tensor([float(w) for w in weights.values()]))

    def forward(self, texture: torch.Tensor) -> torch.Tensor:
        """texture (B, 13, H, W) -> scores (B, H, W) in [0, 1]."""
        feats = unit_last(texture.index_select(1, channel_index(tuple(self.index), texture)), 2)  # (B, C, H, W)
        return unit(self.mix(feats))

    def mix(self, feats: torch.Tensor) -> torch.Tensor:
        """Channels already rescaled (B, C, H, W) -> their weighted sum (B, H, W), not yet rescaled.

        A product and a sum over the channel axis: each token's sum runs over its C channels in the same order whatever
        the batch. (``einsum("bchw,c->bhw")`` lowers to one matmul over all the batch's tokens, whose blocking the BLAS
        picks by its size: on a CPU with AVX-512 / AMX, eight frames rounded differently from one, by one ulp.)
        """
        return (feats * param_like(self.weight, feats).view(1, -1, 1, 1)).sum(1)


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
        textness: torch.Tensor | None = None,
        coupling: tuple[torch.Tensor, list[float]] | None = None,
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
            textness (torch.Tensor of shape (B, H, W) or None): :meth:`textness` when the caller computed it
                already (the realizer does, batched with the other scorers' rescaling).
            coupling: the coupling term when the caller computed it already: ``unit`` of :meth:`coupling_raw`'s maps
                (B, H, W) and its (B,) 1.0 / 0.0 "had query embeddings" (the realizer rescales the maps in the same
                pass as the texture channels); ``token_feats`` and ``query_embeds`` are then not used.

        Returns:
            scores (B, H, W) in [0, 1] and ``signal`` (B,) in [0, 1]: how much query-specific evidence there was
            (0 when the query gave nothing to couple to, so the balancer can lean elsewhere).
        """
        b, _, h, w = texture.shape
        if len(cues) != b:
            raise ValueError(f"got {len(cues)} queries for a batch of {b} texture arrays")
        term_weight = param_like(self.term_weight, texture)  # (3,)
        terms = []
        if prior is not None:
            prior = prior.to(texture)
            terms.append(prior.clamp(0, 1))
        if coupling is None and token_feats is not None and query_embeds is not None:
            sims, has = self.coupling_raw(texture, token_feats, query_embeds)
            coupling = (unit(sims), has)
        if coupling is not None:
            terms.append(coupling[0])
        cue_maps, has_cue = self._cue_maps(texture, cues, textness)
        terms.append(cue_maps)
        stacked = _stack(terms)  # (B, T, H, W)
        # each present term's weight times whether the sample has it: the coupling's and the cues' presence is known
        # on the host (one cached constant); the prior's is read from the prior on the device. The terms present are
        # (prior, coupling, cues), (coupling, cues), (prior, cues) or (cues): always a strided view of the weights.
        present = cached_constant([[*([coupling[1][i]] if coupling else []), has_cue[i]] for i in range(b)], texture)
        if prior is not None:  # (B, T) with the prior's column first; cat casts True to 1.0 (x * 1.0 is x)
            present = torch.cat([(prior.flatten(1).amax(1) > 0).view(b, 1), present], 1)
        used = term_weight[::2] if prior is not None and coupling is None else term_weight[3 - len(terms) :]  # (T,)
        wts = used * present  # (B, T)
        total = wts.sum(1)  # (B,)
        scores = torch.einsum("bthw,bt->bhw", stacked, wts) / total.clamp_min(1e-8).view(b, 1, 1)
        return scores, (total > 0) * concentration(scores)

    def coupling_raw(
        self, texture: torch.Tensor, token_feats: torch.Tensor, query_embeds: list[torch.Tensor | None]
    ) -> tuple[torch.Tensor, list[float]]:
        """The coupling term before its rescaling: each token's mean top-k cosine similarity to the query's token
        embeddings, (B, H, W) maps (zeros where a sample has no query embeddings), and (B,) 1.0 / 0.0 for "had some".
        The samples of one query (the frames of a video, or several images asked the same question) share one matmul;
        different queries get one each (a batched matmul over stacked queries rounds differently from a plain one, by
        an ulp, on a CPU). The realizer rescales the maps in one pass with the texture channels."""
        b, _, h, w = texture.shape
        has = [0.0 if q is None or q.numel() == 0 else 1.0 for q in query_embeds]
        groups: dict[int, list[int]] = {}  # query (by identity) -> samples
        for i, q in enumerate(query_embeds):
            if has[i]:
                groups.setdefault(id(q), []).append(i)
        feats = F.normalize(token_feats.to(texture), dim=-1)  # (B, N, D)
        blocks: list[tuple[list[int], torch.Tensor]] = []  # (samples, their maps (G, H, W)) per query
        firsts = [query_embeds[m[0]].to(texture) for m in groups.values()]  # type: ignore[union-attr]  # each (Q_g, D)
        # every query normalised in one pass (row by row: the same bits as each alone); queries that lie side by side
        # in one tensor (compress embeds every question in one call) and a single query are not copied first
        normed = F.normalize(joined(firsts), dim=-1).split([q.shape[0] for q in firsts]) if firsts else []
        for members, q in zip(groups.values(), normed, strict=True):
            whole = len(members) == b
            cos = (feats if whole else feats[members]) @ q.T  # (G, N, Q)
            top = cos.topk(min(self.top_k, cos.shape[2]), dim=2).values.mean(2).view(-1, h, w)  # (G, H, W)
            blocks.append((members, top))
        return _in_sample_order(blocks, b, texture), has

    def textness_raw(self, texture: torch.Tensor, edge_unit: torch.Tensor) -> torch.Tensor:
        """ "The answer is text" before its rescaling: ``unit(edge_density)`` (B, H, W) plus the entropy in [0, 1]."""
        return edge_unit + texture[:, _CH["entropy"]] / math.log(self.entropy_bins)

    def textness(self, texture: torch.Tensor) -> torch.Tensor:
        """How much each cell looks like text, (B, 13, H, W) -> (B, H, W) in [0, 1] per sample."""
        return unit(self.textness_raw(texture, unit(texture[:, _CH["edge_density"]])))

    def _cue_maps(
        self, texture: torch.Tensor, cues: list[QueryCues], textness: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, list[float]]:
        """The query's own cues on the texture: (B, H, W) maps and, per sample, 1.0 where it had any cue (on the host).

        Samples with equal cues are computed together (one pass for all frames of one query); a cue map is the
        product of its parts, rescaled per sample.
        """
        b = texture.shape[0]
        groups: list[tuple[QueryCues, list[int]]] = []  # distinct cues and the samples that have them
        for i, cue in enumerate(cues):
            for known, members in groups:
                if cue is known or cue == known:
                    members.append(i)
                    break
            else:
                groups.append((cue, [i]))
        has = [0.0] * b
        blocks: list[tuple[list[int], torch.Tensor]] = []  # (samples, their maps (G, H, W)) per distinct cue
        for cue, members in groups:
            whole = len(members) == b
            sub = texture if whole else texture[members]  # (G, 13, H, W)
            parts, rescaled = self._cue_parts(sub, cue, textness if whole or textness is None else textness[members])
            if not parts:
                continue
            for i in members:
                has[i] = 1.0
            # a single part already rescaled (textness) stays as it is: unit() is idempotent, bit for bit
            m = parts[0] if rescaled else unit(torch.stack(parts).prod(0) if len(parts) > 1 else parts[0])
            blocks.append((members, m))
        return _in_sample_order(blocks, b, texture), has

    def _cue_parts(
        self, texture: torch.Tensor, cue: QueryCues, textness: torch.Tensor | None
    ) -> tuple[list[torch.Tensor], bool]:
        """The maps (G, H, W) whose product is ``cue``'s map on these samples, and whether that product is one map
        already rescaled to [0, 1] (the textness alone)."""
        y, x = texture[:, _CH["pos_y"]], texture[:, _CH["pos_x"]]  # (G, H, W)
        # 0-dim parameters: torch lets a 0-dim CPU tensor act as a number next to tensors on any device
        where_scale, colour_scale = self.where_scale.to(texture.dtype), self.colour_scale.to(texture.dtype)
        parts = []
        if cue.where:
            d = {
                "top": lambda: y, "bottom": lambda: 1 - y, "left": lambda: x, "right": lambda: 1 - x,
                "centre": lambda: 2 * torch.sqrt((y - 0.5) ** 2 + (x - 0.5) ** 2),
            }  # distance from the named side, in [0, 1]  # fmt: skip
            names = list(cue.where)
            near = d[names[0]]()
            for name in names[1:]:
                near = near + d[name]()  # the same sum as sum(...) but without its leading 0 + (an op, exact)
            parts.append(torch.exp(-near / (where_scale * len(names))))
        if cue.colours:
            target = cached_constant(cue.colours, texture).view(1, -1, 3, 1, 1)  # (1, K, 3, 1, 1)
            dist = ((texture[:, None, 0:3] - target) ** 2).sum(2).amin(1)  # (G, H, W)
            parts.append(torch.exp(-dist / colour_scale))
        if cue.wants_text:
            parts.append(self.textness(texture) if textness is None else textness)
        return parts, len(parts) == 1 and cue.wants_text
