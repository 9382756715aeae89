"""``arr-coc demo``: see what the model will see, in a browser (Gradio, works offline).

    arr-coc demo [--model ID_OR_PATH] [--host 127.0.0.1] [--port 7860] [--device cuda|cpu] [--dtype auto]

Upload an image (or pick a shipped example), ask a question, choose the model family's token grid, a budget
(``0.11``, ``256`` or ``adaptive``, as on the command line) and a mode (text / texture / auto). The page shows:

* the relevance heatmap with the kept tokens outlined (``arr_coc.allocate`` + ``arr_coc.heatmap.render_heatmap``);
* beside it the same budget spent by a query-blind baseline, a uniform stride over the tokens in raster order
  (``arr_coc.evaluation.allocators.stride_keep``: also ``eval``'s ``uniform`` and the benchmark's ``stride``), on
  the same relevance map, so what each keeps can be compared; for both, the share of the relevance mass they keep;
* the level-of-detail picture (``--detail mixed`` by default, or ``thumbnail``): what the language model is shown
  when the same budget is shared between a coarse view of the whole image and the relevant tokens at full
  resolution (``compress(..., detail=...)``, :mod:`arr_coc.integrations.detail`): fine cells as they are, coarse
  cells (or the thumbnail) downsampled and upsampled back, the rest white;
* tokens before -> after, the time of every stage and which mode ran;
* with ``--model``: the model's answer unpruned and pruned (and foveated, when ``arr_coc.compress`` accepts
  ``foveate=True``), with visual and prompt tokens, time to first token and where it went (vision tower, scoring,
  language-model prefill), side by side (``arr_coc.loading``).

The app exposes a named API endpoint ``/allocate``::

    from gradio_client import Client, handle_file
    heatmap_path, allocation = Client("http://127.0.0.1:7860/").predict(
        handle_file("examples/invoice.jpg"), "How much must be paid?", "0.11", "qwen2.5-vl", "auto",
        api_name="/allocate")

``allocation`` has exactly the fields of ``arr-coc allocate --json`` (``Allocation.to_json``; the handler's result
is checked equal to the command's in tests/test_demo.py). Offline: the theme uses system fonts only, analytics and
the version check are off, nothing is fetched from another host (the browser test records every request the page
makes and every connection the server makes).

Handlers are plain functions on a ``DemoApp`` (testable without a server); ``build_app`` wires them into Gradio
Blocks and ``launch`` starts the server.

Example:
    arr-coc demo --port 7860            # then open http://127.0.0.1:7860
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .allocating import Allocation, allocate
from .attending import parse_budget
from .evaluation.allocators import stride_keep  # the one stride baseline (also eval's uniform allocator)
from .families import family_names, get_family
from .grid import GridSpec, normalize_family
from .heatmap import render_heatmap
from .io import MAX_PIXELS_IN, load_image_with_size
from .realizing import MODES, resolve_mode

try:
    import gradio as gr
except ImportError as err:  # the CLI turns this into one clear line
    raise ImportError(
        f"`arr-coc demo` needs the [demo] extra (gradio): pip install -e '.[demo]' in the arr-coc-vis clone ({err})"
    ) from err

# The example images ship inside the package (arr_coc/examples/, package data; the repository's examples/*.jpg are
# links to them), so an installed wheel shows them too. Shipped example images: (file, question, budget, mode); a
# file that is missing is skipped. astronaut.jpg is scikit-image's ``data.astronaut()`` (NASA, public domain); the
# others are drawn by examples/make_examples.py with arr_coc.evaluation.docgen.
EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"
EXAMPLES: list[tuple[str, str, str, str]] = [
    ("invoice.jpg", "How much must be paid?", "0.11", "auto"),
    ("chart.jpg", "What value is shown for Thu?", "0.11", "auto"),
    ("receipt.jpg", "How much did the pasta cost?", "0.11", "auto"),
    ("astronaut.jpg", "What is in the top right corner?", "0.22", "texture"),
]
MAX_IMAGE_PIXELS = MAX_PIXELS_IN  # the library's one bound (arr_coc.io): larger images are refused with a message
MAX_FILE_SIZE = "50mb"  # uploads above this are refused by the page itself
MAX_QUESTION_CHARS = 1000
DEFAULT_BUDGET = "0.11"
# System fonts only: Gradio's default theme would fetch Google Fonts, which an offline page cannot load.
SANS = ["ui-sans-serif", "system-ui", "DejaVu Sans", "sans-serif"]
MONO = ["ui-monospace", "DejaVu Sans Mono", "monospace"]

Progress = Callable[..., Any]


def relevance_share(scores: np.ndarray, keep: np.ndarray) -> float:
    """Share of the relevance mass (scores minus their minimum) that the kept indices hold, in [0, 1].

    Args:
        scores: (rows, cols) relevance.
        keep: (K,) kept indices ``r * cols + c``.
    """
    s = np.asarray(scores, dtype=np.float64).ravel()  # (N,)
    mass = s - s.min()  # (N,) >= 0
    total = mass.sum()
    if total <= 0:  # a flat map: every token holds the same share
        return len(np.unique(keep)) / s.size
    return float(mass[np.asarray(keep, dtype=np.int64)].sum() / total)


def example_rows(folder: Path = EXAMPLES_DIR) -> list[list[str]]:
    """``[image path, question, budget, family, mode]`` for each shipped example image that exists."""
    return [
        [str(folder / name), question, budget, "qwen2.5-vl", mode]
        for name, question, budget, mode in EXAMPLES
        if (folder / name).is_file()
    ]


def foveate_supported() -> bool:
    """Whether ``arr_coc.compress`` takes ``foveate=`` (detected from its signature, never assumed)."""
    try:
        from .integrations import compress
    except ImportError:
        return False
    return "foveate" in inspect.signature(compress).parameters


@dataclass
class AnswerRow:
    """One model run shown in the answers table (times in ms)."""

    variant: str  # "unpruned", "pruned" or "foveated"
    answer: str
    visual_tokens: int  # visual tokens the language model received
    prompt_tokens: int  # whole prompt length the language model received
    ttft_ms: float  # time to first token
    vision_ms: float  # vision tower
    scorer_ms: float  # relevance scoring inside compress (0 unpruned; OCR included in text mode)
    prefill_ms: float  # the language model's prefill
    new_tokens: int


class ModelRunner:
    """A Qwen-VL checkpoint loaded on first use (thread-safe), asked the same question unpruned and pruned.

    Args:
        model_id: local folder or cached hub id (``arr_coc.loading.load_model``).
        device: torch device; ``None`` = cuda if available, else cpu.
        dtype: ``"auto"`` or a floating torch dtype name.
        max_new_tokens: answer length cap.
        detail: also answer with ``compress(..., detail=...)``.
        realizer: the relevance model every pruned answer decides with (the heatmap's; None: the default one).
    """

    def __init__(
        self,
        model_id: str,
        device: str | None = None,
        dtype: str = "auto",
        max_new_tokens: int = 64,
        detail: str | None = None,
        realizer: Any = None,
    ):
        self.model_id = model_id
        self.realizer = realizer
        self.detail = detail  # also answer with compress(..., detail=...)
        self.device = device
        self.dtype = dtype
        self.max_new_tokens = max_new_tokens
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None  # (processor, model)

    def load(self, progress: Progress | None = None) -> tuple[Any, Any]:
        """``(processor, model)``, loading them the first time."""
        from .loading import load_model, resolve_device, resolve_dtype

        if self._loaded is None:
            self.device = resolve_device(self.device)
            if progress is not None:
                progress(0.3, desc=f"loading {self.model_id} on {self.device} (first question only)")
            self._loaded = load_model(self.model_id, resolve_dtype(self.dtype), self.device)
        return self._loaded

    def max_pixels(self) -> int | None:
        """The loaded processor's cap on the resized image's area (its ``size["longest_edge"]``), None if unknown."""
        if self._loaded is None:
            return None
        size = getattr(self._loaded[0].image_processor, "size", None)
        value = size.get("longest_edge") if isinstance(size, dict) else getattr(size, "longest_edge", None)
        return int(value) if value else None

    def compare(
        self, image: Image.Image, question: str, budget: Any, text_prior: bool, progress: Progress | None = None
    ) -> list[AnswerRow]:
        """Answer ``question`` about ``image`` unpruned, pruned to ``budget`` and (if supported) foveated, each pruned
        model deciding with :attr:`realizer` (the heatmap's).

        Each model is first run once on a tiny image, so that one-time set-up (lazy imports, the OCR models,
        CUDA initialisation) is in no timed run, as ``arr-coc ask`` does. One comparison at a time (a lock).
        """
        from .integrations import compress
        from .integrations.base import resolve_scorer
        from .integrations.linear import LinearAdapter
        from .integrations.steps import find_adapter
        from .loading import TimedScorer, build_inputs, generate_timed, visual_tokens

        with self._lock:
            processor, model = self.load(progress)
            inputs = build_inputs(processor, image, question).to(self.device)
            tiny = build_inputs(processor, Image.new("RGB", (64, 64), "white"), question).to(self.device)
            n_visual = visual_tokens(model, inputs)  # the unpruned model's visual tokens
            variants: list[tuple[str, Any, Any]] = [("unpruned", model, None)]
            runs: list[tuple[str, dict[str, Any]]] = [("pruned", {})]
            adapter = find_adapter(model)  # a family whose tower cannot run on kept cells gets no foveated row
            runs += [("foveated", {"foveate": True})] if foveate_supported() and adapter.supports_foveation() else []
            runs += [(f"detail {self.detail}", {"detail": self.detail})] if self.detail else []
            # a 1-D or tiled family scores frames, not Qwen's patch rows: the default scorer runs untimed in compress
            timed = not isinstance(adapter, LinearAdapter)
            for name, extra in runs:
                scorer = TimedScorer(resolve_scorer("auto"), self.device) if timed else None
                cm = compress(model, budget=budget, processor=processor, scorer=scorer, text_prior=text_prior,
                              realizer=self.realizer, **extra)  # fmt: skip
                variants.append((name, cm, scorer))
            rows = []
            for i, (name, m, scorer) in enumerate(variants):
                if progress is not None:
                    progress(0.4 + 0.6 * i / len(variants), desc=f"generating: {name}")
                generate_timed(m, tiny, processor, 1, self.device)  # one-time set-up, not timed
                run = generate_timed(m, inputs, processor, self.max_new_tokens, self.device, scorer)
                kept = n_visual if name == "unpruned" else sum(a.budget for a in m.last_allocation[0])
                st = run.stages
                rows.append(
                    AnswerRow(
                        name,
                        run.answer,
                        kept,
                        run.prompt_tokens,
                        run.ttft_ms,
                        st.vision_ms,
                        st.scorer_ms,
                        st.prefill_ms,
                        run.new_tokens,
                    )  # fmt: skip
                )
            return rows


class DemoApp:
    """The demo's handlers, plain functions over the library (no server needed to call them).

    Args:
        runner: optional ``ModelRunner`` for the answers panel.
        max_image_pixels: larger images are refused with a message.
        realizer: the relevance model of the heatmap (``Realizer.from_pretrained``; None: the default one).
    """

    def __init__(
        self,
        runner: ModelRunner | None = None,
        max_image_pixels: int = MAX_IMAGE_PIXELS,
        detail: str = "mixed",
        realizer: Any = None,
    ):
        from .integrations.detail import parse_detail

        self.runner = runner
        self.max_image_pixels = max_image_pixels
        self.detail = parse_detail(detail) or "mixed"
        self.realizer = realizer

    # ----- input checks: each failure is a gr.Error, which the page shows as a message ---------------------------
    def check_inputs(
        self, image: Any, question: str, budget: str, family: str, mode: str, name: str | None = None
    ) -> tuple[Image.Image, Any]:
        """The loaded image and the parsed budget, or ``gr.Error`` naming what is wrong and what is allowed.

        ``name`` is the file's name as the user knows it; it replaces the server's upload path in messages.
        """
        if image is None or (isinstance(image, str) and not image):  # nothing uploaded
            raise _error("Upload an image first (PNG, JPEG, TIFF, BMP, GIF or WebP), or pick an example below.")
        if not (question or "").strip():
            raise _error("Type a question: the allocation depends on what is asked.")
        if len(question) > MAX_QUESTION_CHARS:
            raise _error(f"The question has {len(question)} characters; at most {MAX_QUESTION_CHARS} are allowed.")
        try:
            normalize_family(family)  # the API's spellings too (Qwen2.5-VL, qwen3-vl-moe)
        except ValueError:
            raise _error(f"Unknown model family {family!r}; choose one of {', '.join(family_names())}.") from None
        if mode not in MODES:
            raise _error(f"Unknown mode {mode!r}; choose one of {', '.join(MODES)}.")
        try:
            parsed = parse_budget(str(budget))
            img, _ = load_image_with_size(image, max_pixels_in=self.max_image_pixels)
            resolve_mode(mode)
        except (ValueError, ImportError) as err:
            raise _error(_hide_path(_user_message(err), image, name)) from None
        return img, parsed

    # ----- the /allocate endpoint -----------------------------------------------------------------------------------
    def allocate(
        self,
        image: Any,
        question: str,
        budget: str,
        family: str,
        mode: str,
        progress: Progress = gr.Progress(),  # noqa: B008  (Gradio injects the tracker through this default)
    ) -> tuple[Image.Image, dict[str, Any], dict[str, Any]]:
        """Allocate tokens for ``question`` on ``image``: the heatmap, the JSON contract and the state for the rest.

        Args:
            image: a file path (the page's upload) or anything ``arr_coc.io.load_image`` accepts.
            question: the question (required).
            budget: ``"0.11"``, ``"256"``, ``"11%"`` or ``"adaptive"``.
            family: ``"qwen2-vl"``, ``"qwen2.5-vl"`` or ``"qwen3-vl"``.
            mode: ``"text"``, ``"texture"`` or ``"auto"``.

        Returns:
            (heatmap image, allocation JSON as ``arr-coc allocate --json`` writes it, state for ``details``).
        """
        source, name = upload_source(image)
        img, parsed = self.check_inputs(source, question, budget, family, mode, name)
        if resolve_mode(mode) == "text":  # the first text-mode request also loads the OCR and text models
            progress(0.1, desc="reading the text (the first request loads the OCR and text models)")
        else:
            progress(0.1, desc="allocating")
        try:  # a file is opened by allocate itself, exactly as `arr-coc allocate` does (same decode, same JSON)
            alloc = allocate(
                source if isinstance(source, (str, Path)) else img,
                question,
                parsed,
                family,
                mode=mode,
                realizer=self.realizer,
            )
        except (ValueError, ImportError) as err:
            raise _error(_hide_path(_user_message(err), source, name)) from None
        alloc.notes[:] = [_hide_path(note, source, name) for note in alloc.notes]  # the upload's name, not its path
        progress(0.9, desc="drawing the heatmap")
        heat = render_heatmap(img, *alloc.page_view(), f"{alloc.query}  [ARR-COC, mode {alloc.mode}]")
        record = alloc.to_json(id=Path(name).stem if name else None)
        return heat, record, {"allocation": alloc, "image": img, "question": question, "budget": parsed}

    # ----- the rest of the page: baseline, summary, answers ----------------------------------------------------------
    def details(self, state: dict[str, Any] | None) -> tuple[Image.Image | None, str]:
        """The uniform-stride baseline at the same budget and the summary (tokens, stages, mode, relevance kept)."""
        if not state:
            return None, ""
        alloc: Allocation = state["allocation"]
        base_keep = stride_keep(alloc.n_tokens, alloc.budget)  # (K,)
        baseline = render_heatmap(
            state["image"], *alloc.page_view(base_keep), f"{alloc.query}  [uniform stride, query-blind]"
        )
        return baseline, summary_markdown(alloc, base_keep)

    def level_of_detail(self, state: dict[str, Any] | None) -> tuple[Image.Image | None, str]:
        """What the model is shown with ``compress(..., detail=self.detail)`` at the same budget: the picture and one
        line on how the budget was split."""
        if not state:
            return None, ""
        picture, plan = detail_picture(state["image"], state["allocation"], self.detail)
        from .integrations.detail import describe_plan

        return picture, f"**level of detail ({self.detail})**: {describe_plan(plan)}"

    def answers(self, state: dict[str, Any] | None, progress: Progress = gr.Progress()) -> str:  # noqa: B008
        """The model's answers unpruned / pruned (/ foveated) as a markdown table ("" without ``--model``)."""
        if not state or self.runner is None:
            return ""
        alloc: Allocation = state["allocation"]
        try:
            text_prior = alloc.mode == "text"  # the model's own allocation uses the same path as the heatmap
            rows = self.runner.compare(state["image"], state["question"], state["budget"], text_prior, progress)
        except Exception as err:  # noqa: BLE001  (a model failure is shown in the page, not as a stack trace)
            from .loading import ModelNotFoundError

            if isinstance(err, (ValueError, ImportError, OSError, ModelNotFoundError, RuntimeError)):
                raise _error(f"The model could not answer: {_user_message(err)}") from None
            raise
        return answers_markdown(rows) + grid_note(alloc, rows[0].visual_tokens, self.runner.max_pixels())


def detail_picture(image: Image.Image, alloc: Allocation, mode: str) -> tuple[Image.Image, Any]:
    """The composite the model is shown when ``alloc``'s budget is spent with level of detail ``mode``.

    The split is the one ``compress`` makes (``arr_coc.deciding.choose`` with ``detail``) on the allocation's own
    scores, word units and budget, with the config of the realizer that made the allocation, drawn at the model's
    resized pixels (``alloc.resized``).

    Returns:
        (picture, the ``DetailPlan``).
    """
    import torch

    from .deciding import choose
    from .integrations.detail import composite

    rows, cols = alloc.grid
    flat = torch.from_numpy(np.ascontiguousarray(alloc.scores, dtype=np.float32).ravel())  # (N,)
    family = get_family(alloc.family)  # the thumbnail's grid is the family's, as compress makes it
    patch, merge = family.patch_size, family.merge_size
    plan = choose(
        flat, alloc.budget, alloc.config, units=alloc.units, detail=mode, grid=(rows, cols), patch=patch, merge=merge
    ).plan
    assert plan is not None
    view = np.asarray(image.convert("RGB").resize(tuple(alloc.resized), Image.BICUBIC))  # (H, W, 3)
    shown = composite(view, (rows, cols), plan if plan.mode != "drop" else None, keep=plan.fine.numpy())
    return Image.fromarray(shown), plan


def _error(message: str) -> Exception:
    """A message for the page (kept until closed); the server's console gets no traceback for it."""
    return gr.Error(message, duration=None, print_exception=False)


def _user_message(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text[:1].upper() + text[1:]


def _hide_path(text: str, source: Any, name: str | None) -> str:
    """``text`` with the server's path of an upload (``source``) replaced by the file's name as the user knows it."""
    if isinstance(source, (str, Path)) and str(source):
        return text.replace(str(source), name or "the uploaded image")
    return text


def upload_source(image: Any) -> tuple[Any, str | None]:
    """(what to open, the user's file name) for a Gradio file record (dict or ``FileData``), a path or an image."""
    if isinstance(image, dict) or hasattr(image, "path"):
        get = image.get if isinstance(image, dict) else lambda key: getattr(image, key, None)
        path = get("path")
        return path, get("orig_name") or (Path(path).name if path else None)
    if isinstance(image, (str, Path)):
        return image, Path(image).name
    return image, None


def summary_markdown(alloc: Allocation, baseline_keep: np.ndarray) -> str:
    """Tokens before -> after, the mode that ran, time per stage and the relevance each allocator keeps."""
    t = alloc.timings_ms
    stages = [("load", "image load"), ("texture", "texture"), ("ocr", "OCR"), ("scoring", "scoring + top-K")]
    lines = [
        f"**Visual tokens: {alloc.n_tokens} → {alloc.budget}** ({100 * alloc.budget / alloc.n_tokens:.1f}% kept), "
        f"grid {alloc.grid[0]}×{alloc.grid[1]} ({alloc.family}, image resized to {alloc.resized[0]}×"
        f"{alloc.resized[1]}), **mode: {alloc.mode}**",
        "",
        "| stage | ms |",
        "|---|---:|",
        *[f"| {label} | {t.get(key, 0.0):.1f} |" for key, label in stages if key != "ocr" or alloc.mode == "text"],
        f"| **total** | **{t.get('total', 0.0):.1f}** |",
    ]
    if t.get("model_load", 0.0) >= 1.0:
        lines.append(f"| loading OCR + text models (once a process, not in total) | {t['model_load']:.0f} |")
    ours = relevance_share(alloc.scores, alloc.keep.numpy())
    base = relevance_share(alloc.scores, baseline_keep)
    weights = ", ".join(f"{k} {v:.2f}" for k, v in alloc.weights.items())
    lines += [
        "",
        f"Share of the relevance mass kept (scores minus their minimum): **ARR-COC {100 * ours:.1f}%**, "
        f"uniform stride {100 * base:.1f}% (same {alloc.budget} tokens). Balancer weights: {weights}.",
    ]
    return "\n".join(lines)


def grid_note(alloc: Allocation, model_tokens: int, model_max_pixels: int | None) -> str:
    """Why the model's token counts differ from the heatmap's, when they do ("" when they agree).

    The heatmap's allocation resizes the image as ``arr-coc allocate`` does by default (at most 1280 tokens of the
    chosen family); the model's processor resizes with its own ``preprocessor_config.json`` (``size.longest_edge``),
    e.g. 256 tokens for the tiny test checkpoints of ``arr_coc.testing``, so its unpruned and pruned counts are of
    another grid.
    """
    if model_tokens == alloc.n_tokens:
        return ""
    cell = GridSpec.for_family(alloc.family).factor
    ours = GridSpec.for_family(alloc.family).max_pixels
    theirs = (
        f"at most {model_max_pixels:,} pixels ({model_max_pixels // cell**2:,} tokens of {cell}x{cell} px)"
        if model_max_pixels
        else "its own size limits"
    )
    return (
        f"\n\n**Why the model has {model_tokens} visual tokens, not {alloc.n_tokens}:** the heatmap resizes the image "
        f"as `arr-coc allocate` does by default ({alloc.family}: at most {ours:,} pixels, {ours // cell**2:,} tokens), "
        f"while the model's processor resizes it as its checkpoint's `preprocessor_config.json` says ({theirs}). "
        "So the model's image is another grid, and the pruned runs apply the same budget to that grid; "
        "`arr-coc allocate --max-pixels N` gives the heatmap of the model's grid."
    )


def answers_markdown(rows: list[AnswerRow]) -> str:
    """A side-by-side table of the model runs: answer, tokens, time to first token and where it went."""
    head = [
        "| | answer | visual tokens | prompt tokens | time to first token | vision tower | scoring | LM prefill "
        "| new tokens |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    body = [
        f"| {r.variant} | {(r.answer or '(no text)').replace('|', '/').replace(chr(10), ' ')} | {r.visual_tokens} "
        f"| {r.prompt_tokens} "
        f"| {r.ttft_ms:.0f} ms | {r.vision_ms:.0f} ms | {r.scorer_ms:.0f} ms | {r.prefill_ms:.0f} ms "
        f"| {r.new_tokens} |"
        for r in rows
    ]
    return "\n".join(head + body)


def theme() -> Any:
    """The page's theme: Gradio's default look with system fonts only (nothing is fetched from font hosts)."""
    return gr.themes.Default(font=SANS, font_mono=MONO)


def build_app(app: DemoApp | None = None, examples: list[list[str]] | None = None) -> gr.Blocks:
    """The Gradio Blocks of the demo (not launched).

    Args:
        app: the handlers (default: no model).
        examples: rows for ``gr.Examples`` (default: ``example_rows()``).
    """
    app = app or DemoApp()
    examples = example_rows() if examples is None else examples
    with gr.Blocks(title="ARR-COC-VIS demo", analytics_enabled=False) as blocks:
        gr.Markdown(
            "## ARR-COC-VIS: which visual tokens will the model see?\n"
            "Upload an image, ask a question: the heatmap shows the relevance of every visual token of a Qwen-VL "
            "model and outlines the ones kept; beside it, the same number of tokens picked by a query-blind uniform "
            "stride."
        )
        with gr.Row():
            with gr.Column(scale=1):
                image = gr.Image(label="image", type="filepath", sources=["upload", "clipboard"], height=320)
                question = gr.Textbox(label="question", placeholder="e.g. How much must be paid?", lines=1)
                budget = gr.Textbox(
                    label="budget: fraction (0.11), token count (256) or adaptive", value=DEFAULT_BUDGET
                )
                family = gr.Dropdown(
                    choices=list(family_names()), value="qwen2.5-vl", label="model family (token grid)"
                )
                mode = gr.Radio(choices=list(MODES), value="auto", label="mode (text: OCR-aware; texture: no OCR)")
                run = gr.Button("Allocate", variant="primary", elem_id="allocate-button")
            with gr.Column(scale=2):
                with gr.Row():
                    heat = gr.Image(label="ARR-COC: kept tokens", type="pil", format="png", elem_id="heatmap")
                    base = gr.Image(label="uniform stride, same budget", type="pil", format="png", elem_id="baseline")
                    lod = gr.Image(
                        label=f"level of detail ({app.detail}): what the model sees, same budget",
                        type="pil", format="png", elem_id="level-of-detail",
                    )  # fmt: skip
                lod_note = gr.Markdown(elem_id="level-of-detail-note")
                summary = gr.Markdown(elem_id="summary")
                answers = gr.Markdown(elem_id="answers", visible=app.runner is not None)
                with gr.Accordion("allocation JSON (as arr-coc allocate --json)", open=False):
                    record = gr.JSON(label="allocation")
        if examples:
            gr.Examples(examples=examples, inputs=[image, question, budget, family, mode], label="examples")
        state = gr.State()
        inputs = [image, question, budget, family, mode]
        # preprocess=False: the handler gets the upload's file record and opens it with arr_coc.io, whose refusals
        # (not an image, too large, corrupt) become the page's message instead of an error inside Gradio.
        event = run.click(app.allocate, inputs, [heat, record, state], api_name="allocate", preprocess=False)
        event = event.success(app.details, [state], [base, summary], api_visibility="private")
        event.success(app.level_of_detail, [state], [lod, lod_note], api_visibility="private")
        if app.runner is not None:
            event.success(app.answers, [state], [answers], api_visibility="private")
        from .demo_pages import document_section  # documents: a strip of pages, one budget (issue 39)

        document_section(app.realizer)
    return blocks


def launch(
    blocks: gr.Blocks, host: str = "127.0.0.1", port: int | None = None, block: bool = True, quiet: bool = False
) -> tuple[Any, str]:
    """Serve ``blocks`` offline: system-font theme, no analytics, no share link, no server-side rendering.

    Args:
        blocks: from ``build_app``.
        host: interface to listen on.
        port: port (``None``: Gradio's first free one from 7860).
        block: keep serving until interrupted (the CLI); ``False`` returns once the server is up (tests).
        quiet: less console output.

    Returns:
        (the FastAPI app, the local URL).
    """
    blocks.queue(default_concurrency_limit=1)  # one allocation at a time: the CPU is the bottleneck
    fastapi_app, url, _ = blocks.launch(
        server_name=host,
        server_port=port,
        share=False,
        prevent_thread_lock=not block,
        quiet=quiet,
        theme=theme(),
        footer_links=["api"],
        max_file_size=MAX_FILE_SIZE,
        ssr_mode=False,
        pwa=False,
        mcp_server=False,
        enable_monitoring=False,
        allowed_paths=[str(EXAMPLES_DIR)] if EXAMPLES_DIR.is_dir() else None,
    )
    return fastapi_app, url


def main(
    model: str | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    device: str | None = None,
    dtype: str = "auto",
    max_new_tokens: int = 64,
    detail: str = "mixed",
    relevance: str | Path | None = None,
) -> int:
    """``arr-coc demo``: build the app and serve it until interrupted. Returns the exit code.

    ``relevance``: a checkpoint folder of ``arr-coc train`` for the heatmap's allocation and the model's pruning
    (None: the default, ``routed-cells``)."""
    realizer = None
    if relevance is not None:
        from .realizing import Realizer

        realizer = Realizer.from_pretrained(relevance)
    # the heatmap and the model's own pruning decide with the same realizer
    runner = ModelRunner(model, device, dtype, max_new_tokens, detail, realizer) if model else None
    if model:
        print(f"the model ({model}) is loaded when the first question is asked")
    launch(build_app(DemoApp(runner, detail=detail, realizer=realizer)), host, port, block=True)
    return 0


__all__ = [
    "DemoApp",
    "ModelRunner",
    "build_app",
    "detail_picture",
    "launch",
    "main",
    "relevance_share",
    "stride_keep",
]
