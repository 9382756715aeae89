"""``arr-coc ask``: answer a question about one image with a Qwen-VL model whose visual tokens are pruned.

    arr-coc ask IMAGE --query TEXT --model ID_OR_PATH [--budget 0.25] [--mode auto|text|texture]
                [--max-new-tokens 64] [--max-pixels N] [--device cuda|cpu] [--dtype auto|bfloat16|float32]
                [--heatmap OUT.png] [--compare] [--foveate] [--detail thumbnail|mixed]

The model and its processor are loaded by :func:`arr_coc.loading.load_model` (a local folder or a Hugging Face hub id
already in the cache; an id that is neither fails at once with where it was looked for); the image and the question
are put into a chat message with the processor's chat template, the model is wrapped with :func:`arr_coc.compress`
(with the OCR text prior in ``--mode text``, as ``allocate``) and the answer is generated. Printed: the answer, the
visual tokens before -> after and the mode that ran, the time to first token (vision tower + scoring + language-model
prefill + first token) split by stage, and the peak memory (CUDA ``max_memory_allocated`` on a GPU; the process's peak
RSS from ``resource.getrusage`` on the CPU, which includes the weights). ``--compare`` also runs the unwrapped model
on the same inputs and prints both answers and where the time of both runs went; ``--heatmap`` draws the relevance of
every visual token and marks the kept ones.
``--foveate`` chooses the tokens before the vision tower and runs the tower only on their patches
(``compress(..., foveate=True)``, see :mod:`arr_coc.integrations.foveation`).

Loading and stage timing live in :mod:`arr_coc.loading` (shared with ``demo``, ``eval`` and the lmms-eval plugin);
this file is the command.

Example:
    arr-coc ask examples/invoice.jpg --query "How much must be paid?" --model Qwen/Qwen2.5-VL-3B-Instruct \\
        --budget 0.22 --heatmap out/ask.png --compare
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass

from .loading import (  # noqa: F401  (the loading and timing names stay importable from here)
    EXAMPLE_FOLDER,
    HUB_PROBE_TIMEOUT_S,
    FirstTokenTimer,
    ModelNotFoundError,
    RunResult,
    StageTimer,
    StageTimes,
    TimedScorer,
    build_inputs,
    check_model_available,
    generate_timed,
    hub_unreachable,
    load_model,
    not_found_message,
    peak_memory,
    resolve_device,
    resolve_dtype,
)
from .processing import IMAGE_PAD, PilQwenVLProcessor, load_processor  # noqa: F401  (importable from here too)

COMPARE_REPEATS = 2  # --compare: runs of each model, alternating; their spread is the noise a saving must exceed


def _shown(answer: str) -> str:
    return answer if answer else "(empty: the new tokens decode to whitespace or special tokens only)"


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def time_table(runs: dict[str, RunResult]) -> list[str]:
    """Lines of a table of where the time of each run went (columns: the runs, in order)."""
    names = list(runs)
    width = max(9, *(len(n) for n in names))

    def row(label: str, values: list[str]) -> str:
        return f"  {label:<40}" + "".join(f"{v:>{width + 2}}" for v in values)

    def ms(value: float) -> str:
        return f"{value:.0f}"

    lines = [row("where the time went (ms)", names)]
    lines.append(row("vision tower", [ms(r.stages.vision_ms) for r in runs.values()]))
    lines.append(row("scoring (relevance, OCR in text mode)", [ms(r.stages.scorer_ms) for r in runs.values()]))
    lines.append(row("language-model prefill", [ms(r.stages.prefill_ms) for r in runs.values()]))
    other = [r.ttft_ms - r.stages.vision_ms - r.stages.scorer_ms - r.stages.prefill_ms for r in runs.values()]
    lines.append(row("other (positions, re-padding, 1st step)", [ms(max(o, 0.0)) for o in other]))
    lines.append(row("= time to first token", [ms(r.ttft_ms) for r in runs.values()]))
    decode = [f"{r.stages.decode_ms:.0f} ({r.stages.decode_steps})" for r in runs.values()]
    lines.append(row("decode (language-model calls)", decode))
    lines.append(row("total generate", [ms(r.total_ms) for r in runs.values()]))
    return lines


@dataclass(frozen=True)
class Noise:
    """Run-to-run spread of ``--compare``'s timings, in ms: each run's largest minus smallest over its repeats, the
    larger of the two runs. A difference no larger than this is reported as "within noise", never as a saving."""

    ttft_ms: float = 0.0
    vision_ms: float = 0.0
    prefill_ms: float = 0.0

    @staticmethod
    def of(fulls: list[RunResult], pruneds: list[RunResult]) -> Noise:
        def spread(get) -> float:
            return max(max(map(get, runs)) - min(map(get, runs)) for runs in (fulls, pruneds))

        return Noise(
            spread(lambda r: r.ttft_ms), spread(lambda r: r.stages.vision_ms), spread(lambda r: r.stages.prefill_ms)
        )


def median_run(runs: list[RunResult]) -> RunResult:
    """One run whose times are the medians of ``runs`` (answers, tokens and memory of the first; peak the largest)."""

    def med(get) -> float:
        return statistics.median(map(get, runs))

    first = runs[0]
    stages = StageTimes(
        med(lambda r: r.stages.vision_ms),
        med(lambda r: r.stages.scorer_ms),
        med(lambda r: r.stages.prefill_ms),
        med(lambda r: r.stages.decode_ms),
        first.stages.decode_steps,
    )
    return RunResult(
        first.answer,
        first.new_tokens,
        med(lambda r: r.ttft_ms),
        med(lambda r: r.total_ms),
        max(r.peak_bytes for r in runs),
        first.prompt_tokens,
        stages,
    )


def ttft_verdict(full: RunResult, pruned: RunResult, noise: Noise = Noise()) -> str:
    """``"1.34x"`` when the pruned run's time to first token differs by more than the run-to-run spread, else
    ``"within noise (run-to-run spread N ms)"``."""
    if noise.ttft_ms > 0 and abs(full.ttft_ms - pruned.ttft_ms) <= noise.ttft_ms:
        return f"within noise (run-to-run spread {noise.ttft_ms:.0f} ms)"
    return f"{full.ttft_ms / pruned.ttft_ms:.2f}x" if pruned.ttft_ms > 0 else "n/a"


def savings(full: RunResult, pruned: RunResult, foveated: bool, noise: Noise = Noise()) -> str:
    """What pruning saved, stage by stage: the language-model prefill, and the vision tower only when foveated.

    Without foveation the tower encodes every patch in both runs: the same work, reported as no saving whatever the
    clocks say. A difference within the run-to-run spread is reported as noise.
    """
    f, p = full.stages, pruned.stages
    prefill = _change(f.prefill_ms, p.prefill_ms, noise.prefill_ms)
    if foveated:
        tower = f"vision tower (foveated) {_change(f.vision_ms, p.vision_ms, noise.vision_ms)}"
    else:
        tower = f"vision tower {_change(f.vision_ms, p.vision_ms, same_work=True)}"
    return f"saved: language-model prefill {prefill}; {tower}; scoring added {p.scorer_ms:.0f} ms"


def explain_speedup(
    full: RunResult, pruned: RunResult, encoded: tuple[int, int] | None = None, noise: Noise = Noise()
) -> str | None:
    """Why the pruned run's time to first token is not shorter, when it is not; ``None`` when it is.

    Each stage pruning can shorten (the language-model prefill; the vision tower when foveated) is reported as it
    was measured: "N ms saved" or "N ms slower", never a negative saving, and "within noise" when the difference is
    inside the run-to-run spread ``noise``; the tower of a run that is not foveated did the same work in both runs and
    is never reported as a saving. A stage that was slower although it had less to do is explained (fixed per-call
    costs of a small model, timing noise on a busy CPU).

    ``encoded``: (tokens whose patches the vision tower encoded, tokens of the image) when foveated; then the tower
    did not see every patch, and the explanation says how many it did see.
    """
    if pruned.ttft_ms < full.ttft_ms:
        return None
    f, p = full.stages, pruned.stages
    prefill = _change(f.prefill_ms, p.prefill_ms, noise.prefill_ms)
    slower = ["the language-model prefill"] if p.prefill_ms > f.prefill_ms + noise.prefill_ms else []
    if encoded is None:
        what = "the language-model prefill"
        tower = f"the vision tower still sees every patch ({_change(f.vision_ms, p.vision_ms, same_work=True)})"
    else:
        what = "the language-model prefill and, foveated, the vision tower"
        tower = (
            f"the vision tower encoded the patches of {encoded[0]} of {encoded[1]} tokens "
            f"({_change(f.vision_ms, p.vision_ms, noise.vision_ms)})"
        )
        slower += ["the vision tower"] if p.vision_ms > f.vision_ms + noise.vision_ms else []
    text = (
        f"why no speed-up: pruning can shorten only {what}. Here the prefill took {prefill}; {tower}; scoring costs "
        f"{p.scorer_ms:.0f} ms; net {pruned.ttft_ms - full.ttft_ms:.0f} ms slower."
    )
    if slower:
        text += (
            f" {' and '.join(slower).capitalize()} took longer although it had fewer tokens to process: on a model "
            "this small each call is dominated by fixed costs (Python and kernel launches per layer"
            + (", the kept patches' positions and attention windows" if encoded is not None else "")
            + "), and on a busy CPU such timings vary by more than the work pruning removes."
        )
    return text + (
        " On a model whose language model is small (a tiny or random test model, or few layers) the prefill saving "
        "cannot pay for the scoring; with a full-size language model the prefill dominates and pruning pays."
    )


def _change(before_ms: float, after_ms: float, noise_ms: float = 0.0, same_work: bool = False) -> str:
    """A stage's time unpruned -> pruned: ``"619 -> 66 ms, 553 ms saved"``, ``"98 -> 421 ms, 323 ms slower"``,
    ``"98 -> 90 ms, within noise (run-to-run spread 12 ms)"`` or, for a stage that did the same work in both runs,
    ``"841 -> 279 ms: the same work (every patch), no saving"``."""
    head = f"{before_ms:.0f} -> {after_ms:.0f} ms"
    if same_work:
        return f"{head}: the same work (every patch), no saving"
    if noise_ms > 0 and abs(before_ms - after_ms) <= noise_ms:
        return f"{head}, within noise (run-to-run spread {noise_ms:.0f} ms)"
    if after_ms <= before_ms:
        return f"{head}, {before_ms - after_ms:.0f} ms saved"
    return f"{head}, {after_ms - before_ms:.0f} ms slower"


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp", ".gif", ".webp", ".heic", ".avif", ".pdf")


def check_not_an_image(model: str) -> None:
    """A clear error when ``--model`` names a file (e.g. an image) rather than a checkpoint folder or a hub id.

    Raises:
        ValueError: ``model`` is an existing file, or ends in an image suffix.
    """
    path = os.path.expanduser(model)
    if os.path.isfile(path) or model.lower().endswith(IMAGE_SUFFIXES):
        kind = "an image" if model.lower().endswith(IMAGE_SUFFIXES) else "a file"
        raise ValueError(
            f"--model {model!r} is {kind}, not a model: give a checkpoint folder (config.json and weights) or a "
            "hub id, and the image first: arr-coc ask IMAGE --query TEXT --model MODEL"
        )


def _relevance(folder):
    """The ``Realizer`` of ``--relevance FOLDER`` (a checkpoint of ``arr-coc train``), None for the default."""
    if folder is None:
        return None
    from .realizing import Realizer

    return Realizer.from_pretrained(folder)


def ask_main(args: argparse.Namespace) -> int:
    """Run ``arr-coc ask`` (see the module docstring). Returns the exit code: 0 done, 2 model or input error."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as err:
        print(
            f"arr-coc: error: `ask` needs transformers ({err}); pip install -e '.[hf]' in the arr-coc-vis clone",
            file=sys.stderr,
        )
        return 2
    from .integrations import compress
    from .integrations.base import resolve_scorer
    from .io import load_image
    from .processing import describe
    from .query import normalize_text
    from .realizing import query_notes, resolve_mode

    device = resolve_device(args.device)
    dtype = resolve_dtype(args.dtype)
    mode = resolve_mode(getattr(args, "mode", "auto"))  # "text" or "texture"; a clear error without the [ocr] extra
    if args.heatmap:
        from .heatmap import check_image_path

        check_image_path(args.heatmap)  # before the model loads: a path that names no picture format is refused now
    notes: list[str] = []
    image = load_image(args.image, notes=notes)  # ValueError for unreadable images (reported by the CLI)
    check_not_an_image(args.model)
    if not args.query.strip():
        print("note: the query is empty, so the allocation is query-blind (information and salience decide)")
    for note in notes + query_notes(normalize_text(args.query)):
        print(f"note: {note}")
    print(f"loading {args.model} on {device} ...", flush=True)
    try:
        processor, model = load_model(args.model, dtype, device)
    except ModelNotFoundError as err:
        print(f"arr-coc: error: {err}", file=sys.stderr)
        return 2
    print(f"processor: {describe(processor)}")
    inputs = build_inputs(processor, image, args.query, args.max_pixels).to(device)
    scorer = TimedScorer(resolve_scorer("auto"), device)
    cm = compress(
        model,
        budget=args.budget,
        processor=processor,
        scorer=scorer,
        text_prior=mode == "text",
        foveate=bool(getattr(args, "foveate", False)),
        detail=getattr(args, "detail", None),
        realizer=_relevance(getattr(args, "relevance", None)),
    )
    # The first call pays one-time set-up (the scorer's lazy imports, the OCR and text models in text mode,
    # CUDA/cuBLAS initialisation): pay it on a tiny image so that neither timed run includes it.
    from PIL import Image

    setup = time.perf_counter()
    tiny = build_inputs(processor, Image.new("RGB", (64, 64), "white"), args.query, args.max_pixels).to(device)
    generate_timed(cm, tiny, processor, 1, device)
    setup_s = time.perf_counter() - setup

    pruned = generate_timed(cm, inputs, processor, args.max_new_tokens, device, scorer)
    alloc = cm.last_allocation[0][0]
    n_tokens = math.prod(alloc.grid)
    _, mem_kind = peak_memory(device)
    print(f"answer: {_shown(pruned.answer)}")
    how = "text (OCR prior)" if mode == "text" else "texture"
    print(
        f"visual tokens: {n_tokens} -> {alloc.budget} ({100 * alloc.budget / n_tokens:.1f}%), "
        f"grid {alloc.grid[1]}x{alloc.grid[2]} (rows x cols), mode {how}; "
        f"prompt {inputs['input_ids'].shape[1]} -> {pruned.prompt_tokens} tokens"
    )
    print(
        f"prefill (time to first token): {pruned.ttft_ms:.0f} ms; generate {pruned.total_ms:.0f} ms for "
        f"{pruned.new_tokens} tokens (+{setup_s:.1f} s one-time set-up before timing"
        + (", OCR and text models included)" if mode == "text" else ")")
    )
    st = pruned.stages
    if not args.compare:
        print(
            f"time: vision tower {st.vision_ms:.0f} ms, scoring {st.scorer_ms:.0f} ms, language-model prefill "
            f"{st.prefill_ms:.0f} ms, decode {st.decode_ms:.0f} ms ({st.decode_steps} steps)"
        )
    print(f"peak memory: {_mib(pruned.peak_bytes)} ({mem_kind})")
    if cm.foveate:
        print(f"foveated: the vision tower encoded {alloc.budget} of {n_tokens} tokens' patches")
    if alloc.detail is not None:
        from .integrations.detail import describe_plan

        print(f"level of detail: {describe_plan(alloc.detail)}")
    if args.compare:
        # alternating runs, COMPARE_REPEATS of each (pruned, unpruned, pruned, ...): their spread tells a saving
        # from run-to-run noise; the medians are reported
        pruneds = [pruned]
        fulls = [generate_timed(model, inputs, processor, args.max_new_tokens, device)]
        for _ in range(COMPARE_REPEATS - 1):
            pruneds.append(generate_timed(cm, inputs, processor, args.max_new_tokens, device, scorer))
            fulls.append(generate_timed(model, inputs, processor, args.max_new_tokens, device))
        noise = Noise.of(fulls, pruneds)
        full, pruned = median_run(fulls), median_run(pruneds)
        print(f"answer (unpruned): {_shown(full.answer)}")
        print(f"answer (pruned):   {_shown(pruned.answer)}")
        print(
            f"prefill (time to first token, median of {COMPARE_REPEATS} alternating runs each): unpruned "
            f"{full.ttft_ms:.0f} ms ({n_tokens} visual tokens), pruned {pruned.ttft_ms:.0f} ms ({alloc.budget} "
            f"visual tokens), {ttft_verdict(full, pruned, noise)}"
        )
        for line in time_table({"unpruned": full, "pruned": pruned}):
            print(line)
        print(savings(full, pruned, cm.foveate, noise))
        why = explain_speedup(full, pruned, (alloc.budget, n_tokens) if cm.foveate else None, noise)
        if why:
            print(why)
        suffix = " (process peak so far)" if not str(device).startswith("cuda") else ""
        print(f"peak memory: unpruned {_mib(full.peak_bytes)}, pruned {_mib(pruned.peak_bytes)}{suffix}")
    if args.heatmap:
        from .heatmap import save_heatmap

        t, h, w = alloc.grid
        scores = alloc.scores.reshape(t, h, w)[0].float().numpy()  # (h, w): first (only) frame of the image
        keep = alloc.keep[alloc.keep < h * w]
        save_heatmap(args.heatmap, image, scores, keep, args.query)
        print(f"wrote {args.heatmap}")
    return 0
