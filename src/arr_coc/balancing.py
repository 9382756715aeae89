"""Balancing: weigh the three ways of knowing per query (opponent processing).

Two tensions decide how much each scorer counts:

* compress vs particularize: a specific question ("What is the invoice number?") should spend tokens on the
  particular place that answers it (participatory); a vague one ("Describe the image") should compress the whole
  image into its most informative and salient parts (information, perspectival).
* exploit vs explore: when the participatory scorer found strong query-specific evidence (an OCR match, a peaked
  similarity map), exploit it; when it found little, explore with information and salience instead.

``TensionBalancer`` maps six query features to three logits with a linear layer initialised to these rules, then
a softmax: the weights are positive and sum to 1 per sample. Features, in order:
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

from .query import QueryCues

SCORERS = ("information", "perspectival", "participatory")

# Rows: information, perspectival, participatory. Columns: bias, specificity, vagueness, wants_text, signal, avail.
_RULES = [
    [0.0, 0.0, 0.5, 0.8, -0.5, 0.0],  # information: text questions and vague ones lean on content
    [0.0, -0.5, 1.0, -0.8, -0.5, 0.0],  # perspectival: vague questions lean on what stands out
    [-1.0, 1.0, -1.5, 0.0, 2.5, 0.5],  # participatory: specific questions with evidence lean on coupling
]


class TensionBalancer(nn.Module):
    """Per-query weights (B, 3) over (information, perspectival, participatory)."""

    def __init__(self, temperature: float = 1.0):
        super().__init__()
        self.linear = nn.Linear(6, 3, bias=False)
        with torch.no_grad():
            self.linear.weight.copy_(torch.tensor(_RULES))
        self.temperature = temperature

    @staticmethod
    def features(cues: list[QueryCues], signal: torch.Tensor) -> torch.Tensor:
        """(B, 6) features of the queries and the participatory scorer's evidence ``signal`` (B,)."""
        rows = [
            [1.0, c.specificity, c.vagueness, float(c.wants_text), float(s), float(s > 0)]
            for c, s in zip(cues, signal.tolist(), strict=True)
        ]
        return torch.tensor(rows, dtype=torch.float32)

    def forward(self, cues: list[QueryCues], signal: torch.Tensor) -> torch.Tensor:
        """Weights (B, 3), rows summing to 1; participatory gets 0 where it had no signal at all."""
        logits = self.linear(self.features(cues, signal)) / self.temperature  # (B, 3)
        logits[:, 2] = logits[:, 2].masked_fill(signal <= 0, float("-inf"))
        return torch.softmax(logits, dim=-1)
