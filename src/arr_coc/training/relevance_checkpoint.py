"""The answer objective's checkpoint: a trained :class:`~arr_coc.realizing.Realizer` as a folder (its parameters,
its config with the trained numbers written back, the training card) and back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..config import RelevanceConfig
from ..realizing import Realizer


def config_from_realizer(realizer: Realizer) -> RelevanceConfig:
    """The realizer's config with its trained numbers written back (scorer weights, term weights, cue scales,
    balancer rules), so ``Realizer(config)`` rebuilds the same parameters bit for bit (float32 -> JSON -> float32
    is exact)."""
    cfg = realizer.config
    info, persp, part = realizer.information, realizer.perspectival, realizer.participatory
    return cfg.replace(
        information=dict(zip(info.channels, info.weight.detach().cpu().tolist(), strict=True)),
        perspectival=dict(zip(persp.channels, persp.weight.detach().cpu().tolist(), strict=True)),
        term_weights=tuple(part.term_weight.detach().cpu().tolist()),
        where_scale=float(part.where_scale.detach().cpu()),
        colour_scale=float(part.colour_scale.detach().cpu()),
        balancer_rules=tuple(tuple(row) for row in realizer.balancer.linear.weight.detach().cpu().tolist()),
    )


def save_relevance(realizer: Realizer, folder: str | Path, card: dict[str, Any] | None = None) -> Path:
    """Write ``realizer`` as a checkpoint folder: model.safetensors, config.json, training.json, README.md.

    Args:
        card: what to record (arguments, data, losses, timings); written to ``training.json`` and summarised in
            ``README.md``.
    """
    from safetensors.torch import save_file

    folder = Path(folder).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().float().contiguous() for k, v in realizer.state_dict().items()}
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt", "kind": "arr-coc-relevance"})
    (folder / "config.json").write_text(
        config_from_realizer(realizer).checkpoint_json(indent=2) + "\n", encoding="utf-8"
    )
    card = dict(card or {})
    (folder / "training.json").write_text(json.dumps(card, indent=2, default=str) + "\n", encoding="utf-8")
    (folder / "README.md").write_text(_card_text(card), encoding="utf-8")
    return folder


def load_relevance(folder: str | Path) -> Realizer:
    """The :class:`~arr_coc.realizing.Realizer` saved by :func:`save_relevance` (eval mode, CPU).

    Raises:
        FileNotFoundError: the folder lacks ``config.json`` or ``model.safetensors``.
    """
    from ..checkpoint_check import load_relevance_config, load_tensors

    folder = Path(folder).expanduser()
    for name in ("config.json", "model.safetensors"):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder} is not a relevance checkpoint: {name} is missing")
    realizer = Realizer(load_relevance_config(folder / "config.json"))  # checked; errors name the file
    expected = {k: tuple(v.shape) for k, v in realizer.state_dict().items()}
    realizer.load_state_dict(load_tensors(folder / "model.safetensors", expected), strict=True)
    return realizer.eval()


def _card_text(card: dict[str, Any]) -> str:
    args = card.get("args", {})
    lines = [
        "# ARR-COC-VIS relevance checkpoint (answer objective)",
        "",
        "Relevance model trained on the language-model loss of reference answers with the VLM frozen "
        "(`arr_coc.training.answer`). Load: `arr_coc.training.answer.load_relevance(folder)`.",
        "",
        f"- model: `{args.get('model', '?')}` ({card.get('family', '?')}), frozen",
        f"- data: `{args.get('data', '?')}`: {card.get('samples', '?')} samples used, {card.get('skipped', 0)} skipped",
        f"- steps: {args.get('steps', '?')}, lr {args.get('lr', '?')}, budget {args.get('budget', '?')}, "
        f"gate {args.get('gate', '?')}, evidence weight {args.get('evidence_weight', '?')}, "
        f"seed {args.get('seed', '?')}",
        f"- loss: first 10 steps {card.get('loss_first', float('nan')):.4f}, "
        f"last 10 steps {card.get('loss_last', float('nan')):.4f}",
        f"- step time: median {card.get('step_ms_median', float('nan')):.1f} ms on {card.get('device', '?')}; "
        f"peak memory {card.get('peak_memory_mib', float('nan')):.0f} MiB ({card.get('peak_memory_what', '')})",
        "",
        "`training.json` holds the arguments and the losses of every step.",
        "",
    ]
    return "\n".join(lines)
