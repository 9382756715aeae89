"""The ``arr-coc`` command.

    arr-coc allocate IMAGE --query TEXT [--budget N|F|adaptive] [--family qwen2.5-vl] [--mode auto|text|texture]
                    [--max-pixels N] [--min-pixels N] [--json OUT.json] [--heatmap OUT.png]
    arr-coc allocate --batch IN.jsonl --out OUT.jsonl [same options]
    arr-coc ask IMAGE --query TEXT --model ID_OR_PATH [--budget ...] [--mode ...] [--heatmap OUT.png] [--compare]
                [--foveate]
    arr-coc demo [--model ID_OR_PATH] [--host 127.0.0.1] [--port 7860]
    arr-coc eval --model PATH --task docvqa --data PATH --budgets 1.0,0.333,0.222,0.111 --out DIR
                 (answer accuracy of every allocator and budget vs the unpruned model; see evaluation/runner.py)
    arr-coc train [--objective evidence|answer] --data DIR --out FOLDER [...]   (see arr-coc train --help)
    arr-coc --version

``allocate`` prints a one-line summary (tokens before -> after, mode, time) and writes the JSON contract
(``Allocation.to_json``: id, grid [rows, cols], resized and original [W, H], budget, kept, scores, mode, family,
query). In batch mode each input line is ``{"id": ..., "image": "path relative to the JSONL's folder", "query": ...}``
(optionally ``"budget"``); blank lines are skipped; a line that fails is written as ``{"id": ..., "error": "..."}``
and the others go on; a line whose id an earlier line already used is such an error (ids name the output lines).

Exit codes: 0 done; 1 batch mode finished but some lines failed (each written as ``{"id", "error"}``); 2 bad input
or usage (one clear line on stderr).

Example:
    arr-coc allocate examples/invoice.jpg --query "How much must be paid?" --budget 0.11 --heatmap out/heat.png
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from .attending import parse_budget
from .batch_fields import BATCH_FIELDS, _json_type, batch_fields, batch_id  # noqa: F401  (importable from here)
from .families import family_names
from .grid import DEFAULT_MAX_TOKENS, normalize_family
from .realizing import BUILTIN_RELEVANCE, MODES

RELEVANCE_HELP = (
    "a relevance checkpoint folder (arr-coc train) or a built-in one by name: its learned box scorer and config "
    f"({', '.join(BUILTIN_RELEVANCE)}: the learned scorer shipped in the package; rules: the rules alone); "
    "hybrid, hybrid-floor, routed, routed-structure, routed-tables, routed-cells [:FOLDER]: the learned scorer "
    "combined with the rules (routed: the rules where their structural evidence or table-cell crossing fired; "
    "routed-structure: where structural evidence fired; routed-tables: that, or a question whose every content word "
    "is printed asks a table page; routed-cells: that, or a printed-header table-cell question); default: "
    "routed-cells"
)

ALLOCATE_EXAMPLES = """examples:
  arr-coc allocate examples/invoice.jpg --query "How much must be paid?" --budget 0.11 --heatmap out/heatmap.png
  arr-coc allocate examples/chart.jpg -q "What value is shown for Thu?" --budget 256 --family qwen3-vl --json out/a.json
  arr-coc allocate examples/receipt.jpg -q "How much did the pasta cost?" --mode texture      # fast, no OCR
  arr-coc allocate --batch items.jsonl --out out/allocations.jsonl --budget adaptive   # {"id", "image", "query"} a line

batch files: one JSON object a line, {"id", "image", "query"[, "budget"]}; a relative "image" path is relative to
  the batch file's folder (not the current directory); ids must be unique (a repeated id is an error line).
  notes (a question with no word the pipeline reads, a multi-page file) go to stderr and the JSON's "notes".

exit codes: 0 done; 1 (--batch) some lines failed, each written as {"id", "error"}; 2 bad input or usage"""

ASK_EXAMPLES = """examples:
  arr-coc ask examples/invoice.jpg -q "How much must be paid?" --model Qwen/Qwen2.5-VL-3B-Instruct --compare
  arr-coc ask examples/chart.jpg -q "What value is shown for Thu?" --model /path/to/Qwen3-VL-4B-Instruct --budget 0.22

  Without weights, a tiny random-weight checkpoint with the real tokenizer (answers are gibberish):
  python -c "from arr_coc.testing import tiny_checkpoint; tiny_checkpoint('qwen2.5-vl', 'out/tiny')"
  arr-coc ask examples/receipt.jpg -q "How much did the pasta cost?" --model out/tiny --compare

exit codes: 0 done; 2 bad input, model not found or usage"""

DEMO_EXAMPLES = """examples:
  arr-coc demo                                   # then open http://127.0.0.1:7860 (works offline)
  arr-coc demo --model out/tiny --port 8000      # also the model's answers, unpruned vs pruned, side by side

  API: from gradio_client import Client, handle_file
       Client("http://127.0.0.1:7860/").predict(handle_file("examples/invoice.jpg"), "How much must be paid?",
                                                "0.11", "qwen2.5-vl", "auto", api_name="/allocate")

exit codes: 0 stopped; 2 the [demo] extra is missing or bad usage"""

EVAL_EXAMPLES = """examples:
  arr-coc eval --model Qwen/Qwen2.5-VL-7B-Instruct --task docvqa --data data/DocVQA --out results/docvqa
  arr-coc eval --model /path/to/Qwen3-VL-4B-Instruct --task chartqa --data data/ChartQA --budgets 1.0,0.222 \\
      --allocator model random uniform --limit 500 --batch-size 4 --out results/chartqa
  arr-coc eval --model out/tiny --task docgen --limit 7 --out out/eval     # no data needed: generated documents

  --data: a folder written by datasets' save_to_disk, parquet file(s) (a download of the Hugging Face dataset),
  or JSONL with {"id", "image", "question", "answers"} a line. Rerunning with the same --out resumes; a rerun whose
  options shape the rows otherwise (model, data, pixels, seed, relevance...: --out/manifest.json) is refused, naming
  the difference; --overwrite starts --out afresh.

exit codes: 0 done (unreadable samples are listed in predictions.jsonl); 1 no sample could be read; 2 bad input,
  model not found or usage"""

QUERY_BLIND_NOTE = "note: the query is empty, so the allocation is query-blind (information and salience decide)"


class _Parser(argparse.ArgumentParser):
    """argparse with one line per usage error (``arr-coc allocate: error: ...; see ... --help``), not the usage text."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Epilog examples kept as written; ``(default: ...)`` added to every option that has a real default."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False, argparse.SUPPRESS) or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _budget(text: str):
    try:
        return parse_budget(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _family(text: str) -> str:
    """A family name as users spell it (``Qwen2.5-VL``, ``qwen2_5_vl``, ``qwen3-vl-moe``), as the API accepts it."""
    try:
        return normalize_family(text)
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


def _pixels_help(what: str) -> str:
    return (
        f"{what}, in pixels (default: {DEFAULT_MAX_TOKENS * 28 * 28:,} = {DEFAULT_MAX_TOKENS} tokens of 28x28 px for "
        f"qwen2-vl/qwen2.5-vl, {DEFAULT_MAX_TOKENS * 32 * 32:,} for qwen3-vl)"
    )


def _add_grid_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--budget",
        type=_budget,
        default="adaptive",
        help="visual tokens to keep per image: a count (256), a fraction (0.11 or 11%%) or 'adaptive' (64-400 from "
        "how concentrated relevance is)",
    )
    p.add_argument(
        "--family",
        type=_family,
        default="qwen2.5-vl",
        metavar="{" + ",".join(family_names()) + "}",
        help="whose token grid (any case; qwen3-vl-moe = qwen3-vl)",
    )
    p.add_argument("--max-pixels", type=_positive_int, default=None, help=_pixels_help("largest resized image area"))
    p.add_argument(
        "--min-pixels",
        type=_positive_int,
        default=None,
        help="smallest resized image area, in pixels (default: the processor's, 3,136 or 65,536 for qwen3-vl)",
    )


def _add_mode_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="text: OCR-aware relevance (needs the [ocr] extra); texture: fast, no OCR; auto: text if the [ocr] "
        "extra is installed, else texture (the line printed says which ran)",
    )


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(
        prog="arr-coc",
        description="Query-aware visual token allocation and pruning for Qwen-VL models.",
        epilog=ALLOCATE_EXAMPLES.replace("examples:", "examples (see also arr-coc ask --help):", 1),
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"arr-coc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    a = sub.add_parser(
        "allocate",
        help="decide which visual tokens matter for a question (no model needed)",
        description=textwrap.fill(
            "Decide which visual tokens of an image matter for a question, on a Qwen-VL model's token grid (no model "
            "needed). Prints one line per image; writes the allocation as JSON and a heatmap if asked. The JSON's "
            "grid is [rows, cols] of visual tokens; resized and original are [W, H] in pixels.",
            100,
        ),
        epilog=ALLOCATE_EXAMPLES,
        formatter_class=_HelpFormatter,
    )
    a.add_argument("image", nargs="?", help="image file or PDF (or use --batch)")
    a.add_argument(
        "--query",
        "-q",
        default=None,
        help='the question (required for a single image; "" is allowed and makes the allocation query-blind)',
    )
    _add_grid_options(a)
    _add_mode_option(a)
    a.add_argument("--json", type=Path, help="write the allocation as JSON here")
    a.add_argument("--heatmap", type=Path, help="write a heatmap PNG here")
    a.add_argument(
        "--batch",
        type=Path,
        help="JSONL of {id, image, query[, budget]} lines; relative image paths are relative to this file's folder; "
        "ids must be unique (instead of IMAGE)",
    )
    a.add_argument(
        "--out",
        type=Path,
        help="with --batch: output JSONL; a rerun with the same options resumes it (ids already there are skipped)",
    )
    a.add_argument(
        "--overwrite",
        action="store_true",
        help="with --batch: start --out afresh instead of resuming it (needed when the options changed)",
    )
    a.add_argument(
        "--pages",
        default=None,
        help="a PDF's pages, 1-based (3-10, 1,4,7-9); a PDF is one document: --budget is a count over all its pages "
        "or a fraction of all their tokens (arr_coc.pages)",
    )
    a.add_argument(
        "--floor",
        default="auto",
        help="with a PDF: tokens every page keeps (auto: none when some page matches the question, else an even split)",
    )
    a.add_argument(
        "--relevance",
        type=Path,
        default=None,
        help=RELEVANCE_HELP,
    )

    k = sub.add_parser(
        "ask",
        help="answer a question with a Qwen-VL model, pruned (loads the model)",
        description=textwrap.fill(
            "Answer a question about an image with a Qwen-VL model whose visual tokens are pruned: load the model "
            "(local folder or cached hub id), prune, generate; print the answer, tokens kept, time to first token and "
            "peak memory. --compare also runs the unpruned model and shows where the time went.",
            100,
        ),
        epilog=ASK_EXAMPLES,
        formatter_class=_HelpFormatter,
    )
    k.add_argument("image", help="image file")
    k.add_argument("--query", "-q", required=True, help="the question (required)")
    k.add_argument("--model", required=True, help="hub id (already in the Hugging Face cache) or local folder of a "
                   "Qwen2-VL / Qwen2.5-VL / Qwen3-VL checkpoint")  # fmt: skip
    k.add_argument("--budget", type=_budget, default=0.25, help="visual tokens to keep: a count, a fraction or "
                   "'adaptive'")  # fmt: skip
    _add_mode_option(k)
    k.add_argument("--max-new-tokens", type=_positive_int, default=64, help="most tokens to generate for the answer")
    k.add_argument("--max-pixels", type=_positive_int, default=None, help="largest resized image area, in pixels "
                   "(default: the checkpoint's preprocessor_config.json)")  # fmt: skip
    k.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    k.add_argument("--dtype", default="auto", help="torch dtype of the weights: auto (the checkpoint's), bfloat16, "
                   "float16 or float32")  # fmt: skip
    k.add_argument("--heatmap", type=Path, help="write a heatmap PNG of the kept tokens here")
    k.add_argument("--compare", action="store_true", help="also run the unpruned model: both answers, both times to "
                   "first token and where the time went (vision tower, scorer, LM prefill, decode)")  # fmt: skip
    k.add_argument(
        "--relevance",
        type=Path,
        default=None,
        help=RELEVANCE_HELP,
    )
    k.add_argument("--foveate", action="store_true", help="choose the tokens before the vision tower and encode only "
                   "their patches (compress(..., foveate=True))")  # fmt: skip
    k.add_argument("--detail", choices=["thumbnail", "mixed"], default=None, help="level of detail: spend part of the "
                   "budget on a coarse view of the whole image (a thumbnail before it, or coarse cells in its grid) "
                   "and the rest on the relevant tokens at full resolution (compress(..., detail=...))")  # fmt: skip

    d = sub.add_parser(
        "demo",
        help="a browser demo: heatmap, query-blind baseline, answers (needs the [demo] extra)",
        description=textwrap.fill(
            "Serve a page (Gradio, offline) where you upload an image and ask a question, and see the relevance "
            "heatmap with the kept tokens beside a query-blind uniform stride of the same budget, tokens before -> "
            "after and the time of each stage; with --model, the model's answers unpruned and pruned. The page's "
            "named API endpoint /allocate returns the heatmap and the allocation JSON.",
            100,
        ),
        epilog=DEMO_EXAMPLES,
        formatter_class=_HelpFormatter,
    )
    d.add_argument("--model", default=None, help="a Qwen-VL checkpoint (local folder or cached hub id): also show "
                   "its answers unpruned and pruned; loaded on the first question")  # fmt: skip
    d.add_argument("--host", default="127.0.0.1", help="interface to listen on (0.0.0.0: every interface)")
    d.add_argument("--port", type=_positive_int, default=None, help="port (default: the first free one from 7860)")
    d.add_argument("--device", default=None, help="with --model: torch device (default: cuda if available, else cpu)")
    d.add_argument("--dtype", default="auto", help="with --model: torch dtype of the weights")
    d.add_argument("--max-new-tokens", type=_positive_int, default=64, help="with --model: most tokens an answer has")
    d.add_argument(
        "--detail",
        choices=["thumbnail", "mixed"],
        default="mixed",
        help="the level-of-detail picture shown beside the heatmap (and, with --model, one more answer with "
        "compress(..., detail=...))",
    )
    d.add_argument(
        "--relevance",
        type=Path,
        default=None,
        help=RELEVANCE_HELP + " (the heatmap's allocation)",
    )

    from .evaluation.runner import add_eval_arguments

    e = sub.add_parser(
        "eval",
        help="answer accuracy on a benchmark: every allocator at every budget vs the unpruned model",
        description=textwrap.fill(
            "Answer accuracy of a pruned Qwen-VL model on DocVQA, InfographicVQA, ChartQA, TextVQA, OCRBench, your "
            "own JSONL or the built-in generated documents, from local files: every allocator at every budget beside "
            "the unpruned model, with lmms-eval's prompts, generation settings and metrics. Writes predictions.jsonl "
            "(one line per sample and variant; a rerun resumes), results.md and results.json.",
            100,
        ),
        epilog=EVAL_EXAMPLES,
        formatter_class=_HelpFormatter,
    )
    add_eval_arguments(e)

    t = sub.add_parser(
        "train",
        help="train the relevance model (the text path's learned box scorer); see arr-coc train --help",
        add_help=False,
    )
    t.add_argument("train_args", nargs=argparse.REMAINDER, help="arguments of arr_coc.training.main")
    return parser


def load_relevance(folder: Path | str | None):
    """The ``Realizer`` of a checkpoint folder or built-in name (``--relevance``), or None for the default one."""
    if folder is None:
        return None
    from .realizing import Realizer

    return Realizer.from_pretrained(folder)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["train"]:  # its own parser (the objective's), so --help shows the training options
        from .training import main as train_main

        return train_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        if args.command == "allocate":
            return _allocate(args)
        if args.command == "demo":
            from .demo import main as demo_main  # ImportError without the [demo] extra: one clear line below

            return demo_main(
                args.model,
                args.host,
                args.port,
                args.device,
                args.dtype,
                args.max_new_tokens,
                args.detail,
                relevance=args.relevance,
            )
        if args.command == "eval":
            from .evaluation.runner import eval_main

            return eval_main(args)
        from .asking import ask_main

        return ask_main(args)
    except (ValueError, ImportError, OSError) as err:
        print(f"arr-coc: error: {err}", file=sys.stderr)
        return 2


def _summary(name: str, alloc) -> str:
    """The one-line report of an allocation: tokens before -> after, grid, mode that ran, time."""
    t = alloc.timings_ms
    extra = ""
    if alloc.mode == "text":
        extra = f", OCR {t['ocr']:.0f} ms"
        if t.get("model_load", 0.0) >= 50:  # the OCR and text models were loaded by this call (once a process)
            extra += f" (+{t['model_load'] / 1e3:.1f} s loading the OCR and text models, once a process)"
    return (
        f"{name}: {alloc.n_tokens} -> {alloc.budget} visual tokens ({100 * alloc.budget / alloc.n_tokens:.1f}%), "
        f"grid {alloc.grid[0]}x{alloc.grid[1]} (rows x cols, {alloc.family}), mode {alloc.mode}, "
        f"{t['total']:.0f} ms{extra}"
    )


def _allocate(args: argparse.Namespace) -> int:
    from .realizing import allocate

    if args.batch is not None:
        if args.image:
            raise ValueError(f"give an IMAGE or --batch, not both (got {args.image!r} and --batch {str(args.batch)!r})")
        return _allocate_batch(args)
    if not args.image:
        raise ValueError("give an IMAGE, or --batch IN.jsonl --out OUT.jsonl")
    from .documents import is_pdf

    if is_pdf(args.image) or args.pages is not None:
        return _allocate_document(args)
    if args.query is None:
        raise ValueError(
            'give the question with --query TEXT (--query "" is allowed: the allocation is then query-blind)'
        )
    if args.heatmap:
        from .heatmap import check_image_path

        check_image_path(args.heatmap)  # before the work: a path that names no picture format is refused now
    if not args.query.strip():
        print(QUERY_BLIND_NOTE, file=sys.stderr)
    alloc = allocate(
        args.image,
        args.query,
        args.budget,
        family=args.family,
        min_pixels=args.min_pixels,
        max_pixels=args.max_pixels,
        mode=args.mode,
        realizer=load_relevance(args.relevance),
    )
    print(_summary(args.image, alloc))
    for note in alloc.notes:
        print(f"note: {note}", file=sys.stderr)
    if alloc.evidence is not None:  # a question about the page's structure: its evidence was kept first
        print(f"  structural rule {alloc.evidence.rule!r}: {alloc.evidence.detail}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(alloc.to_json(id=Path(args.image).stem), allow_nan=False) + "\n")
        print(f"wrote {args.json}")
    if args.heatmap:
        from .heatmap import save_heatmap

        save_heatmap(args.heatmap, args.image, *alloc.page_view(), alloc.query)  # a tiled family: its page raster
        print(f"wrote {args.heatmap}")
    return 0


def _floor(text: str) -> int | str:
    if str(text) == "auto":
        return "auto"
    if not str(text).isdigit():
        raise ValueError(f"--floor must be 'auto' or a token count >= 0, got {text!r}")
    return int(text)


def _document(args: argparse.Namespace, source, pages, query: str, budget, realizer):
    """One document's ``DocumentAllocation`` with the CLI's options (``arr_coc.pages.allocate_pages``)."""
    from .pages import allocate_pages

    return allocate_pages(
        source, query, budget, family=args.family, min_pixels=args.min_pixels, max_pixels=args.max_pixels,
        mode=args.mode, pages=pages, floor=_floor(args.floor), realizer=realizer,
    )  # fmt: skip


def _allocate_document(args: argparse.Namespace) -> int:
    """``arr-coc allocate report.pdf --query ... --budget ...``: one budget over the document's pages."""
    if args.query is None:
        raise ValueError('give the question with --query TEXT (--query "" is allowed: the budget is split evenly)')
    if args.heatmap:
        raise ValueError("--heatmap draws one image; for a document use --json (each page's kept cells)")
    doc = _document(args, args.image, args.pages, args.query, args.budget, load_relevance(args.relevance))
    shares = ", ".join(f"{p.page.name}:{p.budget}" for p in doc.pages if p.budget)
    print(
        f"{args.image}: {len(doc.pages)} pages, {doc.n_tokens} -> {doc.budget} visual tokens "
        f"({100 * doc.budget / doc.n_tokens:.2f}%), mode {doc.mode}, {doc.timings_ms['total']:.0f} ms; "
        f"tokens by page: {shares}"
    )
    for note in doc.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc.to_json(id=Path(args.image).stem)) + "\n")
        print(f"wrote {args.json}")
    return 0


def _batch_options(args: argparse.Namespace) -> dict[str, object]:
    """The options that shape every line of a batch output (its manifest; a resumed output must have the same)."""
    from .grid import GridSpec
    from .output_files import relevance_fingerprint
    from .realizing import resolve_mode

    spec = GridSpec.for_family(args.family, args.min_pixels, args.max_pixels)
    return {
        "family": spec.family,
        "min_pixels": spec.min_pixels,
        "max_pixels": spec.max_pixels,
        "mode": resolve_mode(args.mode),
        "budget": args.budget,
        "relevance": relevance_fingerprint(args.relevance),
    }


def _batch_document(args, item: dict, n: int, root: Path, record_id, seen: dict[str, int], realizer) -> dict:
    """The output record of a batch line naming a document (``"pdf"`` or ``"images"``)."""
    from .documents import document_fields

    source, pages = document_fields(item, root)
    query = item.get("query", "")
    if not isinstance(query, str):
        raise ValueError(f'"query" must be a string, got {_json_type(query)} {query!r}')
    budget = parse_budget(item.get("budget", args.budget))
    key = str(record_id)
    if key in seen:
        raise ValueError(f"duplicate id {record_id!r} (first used on line {seen[key]}); ids must be unique")
    seen[key] = n
    doc = _document(args, source, pages, query, budget, realizer)
    for note in doc.notes:
        print(f"note: {record_id}: {note}", file=sys.stderr)
    return doc.to_json(id=record_id)


def _allocate_batch(args: argparse.Namespace) -> int:
    """Allocate every line of ``--batch``; returns 0 if all lines were allocated, 1 if any failed, 130 when
    interrupted (Ctrl-C), 2 when the output cannot be written (a full disk: the message says how many lines were).

    The output is locked (``OUT.lock``: a second writer is refused, naming the holder), written in whole lines
    (``output_files.JsonlWriter``), and resumed by id when it holds lines of an earlier run with the same options
    (``OUT.manifest.json``); ``--overwrite`` starts it afresh.
    """
    from tqdm import tqdm

    from .output_files import JsonlWriter, OutputLock, OutputWriteError, check_manifest, resume_jsonl, write_manifest
    from .realizing import allocate

    if args.out is None:
        raise ValueError("--batch needs --out OUT.jsonl")
    if args.batch.is_dir():
        raise ValueError(f"batch file {str(args.batch)!r} is a folder; give the JSONL file inside it")
    if not args.batch.is_file():
        raise ValueError(f"batch file {str(args.batch)!r} does not exist")
    if args.out.is_dir():
        raise ValueError(
            f"--out {str(args.out)!r} is a folder; give a file name such as {str(args.out / 'out.jsonl')!r}"
        )
    if args.out.resolve() == args.batch.resolve():
        raise ValueError(f"--out {str(args.out)!r} is the --batch file itself: writing it would destroy the input")
    lines = args.batch.read_text(encoding="utf-8").splitlines()
    total = sum(1 for line in lines if line.strip())
    root = args.batch.parent
    args.out.parent.mkdir(parents=True, exist_ok=True)
    options = _batch_options(args)
    manifest = args.out.with_name(args.out.name + ".manifest.json")
    with OutputLock(args.out) as lock:  # before reading the output: a second writer is refused here
        for note in lock.notes:
            print(f"note: {note}", file=sys.stderr)
        if args.overwrite and args.out.exists():
            args.out.write_bytes(b"")
            print(f"--overwrite: started {args.out} afresh", file=sys.stderr)
        done, before, notes = resume_jsonl(args.out)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        if before:
            check_manifest(manifest, options, f"--out {str(args.out)!r}", "rerun with --overwrite to start afresh")
            print(
                f"resuming {args.out}: {before} line(s) already there; their ids are skipped (--overwrite starts "
                "afresh)",
                file=sys.stderr,
            )
        write_manifest(manifest, options, {"batch": str(args.batch.resolve())})
        with JsonlWriter(args.out) as writer:
            try:
                realizer = load_relevance(args.relevance)
                counts = _batch_lines(args, lines, root, done, writer, realizer, allocate, tqdm)
            except KeyboardInterrupt:
                print(
                    f"interrupted: wrote {before + writer.written} of {total} lines to {args.out} ({writer.written} "
                    "this run); rerun the same command to resume",
                    file=sys.stderr,
                )
                return 130
            except OutputWriteError as err:
                print(
                    f"arr-coc: error: cannot write {args.out} ({err.strerror or err}): wrote {before + writer.written}"
                    f" of {total} lines ({writer.written} this run); the cut line was removed; free space and rerun "
                    "the same command to resume",
                    file=sys.stderr,
                )
                return 2
    allocated, failed, blind, skipped, modes = counts
    mode = f", mode {'/'.join(sorted(modes))}" if modes else ""
    resumed = f", {skipped} already there" if skipped else ""
    print(f"wrote {args.out}: {allocated} allocated, {failed} failed{resumed}{mode}")
    if blind:
        print(f"note: {blind} line(s) had an empty query: their allocation is query-blind", file=sys.stderr)
    return 1 if failed else 0


def _batch_lines(args, lines, root, done, writer, realizer, allocate, tqdm):
    """The batch loop: each non-blank line allocated (or an error line) and written whole; ids in ``done`` skipped.
    Returns (allocated, failed, query-blind, skipped, modes)."""
    allocated = failed = blind = skipped = 0
    seen: dict[str, int] = {}  # id -> the line that used it first
    modes: set[str] = set()
    for n, line in enumerate(tqdm(lines, desc="allocate", unit="img", file=sys.stderr), 1):
        if not line.strip():
            continue  # blank lines are skipped, not counted
        record_id = f"line-{n}"
        try:
            try:
                item = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"line {n} is not JSON ({err.msg} at column {err.colno})") from None
            record_id = batch_id(item, n)
            key = str(record_id)  # 5 and "5" are the same id
            if key in done and key not in seen:  # written by an earlier run: resumed
                seen[key] = n
                skipped += 1
                continue
            if "pdf" in item or "images" in item:  # a document: one budget over its pages (arr_coc.pages)
                record = _batch_document(args, item, n, root, record_id, seen, realizer)
                allocated += 1
                writer.write(record)
                continue
            image, query, budget = batch_fields(item, n, args.budget)
            if key in seen:
                raise ValueError(f"duplicate id {record_id!r} (first used on line {seen[key]}); ids must be unique")
            seen[key] = n
            alloc = allocate(
                image if image.is_absolute() else root / image,
                query,
                budget,
                family=args.family,
                min_pixels=args.min_pixels,
                max_pixels=args.max_pixels,
                mode=args.mode,
                realizer=realizer,
            )
            record = alloc.to_json(id=record_id)
            for note in alloc.notes:
                print(f"note: {record_id}: {note}", file=sys.stderr)
            allocated += 1
            blind += not query.strip()
            modes.add(alloc.mode)
        except (ValueError, ImportError, OSError) as err:
            if str(record_id) in done:  # its error line is already there
                skipped += 1
                continue
            failed += 1
            record = {"id": record_id, "error": str(err)}
        writer.write(record)  # whole, flushed, synced; OSError (a full disk) and Ctrl-C go to the caller
    return allocated, failed, blind, skipped, modes


if __name__ == "__main__":
    raise SystemExit(main())
