"""The target model's merged-patch grid: where each visual token sits on the image.

A Qwen-VL processor resizes an image with ``smart_resize`` so that both sides are multiples of
``patch_size * merge_size`` (28 px for Qwen2-VL / Qwen2.5-VL, 32 px for Qwen3-VL), then the vision
merger turns each ``merge_size x merge_size`` block of patches into one visual token. The tokens come
out in raster order of that merged grid, so cell ``(r, c)`` of a ``rows x cols`` grid is visual token
``r * cols + c``. Everything in ARR-COC-VIS that scores or keeps tokens works on this grid.

Example:
    >>> spec = GridSpec.for_family("qwen2.5-vl")
    >>> spec.grid_for(height=1000, width=800)
    Grid(rows=36, cols=29, cell=28)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .families import get_family, load_object

MAX_ASPECT_RATIO = 200  # the processors refuse anything more elongated than this
DEFAULT_MAX_TOKENS = 1280  # default max_pixels = 1280 merged cells, the setting Qwen's model cards recommend
# The largest resized image any Qwen-VL processor is configured for: Qwen2-VL's and Qwen2.5-VL's max_pixels is
# 12,845,056 = 16384 * 28 * 28, Qwen3-VL's longest_edge 16,777,216 = 16384 * 32 * 32. A larger min_pixels or
# max_pixels is refused (a clear error, not a clamp): it would build a grid of more tokens than any checkpoint was
# set up for, and gigabytes of texture (issue 16: 1e9 pixels took 10 GB and minutes before failing nowhere useful).
MAX_TOKENS_LIMIT = 16384


def normalize_family(family: str) -> str:
    """Return the canonical family name for ``family``: any case, ``-`` / ``_`` / ``.`` optional, a
    ``config.model_type`` too (``Qwen2.5_VL``, ``qwen2_5_vl``, ``qwen25-vl``, ``qwen3_vl_moe``); the rule lives in
    :func:`arr_coc.families.get_family`.

    Raises:
        ValueError: if the family is unknown; the message lists the supported ones.
    """
    return get_family(family).name


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Size (h, w) a Qwen-VL processor resizes an image of ``height x width`` to.

    Same arithmetic as ``transformers``' ``smart_resize`` (both sides multiples of ``factor``, area within
    ``[min_pixels, max_pixels]``, aspect ratio kept as closely as possible); re-implemented so the grid can be
    computed without loading a processor, and tested against the library's own function.

    Raises:
        ValueError: on non-positive sizes or an aspect ratio above 200 (the processor's own limit).
    """
    if height < 1 or width < 1:
        raise ValueError(f"image size must be positive, got {width}x{height} (WxH)")
    if max(height, width) / min(height, width) > MAX_ASPECT_RATIO:
        raise ValueError(
            f"image aspect ratio {max(height, width) / min(height, width):.1f} is above {MAX_ASPECT_RATIO}, "
            "the most a Qwen-VL processor accepts; crop or pad the image"
        )
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def longest_edge_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Size (h, w) Pixtral's processor (Mistral3) resizes an image to: scaled down (never up) so that its longest edge
    fits ``longest_edge = isqrt(max_pixels)``, then each side rounded UP to a whole number of ``factor`` pixels
    (``transformers``' ``pixtral`` ``get_resize_output_image_size`` with ``patch_size * spatial_merge_size``;
    ``min_pixels`` is not used: the processor has no lower bound)."""
    if height < 1 or width < 1:
        raise ValueError(f"image size must be positive, got {width}x{height} (WxH)")
    edge = math.isqrt(max_pixels)
    ratio = max(height / edge, width / edge)
    if ratio > 1:
        height, width = int(math.floor(height / ratio)), int(math.floor(width / ratio))
    return ((height - 1) // factor + 1) * factor, ((width - 1) // factor + 1) * factor


GEMMA3_TOKENS_PER_SIDE = 16  # Gemma 3: 256 tokens an image (mm_tokens_per_image), pooled from 64 x 64 patches


def fixed_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Size (h, w) Gemma 3's processor resizes every image to, whatever its shape: 896 x 896 (16 x 16 cells of
    ``factor`` = 56 pixels: 14-pixel patches pooled 4 x 4); ``min_pixels`` / ``max_pixels`` are not used."""
    if height < 1 or width < 1:
        raise ValueError(f"image size must be positive, got {width}x{height} (WxH)")
    return GEMMA3_TOKENS_PER_SIDE * factor, GEMMA3_TOKENS_PER_SIDE * factor


def pixel_count(value: object, name: str) -> int:
    """``value`` as a whole number of pixels (an ``int``, or a float or string that holds a whole number).

    Raises:
        ValueError: naming ``name`` for NaN, infinities, fractions, booleans and anything that is not a number.
    """
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a whole number of pixels, got {value!r}")
    if isinstance(value, int):
        return value
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number of pixels, got {value!r}") from None
    if not math.isfinite(number) or not number.is_integer():
        raise ValueError(f"{name} must be a whole number of pixels, got {value!r}")
    return int(number)


@dataclass(frozen=True)
class Grid:
    """A merged-patch grid: ``rows x cols`` visual tokens, each covering ``cell x cell`` resized pixels."""

    rows: int  # merged tokens along the height
    cols: int  # merged tokens along the width
    cell: int  # pixels per merged token side in the resized image (patch_size * merge_size)

    @property
    def n_tokens(self) -> int:
        return self.rows * self.cols

    @property
    def resized(self) -> tuple[int, int]:
        """(W, H) of the resized image the processor feeds the vision encoder."""
        return self.cols * self.cell, self.rows * self.cell


@dataclass(frozen=True)
class GridSpec:
    """How a model family turns an image size into a grid."""

    family: str  # canonical family name (arr_coc.families)
    patch_size: int  # vision patch side in pixels (14 or 16)
    merge_size: int  # patches merged per token side (2)
    min_pixels: int  # smallest resized area the processor allows
    max_pixels: int  # largest resized area the processor allows
    rule: str | None = None  # the family's own resize ("module:function"; Family.grid_rule), else smart_resize

    @property
    def factor(self) -> int:
        return self.patch_size * self.merge_size

    @classmethod
    def for_family(cls, family: str, min_pixels: int | None = None, max_pixels: int | None = None) -> GridSpec:
        """Grid rules for ``family``, with the processor's ``min_pixels`` / ``max_pixels`` if given.

        Defaults: ``min_pixels`` is the processor's own (56*56 for Qwen2/2.5-VL, 256*256 for Qwen3-VL);
        ``max_pixels`` is 1280 merged cells (1280*28*28 or 1280*32*32). Either above ``MAX_TOKENS_LIMIT`` (16384)
        cells is a ``ValueError``.
        """
        row = get_family(family)
        family, patch, merge = row.name, row.patch_size, row.merge_size
        factor = patch * merge
        lo = row.min_pixels if min_pixels is None else pixel_count(min_pixels, "min_pixels")
        hi = DEFAULT_MAX_TOKENS * factor * factor if max_pixels is None else pixel_count(max_pixels, "max_pixels")
        limit = MAX_TOKENS_LIMIT * factor * factor
        if lo > limit or hi > limit:
            raise ValueError(
                f"{'min_pixels' if lo > limit else 'max_pixels'}={lo if lo > limit else hi:,} is above {limit:,} "
                f"pixels ({MAX_TOKENS_LIMIT} tokens of {factor}x{factor} px), the largest image a {family} processor "
                "accepts; use a smaller value"
            )
        if lo < 1 or hi < factor * factor or lo > hi:
            raise ValueError(
                f"need 1 <= min_pixels <= max_pixels and max_pixels >= {factor * factor} (one {factor}px cell); "
                f"got min_pixels={lo}, max_pixels={hi}"
            )
        return cls(family, patch, merge, lo, hi, row.grid_rule)

    def grid_for(self, height: int, width: int) -> Grid:
        """The grid of an image of ``height x width`` original pixels."""
        if self.rule is not None:  # a family whose grid is not one resized raster (Family.grid_rule: MiniCPM-V)
            return load_object(self.rule)(height, width, self)
        row = get_family(self.family)
        resize = smart_resize if row.resize is None else load_object(row.resize)  # the family's processor's rule
        h, w = resize(height, width, self.factor, self.min_pixels, self.max_pixels)
        return Grid(rows=h // self.factor, cols=w // self.factor, cell=self.factor)
