"""Texture: the 13-channel texture array on the model's merged-patch grid.

Every channel is one number per visual token (grid cell), so the scorers downstream never see pixels:

    0-2   rgb            mean colour of the cell, in [0, 1]
    3-4   pos_y, pos_x   cell centre, in (0, 1)
    5-7   sobel_x/y/mag  mean absolute Sobel response of the cell's grey levels (edges, strokes of text)
    8-10  saliency       spectral residual (Hou & Zhang 2007), centre-surround grey contrast, colour rarity
    11-12 statistics     grey-level Shannon entropy of the cell (16 bins, in nats), edge density (share of
                         the cell's pixels whose gradient is in the image's top 10%)

The image is analysed at half the processor's resolution (14 px a cell for Qwen2/2.5-VL, 16 px for Qwen3-VL):
the cells cover exactly the same parts of the original image as the model's tokens, at a quarter of the cost.
``texture_from_patches`` computes the same array from a processor's ``pixel_values`` (for ``compress``), so the
model's own preprocessed pixels are what is scored.

Example:
    >>> from PIL import Image
    >>> from arr_coc.grid import GridSpec
    >>> grid = GridSpec.for_family("qwen2.5-vl").grid_for(280, 560)
    >>> texture_array(Image.new("RGB", (560, 280)), grid).shape
    torch.Size([13, 10, 20])
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from .grid import Grid

CHANNELS: tuple[str, ...] = (
    "r", "g", "b", "pos_y", "pos_x", "sobel_x", "sobel_y", "sobel_mag",
    "sal_spectral", "sal_contrast", "sal_color", "entropy", "edge_density",
)  # fmt: skip
N_CHANNELS = len(CHANNELS)
ENTROPY_BINS = 16  # grey levels of the per-cell entropy histogram
SPECTRAL_SIDE = 64  # spectral residual saliency runs on a map of about this many pixels a side
EDGE_QUANTILE = 0.9  # edge density counts pixels above this quantile of the image's gradient magnitudes

_SOBEL = torch.tensor([[[[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]]]) / 8.0  # (1, 1, 3, 3)
_GREY = torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1)


def analysis_image(image: Image.Image, grid: Grid, cell_px: int | None = None) -> torch.Tensor:
    """Resize ``image`` to the grid at ``cell_px`` pixels a cell (default half the model's cell).

    Returns:
        Float tensor (3, rows * cell_px, cols * cell_px) in [0, 1].
    """
    cell_px = cell_px or grid.cell // 2
    size = (grid.cols * cell_px, grid.rows * cell_px)
    small = image.convert("RGB").resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)
    return torch.from_numpy(np.asarray(small, dtype=np.uint8).copy()).permute(2, 0, 1).float() / 255.0


def texture_array(image: Image.Image, grid: Grid, cell_px: int | None = None) -> torch.Tensor:
    """The 13-channel texture array of ``image`` on ``grid``.

    Returns:
        Float tensor (13, rows, cols).
    """
    rgb = analysis_image(image, grid, cell_px)
    return texture_from_pixels(rgb.unsqueeze(0), grid.rows, grid.cols)[0]


def frames_from_patches(
    pixel_values: torch.Tensor,
    grid_thw: tuple[int, int, int],
    patch_size: int,
    merge_size: int,
    temporal_patch_size: int,
) -> torch.Tensor:
    """Undo a Qwen-VL processor's patch flattening: the resized frames of one image or video.

    The processor's normalisation (mean/std) is undone up to an affine map per channel, which is removed by
    rescaling each frame to [0, 1].

    Args:
        pixel_values: (t * h * w, 3 * temporal_patch_size * patch_size**2) patches of this one image/video, in the
            processor's order (merged blocks in raster order, then the merge_size**2 patches of a block).
        grid_thw: (t, h, w) patch grid, as in ``image_grid_thw``.

    Returns:
        Float tensor (t, 3, h * patch_size, w * patch_size) in [0, 1]; temporal patches are averaged.
    """
    t, h, w = (int(v) for v in grid_thw)
    m, p, tp = merge_size, patch_size, temporal_patch_size
    if h % m or w % m:
        raise ValueError(f"patch grid {h}x{w} is not divisible by merge_size {m}")
    expected = (t * h * w, 3 * tp * p * p)
    if tuple(pixel_values.shape) != expected:
        raise ValueError(f"pixel_values of shape {tuple(pixel_values.shape)} do not match grid {grid_thw}: {expected}")
    x = pixel_values.detach().float().reshape(t, h // m, w // m, m, m, 3, tp, p, p)
    x = x.mean(dim=6)  # average the temporal patch: (t, hm, wm, m, m, 3, p, p)
    x = x.permute(0, 5, 1, 3, 6, 2, 4, 7).reshape(t, 3, h * p, w * p)  # (t, 3, H, W)
    lo = x.amin(dim=(1, 2, 3), keepdim=True)
    hi = x.amax(dim=(1, 2, 3), keepdim=True)
    return (x - lo) / (hi - lo).clamp_min(1e-6)


def texture_from_patches(
    pixel_values: torch.Tensor,
    grid_thw: tuple[int, int, int],
    patch_size: int,
    merge_size: int,
    temporal_patch_size: int,
) -> torch.Tensor:
    """Texture array of one image or video from a Qwen-VL processor's flattened patches (see ``frames_from_patches``).

    Returns:
        Float tensor (t, 13, h // merge_size, w // merge_size).
    """
    x = frames_from_patches(pixel_values, grid_thw, patch_size, merge_size, temporal_patch_size)  # (t, 3, H, W)
    x = F.avg_pool2d(x, 2) if (patch_size * merge_size) % 4 == 0 else x  # half resolution, like texture_array
    _, h, w = (int(v) for v in grid_thw)
    return texture_from_pixels(x, h // merge_size, w // merge_size)


def texture_from_pixels(rgb: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """Texture array from images already resized to the grid.

    Args:
        rgb: (B, 3, rows * c, cols * c) in [0, 1], for some cell size c >= 2.

    Returns:
        (B, 13, rows, cols).
    """
    b, _, height, width = rgb.shape
    c = height // rows
    if c < 2 or height != rows * c or width != cols * c:
        raise ValueError(f"pixels {height}x{width} are not a {rows}x{cols} grid of cells of at least 2 px")
    cells = _pool(rgb, c)  # (B, 3, rows, cols)
    grey = (rgb * _GREY).sum(1, keepdim=True)  # (B, 1, H, W)

    ys = (torch.arange(rows, dtype=torch.float32) + 0.5) / rows
    xs = (torch.arange(cols, dtype=torch.float32) + 0.5) / cols
    pos = torch.stack(torch.meshgrid(ys, xs, indexing="ij")).expand(b, 2, rows, cols)  # (B, 2, rows, cols)

    # Sobel as separable slices (smooth [1, 2, 1] x derivative [-1, 0, 1]); far cheaper than conv2d on a CPU.
    padded = F.pad(grey, (1, 1, 1, 1), mode="replicate")  # (B, 1, H + 2, W + 2)
    dx = padded[..., 2:] - padded[..., :-2]  # (B, 1, H + 2, W)
    dy = padded[..., 2:, :] - padded[..., :-2, :]  # (B, 1, H, W + 2)
    gx = (dx[..., :-2, :] + 2 * dx[..., 1:-1, :] + dx[..., 2:, :]) / 8  # (B, 1, H, W)
    gy = (dy[..., :-2] + 2 * dy[..., 1:-1] + dy[..., 2:]) / 8
    mag = torch.sqrt(gx * gx + gy * gy)
    sobel = _pool(torch.cat([gx.abs(), gy.abs(), mag], 1), c)  # (B, 3, rows, cols)

    sample = mag.flatten(1)[:, :: max(1, mag[0].numel() // 16384)]  # a strided sample is enough for a quantile
    thresh = sample.kthvalue(max(1, int(EDGE_QUANTILE * sample.shape[1])), dim=1).values.clamp_min(1e-3)
    edge_density = _pool((mag > thresh.view(b, 1, 1, 1)).float(), c)  # (B, 1, rows, cols)

    entropy = _cell_entropy(grey, rows, cols, c)  # (B, 1, rows, cols)

    saliency = torch.cat(
        [_spectral_residual(grey, rows, cols), _centre_surround(cells), _colour_rarity(cells)], 1
    )  # (B, 3, rows, cols)
    return torch.cat([cells, pos, sobel, saliency, entropy, edge_density], 1)


def _pool(x: torch.Tensor, c: int) -> torch.Tensor:
    """Mean over each c x c cell: (B, C, rows * c, cols * c) -> (B, C, rows, cols)."""
    b, ch, height, width = x.shape
    return x.reshape(b, ch, height // c, c, width // c, c).mean(dim=(3, 5))


def _cell_entropy(grey: torch.Tensor, rows: int, cols: int, c: int) -> torch.Tensor:
    """Shannon entropy (nats) of each cell's 16-level grey histogram: (B, 1, H, W) -> (B, 1, rows, cols)."""
    b = grey.shape[0]
    levels = (grey[:, 0] * ENTROPY_BINS).long().clamp_(0, ENTROPY_BINS - 1)  # (B, H, W)
    cell = torch.arange(rows).repeat_interleave(c)[:, None] * cols + torch.arange(cols).repeat_interleave(c)
    index = (torch.arange(b).view(b, 1, 1) * rows * cols + cell) * ENTROPY_BINS + levels  # (B, H, W)
    hist = torch.bincount(index.flatten(), minlength=b * rows * cols * ENTROPY_BINS).float()
    p = hist.view(b, rows, cols, ENTROPY_BINS) / (c * c)
    return -(p * torch.log(p.clamp_min(1e-12))).sum(-1)[:, None]


def _spectral_residual(grey: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """Spectral residual saliency (Hou & Zhang, CVPR 2007) pooled to the grid: (B, 1, rows, cols) in [0, 1]."""
    _, _, height, width = grey.shape
    scale = SPECTRAL_SIDE / max(height, width)
    size = (max(8, round(height * scale)), max(8, round(width * scale)))
    small = F.interpolate(grey, size=size, mode="area")[:, 0]  # (B, h, w)
    spectrum = torch.fft.fft2(small)
    log_amp = torch.log(spectrum.abs() + 1e-8)
    residual = log_amp - F.avg_pool2d(F.pad(log_amp[:, None], (1, 1, 1, 1), mode="replicate"), 3, 1)[:, 0]
    sal = torch.fft.ifft2(torch.exp(torch.complex(residual, torch.angle(spectrum)))).abs() ** 2
    sal = _blur(sal[:, None], sigma=max(size) / 40)
    sal = F.interpolate(sal, size=(rows, cols), mode="bilinear", align_corners=False)
    return _unit(sal)


def _centre_surround(cells: torch.Tensor) -> torch.Tensor:
    """|cell grey - surround grey| with a surround of a few cells: (B, 1, rows, cols) in [0, 1]."""
    grey = (cells * _GREY).sum(1, keepdim=True)
    return _unit((grey - _blur(grey, sigma=max(grey.shape[-2:]) / 12)).abs())


def _colour_rarity(cells: torch.Tensor) -> torch.Tensor:
    """Distance of each cell's opponent colour from the image's mean colour: (B, 1, rows, cols) in [0, 1]."""
    r, g, b = cells[:, 0:1], cells[:, 1:2], cells[:, 2:3]
    opp = torch.cat([r - g, (r + g) / 2 - b, (r + g + b) / 3], 1)  # red-green, yellow-blue, intensity
    return _unit(torch.linalg.vector_norm(opp - opp.mean(dim=(2, 3), keepdim=True), dim=1, keepdim=True))


def _blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """Separable Gaussian blur of (B, C, H, W) with reflect-free replicate padding."""
    radius = max(1, int(math.ceil(2.5 * sigma)))
    k = torch.exp(-0.5 * (torch.arange(-radius, radius + 1, dtype=torch.float32) / max(sigma, 1e-3)) ** 2)
    k = (k / k.sum()).to(x.dtype)
    ch = x.shape[1]
    x = F.pad(x, (radius, radius, 0, 0), mode="replicate")
    x = F.conv2d(x, k.view(1, 1, 1, -1).expand(ch, 1, 1, -1), groups=ch)
    x = F.pad(x, (0, 0, radius, radius), mode="replicate")
    return F.conv2d(x, k.view(1, 1, -1, 1).expand(ch, 1, -1, 1), groups=ch)


def _unit(x: torch.Tensor) -> torch.Tensor:
    """Rescale each sample of (B, C, H, W) to [0, 1] on its own (never across the batch)."""
    lo = x.amin(dim=(1, 2, 3), keepdim=True)
    hi = x.amax(dim=(1, 2, 3), keepdim=True)
    return (x - lo) / (hi - lo).clamp_min(1e-8)
