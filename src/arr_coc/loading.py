"""Load a Qwen-VL checkpoint and time where a generation's time goes (used by ``ask``, ``demo``, ``eval`` and the
lmms-eval plugin).

* Loading: :func:`load_model` reads a local folder or a Hugging Face hub id already in the cache (an id that is
  neither fails at once with where it was looked for, :func:`check_model_available`, without waiting on an
  unreachable hub) and the processor with :func:`arr_coc.load_processor`; :func:`resolve_device` and
  :func:`resolve_dtype` turn the command-line spellings into torch's.
* Inputs: :func:`build_inputs` puts the image and the question into one chat turn with the processor's template.
* Timing: :func:`generate_timed` runs a greedy ``generate`` and returns a :class:`RunResult`: the answer, time to
  first token (a streamer, :class:`FirstTokenTimer`), the peak memory (:func:`peak_memory`: CUDA
  ``max_memory_allocated`` on a GPU; the process's peak RSS from ``resource.getrusage`` on the CPU, weights
  included) and the time of each stage (:class:`StageTimes`). Stage times come from forward hooks on the model's
  vision tower (``model.model.visual``) and language model (``model.model.language_model``; its first call in a
  ``generate`` is the prefill, the others decode steps), :class:`StageTimer`, and from :class:`TimedScorer`, a
  timing wrapper around the scorer passed to ``compress``; the hooks are removed after each run and nothing in
  transformers is patched.

Example:
    >>> resolve_dtype("bfloat16")
    torch.bfloat16
"""

from __future__ import annotations

import os
import resource
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from .families import model_class_for_type
from .processing import load_processor

EXAMPLE_FOLDER = "/path/to/Qwen2.5-VL-3B-Instruct"
HUB_PROBE_TIMEOUT_S = 3.0  # how long an uncached hub id waits for the hub before failing (one TCP connect)


class ModelNotFoundError(Exception):
    """The model could not be found locally or in the cache; the message says where it was looked for."""


@dataclass
class StageTimes:
    """Where the time of one ``generate`` call went, in ms (see :class:`StageTimer`)."""

    vision_ms: float = 0.0  # vision tower (every call of model.model.visual)
    scorer_ms: float = 0.0  # relevance scoring inside compress (0 for the unpruned model); OCR included in text mode
    prefill_ms: float = 0.0  # the language model's first call: the prompt
    decode_ms: float = 0.0  # the language model's later calls: one a new token
    decode_steps: int = 0  # number of those later calls


class TimedScorer:
    """A ``compress`` scorer that adds the time of each call to :attr:`ms` (wraps, does not change, the scorer).

    Args:
        scorer: the scorer to wrap (``resolve_scorer("auto")`` for the default pipeline).
        device: the model's device; on CUDA the clock is read after a synchronize.
    """

    def __init__(self, scorer: Any, device: str) -> None:
        self.scorer = scorer
        self.cuda = str(device).startswith("cuda")
        self.ms = 0.0

    def __call__(self, ctx: Any) -> Any:
        start = _clock(self.cuda)
        out = self.scorer(ctx)
        self.ms += 1000 * (_clock(self.cuda) - start)
        return out


def _clock(cuda: bool) -> float:
    if cuda:
        import torch

        torch.cuda.synchronize()
    return time.perf_counter()


def tower_hooks(visual: Any, on_start: Any, on_end: Any) -> list[Any]:
    """Forward hooks that call ``on_start()`` when a vision-tower run begins and ``on_end()`` when it ends.

    A run is either the model's own tower (``visual.forward``, which calls ``visual.patch_embed`` first and
    ``visual.merger`` last) or a foveated tower that runs the tower's modules itself (the Qwen2.5-VL tower with one
    attention call per block, ``arr_coc.integrations.qwen2_5_vl``): the hooks sit on all three and count nesting, so
    each run fires exactly one start and one end. A module without ``patch_embed`` / ``merger`` is hooked as a whole.

    Args:
        visual: ``model.model.visual``.
        on_start, on_end: callables without arguments.

    Returns:
        The hook handles (call ``.remove()`` on each when done).
    """
    depth = [0]

    def start(*_: Any) -> None:
        if depth[0] == 0:
            on_start()
        depth[0] += 1

    def end(*_: Any) -> None:
        depth[0] -= 1
        if depth[0] == 0:
            on_end()

    handles = [visual.register_forward_pre_hook(start), visual.register_forward_hook(end)]
    first, last = getattr(visual, "patch_embed", None), getattr(visual, "merger", None)
    if first is not None and last is not None:
        handles += [first.register_forward_pre_hook(start), last.register_forward_hook(end)]
    return handles


class StageTimer:
    """Times a model's vision tower and language model with forward hooks, for the duration of a ``with`` block.

    The hooks sit on ``model.model.visual`` (:func:`tower_hooks`) and ``model.model.language_model`` (the Qwen-VL
    layout); a model without them is timed as a whole only. Hooks are removed on exit; nothing else is changed.

    Args:
        model: the unwrapped Qwen-VL model (also for a ``CompressedModel``: pass its ``.model``).
        device: the model's device; on CUDA the clock is read after a synchronize.
    """

    def __init__(self, model: Any, device: str) -> None:
        inner = getattr(model, "model", model)
        self.visual = getattr(inner, "visual", None) or getattr(inner, "vision_tower", None)  # tiled / 1-D families
        self.language_model = getattr(inner, "language_model", None)
        self.cuda = str(device).startswith("cuda")
        self.times = StageTimes()
        self._handles: list[Any] = []
        self._lm_calls = 0

    def __enter__(self) -> StageTimer:
        if self.visual is not None:  # the tower's own forward or a foveated tower that runs its modules
            started: list[float] = []
            self._handles += tower_hooks(
                self.visual,
                lambda s=started: s.append(_clock(self.cuda)),
                lambda s=started: self._vision(1000 * (_clock(self.cuda) - s.pop())),
            )
        if self.language_model is not None:
            lm_started: list[float] = []
            self._handles.append(
                self.language_model.register_forward_pre_hook(lambda *_, s=lm_started: s.append(_clock(self.cuda)))
            )
            self._handles.append(
                self.language_model.register_forward_hook(
                    lambda *_, s=lm_started: self._language(1000 * (_clock(self.cuda) - s.pop()))
                )
            )
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def _vision(self, ms: float) -> None:
        self.times.vision_ms += ms

    def _language(self, ms: float) -> None:
        self._lm_calls += 1
        if self._lm_calls == 1:
            self.times.prefill_ms += ms
        else:
            self.times.decode_ms += ms
            self.times.decode_steps += 1


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
        stages: where the time went (vision tower, scorer, language-model prefill and decode).
    """

    answer: str
    new_tokens: int
    ttft_ms: float
    total_ms: float
    peak_bytes: int
    prompt_tokens: int
    stages: StageTimes = field(default_factory=lambda: StageTimes())


# ----- processor --------------------------------------------------------------------------------------------------
def build_inputs(processor: Any, image: Any, query: str, max_pixels: int | None = None) -> Any:
    """Processor inputs for one user turn holding ``image`` then ``query``, with the generation prompt.

    Args:
        processor: a Qwen-VL processor or :class:`PilQwenVLProcessor`.
        image: a PIL image.
        query: the question; a lone surrogate (an undecodable terminal byte, a JSON ``"\\ud800"``) becomes U+FFFD
            (``arr_coc.reading.text.valid_text``), as the allocation reads it: no tokenizer takes it.
        max_pixels: cap on the resized image's area (Qwen's ``longest_edge``; a family whose row names
            ``pixel_kwargs`` gets its own bound: InternVL's tiles, Pixtral's longest edge); ``None``: the processor's.
    """
    from .reading.text import valid_text

    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": valid_text(query)}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    kwargs: dict[str, Any] = {}
    if max_pixels is not None:
        from .family_processors import pixel_kwargs, processor_family

        row = processor_family(processor)
        if row is not None and row.pixel_kwargs:  # the family's own bound (tiles, longest edge, fixed size)
            kwargs = pixel_kwargs(processor, min(row.min_pixels, max_pixels), max_pixels)
        else:  # Qwen's area bounds
            size = processor.image_processor.size
            shortest = size["shortest_edge"] if "shortest_edge" in _keys(size) else 56 * 56
            kwargs["size"] = {"shortest_edge": min(int(shortest), max_pixels), "longest_edge": max_pixels}
    return processor(text=[text], images=[image], return_tensors="pt", **kwargs)


def visual_tokens(model: Any, inputs: Any, sample: int = 0) -> int:
    """The unpruned model's visual tokens in ``sample`` of ``inputs`` (one image a sample): ``image_grid_thw``'s
    merged cells for the Qwen line and GLM, else the image placeholders in its ``input_ids`` (the config's
    ``image_token_id`` / ``image_token_index``; OneVision's row newlines are placeholders too)."""
    if "image_grid_thw" in inputs:
        config = getattr(model, "config", None)
        merge = int(getattr(getattr(config, "vision_config", None), "spatial_merge_size", 2))
        return int(inputs["image_grid_thw"][sample].prod()) // merge**2
    config = model.config
    token = getattr(config, "image_token_id", None)
    token = getattr(config, "image_token_index", None) if token is None else token
    if token is None and "mm_token_type_ids" in inputs:  # MiniCPM-V: every crop's placeholders, by their type
        return int((inputs["mm_token_type_ids"][sample] == 1).sum())
    return int((inputs["input_ids"][sample] == int(token)).sum())


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
    offline = " (offline mode is on: HF_HUB_OFFLINE=1)" if _offline() else ""
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


def hub_unreachable(endpoint: str, timeout: float = HUB_PROBE_TIMEOUT_S) -> str | None:
    """``None`` if a TCP connection to the hub ``endpoint`` opens within ``timeout`` seconds, else why not.

    The connection is tried once, in a daemon thread, and waited for at most ``timeout`` seconds (name resolution
    included), so an unreachable or hanging network costs at most ``timeout``, never the hub client's retries.
    """
    url = urlparse(endpoint)
    host, port = url.hostname or endpoint, url.port or (443 if url.scheme != "http" else 80)
    outcome: list[str | None] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            outcome.append(None)
        except OSError as err:
            outcome.append(f"{host}:{port} is unreachable ({type(err).__name__}: {err})")

    thread = threading.Thread(target=probe, name="arr-coc-hub-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    return outcome[0] if outcome else f"{host}:{port} did not answer within {timeout:g} s"


def _is_cached(model_id: str) -> bool:
    """Whether the Hugging Face cache holds ``config.json`` of the hub id ``model_id``."""
    from huggingface_hub import constants, try_to_load_from_cache

    try:
        found = try_to_load_from_cache(model_id, "config.json", cache_dir=constants.HF_HUB_CACHE)
    except ValueError:  # not a valid repo id (HFValidationError): from_pretrained explains
        return True
    return isinstance(found, str)


def _offline() -> bool:
    from huggingface_hub import constants

    flag = os.environ.get("TRANSFORMERS_OFFLINE", "").strip().lower() in ("1", "on", "yes", "true")
    return bool(constants.HF_HUB_OFFLINE) or flag


def check_model_available(model_id: str) -> None:
    """Fail at once when ``model_id`` is a hub id that is not cached and cannot be downloaded.

    A local folder, or a hub id whose ``config.json`` is in the Hugging Face cache, passes. Otherwise, in offline
    mode (``HF_HUB_OFFLINE=1`` / ``TRANSFORMERS_OFFLINE=1``) it fails without touching the network, and online it
    fails when one connection to the hub does not open within :data:`HUB_PROBE_TIMEOUT_S` seconds.

    Raises:
        ModelNotFoundError: with :func:`not_found_message`.
    """
    from huggingface_hub import constants

    if os.path.isdir(os.path.expanduser(model_id)) or _is_local_path(model_id) or _is_cached(model_id):
        return
    if _offline():
        raise ModelNotFoundError(not_found_message(model_id, "not in the cache, and offline mode is on"))
    reason = hub_unreachable(constants.ENDPOINT)
    if reason is not None:
        raise ModelNotFoundError(not_found_message(model_id, f"not in the cache, and the hub {reason}"))


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

    check_model_available(model_id)
    try:
        config = AutoConfig.from_pretrained(model_id)
    except (OSError, ValueError) as err:  # not found / not cached / offline / invalid repo id
        raise ModelNotFoundError(not_found_message(model_id, str(err))) from None
    entry = model_class_for_type(config.model_type)  # the class compress wraps, from arr_coc.families
    cls = getattr(transformers, entry.hf_class, None) if entry else None
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


def generate_timed(
    model: Any,
    inputs: Any,
    processor: Any,
    max_new_tokens: int,
    device: str,
    scorer: TimedScorer | None = None,
) -> RunResult:
    """Greedy ``generate`` on ``inputs`` with ``model`` (a ``CompressedModel`` or a plain model), timed by stage.

    Time to first token is taken by a streamer when the first new token is handed over (after the vision tower,
    the scoring when pruned, the language-model prefill and the first sampling step). Stage times: see
    :class:`StageTimer`; ``scorer`` is the :class:`TimedScorer` the ``CompressedModel`` was built with, if any.
    """
    import torch

    cuda = str(device).startswith("cuda")
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    if scorer is not None:
        scorer.ms = 0.0
    timer = FirstTokenTimer()
    compressed = scorer is not None or hasattr(model, "last_allocation")  # a CompressedModel: time the model it wraps
    with StageTimer(getattr(model, "model", model) if compressed else model, device) as stages:
        start = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False, streamer=timer)
        if cuda:
            torch.cuda.synchronize(device)
        end = time.perf_counter()
    if scorer is not None:
        stages.times.scorer_ms = scorer.ms
    sequences = out if isinstance(out, torch.Tensor) else out.sequences
    new = sequences[:, inputs["input_ids"].shape[1] :]
    answer = processor.batch_decode(new, skip_special_tokens=True)[0].strip()
    last = getattr(model, "last_inputs", None)
    prompt = last.input_ids.shape[1] if last is not None else inputs["input_ids"].shape[1]
    first = timer.first if timer.first is not None else end
    return RunResult(
        answer,
        int(new.shape[1]),
        1000 * (first - start),
        1000 * (end - start),
        peak_memory(device)[0],
        int(prompt),
        stages.times,
    )
