"""Tiles chosen before the vision tower (InternVL, LLaVA-OneVision): tower time and tokens, unpruned against 22% / 11%.

    nice python benchmarks/throughput.py --tiled internvl3-2b llava-onevision-7b --repeat 1 --out results/tiles.md
    nice python benchmarks/tile_foveation.py --models internvl3-2b --repeat 1 --out /tmp/t.md   # the same, directly

Random weights on the published configs' vision towers and projectors (InternVL3-2B / -8B: InternViT-300M-448px,
pixel shuffle, an MLP to the LM's width -- the two differ in the projector's output width only; LLaVA-OneVision-7B:
SigLIP-so400m-384, 26 layers, an MLP to Qwen2-7B's width), built from config dicts (no hub). The language model is
cut to one layer: it is not timed. The page (``examples/invoice.jpg``) is tiled as the processor tiles it
(:func:`arr_coc.tiling.tile_images`: InternVL up to 12 tiles of 448 px + the thumbnail; OneVision the base view +
the anyres tiles of the published ``image_grid_pinpoints``), and ``allocate`` (texture mode, the question below)
decides which tokens stay at each budget, in the model's token order -- what ``compress`` keeps.

Rows: ``unpruned`` = the model's tower on every tile (:meth:`Adapter.encode`); ``foveate b`` = the tower on the tiles
with a kept token and the thumbnail / base view only (:meth:`Adapter.encode_kept`, what ``compress(foveate=True)``
runs, OneVision's packing included), with the tokens ``allocate`` keeps; ``foveate b, tiles by relevance`` = the same
count of tokens concentrated in the fewest tiles (:func:`concentrated`: the tiles holding most of the top cells'
relevance until they hold twice the budget, then the top cells among them: a what-if of a tile-level choice, not a
``compress`` option yet). Columns: visual tokens the LM gets, tiles the tower encodes, tower ms (median of
``--repeat`` after one warm-up run on one tile), speed-up against unpruned, and the decision's own time (``allocate``).
On a shared CPU the times are under contention (the load average is printed): compare rows, not machines.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "examples" / "invoice.jpg"
QUESTION = "What is the total amount due on this invoice, and by which date must it be paid?"
_INTERNVIT = dict(
    hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16, image_size=448,
    patch_size=14, norm_type="layer_norm", use_qk_norm=False, layer_scale_init_value=0.1,
)  # fmt: skip
_SIGLIP = dict(
    model_type="siglip_vision_model", hidden_size=1152, intermediate_size=4304, num_hidden_layers=26,
    num_attention_heads=16, image_size=384, patch_size=14,
)  # fmt: skip


def _text(hidden: int) -> dict[str, Any]:
    return dict(model_type="qwen2", vocab_size=1024, hidden_size=hidden, intermediate_size=256, num_hidden_layers=1,
                num_attention_heads=hidden // 128, num_key_value_heads=2)  # fmt: skip


CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "internvl3-2b": ("internvl", dict(vision_config=_INTERNVIT, text_config=_text(1536), downsample_ratio=0.5)),
    "internvl3-8b": ("internvl", dict(vision_config=_INTERNVIT, text_config=_text(3584), downsample_ratio=0.5)),
    "llava-onevision-7b": (
        "llava-onevision",
        dict(
            vision_config=_SIGLIP,
            text_config=_text(3584),
            vision_feature_select_strategy="full",
            vision_feature_layer=-1,
            vision_aspect_ratio="anyres_max_9",
        ),
    ),  # fmt: skip
}
BUDGETS = (0.222, 0.111)


def build(name: str) -> Any:
    import transformers as tf

    family, cfg = CONFIGS[name]
    torch.manual_seed(0)
    if family == "internvl":
        model = tf.InternVLForConditionalGeneration(tf.InternVLConfig(**cfg, image_token_id=1000))
    else:
        from arr_coc.tiling import ONEVISION_PINPOINTS

        config = tf.LlavaOnevisionConfig(**cfg, image_token_id=1000, video_token_id=1001,
                                         image_grid_pinpoints=ONEVISION_PINPOINTS)  # fmt: skip
        model = tf.LlavaOnevisionForConditionalGeneration(config)
    return model.eval()


def page_pixels(family: Any, page: Any) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """(layout, pixel_values as the processor normalises them, the host grid ``compress`` locates)."""
    from arr_coc.tiling import tile_images

    lay, frames, _ = tile_images(page, family.tiles)
    mean = torch.tensor(family.image_mean).view(1, 3, 1, 1)
    std = torch.tensor(family.image_std).view(1, 3, 1, 1)
    px = (frames.float() / 255 - mean) / std  # (tiles, 3, S, S)
    if family.tiles == "internvl":
        grid = torch.tensor([[lay.n_tiles, 2 * lay.side, 2 * lay.side]])
        return lay, px, grid
    return lay, px.unsqueeze(0), torch.tensor([[lay.height, lay.width, 1]])


def tile_of_tokens(lay: Any) -> Any:
    """Per visual token, the tile it is a cell of (-1: the thumbnail / base view, always encoded; -2: a newline)."""
    import numpy as np

    from arr_coc.tiling import InternVLTiles

    if isinstance(lay, InternVLTiles):
        tile = np.arange(lay.n_tokens) // (lay.side * lay.side)
        return np.where(tile == lay.rows * lay.cols, -1, tile)
    out = np.full(lay.n_tokens, -1)
    out[lay.newline_tokens()] = -2
    h, w = lay.final
    uh, uw = lay.unpadded
    r, c = np.divmod(np.arange(h * w), w)
    mr = (r + 0.5) * uh / h + lay.crop[0]  # the cell's centre on the mosaic
    mc = (c + 0.5) * uw / w + lay.crop[2]
    out[lay.anyres_tokens()] = (mr // lay.side).astype(int) * lay.cols + (mc // lay.side).astype(int)
    return out


def concentrated(scores: Any, k: int, lay: Any) -> torch.Tensor:
    """A tile-level choice (a what-if, not a compress option): the tiles holding the most of the top-k cells'
    relevance, fewest first, until they hold 2k cells; then the top-k cells among them and the thumbnail / base view
    (OneVision: every newline kept)."""
    import numpy as np

    from arr_coc.tiling import OneVisionTiles, newlines_stay

    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    tile = tile_of_tokens(lay)
    cand = np.flatnonzero(tile != -2)
    top = cand[np.argsort(-s[cand], kind="stable")[:k]]
    detail = top[tile[top] >= 0]
    mass = np.bincount(tile[detail], weights=s[detail] - s[cand].min() + 1e-6, minlength=int(tile.max()) + 1)
    chosen: list[int] = []
    for t in np.argsort(-mass, kind="stable"):
        if mass[t] <= 0 or sum(int((tile == c).sum()) for c in chosen) >= 2 * k:
            break
        chosen.append(int(t))
    allowed = cand[np.isin(tile[cand], [-1, *chosen])]
    keep = np.zeros(s.size, dtype=bool)
    keep[allowed[np.argsort(-s[allowed], kind="stable")[:k]]] = True
    if isinstance(lay, OneVisionTiles):
        keep, _ = newlines_stay(keep, s, lay)
    return torch.from_numpy(np.flatnonzero(keep))


def median_ms(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        with torch.no_grad():
            fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def bench(name: str, repeat: int, log: Any) -> list[dict[str, Any]]:
    from PIL import Image

    from arr_coc import allocate
    from arr_coc.families import get_family, load_object

    family_name, _ = CONFIGS[name]
    family = get_family(family_name)
    adapter = load_object(family.classes[0].adapter)
    model = build(name)
    page = Image.open(PAGE).convert("RGB")
    lay, px, grid = page_pixels(family, page)
    n_tiles = lay.n_tiles if family_name == "internvl" else 1 + lay.rows * lay.cols
    log(f"{name}: {lay.n_tokens} visual tokens, {n_tiles} tiles; warming up")
    with torch.no_grad():  # warm-up: one tile
        adapter.encode_kept(model, "image", px, grid, [torch.tensor([0])], grid.numpy())
    rows = [{"row": "unpruned", "tokens": lay.n_tokens, "tiles": n_tiles, "decision_ms": None,
             "tower_ms": median_ms(lambda: adapter.encode(model, "image", px, grid), repeat)}]  # fmt: skip
    log(f"  unpruned: {rows[0]['tower_ms']:,.0f} ms")
    for budget in BUDGETS:
        t0 = time.perf_counter()
        a = allocate(page, QUESTION, budget, family=family_name, mode="texture")
        decision_ms = (time.perf_counter() - t0) * 1e3
        keep = a.keep
        enc: dict[str, Any] = {}
        cells = int(keep.numel()) - (len(lay.newline_tokens()) if hasattr(lay, "newline_tokens") else 0)
        for how, kept in (("", keep), (", tiles by relevance", concentrated(a.scores, cells, lay))):

            def fovea(kept: torch.Tensor = kept, enc: dict[str, Any] = enc) -> None:
                enc["out"] = adapter.encode_kept(model, "image", px, grid, [kept], grid.numpy())

            ms = median_ms(fovea, repeat)
            encoded = enc["out"].raw.encoded_tiles
            rows.append({"row": f"foveate {100 * budget:.1f}%{how}", "tokens": int(kept.numel()),
                         "tiles": len(encoded), "tower_ms": ms, "decision_ms": decision_ms})  # fmt: skip
            log(f"  {rows[-1]['row']}: {kept.numel()} tokens, {len(encoded)} tiles, {ms:,.0f} ms")
    for r in rows:
        r["speedup"] = rows[0]["tower_ms"] / r["tower_ms"]
        r["model"] = name
        r["layout"] = lay.to_json()["tiles"]
    return rows


def render(rows: list[dict[str, Any]], command: str, repeat: int, layers: int | None = None) -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    out = [
        "# Tiles chosen before the vision tower: tower time and tokens (InternVL, LLaVA-OneVision)",
        "",
        f"Command: `{command}`",
        "",
        f"CPU ({os.cpu_count()} cores, torch {torch.__version__}, {torch.get_num_threads()} threads), float32, random "
        f"weights on the published configs' towers; median of {repeat} run(s) after a one-tile warm-up; load average "
        f"at the start {load:.1f} (timings under contention: compare rows, not machines). Page `examples/invoice.jpg`,"
        " tiled as the processor tiles it; the kept tokens are `allocate`'s (texture mode) at each budget."
        + (
            f" Vision towers cut to {layers} layers (of 24 InternViT / 26 SigLIP): every block is alike, so the tower's"
            " time scales with depth and the speed-ups hold."
            if layers
            else ""
        ),
        "",
        "Rows that encode every tile do the unpruned tower's work (OneVision: plus its packing), so their time differs "
        "from unpruned by the machine's load alone; the tower's work is in proportion to the tiles encoded (each tile "
        "is encoded alone, the same size), the exact measure here. The first decision of a process includes loading "
        "the relevance model.",
        "",
        "| model | tiles (rows x cols) | row | visual tokens | tiles encoded | tower ms | tower speed-up "
        "| decision ms |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        d = "—" if r["decision_ms"] is None else f"{r['decision_ms']:,.0f}"
        out.append(f"| {r['model']} | {r['layout'][0]} x {r['layout'][1]} | {r['row']} | {r['tokens']:,} | "
                   f"{r['tiles']} | {r['tower_ms']:,.0f} | {r['speedup']:.2f}x | {d} |")  # fmt: skip
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None, command: str | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", choices=sorted(CONFIGS), default=["internvl3-2b", "llava-onevision-7b"])
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--layers", type=int, default=None, help="vision layers kept (default all; time scales with depth)")
    p.add_argument("--out", type=Path, default=Path("results/tiles.md"))
    args = p.parse_args(argv)
    command = command or "python benchmarks/tile_foveation.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    rows: list[dict[str, Any]] = []
    if args.layers:  # a cut tower: every block is alike, so the tower's time scales with its depth
        for _, cfg in CONFIGS.values():
            cfg["vision_config"] = dict(cfg["vision_config"], num_hidden_layers=args.layers)
    for name in args.models:
        rows += bench(name, args.repeat, lambda m: print(m, flush=True))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(rows, command, args.repeat, args.layers))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
