"""Time per stage of text-aware relevance on dense document pages: first question vs cached second question.

Stages, in the order ``arr_coc.allocate(mode="text")`` runs them: ``load`` (the page's bytes copied out of PIL once
for both cache keys, then resized to the grid: the frames, ``Realizer.frames``, from its page cache on a second
question, the pixel digest included),
``texture`` (13-channel texture array: ``Realizer.texture``, from its page cache on a second question, the digest
of the frames included), ``ocr hash`` (pixel digest for the OCR cache), ``ocr detect`` (PP-OCR detector),
``ocr recognize`` (crops + line recogniser), ``matching`` (lexical + MiniLM matching, layout rule, painting, word
cells), ``scorers`` (information / perspectival / participatory scorers and their balancing), ``selection``
(budget + top-k). Two pages: the example invoice at the default 1,280-token cap (~1,300 tokens) and a
2 x 2 tiling of it at a 5,120-token cap (~5,000 tokens, four times the text). Each page is asked a first question
with every cache empty (OCR, texture, embeddings, layout) and then a second, different question about the same page
(what depends on the page only comes from the caches; the question itself is embedded and matched anew). Models are
loaded before timing. The kept tokens of each run are checked against ``arr_coc.allocate`` (same realizer, same
text path), so the stages time the pipeline that decides.

Every figure is the median over ``--repeat`` runs, wall-clock milliseconds and, beside it, the process CPU
milliseconds (all threads), which says how much work a stage is even when other processes share the cores. The
machine's load average is printed with the table: wall times on a shared machine are not the machine's speed.

The second table is the first question on the invoice against the networks' own time (``network_floor``: the
detector, the recogniser and MiniLM, each timed alone on exactly the inputs the pipeline gives it): the floor, what
the pipeline adds (overhead) and total / floor. On a shared machine the ratio says more than either number. The third
is the same for the second question, whose only network is MiniLM on the new question (the boxes' embeddings are
cached with the page).

Example:
    python benchmarks/stages.py --repeat 3 --out results/stages.md
    python benchmarks/stages.py --backend torch --out results/stages_torch_cpu.md   # the device path, on the CPU
    python benchmarks/stages.py --device cuda --dtype bfloat16 --backend torch --out results/stages_cuda.md  # a GPU
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("load", "texture", "ocr hash", "ocr detect", "ocr recognize", "matching", "scorers", "selection")
QUESTIONS = ("How much must be paid?", "Who is the invoice addressed to?")
QUESTIONS_ZH = ("合计金额是多少？", "客户名称是什么？")  # --language zh: the same two questions in Chinese


def pages(language: str = "en") -> list[tuple[str, Image.Image, int]]:
    """(name, image, max tokens) of the two benchmark pages; ``language="zh"``: a dense Chinese invoice
    (``langgen.dense_page``) instead of the English one."""
    if language == "zh":
        from arr_coc.evaluation.langgen import dense_page

        return [("dense zh invoice", dense_page("zh"), 1280)]
    invoice = Image.open(ROOT / "examples" / "invoice.jpg").convert("RGB")
    w, h = invoice.size
    tiled = Image.new("RGB", (2 * w, 2 * h), "white")
    for dx in (0, w):
        for dy in (0, h):
            tiled.paste(invoice, (dx, dy))
    return [("invoice.jpg", invoice, 1280), ("invoice 2x2", tiled, 5120)]


class Clock:
    """Wall and process-CPU time of consecutive stages (CUDA work synchronised before each reading)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.mark()

    def mark(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self._w, self._c = time.perf_counter(), time.process_time()

    def stage(self, name: str) -> None:
        """Close stage ``name``: the time since the previous mark is its time."""
        w0, c0 = self._w, self._c
        self.mark()
        self.wall[name] = self.wall.get(name, 0.0) + (self._w - w0) * 1e3
        self.cpu[name] = self.cpu.get(name, 0.0) + (self._c - c0) * 1e3


def run_once(image: Image.Image, max_tokens: int, query: str, reading: Any, realizer: Any, device: torch.device,
             dtype: torch.dtype) -> tuple[dict[str, float], dict[str, float], int, int, list[int]]:  # fmt: skip
    """One text-aware allocation, stage by stage, as ``arr_coc.allocate`` does it: (wall ms, cpu ms, tokens,
    text boxes, kept token indices)."""
    from arr_coc.grid import GridSpec
    from arr_coc.io import load_image_with_size
    from arr_coc.query import normalize_text

    clock = Clock(device)
    spec = GridSpec.for_family("qwen2.5-vl", None, max_tokens * 28 * 28)
    img, (orig_w, orig_h) = load_image_with_size(image, target_pixels=spec.max_pixels)
    grid = spec.grid_for(orig_h, orig_w)
    text = normalize_text(query)
    pixels = np.asarray(img)  # (H, W, 3) uint8, copied out of PIL once for both cache keys, as allocate does
    frames = realizer.frames(img, grid, pixels, copy=False).to(device)  # (1, 3, H, W) uint8, cached, read only
    clock.stage("load")
    texture = realizer.texture(frames, grid.rows, grid.cols).to(dtype)  # (1, 13, rows, cols), cached per page
    clock.stage("texture")
    w0, c0 = time.perf_counter(), time.process_time()
    result = reading.reader.read_timed(pixels)  # hash, then detection + recognition unless the page is cached
    wall_ms, cpu_ms = (time.perf_counter() - w0) * 1e3, (time.process_time() - c0) * 1e3
    for stage, part in (("ocr hash", "hash"), ("ocr detect", "detect"), ("ocr recognize", "recognize")):
        share = result.timings_ms[part] / max(result.timings_ms["total"], 1e-9)
        clock.wall[stage], clock.cpu[stage] = wall_ms * share, cpu_ms * share  # CPU split in proportion to wall
    clock.mark()
    boxes = result.boxes
    matcher = reading.matcher()
    prior_map, _ = matcher.relevance_and_evidence(boxes, text, grid.rows, grid.cols, (img.width, img.height))
    units = matcher.units(boxes, grid.rows, grid.cols, (img.width, img.height))  # each word's cells
    prior = torch.from_numpy(np.asarray(prior_map, dtype=np.float32))[None].to(device=device, dtype=dtype)
    clock.stage("matching")
    relevance, _, _ = realizer(texture, [realizer.cues(text)], prior=prior)
    clock.stage("scorers")
    keep = realizer.select(relevance[0].flatten(), 0.111, units=units)  # words kept whole
    keep = keep.cpu()
    clock.stage("selection")
    return clock.wall, clock.cpu, grid.n_tokens, len(boxes), keep.tolist()


def check_against_allocate(image: Image.Image, max_tokens: int, query: str, keep: list[int], realizer: Any) -> None:
    """Fail loudly unless the stages kept exactly the tokens ``arr_coc.allocate`` keeps for the same input (same
    realizer, hence the same text path and caches)."""
    import arr_coc

    a = arr_coc.allocate(image, query, 0.111, max_pixels=max_tokens * 28 * 28, mode="text", realizer=realizer)
    if a.keep.tolist() != keep:
        raise SystemExit(f"the stages kept other tokens than arr_coc.allocate for {query!r}: the benchmark is stale")


def _median(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r.get(k, 0.0) for r in rows) for k in STAGES}


def measure(
    repeat: int,
    device: torch.device,
    dtype: torch.dtype,
    ocr: dict[str, Any],
    log: Callable[[str], None],
    n_pages: int = 2,
    semantic: bool = True,
    language: str = "en",
    relevance: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, tuple[float, float]]]:
    """Per page and question (first / cached second): median stage times; and the networks' floor on the invoice.
    ``semantic=False`` switches MiniLM off (a machine without the model's package): the floor has no MiniLM rows."""
    from arr_coc.config import RelevanceConfig
    from arr_coc.reading import ReadingConfig
    from arr_coc.realizing import DEFAULT_RELEVANCE, Realizer

    reading_config = ReadingConfig().replace(ocr=ocr) if ocr else ReadingConfig()
    if not semantic:
        reading_config = reading_config.with_switches(semantic=False)
    config = RelevanceConfig(reading=reading_config.to_dict() if ocr or not semantic else None)
    # the default relevance's box scorer (issue 40 item 4: routed-cells; ``--relevance rules``: none), as allocate
    scorer = Realizer.default(relevance or DEFAULT_RELEVANCE).box_scorer
    realizer = Realizer(config, box_scorer=scorer).eval().to(device=device)
    reading = realizer.reading  # the text path allocate uses with this realizer
    reading.warmup(semantic=semantic)
    out = []
    questions = QUESTIONS_ZH if language == "zh" else QUESTIONS
    with torch.inference_mode():
        for name, image, max_tokens in pages(language)[:n_pages]:
            for q in questions:  # warm torch / ORT, and check the stages keep what allocate keeps
                *_, keep = run_once(image, max_tokens, q, reading, realizer, device, dtype)
                if device.type == "cpu" and dtype == torch.float32:  # allocate runs float32 on the CPU
                    check_against_allocate(image, max_tokens, q, keep, realizer)
            first, second, tokens, lines = [], [], 0, 0
            for _ in range(repeat):
                reading.clear()  # a new page: no OCR, embeddings, layout or texture cached yet
                realizer.texture_cache.clear()
                realizer.frames_cache.clear()
                w, c, tokens, lines, _ = run_once(image, max_tokens, questions[0], reading, realizer, device, dtype)
                first.append((w, c))
                w, c, *_ = run_once(image, max_tokens, questions[1], reading, realizer, device, dtype)
                second.append((w, c))
            for label, rows in (("first question", first), ("second question (page cached)", second)):
                wall, cpu = _median([r[0] for r in rows]), _median([r[1] for r in rows])
                out.append(
                    {
                        "page": name,
                        "tokens": tokens,
                        "boxes": lines,
                        "question": label,
                        "wall_ms": wall,
                        "cpu_ms": cpu,
                        "total_wall_ms": sum(wall.values()),
                        "total_cpu_ms": sum(cpu.values()),
                    }
                )
                log(f"{name} {label}: {sum(wall.values()):.0f} ms wall, {sum(cpu.values()):.0f} ms cpu")
        name, image, max_tokens = pages()[0]
        floor = network_floor(reading, image, max_tokens, repeat, semantic)
        log(f"{name} network floor: " + ", ".join(f"{k} {w:.0f} ms" for k, (w, _) in floor.items()))
    return out, floor


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(wall ms, process CPU ms) of ``fn()``, the run with the least wall time of ``repeat``."""
    best = (float("inf"), 0.0)
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        best = min(best, ((time.perf_counter() - w0) * 1e3, (time.process_time() - c0) * 1e3))
    return best


def network_floor(reading: Any, image: Image.Image, max_tokens: int, repeat: int,
                  semantic: bool = True) -> dict[str, tuple[float, float]]:  # fmt: skip
    """The networks' own time on a page's first question, each on exactly the inputs the pipeline feeds it:
    the detector on its preprocessed page, the recogniser on the page's line batches (onnxruntime: the same
    width-sorted batches on the same worker threads, through the script gate, ``LineRecognizer.infer``; torch: the
    one batch of all lines), MiniLM on the box texts
    (uncached). What the pipeline adds on top of these is its overhead.

    Returns:
        ``{"detector" | "recogniser" | "MiniLM": (wall ms, CPU ms)}``.
    """
    from concurrent.futures import ThreadPoolExecutor

    from arr_coc.grid import GridSpec
    from arr_coc.io import load_image_with_size
    from arr_coc.reading.ocr.reader import crop_quad
    from arr_coc.reading.ocr.recognition import LineRecognizer

    spec = GridSpec.for_family("qwen2.5-vl", None, max_tokens * 28 * 28)
    img, _ = load_image_with_size(image, target_pixels=spec.max_pixels)
    detector, recognizer = reading.reader.engine()
    bgr = np.ascontiguousarray(np.asarray(img)[:, :, ::-1])
    text_det = detector._load_det_model()
    det_in = text_det.get_preprocess()(bgr)  # (1, 3, h, w) as rapidocr feeds its detector
    out: dict[str, tuple[float, float]] = {"detector": _timed(lambda: text_det.session(det_in), repeat)}
    quads = np.asarray(detector(img).boxes, dtype=np.float32).reshape(-1, 4, 2)
    if isinstance(recognizer, LineRecognizer):
        batches = recognizer.batches([crop_quad(bgr, q) for q in quads])
        xs = [x for _, x, _ in batches]
        run = recognizer.infer  # the network as the pipeline runs it (the script gate included)

        def rec() -> None:
            if recognizer.workers > 1 and len(xs) > 1:
                with ThreadPoolExecutor(min(recognizer.workers, len(xs))) as pool:
                    list(pool.map(run, xs))
            else:
                for x in xs:
                    run(x)

        out["recogniser"] = _timed(rec, repeat)
        columns = sum(x.shape[0] * x.shape[3] for x in xs)  # input columns the network convolves, padding included
        one_batch = len(quads) * max(x.shape[3] for x in xs)  # the same lines in one batch padded to the widest
        print(f"recogniser input columns: {columns} in {len(xs)} width-sorted batches, {one_batch} in one batch "
              f"({one_batch / max(columns, 1):.2f}x)", file=sys.stderr, flush=True)  # fmt: skip
    else:
        from arr_coc.reading.ocr.lines import cut_lines, group_inputs, line_geometry, page_tensor

        recognizer.load()
        geometry = line_geometry(quads, recognizer.squeeze)
        x = cut_lines(page_tensor(bgr, recognizer.device, recognizer.dtype), geometry)
        xs = [rows for _, _, rows in group_inputs(x, geometry.own, recognizer.max_groups)]  # read_page's calls

        def rec() -> None:
            with torch.inference_mode():
                for xg in xs:
                    recognizer.net(xg)
            if recognizer.device.type == "cuda":
                torch.cuda.synchronize(recognizer.device)

        out["recogniser"] = _timed(rec, repeat)
    if not semantic:
        return out
    texts = [b.text for b in reading.reader.read(img)]

    def embed() -> None:
        reading.embedder.clear()
        reading.embedder.embed([QUESTIONS[0], *texts])  # the question and the box texts, as the matcher asks

    out["MiniLM"] = _timed(embed, repeat)

    def embed_question() -> None:
        reading.embedder.clear()
        reading.embedder.embed([QUESTIONS[1]])  # a second question: the boxes' embeddings are cached

    out["MiniLM, second question"] = _timed(embed_question, repeat)
    return out


def floor_table(floor: dict[str, tuple[float, float]], first: dict[str, Any], second: dict[str, Any]) -> str:
    """The first and the second question on the invoice against the networks' own time: floor, overhead, ratio."""
    one = {k: v for k, v in floor.items() if k != "MiniLM, second question"}
    out = []
    later = {"MiniLM": floor["MiniLM, second question"]} if "MiniLM, second question" in floor else {}
    for label, parts, row in (("first question", one, first), ("second question", later, second)):
        if not parts:  # semantic matching off: a second question runs no network
            continue
        net_w, net_c = sum(w for w, _ in parts.values()), sum(c for _, c in parts.values())
        tot_w, tot_c = row["total_wall_ms"], row["total_cpu_ms"]
        lines = [f"| {label}, invoice.jpg | wall ms | CPU ms |", "|---|---:|---:|"]
        lines += [f"| network: {name} | {w:.0f} | {c:.0f} |" for name, (w, c) in parts.items()]
        lines += [
            f"| **network floor** (sum) | **{net_w:.0f}** | {net_c:.0f} |",
            f"| pipeline total (table above) | **{tot_w:.0f}** | {tot_c:.0f} |",
            f"| pipeline overhead (total - floor) | {tot_w - net_w:.0f} | {tot_c - net_c:.0f} |",
            f"| total / floor | **{tot_w / max(net_w, 1e-9):.2f}** | {tot_c / max(net_c, 1e-9):.2f} |",
        ]
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _ms(value: float) -> str:
    """Milliseconds as the tables print them: one decimal below 10 ms (a GPU's stages), whole above."""
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


def table(rows: list[dict[str, Any]], header: str) -> str:
    lines = [header, "", "| page | tokens | text boxes | question | " + " | ".join(STAGES) + " | total |",
             "|---|---:|---:|---|" + "---:|" * (len(STAGES) + 1)]  # fmt: skip
    for r in rows:
        cells = [f"{_ms(r['wall_ms'][s])} ({_ms(r['cpu_ms'][s])})" for s in STAGES]
        total = f"**{_ms(r['total_wall_ms'])}** ({_ms(r['total_cpu_ms'])})"
        lines.append(
            f"| {r['page']} | {r['tokens']} | {r['boxes']} | {r['question']} | " + " | ".join(cells) + f" | {total} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per page and question (median reported)")
    parser.add_argument("--device", default="cpu", help="device of the torch stages (texture, scorers, selection)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--threads", type=int, default=0, help="torch and OCR threads (0: their defaults)")
    parser.add_argument("--invoice-only", action="store_true", help="skip the 2 x 2 tiled page (a shorter run)")
    parser.add_argument("--backend", default="onnxruntime", choices=("onnxruntime", "torch"),
                        help="OCR networks: onnxruntime (CPU) or torch on --device")  # fmt: skip
    parser.add_argument("--no-semantic", action="store_true",
                        help="MiniLM off (where its package is missing, e.g. a GPU machine without it)")  # fmt: skip
    parser.add_argument("--language", default="en", choices=("en", "zh"),
                        help="zh: a dense Chinese invoice and Chinese questions (no network-floor table)")  # fmt: skip
    parser.add_argument("--relevance", default=None, help="a relevance name (default: the default relevance; rules)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "stages.md")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but torch sees no CUDA device")
    if args.threads:
        torch.set_num_threads(args.threads)
    ocr: dict[str, Any] = {"num_threads": args.threads} if args.threads else {}
    if args.backend == "torch":
        ocr.update(backend="torch", device=args.device, dtype=args.dtype)
    rows, floor = measure(args.repeat, device, getattr(torch, args.dtype), ocr,
                          lambda s: print(s, file=sys.stderr, flush=True), 1 if args.invoice_only else 2,
                          not args.no_semantic, args.language, args.relevance)  # fmt: skip
    load = os.getloadavg()
    header = (
        f"Median over {args.repeat} runs, milliseconds: wall (process CPU, all threads). Text-aware relevance, "
        f"budget 11.1%, Qwen2.5-VL grid; OCR on {args.backend}, torch stages on {args.device} in {args.dtype}"
        f"{'; semantic matching (MiniLM) OFF' if args.no_semantic else ''}; "
        f"{os.cpu_count()} CPU cores, load average during the run {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}. "
        f"Command: `python benchmarks/stages.py {' '.join(argv if argv is not None else sys.argv[1:])}`"
    )
    text = table(rows, header) + "\n\n" + floor_table(floor, rows[0], rows[1])
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    args.out.with_suffix(".json").write_text(json.dumps({"header": header, "rows": rows, "floor": floor}, indent=1))
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
