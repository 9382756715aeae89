"""``arr-coc eval``'s report: the results table from the prediction records (:func:`summarize`), as markdown
(:func:`markdown_table`), and the header and config of ``results.md`` / ``results.json``. Moved from :mod:`.runner`
unchanged; :mod:`.runner` re-exports every name."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..attending import parse_budget
from .variants import UNPRUNED, EvalConfig, Row, Variant


# ----- the table ---------------------------------------------------------------------------------------------------
def summarize(records: list[dict[str, Any]], variants: list[Variant], ids: Sequence[str]) -> list[Row]:
    """Table rows from prediction records: per variant, means over the samples of ``ids`` it scored.

    ``retention`` compares with the unpruned model on the samples both scored (``None`` when there are none or the
    unpruned score is 0).
    """
    wanted = set(ids)
    by_variant: dict[str, dict[str, dict[str, Any]]] = {v.name: {} for v in variants}
    for r in records:
        if r.get("variant") in by_variant and str(r.get("id")) in wanted:
            by_variant[r["variant"]][str(r["id"])] = r  # the last line of an id wins
    base = by_variant[UNPRUNED]
    rows = []
    for v in variants:
        got = by_variant[v.name]
        if not got:
            continue
        scored = list(got.values())
        common = [i for i in got if i in base]
        base_score = _mean(base[i]["score"] for i in common)
        retention = _mean(got[i]["score"] for i in common) / base_score if common and base_score > 0 else None
        rows.append(
            Row(
                v.name,
                v.shown,
                v.label if v.allocator else "1.0",
                len(scored),
                _mean(r["score"] for r in scored),
                retention,
                _mean(r["tokens_kept"] for r in scored),
                _mean(r["tokens_total"] for r in scored),
                _mean(r["ttft_ms"] for r in scored),
                max(r["peak_bytes"] for r in scored) / 2**20,
            )
        )
    return rows


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def _budget_text(label: str) -> str:
    budget = parse_budget(label)
    if isinstance(budget, float):
        return f"{100 * budget:.1f}%"
    return str(budget) if budget == "adaptive" else f"{budget} tokens"


def markdown_table(rows: list[Row], metric: str) -> str:
    """The results table (see the module docstring) as markdown."""
    lines = [
        f"| allocator | budget | samples | {metric} | retention | visual tokens kept | TTFT ms | peak MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        share = 100 * r.tokens_kept / r.tokens_total if r.tokens_total else float("nan")
        retention = "—" if r.retention is None else f"{r.retention:.3f}"
        lines.append(
            f"| {r.allocator} | {_budget_text(r.budget)} | {r.samples} | {r.score:.4f} | {retention} | "
            f"{r.tokens_kept:,.1f} ({share:.1f}%) | {r.ttft_ms:,.1f} | {r.peak_mib:,.0f} |"
        )
    return "\n".join(lines)


def _header(cfg, task, metric, dataset, device, model_type, bounds, n, bad) -> str:
    dtype = cfg.dtype
    peak = "CUDA max_memory_allocated per call" if str(device).startswith("cuda") else "process peak RSS so far"
    return (
        f"# arr-coc eval: {task.name} ({metric})\n\n"
        f"model `{cfg.model}` ({model_type}, dtype {dtype}, {device}); data: {dataset.describe()}; "
        f"{n} samples ({bad} unreadable, see predictions.jsonl); batch size {cfg.batch_size}; "
        f"pixels {bounds[0]:,}..{bounds[1]:,}; greedy, max {cfg.max_new_tokens or task.max_new_tokens} new tokens; "
        f"peak memory: {peak}."
    )


def _config_json(cfg: EvalConfig) -> dict[str, Any]:
    return {
        k: (str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v) for k, v in asdict(cfg).items()
    }
