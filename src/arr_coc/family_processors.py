"""The processors of the tiled and 1-D families (InternVL, LLaVA-OneVision, Mistral3, Gemma 3) without torchvision, and
what each family's processor takes for ``--min-pixels`` / ``--max-pixels`` (:func:`pixel_kwargs`).

Why: ``AutoProcessor.from_pretrained`` builds each family's video processor (InternVL, OneVision) or imports the fast
image processor (Pixtral's module), and both need ``torchvision``, which the CPU torch wheel has no match for on
PyPI. Images need none of it. :func:`load_family_processor` builds, from a checkpoint's files:

* InternVL, LLaVA-OneVision, Gemma 3: ``transformers``' own processor class (``Family.processor``) with the
  checkpoint's tokenizer, its PIL image processor and chat template, and no video processor (an images-only subclass,
  :func:`images_only`, whose ``get_attributes`` leaves ``video_processor`` out; nothing in ``transformers`` is patched);
  the processor's own settings (``processor_config.json``: OneVision's ``num_image_tokens``, InternVL's
  ``image_seq_length``) are passed as saved.
* Mistral3: :class:`PilPixtralProcessor`, the project's own (``transformers.models.pixtral.processing_pixtral`` cannot
  be imported without torchvision): ``PixtralImageProcessorPil`` and each ``[IMG]`` of the prompt expanded to the
  image's rows of ``[IMG]``, each closed by ``[IMG_BREAK]``, the last by ``[IMG_END]``, as ``PixtralProcessor`` does.

Pixel bounds (``Family.pixel_kwargs`` names the function of each row; None: Qwen's ``size={"shortest_edge": min,
"longest_edge": max}`` area bounds, :func:`pixel_kwargs`):

* InternVL: ``min_patches`` / ``max_patches`` = the bounds in whole 448-px tiles (the processor's ``size``);
* Mistral3: ``size={"longest_edge": isqrt(max_pixels)}`` (the family row's ``--max-pixels`` is the longest edge
  squared; Pixtral has no lower bound);
* Gemma 3 and LLaVA-OneVision: nothing (896 x 896 always; OneVision's tiles are the model's
  ``image_grid_pinpoints``, not a processor bound).
"""

from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path
from typing import Any

from .families import Family, family_of_type, get_family, load_object


# ----- pixel bounds -------------------------------------------------------------------------------------------------
def qwen_pixels(processor: Any, min_pixels: int, max_pixels: int) -> dict[str, Any]:
    """Qwen's (and GLM's, MiniCPM-V's) area bounds: ``size={"shortest_edge": min, "longest_edge": max}``."""
    return {"size": {"shortest_edge": int(min_pixels), "longest_edge": int(max_pixels)}}


def internvl_pixels(processor: Any, min_pixels: int, max_pixels: int) -> dict[str, Any]:
    """InternVL's tile counts: the bounds in whole tiles of the processor's ``size`` (448 x 448 published)."""
    size = processor.image_processor.size
    height = size["height"] if isinstance(size, dict) else size.height
    width = size["width"] if isinstance(size, dict) else size.width
    tile = int(height) * int(width)
    hi = max(1, int(max_pixels) // tile)
    return {"min_patches": min(hi, max(1, int(min_pixels) // tile)), "max_patches": hi}


def pixtral_pixels(processor: Any, min_pixels: int, max_pixels: int) -> dict[str, Any]:
    """Pixtral's longest edge: ``isqrt(max_pixels)`` (no lower bound)."""
    return {"size": {"longest_edge": math.isqrt(int(max_pixels))}}


def fixed_pixels(processor: Any, min_pixels: int, max_pixels: int) -> dict[str, Any]:
    """Nothing: the family's processor resizes to fixed sizes (Gemma 3's 896 x 896, OneVision's pinpoints)."""
    return {}


def processor_family(processor: Any) -> Family | None:
    """The family row of ``processor``: the one :func:`arr_coc.load_processor` recorded (``arr_coc_family``), else the
    row whose ``processor`` names its class, else None (a Qwen-VL processor or the Qwen stand-in)."""
    name = getattr(processor, "arr_coc_family", None)
    if name:
        return get_family(name)
    from .families import families

    cls = type(processor).__name__
    return next((f for f in families() if f.processor == cls or f"{f.processor}ImagesOnly" == cls), None)


def pixel_kwargs(processor: Any, min_pixels: int, max_pixels: int) -> dict[str, Any]:
    """The keyword arguments ``processor(...)`` takes for the pixel bounds ``(min_pixels, max_pixels)``, by its family
    row's ``pixel_kwargs`` (Qwen's area bounds when the row has none or the processor's family is unknown)."""
    row = processor_family(processor)
    rule = load_object(row.pixel_kwargs) if row is not None and row.pixel_kwargs else qwen_pixels
    return rule(processor, min_pixels, max_pixels)


# ----- processors ---------------------------------------------------------------------------------------------------
@functools.cache
def images_only(cls: type) -> type:
    """A subclass of the processor class ``cls`` without its video processor (its attributes less
    ``video_processor``), so it is built without torchvision; images are processed by ``cls``'s own code."""

    class ImagesOnly(cls):  # type: ignore[misc, valid-type]
        @classmethod
        def get_attributes(cls_) -> list[str]:  # noqa: N805
            return [a for a in super().get_attributes() if a != "video_processor"]

    ImagesOnly.__name__ = ImagesOnly.__qualname__ = f"{cls.__name__}ImagesOnly"
    return ImagesOnly


class PilPixtralProcessor:
    """Images-only stand-in for ``PixtralProcessor`` (Mistral3), which needs torchvision to import.

    Args:
        tokenizer: the checkpoint's tokenizer (it must hold ``[IMG]``, ``[IMG_BREAK]``, ``[IMG_END]``).
        image_processor: a ``PixtralImageProcessorPil``.
        patch_size, spatial_merge_size: the model's (a token is ``patch_size * spatial_merge_size`` pixels a side).
        chat_template: the checkpoint's template.

    Attributes:
        arr_coc_kind: ``"pil"``; ``arr_coc_reason``: why the real processor was not used.
    """

    arr_coc_kind = "pil"

    def __init__(
        self,
        tokenizer: Any,
        image_processor: Any,
        patch_size: int = 14,
        spatial_merge_size: int = 2,
        chat_template: str | None = None,
        image_token: str = "[IMG]",
        image_break_token: str = "[IMG_BREAK]",
        image_end_token: str = "[IMG_END]",
    ) -> None:
        self.tokenizer, self.image_processor = tokenizer, image_processor
        self.patch_size, self.spatial_merge_size = int(patch_size), int(spatial_merge_size)
        self.chat_template = chat_template or getattr(tokenizer, "chat_template", None)
        self.image_token, self.image_break_token, self.image_end_token = image_token, image_break_token, image_end_token
        self.arr_coc_reason: str | None = None
        for token in (image_token, image_break_token, image_end_token):
            if tokenizer.convert_tokens_to_ids(token) in (None, getattr(tokenizer, "unk_token_id", None)):
                raise ValueError(f"the tokenizer has no {token} token; is this a Mistral3 checkpoint?")
        self.image_token_id = tokenizer.convert_tokens_to_ids(image_token)

    def apply_chat_template(self, messages: list[dict[str, Any]], **kwargs: Any) -> str:
        """The prompt text of ``messages`` (``add_generation_prompt`` defaults to True; never tokenized)."""
        kwargs.setdefault("add_generation_prompt", True)
        kwargs["tokenize"] = False
        return self.tokenizer.apply_chat_template(messages, chat_template=self.chat_template, **kwargs)

    def __call__(self, text: str | list[str], images: Any = None, return_tensors: str = "pt", **kwargs: Any) -> Any:
        """``input_ids``, ``attention_mask``, ``pixel_values`` (padded to the largest image) and ``image_sizes``.

        Args:
            text: one prompt or one a sample; each ``[IMG]`` is one image, in order.
            images: the images in prompt order (nested lists per sample are flattened).
            **kwargs: ``size`` goes to the image processor; the rest to the tokenizer (``padding_side``...).
        """
        from transformers import BatchFeature

        prompts = [text] if isinstance(text, str) else list(text)
        flat: list[Any] = []
        for item in images if isinstance(images, (list, tuple)) else ([] if images is None else [images]):
            flat.extend(item if isinstance(item, (list, tuple)) else [item])
        cell = self.patch_size * self.spatial_merge_size
        extra = {k: kwargs.pop(k) for k in ("size",) if k in kwargs}
        image_inputs: dict[str, Any] = {}
        sizes: list[list[int]] = []
        if flat:
            patch = {"height": cell, "width": cell}
            image_inputs = dict(self.image_processor(flat, patch_size=patch, return_tensors=return_tensors, **extra))
            sizes = [[int(h), int(w)] for h, w in image_inputs["image_sizes"]]
        marker, expanded, i = "\0arr-coc-image\0", [], 0
        for prompt in prompts:
            while self.image_token in prompt:
                if i >= len(sizes):
                    raise ValueError(f"the prompts hold more {self.image_token} than the {len(sizes)} images given")
                rows, cols = sizes[i][0] // cell, sizes[i][1] // cell
                run = ([marker] * cols + [self.image_break_token]) * rows
                run[-1] = self.image_end_token
                prompt = prompt.replace(self.image_token, "".join(run), 1)
                i += 1
            expanded.append(prompt.replace(marker, self.image_token))
        if i != len(sizes):
            raise ValueError(f"{len(sizes)} images were given but the prompts hold {i} {self.image_token}")
        kwargs.setdefault("padding", True)
        text_inputs = self.tokenizer(expanded, return_tensors=return_tensors, **kwargs)
        return BatchFeature({**text_inputs, **image_inputs})

    def batch_decode(self, *args: Any, **kwargs: Any) -> list[str]:
        return self.tokenizer.batch_decode(*args, **kwargs)

    def decode(self, *args: Any, **kwargs: Any) -> str:
        return self.tokenizer.decode(*args, **kwargs)


FAMILIES: tuple[str, ...] = ("internvl", "llava-onevision", "mistral3", "gemma-3")  # built here without torchvision


def checkpoint_family(model_id: str) -> Family | None:
    """The family row of the checkpoint ``model_id`` (its ``config.json``'s ``model_type``), or None."""
    from transformers.utils import cached_file

    try:
        path = cached_file(model_id, "config.json", _raise_exceptions_for_missing_entries=False)
        model_type = json.loads(Path(path).read_text(encoding="utf-8")).get("model_type") if path else None
    except (OSError, ValueError):
        return None
    return family_of_type(model_type) if isinstance(model_type, str) else None


def _saved_settings(model_id: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """The processor's own settings ``keys`` from the checkpoint's ``processor_config.json`` (those present)."""
    from transformers.utils import cached_file

    try:
        path = cached_file(model_id, "processor_config.json", _raise_exceptions_for_missing_entries=False)
        saved = json.loads(Path(path).read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError):
        saved = {}
    return {k: saved[k] for k in keys if k in saved}


SETTINGS = {  # the processor settings of each family saved in processor_config.json
    "internvl": ("image_seq_length",),
    "llava-onevision": ("num_image_tokens", "vision_feature_select_strategy", "vision_aspect_ratio"),
    "gemma-3": ("image_seq_length",),
}


def load_family_processor(model_id_or_path: str | os.PathLike, family: Family, reason: str) -> Any:
    """The processor of ``family`` built from the checkpoint's files without torchvision (see the module doc).

    Args:
        model_id_or_path: the checkpoint.
        family: its family row (one of :data:`FAMILIES`).
        reason: why ``AutoProcessor`` was not used (``processor.arr_coc_reason``).
    """
    import transformers
    from transformers import AutoImageProcessor, AutoTokenizer

    from .processing import _chat_template_file

    model_id = os.fspath(model_id_or_path)
    tokenizer = AutoTokenizer.from_pretrained(model_id)
    image_processor = AutoImageProcessor.from_pretrained(model_id)
    template = _chat_template_file(model_id) or getattr(tokenizer, "chat_template", None)
    if family.name == "mistral3":
        config = json.loads(Path(transformers.utils.cached_file(model_id, "config.json")).read_text(encoding="utf-8"))
        patch = int(config.get("vision_config", {}).get("patch_size", 14))
        processor: Any = PilPixtralProcessor(tokenizer, image_processor, patch, int(config["spatial_merge_size"]),
                                             template)  # fmt: skip
    else:
        cls = images_only(getattr(transformers, family.processor))
        processor = cls(image_processor=image_processor, tokenizer=tokenizer, chat_template=template,
                        **_saved_settings(model_id, SETTINGS.get(family.name, ())))  # fmt: skip
        processor.arr_coc_kind = "pil"
    processor.arr_coc_reason = reason
    processor.arr_coc_family = family.name
    return processor


__all__ = [
    "FAMILIES",
    "PilPixtralProcessor",
    "checkpoint_family",
    "fixed_pixels",
    "images_only",
    "internvl_pixels",
    "load_family_processor",
    "pixel_kwargs",
    "pixtral_pixels",
    "processor_family",
    "qwen_pixels",
]
