"""Evidence-recall benchmark: does an allocator keep the visual tokens that hold the answer?

Example:
    python benchmarks/evidence_recall.py --split test --out results/evidence_recall.md
    python benchmarks/evidence_recall.py --split dev --n-per-kind 4 --allocators random,stride,centre,oracle
    python benchmarks/evidence_recall.py --split test --ablation --out results/evidence_recall_ablation.md

Why: ARR-COC-VIS prunes a Qwen-VL model's visual tokens before the language model sees them. If a question's
answer sits in tokens that were dropped, no model can answer it, so the first thing to measure is how often the
answer's tokens survive. This script draws documents with exact answer boxes (``benchmarks/docgen.py``), maps
each box onto the Qwen2.5-VL token grid (``max_pixels=1280*28*28``) and, for several allocators run on the same
samples, reports per document kind and overall:

    * evidence recall: kept answer cells / answer cells, averaged over samples;
    * full-hit rate: share of samples where every answer cell is kept;

at 11.1%, 22.2% and 33.3% of the image's tokens (k = round(f * n_tokens), at least 1).

Answer cells: cell (r, c) covers original pixels x in [c*W/cols, (c+1)*W/cols), y in [r*H/rows, (r+1)*H/rows)
(the processor's resize is a plain stretch). A cell counts when its intersection with the answer box is at least
20% of the cell's area or at least 20% of the box's area; the cell of largest overlap always counts.

Allocators (all in the same run): ``random`` (seeded per sample), ``stride`` (k cells evenly spread in raster
order), ``centre`` (cells nearest the image centre), ``texture`` (``arr_coc.allocate(mode="texture")``,
query-agnostic), ``text`` (``mode="text"``, OCR + query matching) and ``oracle`` (answer cells first). Library
allocators are called once per sample; their ``scores`` (and, in text mode, the word units) are turned into a keep
set for each budget with ``arr_coc.attending.select`` (top-k, ties to the lower index, words kept whole), so one OCR
pass serves all three budgets.
``--ablation`` adds the text path's ablation: texture-only, lexical, lexical+semantic, lexical+layout,
semantic+layout and the full path (each piece's contribution shows as the full path minus that piece), and the
structural pieces: the full path without layout analysis (``structure=False``: structural questions resolved on
the boxes in OCR order), without query parsing (``query_parsing=False``: no structural evidence at all) and
without whole words (``whole_words=False``: plain top-k over cells, a word may be cut at a cell edge). The
text allocator and every ablation row share the sample's one OCR pass (``PageReader``), so only the first of them
pays for OCR in the s/sample column.

Results are also grouped by DocVQA-style category (``docgen.CATEGORIES``: form, table/list, layout, running text,
figure/chart, photo).

``downscale`` is the baseline of a smaller image: no selection, the whole page through the processor's resize at the
largest ``max_pixels`` that gives at most k tokens (``arr_coc.evaluation.allocators.downscale_max_pixels``). Every
answer cell is then seen, but coarsely: its recall row uses the half-read rule of ``benchmarks/detail.py`` (0.5 for
every cell, so 0.5 / full-hit 0); the second reader is its real test (it reads the downscaled page upsampled back).

``--second-reader tesseract`` adds an independent measure: Tesseract (Debian ``tesseract-ocr``, a different OCR
engine from the allocator's PP-OCR) reads the answer's neighbourhood (the answer box padded by one grid cell) once on
the whole page and once with every dropped cell painted white, for every allocator at ``--second-reader-budget``
(11.1%); reported per kind is the share of questions whose answer it still finds among those it finds on the whole
page. An answer is found when its letters and digits (lower case) occur in the text read there.

The overall row is the mean over all samples (every kind has n-per-kind samples; the test split adds one real
scan). Results go to a markdown file (``--out``) and a JSON file next to it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(ROOT))

from arr_coc.evaluation.allocators import stride_keep  # noqa: E402  (the one stride baseline)
from arr_coc.evaluation.evidence import (  # noqa: E402  (the geometry, metrics and baselines: one home)
    BUDGETS,
    DOWNSCALE_RECALL,
    FAMILY,
    MAX_PIXELS,
    Ranker,
    SampleResult,
    aggregate,
    answer_cells,
    answer_found,
    budget_k,
    centre_scores,
    downscale_page,
    evidence_recall,
    grid_of,
    mask_dropped,
    oracle_scores,
    overlap_areas,
    random_scores,
    reader_region,
    sample_seed,
    tesseract_text,
    top_k,
)
from arr_coc.grid import Grid  # noqa: E402
from benchmarks import docgen  # noqa: E402

BASELINES = ("random", "stride", "centre", "oracle", "downscale")
LIBRARY = ("texture", "text")
ALL_ALLOCATORS = ("random", "stride", "centre", "texture", "text", "oracle", "downscale")
ABLATION: tuple[tuple[str, str, dict[str, bool] | None], ...] = (  # (row, mode, text_options)
    ("texture-only", "texture", None),
    ("lexical", "text", {"lexical": True, "semantic": False, "layout": False}),
    ("lexical+semantic", "text", {"lexical": True, "semantic": True, "layout": False}),
    ("lexical+layout", "text", {"lexical": True, "semantic": False, "layout": True}),
    ("semantic+layout", "text", {"lexical": False, "semantic": True, "layout": True}),
    ("lexical+semantic+layout (full)", "text", {"lexical": True, "semantic": True, "layout": True}),
    ("full - layout analysis", "text", {"structure": False}),
    ("full - query parsing", "text", {"query_parsing": False}),
    ("full - whole words", "text", {"whole_words": False}),
)
DEFAULT_N_PER_KIND = 12


# --------------------------------------------------------------------------------------------------- geometry


# --------------------------------------------------------------------------------------------------- metrics


# --------------------------------------------------------------------------------------------------- allocators


class PageReader:
    """The process-wide OCR reader, remembering the last page it read: the ablation rows of one sample call
    ``allocate`` once per variant on the same page, and OCR does not depend on the variant.

    With ``cache_dir`` it also keeps every page's boxes on disk (one JSON file per page, named by a blake2b hash of
    its pixels), so re-running the benchmark after a change to the matcher does not run OCR again (``--ocr-cache``;
    the s/sample column then leaves OCR out)."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self._key: tuple | None = None
        self._boxes: list = []
        self.cache_dir = cache_dir

    def read(self, image: Image.Image) -> list:
        from arr_coc.reading import TextBox, shared_reader

        arr = np.asarray(image)
        key = (arr.shape, zlib.crc32(arr.tobytes()))
        if key != self._key:
            path = None
            if self.cache_dir is not None:
                digest = hashlib.blake2b(arr.tobytes() + repr(arr.shape).encode(), digest_size=16).hexdigest()
                path = self.cache_dir / f"{digest}.json"
            if path is not None and path.exists():
                boxes = [TextBox(t, tuple(b), c) for t, b, c in json.loads(path.read_text())]
            else:
                boxes = shared_reader(warm=True).read(image)
                if path is not None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(json.dumps([[b.text, list(b.box), b.confidence] for b in boxes]))
            self._boxes, self._key = boxes, key
        return list(self._boxes)


def library_scores(
    sample: docgen.Sample,
    grid: Grid,
    mode: str,
    text_options: dict[str, bool] | None,
    reader: PageReader | None = None,
    realizer: object | None = None,
) -> tuple[np.ndarray, str | None, list[np.ndarray]]:
    """``arr_coc.allocate(...).scores`` for one sample, checked to be on the expected grid, the structural rule
    that fired (``Allocation.evidence.rule``, None when none did) and the word units (``Allocation.units``)."""
    import arr_coc

    allocate = getattr(arr_coc, "allocate", None)
    if allocate is None:
        raise SystemExit(
            "arr_coc.allocate is not available; run the baselines only: --allocators " + ",".join(BASELINES)
        )
    extra = {"reader": reader} if reader is not None and mode == "text" else {}
    alloc = allocate(
        sample.image,
        sample.query,
        BUDGETS[-1][1],
        family=FAMILY,
        max_pixels=MAX_PIXELS,
        mode=mode,
        text_options=text_options,
        realizer=realizer,
        **extra,
    )
    scores = np.asarray(alloc.scores, dtype=np.float32)
    if tuple(alloc.grid) != (grid.rows, grid.cols) or scores.shape != (grid.rows, grid.cols):
        raise RuntimeError(
            f"{sample.id}: allocate returned grid {alloc.grid} / scores {scores.shape}, "
            f"expected {(grid.rows, grid.cols)}"
        )
    evidence = getattr(alloc, "evidence", None)
    return scores, getattr(evidence, "rule", None), list(getattr(alloc, "units", []))


# --------------------------------------------------------------------------------------------------- second reader


# --------------------------------------------------------------------------------------------------- run


def evaluate_sample(
    sample: docgen.Sample,
    allocators: Sequence[str],
    seed: int,
    ablation: bool = False,
    second_reader: str | None = None,
    second_budget: float = BUDGETS[0][1],
    ocr_cache: Path | None = None,
    realizer: object | None = None,
) -> SampleResult:
    """Run every allocator (and the ablation rows) on one sample at every budget; with ``second_reader``, also
    whether Tesseract finds the answer on the whole page and in each allocator's kept cells at ``second_budget``."""
    w, h = sample.image.size
    grid = grid_of(w, h)
    rows, cols, n = grid.rows, grid.cols, grid.n_tokens
    inter = overlap_areas(sample.answer_box, w, h, rows, cols)
    cells = answer_cells(sample.answer_box, w, h, rows, cols)
    cache: dict[str, tuple[Ranker, float]] = {}
    rules: dict[str, str | None] = {}
    page_reader = PageReader(ocr_cache)  # one OCR pass per sample, shared by the text allocator and the ablation rows

    def library(mode: str, options: dict[str, bool] | None) -> tuple[Ranker, float]:
        key = f"{mode}|{sorted(options.items()) if options else None}"
        if key not in cache:
            t0 = time.perf_counter()
            scores, rule, units = library_scores(sample, grid, mode, options, page_reader, realizer)
            cache[key] = (top_k(scores, units), time.perf_counter() - t0)
            rules[key] = rule
        return cache[key]

    rankers: dict[str, tuple[Ranker, float]] = {}
    for name in allocators:
        t0 = time.perf_counter()
        if name == "random":
            rankers[name] = (top_k(random_scores(rows, cols, sample_seed(seed, sample.id))), 0.0)
        elif name == "stride":
            rankers[name] = (lambda k: stride_keep(n, k), 0.0)
        elif name == "centre":
            rankers[name] = (top_k(centre_scores(rows, cols)), 0.0)
        elif name == "oracle":
            rankers[name] = (top_k(oracle_scores(inter, cells)), 0.0)
        elif name == "downscale":  # every cell, coarsely: the recall loop and the reader treat it apart
            rankers[name] = (lambda k: np.arange(n), 0.0)
        elif name in LIBRARY:
            rankers[name] = library(name, None)
            rules[name] = rules.get(f"{name}|None")
        else:
            raise ValueError(f"unknown allocator {name!r}; choose from {', '.join(ALL_ALLOCATORS)}")
        if name not in LIBRARY:
            rankers[name] = (rankers[name][0], time.perf_counter() - t0)
    if ablation:
        for row, mode, options in ABLATION:
            rankers[f"ablation:{row}"] = library(mode, options)

    recall: dict[str, dict[str, float]] = {}
    for name, (ranker, _) in rankers.items():
        recall[name] = {}
        for label, frac in BUDGETS:
            k = budget_k(frac, n)
            keep = ranker(k)
            if name == "downscale":
                recall[name][label] = DOWNSCALE_RECALL
                continue
            if len(keep) != k or np.any(np.diff(keep) <= 0):
                raise RuntimeError(f"{name} returned {len(keep)} cells for k={k} or not in raster order")
            recall[name][label] = evidence_recall(keep, cells)
    second = None
    if second_reader is not None:
        region = reader_region(sample.answer_box, w, h, rows, cols)
        second = {"page": answer_found(tesseract_text(sample.image.crop(region)), sample.answer)}
        k = budget_k(second_budget, n)
        for name in allocators:
            if name == "downscale":
                masked = downscale_page(sample.image, k)
            else:
                masked = mask_dropped(sample.image, rankers[name][0](k), rows, cols)
            second[name] = answer_found(tesseract_text(masked.crop(region)), sample.answer)
    return SampleResult(
        sample.id,
        sample.kind,
        n,
        int(cells.size),
        recall,
        {name: secs for name, (_, secs) in rankers.items()},
        category=sample.category,
        second=second,
        rules={a: rules[a] for a in LIBRARY if a in rules},
    )


def second_reader_table(
    results: Sequence[SampleResult], allocators: Sequence[str], kinds: Sequence[str]
) -> dict[str, dict[str, dict]]:
    """allocator -> kind (and "overall") -> {"share", "n"}: of the questions whose answer the second reader finds on
    the whole page, the share it still finds in the allocator's kept cells (``n``: how many it finds on the page)."""
    out: dict[str, dict[str, dict]] = {}
    for a in allocators:
        out[a] = {}
        for kind in [*kinds, "overall"]:
            base = [r for r in results if r.second and r.second["page"] and (kind == "overall" or r.kind == kind)]
            if base:
                out[a][kind] = {"share": float(np.mean([r.second[a] for r in base])), "n": len(base)}
    return out


def _cell(stats: dict | None) -> str:
    return "–" if stats is None else f"{stats['recall']:.3f} / {stats['full_hit']:.2f}"


def render_markdown(
    config: dict,
    summary: dict[str, dict],
    kinds: Sequence[str],
    results: Sequence[SampleResult],
    wall_s: float,
    by_category: dict[str, dict] | None = None,
    second: dict[str, dict] | None = None,
) -> str:
    """The report: a summary table, per-category and per-kind tables per budget, the ablation table and the second
    reader's table if they were run."""
    main = [a for a in summary if not a.startswith("ablation:")]
    abl = [a for a in summary if a.startswith("ablation:")]
    counts = ", ".join(f"{k} {sum(r.kind == k for r in results)}" for k in kinds)
    lines = [
        f"# Evidence recall — split `{config['split']}`",
        "",
        f"- samples: {len(results)} ({counts}); seed {config['seed']}; {config['n_per_kind']} per kind",
        f"- grid: {FAMILY}, max_pixels=1280*28*28; mean tokens per image {np.mean([r.n_tokens for r in results]):.0f}; "
        f"mean answer cells per sample {np.mean([r.n_answer_cells for r in results]):.1f}",
        f"- fonts: {config['fonts']}",
        "- answer cell: box∩cell ≥ 20% of the cell or ≥ 20% of the box (plus the cell of largest overlap)",
        "- cells read `evidence recall / full-hit rate`; overall = mean over all samples",
        f"- wall time: {wall_s:.1f} s ({config['command']})"
        + (f"; OCR boxes reused from {config['ocr_cache']} where cached" if config.get("ocr_cache") else ""),
        "",
        "## Overall",
        "",
        "| allocator | "
        + " | ".join(f"recall @{b}" for b, _ in BUDGETS)
        + " | "
        + " | ".join(f"full-hit @{b}" for b, _ in BUDGETS)
        + " | s/sample |",
        "|---|" + "---:|" * (2 * len(BUDGETS) + 1),
    ]
    for a in main:
        secs = np.mean([r.seconds[a] for r in results])
        lines.append(
            f"| {a} | "
            + " | ".join(f"{summary[a][b]['overall']['recall']:.3f}" for b, _ in BUDGETS)
            + " | "
            + " | ".join(f"{summary[a][b]['overall']['full_hit']:.2f}" for b, _ in BUDGETS)
            + f" | {secs:.2f} |"
        )
    cats = list(dict.fromkeys(r.category for r in results))
    if by_category:
        for label, _ in BUDGETS:
            lines += [
                "",
                f"## By DocVQA-style category at {label} of tokens (recall / full-hit)",
                "",
                "| allocator | "
                + " | ".join(f"{c} (n={sum(r.category == c for r in results)})" for c in cats)
                + " | overall |",
                "|---|" + "---:|" * (len(cats) + 1),
            ]
            for a in by_category:
                lines.append(
                    f"| {a} | " + " | ".join(_cell(by_category[a][label].get(c)) for c in [*cats, "overall"]) + " |"
                )
    for label, _ in BUDGETS:
        lines += [
            "",
            f"## By kind at {label} of tokens (recall / full-hit)",
            "",
            "| allocator | " + " | ".join(kinds) + " | overall |",
            "|---|" + "---:|" * (len(kinds) + 1),
        ]
        for a in main:
            lines.append(f"| {a} | " + " | ".join(_cell(summary[a][label].get(k)) for k in [*kinds, "overall"]) + " |")
    if abl:
        mid = BUDGETS[1][0]
        lines += [
            "",
            "## Ablation of the text-aware path (overall recall / full-hit)",
            "",
            "| variant | " + " | ".join(f"@{b}" for b, _ in BUDGETS) + " | s/sample |",
            "|---|" + "---:|" * (len(BUDGETS) + 1),
        ]
        for a in abl:
            secs = np.mean([r.seconds[a] for r in results])
            lines.append(
                f"| {a.split(':', 1)[1]} | "
                + " | ".join(_cell(summary[a][b]["overall"]) for b, _ in BUDGETS)
                + f" | {secs:.2f} |"
            )
        lines += [
            "",
            f"### Ablation by kind at {mid}",
            "",
            "| variant | " + " | ".join(kinds) + " | overall |",
            "|---|" + "---:|" * (len(kinds) + 1),
        ]
        for a in abl:
            lines.append(
                f"| {a.split(':', 1)[1]} | "
                + " | ".join(_cell(summary[a][mid].get(k)) for k in [*kinds, "overall"])
                + " |"
            )
        if by_category:
            lines += [
                "",
                f"### Ablation by category at {BUDGETS[0][0]}",
                "",
                "| variant | " + " | ".join(cats) + " | overall |",
                "|---|" + "---:|" * (len(cats) + 1),
            ]
            for a in abl:
                lines.append(
                    f"| {a.split(':', 1)[1]} | "
                    + " | ".join(_cell(by_category[a][BUDGETS[0][0]].get(c)) for c in [*cats, "overall"])
                    + " |"
                )
    if second:
        fired = [r for r in results if r.rules and r.rules.get("text")]
        lines += [
            "",
            f"## Second reader (Tesseract) at {config['second_reader_budget']}: answer still found / found "
            "on the whole page",
            "",
            "| allocator | " + " | ".join(kinds) + " | overall |",
            "|---|" + "---:|" * (len(kinds) + 1),
        ]
        for a, row in second.items():
            lines.append(
                f"| {a} | "
                + " | ".join(
                    "–" if k not in row else f"{row[k]['share']:.2f} (n={row[k]['n']})" for k in [*kinds, "overall"]
                )
                + " |"
            )
        lines += ["", f"Structural rule fired for the text allocator on {len(fired)} of {len(results)} samples."]
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Evidence recall of token allocators on generated documents.")
    p.add_argument("--split", choices=docgen.SPLITS, default="test")
    p.add_argument("--n-per-kind", type=int, default=DEFAULT_N_PER_KIND, help="samples per document kind")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--allocators", default=",".join(ALL_ALLOCATORS), help=f"comma-separated subset of {','.join(ALL_ALLOCATORS)}"
    )
    p.add_argument("--ablation", action="store_true", help="add the text path's lexical/semantic/layout ablation")
    p.add_argument("--kinds", default=",".join(docgen.KINDS), help="comma-separated document kinds")
    p.add_argument(
        "--second-reader",
        choices=("tesseract",),
        default=None,
        help="independent OCR reading only the kept cells (needs apt-get install tesseract-ocr)",
    )
    p.add_argument(
        "--second-reader-budget",
        type=float,
        default=BUDGETS[0][1],
        help="budget fraction the second reader sees (default 1/9 = 11.1%%)",
    )
    p.add_argument("--out", default="results/evidence_recall.md", help="markdown report; JSON goes next to it")
    p.add_argument(
        "--ocr-cache",
        type=Path,
        default=None,
        help="keep each page's OCR boxes in this folder and reuse them on the next run (s/sample then leaves OCR out)",
    )
    p.add_argument(
        "--relevance",
        type=Path,
        default=None,
        help="score the library allocators with this checkpoint folder (arr-coc train) instead of the rules",
    )
    args = p.parse_args(argv)
    args.allocators = [a.strip() for a in args.allocators.split(",") if a.strip()]
    unknown = [a for a in args.allocators if a not in ALL_ALLOCATORS]
    if unknown or not args.allocators:
        p.error(f"unknown allocator(s) {unknown}; choose from {','.join(ALL_ALLOCATORS)}")
    args.kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if any(k not in docgen.KINDS for k in args.kinds):
        p.error(f"kinds must be among {','.join(docgen.KINDS)}")
    if args.n_per_kind < 1:
        p.error("--n-per-kind must be >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Generate the split, run the allocators, print the report and write it (markdown + JSON)."""
    args = parse_args(argv)
    t_start = time.perf_counter()
    held, preferred = docgen.held_out_fonts()
    if args.split == "dev":
        fonts = "DejaVu Sans family (dev fonts)"
    elif preferred:
        fonts = "held-out Liberation/Noto fonts"
    else:
        fonts = "FALLBACK: Liberation/Noto not installed, test split uses DejaVu Serif/Mono (still unused by dev)"
        print(f"note: {fonts}", file=sys.stderr)
    samples = docgen.generate(args.split, args.n_per_kind, args.seed, kinds=args.kinds)
    kinds = list(dict.fromkeys(s.kind for s in samples))
    t_gen = time.perf_counter() - t_start
    results: list[SampleResult] = []
    realizer = None
    if args.relevance is not None:
        from arr_coc.realizing import Realizer

        realizer = Realizer.from_pretrained(args.relevance)
    for i, sample in enumerate(samples):
        results.append(
            evaluate_sample(
                sample,
                args.allocators,
                args.seed,
                args.ablation,
                args.second_reader,
                args.second_reader_budget,
                args.ocr_cache,
                realizer,
            )
        )
        if (i + 1) % 10 == 0 or i + 1 == len(samples):
            print(f"  {i + 1}/{len(samples)} samples, {time.perf_counter() - t_start:.0f} s", file=sys.stderr)
    wall = time.perf_counter() - t_start
    names = list(results[0].recall)
    summary = {a: aggregate(results, a, kinds) for a in names}
    cats = list(dict.fromkeys(r.category for r in results))
    by_category = {a: aggregate(results, a, cats, by="category") for a in names}
    second = second_reader_table(results, args.allocators, kinds) if args.second_reader else None
    command = "python benchmarks/evidence_recall.py " + " ".join(sys.argv[1:] if argv is None else argv)
    config = {
        "split": args.split,
        "n_per_kind": args.n_per_kind,
        "seed": args.seed,
        "allocators": args.allocators,
        "ablation": args.ablation,
        "kinds": kinds,
        "family": FAMILY,
        "max_pixels": MAX_PIXELS,
        "budgets": {label: frac for label, frac in BUDGETS},
        "fonts": fonts,
        "held_out_fonts_preferred": preferred,
        "command": command.strip(),
        "generation_s": round(t_gen, 2),
        "wall_s": round(wall, 2),
        "second_reader": args.second_reader,
        "second_reader_budget": f"{100 * args.second_reader_budget:.1f}%",
        "ocr_cache": str(args.ocr_cache) if args.ocr_cache else None,
        "relevance": str(args.relevance) if args.relevance else None,
    }
    report = render_markdown(config, summary, kinds, results, wall, by_category, second)
    print(report)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
    payload = {
        "config": config,
        "summary": summary,
        "by_category": by_category,
        "second_reader": second,
        "samples": [
            {
                "id": r.id,
                "kind": r.kind,
                "category": r.category,
                "n_tokens": r.n_tokens,
                "n_answer_cells": r.n_answer_cells,
                "recall": r.recall,
                "second": r.second,
                "rules": r.rules,
                "seconds": {k: round(v, 4) for k, v in r.seconds.items()},
            }
            for r in results
        ],
    }
    out.with_suffix(".json").write_text(json.dumps(payload, indent=1))
    print(
        f"wall time {wall:.1f} s (generation {t_gen:.1f} s); wrote {out} and {out.with_suffix('.json')}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
