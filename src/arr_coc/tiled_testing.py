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

from arr_coc.family_layouts import (
    ASSISTANT,
    BOS,
    EOS,
    IM_END,
    IM_START,
    IMAGE,
    NEWLINE,
    PAD,
    USER,
    V_END,
    V_START,
    VIDEO,
    VOCAB,
    Grid,
    Image,
    LinearPrompt,
)
from arr_coc.tiling import OneVisionTiles, onevision_tiles_for

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


# ----- the family tester's prompt layouts (arr_coc.family_layouts) ----------------------------------------------------
def _runs(input_ids: torch.Tensor) -> list[int]:
    """Lengths of the runs of image placeholders, row-major (one run an InternVL image)."""
    out = []
    for row in input_ids.tolist():
        n = 0
        for i in [*row, -1]:
            if i == IMAGE:
                n += 1
            elif n:
                out.append(n)
                n = 0
    return out


class InternVLPrompt(LinearPrompt):
    """InternVL's prompts for the tester: an image of (t, h, w) patches is ``max(1, h * w / 64)`` tiles of 16 tokens
    (one tile for the tester's 8 x 8 image: a 4 x 4 grid), ``<img>`` + 16 placeholders a tile + ``</img>``."""

    @staticmethod
    def tiles(grid: Grid) -> int:
        return max(1, grid[1] * grid[2] // 64)

    def image(self, model: Any, grid: Grid, gen: torch.Generator) -> tuple[list[int], Image]:
        n = self.tiles(grid)
        pixels = torch.rand(n, 3, INTERNVL_TILE, INTERNVL_TILE, generator=gen) * 2 - 1
        return [V_START] + [IMAGE] * (INTERNVL_TOKENS * n) + [V_END], (grid, pixels)

    def features(self, model: Any, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        flat = model.model.get_image_features(inputs["pixel_values"], return_dict=True).pooler_output.flatten(0, 1)
        return list(flat.split(_runs(inputs["input_ids"])))

    def pruned(self, model: Any, grid: Grid, fraction: float) -> tuple[Grid, int]:
        n = self.tiles(grid)
        return (n, 4, 4), round(fraction * n * INTERNVL_TOKENS)

    def token_grid(self, processor: Any, image: Any, merge: int) -> tuple[int, int]:
        """The published processor's tiles (GotOcr2ImageProcessor, 448 px, 1 to 12): (tiles * 16, 16)."""
        from transformers import GotOcr2ImageProcessor

        proc = GotOcr2ImageProcessor(crop_to_patches=True, size={"height": 448, "width": 448})
        n = proc.get_number_of_image_patches(image.height, image.width, {"crop_to_patches": True, "max_patches": 12})
        return n * 16, 16


class OneVisionPrompt(LinearPrompt):
    """LLaVA-OneVision's prompts for the tester: an image of (t, h, w) patches is a page of (14 h, 14 w) px (the
    tester's 8 x 8 image: 112 px, 2 x 2 tiles: 16 base tokens + 8 rows of 8 cells and a newline), as many
    placeholders as its layout, ``pixel_values`` (n, tiles, 3, 56, 56) zero-padded, ``image_sizes``."""

    @staticmethod
    def layout(grid: Grid) -> OneVisionTiles:
        return onevision_layout(grid[1] * 14, grid[2] * 14)

    def image(self, model: Any, grid: Grid, gen: torch.Generator) -> tuple[list[int], Image]:
        lay = self.layout(grid)
        pixels = torch.rand(1 + lay.rows * lay.cols, 3, OV_TILE, OV_TILE, generator=gen) * 2 - 1
        return [IMAGE] * lay.n_tokens, (grid, pixels)

    def visual_inputs(self, model: Any, input_ids: torch.Tensor, images: list[Image]) -> dict[str, torch.Tensor]:
        if not images:
            return {}
        most = max(p.shape[0] for _, p in images)
        px = torch.stack([torch.cat([p, p.new_zeros(most - p.shape[0], *p.shape[1:])]) for _, p in images])
        return {"pixel_values": px, "image_sizes": torch.tensor([[g[1] * 14, g[2] * 14] for g, _ in images])}

    def features(self, model: Any, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        enc = model.model.get_image_features(inputs["pixel_values"], inputs["image_sizes"], return_dict=True)
        return list(enc.pooler_output)

    def pruned(self, model: Any, grid: Grid, fraction: float) -> tuple[Grid, int]:
        from arr_coc.attending import TokenBudget

        lay = self.layout(grid)
        budget = TokenBudget.parse(fraction)
        h, w = lay.final
        kept = budget.resolve(lay.n_base) + budget.resolve(h * w) + len(lay.newline_tokens())  # newlines stay
        return (1, 1, lay.n_tokens), kept

    def token_grid(self, processor: Any, image: Any, merge: int) -> tuple[int, int]:
        """The published processor's count (``_get_number_of_features``, 729-token tiles): (1, n)."""
        from transformers.models.llava_onevision.processing_llava_onevision import LlavaOnevisionProcessor

        from arr_coc.tiling import ONEVISION_PINPOINTS

        proc = LlavaOnevisionProcessor.__new__(LlavaOnevisionProcessor)  # its counting arithmetic, no tokenizer
        proc.num_image_tokens, proc.vision_aspect_ratio = 729, "anyres_max_9"
        proc.image_processor = type("P", (), {"image_grid_pinpoints": ONEVISION_PINPOINTS})()
        return 1, proc._get_number_of_features(image.height, image.width, 384, 384)


INTERNVL = InternVLPrompt()
ONEVISION = OneVisionPrompt()


__all__ = [
    "INTERNVL",
    "ONEVISION",
    "build",
    "internvl",
    "internvl_inputs",
    "onevision",
    "onevision_inputs",
    "onevision_layout",
    "pad_batch",
]
