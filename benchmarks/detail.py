"""Level of detail at equal tokens: what is the model shown by drop-only, thumbnail, mixed resolution and downscale?

Example:
    python benchmarks/detail.py --source docgen --n-per-kind 4 --out results/detail.md
    python benchmarks/detail.py --source realdocs --n-per-kind 20 --ocr-cache /tmp/ocr --out results/detail_real.md
    python benchmarks/detail.py --source both --no-reader --n-per-kind 2      # token counts and recall only

For every sample (a docgen document, or a question of the real documents at ``/work/data/realdocs-dev``) and every
budget (11.1 / 22.2 / 33.3% of the image's Qwen2.5-VL tokens at ``max_pixels=1280*28*28``), four ways of spending
the same tokens are compared:

* ``drop``: the ARR-COC text allocator (``arr_coc.allocate(mode="text")``: OCR + query matching) keeps the top
  tokens, words whole, and the rest is dropped (``compress(...)``);
* ``thumbnail``: ``compress(..., detail="thumbnail")``: a thumbnail of the page plus the relevant tokens at full
  resolution, split by :func:`arr_coc.integrations.detail.plan_detail` with the same scores and selection;
* ``mixed``: ``compress(..., detail="mixed")``: relevant cells at full resolution, the other blocks one coarse
  token each (2x2, 4x4 or 8x8 cells);
* ``downscale``: no selection: the whole page through the processor's resize at the largest ``max_pixels`` that
  gives at most the same number of tokens (``arr_coc.evaluation.allocators.downscale_max_pixels``).

Measured per sample, reported per document kind and overall:

* tokens: what the language model receives for the image (thumbnail/mixed: coarse + fine = the budget; downscale:
  at most the budget);
* evidence recall, half-read rule: an answer cell counts 1 when it is seen at full resolution (a fine token), 0.5
  when it is seen only coarsely (inside the thumbnail, inside a coarse cell, or anywhere on the downscaled page),
  0 when it is dropped; averaged over the answer's cells (cells as in ``benchmarks/evidence_recall.py``). The rule
  does not look at HOW coarse: a 4x4 cell and a page downscaled 3x count the same, so it credits a coarse view for
  telling the model where things are, not for being readable; readability is the second reader's job;
* full-resolution recall: only fine cells count (drop-only's evidence recall; 0 for downscale);
* second reader: Tesseract (a different OCR engine from the allocator's PP-OCR) reads the answer's neighbourhood
  (the answer box padded by one cell) on the *composite the model is shown*, built at the model's full-resolution
  pixels (the page resized to the grid, ``cols*28 x rows*28``): fine cells as they are; thumbnail: everything else
  from the thumbnail (downsampled to its pixels, upsampled back); mixed: each coarse block downsampled to one
  token's 28x28 pixels and upsampled back, non-fine cells of fine blocks white; drop: dropped cells white;
  downscale: the page through the downscale resize, upsampled back. Reported: of the questions whose answer
  Tesseract finds on the full-resolution page, the share it still finds on the composite.

Results: a markdown report (``--out``) and JSON next to it. Tesseract and OCR are slow on 2 cores: ``--ocr-cache``
keeps the allocator's OCR boxes between runs (the same format as ``benchmarks/evidence_recall.py --ocr-cache``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(ROOT))

from arr_coc.evaluation.evidence import downscaled, seen  # noqa: E402
from arr_coc.integrations.detail import DetailPlan, composite, plan_detail  # noqa: E402
from benchmarks import docgen  # noqa: E402
from benchmarks.evidence_recall import (  # noqa: E402
    BUDGETS,
    PageReader,
    answer_cells,
    answer_found,
    budget_k,
    grid_of,
    library_scores,
    tesseract_text,
    top_k,
)

METHODS: tuple[str, ...] = ("drop", "thumbnail", "mixed", "downscale")
FACTOR = 28  # Qwen2.5-VL: patch 14 x merge 2
MIN_PIXELS = 56 * 56
REALDOCS = Path("/work/data/realdocs-dev")
REAL_KINDS = ("realform", "realreceipt", "realtable")


@dataclass
class Item:
    """One question on one page, whatever its source."""

    id: str
    kind: str
    image: Image.Image
    query: str
    answer: str
    boxes: list[tuple[float, float, float, float]]  # evidence boxes, original pixels

    @property
    def answer_box(self) -> tuple[float, float, float, float]:
        """The union of the evidence boxes (what ``library_scores`` and the reader region use)."""
        b = np.asarray(self.boxes, dtype=float)
        return float(b[:, 0].min()), float(b[:, 1].min()), float(b[:, 2].max()), float(b[:, 3].max())


@dataclass
class Result:
    """One item: per method and budget label, tokens, recall (half rule), fine recall and the reader's verdict."""

    id: str
    kind: str
    n_tokens: int
    tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    recall: dict[str, dict[str, float]] = field(default_factory=dict)
    fine_recall: dict[str, dict[str, float]] = field(default_factory=dict)
    read: dict[str, dict[str, bool]] = field(default_factory=dict)
    page_read: bool | None = None
    plans: dict[str, dict[str, str]] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------- data


def docgen_items(split: str, n_per_kind: int, seed: int, kinds: Sequence[str] = docgen.KINDS) -> list[Item]:
    """docgen's samples as items (one evidence box each)."""
    return [
        Item(s.id, s.kind, s.image, s.query, s.answer, [tuple(s.answer_box)])  # type: ignore[list-item]
        for s in docgen.generate(split, n_per_kind, seed, kinds=kinds)
    ]


def realdocs_items(root: Path, n_per_kind: int, seed: int) -> list[Item]:
    """``n_per_kind`` questions of each real doc_type, drawn with a seeded RNG (the same draw every run)."""
    lines = [json.loads(x) for x in (root / "questions.jsonl").read_text().splitlines() if x.strip()]
    rng = random.Random(seed)
    out = []
    for kind in REAL_KINDS:
        pool = sorted((q for q in lines if q["doc_type"] == kind), key=lambda q: q["id"])
        for q in sorted(rng.sample(pool, min(n_per_kind, len(pool))), key=lambda q: q["id"]):
            image = Image.open(root / q["image"]).convert("RGB")
            boxes = [tuple(float(v) for v in b) for b in q["boxes"]]
            out.append(Item(q["id"], kind, image, q["query"], q["answer"], boxes))  # type: ignore[arg-type]
    return out


# --------------------------------------------------------------------------------------------------- geometry


def cells_of(item: Item, rows: int, cols: int) -> np.ndarray:
    """Answer cells: the union over the evidence boxes of ``answer_cells``."""
    w, h = item.image.size
    return np.unique(np.concatenate([answer_cells(b, w, h, rows, cols) for b in item.boxes]))


def reader_box(item: Item, width: int, height: int, rows: int, cols: int) -> tuple[int, int, int, int]:
    """The answer's union box padded by one cell, in the MODEL VIEW's pixels (``width x height``)."""
    w0, h0 = item.image.size
    x0, y0, x1, y1 = item.answer_box
    sx, sy = width / w0, height / h0
    pw, ph = width / cols, height / rows
    return (max(0, int(x0 * sx - pw)), max(0, int(y0 * sy - ph)), min(width, int(np.ceil(x1 * sx + pw))),
            min(height, int(np.ceil(y1 * sy + ph))))  # fmt: skip


def downscaled_view(item: Item, view: Image.Image, tokens: int) -> tuple[Image.Image, int]:
    """The page as the downscale baseline shows it, at the model view's size, and its token count."""
    return downscaled(item.image, view.size, tokens, FACTOR, MIN_PIXELS)


# --------------------------------------------------------------------------------------------------- run


def evaluate(item: Item, reader: PageReader, second_reader: bool) -> Result:
    """Every method at every budget for one item."""
    w0, h0 = item.image.size
    grid = grid_of(w0, h0)
    rows, cols, n = grid.rows, grid.cols, grid.n_tokens
    cells = cells_of(item, rows, cols)
    scores, _, units = library_scores(item, grid, "text", None, reader)  # type: ignore[arg-type]
    rank = top_k(scores, units)
    flat = torch.from_numpy(np.ascontiguousarray(scores, dtype=np.float32).ravel())  # (N,)

    def select_k(k: int) -> torch.Tensor:
        return torch.from_numpy(rank(k)).long()

    view = item.image.resize((cols * FACTOR, rows * FACTOR), Image.BICUBIC)  # the model's full-resolution pixels
    view_arr = np.asarray(view)
    box = reader_box(item, view.width, view.height, rows, cols)
    res = Result(item.id, item.kind, n)
    if second_reader:
        res.page_read = answer_found(tesseract_text(view.crop(box)), item.answer)
    for method in METHODS:
        res.tokens[method], res.recall[method], res.fine_recall[method] = {}, {}, {}
        res.read[method], res.plans[method] = {}, {}
        for label, frac in BUDGETS:
            b = budget_k(frac, n)
            keep, plan = None, None
            if method == "drop":
                keep = rank(b)
                spent = len(keep)
            elif method in ("thumbnail", "mixed"):
                try:
                    plan = plan_detail(method, flat, (rows, cols), b, select_k)
                except ValueError as err:  # a budget too small for this view: drop-only, as compress does
                    plan = DetailPlan("drop", select_k(b), b, b, note=str(err))
                spent = plan.budget
                res.plans[method][label] = plan.mode + (f" c={plan.factor}" if plan.factor else "") + (
                    f" thumb={plan.n_thumb}" if plan.n_thumb else "")  # fmt: skip
            else:
                shown, spent = downscaled_view(item, view, b)
            weight = seen(method, n, keep, plan if plan is None or plan.mode != "drop" else None, rows, cols)
            if plan is not None and plan.mode == "drop":
                weight = seen("drop", n, plan.fine.numpy(), None, rows, cols)
            res.tokens[method][label] = int(spent)
            res.recall[method][label] = float(weight[cells].mean())
            res.fine_recall[method][label] = float((weight[cells] == 1.0).mean())
            if second_reader and res.page_read:
                if method == "downscale":
                    picture = shown
                else:
                    arr = composite(view_arr, (rows, cols), plan if plan is not None and plan.mode != "drop" else None,
                                    keep=keep if plan is None else plan.fine.numpy())  # fmt: skip
                    picture = Image.fromarray(arr)
                res.read[method][label] = answer_found(tesseract_text(picture.crop(box)), item.answer)
    return res


def summarize(results: Sequence[Result], kinds: Sequence[str]) -> dict:
    """method -> budget -> kind/"overall" -> {tokens, recall, fine_recall, read, n, n_read}."""
    out: dict = {}
    for m in METHODS:
        out[m] = {}
        for label, _ in BUDGETS:
            out[m][label] = {}
            for kind in [*kinds, "overall"]:
                rs = [r for r in results if kind == "overall" or r.kind == kind]
                if not rs:
                    continue
                readable = [r for r in rs if r.page_read]
                out[m][label][kind] = {
                    "tokens": float(np.mean([r.tokens[m][label] for r in rs])),
                    "recall": float(np.mean([r.recall[m][label] for r in rs])),
                    "fine_recall": float(np.mean([r.fine_recall[m][label] for r in rs])),
                    "read": float(np.mean([r.read[m][label] for r in readable])) if readable else None,
                    "n": len(rs),
                    "n_read": len(readable),
                }
    return out


def render(title: str, config: dict, summary: dict, kinds: Sequence[str], results: Sequence[Result]) -> str:
    """Markdown: overall table (tokens, recall, fine recall, reader) per budget, then per kind."""
    counts = ", ".join(f"{k} {sum(r.kind == k for r in results)}" for k in kinds)
    lines = [
        f"# Level of detail at equal tokens — {title}",
        "",
        f"- command: `{config['command']}`",
        f"- samples: {len(results)} ({counts}); grid qwen2.5-vl, max_pixels=1280*28*28; mean tokens per image "
        f"{np.mean([r.n_tokens for r in results]):.0f}; wall time {config['wall_s']:.0f} s (2 shared cores)",
        "- recall: half-read rule (fine cell 1, coarse 0.5, dropped 0); fine: full-resolution cells only; reader: "
        "Tesseract finds the answer on the composite the model is shown / on the full-resolution page "
        f"(n = {sum(1 for r in results if r.page_read)} questions it reads on the page)",
        "",
    ]
    for label, _ in BUDGETS:
        head = "| method | tokens | recall (half rule) | full-res recall | reader |"
        lines += [f"## {label} of the tokens", "", head, "|---|---:|---:|---:|---:|"]
        for m in METHODS:
            s = summary[m][label]["overall"]
            reader = "–" if s["read"] is None else f"{s['read']:.2f}"
            lines.append(f"| {m} | {s['tokens']:.0f} | {s['recall']:.3f} | {s['fine_recall']:.3f} | {reader} |")
        lines += ["", f"Reader by kind at {label} (share found; n = questions read on the page):", "",
                  "| method | " + " | ".join(kinds) + " | overall |", "|---|" + "---:|" * (len(kinds) + 1)]  # fmt: skip
        for m in METHODS:
            row = summary[m][label]
            cells = []
            for k in [*kinds, "overall"]:
                s = row.get(k)
                cells.append("–" if s is None or s["read"] is None else f"{s['read']:.2f} (n={s['n_read']})")
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        lines += ["", f"Recall (half rule) / full-res recall by kind at {label}:", "",
                  "| method | " + " | ".join(kinds) + " | overall |", "|---|" + "---:|" * (len(kinds) + 1)]  # fmt: skip
        for m in METHODS:
            row = summary[m][label]
            lines.append(f"| {m} | " + " | ".join(
                "–" if k not in row else f"{row[k]['recall']:.2f} / {row[k]['fine_recall']:.2f}"
                for k in [*kinds, "overall"]) + " |")  # fmt: skip
        lines.append("")
    modes = {}
    for r in results:
        for m in ("thumbnail", "mixed"):
            for label, p in r.plans.get(m, {}).items():
                modes.setdefault((m, label), {}).setdefault(p, 0)
                modes[(m, label)][p] += 1
    lines += ["## How the detail modes split the budget (plans, count)", ""]
    for (m, label), c in sorted(modes.items()):
        lines.append(f"- {m} @{label}: " + ", ".join(f"{k} ×{v}" for k, v in sorted(c.items(), key=lambda x: -x[1])))
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Drop-only vs thumbnail vs mixed resolution vs downscale at equal tokens.")
    p.add_argument("--source", choices=("docgen", "realdocs", "both"), default="both")
    p.add_argument("--split", choices=docgen.SPLITS, default="test", help="docgen split")
    p.add_argument("--n-per-kind", type=int, default=4, help="docgen: samples per kind; realdocs: questions per type")
    p.add_argument("--realdocs", type=Path, default=REALDOCS, help="generated realdocs-dev folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kinds", default=",".join(docgen.KINDS), help="docgen: comma-separated document kinds")
    p.add_argument("--no-reader", action="store_true", help="skip the Tesseract second reader")
    p.add_argument("--ocr-cache", type=Path, default=None, help="keep / reuse the allocator's OCR boxes here")
    p.add_argument("--out", default="results/detail.md", help="markdown report; JSON goes next to it")
    args = p.parse_args(argv)
    if args.n_per_kind < 1:
        p.error("--n-per-kind must be >= 1")
    args.kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not args.kinds or any(k not in docgen.KINDS for k in args.kinds):
        p.error(f"--kinds must be among {','.join(docgen.KINDS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    command = "python benchmarks/detail.py " + " ".join(sys.argv[1:] if argv is None else argv)
    sources = []
    if args.source in ("docgen", "both"):
        sources.append(
            (f"docgen `{args.split}` split", docgen_items(args.split, args.n_per_kind, args.seed, args.kinds))
        )
    if args.source in ("realdocs", "both"):
        if not (args.realdocs / "questions.jsonl").exists():
            raise SystemExit(f"{args.realdocs}/questions.jsonl not found: generate realdocs-dev (make_dev.py --out)")
        sources.append(("real documents (realdocs-dev)", realdocs_items(args.realdocs, args.n_per_kind, args.seed)))
    reader = PageReader(args.ocr_cache)
    report, payload = [], {"command": command.strip(), "sources": []}
    for title, items in sources:
        t0 = time.perf_counter()
        results = []
        for i, item in enumerate(items):
            results.append(evaluate(item, reader, not args.no_reader))
            print(f"  {title}: {i + 1}/{len(items)}, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        kinds = list(dict.fromkeys(r.kind for r in results))
        summary = summarize(results, kinds)
        config = {"command": command.strip(), "wall_s": time.perf_counter() - t0}
        report.append(render(title, config, summary, kinds, results))
        payload["sources"].append({"title": title, "summary": summary, "samples": [r.__dict__ for r in results]})
    text = "\n".join(report)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps(payload, indent=1))
    print(f"wall time {time.perf_counter() - start:.0f} s; wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
