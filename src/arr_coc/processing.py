"""A working processor for a Qwen-VL checkpoint, with or without torchvision: :func:`load_processor`.

    >>> import arr_coc
    >>> processor = arr_coc.load_processor("Qwen/Qwen2.5-VL-3B-Instruct")    # or a local folder
    >>> processor.arr_coc_kind                                                # "transformers" or "pil"

Why: ``AutoProcessor.from_pretrained`` on a Qwen-VL checkpoint also builds the VIDEO processor, which needs
``torchvision``; the CPU torch wheel has no matching torchvision on PyPI (the PyPI torchvision wheel is built for
the CUDA torch and fails to load beside the CPU one). Images need none of it: when ``AutoProcessor`` cannot be
built, :func:`load_processor` assembles :class:`PilQwenVLProcessor` from the checkpoint's tokenizer, its PIL image
processor (``Qwen2VLImageProcessorPil``) and its chat template. It does for images what the Qwen-VL processors do:
expand each ``<|image_pad|>`` to one placeholder per visual token, and returns the same tensors. It has no video
support.

Which one was built is on the processor itself: ``processor.arr_coc_kind`` is ``"transformers"`` (the real
``AutoProcessor``) or ``"pil"`` (the stand-in), and ``processor.arr_coc_reason`` says why the real one could not be
built (``None`` when it was); the same is logged on the ``arr_coc`` logger at INFO level.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import os
from pathlib import Path
from typing import Any

IMAGE_PAD = "<|image_pad|>"
NO_TORCHVISION = "torchvision is not installed (transformers' processor needs it for videos; images need none of it)"
logger = logging.getLogger("arr_coc")


class PilQwenVLProcessor:
    """Images-only stand-in for a Qwen-VL processor, used when ``AutoProcessor`` cannot be built (no torchvision).

    Same outputs as ``Qwen2_5_VLProcessor`` / ``Qwen3VLProcessor`` for text + images: ``input_ids``,
    ``attention_mask``, ``pixel_values``, ``image_grid_thw``, ``mm_token_type_ids``.

    Args:
        tokenizer: the checkpoint's tokenizer (its vocabulary must hold ``<|image_pad|>``).
        image_processor: a ``Qwen2VLImageProcessorPil`` (or any image processor returning ``pixel_values`` and
            ``image_grid_thw``).
        chat_template: Jinja chat template; default the tokenizer's.
        image_token: the image placeholder's text; default the tokenizer's ``image_token``, else ``<|image_pad|>``
            (:func:`load_processor` passes the one the checkpoint's ``config.image_token_id`` names).

    Attributes:
        arr_coc_kind: ``"pil"``.
        arr_coc_reason: why the real processor was not used (set by :func:`load_processor`), else ``None``.
    """

    arr_coc_kind = "pil"

    def __init__(
        self, tokenizer: Any, image_processor: Any, chat_template: str | None = None, image_token: str | None = None
    ) -> None:
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.chat_template = chat_template or getattr(tokenizer, "chat_template", None)
        self.image_token = image_token or getattr(tokenizer, "image_token", None) or IMAGE_PAD
        self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
        self.arr_coc_reason: str | None = None
        if not isinstance(self.image_token_id, int) or self.image_token_id == getattr(tokenizer, "unk_token_id", None):
            raise ValueError(f"the tokenizer has no {self.image_token} token; is this a Qwen-VL checkpoint?")

    def __repr__(self) -> str:
        return f"PilQwenVLProcessor(tokenizer={type(self.tokenizer).__name__}, image_processor={self.image_processor})"

    def apply_chat_template(self, messages: list[dict[str, Any]], **kwargs: Any) -> str:
        """The prompt text of ``messages`` from the chat template (``add_generation_prompt`` defaults to True).

        Args:
            messages: ``[{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": ...}]}, ...]``.
            **kwargs: passed to the tokenizer's ``apply_chat_template`` (``tokenize`` is always False).
        """
        if self.chat_template is None:
            raise ValueError("the checkpoint has no chat template (chat_template.jinja / chat_template.json)")
        kwargs.setdefault("add_generation_prompt", True)
        kwargs["tokenize"] = False
        return self.tokenizer.apply_chat_template(messages, chat_template=self.chat_template, **kwargs)

    def __call__(
        self,
        text: str | list[str],
        images: Any = None,
        size: dict[str, int] | None = None,
        return_tensors: str = "pt",
        **kwargs: Any,
    ) -> Any:
        """Tokenize ``text`` with each ``<|image_pad|>`` expanded to its image's visual tokens.

        Args:
            text: one prompt, or one prompt per sample.
            images: the images in prompt order (a PIL image, an array, or a list of them; nested lists per sample
                are flattened); ``None`` for text only.
            size: ``{"shortest_edge": min_pixels, "longest_edge": max_pixels}`` for the resize.
            return_tensors: ``"pt"``.
            **kwargs: passed to the tokenizer (e.g. ``padding_side``).

        Returns:
            A ``BatchFeature`` with ``input_ids`` (B, L), ``attention_mask`` (B, L), ``pixel_values``
            (patches, 3 * 2 * patch**2), ``image_grid_thw`` (num_images, 3) and ``mm_token_type_ids`` (B, L).

        Raises:
            ValueError: when the prompts hold a different number of ``<|image_pad|>`` than images are given.
        """
        from transformers import BatchFeature

        if "videos" in kwargs and kwargs.pop("videos") is not None:
            raise ValueError("PilQwenVLProcessor handles images only; videos need the real processor (torchvision)")
        prompts = [text] if isinstance(text, str) else list(text)
        flat: list[Any] = []
        for item in images if isinstance(images, (list, tuple)) else ([] if images is None else [images]):
            flat.extend(item if isinstance(item, (list, tuple)) else [item])
        image_inputs: dict[str, Any] = {}
        grids: list[list[int]] = []
        if flat:
            extra = {"size": size} if size is not None else {}
            image_inputs = dict(self.image_processor(images=flat, return_tensors=return_tensors, **extra))
            grids = image_inputs["image_grid_thw"].tolist()  # (num_images, 3)
        merge = int(getattr(self.image_processor, "merge_size", 2))
        marker = "\0arr-coc-image\0"
        expanded, i = [], 0
        for prompt in prompts:
            while self.image_token in prompt:
                if i >= len(grids):
                    raise ValueError(f"the prompts hold more {self.image_token} than the {len(grids)} images given")
                prompt = prompt.replace(self.image_token, marker * (math.prod(grids[i]) // merge**2), 1)
                i += 1
            expanded.append(prompt.replace(marker, self.image_token))
        if i != len(grids):
            raise ValueError(f"{len(grids)} images were given but the prompts hold {i} {self.image_token}")
        kwargs.setdefault("padding", True)
        text_inputs = self.tokenizer(expanded, return_tensors=return_tensors, **kwargs)
        ids = text_inputs["input_ids"]  # (B, L)
        mm_types = (ids == self.image_token_id).int()  # (B, L) 1 on image placeholders
        return BatchFeature({**text_inputs, **image_inputs, "mm_token_type_ids": mm_types})

    def batch_decode(self, *args: Any, **kwargs: Any) -> list[str]:
        """The tokenizer's ``batch_decode``."""
        return self.tokenizer.batch_decode(*args, **kwargs)

    def decode(self, *args: Any, **kwargs: Any) -> str:
        """The tokenizer's ``decode``."""
        return self.tokenizer.decode(*args, **kwargs)


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


def _config_image_token(model_id: str, tokenizer: Any) -> str | None:
    """The image placeholder the checkpoint's ``config.json`` names (``image_token_id``), as the tokenizer spells it;
    None when the config has none or the tokenizer does not know it."""
    from transformers.utils import cached_file

    try:
        path = cached_file(model_id, "config.json", _raise_exceptions_for_missing_entries=False)
        token_id = json.loads(Path(path).read_text(encoding="utf-8")).get("image_token_id") if path else None
    except (OSError, ValueError):
        return None
    token = tokenizer.convert_ids_to_tokens(token_id) if isinstance(token_id, int) else None
    return token if isinstance(token, str) else None


def load_processor(model_id_or_path: str | os.PathLike) -> Any:
    """A working processor for a Qwen-VL checkpoint: the real ``AutoProcessor`` if it can be built, else the stand-in.

    Args:
        model_id_or_path: a local checkpoint folder (e.g. one written by :func:`arr_coc.testing.tiny_checkpoint`)
            or a Hugging Face hub id (looked up as ``from_pretrained`` does).

    Returns:
        ``AutoProcessor.from_pretrained(model_id_or_path)`` when it loads (typically: torchvision is installed), or a
        :class:`PilQwenVLProcessor` built from the checkpoint's tokenizer, PIL image processor and chat template
        (InternVL, LLaVA-OneVision, Mistral3, Gemma 3: their own,
        :func:`arr_coc.family_processors.load_family_processor`).
        Either way ``processor.arr_coc_kind`` says which (``"transformers"`` or ``"pil"``) and
        ``processor.arr_coc_reason`` why the real one was not used (``None`` if it was).

    Raises:
        OSError: when the checkpoint cannot be found.
        ValueError: when the checkpoint's tokenizer has no ``<|image_pad|>`` token.
    """
    from transformers import AutoImageProcessor, AutoProcessor, AutoTokenizer

    model_id = os.fspath(model_id_or_path)
    if importlib.util.find_spec("torchvision") is None:
        # the usual case on the CPU wheel, not an error: AutoProcessor would fail on the video processor's
        # torchvision import (an ImportError every `ask` printed), so it is not tried
        reason = NO_TORCHVISION
    else:
        try:
            processor = AutoProcessor.from_pretrained(model_id)
        except (ImportError, AttributeError, ValueError, TypeError) as err:
            first = " ".join(str(err).split()).split(". ")[0]  # the message's first sentence, on one line
            reason = f"AutoProcessor could not be built ({type(err).__name__}{': ' + first if first else ''})"
        else:
            processor.arr_coc_kind, processor.arr_coc_reason = "transformers", None
            logger.info("processor for %s: transformers %s", model_id, type(processor).__name__)
            return processor
    from .family_processors import checkpoint_family

    family = checkpoint_family(model_id)
    tiny = importlib.import_module(family.tiny) if family is not None and family.tiny else None
    if tiny is not None and hasattr(tiny, "load_processor"):  # their own processors: MiniCPM-V 4.7, the tiled ones
        processor = tiny.load_processor(model_id, family, reason)
        logger.info("processor for %s: %s (images only); %s", model_id, type(processor).__name__, reason)
        return processor
    tokenizer = AutoTokenizer.from_pretrained(model_id)
    image_processor = AutoImageProcessor.from_pretrained(model_id)
    processor = PilQwenVLProcessor(
        tokenizer, image_processor, _chat_template_file(model_id), _config_image_token(model_id, tokenizer)
    )
    processor.arr_coc_reason = reason
    logger.info("processor for %s: PilQwenVLProcessor (images only); %s", model_id, processor.arr_coc_reason)
    return processor


def describe(processor: Any) -> str:
    """One line saying which processor this is and, for the stand-in, why (for ``arr-coc ask``)."""
    if getattr(processor, "arr_coc_kind", None) == "pil":
        why = getattr(processor, "arr_coc_reason", None)
        name = type(processor).__name__
        own = "transformers' class without its video processor" if "Images" in name else "the project's own"
        return f"{name} (images only; {own})" + (f": {why}" if why else "")
    return f"{type(processor).__name__} (transformers)"
