"""Wall time of ``Realizer.decide`` on a device, per call and per image: texture mode (the realizer left on the CPU,
as ``compress``'s default one is, and moved to the device) and text mode with the page's OCR cached (the matcher
runs; MiniLM off with ``--no-semantic``), at batch 1 and 8, on the example invoice (Qwen2.5-VL grid, 1,248 tokens),
budget 22.2%. Each timed call ends with the kept indices read to the host (what ``compress`` needs) and a device
sync; the calls cycle through seven questions about the page (``QUESTIONS``), each asked once in the warm-up.
The goal: <= 2 ms per image at batch 1 on a GPU. These rows run the texture eagerly
(``texture_graphs=0``).

``--graphs`` adds the same rows with the default config, whose texture on a GPU is a CUDA graph per frame shape
(``EngineConfig.texture_graphs``, ``arr_coc.graphs``), checks every graphed decision against the eager one (scores
and kept indices, bit for bit) and reports the device memory the graphs hold (reserved memory after
``torch.cuda.empty_cache()``, before and after the captures).

    python benchmarks/decision_time.py --device cuda --no-semantic --graphs
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from harness import parser, table, write_report  # run as a script: benchmarks/ is on the path
from PIL import Image
from second_question import SECOND

ROOT = Path(__file__).resolve().parents[1]
QUERY = "How much must be paid?"
# the calls cycle through these (QUERY and second_question.py's six): each timed call asks another question than the
# one before, as a server's next request would; each was asked once in the warm-up (its terms seen on the page)
QUESTIONS = (QUERY, *SECOND)
STAGES = ("digest", "texture", "ocr", "scoring", "select")  # Scoring.timings_ms
STAGE_NOTE = (
    "digest: the pages' digests for the OCR cache (every text item's in one pass), texture: the texture (launched "
    "before the text path's host work), ocr: the OCR cache's look-up, the matching and the word units, scoring: the "
    "scorers and balancer, select: the choice of the kept tokens"
)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__, repeat=20, warmup=None)  # --repeat: timed calls a row (--runs: the same)
    p.add_argument("--runs", dest="repeat", type=int, help=argparse.SUPPRESS)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--no-semantic", action="store_true", help="MiniLM off (its package missing)")
    p.add_argument("--graphs", action="store_true", help="also time the texture as CUDA graphs (the default config)")
    args = p.parse_args(argv)
    from arr_coc.config import RelevanceConfig
    from arr_coc.engine import EngineConfig
    from arr_coc.grid import GridSpec
    from arr_coc.io import load_image_with_size
    from arr_coc.reading import ReadingConfig
    from arr_coc.realizing import Realizer
    from arr_coc.texture import frames_from_image

    dev = args.device
    on_gpu = dev.startswith("cuda")
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    spec = GridSpec.for_family("qwen2.5-vl", None, 1280 * 28 * 28)
    img, _ = load_image_with_size(Image.open(ROOT / "examples" / "invoice.jpg").convert("RGB"),
                                  target_pixels=spec.max_pixels)  # fmt: skip
    grid = spec.grid_for(img.height, img.width)
    ocr = {"backend": "torch", "device": dev} if on_gpu else {}  # float32: bfloat16 misreads
    reading = ReadingConfig().replace(ocr=ocr) if ocr else ReadingConfig()
    if args.no_semantic:
        reading = reading.with_switches(semantic=False)
    realizer = Realizer(
        RelevanceConfig(reading=reading.to_dict()), engine=EngineConfig(texture_graphs=0)
    ).eval()  # eager
    frames = frames_from_image(img, grid).to(dev)

    stages: dict[tuple[str, int], dict[str, float]] = {}  # (what, batch) -> the first item's stage medians

    def timed(mode: str, n: int, realizer: Realizer = realizer, what: str = "") -> float:
        calls = [([frames] * n, [(grid.rows, grid.cols)] * n, [q] * n, 0.222) for q in QUESTIONS]
        for call in [calls[0], *calls]:  # warm-up: constants, the page's OCR (text mode), a graph's capture
            realizer.decide(*call, mode=mode)
        ms, parts = [], []
        for r in range(args.repeat):
            sync()
            t = time.perf_counter()
            d = realizer.decide(*calls[r % len(calls)], mode=mode)
            [k.tolist() for k in d.keeps]
            sync()
            ms.append((time.perf_counter() - t) * 1e3)
            parts.append(d[0].scoring.timings_ms)
        stages[(what, n)] = {k: statistics.median(p.get(k, 0.0) for p in parts) for k in STAGES}
        return statistics.median(ms)

    rows = []
    for n in (1, 8):
        rows.append(("texture, realizer on the CPU", n, timed("texture", n, what="texture, realizer on the CPU")))
    realizer.to(dev)
    for mode in ("texture", "text"):
        for n in (1, 8):
            what = f"{mode}{', OCR cached' if mode == 'text' else ''}, realizer on {dev}"
            rows.append((what, n, timed(mode, n, what=what)))
    equal = []
    if args.graphs:
        # the graphs' device memory: what stays reserved once the allocator's free cache is emptied, before and after
        # the captures (each graph keeps a private pool of its intermediates and its static input copy)
        sync()
        reserved = (lambda: (torch.cuda.empty_cache(), torch.cuda.memory_reserved(dev))[1]) if on_gpu else (lambda: 0)
        reserved0 = reserved()
        graphed = Realizer(RelevanceConfig(reading=reading.to_dict())).eval().to(dev)  # the default: graphs on
        graphed._reading = realizer.reading  # the same text path (and its OCR cache of the page)
        for mode in ("texture", "text"):
            for n in (1, 8):
                what = f"{mode}{', OCR cached' if mode == 'text' else ''}, realizer on {dev}, texture graphs"
                rows.append((what, n, timed(mode, n, graphed, what)))
                call = ([frames] * n, [(grid.rows, grid.cols)] * n, [QUERY] * n, 0.222)
                a, b = realizer.decide(*call, mode=mode), graphed.decide(*call, mode=mode)
                equal.append(all(torch.equal(x.scores, y.scores) and torch.equal(x.keep, y.keep)
                                 for x, y in zip(a, b, strict=True)))  # fmt: skip
        sync()
        graph_mb = (reserved() - reserved0) / 2**20
        tg = graphed.texture_graphs
        equal_note = (f"texture graphs (the default, texture_graphs={tg.max_graphs}): {tg.captured} shapes captured "
                      f"(the page at batch 1 and 8), {tg.replays} replays; every graphed decision equal to the eager "
                      f"one: {'yes' if all(equal) else 'NO'}; device memory held by the graphed realizer (its "
                      f"graphs' pools and static inputs) after emptying the allocator's cache: "
                      f"{graph_mb:.1f} MiB")  # fmt: skip
    name = torch.cuda.get_device_name(dev) if on_gpu else "CPU"
    sections = [
        f"Realizer.decide on {dev} ({name}), median of {args.repeat} calls, ms"
        f"{'; MiniLM off' if args.no_semantic else ''}.",
        table(
            ["what", "batch", "ms a call", "ms an image"], [[w, n, f"{ms:.2f}", f"{ms / n:.2f}"] for w, n, ms in rows]
        ),
        f"Where a call's host time went (the first item's `Scoring.timings_ms`, medians; host clock, no device "
        f"sync between stages, so a stage's kernels may finish in a later one; {STAGE_NOTE}):",
        table(["what", "batch", *STAGES], [[w, n, *(f"{stages[(w, n)][k]:.2f}" for k in STAGES)] for w, n, _ in rows]),
    ]
    if args.graphs:
        sections.append(equal_note)
    data = {"rows": [{"what": w, "batch": n, "ms": ms} for w, n, ms in rows], "stages_ms": [
        {"what": w, "batch": n, **stages[(w, n)]} for w, n, _ in rows]}  # fmt: skip
    write_report(args.out, "The decision's wall time on a device", sections, data, argv)
    return 0 if all(equal) else 1


if __name__ == "__main__":
    raise SystemExit(main())
