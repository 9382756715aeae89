"""Ops and host syncs of the token decision, counted on the CPU: what a GPU's launch queue pays per decision.

    python benchmarks/decision_ops.py                       # table to stdout and results/decision_ops.md
    python benchmarks/decision_ops.py --no-compress         # Realizer.relevance rows only (seconds)

Counts come from :class:`arr_coc.profiling.OpCounter` (a ``TorchDispatchMode``: every aten op, and every host sync:
``item``, value-sized outputs such as ``nonzero``, copies to the host; see its docstring). They are deterministic, so
one run is enough and contention does not change them. CPU banding (``EngineConfig.cpu_band_elements``, the
texture path's bands of cell rows that keep each op below torch's intra-op split size on a CPU) is OFF
(``cpu_band_elements=0``): the rows count what a GPU launches, where bands are never used.

Rows:

* ``Realizer.relevance`` on the example invoice at the Qwen2.5-VL grid (1,248 tokens, 39 x 32), for 1 and 8 frames,
  in texture mode (query cues only) and text-prior mode (a (T, rows, cols) prior given, as the OCR path passes it;
  the OCR itself is not counted here: it runs on the host, ``benchmarks/stages.py``).
* ``compress`` (drop, budget 22%): the ops and syncs a ``compress``-wrapped forward makes on top of the unwrapped
  forward of the same tiny Qwen2.5-VL (``arr_coc.testing.tiny_model``) on the same processor inputs (the example
  invoice and receipt, one question each), at batch 1 and 8, texture mode: (compress forward) - (unwrapped forward)
  - (compress's full tower - the model's own tower): on SDPA ``compress`` runs the Qwen2.5-VL tower with each window
  length in one attention call (``qwen2_5_vl.full_tower``, the same features bit for bit, fewer ops and syncs than
  the model's per-window tower); its savings are listed in the detail, not netted against the decision.
  Batch 8 twice: the invoice and the receipt alternating (two page sizes: the relevance runs one pass per size), and
  eight invoices (one size, one pass). The added syncs are listed by cause (the model's own forward, given the
  pruned encoder outputs and positions, makes some syncs fewer than the unwrapped one: the net can be below 2).
* ``compress(foveate=True)`` (the decision before the vision tower, budget 22%): the whole wrapped forward against
  the unwrapped one (the tower runs on the kept patches only, so "added" mixes the decision's ops with the tower's
  savings, and can be negative; the syncs are listed by cause). The tower's inputs for the kept patches (rows,
  rotary positions, segments, windows) are built from the decision's host copy on the host and uploaded once: those
  ops run on host tensors, launch nothing on a GPU and are counted apart (``OpCounter.host_ops``, the last column;
  ``arr_coc.profiling.on_host``).

* The text path's OCR page keys hashed where the frames lie (``arr_coc.caching.device_digests``, what a text-mode
  decision on a GPU runs instead of copying each frame to the host and hashing it there): 1 and 8 frames.
* The document decision of a 4-image prompt (``integrations.document_budget.split_prompt``: one budget over the
  pages, then each page's share spent from its key spans, the step ``compress(budget_scope="prompt")`` and the vLLM
  plugin run after scoring): pages 1-4 of ``examples/report.pdf``, their scorings from the text layer
  (``benchmarks/pages_model.py``'s ``document_scorings``), 1% of their tokens, before the in-page rule
  (``PagesConfig(focus=0)``, main f9708bb's path) and with it. Its tensors are host copies of the scores (one
  ``.cpu()`` a page, the syncs counted here on a GPU): what the rule adds runs on the host and launches nothing.
* ``Realizer.relevance`` and ``compress`` with the texture as a CUDA graph (``EngineConfig.texture_graphs``): the
  replay counted as one launch (``arr_coc.graphs.opaque_capture`` stands in for the graph on the CPU); the rest as it
  runs.

Targets: relevance <= 150 ops for one frame and <= 1.5x that for eight; compress adds <= 200 ops at batch 1,
<= 1.5x that at batch 8, and <= 2 host syncs per forward.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

import arr_coc
from arr_coc.caching import device_digests
from arr_coc.engine import EngineConfig
from arr_coc.graphs import ShapeGraphs, opaque_capture
from arr_coc.grid import GridSpec
from arr_coc.profiling import OpCounter
from arr_coc.texture import frames_from_image

ROOT = Path(__file__).resolve().parents[1]
QUERY = "How much must be paid?"
if str(ROOT) not in sys.path:  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(ROOT))


def _frames(n: int) -> tuple[torch.Tensor, tuple[int, int]]:
    """(n, 3, H, W) uint8 frames of the example invoice (frame i shifted by i pixels, so frames differ)."""
    from PIL import Image

    image = Image.open(ROOT / "examples" / "invoice.jpg")
    grid = GridSpec.for_family("qwen2.5-vl").grid_for(image.height, image.width)
    frame = frames_from_image(image, grid)  # (1, 3, H, W)
    frames = torch.cat([torch.roll(frame, shifts=i, dims=3) for i in range(n)])
    return frames, (grid.rows, grid.cols)


def _prior(frames: torch.Tensor, grid: tuple[int, int]) -> torch.Tensor:
    """A deterministic (T, rows, cols) text prior in [0, 1] (a few word-like blocks)."""
    t = frames.shape[0]
    prior = torch.zeros(t, *grid)
    prior[:, 5:7, 3:12] = 1.0
    prior[:, 20:22, 18:28] = 0.6
    return prior


def graphed_realizer() -> arr_coc.Realizer:
    """A realizer with the texture as a CUDA graph (``EngineConfig.texture_graphs``) as a GPU would run it, counted
    on the CPU: the graph's replay stands in as one launch (``opaque_capture``), counted apart (``replays``)."""
    graphed = arr_coc.Realizer(engine=EngineConfig(cpu_band_elements=0, texture_cache_items=0)).eval()
    graphed.texture_graphs = ShapeGraphs(graphed._texture_eager, 8, after=1, capture=opaque_capture,
                                         devices=("cpu",), under_modes=True)  # fmt: skip
    return graphed


def relevance_rows(realizer: arr_coc.Realizer) -> list[dict]:
    rows = []
    for mode in ("texture", "text prior"):
        for n in (1, 8):
            frames, grid = _frames(n)
            prior = _prior(frames, grid) if mode == "text prior" else None
            realizer.relevance(frames, grid, QUERY, prior=prior)  # warm-up (lazy caches are built once)
            with OpCounter() as c:
                realizer.relevance(frames, grid, QUERY, prior=prior)
            rows.append(dict(what=f"Realizer.relevance, {mode}", batch=f"{n} frame{'s' if n > 1 else ''}",
                             ops=c.n_ops, syncs=c.n_syncs, detail=c.summary(6)))  # fmt: skip
    for n in (1, 8):  # the text path's page keys where the frames lie (a GPU: 16 bytes a page to the host)
        frames, grid = _frames(n)
        items = list(frames.split(1))  # n one-frame items, as a decision of n pages passes them
        device_digests(items, "picture")  # warm-up (the coefficients)
        with OpCounter() as c:
            device_digests(items, "picture")
        rows.append(dict(what="the OCR cache's page keys hashed on the device (caching.device_digests)",
                         batch=f"{n} page{'s' if n > 1 else ''}", ops=c.n_ops, syncs=c.n_syncs,
                         detail=f"{16 * n} bytes to the host where the copy for a host digest moved "
                         f"{frames.numel():,}; " + c.summary(6)))  # fmt: skip
    graphed = graphed_realizer()
    for n in (1, 8):
        frames, grid = _frames(n)
        graphed.relevance(frames, grid, QUERY)  # warm-up and capture
        replays = graphed.texture_graphs.replays
        with OpCounter() as c:
            graphed.relevance(frames, grid, QUERY)
        launches = graphed.texture_graphs.replays - replays
        rows.append(dict(what="Realizer.relevance, texture, the texture as a CUDA graph", batch=f"{n} frame"
                         f"{'s' if n > 1 else ''}", ops=c.n_ops + launches, syncs=c.n_syncs,
                         detail=f"{c.n_ops} ops outside the graph + {launches} replay; " + c.summary(6)))  # fmt: skip
    return rows


def document_rows() -> list[dict]:
    """The document decision of a 4-image prompt, before and with the in-page rule (see the module doc)."""
    from benchmarks.pages_model import Q_DOC, document_decision, document_scorings

    scorings = document_scorings()
    rows = []
    for focus, label in ((0.0, "before the in-page rule"), (0.5, "with the in-page rule")):
        document_decision(scorings, focus)  # warm-up (the pages' words, the units' tables)
        with OpCounter() as c:
            document_decision(scorings, focus)
        rows.append(dict(what=f"the document decision of a 4-image prompt (split_prompt, text), {label}",
                         batch="4 pages", ops=c.n_ops, syncs=c.n_syncs,
                         detail=f"report.pdf pages 1-4, {Q_DOC!r}, 1%; " + c.summary(6)))  # fmt: skip
    return rows


def _inputs(processor, n: int, one_size: bool = False) -> dict:
    from PIL import Image

    names = ["invoice.jpg", "invoice.jpg" if one_size else "receipt.jpg"]
    queries = ["How much must be paid?", "What is the total?"]
    texts, images = [], []
    for i in range(n):
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": queries[i % 2]}]}]
        texts.append(processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
        images.append(Image.open(ROOT / "examples" / names[i % 2]).convert("RGB"))
    return dict(processor(text=texts, images=images, return_tensors="pt", padding=True))


def compress_rows(realizer: arr_coc.Realizer, cases: list | None = None, graphs: bool = False) -> list[dict]:
    """The compress rows; ``graphs``: ``realizer`` runs the texture as a graph (``graphed_realizer``), its replays
    counted as one launch each."""
    from arr_coc.testing import tiny_model, tower_counts

    model, processor = tiny_model("qwen2.5-vl")
    rows = []
    cases = cases or [(False, 1, False), (False, 8, False), (False, 8, True), (True, 1, False), (True, 8, False)]
    for foveate, n, one_size in cases:
        cm = arr_coc.compress(model, budget=0.22, processor=processor, realizer=realizer, foveate=foveate)
        inputs = _inputs(processor, n, one_size)
        with torch.inference_mode():
            model(**inputs)
            cm(**inputs)  # warm-up
            with OpCounter() as base:
                model(**inputs)
            replays = realizer.texture_graphs.replays
            with OpCounter() as wrapped:
                cm(**inputs)
            launches = realizer.texture_graphs.replays - replays
            tower = None if foveate else tower_counts(model, inputs)  # (compress's full tower, the model's own)
        extra_syncs = wrapped.syncs.copy()
        extra_syncs.subtract(base.syncs)
        ops, syncs, tower_note = wrapped.n_ops + launches - base.n_ops, wrapped.n_syncs - base.n_syncs, ""
        if tower is not None:  # the decision's share: the grouped tower's savings taken out
            ours, own = tower
            ops -= ours.n_ops - own.n_ops
            syncs -= ours.n_syncs - own.n_syncs
            extra_syncs.subtract(ours.syncs)
            extra_syncs.update(own.syncs)
            tower_note = (f"; the full tower (not counted above): the model's own {own.n_ops} ops / {own.n_syncs} "
                          f"syncs, compress's grouped {ours.n_ops} / {ours.n_syncs}")  # fmt: skip
        detail = ", ".join(f"{k} {v:+d}" for k, v in sorted(extra_syncs.items()) if v) or "none"
        what = f"compress{'(foveate=True)' if foveate else ''} adds to a forward (texture)"
        what += ", the texture as a CUDA graph" if graphs else ""
        batch = f"batch {n}" + ((", one page size" if one_size else ", two page sizes") if n > 1 else "")
        rows.append(dict(what=what, batch=batch, ops=ops, syncs=syncs, host=wrapped.n_host_ops,
                         detail=f"forward {base.n_ops} ops / {base.n_syncs} syncs unwrapped, {wrapped.n_ops} / "
                                f"{wrapped.n_syncs} wrapped; decision's syncs: {detail}{tower_note}"))  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "results" / "decision_ops.md"), help="markdown table file")
    parser.add_argument("--no-compress", action="store_true", help="skip the compress rows (no model built)")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    realizer = arr_coc.Realizer(engine=EngineConfig(cpu_band_elements=0)).eval()
    rows = relevance_rows(realizer)
    if not args.no_compress:
        rows += compress_rows(realizer)
        rows += compress_rows(graphed_realizer(), [(False, 1, False), (False, 8, True), (True, 1, False)], graphs=True)
    rows += document_rows()  # last: the rows above run as they did before it was added
    lines = [
        "Ops and host syncs per decision, counted on the CPU (`arr_coc.profiling.OpCounter`), CPU banding off.",
        f"Command: `python benchmarks/decision_ops.py{' --no-compress' if args.no_compress else ''}` "
        f"(torch {torch.__version__}).",
        "",
        "| what | batch | aten ops | host syncs | host-side ops (not launched) |",
        "|---|---|---:|---:|---:|",
    ]
    lines += [f"| {r['what']} | {r['batch']} | {r['ops']} | {r['syncs']} | {r.get('host', 0)} |" for r in rows]
    lines += ["", "Detail (most frequent ops; sync causes):", ""]
    lines += [f"- {r['what']}, {r['batch']}: {r['detail']}" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
