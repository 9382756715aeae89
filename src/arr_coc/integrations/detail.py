"""Level of detail: one token budget shared between a coarse view of the whole image and full resolution where
relevance is high (``compress(..., detail="thumbnail" | "mixed")``).

Dropping a token loses its region entirely: the model never learns that the page has a second column or a logo. The
two modes below spend part of the budget on a coarse view of everything and the rest on the relevant tokens at full
resolution. Both run foveated (:mod:`arr_coc.integrations.foveation`): the vision tower encodes only what the
language model receives.

``"thumbnail"`` (thumbnail + foveated page)
    A low-resolution copy of the whole image is inserted into the prompt as an extra image just before the original
    (``<|vision_start|><|image_pad|>*T<|vision_end|>`` followed by the original image's own block), ordinary tokens
    of the kind the model was trained on (two images in one turn). Its pixels are the item's resized image
    resampled (bicubic, antialiased) to a ``(th*p, tw*p)`` grid chosen like the processor's ``smart_resize`` with
    ``max_pixels = T_target * (p*m)**2``. The M-RoPE positions of the whole, augmented prompt come from the model's
    own ``get_rope_index``; the full-resolution image's relevant tokens keep their positions in that sequence (the
    thumbnail shifts the page and the text after it by the thumbnail's extent, exactly as a real second image would).

``"mixed"`` (mixed resolution in one grid, the seed design's picture)
    The merged-token grid (h, w) is cut into blocks of c x c tokens (c in :data:`COARSE_FACTORS`; edge blocks are
    smaller). A block holding no fine token becomes ONE coarse token: the block's pixels are resampled (bicubic,
    antialiased) to one merged token's ``m*p x m*p`` pixels, and that token is fed to the vision tower and to the
    language model *as the block's anchor cell*: the cell at ``(r0 + (rows-1)//2, c0 + (cols-1)//2)`` of the block
    (its centre, rounded towards the top-left; for a 2x2 block the top-left cell). Concretely the coarse token
    replaces the anchor cell's patch rows in ``pixel_values``, and the anchor joins the kept set of the foveated
    run, so it gets, by construction and with no new code per family:

    * in the language model: the anchor cell's (t, h, w) M-RoPE position from ``get_rope_index`` (unique: the anchor
      lies in its own block, which holds no fine token);
    * in the vision tower: the rotary (h, w) angles of the anchor cell's m x m patches (neighbouring patches inside
      the token stay 1 apart, as in training; scaling them by c would put the token's own patches c apart, a
      geometry the tower never saw between adjacent patches);
    * Qwen2.5-VL: the window of the ORIGINAL grid that holds the anchor cell;
    * Qwen3-VL: the learned position embedding interpolated for the full grid at the anchor's patches, and
      DeepStack features from the same reduced run (sliced with the same indices as the main tokens).

    Tokens of a block that holds some fine tokens but are not fine themselves are dropped (the block is not covered
    twice).

The split (:func:`plan_detail`): ``B`` = the item's budget (``resolve_budget``). With ``B >= N`` there is no coarse
view: every token is fine and the output is the unwrapped model's, bit for bit. Otherwise the fine part asks for
``F = adaptive_k(scores)``, the seed's tier (64/100/160/256/400) that holds the relevance mass: concentrated relevance
asks for few fine tokens and leaves more to the overview, diffuse relevance asks for many.

The coarse view is guaranteed a floor ``R = max(4, min(64, B // 2))`` (the smallest tier, or half of a small
budget), so the fine part gets ``min(F, B - R)``:

* thumbnail: ``T_target = B - min(F, B - R)``, capped at N/4 (half the side) and snapped DOWN to a tier when it is
  at least the smallest tier; the thumbnail grid has ``T <= T_target`` tokens (``smart_resize`` keeps the aspect
  ratio, so ``T`` may fall a little short) and the fine part gets ``B - T`` (so thumbnail + fine = B exactly).
* mixed: ``want = min(F, B - R)`` fine tokens (the top ``want`` by relevance); the factor is the
  smallest c in 2, 4, 8 for which ``want + (blocks without a fine token) <= B`` with at least one coarse cell left
  (else the coarsest cover, with as many fine tokens as fit). What is left of ``B`` goes to more fine tokens: first
  the most relevant ones inside blocks that already hold a fine token (each costs one token), then down the
  relevance order (a token in a coarse block costs nothing by itself: it replaces the block's coarse token). Each
  step costs 0 or 1 and ``N`` fine tokens cost ``N >= B``, so the total is exactly ``B``.

Everything here is pure (tensors in, tensors out); ``compress.py`` wires it into the wrapper.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from arr_coc.detail_plan import (  # noqa: F401  (the plan moved to the core, issue 44; importable from here)
    COARSE_FACTORS,
    DETAIL_MODES,
    MIN_COARSE_TOKENS,
    MIN_THUMBNAIL_TOKENS,
    DetailPlan,
    Selector,
    anchor_of,
    block_bounds,
    block_ids,
    mixed_total,
    parse_detail,
    plan_detail,
    thumbnail_grid,
)

from .sequence import VisualItem, host, upload

# ----- pixels <-> patch rows ------------------------------------------------------------------------------------


def image_from_patches(rows: torch.Tensor, grid_hw: tuple[int, int], patch: int, merge: int, tps: int) -> torch.Tensor:
    """The resized image an item's patch rows were cut from (the first temporal slice; images repeat it).

    Args:
        rows (torch.Tensor of shape (h*w, C*tps*p*p)): one image's rows of ``pixel_values``, merge-block order.
        grid_hw: (h, w) in patches.

    Returns:
        torch.Tensor of shape (C, h*p, w*p), the same dtype (normalised values, as the processor left them).
    """
    h, w = grid_hw
    c = rows.shape[1] // (tps * patch * patch)
    x = rows.reshape(h // merge, w // merge, merge, merge, c, tps, patch, patch)[
        ..., 0, :, :
    ]  # (H/m, W/m, m, m, C, p, p)
    x = x.permute(4, 0, 2, 5, 1, 3, 6)  # (C, H/m, m, p, W/m, m, p)
    return x.reshape(c, h * patch, w * patch)


def patches_from_image(image: torch.Tensor, patch: int, merge: int, tps: int) -> torch.Tensor:
    """Patch rows of an image, in the Qwen processors' layout (inverse of :func:`image_from_patches`).

    Args:
        image (torch.Tensor of shape (C, H, W)): H and W multiples of ``patch * merge``.

    Returns:
        torch.Tensor of shape ((H/p)*(W/p), C*tps*p*p): merge-block order, the frame repeated ``tps`` times.
    """
    c, height, width = image.shape
    h, w = height // patch, width // patch
    x = image.reshape(c, h // merge, merge, patch, w // merge, merge, patch)
    x = x.permute(1, 4, 2, 5, 0, 3, 6)  # (H/m, W/m, m, m, C, p, p)
    x = x.unsqueeze(5).expand(-1, -1, -1, -1, -1, tps, -1, -1)  # (H/m, W/m, m, m, C, tps, p, p)
    return x.reshape(h * w, c * tps * patch * patch)


def resample(image: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Bicubic, antialiased resize of a (C, H, W) image to ``size`` = (H', W'), computed in float32.

    Resampling is linear with weights summing to one, so it commutes with the processor's per-channel normalisation:
    resampling the normalised pixels equals normalising the resampled ones.
    """
    out = torch.nn.functional.interpolate(
        image[None].float(), size=size, mode="bicubic", antialias=True, align_corners=False
    )  # (1, C, H', W')
    return out[0].to(image.dtype)


def thumbnail_rows(
    rows: torch.Tensor, grid_hw: tuple[int, int], thumb_hw: tuple[int, int], patch: int, merge: int, tps: int
) -> torch.Tensor:
    """Patch rows of the thumbnail of one image.

    Args:
        rows (torch.Tensor of shape (h*w, C*tps*p*p)): the image's rows of ``pixel_values``.
        thumb_hw: (th, tw) in patches (multiples of ``merge``).

    Returns:
        torch.Tensor of shape (th*tw, C*tps*p*p).
    """
    image = image_from_patches(rows, grid_hw, patch, merge, tps)  # (C, h*p, w*p)
    small = resample(image, (thumb_hw[0] * patch, thumb_hw[1] * patch))  # (C, th*p, tw*p)
    return patches_from_image(small, patch, merge, tps)


# ----- mixed resolution: blocks, anchors, coarse pixels ---------------------------------------------------------


def coarse_rows(
    rows: torch.Tensor, grid_hw: tuple[int, int], plan: DetailPlan, patch: int, merge: int, tps: int
) -> torch.Tensor:
    """A copy of one image's patch rows with each coarse block's anchor cell holding the block's downsampled pixels.

    Args:
        rows (torch.Tensor of shape (h*w, C*tps*p*p)): the image's rows of ``pixel_values`` (patch grid ``grid_hw``).
        plan: a ``"mixed"`` plan.

    Returns:
        torch.Tensor of the same shape: rows of fine tokens unchanged, anchor rows replaced (others unchanged; they
        are never encoded).
    """
    out = rows.clone()
    if plan.mode != "mixed" or not plan.blocks:
        return out
    image = image_from_patches(rows, grid_hw, patch, merge, tps)  # (C, h*p, w*p)
    side = merge * patch
    unit = merge * merge
    for anchor, (r0, c0, r1, c1) in zip(plan.anchors.tolist(), plan.blocks, strict=True):
        region = image[:, r0 * side : r1 * side, c0 * side : c1 * side]  # (C, rows*m*p, cols*m*p)
        token = patches_from_image(resample(region, (side, side)), patch, merge, tps)  # (m*m, C*tps*p*p)
        out[anchor * unit : (anchor + 1) * unit] = token.to(out.dtype)
    return out


def describe_plan(plan: DetailPlan) -> str:
    """One line for people: how the image's tokens were spent."""
    if plan.mode == "drop":
        return f"drop-only, {plan.budget} tokens: {plan.note}"
    if plan.mode == "full":
        return f"full budget: all {plan.budget} tokens at full resolution, no coarse view"
    if plan.mode == "thumbnail":
        th, tw = plan.thumb_grid or (0, 0)
        return (
            f"thumbnail of {plan.n_thumb} tokens ({th // 2}x{tw // 2}) + {plan.fine.numel()} full-resolution tokens "
            f"= {plan.budget} (relevance asked for {plan.fine_need})"
        )
    return (
        f"{plan.fine.numel()} full-resolution tokens + {plan.n_coarse} coarse cells of {plan.factor}x{plan.factor} "
        f"tokens = {plan.budget} (relevance asked for {plan.fine_need})"
    )


# ----- the coarse view in the batch (compress's level-of-detail step) ------------------------------------------


def coarse_view(
    items: Sequence[VisualItem],
    plans: dict[int, DetailPlan],
    image_px: torch.Tensor,
    image_grid: torch.Tensor,
    patch: int,
    merge: int,
    tps: int,
) -> tuple[torch.Tensor, torch.Tensor, list[tuple[str, int]]]:
    """The batch's image patch rows as the foveated tower gets them: a mixed image's anchor rows hold their block's
    downsampled pixels (:func:`coarse_rows`); a thumbnail image is preceded by its thumbnail (:func:`thumbnail_rows`).

    Args:
        items: the batch's located items (images are used, in order).
        plans: image index -> its plan.
        image_px (torch.Tensor of shape (sum(t*h*w), C*tps*p*p)): the batch's ``pixel_values``.
        image_grid (torch.LongTensor of shape (num_images, 3)): their ``image_grid_thw``.

    Returns:
        pixel rows (R', C*tps*p*p), the grid of every image of the augmented batch (num_images', 3), and each of
        those images' role: ``("thumb", i)`` (the thumbnail of image i) or ``("image", i)``.
    """
    parts, grid_rows, roles = [], [], []
    for it in (i for i in items if i.kind == "image"):
        plan = plans[it.index]
        rows = image_px[it.patch_start : it.patch_start + it.n_patches]  # (t*h*w, D)
        grid_hw = (it.grid_thw[1], it.grid_thw[2])
        if plan.mode == "mixed":
            rows = coarse_rows(rows, grid_hw, plan, patch, merge, tps)
        if plan.mode == "thumbnail" and plan.thumb_grid is not None:
            parts.append(thumbnail_rows(rows, grid_hw, plan.thumb_grid, patch, merge, tps))
            grid_rows.append([1, *plan.thumb_grid])
            roles.append(("thumb", it.index))
        parts.append(rows)
        grid_rows.append(list(it.grid_thw))
        roles.append(("image", it.index))
    return torch.cat(parts), image_grid.new_tensor(grid_rows), roles


def thumbnail_inserts(
    input_ids: torch.Tensor, items: Sequence[VisualItem], plans: dict[int, DetailPlan], ids: dict[str, int]
) -> dict[int, list[tuple[int, int]]]:
    """Where :func:`insert_thumbnails` puts each thumbnail: sample -> [(column, n_tokens)], before the image's
    ``<|vision_start|>`` (or its first placeholder when there is none)."""
    inserts: dict[int, list[tuple[int, int]]] = {}
    for it in items:
        if it.kind != "image" or plans[it.index].mode != "thumbnail":
            continue
        first = int(it.cols[0])
        at = first - 1 if first > 0 and int(input_ids[it.sample, first - 1]) == ids["vision_start"] else first
        inserts.setdefault(it.sample, []).append((at, plans[it.index].n_thumb))
    return inserts


# ----- thumbnail: the augmented prompt -------------------------------------------------------------------------


def thumbnail_layout(
    input_ids: np.ndarray,
    attention_mask: np.ndarray | None,
    mm_token_type_ids: np.ndarray,
    inserts: dict[int, list[tuple[int, int]]],
    ids: dict[str, int],
    pad_id: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The augmented prompt of :func:`insert_thumbnails`, on the host (NumPy bookkeeping, no device read).

    Args:
        input_ids, attention_mask, mm_token_type_ids (numpy.ndarray of shape (batch_size, L)): host copies.
        inserts, ids, pad_id: see :func:`insert_thumbnails`.

    Returns:
        input_ids, attention_mask, mm_token_type_ids and origin, each (batch_size, L2), padded on the LEFT (same
        dtypes as given; origin int64: the caller's column, -1 for inserted tokens and padding).
    """
    batch, length = input_ids.shape
    mask = attention_mask if attention_mask is not None else np.ones_like(input_ids)
    out_rows = []
    for b in range(batch):
        at = {col: n for col, n in inserts.get(b, [])}
        cols: list[int] = []
        real = mask[b].astype(bool).tolist()
        for j in range(length):
            if j in at:
                cols += [-3] + [-2] * at[j] + [-4]  # vision_start, thumbnail placeholders, vision_end
            if real[j]:
                cols.append(j)
        out_rows.append(cols)
    new_len = max(len(c) for c in out_rows)
    origin = np.full((batch, new_len), -1, dtype=np.int64)
    new_ids = np.full((batch, new_len), pad_id, dtype=input_ids.dtype)
    new_mask = np.zeros((batch, new_len), dtype=mask.dtype)
    new_types = np.zeros((batch, new_len), dtype=mm_token_type_ids.dtype)
    special = {-3: ids["vision_start"], -2: ids["image"], -4: ids["vision_end"]}
    for b, cols in enumerate(out_rows):
        start = new_len - len(cols)
        src = np.asarray(cols, dtype=np.int64)
        real = src >= 0
        dest = np.arange(start, new_len)
        origin[b, dest[real]] = src[real]
        new_ids[b, dest[real]] = input_ids[b, src[real]]
        new_types[b, dest[real]] = mm_token_type_ids[b, src[real]]
        for code, token in special.items():
            new_ids[b, dest[src == code]] = token
        new_types[b, dest[src == -2]] = 1
        new_mask[b, start:] = 1
    return new_ids, new_mask, new_types, origin


def insert_thumbnails(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    mm_token_type_ids: torch.Tensor,
    labels: torch.Tensor | None,
    inserts: dict[int, list[tuple[int, int]]],
    ids: dict[str, int],
    pad_id: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """The prompt with a thumbnail image block inserted before some images.

    The layout is :func:`thumbnail_layout` on host copies of the integer inputs (one read each here; ``compress``
    passes its host copies to :func:`thumbnail_layout` directly); the result goes back in one upload, and the labels
    are gathered on their device.

    Args:
        input_ids (torch.LongTensor of shape (batch_size, L)): the caller's prompt.
        attention_mask (torch.LongTensor of shape (batch_size, L) or None): 0 on padding (dropped, then re-padded).
        mm_token_type_ids (torch.LongTensor of shape (batch_size, L)): 0 text, 1 image, 2 video.
        labels (torch.LongTensor of shape (batch_size, L) or None): -100 on the inserted tokens.
        inserts: sample -> [(column, n_tokens)]: before ``column`` insert
            ``<|vision_start|> <|image_pad|> * n_tokens <|vision_end|>``.
        ids: special token ids (``image``, ``vision_start``, ``vision_end``).
        pad_id: id written on padding.

    Returns:
        input_ids, attention_mask, mm_token_type_ids, labels of shape (batch_size, L2), padded on the LEFT, and
        origin (torch.LongTensor of shape (batch_size, L2)): the caller's column of each column, -1 for inserted
        tokens and padding.
    """
    layout = thumbnail_layout(host(input_ids), host(attention_mask), host(mm_token_type_ids), inserts, ids, pad_id)  # type: ignore[arg-type]
    return thumbnails_to_device(layout, input_ids, attention_mask, mm_token_type_ids, labels)


def thumbnails_to_device(
    layout: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    mm_token_type_ids: torch.Tensor,
    labels: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """:func:`thumbnail_layout`'s arrays on the device of ``input_ids`` in one upload (dtypes of the given
    tensors; the mask int64 when none was given), and the labels gathered at ``origin`` (-100 on inserted tokens)."""
    new_ids, new_mask, new_types, origin = upload(list(layout), input_ids.device)

    def typed(t: torch.Tensor, like: torch.Tensor | None) -> torch.Tensor:
        return t if like is None or t.dtype == like.dtype else t.to(like.dtype)

    new_labels = None
    if labels is not None:
        at = origin.to(labels.device)
        new_labels = labels.gather(1, at.clamp_min(0)).masked_fill(at < 0, -100)
    new_types = typed(new_types, mm_token_type_ids).to(mm_token_type_ids.device)
    return typed(new_ids, input_ids), typed(new_mask, attention_mask), new_types, new_labels, origin


# ----- the composite the model is shown (for the second reader and the demo) ----------------------------------


def composite(
    image: np.ndarray,
    merged_hw: tuple[int, int],
    plan: DetailPlan | None,
    keep: np.ndarray | None = None,
    thumb_hw_px: tuple[int, int] | None = None,
) -> np.ndarray:
    """What the language model is shown, as one picture the size of ``image``: fine cells as they are, coarse cells
    (or the thumbnail) downsampled and upsampled back, everything else white.

    Args:
        image (np.ndarray of shape (H, W, 3), uint8): the page at the resolution fine tokens see.
        merged_hw: (h, w) merged-token grid laid over ``image`` (cell (r, c) covers rows r*H/h ... (r+1)*H/h).
        plan: the image's :class:`DetailPlan` (``None``: drop-only with ``keep``).
        keep: drop-only: kept token indices.
        thumb_hw_px: thumbnail mode: its size in pixels (height, width); default: ``image`` scaled by the
            thumbnail's share of the grid.

    Returns:
        np.ndarray of shape (H, W, 3), uint8.
    """
    from PIL import Image

    height, width = image.shape[:2]
    h, w = merged_hw
    ys = np.minimum((np.arange(height) * h) // height, h - 1)
    xs = np.minimum((np.arange(width) * w) // width, w - 1)
    cell = ys[:, None] * w + xs[None, :]  # (H, W) token of each pixel
    out = np.full_like(image, 255)
    fine = np.asarray(keep if plan is None else plan.fine.cpu().numpy(), dtype=np.int64)
    fine_mask = np.zeros(h * w, dtype=bool)
    fine_mask[fine] = True
    if plan is not None and plan.mode == "thumbnail" and plan.thumb_grid is not None:
        # the thumbnail's share of the page's side (merge size 2 in every Qwen-VL family)
        th, tw = thumb_hw_px or (
            round(height * plan.thumb_grid[0] / (2 * h)),
            round(width * plan.thumb_grid[1] / (2 * w)),
        )
        pil = Image.fromarray(image)
        small = pil.resize((max(1, tw), max(1, th)), Image.BICUBIC).resize((width, height), Image.BICUBIC)
        out = np.asarray(small).copy()
    elif plan is not None and plan.mode == "mixed":
        for r0, c0, r1, c1 in plan.blocks:
            y0, y1 = (r0 * height) // h, (r1 * height) // h
            x0, x1 = (c0 * width) // w, (c1 * width) // w
            if y1 <= y0 or x1 <= x0:
                continue
            region = Image.fromarray(image[y0:y1, x0:x1])
            # the coarse token holds the region at one token's resolution: (cell size) for the whole block
            ch, cw = max(1, (y1 - y0) * 1 // max(1, r1 - r0)), max(1, (x1 - x0) * 1 // max(1, c1 - c0))
            small = region.resize((cw, ch), Image.BICUBIC).resize((x1 - x0, y1 - y0), Image.BICUBIC)
            out[y0:y1, x0:x1] = np.asarray(small)
    pix = fine_mask[cell]  # (H, W)
    out[pix] = image[pix]
    return out
