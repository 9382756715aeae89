"""``arr-coc eval``'s plan: the options of a run (:class:`EvalConfig`), its variants (the unpruned model, every
allocator at every budget: :func:`plan_variants`) and its results (:class:`Row`, :class:`EvalResult`). Moved from
:mod:`.runner` unchanged; :mod:`.runner` re-exports every name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..attending import Budget, parse_budget
from .allocators import DETAIL_ALLOCATORS

UNPRUNED = "unpruned"
DEFAULT_BUDGETS = "1.0,0.333,0.222,0.111"
DEFAULT_ALLOCATORS = ("model", "texture", "random", "uniform")


@dataclass(frozen=True)
class Variant:
    """One column of the comparison: the unpruned model, or one allocator at one budget.

    Attributes:
        name: ``"unpruned"`` or ``"<allocator>@<budget label>"``.
        allocator: the allocator, ``None`` for the unpruned model.
        budget: the budget as ``compress`` takes it (``None`` for the unpruned model).
        label: the budget as the user wrote it (``"0.222"``, ``"256"``).
        detail: level-of-detail mode (``compress(..., detail=...)``), ``None`` for drop-only.
    """

    name: str
    allocator: str | None = None
    budget: Budget | None = None
    label: str = "1.0"
    detail: str | None = None

    @property
    def shown(self) -> str:
        """The allocator column: ``"unpruned"``, ``"<allocator>"`` or ``"<allocator>+<detail>"``."""
        if self.allocator is None:
            return UNPRUNED
        return f"{self.allocator}+{self.detail}" if self.detail else self.allocator


@dataclass
class EvalConfig:
    """Everything one ``arr-coc eval`` run needs (the command-line options).

    Attributes:
        model: local folder or cached hub id of a Qwen2/2.5/3-VL checkpoint.
        task: a task name (:data:`arr_coc.evaluation.tasks.TASKS`).
        out: output folder (predictions.jsonl, results.md, results.json).
        data: the data file or folder (``None`` only for ``docgen``).
        budgets: budget strings; ``1.0`` (or ``100%``) stands for the unpruned model, which always runs.
        allocators: allocator names (:data:`arr_coc.evaluation.allocators.ALLOCATORS`).
        limit: evaluate the first ``limit`` samples only.
        batch_size: samples per generate call.
        split: split to read (default the task's).
        metric: override the task's metric (a key of ``METRICS``).
        max_new_tokens: override the task's generation limit.
        min_pixels / max_pixels: image resolution bounds (default lmms-eval's for the model family).
        device: torch device (default cuda if available, else cpu).
        dtype: weights dtype (``auto`` = the checkpoint's).
        seed: seed of the random allocator.
        progress: show a progress bar on stderr.
        details: level-of-detail modes (``"thumbnail"``, ``"mixed"``) added to every allocator that scores tokens.
        relevance: a relevance checkpoint folder (``arr-coc train``) or a built-in name (``"learned"``,
            ``Realizer.from_pretrained``): its ``Realizer`` goes to
            ``compress(..., realizer=...)`` of the allocators that score with it (model, text, texture, foveate): it
            scores and its config resolves their budgets (an ``"adaptive"`` one with its tiers); ``None``: the
            default relevance (``routed-cells``). The query-blind baselines (random, uniform) never see it.
        overwrite: start ``out`` afresh (its predictions, table and manifest removed) instead of resuming it; needed
            when the options that shape the rows changed (``manifest.json``, :func:`row_options`).
    """

    model: str
    task: str
    out: Path
    data: Path | None = None
    budgets: Sequence[str] = tuple(DEFAULT_BUDGETS.split(","))
    allocators: Sequence[str] = DEFAULT_ALLOCATORS
    limit: int | None = None
    batch_size: int = 1
    split: str | None = None
    metric: str | None = None
    max_new_tokens: int | None = None
    min_pixels: int | None = None
    max_pixels: int | None = None
    device: str | None = None
    dtype: str = "auto"
    seed: int = 0
    progress: bool = True
    details: Sequence[str] = ()
    relevance: Path | None = None
    overwrite: bool = False


@dataclass
class Row:
    """One line of the results table (means over the samples scored by both this variant and the unpruned one)."""

    variant: str
    allocator: str
    budget: str
    samples: int
    score: float
    retention: float | None
    tokens_kept: float
    tokens_total: float
    ttft_ms: float
    peak_mib: float


@dataclass
class EvalResult:
    """What a run produced: the table rows, the number of bad samples, and where the files are."""

    rows: list[Row]
    bad: int
    samples: int
    metric: str
    files: dict[str, str] = field(default_factory=dict)


# ----- variants ----------------------------------------------------------------------------------------------------
def is_full(budget: Budget) -> bool:
    """Whether ``budget`` keeps every token (1.0 / 100%): that column is the unpruned model itself."""
    return isinstance(budget, float) and budget >= 1.0


def plan_variants(budgets: Sequence[str], allocators: Sequence[str], details: Sequence[str] = ()) -> list[Variant]:
    """The unpruned model, then every allocator at every budget below the full one, budgets in the given order; with
    ``details``, each allocator that scores tokens also once per level-of-detail mode (``<allocator>+<mode>``).

    Raises:
        ValueError: for a budget ``parse_budget`` refuses, or repeated allocators / budgets.
    """
    if len(set(allocators)) != len(allocators):
        raise ValueError(f"--allocator lists an allocator twice: {' '.join(allocators)}")
    parsed = []
    for text in budgets:
        budget = parse_budget(text.strip())
        if parsed and budget in [b for _, b in parsed]:
            raise ValueError(f"--budgets lists {text!r} twice")
        parsed.append((text.strip(), budget))
    variants = [Variant(UNPRUNED)]
    for label, budget in parsed:
        if is_full(budget):
            continue
        for allocator in allocators:
            variants.append(Variant(f"{allocator}@{label}", allocator, budget, label))
            if allocator in DETAIL_ALLOCATORS:
                for mode in details:
                    variants.append(Variant(f"{allocator}+{mode}@{label}", allocator, budget, label, mode))
    return variants
