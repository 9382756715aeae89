"""Balancing: weigh the three ways of knowing per query (opponent processing).

Two tensions decide how much each scorer counts:

* compress vs particularize: a specific question ("What is the invoice number?") should spend tokens on the
  particular place that answers it (participatory); a vague one ("Describe the image") should compress the whole
  image into its most informative and salient parts (information, perspectival).
* exploit vs explore: when the participatory scorer found strong query-specific evidence (an OCR match, a peaked
  similarity map), exploit it; when it found little, explore with information and salience instead.

``TensionBalancer`` maps six query features to three logits with a linear layer initialised to these rules
(``RelevanceConfig.balancer_rules``), then a softmax: the weights are positive and sum to 1 per sample. Features,
in order:
    1 (bias), specificity, vagueness, wants_text, participatory signal, participatory available.

Example:
    >>> import torch
    >>> from arr_coc.query import parse_query
    >>> w = TensionBalancer()([parse_query("What is the invoice number?")], torch.tensor([0.9]))
    >>> bool(w[0, 2] > w[0, 0])  # participatory leads for a specific question with strong evidence
    True
"""

from __future__ import annotations

import torch
from torch import nn

from .config import RelevanceConfig
from .query import QueryCues
from .tensors import cached_constant, param_like

SCORERS = ("information", "perspectival", "participatory")


class TensionBalancer(nn.Module):
    """Per-query weights (B, 3) over (information, perspectival, participatory)."""

    def __init__(self, config: RelevanceConfig | None = None):
        super().__init__()
        cfg = config or RelevanceConfig()
        self.linear = nn.Linear(6, 3, bias=False)
        with torch.no_grad():
            self.linear.weight.copy_(torch.tensor([[float(v) for v in row] for row in cfg.balancer_rules]))
        self.temperature = float(cfg.balancer_temperature)

    @staticmethod
    def features(cues: list[QueryCues], signal: torch.Tensor) -> torch.Tensor:
        """(B, 6) features of the queries and the participatory scorer's evidence ``signal`` (B,), on its device."""
        if len(cues) != signal.shape[0]:
            raise ValueError(f"got {len(cues)} queries for {signal.shape[0]} signals")
        rows = [[1.0, c.specificity, c.vagueness, float(c.wants_text)] for c in cues]
        query = cached_constant(rows, signal)  # (B, 4)
        return torch.cat([query, signal.view(-1, 1), (signal > 0).view(-1, 1)], 1)  # (B, 6); cat casts True to 1

    def forward(self, cues: list[QueryCues], signal: torch.Tensor) -> torch.Tensor:
        """Weights (B, 3), rows summing to 1; participatory gets 0 where it had no signal at all."""
        feats = self.features(cues, signal)  # (B, 6)
        # a product and a sum over the 6 features, not a matmul: each sample's logits are summed in one order whatever
        # the batch (the BLAS blocks a (B, 6) x (6, 3) matmul by B: on an AVX-512 / AMX CPU a batch of 8 rounded
        # differently from 1)
        logits = (feats.unsqueeze(1) * param_like(self.linear.weight, feats)).sum(-1)  # (B, 3)
        if self.temperature != 1.0:  # x / 1.0 is x: no op for the default
            logits = logits / self.temperature
        # participatory's logit to -inf where signal <= 0, in one comparison: the other columns' threshold is -inf,
        # which no signal (in [0, 1], or NaN) is at or below
        floor = cached_constant([float("-inf"), float("-inf"), 0.0], signal)  # (3,)
        logits = logits.masked_fill(signal.view(-1, 1) <= floor, float("-inf"))  # (B, 3)
        return torch.softmax(logits, dim=-1)
