"""``arr-coc ask``: answer a question about one image with a Qwen-VL model whose visual tokens are pruned.

    arr-coc ask IMAGE --query TEXT --model ID_OR_PATH [--budget 0.25] [--max-new-tokens 64] [--max-pixels N]
                [--device cuda|cpu] [--dtype auto|bfloat16|float32] [--heatmap OUT.png] [--compare] [--foveate]

The model and its processor are loaded with ``from_pretrained`` (a local folder or a Hugging Face hub id already
in the cache), the image and the question are put into a chat message with the processor's chat template, the
model is wrapped with :func:`arr_coc.compress` and the answer is generated. Printed: the answer, the visual
tokens before -> after, the prefill time (time to first token: vision tower + allocation + language-model
prefill + first token) and the peak memory (CUDA ``max_memory_allocated`` on a GPU; the process's peak RSS from
``resource.getrusage`` on the CPU, which includes the weights). ``--compare`` also runs the unwrapped model on the
same inputs and prints both answers and both prefill times; ``--heatmap`` draws the relevance of every visual token
and marks the kept ones. ``--foveate`` chooses the tokens before the vision tower and runs the tower only on their
patches (``compress(..., foveate=True)``, see :mod:`arr_coc.integrations.foveation`).

Why a fallback processor: ``AutoProcessor`` for Qwen-VL also builds the VIDEO processor, which needs
``torchvision``. Without it, the processor is assembled here from the checkpoint's tokenizer, its PIL image
processor (``Qwen2VLImageProcessorPil``) and its chat template, and does what the Qwen-VL processors do for images:
expand each ``<|image_pad|>`` to one placeholder per visual token.

Example:
    arr-coc ask examples/invoice.png --query "How much must be paid?" --model Qwen/Qwen2.5-VL-3B-Instruct \\
        --budget 0.22 --heatmap out/ask.png --compare
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# model_type of the config -> the transformers class that ``compress`` wraps
MODEL_CLASSES: dict[str, str] = {
    "qwen2_vl": "Qwen2VLForConditionalGeneration",
    "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
    "qwen3_vl": "Qwen3VLForConditionalGeneration",
    "qwen3_vl_moe": "Qwen3VLMoeForConditionalGeneration",
}
IMAGE_PAD = "<|image_pad|>"
EXAMPLE_FOLDER = "/path/to/Qwen2.5-VL-3B-Instruct"


class ModelNotFoundError(Exception):
    """The model could not be found locally or in the cache; the message says where it was looked for."""


@dataclass
class RunResult:
    """One generation: the answer and what it cost.

    Attributes:
        answer: the decoded new tokens.
        new_tokens: number of tokens generated.
        ttft_ms: time to first token (everything from the call to the first generated token), in ms.
        total_ms: time of the whole ``generate`` call, in ms.
        peak_bytes: peak memory (see :func:`peak_memory`).
        prompt_tokens: length of the prompt the language model received.
    """

    answer: str
    new_tokens: int
    ttft_ms: float
    total_ms: float
    peak_bytes: int
    prompt_tokens: int


# ----- processor --------------------------------------------------------------------------------------------------
class PilQwenVLProcessor:
    """Images-only stand-in for a Qwen-VL processor, used when ``AutoProcessor`` cannot be built (no torchvision).

    Same outputs as ``Qwen2_5_VLProcessor`` / ``Qwen3VLProcessor`` for text + images: ``input_ids``,
    ``attention_mask``, ``pixel_values``, ``image_grid_thw``, ``mm_token_type_ids``.

    Args:
        tokenizer: the checkpoint's tokenizer (its vocabulary must hold ``<|image_pad|>``).
        image_processor: a ``Qwen2VLImageProcessorPil`` (or any image processor returning ``pixel_values`` and
            ``image_grid_thw``).
        chat_template: Jinja chat template; default the tokenizer's.
    """

    def __init__(self, tokenizer: Any, image_processor: Any, chat_template: str | None = None) -> None:
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.chat_template = chat_template or getattr(tokenizer, "chat_template", None)
        self.image_token = getattr(tokenizer, "image_token", None) or IMAGE_PAD
        self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
        if not isinstance(self.image_token_id, int) or self.image_token_id == getattr(tokenizer, "unk_token_id", None):
            raise ValueError(f"the tokenizer has no {self.image_token} token; is this a Qwen-VL checkpoint?")

    def apply_chat_template(self, messages: list[dict[str, Any]], **kwargs: Any) -> str:
        """The prompt text of ``messages`` (with the generation prompt), from the chat template."""
        if self.chat_template is None:
            raise ValueError("the checkpoint has no chat template (chat_template.jinja / chat_template.json)")
        kwargs.setdefault("add_generation_prompt", True)
        kwargs["tokenize"] = False
        return self.tokenizer.apply_chat_template(messages, chat_template=self.chat_template, **kwargs)

    def __call__(
        self, text: list[str], images: list[Any], size: dict[str, int] | None = None, return_tensors: str = "pt"
    ) -> Any:
        """Tokenize ``text`` with one ``<|image_pad|>`` per image expanded to the image's visual tokens.

        Args:
            text: one prompt per sample.
            images: the images in prompt order.
            size: ``{"shortest_edge": min_pixels, "longest_edge": max_pixels}`` for the resize.
            return_tensors: ``"pt"``.

        Returns:
            A ``BatchFeature`` with ``input_ids``, ``attention_mask``, ``pixel_values``, ``image_grid_thw`` and
            ``mm_token_type_ids``.
        """
        from transformers import BatchFeature

        extra = {"size": size} if size is not None else {}
        image_inputs = self.image_processor(images=images, return_tensors=return_tensors, **extra)
        grids = image_inputs["image_grid_thw"].tolist()  # (num_images, 3)
        merge = int(getattr(self.image_processor, "merge_size", 2))
        marker = "\0arr-coc-image\0"
        expanded, i = [], 0
        for prompt in text:
            while self.image_token in prompt:
                if i >= len(grids):
                    raise ValueError(f"the prompts hold more {self.image_token} than the {len(grids)} images given")
                prompt = prompt.replace(self.image_token, marker * (math.prod(grids[i]) // merge**2), 1)
                i += 1
            expanded.append(prompt.replace(marker, self.image_token))
        if i != len(grids):
            raise ValueError(f"{len(grids)} images were given but the prompts hold {i} {self.image_token}")
        text_inputs = self.tokenizer(expanded, return_tensors=return_tensors, padding=True)
        ids = text_inputs["input_ids"]
        mm_types = (ids == self.image_token_id).int()  # (B, L) 1 on image placeholders
        return BatchFeature({**text_inputs, **image_inputs, "mm_token_type_ids": mm_types})

    def batch_decode(self, *args: Any, **kwargs: Any) -> list[str]:
        """The tokenizer's ``batch_decode``."""
        return self.tokenizer.batch_decode(*args, **kwargs)


def _chat_template_file(model_id: str) -> str | None:
    """A chat template shipped as ``chat_template.jinja`` / ``chat_template.json`` (local folder or cache)."""
    from transformers.utils import cached_file

    for name in ("chat_template.jinja", "chat_template.json"):
        try:
            path = cached_file(model_id, name, _raise_exceptions_for_missing_entries=False)
        except OSError:
            path = None
        if path and os.path.isfile(path):
            content = Path(path).read_text(encoding="utf-8")
            return json.loads(content)["chat_template"] if name.endswith(".json") else content
    return None


def load_processor(model_id: str) -> Any:
    """The checkpoint's processor: ``AutoProcessor``, else :class:`PilQwenVLProcessor` (e.g. without torchvision)."""
    from transformers import AutoImageProcessor, AutoProcessor, AutoTokenizer

    try:
        return AutoProcessor.from_pretrained(model_id)
    except (ImportError, AttributeError, ValueError, TypeError):
        pass  # typically: the video processor needs torchvision; images do not
    tokenizer = AutoTokenizer.from_pretrained(model_id)
    image_processor = AutoImageProcessor.from_pretrained(model_id)
    return PilQwenVLProcessor(tokenizer, image_processor, _chat_template_file(model_id))


def build_inputs(processor: Any, image: Any, query: str, max_pixels: int | None = None) -> Any:
    """Processor inputs for one user turn holding ``image`` then ``query``, with the generation prompt.

    Args:
        processor: a Qwen-VL processor or :class:`PilQwenVLProcessor`.
        image: a PIL image.
        query: the question.
        max_pixels: cap on the resized image's area (the processor's ``longest_edge``); ``None`` = processor default.
    """
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": query}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    kwargs: dict[str, Any] = {}
    if max_pixels is not None:
        size = processor.image_processor.size
        shortest = size["shortest_edge"] if "shortest_edge" in _keys(size) else 56 * 56
        kwargs["size"] = {"shortest_edge": min(int(shortest), max_pixels), "longest_edge": max_pixels}
    return processor(text=[text], images=[image], return_tensors="pt", **kwargs)


def _keys(size: Any) -> set[str]:
    if isinstance(size, dict):
        return {k for k, v in size.items() if v is not None}
    return {k for k in ("shortest_edge", "longest_edge") if getattr(size, k, None) is not None}


# ----- model ------------------------------------------------------------------------------------------------------
def _is_local_path(model_id: str) -> bool:
    return model_id.startswith(("/", "./", "../", "~", ".\\")) or model_id.count("/") > 1 or "\\" in model_id


def not_found_message(model_id: str, reason: str) -> str:
    """What to tell a user whose ``--model`` could not be loaded: where weights are looked for and how to fix it."""
    from huggingface_hub import constants

    if os.path.isdir(os.path.expanduser(model_id)):
        return (
            f"could not load the model folder {model_id!r}: {reason}\n"
            "  The folder must hold a Qwen2-VL / Qwen2.5-VL / Qwen3-VL checkpoint saved with save_pretrained: "
            "config.json, the *.safetensors weights, the tokenizer files and preprocessor_config.json."
        )
    if _is_local_path(model_id):
        return (
            f"the model folder {model_id!r} does not exist.\n"
            f"  Point --model at a folder holding config.json and the weights, e.g. --model {EXAMPLE_FOLDER}"
        )
    offline = " (offline mode is on: HF_HUB_OFFLINE=1)" if constants.HF_HUB_OFFLINE else ""
    return (
        f"could not load model {model_id!r}: it is not a local folder and it is not in the Hugging Face cache, "
        f"and it could not be downloaded{offline}.\n"
        f"  Hub ids are looked for in the Hugging Face cache: {constants.HF_HUB_CACHE}\n"
        f"  (huggingface_hub.constants.HF_HUB_CACHE; HF_HOME={constants.HF_HOME}; set HF_HOME or HF_HUB_CACHE to "
        "use another cache).\n"
        f"  Either download it into that cache where there is internet (hf download {model_id}), or point --model at "
        f"a local folder with the checkpoint, e.g. --model {EXAMPLE_FOLDER}\n"
        f"  ({reason.splitlines()[0] if reason else 'not found'})"
    )


def resolve_device(device: str | None) -> str:
    """``device`` or, if ``None``, ``"cuda"`` when a GPU is available, else ``"cpu"``."""
    import torch

    if device:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(name: str) -> Any:
    """``"auto"`` (the checkpoint's dtype) or a torch dtype by name (``bfloat16``, ``float16``, ``float32``).

    Raises:
        ValueError: for an unknown name.
    """
    import torch

    if name in (None, "", "auto"):
        return "auto"
    dtype = getattr(torch, str(name).removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"--dtype must be 'auto' or a floating torch dtype (bfloat16, float16, float32), got {name!r}")
    return dtype


def load_model(model_id: str, dtype: Any, device: str) -> tuple[Any, Any]:
    """Load ``(processor, model)`` from a local folder or a cached hub id; the model in eval mode on ``device``.

    Raises:
        ModelNotFoundError: when the checkpoint cannot be found (message says where it was looked for).
        ValueError: when the checkpoint is not a Qwen-VL model.
    """
    import transformers
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(model_id)
    except (OSError, ValueError) as err:  # not found / not cached / offline / invalid repo id
        raise ModelNotFoundError(not_found_message(model_id, str(err))) from None
    name = MODEL_CLASSES.get(config.model_type)
    cls = getattr(transformers, name, None) if name else None
    if cls is None:
        cls = transformers.AutoModelForImageTextToText  # compress() refuses it with the list of supported classes
    try:
        processor = load_processor(model_id)
        model = cls.from_pretrained(model_id, dtype=dtype)
    except OSError as err:
        raise ModelNotFoundError(not_found_message(model_id, str(err))) from None
    return processor, model.to(device).eval()


# ----- running ----------------------------------------------------------------------------------------------------
class FirstTokenTimer:
    """A generation streamer that records when the first new token arrives (``generate`` first puts the prompt)."""

    def __init__(self) -> None:
        self.puts = 0
        self.first: float | None = None

    def put(self, value: Any) -> None:
        self.puts += 1
        if self.puts == 2 and self.first is None:
            self.first = time.perf_counter()

    def end(self) -> None:
        if self.first is None:
            self.first = time.perf_counter()


def peak_memory(device: str) -> tuple[int, str]:
    """(bytes, what was measured): CUDA ``max_memory_allocated`` on a GPU, else the process's peak RSS."""
    import torch

    if str(device).startswith("cuda"):
        return int(torch.cuda.max_memory_allocated(device)), "CUDA max_memory_allocated"
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return int(rss) * scale, "process peak RSS from resource.getrusage, weights included"


def generate_timed(model: Any, inputs: Any, processor: Any, max_new_tokens: int, device: str) -> RunResult:
    """Greedy ``generate`` on ``inputs`` with ``model`` (a ``CompressedModel`` or a plain model), timed.

    Time to first token is taken by a streamer when the first new token is handed over (after the vision tower,
    the allocation when pruned, the language-model prefill and the first sampling step).
    """
    import torch

    cuda = str(device).startswith("cuda")
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    timer = FirstTokenTimer()
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False, streamer=timer)
    if cuda:
        torch.cuda.synchronize(device)
    end = time.perf_counter()
    sequences = out if isinstance(out, torch.Tensor) else out.sequences
    new = sequences[:, inputs["input_ids"].shape[1] :]
    answer = processor.batch_decode(new, skip_special_tokens=True)[0].strip()
    last = getattr(model, "last_inputs", None)
    prompt = last.input_ids.shape[1] if last is not None else inputs["input_ids"].shape[1]
    first = timer.first if timer.first is not None else end
    return RunResult(
        answer, int(new.shape[1]), 1000 * (first - start), 1000 * (end - start), peak_memory(device)[0], int(prompt)
    )


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def ask_main(args: argparse.Namespace) -> int:
    """Run ``arr-coc ask`` (see the module docstring). Returns the exit code: 0 done, 2 model or input error."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as err:
        print(f"arr-coc: error: `ask` needs transformers ({err}); pip install 'arr-coc-vis[hf]'", file=sys.stderr)
        return 2
    from .integrations import compress
    from .io import load_image

    device = resolve_device(args.device)
    dtype = resolve_dtype(args.dtype)
    image = load_image(args.image)  # ValueError for unreadable images (reported by the CLI)
    print(f"loading {args.model} on {device} ...", flush=True)
    try:
        processor, model = load_model(args.model, dtype, device)
    except ModelNotFoundError as err:
        print(f"arr-coc: error: {err}", file=sys.stderr)
        return 2
    inputs = build_inputs(processor, image, args.query, args.max_pixels).to(device)
    cm = compress(model, budget=args.budget, processor=processor, foveate=bool(getattr(args, "foveate", False)))
    # The first call pays one-time set-up (the scorer's lazy imports, CUDA/cuBLAS initialisation): pay it on a
    # tiny image so that neither timed run includes it.
    from PIL import Image

    tiny = build_inputs(processor, Image.new("RGB", (64, 64), "white"), args.query, args.max_pixels).to(device)
    generate_timed(cm, tiny, processor, 1, device)

    pruned = generate_timed(cm, inputs, processor, args.max_new_tokens, device)
    alloc = cm.last_allocation[0][0]
    n_tokens = math.prod(alloc.grid)
    _, mem_kind = peak_memory(device)
    print(f"answer: {pruned.answer}")
    print(
        f"visual tokens: {n_tokens} -> {alloc.budget} ({100 * alloc.budget / n_tokens:.1f}%), "
        f"grid {alloc.grid[1]}x{alloc.grid[2]}; prompt {inputs['input_ids'].shape[1]} -> {pruned.prompt_tokens} tokens"
    )
    print(
        f"prefill (time to first token): {pruned.ttft_ms:.0f} ms; generate {pruned.total_ms:.0f} ms for "
        f"{pruned.new_tokens} tokens"
    )
    print(f"peak memory: {_mib(pruned.peak_bytes)} ({mem_kind})")
    if cm.foveate:
        print(f"foveated: the vision tower encoded {alloc.budget} of {n_tokens} tokens' patches")
    if args.compare:
        full = generate_timed(model, inputs, processor, args.max_new_tokens, device)
        print(f"answer (unpruned): {full.answer}")
        print(f"answer (pruned):   {pruned.answer}")
        speedup = full.ttft_ms / pruned.ttft_ms if pruned.ttft_ms > 0 else float("nan")
        print(
            f"prefill (time to first token): unpruned {full.ttft_ms:.0f} ms ({n_tokens} visual tokens), "
            f"pruned {pruned.ttft_ms:.0f} ms ({alloc.budget} visual tokens), {speedup:.2f}x"
        )
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
