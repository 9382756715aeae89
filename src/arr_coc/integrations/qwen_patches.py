"""The Qwen line's patch layout: what a Qwen-VL processor's ``pixel_values`` hold, undone into frames.

A Qwen2-VL / Qwen2.5-VL / Qwen3-VL / Qwen3.5 processor (and GLM-4.1V's, which lays its patches out the same way)
flattens an image into rows of ``3 * temporal_patch_size * patch_size**2`` values: merged blocks in raster order, then
the ``merge_size**2`` patches of a block, each patch (channel, temporal copy, y, x), normalised with the processor's
mean and std. :func:`frames_from_patches` undoes that into frames at the processor's resolution, which the
family-neutral texture path (:func:`arr_coc.texture.texture_from_frames`) and the relevance model take; the family
adapter exposes it as ``patch_frames`` (``compress``'s frames, the vLLM plugin's decision).
:func:`score_visual_tokens` scores one item of such ``pixel_values`` with the same
:meth:`~arr_coc.realizing.Realizer.score` as ``allocate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from arr_coc.attending import TokenScores
from arr_coc.config import RelevanceConfig
from arr_coc.realizing import Realizer, default_realizer
from arr_coc.tensors import cached_constant
from arr_coc.texture import texture_from_frames


def frames_from_patches(
    pixel_values: torch.Tensor,
    grid_thw: tuple[int, int, int],
    patch_size: int,
    merge_size: int,
    temporal_patch_size: int,
    image_mean: Sequence[float] | None = None,
    image_std: Sequence[float] | None = None,
) -> torch.Tensor:
    """Undo a Qwen-VL processor's patch flattening and normalisation: the resized frames of one image or video.

    With the processor's ``image_mean`` / ``image_std`` the normalisation is undone exactly (up to float rounding,
    far below a uint8 level, which :func:`texture_from_frames` rounds to). Without them each frame is rescaled to
    [0, 1] by its own min and max (right up to an affine map per frame).

    Args:
        pixel_values (torch.Tensor of shape (t*h*w, 3*temporal_patch_size*patch_size**2)): patches of this one
            image/video, in the processor's order (merged blocks in raster order, then the merge_size**2 patches of
            a block). Any device and float dtype.
        grid_thw: (t, h, w) patch grid, as in ``image_grid_thw``.
        image_mean, image_std: the processor's per-channel normalisation (3 numbers each), or None.

    Returns:
        torch.Tensor of shape (t, 3, h * patch_size, w * patch_size) in [0, 1], float32 (float64 if given float64),
        on the device of ``pixel_values``; temporal patches are averaged.
    """
    t, h, w = (int(v) for v in grid_thw)
    m, p, tp = merge_size, patch_size, temporal_patch_size
    if h % m or w % m:
        raise ValueError(f"patch grid {h}x{w} is not divisible by merge_size {m}")
    expected = (t * h * w, 3 * tp * p * p)
    if tuple(pixel_values.shape) != expected:
        raise ValueError(f"pixel_values of shape {tuple(pixel_values.shape)} do not match grid {grid_thw}: {expected}")
    dtype = torch.float64 if pixel_values.dtype == torch.float64 else torch.float32
    x = pixel_values.detach().to(dtype).reshape(t, h // m, w // m, m, m, 3, tp, p, p)
    x = x.mean(dim=6)  # average the temporal patch: (t, hm, wm, m, m, 3, p, p)
    x = x.permute(0, 5, 1, 3, 6, 2, 4, 7).reshape(t, 3, h * p, w * p)  # (t, 3, H, W)
    if (image_mean is None) != (image_std is None):
        raise ValueError("pass both image_mean and image_std, or neither")
    if image_mean is not None and image_std is not None:
        if len(image_mean) != 3 or len(image_std) != 3:
            raise ValueError(f"image_mean and image_std need 3 numbers each, got {image_mean!r}, {image_std!r}")
        std = cached_constant([float(v) for v in image_std], x).view(1, 3, 1, 1)
        mean = cached_constant([float(v) for v in image_mean], x).view(1, 3, 1, 1)
        return (x * std + mean).clamp(0.0, 1.0)
    lo = x.amin(dim=(1, 2, 3), keepdim=True)
    hi = x.amax(dim=(1, 2, 3), keepdim=True)
    return (x - lo) / (hi - lo).clamp_min(1e-6)


def texture_from_patches(
    pixel_values: torch.Tensor,
    grid_thw: tuple[int, int, int],
    patch_size: int,
    merge_size: int,
    temporal_patch_size: int,
    image_mean: Sequence[float] | None = None,
    image_std: Sequence[float] | None = None,
    config: RelevanceConfig | None = None,
) -> torch.Tensor:
    """Texture array of one image or video from a Qwen-VL processor's flattened patches (see
    :func:`frames_from_patches` and :func:`texture_from_frames`).

    Returns:
        torch.Tensor of shape (t, 13, h // merge_size, w // merge_size).
    """
    x = frames_from_patches(
        pixel_values, grid_thw, patch_size, merge_size, temporal_patch_size, image_mean, image_std
    )  # (t, 3, H, W)
    _, h, w = (int(v) for v in grid_thw)
    return texture_from_frames(x, h // merge_size, w // merge_size, config)


@torch.inference_mode()
def score_visual_tokens(
    pixel_values: torch.Tensor,
    grid_thw: tuple[int, int, int],
    patch_size: int,
    merge_size: int,
    temporal_patch_size: int,
    token_feats: torch.Tensor | None = None,
    query_embeds: torch.Tensor | None = None,
    query_text: str | None = None,
    prior: torch.Tensor | None = None,
    text_prior: bool = False,
    text_options: dict[str, Any] | None = None,
    realizer: Realizer | None = None,
    image_mean: Sequence[float] | None = None,
    image_std: Sequence[float] | None = None,
    return_units: bool = False,
) -> torch.Tensor | TokenScores:
    """Relevance of each visual token of one image or video inside a loaded Qwen-VL model (``compress``'s scorer).

    The processor's patches are turned back into frames (:func:`arr_coc.texture.frames_from_patches`) and scored by
    the same :meth:`Realizer.relevance` as ``allocate``; everything stays on the device of ``pixel_values``
    except the OCR of ``text_prior`` (one uint8 copy per frame to the CPU, :func:`pictures_from_frames`).

    Args:
        pixel_values (torch.Tensor of shape (t*h*w, 3*temporal_patch_size*patch_size**2)): this item's patches.
        grid_thw: (t, h, w) patch grid of this image, as in ``image_grid_thw``.
        patch_size, merge_size, temporal_patch_size: the vision tower's, from the model config.
        token_feats (torch.Tensor of shape (N, D) or None): merged visual tokens in the LM embedding space,
            N = t * h * w / merge**2.
        query_embeds (torch.Tensor of shape (Q, D) or None): LM input embeddings of the query's tokens.
        query_text: optional query text (spatial, colour and text cues; the text prior's query).
        prior (torch.Tensor of shape (t, h / merge, w / merge) or None): query-conditioned map in [0, 1].
        text_prior: run OCR on the model's own resized pixels and add the text-aware prior of ``allocate``'s
            "text" mode (images only; needs the ``[ocr]`` extra; costs the OCR time, see the speed benchmark).
        text_options: the text prior's ablation switches (``ReadingConfig.with_switches``).
        realizer: the relevance model (default: :func:`default_realizer`).
        image_mean, image_std: the processor's normalisation (undone exactly when given).
        return_units: return ``TokenScores(scores, units)`` with the text prior's word units (empty without it),
            so that ``compress`` keeps words whole as ``allocate`` does.

    Returns:
        torch.Tensor of shape (N,), float32 on the device of ``pixel_values``: relevance of each token in raster
        order over (t, h / merge, w / merge); or that and the units (``return_units``).
    """
    frames = frames_from_patches(
        pixel_values, grid_thw, patch_size, merge_size, temporal_patch_size, image_mean, image_std
    )  # (t, 3, H, W)
    rows, cols = int(grid_thw[1]) // merge_size, int(grid_thw[2]) // merge_size
    realizer = realizer or default_realizer()
    mode = "text" if text_prior and prior is None and query_text else "texture"
    scoring = realizer.score(
        frames, (rows, cols), query_text, mode, token_feats=token_feats, query_embeds=query_embeds, prior=prior,
        text_options=text_options,
    )  # fmt: skip
    scores = scoring.scores.flatten()  # (N,)
    return TokenScores(scores, scoring.units) if return_units else scores


__all__ = ["frames_from_patches", "score_visual_tokens", "texture_from_patches"]
