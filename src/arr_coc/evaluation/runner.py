"""``arr-coc eval``: answer accuracy of a pruned Qwen-VL model beside the unpruned one, on local benchmark files.

    arr-coc eval --model PATH --data PATH --task docvqa|infovqa|chartqa|textvqa|ocrbench|jsonl|docgen
                 --budgets 1.0,0.333,0.222,0.111 [--allocator model texture text random uniform foveate]
                 [--limit N] [--batch-size B] [--split NAME] [--max-pixels N] [--device D] [--dtype T] --out DIR

What one run does:

1. opens the data (:mod:`~arr_coc.evaluation.datasets`) and the model (``from_pretrained``: a local folder or a
   cached hub id; nothing is downloaded when offline);
2. for each batch of ``--batch-size`` samples, builds lmms-eval's prompt for the task (system prompt, image,
   question + the task's instruction; :mod:`~arr_coc.evaluation.tasks`), and generates greedily with the UNPRUNED
   model and then with every allocator at every budget below 1.0 (budget 1.0 *is* the unpruned model), all on the
   same batch of inputs;
3. appends one line per (sample, variant) to ``DIR/predictions.jsonl`` as soon as it is scored: ``id``,
   ``variant`` (``unpruned`` or ``<allocator>@<budget>``), ``prediction``, ``answers``, ``score``, ``tokens_kept``,
   ``tokens_total``, ``ttft_ms``, ``peak_bytes``; a sample that cannot be read is one ``{"id", "error"}`` line.
   Rerunning with the same ``--out`` skips every (id, variant) already there, so an interrupted run resumes;
   ``DIR/manifest.json`` records the options that shape the rows (:func:`row_options`: model, data, pixel bounds,
   generation length, dtype, batch size, seed, relevance checkpoint); a rerun with other ones is refused, naming
   each difference, unless ``--overwrite`` starts the folder afresh (or another ``--out`` is given);
4. writes ``DIR/results.md`` (the table below) and ``DIR/results.json``, and prints the table.

The table, one row per variant over the samples of this run:

    | allocator | budget | samples | <metric> | retention | visual tokens kept | TTFT ms | peak MiB |

``retention`` = the variant's mean score / the unpruned model's mean score on the same samples; ``visual tokens
kept`` the mean kept per image and its share of the unpruned count; ``TTFT`` the mean time to the first new token
of the batch a sample was in (vision tower + allocation + prefill + first step; with ``--batch-size 1`` it is per
sample); ``peak`` the largest peak memory of the variant's calls (CUDA ``max_memory_allocated``, reset before each
call, on a GPU; on the CPU the process's peak RSS so far, which includes the weights and never goes down). Before
the first timed call each variant runs once on a blank 64x64 image, so one-time set-up (lazy imports, the OCR
models, CUDA kernels) is not in the TTFT.

Example (a tiny random checkpoint, the built-in docgen documents):
    python -c "from arr_coc.testing import tiny_checkpoint; tiny_checkpoint('qwen2.5-vl', 'tiny')"
    arr-coc eval --model tiny --task docgen --limit 7 --budgets 1.0,0.222 --allocator texture random --out out/eval
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .allocators import DETAIL_ALLOCATORS, check_allocators, compress_options, downscale_max_pixels
from .arguments import add_eval_arguments, eval_main  # noqa: F401  (re-exported: moved from this module)
from .datasets import BadSample, LocalDataset, Sample, open_dataset
from .metrics import METRICS
from .report import (  # noqa: F401  (re-exported: moved from this module)
    _budget_text,
    _config_json,
    _header,
    _mean,
    markdown_table,
    summarize,
)
from .tasks import SYSTEM_PROMPT, TaskSpec, get_task
from .variants import (  # noqa: F401  (re-exported: moved from this module)
    DEFAULT_ALLOCATORS,
    DEFAULT_BUDGETS,
    UNPRUNED,
    EvalConfig,
    EvalResult,
    Row,
    Variant,
    is_full,
    plan_variants,
)


# ----- prompts and generation --------------------------------------------------------------------------------------
def messages_for(task: TaskSpec, question: str) -> list[dict[str, Any]]:
    """lmms-eval's chat for one sample: its system prompt, then a user turn holding the image and the prompt."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": task.prompt(question)}]},
    ]


def pixel_bounds(model_type: str, min_pixels: int | None, max_pixels: int | None) -> tuple[int, int]:
    """(min_pixels, max_pixels): the given values, else lmms-eval's for the model family."""
    from ..families import family_of_type, get_family
    from ..grid import GridSpec

    family = family_of_type(model_type)
    lo, hi = (family or get_family("qwen2.5-vl")).eval_pixels
    hi = max_pixels or hi
    lo = min(min_pixels or lo, hi)
    if family is not None and family.tiles is None:  # tiled families' bounds are tile counts (family_processors)
        GridSpec.for_family(family.name, lo, hi)  # ValueError above the largest grid the family accepts
    return lo, hi


def check_downscale(model_type: str, allocators: Iterable[str]) -> None:
    """Refuse the ``downscale`` baseline for a family whose processor does not take Qwen's area bounds (its row names
    ``pixel_kwargs``: tiles, a longest edge, a fixed size; or ``grid_rule``: MiniCPM-V's thumbnail and slices), in one
    line."""
    from ..families import family_of_type

    family = family_of_type(model_type)
    if "downscale" in allocators and family is not None and (family.pixel_kwargs or family.grid_rule):
        raise ValueError(
            f"--allocator downscale resizes by Qwen's area bounds; {family.name}'s processor sizes images its own way "
            "(tiles, a longest edge, a fixed size, or its own thumbnail and slices), so the baseline is not offered "
            "for it; leave it out of --allocator"
        )


def build_batch(processor: Any, task: TaskSpec, images: list[Any], questions: list[str], bounds: tuple[int, int]):
    """Processor inputs for a batch of (image, question) samples, padded on the left (generation continues on the
    right; the tokenizer's own ``padding_side`` is restored afterwards).

    Returns:
        A ``BatchFeature`` with ``input_ids`` (batch_size, sequence_length), ``attention_mask``, ``pixel_values``,
        ``image_grid_thw`` (batch_size, 3) and ``mm_token_type_ids``.
    """
    from ..family_processors import pixel_kwargs

    texts = [processor.apply_chat_template(messages_for(task, q), add_generation_prompt=True) for q in questions]
    bounded = pixel_kwargs(processor, *bounds)  # Qwen's area bounds, or the family row's own (tiles, longest edge)
    tokenizer = getattr(processor, "tokenizer", processor)
    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    try:
        # images nested a list per sample (Gemma 3's processor counts them per prompt), padded to the longest prompt
        nested = [[image] for image in images]
        return processor(text=texts, images=nested, padding=True, return_tensors="pt", **bounded)
    finally:
        tokenizer.padding_side = side


def cut_at_stops(text: str, until: Iterable[str]) -> str:
    """``text`` up to the first stop string (lmms-eval's Qwen-VL models ignore the "\\n\\n" stop)."""
    for stop in until:
        if stop and stop != "\n\n":
            text = text.split(stop)[0]
    return text


def generate_batch(
    model: Any, inputs: Any, processor: Any, max_new_tokens: int, device: str
) -> tuple[list[str], float, int]:
    """Greedy generation for a batch, timed: (answers, time to first token in ms, peak memory in bytes)."""
    import torch

    from ..loading import FirstTokenTimer, peak_memory

    cuda = str(device).startswith("cuda")
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    tokenizer = getattr(processor, "tokenizer", processor)
    timer = FirstTokenTimer()
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(
            **inputs,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            temperature=None,
            top_p=None,
            top_k=None,
            num_beams=1,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            streamer=timer,
        )
    if cuda:
        torch.cuda.synchronize(device)
    end = time.perf_counter()
    sequences = out if isinstance(out, torch.Tensor) else out.sequences
    new = sequences[:, inputs["input_ids"].shape[1] :]  # (B, new_tokens)
    answers = processor.batch_decode(new, skip_special_tokens=True, clean_up_tokenization_spaces=False)
    first = timer.first if timer.first is not None else end
    return answers, 1000.0 * (first - start), peak_memory(device)[0]


# ----- the prediction log ------------------------------------------------------------------------------------------
class PredictionLog:
    """``predictions.jsonl``: read what an earlier run wrote, append new lines as they are scored (flushed).

    Args:
        path: the file; created with its folder if missing.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: list[dict[str, Any]] = []
        self.done: set[tuple[str, str]] = set()  # (id, variant)
        self.failed: set[str] = set()  # ids whose sample could not be read
        if path.is_file():
            raw = path.read_bytes()
            if raw and not raw.endswith(b"\n"):  # an interrupted write: drop the cut line, redo its sample
                path.write_bytes(raw[: raw.rfind(b"\n") + 1])
                print(f"arr-coc eval: {path}: dropped a line cut short by an interrupted run", file=sys.stderr)
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    print(f"arr-coc eval: {path} line {n} is not JSON; ignored", file=sys.stderr)
                    continue
                self._note(record)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8")

    def _note(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        rid = str(record.get("id"))
        if "variant" in record:
            self.done.add((rid, record["variant"]))
        elif "error" in record:
            self.failed.add(rid)

    def is_done(self, sample_id: str, variant: str) -> bool:
        return sample_id in self.failed or (sample_id, variant) in self.done

    def write(self, record: dict[str, Any]) -> None:
        self._note(record)
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


# ----- the run -----------------------------------------------------------------------------------------------------
def _tokens_total(grid_row: Sequence[int], merge: int) -> int:
    t, h, w = (int(v) for v in grid_row)
    return t * h * w // (merge * merge)


def wrap_model(
    model: Any, processor: Any, variant: Variant, questions: list[str], seed: int, realizer: Any = None
) -> Any:
    """``model`` itself for the unpruned variant, else ``compress(model, ...)`` scoring with the bare questions;
    ``realizer`` (``--relevance``) goes to the allocators that score with it (model, text, texture, foveate)."""
    if variant.allocator is None:
        return model
    from ..integrations import compress

    options = compress_options(variant.allocator, variant.budget, seed)
    if realizer is not None and variant.allocator in DETAIL_ALLOCATORS:  # the allocators that score with it
        options["realizer"] = realizer  # it scores (texture too) and resolves their budgets with its tiers
    if variant.detail is not None:
        options["detail"] = variant.detail
    return compress(model, budget=variant.budget, processor=processor, query=list(questions), **options)


def _warm_up(loaded: Loaded, task: TaskSpec, variants: list[Variant], seed: int, realizer: Any = None) -> None:
    """One 1-token generation per allocator on a blank image, so one-time set-up is not timed."""
    from PIL import Image

    blank = Image.new("RGB", (64, 64), "white")
    seen: set[str | None] = set()
    for v in variants:
        if v.allocator in seen:
            continue
        seen.add(v.allocator)
        if v.allocator == "downscale":  # the unwrapped model on a smaller image: the unpruned warm-up covers it
            continue
        inputs = build_batch(loaded.processor, task, [blank], ["warm-up"], loaded.bounds).to(loaded.device)
        runner = wrap_model(loaded.model, loaded.processor, v, ["warm-up"], seed, realizer)
        generate_batch(runner, inputs, loaded.processor, 1, loaded.device)


def _batches(items: Iterable[Sample], size: int) -> Iterable[list[Sample]]:
    batch: list[Sample] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def run_eval(cfg: EvalConfig, model: Any = None, processor: Any = None) -> EvalResult:
    """Run the comparison described in the module docstring and write its files.

    Args:
        cfg: the options.
        model: a Qwen-VL model already loaded (then ``cfg.model`` only names it in the report and ``cfg.device`` /
            ``cfg.dtype`` are not used: the model stays where it is); default: load ``cfg.model``.
        processor: its processor (needed with ``model``).

    Raises:
        ValueError: bad options, unknown task / allocator / metric, unreadable data layout.
        ImportError: a missing extra (transformers, pyarrow / datasets, the OCR extra for ``text``).
    """
    task = get_task(cfg.task)
    metric_name = cfg.metric or task.metric
    if metric_name not in METRICS:
        raise ValueError(f"unknown metric {metric_name!r}; choose from: {', '.join(METRICS)}")
    if cfg.batch_size < 1:
        raise ValueError(f"--batch-size must be >= 1, got {cfg.batch_size}")
    if cfg.limit is not None and cfg.limit < 1:
        raise ValueError(f"--limit must be >= 1, got {cfg.limit}")
    from ..integrations.detail import parse_detail

    for mode in cfg.details:
        if parse_detail(mode) is None:
            raise ValueError(f"--detail takes level-of-detail modes (thumbnail, mixed), got {mode!r}")
    variants = plan_variants(cfg.budgets, cfg.allocators, tuple(cfg.details))
    check_allocators(list(cfg.allocators), [v.budget for v in variants if v.budget is not None])
    dataset = open_dataset(task, cfg.data, cfg.split, cfg.limit)
    if (model is None) != (processor is None):
        raise ValueError("run_eval needs both model= and processor=, or neither")
    model_type = model.config.model_type if model is not None else _model_type(cfg.model)
    bounds = pixel_bounds(model_type, cfg.min_pixels, cfg.max_pixels)
    check_downscale(model_type, cfg.allocators)
    max_new = cfg.max_new_tokens or task.max_new_tokens
    loaded = _LazyModel(cfg, task, variants, bounds, model, processor)

    out = Path(cfg.out)
    options = row_options(cfg, task, metric_name, model_type, bounds, max_new, _model_name(cfg, model))
    prepare_folder(out, options, cfg, variants)
    log = PredictionLog(out / "predictions.jsonl")
    selected: list[str] = []
    total = min(len(dataset), cfg.limit) if cfg.limit else len(dataset)
    bar = _progress(total, cfg.progress, task.name)
    try:
        pending = _pending(dataset, cfg.limit, log, variants, selected, bar)
        for batch in _batches(pending, cfg.batch_size):
            images, good = [], []
            for s in batch:
                try:
                    images.append(s.load_image())
                    good.append(s)
                except (ValueError, OSError) as err:  # one unreadable sample never stops the run
                    log.write({"id": s.id, "error": str(err)})
            bar.update(len(batch) - len(good))
            if good:
                _run_batch(loaded.get(), task, variants, good, images, log, metric_name, max_new, cfg.seed,
                           loaded.realizer)  # fmt: skip
            bar.update(len(good))
    finally:
        bar.close()
        log.close()
    bad = sum(1 for i in set(selected) if i in log.failed)
    rows = summarize(log.records, variants, selected)
    result = EvalResult(rows, bad, len(selected), metric_name)
    header = _header(cfg, task, metric_name, dataset, loaded.device, model_type, bounds, len(selected), bad)
    (out / "results.md").write_text(header + "\n\n" + markdown_table(rows, metric_name) + "\n", encoding="utf-8")
    summary = {
        "config": _config_json(cfg),
        "metric": metric_name,
        "samples": len(selected),
        "bad_samples": bad,
        "rows": [asdict(r) for r in rows],
    }
    (out / "results.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    names = (("predictions", "predictions.jsonl"), ("table", "results.md"), ("json", "results.json"))
    result.files = {k: str(out / f) for k, f in names}
    return result


# ----- what made the rows -------------------------------------------------------------------------------------------
FOLDER_FILES = ("predictions.jsonl", "results.md", "results.json", "manifest.json")


def _model_name(cfg: EvalConfig, model: Any = None) -> str:
    """The model a run used, as its manifest names it: a loaded model's own ``name_or_path`` (``cfg.model`` only names
    it then), else ``cfg.model``; a local folder as its absolute path (``./tiny`` and ``/abs/tiny`` are one model)."""
    name = str(getattr(getattr(model, "config", None), "_name_or_path", "") or cfg.model)
    path = Path(name).expanduser()
    return str(path.resolve()) if path.exists() else name


def row_options(cfg: EvalConfig, task: TaskSpec, metric: str, model_type: str, bounds: tuple[int, int],
                max_new: int, model_name: str | None = None) -> dict[str, Any]:  # fmt: skip
    """The options that shape every row of ``predictions.jsonl`` (a resumed folder must have the same ones): the
    model, the data, the prompt's task and metric, the pixel bounds, the generation length, the dtype, the batch size
    (padding), the random allocator's seed and the relevance checkpoint (its files' SHA-256). Budgets and allocators
    are not among them: each row is named by its variant (``<allocator>@<budget>``), so new ones only add rows."""
    from ..output_files import relevance_fingerprint

    return {
        "model": model_name or _model_name(cfg),
        "model_type": model_type,
        "task": task.name,
        "data": None if cfg.data is None else str(Path(cfg.data).expanduser().resolve()),
        "split": cfg.split,
        "metric": metric,
        "min_pixels": bounds[0],
        "max_pixels": bounds[1],
        "max_new_tokens": max_new,
        "dtype": cfg.dtype,
        "batch_size": cfg.batch_size,
        "seed": cfg.seed,
        "relevance": relevance_fingerprint(cfg.relevance),
    }


def prepare_folder(out: Path, options: dict[str, Any], cfg: EvalConfig, variants: Sequence[Variant]) -> None:
    """Make ``out`` ready for this run: afresh with ``cfg.overwrite``; else, when it holds predictions, refuse unless
    they were made with the same :func:`row_options` (``manifest.json``: a ``ValueError`` naming each difference).
    Then write the manifest (the options, and every variant the folder holds)."""
    from ..output_files import check_manifest, write_manifest

    manifest = out / "manifest.json"
    predictions = out / "predictions.jsonl"
    if cfg.overwrite:
        removed = [name for name in FOLDER_FILES if (out / name).is_file()]
        for name in removed:
            (out / name).unlink()
        if removed:
            print(f"arr-coc eval: --overwrite: removed {', '.join(removed)} from {out}", file=sys.stderr)
    held: list[str] = []
    if predictions.is_file() and predictions.read_bytes().strip():
        if manifest.is_file():
            check_manifest(manifest, options, f"--out {str(out)!r}", "rerun with --overwrite or another --out")
            try:
                held = list(json.loads(manifest.read_text(encoding="utf-8"))["recorded"].get("variants", []))
            except (ValueError, KeyError, TypeError, AttributeError):
                held = []
        else:
            print(
                f"arr-coc eval: {out} has predictions but no manifest.json (an older arr-coc): resuming without "
                "checking the options that made them; a manifest of this run's options is written now",
                file=sys.stderr,
            )
    out.mkdir(parents=True, exist_ok=True)
    names = sorted(set(held) | {v.name for v in variants})
    recorded = {
        "variants": names,
        "budgets": list(cfg.budgets),
        "allocators": list(cfg.allocators),
        "details": list(cfg.details),
        "limit": cfg.limit,
        "device": cfg.device,
    }
    write_manifest(manifest, options, recorded)


def _model_type(model_id: str) -> str:
    """The checkpoint's ``model_type`` from its config alone (no weights loaded).

    Raises:
        ModelNotFoundError: when the checkpoint cannot be found (the message says where it was looked for).
    """
    from transformers import AutoConfig

    from ..loading import ModelNotFoundError, not_found_message

    try:
        return AutoConfig.from_pretrained(model_id).model_type
    except (OSError, ValueError) as err:
        raise ModelNotFoundError(not_found_message(model_id, str(err))) from None


@dataclass
class Loaded:
    """A loaded model and what generation needs with it."""

    processor: Any
    model: Any
    device: str
    bounds: tuple[int, int]
    merge: int


class _LazyModel:
    """Loads the model (and warms every variant up) on first use, so a rerun with nothing left to do loads nothing."""

    def __init__(
        self,
        cfg: EvalConfig,
        task: TaskSpec,
        variants: list[Variant],
        bounds: tuple[int, int],
        model: Any,
        processor: Any,
    ) -> None:
        from ..loading import resolve_device

        self.cfg, self.task, self.variants, self.bounds = cfg, task, variants, bounds
        self.model, self.processor = model, processor
        self.device = str(model.device) if model is not None else resolve_device(cfg.device)
        self.loaded: Loaded | None = None
        self.realizer = None  # --relevance: loaded before the model, so a bad folder fails first
        if cfg.relevance is not None:
            from ..realizing import Realizer

            self.realizer = Realizer.from_pretrained(cfg.relevance)

    def get(self) -> Loaded:
        if self.loaded is None:
            from ..loading import load_model, resolve_dtype

            model, processor = self.model, self.processor
            if model is None:
                processor, model = load_model(self.cfg.model, resolve_dtype(self.cfg.dtype), self.device)
            merge = int(getattr(getattr(model.config, "vision_config", None), "spatial_merge_size", 1) or 1)
            self.loaded = Loaded(processor, model, self.device, self.bounds, merge)
            _warm_up(self.loaded, self.task, self.variants, self.cfg.seed, self.realizer)
        return self.loaded


def _pending(
    dataset: LocalDataset, limit: int | None, log: PredictionLog, variants: list[Variant], selected: list[str], bar: Any
) -> Iterable[Sample]:
    """Samples with a variant still to run, in file order, up to ``limit``; bad samples are logged on the way."""
    for n, item in enumerate(dataset):
        if limit is not None and n >= limit:
            return
        selected.append(item.id)
        if isinstance(item, BadSample):
            if item.id not in log.failed:
                log.write({"id": item.id, "error": item.error})
            bar.update(1)
            continue
        if all(log.is_done(item.id, v.name) for v in variants):
            bar.update(1)
            continue
        yield item


def _run_batch(
    loaded: Loaded,
    task: TaskSpec,
    variants: list[Variant],
    samples: list[Sample],
    images: list[Any],
    log: PredictionLog,
    metric_name: str,
    max_new: int,
    seed: int,
    realizer: Any = None,
) -> None:
    """Every variant still missing for some of ``samples``, on those samples as one batch."""
    from ..loading import visual_tokens

    metric = METRICS[metric_name]
    batches: dict[tuple[int, ...], Any] = {}  # the same inputs object for every variant run on the same samples
    for v in variants:
        todo = [i for i, s in enumerate(samples) if not log.is_done(s.id, v.name)]
        if not todo:
            continue
        subset = [samples[i] for i in todo]
        questions = [s.question for s in subset]
        if tuple(todo) not in batches:
            built = build_batch(loaded.processor, task, [images[i] for i in todo], questions, loaded.bounds)
            batches[tuple(todo)] = built.to(loaded.device)
        inputs = batches[tuple(todo)]
        grids = inputs["image_grid_thw"].tolist() if "image_grid_thw" in inputs else []  # (B, 3): one image a sample
        if v.allocator == "downscale":
            answers, ttft, peak, shown = _downscale_batch(loaded, task, v, [images[i] for i in todo], questions,
                                                          grids, max_new)  # fmt: skip
        else:
            runner = wrap_model(loaded.model, loaded.processor, v, questions, seed, realizer)
            answers, ttft, peak = generate_batch(runner, inputs, loaded.processor, max_new, loaded.device)
        for j, (s, answer) in enumerate(zip(subset, answers, strict=True)):
            prediction = cut_at_stops(answer, task.until)
            total = _tokens_total(grids[j], loaded.merge) if grids else visual_tokens(loaded.model, inputs, j)
            if v.allocator == "downscale":
                kept = shown[j]
            else:
                kept = total if v.allocator is None else sum(a.budget for a in runner.last_allocation[j])
            extra = {"dataset": s.meta.get("dataset")} if metric_name == "ocrbench_accuracy" else {}
            record = {
                "id": s.id,
                "variant": v.name,
                "allocator": v.shown,
                "budget": v.label,
                "question": s.question,
                "prediction": prediction,
                "answers": s.answers,
                "metric": metric_name,
                "score": metric(prediction, s.answers, **extra),
                "tokens_kept": int(kept),
                "tokens_total": int(total),
                "ttft_ms": round(ttft, 3),
                "peak_bytes": int(peak),
                "batch_size": len(subset),
            }
            meta = {k: value for k, value in s.meta.items() if _jsonable(value)}
            if meta:
                record["meta"] = meta
            log.write(record)


def _downscale_batch(
    loaded: Loaded,
    task: TaskSpec,
    variant: Variant,
    images: list[Any],
    questions: list[str],
    grids: list[list[int]],
    max_new: int,
) -> tuple[list[str], float, int, list[int]]:
    """The downscale baseline: each image through the processor's own resize at the largest ``max_pixels`` that gives
    at most the variant's token count (``downscale_max_pixels``), the unwrapped model, one sample a call (their
    pixel bounds differ). Returns answers, mean time to first token, peak memory and the tokens each image got."""
    from ..attending import resolve_budget

    factor = int(loaded.model.config.vision_config.patch_size) * loaded.merge
    answers, ttfts, peak, shown = [], [], 0, []
    for image, question, grid in zip(images, questions, grids, strict=True):
        budget = resolve_budget(variant.budget, _tokens_total(grid, loaded.merge))  # type: ignore[arg-type]
        bounds = downscale_max_pixels(image.height, image.width, budget, factor, loaded.bounds[0])
        inputs = build_batch(loaded.processor, task, [image], [question], bounds).to(loaded.device)
        answer, ttft, mem = generate_batch(loaded.model, inputs, loaded.processor, max_new, loaded.device)
        answers += answer
        ttfts.append(ttft)
        peak = max(peak, mem)
        shown.append(_tokens_total(inputs["image_grid_thw"][0].tolist(), loaded.merge))
    return answers, sum(ttfts) / len(ttfts), peak, shown


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _progress(total: int, enabled: bool, name: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=f"eval {name}", unit="sample", file=sys.stderr, disable=not enabled)
