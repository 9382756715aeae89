"""MiniCPM-V 4.7 in vLLM with per-request pruning and foveation (the plugin's MiniCPM-V 4.7 seams).

vLLM serves a MiniCPM-V image as ONE item holding all its crops: the thumbnail, then each slice (``pixel_values``
(crops, 3, 14, L) NaViT-packed, ``tgt_sizes`` (crops, 2) patch grids), and ONE prompt replacement:
``<image_id>N</image_id><image>`` + the thumbnail's placeholders + ``</image>``, then per slice ``<slice>`` + its
placeholders + ``</slice>``, rows of slices joined by ``"\\n"``. As in ``compress``
(:mod:`arr_coc.integrations.minicpmv4_7`), each CROP is decided on its own pixels and the question of the image's
turn, with the request's budget per crop; an image's ``arr_coc_keep`` holds its crops' kept tokens as indices into
the image's crops' tokens one after another (the thumbnail's first), so no second field is needed: each crop's share
is read back with the crops' token counts (``tgt_sizes`` / merge**2).

* **Prompt**: each crop's run of placeholders is cut to its kept count; the markers, tags and newlines stay.
* **Positions**: the prompt is expanded back to its full layout (each crop's run at its full length), vLLM's own
  canvas M-RoPE (``MiniCPMV4_7ForConditionalGeneration.get_mrope_input_positions``) is computed on it and gathered at
  the kept tokens; text after the image continues from the full canvas, as in the unpruned prompt.
* **Encoder**: the tower runs on the kept tokens' patches only, as ``compress``'s foveation does: each crop's kept
  ``m x m`` patch blocks (m = 4 in ``"16x"``) laid side by side as a crop of ``m x m*k`` patches (the window merger's
  2x2 windows and the merger's 2x2 groups then see exactly the patches they see in the full crop), each patch with
  the position embedding of its place in the full crop (the embeddings' own ``get_position_ids`` of the full grid,
  gathered), attention among a crop's kept patches.

Images only (a request with a video is served as vLLM serves it); the config's ``downsample_mode`` only (a request
asking for another is refused when pruned). Pruned items are encoded eagerly (vLLM 0.32 has no encoder CUDA graph
for this family).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from vllm.model_executor.models.minicpmv import MiniCPMVDummyInputsBuilder
from vllm.model_executor.models.minicpmv4_7 import (
    MiniCPMV4_7ForConditionalGeneration,
    MiniCPMV4_7MultiModalProcessor,
    MiniCPMV4_7ProcessingInfo,
)
from vllm.multimodal import MULTIMODAL_REGISTRY

from arr_coc.integrations.minicpmv4_7 import blocked_patches
from arr_coc.integrations.qwen_patches import frames_from_patches

from .common import (
    COUNT_FIELD,
    KEEP_FIELD,
    KEY,
    ArrCocOptionError,
    Geometry,
    ProcessorMixin,
    decide_all,
    pruned_update,
    split_keeps,
)


def crop_keeps(keep: torch.Tensor, sizes: Sequence[Sequence[int]], merge: int) -> list[torch.Tensor]:
    """One image's kept indices over its crops' tokens (one after another) -> each crop's own kept indices.

    Args:
        keep (torch.LongTensor of shape (k,)): ascending indices into the image's crops' tokens.
        sizes: each crop's patch grid (h, w), in prompt order.
    """
    counts = [int(h) * int(w) // (merge * merge) for h, w in sizes]
    starts = np.cumsum([0, *counts]).tolist()
    return [keep[(keep >= a) & (keep < b)] - a for a, b in zip(starts, starts[1:], strict=False)]


class ArrCocMiniCPMV4_7Processor(ProcessorMixin, MiniCPMV4_7MultiModalProcessor):
    """MiniCPM-V 4.7's processor + the plugin's decision (per crop) and placeholder counts (per crop)."""

    def geometry(self) -> Geometry:
        """Patch 14, the merge of the config's ``downsample_mode`` (the adapter's), one frame a crop; the processor
        normalises, so its mean / std undo it."""
        cfg = self.info.get_hf_config()
        patch, merge, _ = self.arr_coc_adapter().geometry(SimpleNamespace(config=cfg))
        ip = self.info.get_image_processor()
        mean, std = tuple(float(v) for v in ip.image_mean), tuple(float(v) for v in ip.image_std)
        return Geometry(patch, merge, 1, mean, std, patch_frames=frames_from_patches)

    def _apply_hf_processor_main(self, mm_items: Any, hf_kwargs: Mapping[str, object]) -> Any:
        options = self.arr_coc_options(hf_kwargs)
        hf_only = {k: v for k, v in hf_kwargs.items() if k != KEY}
        processed = MiniCPMV4_7MultiModalProcessor._apply_hf_processor_main(self, mm_items, hf_only)
        if options is None or "pixel_values" not in processed:
            return processed
        mode = self._resolve_downsample_mode(hf_only, modality="image")
        if mode != self.info.get_hf_config().downsample_mode:
            raise ArrCocOptionError(
                f"arr_coc: prunes MiniCPM-V 4.7 in the config's downsample_mode "
                f"{self.info.get_hf_config().downsample_mode!r} only; this request asks for {mode!r}"
            )
        geometry = self.geometry()
        m = geometry.merge_size
        rows, grids, per_image = [], [], []
        for pixels, sizes in zip(processed["pixel_values"], processed["tgt_sizes"], strict=True):
            sizes = torch.as_tensor(sizes).reshape(-1, 2).tolist()
            per_image.append(len(sizes))
            for crop, (h, w) in zip(pixels, sizes, strict=True):  # crop (3, P, L padded)
                rows.append(blocked_patches(crop[:, :, : h * w * crop.shape[1]], h, w, m))  # (h*w, 3*P*P)
                grids.append([1, h, w])
        if options.query is None and options.queries is not None and len(options.queries) == len(per_image):
            options = replace(options, queries=[q for q, n in zip(options.queries, per_image, strict=True)
                                                for _ in range(n)])  # fmt: skip
        keeps = decide_all(torch.cat(rows), torch.tensor(grids), geometry, options)  # one (k_c,) a crop
        joined, first = [], 0
        for n in per_image:
            crops, offset = keeps[first : first + n], 0
            parts = []
            for keep, (_, h, w) in zip(crops, grids[first : first + n], strict=True):
                parts.append(keep + offset)
                offset += h * w // (m * m)
            joined.append(torch.cat(parts))
            first += n
        processed[KEEP_FIELD] = torch.cat(joined)  # (sum k_i,)
        processed[COUNT_FIELD] = torch.tensor([int(k.numel()) for k in joined])  # (num_images,)
        return processed

    def _get_prompt_updates(self, mm_items: Any, hf_processor_mm_kwargs: Any, out_mm_kwargs: Any) -> Any:
        hf_only = {k: v for k, v in hf_processor_mm_kwargs.items() if k != KEY}
        updates = MiniCPMV4_7MultiModalProcessor._get_prompt_updates(self, mm_items, hf_only, out_mm_kwargs)
        cfg = self.info.get_hf_config()
        starts = {int(cfg.image_start_id), int(cfg.slice_start_id)}
        pad, merge = int(cfg.image_token_id), self.geometry().merge_size
        return [_kept_crops(u, out_mm_kwargs, starts, pad, merge) if u.modality == "image" else u for u in updates]


def _kept_crops(update: Any, out_mm_kwargs: Any, starts: set[int], pad: int, merge: int) -> Any:
    """An image prompt update whose crops each keep their kept count of placeholders (when pruned)."""
    from vllm.multimodal.processing.processor import PromptUpdateDetails

    def prune(full: Any, item: Any) -> Any:
        sizes = torch.as_tensor(item["tgt_sizes"].data).reshape(-1, 2).tolist()
        counts = iter([int(k.numel()) for k in crop_keeps(item[KEEP_FIELD].data.long(), sizes, merge)])
        ids: list[int] = []
        for token in full.full:
            if token != pad:
                ids.append(token)
                if token in starts:  # a crop opens: its kept placeholders, in place of its full run
                    ids += [pad] * next(counts)
        return PromptUpdateDetails.select_token_ids(ids, [pad])

    return pruned_update(update, out_mm_kwargs, prune)


@MULTIMODAL_REGISTRY.register_processor(
    ArrCocMiniCPMV4_7Processor, info=MiniCPMV4_7ProcessingInfo, dummy_inputs=MiniCPMVDummyInputsBuilder
)
class ArrCocMiniCPMV4_7ForConditionalGeneration(MiniCPMV4_7ForConditionalGeneration):
    """vLLM's MiniCPM-V 4.7; crops of pruned requests are encoded on their kept patches only, at their canvas
    positions."""

    def _merge(self) -> int:
        from arr_coc.integrations.minicpmv4_7 import ADAPTER

        return ADAPTER.geometry(SimpleNamespace(config=self.config))[1]

    # ----- the encoder --------------------------------------------------------------------------------------------
    def embed_multimodal(self, **kwargs: object) -> Any:
        if KEEP_FIELD not in kwargs:  # no item of this batch is pruned: vLLM's own path
            return super().embed_multimodal(**kwargs)
        image = self._parse_and_validate_vision_input(
            pixel_values=kwargs["pixel_values"], tgt_sizes=kwargs["tgt_sizes"]
        )
        keeps = split_keeps(kwargs[KEEP_FIELD], kwargs[COUNT_FIELD])
        sizes = torch.as_tensor(image["tgt_sizes"]).reshape(-1, 2).tolist()
        crops, merge, first = [], self._merge(), 0
        for keep, n in zip(keeps, image["num_slices"].tolist(), strict=True):
            crops += crop_keeps(keep, sizes[first : first + n], merge)
            first += n
        if all(k.numel() == (h * w) // (merge * merge) for k, (h, w) in zip(crops, sizes, strict=True)):
            # every crop keeps every token (budget 1.0): vLLM's own encoder, bit for bit
            own = {k: v for k, v in kwargs.items() if k not in (KEEP_FIELD, COUNT_FIELD)}
            return super().embed_multimodal(**own)
        feats = self.encode_kept(list(image["pixel_values"]), sizes, crops)
        out, first = [], 0
        for keep, n in zip(keeps, image["num_slices"].tolist(), strict=True):
            out.append(torch.cat(feats[first : first + n]))
            if out[-1].shape[0] != keep.numel():
                raise RuntimeError(f"arr_coc: {out[-1].shape[0]} encoder rows for an image keeping {keep.numel()}")
            first += n
        return tuple(out)

    def encode_kept(
        self, pixel_values: list[torch.Tensor], sizes: list[list[int]], keeps: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        """The tower (``get_vision_hidden_states``' steps) on each crop's kept patch blocks only.

        Args:
            pixel_values: each crop's packed patches (3, P, L >= h*w*P).
            sizes: each crop's patch grid (h, w).
            keeps: each crop's kept token indices (raster order over (h/m, w/m)).

        Returns:
            each crop's features (k_c, D), in kept order ((0, D) for a crop that keeps nothing).
        """
        m = self._merge()
        vpm = self.vpm
        dtype = vpm.embeddings.patch_embedding.weight.dtype
        p = int(pixel_values[0].shape[-2])
        chosen, fake, pos = [], [], []
        for i, ((h, w), keep) in enumerate(zip(sizes, keeps, strict=True)):
            k = keep.numpy().astype(np.int64)
            if k.size == 0:
                continue
            mask = torch.ones(1, 1, h * w, dtype=torch.bool, device=pixel_values[i].device)
            full_pos = vpm.embeddings.get_position_ids(mask, torch.tensor([[h, w]], device=mask.device))[0]
            by, bx = np.divmod(k, w // m)
            r = np.arange(m)
            rows = (by[None, :, None] * m + r[:, None, None]).repeat(m, 2)  # (m, k, m): row rr, block j, col cc
            cols = (bx[None, :, None] * m + r[None, None, :]).repeat(m, 0)
            patch = torch.from_numpy((rows * w + cols).reshape(-1)).to(pixel_values[i].device)  # (m*m*k,)
            crop = pixel_values[i][:, :, : h * w * p].unflatten(-1, (-1, p)).index_select(2, patch)  # (3, P, n, P)
            chosen.append((i, crop.flatten(2)))
            fake.append((m, m * k.size))
            pos.append(full_pos.index_select(0, patch.to(full_pos.device)))
        out = [vpm.post_layernorm.weight.new_zeros((0, self.config.text_config.hidden_size))] * len(keeps)
        if not chosen:
            return out
        n = [a * b for a, b in fake]
        device = chosen[0][1].device
        pixels = torch.zeros(len(chosen), 3, p, max(n) * p, dtype=dtype, device=device)
        position_ids = torch.zeros(len(chosen), max(n), dtype=torch.long, device=device)
        attn = torch.zeros(len(chosen), max(n), dtype=torch.bool, device=device)
        for j, ((_, px), ids, count) in enumerate(zip(chosen, pos, n, strict=True)):
            pixels[j, ..., : px.shape[-1]] = px.to(dtype)
            position_ids[j, :count] = ids
            attn[j, :count] = True
        tgt = torch.tensor(fake, dtype=torch.long, device=device)
        position_ids = position_ids.to(vpm.embeddings.position_embedding.weight.device)
        hidden = vpm.embeddings(
            pixels, patch_attention_mask=attn.unsqueeze(1), tgt_sizes=tgt, position_ids=position_ids
        )
        mask = None
        if not bool(attn.all()):
            mask = ((~attn).to(hidden.dtype) * torch.finfo(hidden.dtype).min)[:, None, None, :]
        insert = getattr(self.config, "insert_layer_id", -1)
        for layer in vpm.encoder.layers[: insert + 1]:
            hidden = layer(hidden, attention_mask=mask)
        if self.config.downsample_mode != "4x" and insert >= 0:
            hidden, tgt, mask = self.vit_merger(hidden, tgt, mask)
        for layer in vpm.encoder.layers[insert + 1 :]:
            hidden = layer(hidden, attention_mask=mask)
        merged = self.merger(vpm.post_layernorm(hidden), tgt)  # one (k, D) a chosen crop
        for (i, _), feats in zip(chosen, merged, strict=True):
            out[i] = feats
        return out

    # ----- positions ----------------------------------------------------------------------------------------------
    def get_mrope_input_positions(self, input_tokens: list[int], mm_features: list[Any]) -> tuple[torch.Tensor, int]:
        if not any(KEEP_FIELD in (f.data or {}) for f in mm_features):
            return super().get_mrope_input_positions(input_tokens, mm_features)
        cfg, merge = self.config, self._merge()
        starts, pad = {int(cfg.image_start_id), int(cfg.slice_start_id)}, int(cfg.image_token_id)
        full: list[int] = []
        where: list[int] = []  # each pruned token's index in the full prompt
        at = 0
        for f in sorted(mm_features, key=lambda f: f.mm_position.offset):
            first, length = f.mm_position.offset, f.mm_position.length
            for token in input_tokens[at:first]:
                where.append(len(full))
                full.append(token)
            region = input_tokens[first : first + length]
            if f.modality != "image" or KEEP_FIELD not in f.data:
                for token in region:
                    where.append(len(full))
                    full.append(token)
            else:
                sizes = torch.as_tensor(f.data["tgt_sizes"].data).reshape(-1, 2).tolist()
                crops = iter(zip(crop_keeps(f.data[KEEP_FIELD].data.long().cpu(), sizes, merge), sizes, strict=True))
                for token in region:
                    if token == pad:
                        continue  # placed with its crop below
                    where.append(len(full))
                    full.append(token)
                    if token in starts:
                        keep, (h, w) = next(crops)
                        where += (len(full) + keep).tolist()
                        full += [pad] * (h * w // (merge * merge))
            at = first + length
        for token in input_tokens[at:]:
            where.append(len(full))
            full.append(token)
        positions, _ = super().get_mrope_input_positions(full, mm_features)  # (3, len(full))
        kept = positions[:, torch.tensor(where, dtype=torch.long)]  # (3, len(input_tokens))
        return kept, int(kept.max()) + 1 - len(input_tokens)
