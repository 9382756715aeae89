"""Learned where sure, rules where not: the learned box scorer gated per page by its ensemble's agreement.

Issue 40 item 4 asks for a third relevance option besides the rules (the default) and the learned scorer
(``--relevance learned``): the learned scorer where it is sure, the rules where it is not. ``BoxScorer`` already
falls back to the rules on a page unlike its training pages (``ood_page``: a share of its boxes out of the training
range), and its ``floor`` is a residual floor, not a fallback; neither asks whether the model itself is sure.

:class:`GatedScorer` wraps a ``BoxScorer`` and, per page (one ``box_scores`` call), asks it in one of two ways:

- ``"agree"`` (the default, ``--relevance hybrid``): the seed ensemble's members vote for their best box; the page
  is scored by the learned scorer when more than ``agree`` (default one half) of them vote for the ensemble's own best
  box, else by the rules alone. Members that disagree on where the answer is mean the correction is a guess there.
  A single network (``members == 1``) has no vote: it is always taken as sure (the learned scorer unchanged).
- ``"floor"`` (``--relevance hybrid-floor``): every page gets ``max(learned, rules)``, both scaled to their page's
  best box: the rules' own ranking is a floor the learned scorer can raise boxes above but never push a box below.

No threshold is fitted: one half (a majority of the members) is fixed in advance, so nothing is chosen on any fold.
Names: ``hybrid`` / ``hybrid-floor`` wrap the built-in learned checkpoint; ``hybrid:FOLDER`` /
``hybrid-floor:FOLDER`` wrap a checkpoint folder (``gate_of``). ``routed`` / ``routed:FOLDER`` is the third wrapper,
by what the rules know exactly rather than by the model's agreement (``arr_coc.reading.matching.routed``); ``wrap``
builds either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

MODES = ("agree", "floor")
# relevance name -> gate mode; "NAME:FOLDER" wraps FOLDER, a bare NAME wraps the built-in "learned"
GATE_NAMES: dict[str, str] = {
    "hybrid": "agree",
    "hybrid-floor": "floor",
    "routed": "route",
    "routed-structure": "route-structure",
    "routed-tables": "route-structure-tables",  # opt-in (round 11): + a literal question on a table page
    "routed-cells": "route-structure-cells",  # the default (round 12): + a printed-header cell question
}


def gate_of(folder_or_name: str | Path) -> tuple[str | None, str | Path]:
    """(gate mode or None, the checkpoint folder or built-in name it wraps) of a ``--relevance`` value.

    Example:
        >>> gate_of("hybrid"), gate_of("hybrid-floor:/tmp/run"), gate_of("learned")
        (('agree', 'learned'), ('floor', '/tmp/run'), (None, 'learned'))
    """
    text = str(folder_or_name)
    name, sep, rest = text.partition(":")
    if name in GATE_NAMES and not Path(text).is_dir():
        return GATE_NAMES[name], (rest if sep else "learned")
    return None, folder_or_name


def wrap(scorer: nn.Module | None, mode: str) -> nn.Module:
    """The box scorer of relevance mode ``mode`` (``gate_of``'s first value) around a checkpoint's ``scorer``:
    ``RoutedScorer`` for ``"route"``, ``GatedScorer`` otherwise.

    Raises:
        ValueError: if ``scorer`` is None (the checkpoint has no learned scorer to wrap) or ``mode`` is unknown.
    """
    if mode in ("route", "route-structure", "route-structure-tables", "route-structure-cells"):
        from .routed import RoutedScorer

        return RoutedScorer(
            scorer, cells=mode == "route", tables=mode.endswith("-tables"), printed=mode.endswith("-cells")
        )
    if scorer is None:
        raise ValueError(f"a gated relevance ({mode!r}) needs a learned box scorer; this checkpoint has none")
    return GatedScorer(scorer, mode)


class GatedScorer(nn.Module):
    """A ``BoxScorer`` used where its ensemble agrees, the rules elsewhere (``mode="agree"``), or with the rules as a
    floor (``mode="floor"``). Same interface as ``BoxScorer`` for ``QueryMatcher``: ``features``, ``own_columns``,
    ``box_scores``; ``config`` adds the gate. The wrapped scorer is a submodule (its tensors in ``state_dict``).

    Args:
        scorer: a trained ``BoxScorer`` (the ``rule`` feature among its columns).
        mode: ``"agree"`` or ``"floor"``.
        agree: ``"agree"`` only: the share of members that must vote for the ensemble's best box (more than it).
    """

    def __init__(self, scorer: nn.Module, mode: str = "agree", agree: float = 0.5) -> None:
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"unknown gate mode {mode!r}; known: {', '.join(MODES)}")
        if not 0.0 <= agree < 1.0:
            raise ValueError(f"agree must be in [0, 1), got {agree!r}")
        if "rule" not in scorer.features:
            raise ValueError("a gated scorer needs the 'rule' feature (the rules' score it falls back to)")
        self.scorer = scorer
        self.mode = mode
        self.agree = float(agree)
        self.pages = {"learned": 0, "rules": 0}  # pages scored each way ("agree"), for reports

    @property
    def features(self) -> tuple[str, ...]:
        return self.scorer.features

    @property
    def config(self) -> dict[str, Any]:
        return {**self.scorer.config, "gate": self.mode, "agree": self.agree}

    def save(self, folder: str | Path) -> None:
        """The wrapped scorer's files (the gate is a name, ``hybrid:FOLDER``, not a file)."""
        self.scorer.save(folder)

    def own_columns(self, feats: np.ndarray) -> np.ndarray:
        return self.scorer.own_columns(feats)

    def rule_scores(self, feats: np.ndarray) -> np.ndarray:
        """(N,) the rules' own scores (the ``rule`` column, negatives clipped), float32."""
        return np.clip(feats[:, self.features.index("rule")], 0.0, None).astype(np.float32)

    def member_votes(self, feats: np.ndarray) -> np.ndarray:
        """(M,) each member's best box (M = 1 for a single network: the scorer's own best box).

        Args:
            feats (np.ndarray of shape (N, F)): the page's ``box_features`` rows in this scorer's columns, N > 0.
        """
        sc = self.scorer
        nets = getattr(sc.net, "members", None)
        if nets is None:
            return np.array([int(np.argmax(sc.box_scores(feats)))])
        with torch.no_grad():
            x = torch.from_numpy(np.ascontiguousarray(feats, dtype=np.float32))
            z = (x.to(sc.mean) - sc.mean) / sc.scale * sc.mask  # (N, F)
            out = []
            for net in nets:
                c = net(z).squeeze(-1)  # (N,)
                if sc.residual:
                    if sc.bound is not None:
                        c = sc.bound * torch.tanh(c / sc.bound)
                    c = torch.where(sc.out_of_range(x), torch.zeros_like(c), c)
                    rule = x[:, sc.features.index("rule")].to(sc.mean).clamp_min(0.0)
                    e = torch.exp(c)
                    c = rule * e + sc.floor * (e - 1.0).clamp_min(0.0)
                out.append(int(torch.argmax(c)))  # ties: the first box, as torch.argmax
        return np.array(out)

    def sure(self, feats: np.ndarray) -> bool:
        """Whether more than ``agree`` of the members vote for the ensemble's best box on this page."""
        if len(feats) == 0:
            return True
        best = int(np.argmax(self.scorer.box_scores(feats)))
        return float(np.mean(self.member_votes(feats) == best)) > self.agree

    def box_scores(self, feats: np.ndarray) -> np.ndarray:
        """(N,) relevance in [0, 1] of each box, float32: the learned scorer's, the rules', or their maximum."""
        if len(feats) == 0:
            return np.zeros(0, dtype=np.float32)
        learned = self.scorer.box_scores(feats)
        rules = self.rule_scores(feats)
        if self.mode == "floor":
            top_l, top_r = float(learned.max()), float(rules.max())
            a = learned / top_l if top_l > 0 else learned
            b = rules / top_r if top_r > 0 else rules
            return np.maximum(a, b).astype(np.float32)
        if self.sure(feats):
            self.pages["learned"] += 1
            return learned
        self.pages["rules"] += 1
        return (rules / max(1.0, float(rules.max()))).astype(np.float32)
