"""The ``arr_coc`` model for lmms-eval: any lmms-eval task on a vision-language model whose visual tokens are pruned
(any family ``arr-coc eval`` runs: the Qwen-VL line, GLM-4.1V, MiniCPM-V 4.7, InternVL, LLaVA-OneVision, Mistral3,
Gemma 3; ``docs/families.md``).

    lmms-eval --model arr_coc --model_args pretrained=/path/to/Qwen2.5-VL-7B-Instruct,budget=0.222,allocator=model \\
        --tasks docvqa_val,chartqa --batch_size 1 --output_path out/

How lmms-eval finds it: lmms-eval (0.7.x) builds its model registry from the Python entry-point group
``lmms_eval.models``; this package declares ``arr_coc = "arr_coc.evaluation.lmms_eval_plugin:manifest"`` there
(``pyproject.toml``), so ``pip install arr-coc-vis`` beside lmms-eval is all it takes. lmms-eval is not a
requirement of this package (it pulls torchvision and much more); install it as you normally do.

``--model_args`` (lmms-eval parses numbers and true/false):
    pretrained: local folder or cached hub id of a checkpoint of a registered family (required).
    budget: tokens kept per image: a fraction (0.222), a count (256), ``adaptive``; ``1.0`` runs the unpruned model.
        Note that lmms-eval turns ``budget=1`` into the integer 1 (one token): write ``1.0`` for "all".
    allocator: ``model`` (default), ``text``, ``texture``, ``foveate``, ``random``, ``uniform``
        (:mod:`arr_coc.evaluation.allocators`).
    device: torch device (default ``cuda`` when available, else ``cpu``); dtype: ``bfloat16`` (default, as
        lmms-eval's Qwen-VL models), ``float16``, ``float32`` or ``auto``.
    min_pixels / max_pixels: image resolution bounds (default lmms-eval's for the family, ``Family.eval_pixels``),
        passed as the family's processor takes them (``Family.pixel_kwargs``: Qwen's area bounds, InternVL's tile
        counts, Mistral3's longest edge; none for Gemma 3 / OneVision), as ``arr-coc eval`` passes them.
    system_prompt: default "You are a helpful assistant." (lmms-eval's Qwen-VL default).
    batch_size: requests per generate call (lmms-eval's ``--batch_size`` sets it too).
    seed: seed of the ``random`` allocator.
    (``max_batch_size``, which lmms-eval passes for automatic batch sizes, is accepted and not used.)

What it does with a request, as lmms-eval's simple Qwen-VL models do: the images of ``doc_to_visual(doc)`` then
the context text (``<image>`` markers removed) in one user turn after the system prompt; greedy unless the task
sets ``temperature > 0``; ``max_new_tokens`` from the task (default 128); the answer is cut at the task's ``until``
strings except "\\n\\n". The question used for scoring the visual tokens is the context without the task's
answer-format instruction (the post-prompts of :data:`arr_coc.evaluation.tasks.TASKS`). Only ``generate_until`` is
implemented (every task ``arr-coc eval`` knows uses it).
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms

from ..family_processors import pixel_kwargs
from .allocators import check_allocators
from .runner import Variant, cut_at_stops, generate_batch, is_full, pixel_bounds, wrap_model
from .tasks import SYSTEM_PROMPT, TASKS

MODEL_NAME = "arr_coc"
DEFAULT_MAX_NEW_TOKENS = 128  # lmms-eval's Qwen-VL models, when a task sets none

__all__ = ["MODEL_NAME", "ArrCocQwenVL", "manifest"]


def manifest() -> Any:
    """The entry point lmms-eval loads: ``ModelManifest("arr_coc", simple_class_path=...)``."""
    from lmms_eval.models.registry_v2 import ModelManifest

    return ModelManifest(model_id=MODEL_NAME, simple_class_path=f"{__name__}.ArrCocQwenVL")


def question_of(context: str) -> str:
    """The question inside an lmms-eval context: the context minus a known answer-format instruction."""
    text = context.replace("<image>", "")
    for suffix in sorted({t.post_prompt for t in TASKS.values() if t.post_prompt}, key=len, reverse=True):
        if text.endswith(suffix):
            return text[: -len(suffix)].strip()
    return text.strip()


class ArrCocQwenVL(lmms):
    """An lmms-eval "simple" model: a Qwen-VL checkpoint wrapped with ``arr_coc.compress`` (see the module doc).

    Attributes:
        model: the unwrapped transformers model.
        processor: its processor.
        last_allocation: ``CompressedModel.last_allocation`` of the last batch (empty for the unpruned model).
    """

    is_simple = True

    def __init__(
        self,
        pretrained: str,
        budget: float | int | str = 0.222,
        allocator: str = "model",
        device: str | None = None,
        dtype: str = "bfloat16",
        batch_size: int | str = 1,
        min_pixels: int | None = None,
        max_pixels: int | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        seed: int = 0,
        max_batch_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if kwargs:
            raise ValueError(
                f"unknown model_args for {MODEL_NAME}: {', '.join(sorted(kwargs))} (known: pretrained, budget, "
                "allocator, device, dtype, batch_size, min_pixels, max_pixels, system_prompt, seed)"
            )
        from ..attending import parse_budget
        from ..loading import load_model, resolve_device, resolve_dtype

        budget = parse_budget(budget if not isinstance(budget, str) else budget.strip())
        self.variant = (
            Variant("unpruned") if is_full(budget) else Variant(f"{allocator}@{budget}", allocator, budget, str(budget))
        )
        if self.variant.allocator is not None:
            check_allocators([allocator], [budget])
        if allocator == "downscale":
            raise ValueError(
                "allocator=downscale is a baseline of arr-coc eval (a smaller image per sample); in lmms-eval run the "
                "plain model with a smaller max_pixels instead"
            )
        self._device = resolve_device(device)
        self.processor, self.model = load_model(str(pretrained), resolve_dtype(dtype), self._device)
        self.bounds = pixel_bounds(self.model.config.model_type, min_pixels, max_pixels)
        self.batch_size_per_gpu = int(batch_size)
        self.system_prompt = system_prompt
        self.seed = int(seed)
        self.last_allocation: list = []

    # lmms-eval reads these
    @property
    def batch_size(self) -> int:
        return self.batch_size_per_gpu

    @property
    def device(self) -> str:
        return self._device

    @property
    def tokenizer(self) -> Any:
        return getattr(self.processor, "tokenizer", self.processor)

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError(f"{MODEL_NAME} answers generate_until requests only (no loglikelihood tasks)")

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError(f"{MODEL_NAME} implements generate_until only (multi-round tasks are not supported)")

    def _inputs(self, contexts: list[str], visuals: list[list[Any]]) -> Any:
        texts, images = [], []
        for context, vis in zip(contexts, visuals, strict=True):
            for v in vis:
                if not hasattr(v, "convert"):
                    raise ValueError(f"{MODEL_NAME} takes images only; got a {type(v).__name__} visual (video/audio?)")
            content = [{"type": "image"} for _ in vis] + [{"type": "text", "text": context.replace("<image>", "")}]
            messages = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": content}]
            texts.append(self.processor.apply_chat_template(messages, add_generation_prompt=True))
            images.append([v.convert("RGB") for v in vis])  # a list per sample (Gemma 3 counts them per prompt)
        tokenizer = self.tokenizer
        side, tokenizer.padding_side = tokenizer.padding_side, "left"
        try:
            bounded = pixel_kwargs(self.processor, *self.bounds)  # the family's own bound, as arr-coc eval's
            inputs = self.processor(text=texts, images=images, padding=True, return_tensors="pt", **bounded)
            return inputs.to(self._device)
        finally:
            tokenizer.padding_side = side

    def generate_until(self, requests: list[Instance]) -> list[str]:
        """Answers to ``requests`` (``args`` = context, generation kwargs, doc_to_visual, doc_id, task, split), in
        order; consecutive requests with the same generation kwargs are batched ``batch_size`` at a time."""
        answers: list[str] = [""] * len(requests)
        i = 0
        while i < len(requests):
            kwargs = requests[i].args[1]
            j = i
            while j < len(requests) and j - i < self.batch_size and requests[j].args[1] == kwargs:
                j += 1
            chunk = requests[i:j]
            contexts = [r.args[0] for r in chunk]
            visuals = []
            for r in chunk:
                _, _, doc_to_visual, doc_id, task, split = r.args
                vis = doc_to_visual(self.task_dict[task][split][doc_id])
                visuals.append(list(vis or []))
            for k, text in enumerate(self._generate(contexts, visuals, dict(kwargs or {}))):
                answers[i + k] = text
                self.cache_hook.add_partial("generate_until", (contexts[k], kwargs), text)
            i = j
        return answers

    def _generate(self, contexts: list[str], visuals: list[list[Any]], gen: dict[str, Any]) -> list[str]:
        if gen.get("temperature", 0) and float(gen["temperature"]) > 0:
            raise ValueError(f"{MODEL_NAME} generates greedily; the task asks for temperature {gen['temperature']}")
        until = gen.get("until") or []
        until = [until] if isinstance(until, str) else list(until)
        inputs = self._inputs(contexts, visuals)
        runner = wrap_model(self.model, self.processor, self.variant, [question_of(c) for c in contexts], self.seed)
        max_new = int(gen.get("max_new_tokens") or DEFAULT_MAX_NEW_TOKENS)
        texts, _, _ = generate_batch(runner, inputs, self.processor, max_new, self._device)
        self.last_allocation = list(getattr(runner, "last_allocation", []))
        return [cut_at_stops(t, until) for t in texts]
