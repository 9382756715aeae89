"""Tiny InternVL and LLaVA-OneVision models and processor-style inputs, for the family tester and the tiled tests.

Both from ``transformers``' own config classes, random weights (seeded), a Qwen2 language model of the tester's
sizes (:mod:`arr_coc.family_testing`'s 320-id vocabulary and ids). InternVL: 112-px tiles of 14-px patches, pixel
shuffle 0.5, so 16 tokens a tile. LLaVA-OneVision: a SigLIP tower of 56-px tiles (4 x 4 tokens), small
``image_grid_pinpoints`` (1 x 1 to 3 x 3 tiles). Prompts are laid out as the processors lay them out:
``<img>`` + 16 ``<IMG_CONTEXT>`` a tile + ``</img>`` (InternVL), and the layout's count of ``<image>`` (OneVision:
base view, anyres rows with their newlines, :func:`arr_coc.tiling.onevision_tiles_for`).
"""

from __future__ import annotations

from typing import Any

import torch

from arr_coc.tiling import OneVisionTiles, onevision_tiles_for

VOCAB, PAD, BOS, EOS = 320, 0, 1, 2
IMAGE, VIDEO, V_START, V_END = 300, 301, 302, 303
IM_START, IM_END, NEWLINE, USER, ASSISTANT = 304, 305, 306, 307, 308
TEXT = dict(
    model_type="qwen2", vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024, pad_token_id=PAD, bos_token_id=BOS,
    eos_token_id=EOS, initializer_range=0.1,
)  # fmt: skip
INTERNVL_TILE, INTERNVL_TOKENS = 112, 16  # px a tile, tokens a tile
OV_TILE, OV_SIDE = 56, 4  # px a tile, tokens a tile side
OV_PINPOINTS = [[OV_TILE * r, OV_TILE * c] for r in range(1, 4) for c in range(1, 4)]


def internvl() -> Any:
    """(InternVLForConditionalGeneration, a tiny InternVLConfig)."""
    import transformers as tf

    vision = dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, image_size=INTERNVL_TILE,
        patch_size=14,
    )  # fmt: skip
    config = tf.InternVLConfig(
        vision_config=vision, text_config=TEXT, image_token_id=IMAGE, image_seq_length=INTERNVL_TOKENS,
        downsample_ratio=0.5,
    )  # fmt: skip
    return tf.InternVLForConditionalGeneration, config


def onevision(aspect_ratio: str = "anyres_max_9") -> Any:
    """(LlavaOnevisionForConditionalGeneration, a tiny LlavaOnevisionConfig)."""
    import transformers as tf

    vision = dict(
        model_type="siglip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, image_size=OV_TILE, patch_size=14,
    )  # fmt: skip
    config = tf.LlavaOnevisionConfig(
        vision_config=vision, text_config=TEXT, image_token_id=IMAGE, video_token_id=VIDEO,
        image_grid_pinpoints=OV_PINPOINTS, vision_aspect_ratio=aspect_ratio, vision_feature_layer=-1,
        vision_feature_select_strategy="full",
    )  # fmt: skip
    return tf.LlavaOnevisionForConditionalGeneration, config


def build(which: Any, attn: str = "sdpa") -> Any:
    """A tiny model of ``which()`` (seeded), eval mode, never stopping early."""
    cls, config = which()
    config._attn_implementation = attn
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = cls(config).eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = PAD
    return model


def _wrap(parts: list[list[int]]) -> list[int]:
    body = [i for p in parts for i in p]
    return [IM_START, USER, NEWLINE, *body, IM_END, IM_START, ASSISTANT, NEWLINE]


def pad_batch(rows: list[list[int]]) -> dict[str, torch.Tensor]:
    """Left-padded ``input_ids`` and ``attention_mask`` of id lists."""
    length = max(len(r) for r in rows)
    ids = torch.full((len(rows), length), PAD, dtype=torch.long)
    mask = torch.zeros(len(rows), length, dtype=torch.long)
    for b, r in enumerate(rows):
        ids[b, length - len(r) :] = torch.tensor(r)
        mask[b, length - len(r) :] = 1
    return {"input_ids": ids, "attention_mask": mask}


def internvl_inputs(samples: list[list[int]], seed: int = 0) -> dict[str, torch.Tensor]:
    """InternVL processor-style inputs: per sample, the tile count of each of its images (a question around them)."""
    gen = torch.Generator().manual_seed(seed)
    rows, pixels = [], []
    for tiles in samples:
        parts = [[10, 11]]
        for n in tiles:
            parts.append([V_START] + [IMAGE] * (INTERNVL_TOKENS * n) + [V_END])
            pixels.append(torch.randn(n, 3, INTERNVL_TILE, INTERNVL_TILE, generator=gen))
        rows.append(_wrap([*parts, [12, 13, 14]]))
    return {**pad_batch(rows), "pixel_values": torch.cat(pixels)}


def onevision_layout(height: int, width: int, aspect_ratio: str = "anyres_max_9") -> OneVisionTiles:
    return onevision_tiles_for(height, width, OV_PINPOINTS, OV_TILE, OV_SIDE, aspect_ratio)


def onevision_inputs(
    samples: list[list[tuple[int, int]]], seed: int = 0, aspect_ratio: str = "anyres_max_9"
) -> dict[str, torch.Tensor]:
    """LLaVA-OneVision processor-style inputs: per sample, the (height, width) of each of its images; pixel_values
    (num_images, max_tiles, 3, 56, 56) zero-padded on the tiles, ``image_sizes``, ``batch_num_images``."""
    gen = torch.Generator().manual_seed(seed)
    rows, pixels, sizes, per_sample = [], [], [], []
    for images in samples:
        parts = [[10, 11]]
        for h, w in images:
            lay = onevision_tiles_for(h, w, OV_PINPOINTS, OV_TILE, OV_SIDE, aspect_ratio, patched=len(images) == 1)
            parts.append([IMAGE] * lay.n_tokens)
            pixels.append(torch.randn(1 + lay.rows * lay.cols, 3, OV_TILE, OV_TILE, generator=gen))
            sizes.append([h, w])
        per_sample.append(len(images))
        rows.append(_wrap([*parts, [12, 13, 14]]))
    most = max(p.shape[0] for p in pixels)
    px = torch.stack([torch.cat([p, p.new_zeros(most - p.shape[0], *p.shape[1:])]) for p in pixels])
    return {**pad_batch(rows), "pixel_values": px, "image_sizes": torch.tensor(sizes),
            "batch_num_images": torch.tensor(per_sample)}  # fmt: skip


__all__ = ["build", "internvl", "internvl_inputs", "onevision", "onevision_inputs", "onevision_layout", "pad_batch"]
