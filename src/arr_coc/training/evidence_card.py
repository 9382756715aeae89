"""The evidence checkpoint's card (its README.md) and the rule that decides whether the learned scorer becomes the
default: pure functions of the run's ``metrics.json`` data (``meta``), written by :mod:`arr_coc.training.evidence`.
"""

from __future__ import annotations

from typing import Any

from ..reading.matching.learned import FEATURE_GROUPS, FEATURES


def decide(meta: dict[str, Any]) -> dict[str, Any]:
    """Issue 26's rule: the learned scorer becomes the default only if, on source-grouped folds, it is better than
    the rules overall and worse in no doc_type and no wording, and the same on docgen's test split (which must be
    measured) and on held-out sources (when there are any). Returns
    {"default": "learned" | "rules", "losses": [...], "gains": [...]}."""
    losses, gains = [], []
    nested = meta["heldout"].get("nested")
    if meta["folds_by"] != "source":
        losses.append("validated on document-level folds only (optimistic): no default decision")
    if nested is not None:
        for by in ("doc_type", "wording"):
            for g, v in nested[by].items():
                d = v["recall"] - meta["heldout"]["rules"][by][g]["recall"]
                (losses if d < -1e-9 else gains).append(f"{g} {d:+.3f}")
    test = meta.get("docgen_test") or {}
    if not test:
        losses.append("docgen test split not measured (--docgen-test N)")
    for g, v in (meta.get("holdout") or {}).get(meta["family"], {}).items():
        d = v["recall"] - meta["holdout"]["rules"][g]["recall"]
        if d < -1e-9:
            losses.append(f"held-out sources {g} {d:+.3f}")
    if "rules" in test and meta["family"] in test and meta["family"] != "rules":
        for g, v in test[meta["family"]].items():
            d = v["recall"] - test["rules"][g]["recall"]
            (losses if d < -1e-9 else gains).append(f"docgen test {g} {d:+.3f}")
    overall = nested is not None and (
        nested["doc_type"]["overall"]["recall"] > meta["heldout"]["rules"]["doc_type"]["overall"]["recall"]
    )
    default = "learned" if overall and not losses and meta["family"] != "rules" else "rules"
    return {"default": default, "losses": losses, "gains": gains}


def card(meta: dict[str, Any]) -> str:
    """The checkpoint's README.md: data, folds, choice, held-out figures with their spread, held-out sources,
    ablation, decision, command, time."""
    optimistic = meta["folds_by"] == "document"
    lines = [
        "# ARR-COC-VIS learned box scorer (evidence objective)",
        "",
        f"- command: `{meta['command']}`",
        f"- data: {meta['data']}",
        f"- folds: {meta['folds']} outer {'DOCUMENT-level (optimistic)' if optimistic else 'source-grouped'} folds"
        f" ({meta['n_sources']} sources), {meta['inner_folds']} inner folds for the choice, seed {meta['seed']}",
        f"- candidates: {', '.join(meta['candidates'])}; chosen per outer fold: "
        + ", ".join(f"{f}: {c}" for f, c in meta["choice"].items()),
        f"- final model: **{meta['family']}** (chosen by macro recall @11.1% over all outer folds: "
        + ", ".join(f"{n} {v:.3f}" for n, v in meta["family_recall"].items())
        + ")",
        f"- features: {len(FEATURES)} per box in {len(FEATURE_GROUPS)} groups ({', '.join(FEATURE_GROUPS)})",
        f"- training time: {meta['train_s']:.0f} s wall on {meta['cpus']} CPU core(s) (OCR from cache: "
        f"{meta['ocr_cached']}); feature extraction {meta['extract_s']:.0f} s; whole command {meta['wall_s']:.0f} s",
        f"- default decision (issue 26): **{meta['decision']['default']}**"
        + (f"; losses: {', '.join(meta['decision']['losses'])}" if meta["decision"]["losses"] else ""),
        "",
        "Figures: the text map's evidence recall / full-hit at 11.1% of the tokens on each question's held-out "
        "fold, [min-max of the per-fold means]; `nested` is the candidate chosen inside each training part (the "
        "honest figure), the other rows are fixed candidates.",
        "",
    ]
    for by in ("doc_type", "wording"):
        lines += _table(f"## Held-out by {by}", {n: t[by] for n, t in meta["heldout"].items()}, meta.get("spread"))
    if meta.get("holdout"):
        lines += _table(
            f"## Held-out sources ({', '.join(meta['holdout_sources'])}): never trained, validated or chosen on",
            meta["holdout"],
        )
    if meta.get("docgen_test"):
        lines += _table("## docgen test split (reported only; never trained or selected on)", meta["docgen_test"])
    return "\n".join(lines) + "\n"


def _cell(v: dict[str, float]) -> str:
    return f"{v['recall']:.3f} / {v['full_hit']:.2f}"


def _table(title: str, tables: dict[str, dict[str, dict[str, float]]], spread: dict | None = None) -> list[str]:
    """A Markdown table: rows = models, columns = groups (recall / full-hit [min-max over folds])."""
    groups: list[str] = []
    for t in tables.values():
        groups += [g for g in t if g not in groups]
    groups = sorted(groups, key=lambda g: (g == "overall", g))
    n = {g: next(t[g]["n"] for t in tables.values() if g in t) for g in groups}
    lines = [title, "", "| model | " + " | ".join(f"{g} (n={n[g]})" for g in groups) + " |"]
    lines.append("|---|" + "---:|" * len(groups))
    for name, t in tables.items():
        cells = []
        for g in groups:
            if g not in t:
                cells.append("–")
                continue
            c = _cell(t[g])
            if spread and name in spread and g in spread[name]:
                sp = spread[name][g]
                c += f" [{sp['min']:.2f}-{sp['max']:.2f}]"
            cells.append(c)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines + [""]
