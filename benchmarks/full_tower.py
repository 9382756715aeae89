"""The whole page's vision tower two ways: the model's own (SDPA: one attention call per window for Qwen2.5-VL, per
image for Qwen3-VL, and a host read of the lengths per block) against what ``compress`` runs without foveation on
SDPA (``qwen2_5_vl.full_tower``: each window length in one call; Qwen3-VL's ``Qwen3Adapter.run_full_tower``: each
image size in one call). Counts (ops, host syncs, attention calls), median wall ms, and whether the features are
equal bit for bit, at each batch size.

    python benchmarks/full_tower.py --device cuda                          # 7B tower, bfloat16, batch 1 and 8
    python benchmarks/full_tower.py --device cuda --model qwen3-vl-8b      # Qwen3-VL-8B's tower
    python benchmarks/full_tower.py --device cpu --fraction 0.25 --repeat 3  # this machine: a quarter of the blocks

Only the vision tower is built (random weights on the published Qwen2.5-VL-7B vision config, ``--fraction`` of its
blocks with a full-attention block kept last, as ``benchmarks/prefill.py`` cuts it); the page is the example invoice
at ``--tokens`` visual tokens (1,248 for the default 1,300), a batch is B copies. Writes ``--out`` (markdown).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path
from typing import Any

import torch

from arr_coc.testing import proportional_spec  # noqa: E402

try:  # run as a script (benchmarks/ on sys.path) or imported from the repository root
    from prefill import ALL_CONFIGS, make_inputs
    from throughput import full_tower_counts
except ImportError:  # pragma: no cover - depends on how the file is loaded
    from benchmarks.prefill import ALL_CONFIGS, make_inputs
    from benchmarks.throughput import full_tower_counts

ROOT = Path(__file__).resolve().parents[1]


def build_tower(spec: dict[str, Any], dtype: torch.dtype, device: str) -> Any:
    """A random-weight vision tower of ``spec``'s vision config (Qwen2.5-VL or Qwen3-VL), SDPA, eval mode."""
    if spec["family"] == "qwen3_vl":
        from transformers import Qwen3VLConfig as Config
        from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLVisionModel as Tower
    else:
        from transformers import Qwen2_5_VLConfig as Config
        from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VisionTransformerPretrainedModel as Tower

    config = Config(vision_config=spec["vision_config"], text_config=spec["text_config"]).vision_config
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device(device):
        tower = Tower._from_config(config, dtype=dtype)
    return tower.eval()


def grouped_tower(family: str) -> Any:
    """What ``compress`` runs for the whole tower on SDPA, as ``fn(visual, pixels, grid)``."""
    if family != "qwen3_vl":
        return None  # full_tower_counts' default: qwen2_5_vl.full_tower
    from types import SimpleNamespace

    from arr_coc.integrations.qwen3_vl import ADAPTER

    return lambda visual, pixels, grid: ADAPTER.run_full_tower(
        SimpleNamespace(model=SimpleNamespace(visual=visual)), pixels, grid
    )


def main(argv: list[str] | None = None) -> int:
    import transformers

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default=None, help="default bfloat16 on a GPU, float32 on the CPU")
    p.add_argument("--fraction", type=float, default=1.0, help="share of the tower's blocks kept")
    p.add_argument("--tokens", type=int, default=1300, help="max visual tokens of the page")
    p.add_argument("--batches", nargs="+", type=int, default=[1, 8])
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--model", choices=("qwen2.5-vl-7b", "qwen3-vl-8b"), default="qwen2.5-vl-7b")
    p.add_argument("--out", type=Path, default=None, help="markdown file (default: print only)")
    args = p.parse_args(argv)
    on_gpu = args.device.startswith("cuda")
    dtype = getattr(torch, args.dtype or ("bfloat16" if on_gpu else "float32"))
    spec = proportional_spec(ALL_CONFIGS[args.model], args.fraction)
    tower = build_tower(spec, dtype, args.device)
    from PIL import Image

    one, _ = make_inputs(spec, Image.open(ROOT / "examples" / "invoice.jpg").convert("RGB"), "?", args.tokens)
    grid1 = one["image_grid_thw"]
    card = torch.cuda.get_device_name() if on_gpu else f"CPU ({platform.machine()}, {torch.get_num_threads()} threads)"
    lines = [
        f"# The full {args.model} vision tower: the model's own against compress's (each window / image length in one"
        " call)",
        "",
        f"Command: `python benchmarks/{Path(__file__).name} {' '.join(sys.argv[1:] if argv is None else argv)}`",
        "",
        f"{card}, {dtype}, torch {torch.__version__}, transformers {transformers.__version__}, SDPA; random weights "
        f"on the {args.model} vision config, {len(tower.blocks)} blocks (full attention at "
        f"{list(getattr(tower, 'fullatt_block_indexes', range(len(tower.blocks))))}); the example invoice, grid "
        f"{grid1.tolist()[0]} patches ({int(grid1.prod()) // 4} tokens) a page; load average "
        f"{os.getloadavg()[0]:.1f} at the start.",
        "",
        f"| batch | tower | ops | host syncs | attention calls | ms (median of {args.repeat}) | equal bit for bit |",
        "|---:|---|---:|---:|---:|---:|---|",
    ]
    for b in args.batches:
        pixels = one["pixel_values"].repeat(b, 1).to(args.device, dtype)
        grid = grid1.repeat(b, 1).to(args.device)
        r = full_tower_counts(tower, pixels, grid, args.repeat, args.device, grouped_tower(spec["family"]))
        for name, label in (("own", "model's own"), ("grouped", "compress's")):
            c = r[name]
            cells = [b, label, c["ops"], c["syncs"], c["attention_calls"], f"{r['ms'][name]:,.1f}"]
            lines.append("| " + " | ".join(map(str, cells)) + f" | {'yes' if r['equal'] else 'NO'} |")
        print(lines[-2], lines[-1], sep="\n", flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
