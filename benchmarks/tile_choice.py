"""Tiles the foveated tower encodes with ``compress(tile_choice="spread" | "concentrate")`` (InternVL, LLaVA-OneVision).

    PYTHONPATH=src python benchmarks/tile_choice.py [--families internvl llava-onevision]

``compress`` (the default decision, texture mode) on ``examples/invoice.jpg`` and the question of
``benchmarks/tile_foveation.py``, with the tiny checkpoints of :mod:`arr_coc.tiny_tiled` (random weights, but the
published tiling: InternVL 448-px tiles, 1 to 12 + the thumbnail; OneVision 384-px tiles of the published
``image_grid_pinpoints`` + the base view). Per budget (22.2%, 11.1%): the tokens kept and the tiles ``foveate=True``
encodes (the adapters' own ``selected_tiles`` / ``tiles_read`` on the kept set, the thumbnail / base view included).
The tower's work is in proportion to the tiles encoded (each tile alone, the same size; results/tiles.md times it on
the published towers). No timing here: the count is exact and machine-independent.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tiles_encoded(family: str, cm, inputs, keep) -> int:
    """Tiles ``compress(foveate=True)`` encodes for the kept set ``keep`` of the one image in ``inputs``."""
    from arr_coc.integrations.internvl import selected_tiles
    from arr_coc.integrations.llava_onevision import tiles_read

    rest = {k: v for k, v in inputs.items() if k != "input_ids"}
    (item,) = cm._find_items(inputs["input_ids"], rest).items
    if family == "internvl":
        return len(selected_tiles(keep, int(item.grid_thw[0]), len(item.cols) // int(item.grid_thw[0])))
    return len(tiles_read(item.layout, keep))


def main(argv: Sequence[str] | None = None) -> int:
    import numpy as np
    import torch
    from PIL import Image

    from arr_coc.integrations import compress
    from arr_coc.loading import build_inputs, load_model, visual_tokens
    from arr_coc.testing import tiny_checkpoint

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from tile_foveation import PAGE, QUESTION  # the page and question of results/tiles.md

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families", nargs="+", default=["internvl", "llava-onevision"])
    args = parser.parse_args(argv)
    page = Image.open(PAGE).convert("RGB")
    print("| model | budget | tile_choice | visual tokens | tiles encoded |\n|---|---:|---|---:|---:|")
    for family in args.families:
        with tempfile.TemporaryDirectory() as tmp:
            processor, model = load_model(str(tiny_checkpoint(family, tmp)), "auto", "cpu")
            inputs = build_inputs(processor, page, QUESTION)
            n = visual_tokens(model, inputs)
            every = tiles_encoded(family, compress(model, budget=1.0), inputs, np.arange(n))
            print(f"| {family} | unpruned | | {n:,} | {every} |")
            for budget in (2 / 9, 1 / 9):
                for choice in ("spread", "concentrate"):
                    cm = compress(model, budget=budget, processor=processor, foveate=True, tile_choice=choice)
                    with torch.no_grad():
                        cm(**inputs)
                    (alloc,) = cm.last_allocation[0]
                    k = alloc.keep.cpu().numpy()
                    tiles = tiles_encoded(family, cm, inputs, k)
                    print(f"| {family} | {budget:.1%} | {choice} | {alloc.budget:,} | {tiles} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
