"""The ``arr-coc`` command.

    arr-coc allocate IMAGE --query TEXT [--budget N|F|adaptive] [--family qwen2.5-vl] [--mode auto|text|texture]
                    [--max-pixels N] [--min-pixels N] [--json OUT.json] [--heatmap OUT.png]
    arr-coc allocate --batch IN.jsonl --out OUT.jsonl [same options]
    arr-coc ask IMAGE --query TEXT --model ID_OR_PATH [--budget ...] [--heatmap OUT.png] [--compare]

``allocate`` prints a one-line summary (tokens before -> after, time) and writes the JSON contract
(id, grid, resized, original, budget, kept, scores). In batch mode each input line is
``{"id": ..., "image": "path relative to the JSONL's folder", "query": ...}`` (optionally ``"budget"``); a line
that fails is written as ``{"id": ..., "error": "..."}`` and the others go on.

Example:
    arr-coc allocate examples/invoice.png --query "How much must be paid?" --budget 0.11 --heatmap out/heat.png
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .attending import parse_budget
from .grid import FAMILIES
from .realizing import MODES


def _budget(text: str):
    try:
        return parse_budget(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def _add_grid_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--budget",
        type=_budget,
        default="adaptive",
        help="tokens to keep: a count (e.g. 256), a fraction (0.11 or 11%%) or 'adaptive' (default)",
    )
    p.add_argument(
        "--family", default="qwen2.5-vl", choices=sorted(FAMILIES), help="whose token grid (default %(default)s)"
    )
    p.add_argument("--max-pixels", type=_positive_int, default=None, help="processor max_pixels (default 1280 tokens)")
    p.add_argument(
        "--min-pixels", type=_positive_int, default=None, help="processor min_pixels (default the processor's)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arr-coc", description="Query-aware visual token allocation for Qwen-VL.")
    sub = parser.add_subparsers(dest="command", required=True)

    a = sub.add_parser("allocate", help="decide which visual tokens matter for a question (no model needed)")
    a.add_argument("image", nargs="?", help="image file")
    a.add_argument("--query", "-q", default="", help="the question")
    _add_grid_options(a)
    a.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="text: OCR-aware (needs [ocr] extra); texture: fast, no OCR; auto: text if installed",
    )
    a.add_argument("--json", type=Path, help="write the allocation as JSON here")
    a.add_argument("--heatmap", type=Path, help="write a heatmap PNG here")
    a.add_argument("--batch", type=Path, help="JSONL of {id, image, query[, budget]} lines")
    a.add_argument("--out", type=Path, help="with --batch: output JSONL")

    k = sub.add_parser("ask", help="answer a question with a Qwen-VL model, pruned (loads the model)")
    k.add_argument("image", help="image file")
    k.add_argument("--query", "-q", required=True, help="the question")
    k.add_argument("--model", required=True, help="hub id or local folder of a Qwen2/2.5/3-VL checkpoint")
    k.add_argument("--budget", type=_budget, default=0.25, help="tokens to keep (count, fraction, 'adaptive')")
    k.add_argument("--max-new-tokens", type=_positive_int, default=64)
    k.add_argument("--max-pixels", type=_positive_int, default=None, help="processor max_pixels")
    k.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    k.add_argument("--dtype", default="auto", help="torch dtype for the weights (default auto)")
    k.add_argument("--heatmap", type=Path, help="write a heatmap PNG of the kept tokens here")
    k.add_argument("--compare", action="store_true", help="also run the unpruned model and print both answers")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "allocate":
            return _allocate(args)
        from .asking import ask_main

        return ask_main(args)
    except (ValueError, ImportError, OSError) as err:
        print(f"arr-coc: error: {err}", file=sys.stderr)
        return 2


def _allocate(args: argparse.Namespace) -> int:
    from .realizing import allocate

    if args.batch is not None:
        return _allocate_batch(args)
    if not args.image:
        raise ValueError("give an IMAGE, or --batch IN.jsonl --out OUT.jsonl")
    alloc = allocate(
        args.image,
        args.query,
        args.budget,
        family=args.family,
        min_pixels=args.min_pixels,
        max_pixels=args.max_pixels,
        mode=args.mode,
    )
    t = alloc.timings_ms
    ocr = f", OCR {t['ocr']:.0f} ms" if alloc.mode == "text" else ""
    if t.get("model_load"):
        ocr += f" (+{t['model_load'] / 1e3:.1f} s loading the OCR and text models, once a process)"
    print(
        f"{args.image}: {alloc.n_tokens} -> {alloc.budget} visual tokens ({100 * alloc.budget / alloc.n_tokens:.1f}%), "
        f"grid {alloc.grid[0]}x{alloc.grid[1]} ({alloc.family}), mode {alloc.mode}, "
        f"{t['total']:.0f} ms{ocr}"
    )
    if alloc.evidence is not None:  # a question about the page's structure: its evidence was kept first
        print(f"  structural rule {alloc.evidence.rule!r}: {alloc.evidence.detail}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(alloc.to_json(id=Path(args.image).stem)) + "\n")
        print(f"wrote {args.json}")
    if args.heatmap:
        from .heatmap import save_heatmap

        save_heatmap(args.heatmap, args.image, alloc.scores, alloc.keep, alloc.query)
        print(f"wrote {args.heatmap}")
    return 0


def _allocate_batch(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .realizing import allocate

    if args.out is None:
        raise ValueError("--batch needs --out OUT.jsonl")
    if not args.batch.is_file():
        raise ValueError(f"batch file {str(args.batch)!r} does not exist")
    lines = args.batch.read_text(encoding="utf-8").splitlines()
    root = args.batch.parent
    args.out.parent.mkdir(parents=True, exist_ok=True)
    failed = 0
    with args.out.open("w", encoding="utf-8") as out:
        for n, line in enumerate(tqdm(lines, desc="allocate", unit="img", file=sys.stderr), 1):
            if not line.strip():
                continue
            record_id = f"line-{n}"
            try:
                item = json.loads(line)
                if not isinstance(item, dict) or "image" not in item:
                    raise ValueError('each line must be a JSON object with "image" (and "id", "query")')
                record_id = item.get("id", record_id)
                image = Path(item["image"])
                alloc = allocate(
                    image if image.is_absolute() else root / image,
                    item.get("query", ""),
                    item.get("budget", args.budget),
                    family=args.family,
                    min_pixels=args.min_pixels,
                    max_pixels=args.max_pixels,
                    mode=args.mode,
                )
                record = alloc.to_json(id=record_id)
            except (ValueError, ImportError, OSError) as err:
                failed += 1
                record = {"id": record_id, "error": str(err)}
            out.write(json.dumps(record) + "\n")
    print(f"wrote {args.out}: {len(lines) - failed} allocated, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
