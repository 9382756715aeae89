"""How the family tester (:mod:`arr_coc.family_testing`) lays out a family's prompts and builds its hand references.

One :class:`PromptLayout` a family, named by its :class:`~arr_coc.family_testing.TinyFamily`: the ids an image takes
in the prompt (placeholders and the family's structure tokens), the pixels and the other inputs its processor returns,
the model's own features of every image, the positions a pruned forward must have, and the language model run by hand
on the kept tokens. The default is the Qwen line's (M-RoPE from ``get_rope_index``, ``<|vision_start|>`` placeholders
``<|vision_end|>``, patch rows and ``image_grid_thw``); :class:`LinearPrompt` is a 1-D family's (LLaVA's layout: one
placeholder a visual token, ``pixel_values`` of shape (n, 3, H, W), positions 0, 1, ... over the real tokens, kept
tokens at their original ids or renumbered, :data:`~arr_coc.integrations.contract.POSITION_CHOICES`).

Images are described to a layout as the Qwen rows describe them, a (t, h, w) grid of PATCHES merged 2 x 2 into visual
tokens; a family whose token count is fixed (Gemma 3) maps every grid to its own.

Nothing here imports ``arr_coc.integrations``: a compressed model (``cm``) is passed in and only its recorded
``last_inputs`` / ``last_allocation`` are read.
"""

from __future__ import annotations

from typing import Any

import torch

VOCAB = 320
PAD, BOS, EOS = 0, 1, 2
IMAGE, VIDEO, V_START, V_END = 300, 301, 302, 303
IM_START, IM_END, NEWLINE, USER, ASSISTANT = 304, 305, 306, 307, 308
IMG_BREAK, IMG_END = 309, 310  # Pixtral's row break and image end

Grid = tuple[int, int, int]
Image = tuple[Grid, torch.Tensor]  # (grid, pixels) of one image, as a layout made it


def patch_dim(model: Any) -> int:
    vc = model.config.vision_config
    tps = vc.temporal_patch_size if isinstance(vc.temporal_patch_size, int) else vc.temporal_patch_size[0]
    return 3 * int(tps) * int(vc.patch_size) ** 2


class PromptLayout:
    """The Qwen line's prompts and references (what the family tester did before it knew other families)."""

    per_token: tuple[str, ...] = ("mm_token_type_ids",)  # per-token inputs; decoded tokens get 0
    rows: int = 3  # position rows
    extra_shapes: tuple[tuple[int, int], ...] = ()  # page sizes check_allocate_grid tries besides its three

    def part(self, model: Any, part: tuple, gen: torch.Generator) -> tuple[list[int], list[Image]]:
        """The ids of one ``("image", grid, ...)`` part of a prompt and its images (one, but for MiniCPM's slices)."""
        ids, image = self.image(model, part[1], gen)
        return ids, [image]

    def image(self, model: Any, grid: Grid, gen: torch.Generator) -> tuple[list[int], Image]:
        """The ids of one image in the prompt, and its (grid, pixels)."""
        t, h, w = grid
        pixels = torch.randn(t * h * w, patch_dim(model), generator=gen)
        return [V_START] + [IMAGE] * (t * h * w // 4) + [V_END], (grid, pixels)

    def visual_inputs(self, model: Any, input_ids: torch.Tensor, images: list[Image]) -> dict[str, torch.Tensor]:
        """The processor's other inputs for a batch of ``input_ids`` holding ``images`` (in order)."""
        out = {"mm_token_type_ids": (input_ids == IMAGE).int()}
        if images:
            out["pixel_values"] = torch.cat([p for _, p in images])
            out["image_grid_thw"] = torch.tensor([g for g, _ in images])
        return out

    def features(self, model: Any, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        """Per image, the model's own full-tower features (N, D)."""
        enc = model.model.get_image_features(inputs["pixel_values"], inputs["image_grid_thw"], return_dict=True)
        return list(enc.pooler_output)

    def positions(self, model: Any, inputs: dict[str, torch.Tensor], cm: Any) -> torch.Tensor:
        """(P, B, L') the positions of ``cm``'s last pruned call: the model's ``get_rope_index`` of the FULL prompt
        gathered at the kept columns."""
        full_pos, _ = model.model.get_rope_index(
            inputs["input_ids"], mm_token_type_ids=inputs["mm_token_type_ids"],
            image_grid_thw=inputs.get("image_grid_thw"), attention_mask=inputs["attention_mask"],
        )  # fmt: skip
        cols = cm.last_inputs.index_map.clamp_min(0)  # (B, L'): original column of each kept column
        return torch.stack([full_pos[r].gather(1, cols) for r in range(full_pos.shape[0])])  # (3, B, L')

    def logits(self, model: Any, embeds: torch.Tensor, pos: torch.Tensor, cm: Any) -> torch.Tensor:
        """The language model on the kept tokens' embeddings (the kept features in place), by hand (Qwen3-VL: the
        kept DeepStack rows where their tokens are)."""
        pruned = cm.last_inputs
        extra = {}
        deep = getattr(pruned.mm_encoder_outputs.get("image"), "deepstack_features", None)
        if deep:
            extra = {
                "visual_pos_masks": pruned.input_ids == IMAGE,
                "deepstack_visual_embeds": [torch.cat(level) for level in deep],
            }
        lm = model.model.language_model
        hidden = lm(inputs_embeds=embeds, attention_mask=pruned.attention_mask, position_ids=pos, **extra)
        return model.lm_head(hidden.last_hidden_state)

    def pruned(self, model: Any, grid: Grid, fraction: float) -> tuple[Grid, int]:
        """(the allocation's grid, tokens kept) of an image of ``grid`` patches at a ``fraction`` budget: the merged
        grid, ``fraction`` of its tokens (a tiled family's: its own tiles and structure tokens)."""
        t, h, w = grid
        merged = (t, h // 2, w // 2)
        return merged, round(fraction * t * (h // 2) * (w // 2))

    def token_grid(self, processor: Any, image: Any, merge: int) -> tuple[int, int]:
        """(rows, columns) of visual tokens the family's processor makes of a PIL ``image``."""
        _, gh, gw = (int(v) for v in processor(images=image, return_tensors="pt")["image_grid_thw"][0])
        return gh // merge, gw // merge


QWEN = PromptLayout()


def linear_reference_positions(inputs: dict[str, torch.Tensor], cm: Any) -> torch.Tensor:
    """(1, B, L') 1-D positions a pruned call must have: ``cm.options.positions`` ``"original"``: the full prompt's
    0, 1, ... over its real tokens (what ``generate`` gives a left-padded prompt) gathered at the kept columns;
    ``"renumber"``: 0, 1, ... over the real tokens of the pruned prompt."""
    pruned = cm.last_inputs
    if cm.options.positions == "renumber":
        mask = pruned.attention_mask
        return ((mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)).unsqueeze(0)
    mask = inputs["attention_mask"]
    full = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)  # (B, L)
    pos = full.gather(1, pruned.index_map.clamp_min(0))  # (B, L')
    return pos.masked_fill(pruned.index_map < 0, 0).unsqueeze(0)


class LinearPrompt(PromptLayout):
    """A 1-D family's prompts (LLaVA's layout): ``(h/2) * (w/2)`` placeholders an image and nothing else,
    ``pixel_values`` (n, 3, 14 h, 14 w) with the tower's patch side, ``get_image_features(pixel_values)`` split per
    image, 1-D positions, the whole model run on ``inputs_embeds`` for the reference."""

    per_token: tuple[str, ...] = ()
    rows = 1
    merge = 2  # patches a token side in the tester's grids

    def side(self, model: Any) -> int:
        return int(model.config.vision_config.patch_size)

    def tokens(self, grid: Grid) -> list[int]:
        """The ids of an image of (t, h, w) patches (raster placeholders)."""
        _, h, w = grid
        return [IMAGE] * ((h // self.merge) * (w // self.merge))

    def image(self, model: Any, grid: Grid, gen: torch.Generator) -> tuple[list[int], Image]:
        _, h, w = grid
        s = self.side(model)
        pixels = torch.rand(1, 3, h * s, w * s, generator=gen) * 2 - 1
        return self.tokens(grid), (grid, pixels)

    def visual_inputs(self, model: Any, input_ids: torch.Tensor, images: list[Image]) -> dict[str, torch.Tensor]:
        return {"pixel_values": torch.cat([p for _, p in images])} if images else {}

    def features(self, model: Any, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        return list(model.model.get_image_features(inputs["pixel_values"], return_dict=True).pooler_output)

    def positions(self, model: Any, inputs: dict[str, torch.Tensor], cm: Any) -> torch.Tensor:
        return linear_reference_positions(inputs, cm)

    def extra(self, model: Any, cm: Any) -> dict[str, Any]:
        """The family's other inputs to the reference forward (none)."""
        return {}

    def logits(self, model: Any, embeds: torch.Tensor, pos: torch.Tensor, cm: Any) -> torch.Tensor:
        pruned = cm.last_inputs
        mask = pruned.attention_mask
        if mask is None:
            mask = torch.ones(pruned.input_ids.shape, dtype=torch.long)
        return model(inputs_embeds=embeds, attention_mask=mask, position_ids=pos[0], **self.extra(model, cm)).logits


LINEAR = LinearPrompt()


# ----- Mistral3 (Pixtral vision) ------------------------------------------------------------------------------------
MISTRAL_BREAK, MISTRAL_END = 12, 13  # [IMG_BREAK], [IMG_END]: the family row's ids (the tiny vocabulary holds them)


def mistral3() -> Any:
    """A tiny ``Mistral3ForConditionalGeneration``: a 2-layer Pixtral tower (14-pixel patches, 2 x 2 merge) and a
    2-layer Mistral language model; the image placeholder is the tester's :data:`IMAGE`."""
    import transformers as tf

    text = dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=512, pad_token_id=PAD, bos_token_id=BOS,
        eos_token_id=EOS, initializer_range=0.1, sliding_window=None, model_type="mistral",
    )  # fmt: skip
    vision = dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, head_dim=8, image_size=448,
        patch_size=14, model_type="pixtral",
    )  # fmt: skip
    config = tf.Mistral3Config(
        text_config=text, vision_config=vision, image_token_id=IMAGE, spatial_merge_size=2, vision_feature_layer=-1
    )
    return tf.Mistral3ForConditionalGeneration, config


class Mistral3Prompt(LinearPrompt):
    """Pixtral's layout: a row of ``w/2`` ``[IMG]`` then ``[IMG_BREAK]``, ``[IMG_END]`` for the last row's break;
    ``pixel_values`` padded to the batch's largest image, ``image_sizes`` each one's real size."""

    def tokens(self, grid: Grid) -> list[int]:
        _, h, w = grid
        rows, cols = h // self.merge, w // self.merge
        ids = ([IMAGE] * cols + [MISTRAL_BREAK]) * rows
        ids[-1] = MISTRAL_END
        return ids

    def visual_inputs(self, model: Any, input_ids: torch.Tensor, images: list[Image]) -> dict[str, torch.Tensor]:
        if not images:
            return {}
        height = max(p.shape[2] for _, p in images)
        width = max(p.shape[3] for _, p in images)
        px = torch.zeros(len(images), 3, height, width)
        for i, (_, p) in enumerate(images):
            px[i, :, : p.shape[2], : p.shape[3]] = p[0]
        return {"pixel_values": px, "image_sizes": torch.tensor([[p.shape[2], p.shape[3]] for _, p in images])}

    def features(self, model: Any, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        layer = model.config.vision_feature_layer
        enc = model.model.get_image_features(inputs["pixel_values"], inputs["image_sizes"], vision_feature_layer=layer)
        return list(enc.pooler_output)

    def token_grid(self, processor: Any, image: Any, merge: int) -> tuple[int, int]:
        h, w = (int(v) for v in processor(images=image, return_tensors="pt")["image_sizes"][0])
        ps = processor.patch_size
        cell = int(ps if isinstance(ps, int) else getattr(ps, "height", None) or ps["height"])
        return h // cell, w // cell


def pixtral_image_processor(patch: int, min_pixels: int, max_pixels: int) -> Any:
    """Pixtral's image processor as ``PixtralProcessor`` calls it (``patch_size * spatial_merge_size``-pixel cells),
    its ``longest_edge`` the side of ``max_pixels``."""
    import math

    from transformers import PixtralImageProcessorPil

    edge = math.isqrt(max_pixels)
    return PixtralImageProcessorPil(size={"longest_edge": edge}, patch_size={"height": 2 * patch, "width": 2 * patch})


MISTRAL3 = Mistral3Prompt()


# ----- Gemma 3 ------------------------------------------------------------------------------------------------------
def gemma3() -> Any:
    """A tiny ``Gemma3ForConditionalGeneration``: a 2-layer SigLIP tower on 56 x 56 images (7-pixel patches, 8 x 8
    of them pooled 2 x 2 to 16 tokens: ``mm_tokens_per_image`` 16), a 2-layer Gemma 3 language model (one sliding,
    one full attention layer); the image markers are the tester's :data:`V_START` / :data:`V_END`."""
    import transformers as tf

    text = dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=512, pad_token_id=PAD, bos_token_id=BOS,
        eos_token_id=EOS, initializer_range=0.1, sliding_window=512, model_type="gemma3_text",
        layer_types=["sliding_attention", "full_attention"],
    )  # fmt: skip
    vision = dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, image_size=56, patch_size=7,
        model_type="siglip_vision_model",
    )  # fmt: skip
    config = tf.Gemma3Config(
        text_config=text, vision_config=vision, mm_tokens_per_image=16, image_token_index=IMAGE,
        boi_token_index=V_START, eoi_token_index=V_END,
    )  # fmt: skip
    return tf.Gemma3ForConditionalGeneration, config


class Gemma3Prompt(LinearPrompt):
    """Gemma 3's layout: ``<start_of_image>`` + a fixed 16 placeholders (4 x 4) + ``<end_of_image>`` whatever the
    tester's grid (every image is resized to the tower's square), ``token_type_ids`` 1 on the placeholders; the
    reference forward gets the pruned ``token_type_ids`` (the model's own bidirectional mask over them)."""

    per_token: tuple[str, ...] = ("token_type_ids",)

    def tokens(self, grid: Grid) -> list[int]:
        return [V_START] + [IMAGE] * 16 + [V_END]

    def image(self, model: Any, grid: Grid, gen: torch.Generator) -> tuple[list[int], Image]:
        side = int(model.config.vision_config.image_size)
        return self.tokens(grid), ((1, 8, 8), torch.rand(1, 3, side, side, generator=gen) * 2 - 1)

    def visual_inputs(self, model: Any, input_ids: torch.Tensor, images: list[Image]) -> dict[str, torch.Tensor]:
        out = {"token_type_ids": (input_ids == IMAGE).long()}
        if images:
            out["pixel_values"] = torch.cat([p for _, p in images])
        return out

    def extra(self, model: Any, cm: Any) -> dict[str, Any]:
        return {"token_type_ids": (cm.last_inputs.input_ids == IMAGE).long()}

    def token_grid(self, processor: Any, image: Any, merge: int) -> tuple[int, int]:
        _, _, h, w = processor(images=image, return_tensors="pt")["pixel_values"].shape
        cell = 14 * merge  # the published tower's 14-pixel patches, pooled merge x merge
        return h // cell, w // cell


def gemma3_image_processor(patch: int, min_pixels: int, max_pixels: int) -> Any:
    """Gemma 3's image processor with its published settings (896 x 896, no pan and scan); the bounds are not used."""
    from transformers import Gemma3ImageProcessorPil

    return Gemma3ImageProcessorPil(size={"height": 896, "width": 896}, do_pan_and_scan=False)


GEMMA3 = Gemma3Prompt()


# ----- MiniCPM-V 4.7 ------------------------------------------------------------------------------------------------
SLICE_START, SLICE_END = 309, 310  # MiniCPM-V's <slice> / </slice> (its own tiny vocabulary)


def minicpmv4_7(qwen3_5_text: dict[str, Any]) -> Any:
    """A tiny MiniCPM-V 4.7: a 2-layer SigLIP tower with the window merger after layer 0 ("16x": 4x4 patches a
    token), Qwen3.5's hybrid language model (the tester's tiny ``qwen3_5_text``); ``<image>`` / ``</image>`` are
    V_START / V_END, "\n" is NEWLINE."""
    import transformers as tf

    vision = dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, patch_size=14, image_size=112,
    )  # fmt: skip
    ids = dict(
        image_token_id=IMAGE, video_token_id=VIDEO, image_start_id=V_START, image_end_id=V_END,
        slice_start_id=SLICE_START, slice_end_id=SLICE_END, newline_id=NEWLINE,
    )  # fmt: skip
    text = dict(qwen3_5_text, model_type="qwen3_5_text")  # 5.19 reads the text config's type from the dict
    config = tf.MiniCPMV4_7Config(text_config=text, vision_config=vision, insert_layer_id=0, **ids)
    return tf.MiniCPMV4_7ForConditionalGeneration, config


class CanvasLayout(PromptLayout):
    """Prompts, references and grids as MiniCPM-V lays them out (a thumbnail and its slices, NaViT-packed).

    An ``("image", (t, h, w))`` part is a thumbnail of the tokens a merge-2 family would give it (h/2 x w/2 tokens:
    h/2*m x w/2*m patches, m the model's merge size), so every check's token counts hold unchanged; an optional
    third element ``(rows, cols)`` adds that many slices of the same size after it (``<slice>`` ... ``</slice>``,
    rows joined by ``"\n"``). Positions: the model's canvas M-RoPE (``get_rope_index`` with ``target_sizes``)."""

    extra_shapes = ((300, 200),)  # a page small enough to get no slices

    def part(self, model: Any, part: tuple, gen: torch.Generator) -> tuple[list[int], list[Image]]:
        from arr_coc.families import load_object, match_model

        found = match_model(model)
        assert found is not None
        _, merge, _ = load_object(found[1].adapter).geometry(model)  # 4, or 2 in the "4x" downsample mode
        p = int(model.config.vision_config.patch_size)
        _, (_, h, w), *rest = part
        hw = (h // 2 * merge, w // 2 * merge)
        n = (h // 2) * (w // 2)
        rows, cols = rest[0] if rest else (0, 0)
        ids = [V_START] + [IMAGE] * n + [V_END]
        for r in range(rows):
            ids += ([NEWLINE] if r else []) + ([SLICE_START] + [IMAGE] * n + [SLICE_END]) * cols
        crops = [(hw, torch.randn(3, p, hw[0] * hw[1] * p, generator=gen)) for _ in range(1 + rows * cols)]
        return ids, crops  # type: ignore[return-value]

    def visual_inputs(self, model: Any, input_ids: torch.Tensor, images: list[Image]) -> dict[str, torch.Tensor]:
        out = {"mm_token_type_ids": (input_ids == IMAGE).int()}
        if images:
            out["pixel_values"] = torch.cat([px for _, px in images], dim=-1).unsqueeze(0)
            out["target_sizes"] = torch.tensor([hw for hw, _ in images], dtype=torch.int32)
        return out

    def features(self, model: Any, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        enc = model.model.get_image_features(inputs["pixel_values"], inputs["target_sizes"], return_dict=True)
        return list(enc.pooler_output)

    def positions(self, model: Any, inputs: dict[str, torch.Tensor], cm: Any) -> torch.Tensor:
        full_pos = model.model.get_rope_index(
            inputs["input_ids"], mm_token_type_ids=inputs["mm_token_type_ids"], target_sizes=inputs["target_sizes"],
            attention_mask=inputs["attention_mask"],
        )[0]  # fmt: skip
        cols = cm.last_inputs.index_map.clamp_min(0)  # (B, L'): original column of each kept column
        return torch.stack([full_pos[r].gather(1, cols) for r in range(full_pos.shape[0])])  # (3, B, L')

    @staticmethod
    def token_grid(processor: Any, image: Any, merge: int) -> tuple[int, int]:  # type: ignore[override]
        """The processor's tokens of a page as one grid: its slices' canvas, or the thumbnail without slices."""
        out = processor(images=image, return_tensors="pt")
        sizes, (rows, cols) = out["target_sizes"], out["grids"][0]
        if rows == 0:
            return int(sizes[0][0]) // merge, int(sizes[0][1]) // merge
        return rows * int(sizes[1][0]) // merge, cols * int(sizes[1][1]) // merge


def minicpm_image_processor(patch: int, min_pixels: int, max_pixels: int) -> Any:
    """MiniCPM-V's image processor (its resize has no pixel bounds: a thumbnail of about 448 x 448, and slices)."""
    from transformers import MiniCPMV4_6ImageProcessorPil

    return MiniCPMV4_6ImageProcessorPil(patch_size=patch)


MINICPM = CanvasLayout()
