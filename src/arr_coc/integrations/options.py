"""``compress``'s options: one typed, validated dataclass (what was 14 keyword arguments and a ``scorer_config`` bag).

``compress(model, budget=0.22, foveate=True, ...)`` builds a :class:`CompressOptions` from its keywords
(:meth:`CompressOptions.build` checks every value once, before any model work) and hands it to the
:class:`~arr_coc.integrations.compress.CompressedModel`; ``compress(model, options=CompressOptions.build(...))`` passes
one directly. The realizer that scores and resolves every budget is a typed field, never an entry of a bag.

Example:
    >>> o = CompressOptions.build(budget="22%", foveate=True)
    >>> o.budget, o.foveate
    (TokenBudget(value=0.22), True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arr_coc.attending import Budget, TokenBudget

from .base import Scorer, cosine_scorer, default_scorer, resolve_scorer
from .contract import POSITION_CHOICES, Adapter
from .detail import MIN_THUMBNAIL_TOKENS, parse_detail

if TYPE_CHECKING:
    from arr_coc.realizing import Realizer


@dataclass(frozen=True)
class CompressOptions:
    """How ``compress`` prunes (see :meth:`build` for what each value may be).

    Attributes:
        budget: tokens to keep PER IMAGE / VIDEO, parsed once; or a tuple with one budget per sample of the batch.
        scorer: the scorer (``arr_coc.integrations.base.default_scorer`` = the realizer's relevance, decided by
            ``Realizer.decide``; ``cosine_scorer``; or your callable ``f(ImageContext) -> Tensor (N,) | TokenScores``).
        query: the question for every sample, or one per sample (None: the user turn that holds the image).
        redundancy: in [0, 1]; > 0 skips near-duplicate tokens (``arr_coc.attending.select``).
        deepstack_tiers: fractions of the kept tokens forming tiers of the family's feature levels (DeepStack).
        padding_side: ``"left"`` / ``"right"`` for re-padding forward calls, or None (the input's side, else left).
        text_prior: the default scorer adds the OCR text prior of ``allocate``'s text mode (when there is a question).
        text_options: the text prior's ablation switches (``ReadingConfig.with_switches``), or None.
        realizer: the relevance model (``arr_coc.Realizer``; None: the shared default one). It scores (default
            scorer) and its config resolves every budget, whatever the scorer.
        foveate: decide before the vision tower and encode only the kept tokens' patches.
        detail: None (drop), ``"thumbnail"`` or ``"mixed"`` (level of detail; always foveated; images only).
        scorer_config: anything, for a custom scorer (``ImageContext.scorer_config``); the default scorer ignores it.
        positions: ``"original"`` (kept tokens keep their ids in the full sequence, with gaps) or ``"renumber"``
            (consecutive ids over the pruned sequence); 1-D families only (:data:`~.contract.POSITION_CHOICES`).
        path: how the tokens are chosen, declared when the options are built, never guessed from the scorer's
            identity: ``"decide"`` (``scorer="auto"``: :meth:`Realizer.decide` over each modality's items at once)
            or ``"per_item"`` (a callable scorer, ``"cosine"`` too: the scorer on each item's ``ImageContext``, then
            :meth:`Realizer.choose`). A wrapped default scorer (a timer around ``resolve_scorer("auto")``) is a
            callable, so it takes ``"per_item"`` (the same tokens, item by item); ``path="decide"`` with any scorer
            but the default one is refused.
        budget_scope: ``"item"`` (the default: each image / video gets ``budget``) or ``"prompt"`` (a row with
            several images spends ONE ``budget`` over them, by their relevance to the question, as
            ``arr_coc.allocate_pages`` splits a document's: :mod:`.document_budget`).
    """

    budget: TokenBudget | tuple[TokenBudget, ...] = TokenBudget("adaptive")
    scorer: Scorer = resolve_scorer("auto")
    query: str | tuple[str | None, ...] | None = None
    redundancy: float = 0.0
    deepstack_tiers: tuple[float, ...] | None = None
    padding_side: str | None = None
    text_prior: bool = False
    text_options: dict[str, Any] | None = None
    realizer: Realizer | None = None
    foveate: bool = False
    detail: str | None = None
    scorer_config: Any = None
    path: str = "decide"
    positions: str = "original"
    budget_scope: str = "item"
    own_coarse: bool = False  # detail on a family with its own coarse view: kept whole, not inserted (own_coarse.py)
    tile_choice: str = "spread"  # "concentrate": the kept tokens in the fewest tiles (tile_choice.py)

    def __post_init__(self) -> None:
        from .document_budget import check_scope

        check_scope(self.budget_scope, self.detail, self.redundancy)
        if self.path not in PATHS:
            raise ValueError(f"path must be one of {', '.join(map(repr, PATHS))}, got {self.path!r}")
        if self.path == "decide" and self.scorer is not default_scorer:
            raise ValueError(
                "path='decide' decides with the realizer (Realizer.decide) and calls no scorer, so it only goes with "
                "scorer='auto'; a custom or wrapped scorer takes path='per_item'"
            )

    @property
    def foveated(self) -> bool:
        """Whether the tower runs on the kept patches only (``foveate``, and always with ``detail`` but on a family
        with its own coarse view, where ``detail`` is a split of the decision and ``foveate`` says)."""
        return self.foveate or (self.detail is not None and not self.own_coarse)

    @property
    def inserted(self) -> str | None:
        """The level-of-detail mode whose coarse view is inserted (:mod:`.detail`): ``detail``, but None on a family
        with its own coarse view (:mod:`.own_coarse`: kept whole instead)."""
        return None if self.own_coarse else self.detail

    def budgets(self, batch_size: int) -> list[TokenBudget]:
        """One budget per sample of a batch.

        Raises:
            ValueError: a per-sample list whose length is not the batch size.
        """
        if isinstance(self.budget, tuple):
            if len(self.budget) != batch_size:
                raise ValueError(f"budget is a list of {len(self.budget)} budgets for a batch of {batch_size} samples")
            return list(self.budget)
        return [self.budget] * batch_size

    @classmethod
    def build(
        cls,
        budget: Budget | TokenBudget | Sequence[Budget | TokenBudget] = "adaptive",
        *,
        scorer: str | Scorer | None = "auto",
        query: str | Sequence[str | None] | None = None,
        redundancy: float = 0.0,
        deepstack_tiers: Sequence[float] | None = None,
        padding_side: str | None = None,
        text_prior: bool = False,
        scorer_config: Any = None,
        realizer: Realizer | None = None,
        foveate: bool = False,
        detail: str | None = None,
        text_options: dict[str, Any] | None = None,
        adapter: Adapter | None = None,
        path: str | None = None,
        positions: str = "original",
        budget_scope: str = "item",
        tile_choice: str = "spread",
    ) -> CompressOptions:
        """The options of ``compress``'s keywords (documented there), each checked once.

        A ``scorer_config`` dict's ``"text_prior"``, ``"realizer"`` and ``"text_options"`` entries (the keys the
        default scorer once read from it) become the typed fields; the rest stays for a custom scorer.
        ``adapter``: the model's family (``deepstack_tiers`` is refused for a family without DeepStack).
        ``path``: None declares it from ``scorer`` as written: a name (``"auto"``, ``"realizing"``, None) is
        ``"decide"``, ``"cosine"`` and every callable ``"per_item"`` (see :attr:`path`).

        Raises:
            ValueError: one message naming the bad value and what is allowed.
        """
        many = isinstance(budget, (list, tuple))
        if many and not budget:
            raise ValueError("budget is an empty list; give one budget per sample")
        parsed = [TokenBudget.parse(b) for b in (budget if many else [budget])]  # type: ignore[union-attr]
        if isinstance(redundancy, bool) or not isinstance(redundancy, (int, float)) or not 0.0 <= redundancy <= 1.0:
            raise ValueError(f"redundancy must be a number in [0, 1], got {redundancy!r}")
        tiers = check_tiers(deepstack_tiers)
        if tiers is not None and adapter is not None and not adapter.supports_deepstack():
            raise ValueError(f"deepstack_tiers only applies to models with DeepStack levels; {adapter.name} has none")
        if not isinstance(foveate, bool):
            raise ValueError(f"foveate must be True or False, got {foveate!r}")
        if foveate and adapter is not None and not adapter.supports_foveation():
            raise ValueError(
                f"compress(foveate=True) is not supported for {adapter.name}: its tower cannot run on kept patches"
            )
        cosine = scorer == "cosine" or scorer is cosine_scorer
        if foveate and cosine:
            raise ValueError(
                "scorer='cosine' needs the vision tower's features, but foveate=True scores before the tower runs; "
                "use scorer='auto' (pixels + query cues, text_prior=True for OCR) or a callable that reads "
                "pixel_values"
            )
        detail = parse_detail(detail)
        if detail is not None and adapter is not None and not adapter.supports_detail():
            raise ValueError(
                f"compress(detail=...) is not supported for {adapter.name}: its pixels take no coarse view"
            )
        own_coarse = detail is not None and adapter is not None and adapter.has_own_coarse_view()
        if own_coarse and detail != "thumbnail":
            raise ValueError(
                f"compress(detail={detail!r}) is not supported for {adapter.name}: its own coarse view (thumbnail / "
                "base view) is its level of detail: use detail='thumbnail' (kept whole; the budget's rest on tiles)"
            )
        smallest = {"thumbnail": MIN_THUMBNAIL_TOKENS + 1, "mixed": 2}.get(detail or "", 1)
        for b in parsed:
            if isinstance(b.value, int) and b.value < smallest:
                raise ValueError(
                    f"budget {b.value!r} is too small for detail={detail!r}: the coarse view and one full-resolution "
                    f"token need at least {smallest} tokens per image"
                )
        if detail is not None and tiers is not None:
            raise ValueError("deepstack_tiers cannot be combined with detail=...; choose one level-of-detail knob")
        if detail is not None and cosine:
            raise ValueError(
                "scorer='cosine' needs the vision tower's features, but detail=... scores before the tower runs (it "
                "is always foveated); use scorer='auto' or a callable that reads pixel_values"
            )
        if positions not in POSITION_CHOICES:
            raise ValueError(f"positions must be one of {', '.join(map(repr, POSITION_CHOICES))}, got {positions!r}")
        if positions == "renumber" and adapter is not None and adapter.layout.rows != 1:
            raise ValueError(
                f"positions='renumber' applies to 1-D positions only; {adapter.name}'s M-RoPE ids carry each image's "
                "(t, h, w) layout, so its kept tokens always keep their original ids (positions='original')"
            )
        if padding_side not in (None, "left", "right"):
            raise ValueError(f"padding_side must be None, 'left' or 'right', got {padding_side!r}")
        if text_prior and scorer_config is not None and not isinstance(scorer_config, dict):
            raise ValueError("text_prior=True needs scorer_config to be a dict (or None)")
        if isinstance(scorer_config, dict):  # the keys the default scorer once read from the bag become typed fields
            rest = dict(scorer_config)
            text_prior = bool(rest.pop("text_prior", False)) or text_prior
            realizer = rest.pop("realizer", None) if realizer is None else realizer
            text_options = rest.pop("text_options", None) if text_options is None else text_options
            scorer_config = rest or None
        if isinstance(query, (list, tuple)):
            query = tuple(query)
        return cls(
            budget=tuple(parsed) if many else parsed[0],
            scorer=resolve_scorer(scorer),
            query=query,  # type: ignore[arg-type]
            redundancy=float(redundancy),
            deepstack_tiers=tiers,
            padding_side=padding_side,
            text_prior=bool(text_prior),
            text_options=dict(text_options) if text_options is not None else None,
            realizer=realizer,
            foveate=foveate,
            detail=detail,
            own_coarse=own_coarse,
            tile_choice=check_tile_choice(tile_choice, adapter, detail),
            scorer_config=scorer_config,
            path=path if path is not None else declared_path(scorer),
            positions=positions,
            budget_scope=budget_scope,
        )


PATHS = ("decide", "per_item")


def declared_path(scorer: str | Scorer | None) -> str:
    """The decision path ``scorer=`` declares, by what was written, not by the identity of what it resolves to: the
    default scorer BY NAME (``"auto"``, ``"realizing"``, None) decides with :meth:`Realizer.decide`; any callable
    (the default one wrapped in a timer included) is called per item. The default scorer passed as the function
    itself is the default scorer named (``default_scorer``)."""
    if scorer is None or isinstance(scorer, str) and scorer in ("auto", "realizing"):
        return "decide"
    if scorer is default_scorer:
        return "decide"
    return "per_item"


def check_tiers(tiers: Sequence[float] | None) -> tuple[float, ...] | None:
    """``deepstack_tiers`` validated: None, or fractions in (0, 1] adding up to at most 1, as a tuple."""
    if tiers is None:
        return None
    try:
        values = tuple(float(t) for t in tiers)
    except (TypeError, ValueError):
        raise ValueError(f"deepstack_tiers must be None or a sequence of fractions, got {tiers!r}") from None
    if not values or any(not (0.0 < v <= 1.0) for v in values) or sum(values) > 1.0 + 1e-6:
        raise ValueError(f"deepstack_tiers must be fractions in (0, 1] that add up to at most 1, got {tiers!r}")
    return values


def normalisation(image_processor: Any) -> tuple[tuple[float, ...] | None, tuple[float, ...] | None]:
    """The image processor's ``image_mean`` / ``image_std`` as 3-tuples, or (None, None) when it has none."""
    mean, std = getattr(image_processor, "image_mean", None), getattr(image_processor, "image_std", None)
    if mean is None or std is None:
        return None, None
    as3 = [(float(v),) * 3 if isinstance(v, (int, float)) else tuple(float(x) for x in v) for v in (mean, std)]
    return as3[0], as3[1]


def check_tile_choice(tile_choice: str, adapter: Adapter | None, detail: str | None) -> str:
    """``tile_choice`` checked: one of :data:`~.tile_choice.TILE_CHOICES`; ``"concentrate"`` only for a family with
    tiles (InternVL, LLaVA-OneVision) and not with ``detail`` (one line each)."""
    from .tile_choice import TILE_CHOICES

    if tile_choice not in TILE_CHOICES:
        raise ValueError(f"tile_choice must be one of {', '.join(map(repr, TILE_CHOICES))}, got {tile_choice!r}")
    if tile_choice == "concentrate" and adapter is not None and not adapter.supports_tile_choice():
        raise ValueError(f"compress(tile_choice='concentrate') is not supported for {adapter.name}: it has no tiles")
    if tile_choice == "concentrate" and detail is not None:
        raise ValueError("tile_choice='concentrate' cannot be combined with detail=...; choose one")
    return tile_choice
