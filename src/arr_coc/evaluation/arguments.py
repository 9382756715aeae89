"""``arr-coc eval``'s command line: its options (:func:`add_eval_arguments`) and the run from parsed arguments
(:func:`eval_main`). Moved from :mod:`.runner` unchanged (``run_eval`` is imported when called); :mod:`.runner`
re-exports both names."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .metrics import METRICS
from .report import markdown_table
from .variants import DEFAULT_ALLOCATORS, DEFAULT_BUDGETS, EvalConfig


# ----- command line ------------------------------------------------------------------------------------------------
def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    """The ``arr-coc eval`` options (used by ``arr_coc.cli``)."""
    from .allocators import ALLOCATORS
    from .multipage import PAGE_TASKS
    from .tasks import TASKS

    p.add_argument("--model", help="local folder or cached hub id of a Qwen2/2.5/3-VL checkpoint (single-page tasks)")
    p.add_argument(
        "--task",
        required=True,
        choices=[*TASKS, *PAGE_TASKS],
        help="benchmark (prompt, settings, metric); mpdocvqa, slidevqa, pages, docgen-pages: multi-page documents "
        "through the document decision, no model (arr_coc.evaluation.multipage)",
    )
    p.add_argument("--data", type=Path, help="saved dataset folder, parquet file(s) or JSONL (not for docgen)")
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        help="output folder; rerunning with it resumes (the options that shape the rows must be the same: "
        "manifest.json)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="start --out afresh (its predictions, table and manifest removed) instead of resuming it",
    )
    p.add_argument(
        "--budgets",
        default=DEFAULT_BUDGETS,
        help="comma-separated budgets per image: fractions, counts or 'adaptive'; 1.0 = the unpruned model, "
        "which always runs (default %(default)s)",
    )
    p.add_argument(
        "--allocator",
        nargs="+",
        default=list(DEFAULT_ALLOCATORS),
        choices=ALLOCATORS,
        metavar="NAME",
        help=f"allocators to compare ({', '.join(ALLOCATORS)}; default: {' '.join(DEFAULT_ALLOCATORS)})",
    )
    p.add_argument("--limit", type=int, help="only the first N samples")
    p.add_argument("--batch-size", type=int, default=1, help="samples per generate call (default 1)")
    p.add_argument("--split", help="split to read (default the task's: validation or test; docgen: dev or test)")
    p.add_argument("--metric", choices=list(METRICS), help="override the task's metric")
    p.add_argument("--max-new-tokens", type=int, help="override the task's generation limit")
    p.add_argument("--min-pixels", type=int, help="smallest resized image area (default lmms-eval's)")
    p.add_argument("--max-pixels", type=int, help="largest resized image area in pixels (default lmms-eval's)")
    p.add_argument("--device", help="torch device (default cuda if available, else cpu)")
    p.add_argument("--dtype", default="auto", help="weights dtype: auto (the checkpoint's), bfloat16, float32...")
    p.add_argument("--seed", type=int, default=0, help="seed of the random allocator")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--detail",
        nargs="+",
        default=[],
        choices=["thumbnail", "mixed"],
        metavar="MODE",
        help="also run every allocator that scores tokens (model, text, texture, foveate) with these level-of-detail "
        "modes (thumbnail, mixed): rows <allocator>+<mode>, at the same budgets",
    )
    p.add_argument(
        "--relevance",
        type=Path,
        default=None,
        help="a relevance checkpoint folder (arr-coc train) or a built-in name (learned, rules) for the allocators "
        "that score with it (model, text, texture, foveate: it scores and resolves their budgets); default: "
        "routed-cells",
    )


def eval_main(args: argparse.Namespace) -> int:
    """Run ``arr-coc eval`` from parsed arguments; print the table.

    Returns 0 (bad samples are in the files), or 1 when no sample could be read (an empty table is no result).
    """
    from .multipage import PAGE_TASKS, pages_eval_main

    if args.task in PAGE_TASKS:
        return pages_eval_main(args)
    if not args.model:
        print(f"arr-coc: error: --task {args.task} needs --model (see arr-coc eval --help)", file=sys.stderr)
        return 2
    cfg = EvalConfig(
        model=args.model,
        task=args.task,
        out=args.out,
        data=args.data,
        budgets=tuple(args.budgets.split(",")),
        allocators=tuple(args.allocator),
        limit=args.limit,
        batch_size=args.batch_size,
        split=args.split,
        metric=args.metric,
        max_new_tokens=args.max_new_tokens,
        min_pixels=args.min_pixels,
        max_pixels=args.max_pixels,
        device=args.device,
        dtype=args.dtype,
        seed=args.seed,
        progress=not args.no_progress,
        details=tuple(getattr(args, "detail", None) or ()),
        relevance=getattr(args, "relevance", None),
        overwrite=bool(getattr(args, "overwrite", False)),
    )
    from ..loading import ModelNotFoundError
    from .runner import run_eval

    try:
        result = run_eval(cfg)
    except ModelNotFoundError as err:
        print(f"arr-coc: error: {err}", file=sys.stderr)
        return 2
    if result.samples and result.bad == result.samples:
        print(
            f"arr-coc: error: none of the {result.samples} samples could be read, so there is no result; their errors "
            f"are in {result.files['predictions']}",
            file=sys.stderr,
        )
        return 1
    print(markdown_table(result.rows, result.metric))
    if result.bad:
        print(
            f"{result.bad} of {result.samples} samples could not be read; their errors are in "
            f"{result.files['predictions']}"
        )
    print(f"wrote {result.files['predictions']}, {result.files['table']}, {result.files['json']}")
    return 0
