"""MiniCPM-V 4.7 adapter for ``compress``: a thumbnail and its slices, canvas M-RoPE, a Qwen3.5 language model.

How MiniCPM-V 4.7 sees a page (``MiniCPMV4_6ImageProcessor`` + ``MiniCPMV4_7Processor``): the image is resized whole
into a **thumbnail** of about 448 x 448 pixels, and, when it is larger than that, resized again and cut into a grid of
``rows x cols`` **slices** of about 448 x 448 each. Every one of these crops is a NaViT image of its own: its patches
(14 px) packed side by side in ``pixel_values`` (1, 3, 14, sum(h*w)*14), its patch grid (h, w) a row of
``target_sizes`` (num_crops, 2), in prompt order (each image's thumbnail, then its slices row-major). The tower
(SigLIP with a 2x2 window-attention merger after ``insert_layer_id``, then a 2x2 MLP merger: ``"16x"``, 4x4 patches a
token; ``"4x"`` skips the window merger: 2x2) gives each crop ``h/4 * w/4`` tokens in raster order. The prompt is
``<image>`` + one ``<unk>`` placeholder a thumbnail token + ``</image>``, then per slice ``<slice>`` + its placeholders
+ ``</slice>``, rows of slices joined by ``"\\n"``.

**Which pixels a token covers**: each crop is one visual item here (one :class:`~.sequence.VisualItem` a row of
``target_sizes``, grid (1, h, w)): token ``i`` of a crop covers cell ``i`` of that crop's raster of 56 x 56-pixel
cells (``patch * merge``), and relevance sees that crop's own pixels (:meth:`MiniCPMV4_7Adapter.frames` undoes the
NaViT packing): the thumbnail the whole page at low resolution, a slice its part of the page at full resolution. So
the budget applies to each crop (``last_allocation[b]`` holds one record per crop: the thumbnail first), and the
kept tokens of a slice are the slice's relevant cells.

**Positions**: canvas M-RoPE from the model's own ``get_rope_index`` (3 rows: t frozen at the canvas origin, h / w
on a canvas the slices tile and the thumbnail is stretched over; the markers pinned to its corners), gathered at the
kept columns; ``generate`` takes a text row on top (4 rows), as Qwen's :class:`~.qwen_common.MRopeLayout`.

**Foveation**: the tower runs on the kept tokens' patches only, through the model's own ``get_image_features``: the
kept 4x4 blocks of a crop are laid side by side as one crop of 4 x 4k patches (so the 2x2 windows and the 2x2 merge
see exactly the patches they see in the full grid), with the position embedding of each patch's place in the full
grid (the tower's ``position_ids`` keyword). Level of detail is not offered: the family has its own thumbnail.

Videos are not taken yet (``compress`` refuses them with one line). The language model is Qwen3.5's hybrid
(Gated-DeltaNet + attention): nothing here depends on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from .base import EncodedVisual, Kind, take_rows
from .contract import Adapter, PositionLayout, Positions, TurnMarkers, Visual, VisualInputs, turn_question_ids
from .qwen_common import MROPE

if TYPE_CHECKING:
    from arr_coc.grid import Grid, GridSpec

    from .sequence import VisualItem

INPUT_NAMES: dict[str, tuple[str, str]] = {
    "image": ("pixel_values", "target_sizes"),
    "video": ("pixel_values_videos", "target_sizes_videos"),
}
MARKERS = ("image_start_id", "image_end_id", "slice_start_id", "slice_end_id")  # config ids the prompt's crops use
_NO_VIDEO = "compress() does not take MiniCPM-V 4.7 videos yet (pixel_values_videos); pass images"
# the token each marker id is looked up by in a vLLM tokenizer's vocabulary (the vLLM plugin's question walk)
VLLM_MARKERS: dict[str, str] = {
    "im_start": "<|im_start|>",
    "im_end": "<|im_end|>",
    "newline": "\u010a",  # byte-level BPE's "\n" (Qwen3.5's)
    "image_start_id": "<image>",
    "image_end_id": "</image>",
    "slice_start_id": "<slice>",
    "slice_end_id": "</slice>",
}


@dataclass
class MiniCPMV4_7Adapter(Adapter):
    """The contract filled in for ``MiniCPMV4_7ForConditionalGeneration`` (see the module docstring)."""

    name: str = "minicpm-v-4.7"
    layout: PositionLayout = field(default=MROPE, repr=False)
    input_names: dict[str, tuple[str, str]] = field(default_factory=lambda: dict(INPUT_NAMES), repr=False)
    vllm_markers: ClassVar[Mapping[str, str]] = VLLM_MARKERS

    # ----- where the visual tokens are ----------------------------------------------------------------------------
    def split_inputs(self, kwargs: dict[str, Any]) -> VisualInputs:
        """Pop ``pixel_values`` / ``target_sizes`` (each crop's (h, w) becomes the grid (1, h, w)) and
        ``downsample_mode``.

        Raises:
            ValueError: videos, or ``target_sizes`` that is not (num_crops, 2).
        """
        if kwargs.get("pixel_values_videos") is not None:
            raise ValueError(_NO_VIDEO)
        kwargs.pop("pixel_values_videos", None)
        kwargs.pop("target_sizes_videos", None)
        pixels, sizes = kwargs.pop("pixel_values", None), kwargs.pop("target_sizes", None)
        if sizes is not None:
            if sizes.dim() != 2 or sizes.shape[1] != 2:
                raise ValueError(f"target_sizes must have shape (num_crops, 2), got {tuple(sizes.shape)}")
            sizes = torch.nn.functional.pad(sizes.long(), (1, 0), value=1)  # (num_crops, 3): (1, h, w)
        return VisualInputs({"image": (pixels, sizes), "video": (None, None)},
                            {"downsample_mode": kwargs.pop("downsample_mode", None)})  # fmt: skip

    def token_ids(self, model: Any) -> dict[str, int]:
        """The image / video placeholder ids (``-1``: none in the config)."""
        cfg = model.config
        return {k: -1 if getattr(cfg, f"{k}_token_id") is None else int(getattr(cfg, f"{k}_token_id"))
                for k in ("image", "video")}  # fmt: skip

    def special_ids(self, model: Any, tokenizer: Any = None) -> dict[str, int]:
        """The placeholders, the crop markers (``<image>``, ``</image>``, ``<slice>``, ``</slice>``, from the config),
        and ChatML's turn markers (``im_start``, ``im_end``, ``newline``: from ``tokenizer`` when it knows them, else
        the config's ``newline_id`` and the family's row); ``<image_id>`` / ``</image_id>`` when the tokenizer has
        them."""
        from arr_coc.families import get_family

        cfg = model.config
        defaults = get_family(self.name).token_ids
        ids = {**self.token_ids(model), **{k: defaults[k] for k in ("im_start", "im_end", "newline")}}
        ids.update({m: -1 if getattr(cfg, m, None) is None else int(getattr(cfg, m)) for m in MARKERS})
        tokens = [("im_start", "<|im_start|>"), ("im_end", "<|im_end|>"), ("newline", "Ċ"),
                  ("image_id_start", "<image_id>"), ("image_id_end", "</image_id>")]  # fmt: skip
        if getattr(cfg, "newline_id", None) is not None:  # the config's "\n" wins over a vocabulary look-up
            ids["newline"] = int(cfg.newline_id)
            tokens.pop(2)
        if tokenizer is not None and hasattr(tokenizer, "convert_tokens_to_ids"):
            for key, text in tokens:
                value = tokenizer.convert_tokens_to_ids(text)
                if isinstance(value, int) and value >= 0 and value != getattr(tokenizer, "unk_token_id", None):
                    ids[key] = value
        return ids

    def turn_markers(self, ids: dict[str, int]) -> TurnMarkers:
        """ChatML: ``<|im_start|>`` role ``\\n`` ... ``<|im_end|>``; placeholders and crop markers skipped."""
        skip = frozenset(v for k, v in ids.items() if k != "newline")
        return TurnMarkers(ids["im_start"], ids["im_end"], ids["newline"], skip)

    def question_ids(
        self, row: Sequence[int], mask: Sequence[int], first: int, last: int, ids: dict[str, int]
    ) -> list[int]:
        """The text of the turn that holds the crop, without the markers, the other crops' placeholders, the "\\n"
        between rows of slices and the processor's ``<image_id>N</image_id>`` tags."""
        start, end = ids.get("image_id_start", -1), ids.get("image_id_end", -1)
        mask, inside = list(mask), False
        for j, token in enumerate(row):
            inside = inside or (token == start and start >= 0)
            between = 0 < j < len(row) - 1 and row[j - 1] == ids["slice_end_id"] and row[j + 1] == ids["slice_start_id"]
            if inside or (token == ids["newline"] and between):
                mask[j] = 0
            inside = inside and token != end
        return turn_question_ids(row, mask, first, last, self.turn_markers(ids))

    def token_types(self, input_ids: Any, ids: dict[str, int]) -> Any:
        """``mm_token_type_ids`` (0 text, 1 image placeholder, 2 video placeholder), as the processor returns it."""
        if isinstance(input_ids, np.ndarray):
            return (input_ids == ids["image"]).astype(np.int32) + 2 * (input_ids == ids["video"]).astype(np.int32)
        return (input_ids == ids["image"]).int() + 2 * (input_ids == ids["video"]).int()

    # ----- what the tokens cover, and what relevance sees ---------------------------------------------------------
    def geometry(self, model: Any) -> tuple[int, int, int]:
        """(patch_size, merge_size, 1): ``"16x"`` merges 4x4 patches a token (the window merger's 2x2, then the
        merger's 2x2 per round), ``"4x"`` 2x2.

        Raises:
            ValueError: a non-square window or merge kernel.
        """
        cfg = model.config
        vc = cfg.vision_config
        patch = vc.patch_size if isinstance(vc.patch_size, int) else int(vc.patch_size[0])
        window, kernel = tuple(vc.window_kernel_size), tuple(cfg.merge_kernel_size)
        if window[0] != window[1] or kernel[0] != kernel[1]:
            raise ValueError(f"{self.name}: non-square window {window} or merge kernel {kernel} is not supported")
        merge = int(kernel[0]) ** int(cfg.merger_times) * (1 if cfg.downsample_mode == "4x" else int(window[0]))
        return int(patch), merge, 1

    def item_pixels(self, visual: Visual, item: VisualItem) -> torch.Tensor:
        """The crop's patches as Qwen-VL lays them out (what a per-item scorer and the pixel redundancy read): one
        row a patch, (h*w, 3*patch*patch), merged blocks in raster order, then each block's patches
        (:func:`blocked_patches`; the merge size is the crop's patches per placeholder token)."""
        _, h, w = item.grid_thw
        merge = round(math.sqrt(h * w / max(len(item.cols), 1)))
        return blocked_patches(self._packed(visual, item), h, w, merge)

    @staticmethod
    def _packed(visual: Visual, item: VisualItem) -> torch.Tensor:
        """The crop's packed patches: (3, patch, h*w*patch), a slice of ``pixel_values[0]``."""
        px = visual[item.kind][0]
        assert px is not None
        p = px.shape[2]
        return px[0, :, :, item.patch_start * p : (item.patch_start + item.n_patches) * p]

    def frames(
        self,
        model: Any,
        visual: Visual,
        items: Sequence[VisualItem],
        plan: tuple[dict[Any, list[int]], dict[Any, np.ndarray | None]],
        sent: Any,
        mean: Sequence[float],
        std: Sequence[float],
    ) -> list[torch.Tensor]:
        """Each crop's pixels as the processor resized it, (1, 3, h*patch, w*patch) in [0, 1]: the NaViT packing
        (``reshape_by_patch``: patch ``j`` of the crop's raster is columns ``j*patch ...`` of its rows) undone."""
        out = []
        for it in items:
            packed = self._packed(visual, it).float()  # (C, p, h*w*p)
            c, p = packed.shape[0], packed.shape[1]
            _, h, w = it.grid_thw
            img = packed.reshape(c, p, h, w, p).permute(0, 2, 1, 3, 4).reshape(c, h * p, w * p)  # (C, H, W)
            m = torch.tensor(mean, dtype=img.dtype, device=img.device).view(-1, 1, 1)
            s = torch.tensor(std, dtype=img.dtype, device=img.device).view(-1, 1, 1)
            out.append((img * s + m).clamp(0.0, 1.0).unsqueeze(0))  # (1, 3, H, W)
        return out

    # ----- positions ----------------------------------------------------------------------------------------------
    def positions(
        self, model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, types: Any, inputs: VisualInputs
    ) -> Positions:
        """The model's own canvas M-RoPE of the full sequence (``get_rope_index``): 3 rows, and the deltas.

        Raises:
            ValueError: a ``downsample_mode`` other than the config's (the token grid would not be the one decided
                on).
        """
        mode = inputs.extras.get("downsample_mode")
        if mode is not None and mode != model.config.downsample_mode:
            raise ValueError(
                f"compress() uses the config's downsample_mode {model.config.downsample_mode!r}; got {mode!r} for "
                "this call (load the model with the mode you want instead)"
            )
        grid = inputs.visual["image"][1]
        if types is None:
            raise ValueError("MiniCPM-V 4.7 needs mm_token_type_ids (the processor returns them)")
        ids, deltas = model.model.get_rope_index(
            input_ids, mm_token_type_ids=types, target_sizes=None if grid is None else grid[:, 1:],
            attention_mask=attention_mask,
        )  # fmt: skip
        return Positions(ids, deltas, self.layout)

    # ----- the encoder --------------------------------------------------------------------------------------------
    def encode(self, model: Any, kind: Kind, pixel_values: torch.Tensor, grid: torch.Tensor) -> EncodedVisual:
        """``get_image_features`` once on every crop, as the model's forward calls it: one (h/m * w/m, D) a crop."""
        if kind != "image":
            raise ValueError(_NO_VIDEO)
        raw = model.model.get_image_features(pixel_values[:1], grid[:, 1:], return_dict=True)
        return EncodedVisual(raw=raw, features=list(raw.pooler_output))

    def supports_foveation(self) -> bool:
        """The tower runs on the kept tokens' patches (:meth:`encode_kept`)."""
        return True

    def encode_kept(
        self,
        model: Any,
        kind: Kind,
        pixel_values: torch.Tensor,
        grid: torch.Tensor,
        keeps: Sequence[torch.Tensor],
        host_grids: Any = None,
    ) -> EncodedVisual:
        """The tower on the kept tokens' patches only (foveation), through the model's own ``get_image_features``.

        Each crop's kept ``m x m`` patch blocks (``m`` the merge size) are laid side by side as one crop of
        ``m x m*k`` patches: the window merger's 2x2 windows and the merger's 2x2 groups then hold exactly the
        patches they hold in the full grid, and its ``k`` tokens come out in kept order. Each patch gets the position
        embedding of its place in the full crop (the tower's ``position_ids``: ``get_vision_nearest_position_ids``
        of the full grid, gathered). Attention in the tower is among the kept patches of a crop.

        Returns:
            ``features[i]`` of shape (k_i, D), in kept order.
        """
        from transformers.vision_utils import get_vision_nearest_position_ids

        if kind != "image":
            raise ValueError(_NO_VIDEO)
        _, m, _ = self.geometry(model)
        sizes = host_grids if host_grids is not None else grid.cpu().numpy()
        p = pixel_values.shape[2]
        side = model.model.vision_tower.embeddings.num_patches_per_side
        cols, pos, fake, start, seen = [], [], [], 0, []
        for i, ((_, h, w), keep) in enumerate(zip(np.asarray(sizes).tolist(), keeps, strict=True)):
            k = np.asarray(keep, dtype=np.int64)
            if k.size == 0:  # a crop that keeps nothing (budget_scope="prompt") is not encoded
                start += h * w
                continue
            seen.append(i)
            full_pos = get_vision_nearest_position_ids(torch.tensor([[h, w]]), side).numpy()  # (h*w,)
            by, bx = np.divmod(k, w // m)  # each kept token's block (row, col) in the merged grid
            r = np.arange(m)
            # patch order of a (m, m*k) crop: row rr, then block j, then column cc within the block
            rows = (by[None, :, None] * m + r[:, None, None]).repeat(m, 2)  # (m, k, m)
            cols_ = (bx[None, :, None] * m + r[None, None, :]).repeat(m, 0)  # (m, k, m)
            patch = (rows * w + cols_).reshape(-1)  # (m*m*k,) patch index within the crop
            cols.append(start + patch)
            pos.append(full_pos[patch])
            fake.append((m, m * len(k)))
            start += h * w
        if not seen:
            raise ValueError("foveation needs at least one kept token over the images / videos it encodes")
        index = torch.from_numpy(np.concatenate(cols)).to(pixel_values.device)  # (P,)
        patches = pixel_values[0].unflatten(-1, (-1, p)).index_select(2, index)  # (C, p, P, p)
        kept = patches.flatten(2).unsqueeze(0)  # (1, C, p, P*p)
        position_ids = torch.from_numpy(np.concatenate(pos)).to(pixel_values.device)
        target = torch.tensor(fake, dtype=torch.long, device=pixel_values.device)
        raw = model.model.get_image_features(kept, target, position_ids=position_ids, return_dict=True)
        features = [raw.pooler_output[0][:0]] * len(keeps)  # (0, D) for a crop that keeps nothing
        for i, feats in zip(seen, raw.pooler_output, strict=True):
            features[i] = feats
        return EncodedVisual(raw=raw, features=features)

    def pruned_output(
        self,
        encoded: EncodedVisual,
        keeps: Sequence[torch.Tensor | None],
        levels: Sequence[torch.Tensor | None],
        flat: torch.Tensor | None = None,
    ) -> Any:
        """A fresh encoder output holding the kept rows of each crop (``pooler_output``: one (k_i, D) a crop)."""
        return type(encoded.raw)(pooler_output=take_rows(encoded.features, keeps, flat))

    # ----- the model's inputs -------------------------------------------------------------------------------------
    def model_inputs(self, kwargs: dict[str, Any], packed: Any, mm_outputs: Any, generation: bool) -> dict[str, Any]:
        """The caller's other inputs, the pruned ids, mask, labels and token types, the kept features
        (``mm_encoder_outputs``) and the gathered positions (4 rows for ``generate``)."""
        out = dict(kwargs)
        out.update(input_ids=packed.input_ids, mm_encoder_outputs=mm_outputs)
        out["mm_token_type_ids"] = packed.mm_token_type_ids
        if packed.attention_mask is not None:
            out["attention_mask"] = packed.attention_mask
        if packed.labels is not None:
            out["labels"] = packed.labels
        out["position_ids"] = self.layout.for_model(packed.position_ids, packed.attention_mask, generation)
        return out


ADAPTER = MiniCPMV4_7Adapter()


def blocked_patches(packed: torch.Tensor, h: int, w: int, merge: int) -> torch.Tensor:
    """One crop's NaViT-packed patches (C, p, h*w*p) as Qwen-VL's patch rows (h*w, C*p*p): the ``merge x merge``
    blocks in raster order, each block's patches in raster order (so
    :func:`~arr_coc.integrations.qwen_patches.frames_from_patches` with ``temporal_patch_size`` 1 undoes it)."""
    c, p = packed.shape[0], packed.shape[1]
    x = packed.reshape(c, p, h // merge, merge, w // merge, merge, p)  # (C, row in patch, hb, mr, wb, mc, col)
    return x.permute(2, 4, 3, 5, 0, 1, 6).reshape(h * w, c * p * p)


# ----- allocate's grid: the processor's resize (MiniCPMV4_6ImageProcessor), in plain arithmetic ----------------------
SCALE_RESOLUTION, MAX_SLICE_NUMS = 448, 9  # the published processor's defaults


def _divide(length: float, divisor: int) -> int:
    return max(round(length / divisor) * divisor, divisor)


def _best_resize(height: float, width: float, cell: int, upscale: bool) -> tuple[int, int]:
    """``find_best_resize``: about ``SCALE_RESOLUTION`` squared in area (when larger, or ``upscale``), aspect kept,
    each side a multiple of ``cell``."""
    if height * width > SCALE_RESOLUTION * SCALE_RESOLUTION or upscale:
        aspect = width / height
        height = int(SCALE_RESOLUTION / math.sqrt(aspect))
        width = int(height * aspect)
    return _divide(height, cell), _divide(width, cell)


def slice_grid(height: int, width: int) -> tuple[int, int] | None:
    """``get_sliced_grid``: (rows, cols) of slices for a page of ``height x width``, None when it gets none."""
    log_ratio = math.log(width / height)
    multiple = min(math.ceil(width * height / (SCALE_RESOLUTION * SCALE_RESOLUTION)), MAX_SLICE_NUMS)
    if multiple <= 1:
        return None
    best, least = (1, 1), float("inf")
    for count in (multiple - 1, multiple, multiple + 1):
        if count == 1 or count > MAX_SLICE_NUMS:
            continue
        for rows in range(1, count + 1):
            if count % rows == 0:
                error = abs(log_ratio - math.log(count // rows / rows))
                if error < least or (error == least and rows > best[0]):
                    best, least = (rows, count // rows), min(error, least)
    return best


def canvas_grid(height: int, width: int, spec: GridSpec) -> Grid:
    """``allocate``'s grid for MiniCPM-V 4.7: the tokens that cover the page at full resolution, i.e. the canvas its
    slices tile (rows x cols slices of the same token grid), or the thumbnail's grid when the page gets no slices.
    The thumbnail of a sliced page (about 8 x 8 more tokens, the whole page at low resolution) is not part of it.
    The processor's resize has no pixel bounds: ``spec``'s are not used."""
    from arr_coc.grid import Grid

    cell = spec.factor
    grid = slice_grid(height, width)
    if grid is None:
        th, tw = _best_resize(height, width, cell, True)
        return Grid(th // cell, tw // cell, cell)
    rows, cols = grid
    sh, sw = _best_resize(_divide(height, rows) / rows, _divide(width, cols) / cols, cell, True)
    return Grid(rows * (sh // cell), cols * (sw // cell), cell)
