"""The relevance model: what a checkpoint is, and nothing about how one machine runs it.

    texture (T, 13, rows, cols) + query cues (+ token features, query embeddings, text prior)
        ──► knowing (information, perspectival, participatory) ──► balancing ──► relevance (T, rows, cols)

:class:`RelevanceModel` holds the three scorers, the balancer, the text path's learned box scorer and their
settings (:class:`~arr_coc.config.RelevanceConfig`); :meth:`RelevanceModel.forward` is the trainable part of the
decision. :meth:`~RelevanceModel.from_pretrained` / :meth:`~RelevanceModel.save_pretrained` read and write exactly
this: ``config.json`` (the config) and, with a box scorer, ``scorer.json`` + ``model.safetensors``. How the model is
run (page caches, CUDA graphs, the OCR stack, batching) is :mod:`arr_coc.engine`'s, with its own run-time config
(:class:`~arr_coc.engine.EngineConfig`), never saved in a checkpoint; :class:`arr_coc.realizing.Realizer` is the
two together.

Example:
    >>> import torch
    >>> from arr_coc.query import parse_query
    >>> m = RelevanceModel()
    >>> scores, maps, weights = m(torch.rand(1, 13, 2, 3), [parse_query("the title", m.config)])
    >>> tuple(scores.shape), tuple(weights.shape)
    ((1, 2, 3), (1, 3))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import torch
from torch import nn

from .balancing import SCORERS, TensionBalancer
from .checkpoint_check import load_relevance_config
from .config import CHANNELS, RelevanceConfig
from .knowing import InformationScorer, ParticipatoryScorer, PerspectivalScorer, channel_index, unit_last
from .query import QueryCues, parse_query

_EDGE_DENSITY = CHANNELS.index("edge_density")
M = TypeVar("M", bound="RelevanceModel")

# relevance checkpoints shipped inside the package (src/arr_coc/checkpoints/<folder>/, each with PROVENANCE.md): the
# name a user passes (``Realizer.builtin(name)``, ``--relevance NAME``) -> its folder.
BUILTIN_RELEVANCE: dict[str, str] = {"learned": "learned-2026-11", "learned-2026-11": "learned-2026-11"}
# ``--relevance rules``: the training-free rules alone (no learned box scorer), the default before issue 40 item 4.
RULES = "rules"
# THE default relevance (issue 40 item 4, results/learned_relevance.md "The default, round 7" and "round 12"): what
# every entry point uses when no ``realizer`` / ``--relevance`` is given (``default_realizer``: allocate, compress,
# the CLI, the ``from_pretrained`` wrapper, the vLLM plugin): the rules where their structural evidence found a
# structural question's referent or the question is a printed-header table-cell question ("What is the H for L?",
# "In the L row, what is the H?", crossed on the page, or naming a row, or on a page that reads as a table), the
# built-in learned scorer elsewhere (``arr_coc.reading.matching.routed``, ``routed-cells``), on the default text
# path settings (``RelevanceConfig()``). ``RULES`` gives the old default exactly; ``routed-structure`` the one
# before round 12.
DEFAULT_RELEVANCE = "routed-cells"
_CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"


def relevance_folder(folder_or_name: str | Path) -> Path:
    """The checkpoint folder of ``--relevance`` / :meth:`RelevanceModel.from_pretrained`: an existing folder as given,
    else a built-in name (``BUILTIN_RELEVANCE``) as the shipped folder; a folder of that name wins (``./learned``).

    Raises:
        FileNotFoundError: if it is neither a folder nor a built-in name (the message lists the built-in names).
    """
    path = Path(folder_or_name).expanduser()
    if path.is_dir():
        return path
    name = str(folder_or_name)
    if name in BUILTIN_RELEVANCE:
        return _CHECKPOINTS / BUILTIN_RELEVANCE[name]
    raise FileNotFoundError(
        f"{name} is not a relevance checkpoint folder (a folder holding config.json, written by arr-coc train) nor "
        f"a built-in name (built-in: {', '.join(BUILTIN_RELEVANCE)})"
    )


@dataclass
class Relevance:
    """What :meth:`arr_coc.realizing.Realizer.relevance` computed for T frames.

    Attributes:
        scores (torch.Tensor of shape (T, rows, cols)): relevance of every cell, higher = more relevant.
        maps: each scorer's map by name (information, perspectival, participatory), each (T, rows, cols).
        weights (torch.Tensor of shape (T, 3)): the balancer's weights of the three scorers.
        texture (torch.Tensor of shape (T, 13, rows, cols)): the texture array.
        timings_ms: ``texture`` and ``scoring`` wall time (on a GPU: time to launch, unless synchronised).
    """

    scores: torch.Tensor
    maps: dict[str, torch.Tensor]
    weights: torch.Tensor
    texture: torch.Tensor
    timings_ms: dict[str, float] = field(default_factory=dict)


class RelevanceModel(nn.Module):
    """The relevance model: texture arrays + query cues -> relevance. What a checkpoint saves, and only that.

    Every weight and threshold comes from ``config`` (:class:`~arr_coc.config.RelevanceConfig`); the learnable ones
    become parameters of the three scorers and the balancer. It runs on its inputs' device (parameters are used as
    ``p.to(x)``, a no-op once the module sits there).
    """

    def __init__(self, config: RelevanceConfig | None = None, box_scorer: nn.Module | None = None):
        super().__init__()
        self.config = config or RelevanceConfig()
        # the text path's learned box scorer (``arr_coc.reading.matching.learned.BoxScorer``; None: the rules). A
        # submodule, so ``model.box_scorer.parameters()`` / ``model.state_dict()`` reach its tensors.
        self.box_scorer = box_scorer
        self.information = InformationScorer(self.config)
        self.perspectival = PerspectivalScorer(self.config)
        self.participatory = ParticipatoryScorer(self.config)
        self.balancer = TensionBalancer(self.config)

    @classmethod
    def from_pretrained(cls: type[M], folder: str | Path) -> M:
        """A model from a checkpoint folder written by ``arr-coc train`` (or :meth:`save_pretrained`), or from a
        built-in one by name (``BUILTIN_RELEVANCE``, :func:`relevance_folder`): ``config.json`` (``RelevanceConfig``,
        the text path's ``ReadingConfig`` inside) and, when present, ``scorer.json`` + ``model.safetensors`` (the
        learned box scorer, its feature columns checked against today's ``box_features``). Frozen (``eval()``, no
        gradients). A ``config.json`` written before the run-time settings left the config (cache sizes, the CPU
        band, CUDA-graph counts: :data:`arr_coc.config.RUNTIME_FIELDS`) loads too; those fields are ignored (they
        never changed a decision; a :class:`~arr_coc.engine.EngineConfig` sets them now). ``"rules"`` (``RULES``,
        unless a folder of that name exists) is the training-free model without a box scorer.

        Raises:
            FileNotFoundError: if ``folder`` is neither a built-in name nor a folder holding ``config.json``.
            CheckpointError: (a ``ValueError``) a file truncated or corrupt, a value of the wrong type, not finite
                or out of range, a tensor of the wrong shape or not finite, a newer format (``version``), or a box
                scorer that needs features this version no longer computes; the message names the file and field
                (``arr_coc.checkpoint_check``).
        """
        from .reading.matching.gated import gate_of, wrap  # "hybrid[:FOLDER]", "routed[:FOLDER]": gated.py, routed.py

        if str(folder) == RULES and not Path(folder).is_dir():  # the rules alone: the training-free config
            return cls(RelevanceConfig()).eval().requires_grad_(False)
        gate, folder = gate_of(folder)
        folder = relevance_folder(folder)
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(
                f"{folder} is not a relevance checkpoint folder (no config.json; write one with arr-coc train)"
            )
        config = load_relevance_config(folder / "config.json")  # every value checked; errors name the file
        scorer = None
        if (folder / "scorer.json").is_file():
            from .reading.matching.learned import BoxScorer

            scorer = BoxScorer.load(folder)
        scorer = wrap(scorer, gate) if gate else scorer  # no scorer to wrap: one error naming the mode
        return cls(config, box_scorer=scorer).eval().requires_grad_(False)

    @classmethod
    def default(cls: type[M], name: str = DEFAULT_RELEVANCE) -> M:
        """The default relevance (``DEFAULT_RELEVANCE``, or ``name``): the named relevance's box scorer on the
        training-free config ``RelevanceConfig()`` (the text path's default settings: every script read, as without
        a scorer; the built-in checkpoint's texture config is the same). Frozen. ``default("rules")`` is
        ``Realizer(RelevanceConfig())``'s model.

        Example:
            >>> RelevanceModel.default().box_scorer.config["gate"], RelevanceModel.default("rules").box_scorer
            ('route-structure', None)
        """
        scorer = None if name == RULES else cls.from_pretrained(name).box_scorer
        return cls(RelevanceConfig(), box_scorer=scorer).eval().requires_grad_(False)

    @classmethod
    def builtin(cls: type[M], name: str = "learned") -> M:
        """A relevance checkpoint shipped inside the package (``BUILTIN_RELEVANCE``; no training needed): the same
        loading as :meth:`from_pretrained`, a name only (never a folder).

        Example:
            >>> RelevanceModel.builtin("learned").box_scorer.features[-1]
            'rule'

        Raises:
            ValueError: if ``name`` is not a built-in name (the message lists them).
        """
        if name not in BUILTIN_RELEVANCE:
            raise ValueError(f"unknown built-in relevance {name!r}; built-in: {', '.join(BUILTIN_RELEVANCE)}")
        return cls.from_pretrained(_CHECKPOINTS / BUILTIN_RELEVANCE[name])

    def save_pretrained(self, folder: str | Path) -> None:
        """Write ``config.json`` and, with a box scorer, ``scorer.json`` + ``model.safetensors`` into ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(self.config.checkpoint_json(indent=1) + "\n")
        if self.box_scorer is not None:
            self.box_scorer.save(folder)

    def cues(self, query: str | None) -> QueryCues:
        """The query's cues, with this config's weights."""
        return parse_query(query, self.config)

    def forward(
        self,
        texture: torch.Tensor,
        cues: list[QueryCues],
        prior: torch.Tensor | None = None,
        token_feats: torch.Tensor | None = None,
        query_embeds: list[torch.Tensor | None] | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
        """Relevance of every cell from texture arrays (the trainable part of the decision).

        Args:
            texture (torch.Tensor of shape (B, 13, H, W)): texture arrays.
            cues: B parsed queries.
            prior (torch.Tensor of shape (B, H, W) or None): text prior in [0, 1].
            token_feats (torch.Tensor of shape (B, H * W, D) or None): visual tokens in the LM's embedding space.
            query_embeds: optional B tensors (Q, D) of query token embeddings.

        Returns:
            relevance (B, H, W), the scorers' maps by name (each (B, H, W)), and the weights (B, 3).
        """
        # every map the scorers rescale first, in one pass: information's and perspectival's channels, the edge
        # density of the participatory scorer's textness and, inside a model, its coupling to the query embeddings;
        # then the three maps that are rescaled next, in one pass too
        ci, cp = len(self.information.index), len(self.perspectival.index)
        channels = (*self.information.index, *self.perspectival.index, _EDGE_DENSITY)
        picked = texture.index_select(1, channel_index(channels, texture))  # (B, ci + cp + 1, H, W)
        has: list[float] | None = None
        if token_feats is not None and query_embeds is not None:
            sims, has = self.participatory.coupling_raw(texture, token_feats, query_embeds)  # (B, H, W)
            picked = torch.cat([picked, sims[:, None]], 1)  # (B, ci + cp + 2, H, W)
        units = unit_last(picked, 2)  # each map rescaled on its own (the bits of unit() on it alone)
        raw = torch.stack(
            [
                self.information.mix(units[:, :ci]),
                self.perspectival.mix(units[:, ci : ci + cp]),
                self.participatory.textness_raw(texture, units[:, ci + cp]),
            ],
            1,
        )  # (B, 3, H, W)
        rescaled = unit_last(raw, 2)  # (B, 3, H, W)
        info, persp = rescaled[:, 0], rescaled[:, 1]
        coupling = (units[:, -1], has) if has is not None else None
        part, signal = self.participatory(texture, cues, prior, textness=rescaled[:, 2], coupling=coupling)
        weights = self.balancer(cues, signal)  # (B, 3)
        maps = torch.stack([info, persp, part], 1)  # (B, 3, H, W)
        relevance = torch.einsum("bshw,bs->bhw", maps, weights)
        return relevance, dict(zip(SCORERS, (info, persp, part), strict=True)), weights
