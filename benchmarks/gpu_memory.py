"""How much GPU memory a Qwen-VL 3B / 4B / 7B / 8B needs: COMPUTED from the published configs, not measured.

Each model is built on PyTorch's ``meta`` device (shapes, no storage) from ``benchmarks/prefill.py``'s
:data:`CONFIGS` (the published ``config.json`` values of Qwen2.5-VL-3B/7B-Instruct and Qwen3-VL-4B/8B-Instruct,
transcribed there; nothing is downloaded), its parameters counted, and the memory of the weights and of the KV cache
worked out for a 16-bit dtype. Activations, the CUDA context (~0.5 GB) and the allocator's slack come on top: measure
those on the GPU (``arr-coc ask ... --device cuda`` prints the peak).

    python benchmarks/gpu_memory.py                         # prints the table
    python benchmarks/gpu_memory.py --out results/gpu_memory.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from benchmarks.prefill import CONFIGS, build_model  # noqa: E402

GB = 1e9


def count(name: str) -> dict[str, int]:
    """Parameters (all, vision tower) and KV-cache elements per token of ``CONFIGS[name]``, from a meta-device build."""
    model = build_model(name, CONFIGS[name], torch.bfloat16, "meta")
    unique = {id(p): p for p in model.parameters()}  # tied embeddings count once
    vision = sum(p.numel() for p in model.model.visual.parameters())
    total = sum(p.numel() for p in unique.values())
    t = model.config.get_text_config()
    head_dim = getattr(t, "head_dim", None) or t.hidden_size // t.num_attention_heads
    kv_per_token = 2 * t.num_hidden_layers * t.num_key_value_heads * head_dim  # K and V, every layer
    return {"total": total, "vision": vision, "kv_per_token": kv_per_token}


def table(dtype_bytes: int = 2, contexts: tuple[int, ...] = (1300, 8192)) -> str:
    """A Markdown table of the computed figures (``dtype_bytes`` 2 = bfloat16 / float16)."""
    head = f"| model | parameters | vision tower | weights ({8 * dtype_bytes}-bit) | KV cache per 1k tokens |"
    head += "".join(f" weights + KV at {c:,} tokens |" for c in contexts)
    rows = [head, "|" + "---|" * (5 + len(contexts))]
    for name in CONFIGS:
        c = count(name)
        weights = c["total"] * dtype_bytes
        kv = c["kv_per_token"] * dtype_bytes
        row = f"| {name} | {c['total'] / 1e9:.2f} B | {c['vision'] / 1e6:.0f} M | {weights / GB:.1f} GB | "
        row += f"{1000 * kv / GB:.3f} GB |"
        row += "".join(f" {(weights + n * kv) / GB:.1f} GB |" for n in contexts)
        rows.append(row)
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this Markdown file")
    args = parser.parse_args(argv)
    text = table()
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            "Computed (not measured) by `python benchmarks/gpu_memory.py`: bfloat16 weights and KV cache of a batch of "
            "one; activations, the CUDA context and allocator slack come on top.\n\n" + text + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
