"""Texture: the 13-channel texture array on the model's merged-patch grid.

Every channel is one number per visual token (grid cell), so the scorers downstream never see pixels:

    0-2   rgb            mean colour of the cell, in [0, 1]
    3-4   pos_y, pos_x   cell centre, in (0, 1)
    5-7   sobel_x/y/mag  mean absolute Sobel response of the cell's grey levels (edges, strokes of text)
    8-10  saliency       spectral residual (Hou & Zhang 2007), centre-surround grey contrast, colour rarity
    11-12 statistics     grey-level Shannon entropy of the cell (16 bins, in nats), edge density (share of
                         the cell's pixels whose gradient is in the frame's top 10%)

One entry point for every caller: :func:`texture_from_frames` takes frames at the PROCESSOR'S resolution (the
pixels the vision tower sees, ``rows * cell`` by ``cols * cell``), as uint8 or as floats in [0, 1], on any device.
``allocate`` gets them by resizing the image exactly as the processor does (:func:`frames_from_image`, PIL bicubic),
``compress`` by undoing the processor's patch flattening and normalisation (:func:`frames_from_patches`). Both are
quantised to the 256 levels of a uint8 image first, so the two paths see identical pixels and give identical
textures. The frames are then analysed at half resolution (14 px a cell for Qwen2/2.5-VL, 16 px for Qwen3-VL),
covering exactly the model's cells at a quarter of the cost.

Device and dtype: everything runs on the frames' device with no constant tensors of its own; statistics are
computed in float32 (float64 if given float64: histograms and FFTs need more than bfloat16's 8 bits).

Batch invariance by construction: each frame is computed on its own (a loop over frames), so a frame's texture
does not depend on the other frames of the batch, bit for bit. On a CPU the pixel-level work also runs in bands of
cell rows small enough that no op is split over intra-op threads (``RelevanceConfig.cpu_band_elements``): on a
busy machine each split op waits for a descheduled thread, which made the texture path 10-20x slower.

Example:
    >>> from PIL import Image
    >>> from arr_coc.grid import GridSpec
    >>> grid = GridSpec.for_family("qwen2.5-vl").grid_for(280, 560)
    >>> texture_array(Image.new("RGB", (560, 280)), grid).shape
    torch.Size([13, 10, 20])
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from .config import CHANNELS, RelevanceConfig  # noqa: F401  (CHANNELS: importable from here too)
from .grid import Grid
from .tensors import constant  # noqa: F401  (importable from here too; it lives in arr_coc.tensors)

N_CHANNELS = len(CHANNELS)


def frames_from_image(image: Image.Image, grid: Grid) -> torch.Tensor:
    """Resize ``image`` as a Qwen-VL image processor does (PIL bicubic to the grid's size), as uint8 frames.

    Returns:
        torch.ByteTensor of shape (1, 3, rows * cell, cols * cell) (a view of the resized image's array).
    """
    rgb = image if image.mode == "RGB" else image.convert("RGB")  # convert() copies even an RGB image
    resized = rgb.resize(grid.resized, Image.Resampling.BICUBIC)
    return torch.from_numpy(np.asarray(resized, dtype=np.uint8).copy()).permute(2, 0, 1).unsqueeze(0)


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
        std = constant([float(v) for v in image_std], x).view(1, 3, 1, 1)
        mean = constant([float(v) for v in image_mean], x).view(1, 3, 1, 1)
        return (x * std + mean).clamp(0.0, 1.0)
    lo = x.amin(dim=(1, 2, 3), keepdim=True)
    hi = x.amax(dim=(1, 2, 3), keepdim=True)
    return (x - lo) / (hi - lo).clamp_min(1e-6)


def texture_from_frames(
    frames: torch.Tensor, rows: int, cols: int, config: RelevanceConfig | None = None
) -> torch.Tensor:
    """The texture array of frames at the processor's resolution: the one texture path of ``allocate`` and
    ``compress``.

    Args:
        frames (torch.Tensor of shape (T, 3, rows * cell, cols * cell)): uint8 in [0, 255] or floats in [0, 1]
            (rounded to the nearest uint8 level first), any device.
        rows, cols: the merged-token grid.
        config: the relevance config (default ``RelevanceConfig()``).

    Returns:
        torch.Tensor of shape (T, 13, rows, cols), float32 (float64 if given float64), on the frames' device.
    """
    cfg = config or RelevanceConfig()
    if frames.dim() != 4 or frames.shape[1] != 3:
        raise ValueError(f"frames must have shape (T, 3, H, W), got {tuple(frames.shape)}")
    _, _, height, width = frames.shape
    cell = height // max(rows, 1)
    if rows < 1 or cols < 1 or cell < 2 or height != rows * cell or width != cols * cell:
        raise ValueError(f"frames of {height}x{width} pixels are not a {rows}x{cols} grid of cells of at least 2 px")
    if frames.dtype != torch.uint8 and not frames.is_floating_point():
        raise ValueError(f"frames must be uint8 or floating point, got {frames.dtype}")
    dtype = torch.float64 if frames.dtype == torch.float64 else torch.float32
    f = 2 if cfg.half_resolution and cell % 4 == 0 else 1  # analysis pixels are f x f frame pixels
    t = frames.shape[0]
    parts = []
    # chunks of frame rows, each op below the CPU's intra-op split size (see _band_rows); one chunk elsewhere
    step = height
    if frames.device.type == "cpu" and cfg.cpu_band_elements > 0:
        step = min(height, max(f, cfg.cpu_band_elements // (3 * t * width * f) * f))
    for y0 in range(0, height, step):
        part = frames[:, :, y0 : y0 + step].to(dtype)  # (T, 3, h, W)
        if frames.dtype == torch.uint8:
            part = part / 255.0
        else:
            part = (part.clamp(0.0, 1.0) * 255.0).round() / 255.0  # the 256 levels of a uint8 image
        if f > 1:
            # f x f mean as a sum of f*f strided views (element-wise adds stay below the intra-op split size; a
            # reduction over the non-adjacent dims of a reshape is several times slower on a CPU)
            acc = part[:, :, 0::f, 0::f]
            for dy in range(f):
                for dx in range(f):
                    if dy or dx:
                        acc = acc + part[:, :, dy::f, dx::f]
            part = acc * (1.0 / (f * f))  # (T, 3, h / f, W / f)
        parts.append(part)
    return texture_from_pixels(_join(parts, 2), rows, cols, cfg)  # (T, 3, H / f, W / f)


def _join(parts: list[torch.Tensor], dim: int) -> torch.Tensor:
    """``torch.cat(parts, dim)`` written chunk by chunk into one tensor (each copy below the intra-op split size, where
    one frame-sized ``cat`` would be split over threads); a single part is returned as it is."""
    if len(parts) == 1:
        return parts[0]
    shape = list(parts[0].shape)
    shape[dim] = sum(p.shape[dim] for p in parts)
    out = parts[0].new_empty(shape)
    start = 0
    for p in parts:
        out.narrow(dim, start, p.shape[dim]).copy_(p)
        start += p.shape[dim]
    return out


def texture_array(image: Image.Image, grid: Grid, config: RelevanceConfig | None = None) -> torch.Tensor:
    """The 13-channel texture array of ``image`` on ``grid`` (resized as the processor does).

    Returns:
        torch.Tensor of shape (13, rows, cols).
    """
    return texture_from_frames(frames_from_image(image, grid), grid.rows, grid.cols, config)[0]


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


def texture_from_pixels(rgb: torch.Tensor, rows: int, cols: int, config: RelevanceConfig | None = None) -> torch.Tensor:
    """Texture array from images already at the analysis resolution, one frame at a time (batch-invariant).

    Args:
        rgb (torch.Tensor of shape (B, 3, rows * c, cols * c)): floats in [0, 1], for some cell size c >= 2.
        rows, cols: the grid.
        config: the relevance config (default ``RelevanceConfig()``).

    Returns:
        torch.Tensor of shape (B, 13, rows, cols), in the dtype of ``rgb`` (float32 for lower precisions).
    """
    cfg = config or RelevanceConfig()
    if rgb.dim() != 4 or rgb.shape[1] != 3:
        raise ValueError(f"pixels must have shape (B, 3, H, W), got {tuple(rgb.shape)}")
    _, _, height, width = rgb.shape
    c = height // max(rows, 1)
    if rows < 1 or cols < 1 or c < 2 or height != rows * c or width != cols * c:
        raise ValueError(f"pixels {height}x{width} are not a {rows}x{cols} grid of cells of at least 2 px")
    if rgb.dtype not in (torch.float32, torch.float64):
        rgb = rgb.float()
    return torch.stack([_texture_one(frame, rows, cols, c, cfg) for frame in rgb])  # (B, 13, rows, cols)


def _band_rows(rgb: torch.Tensor, rows: int, c: int, cfg: RelevanceConfig) -> int:
    """Cell rows per band: all of them off the CPU; on the CPU as many as keep a padded single-channel band below
    ``cfg.cpu_band_elements`` elements (at least one)."""
    if rgb.device.type != "cpu" or cfg.cpu_band_elements <= 0:
        return rows
    width = rgb.shape[-1] + 2
    return max(1, min(rows, (cfg.cpu_band_elements // width - 2) // c))


def _texture_one(rgb: torch.Tensor, rows: int, cols: int, c: int, cfg: RelevanceConfig) -> torch.Tensor:
    """Texture of one frame (3, rows * c, cols * c) -> (13, rows, cols); pixel work in bands of cell rows."""
    _, height, width = rgb.shape
    wr, wg, wb = (float(v) for v in cfg.grey_weights)
    bins = int(cfg.entropy_bins)
    step = max(1, height * width // int(cfg.edge_sample))  # stride of the edge-quantile sample
    k = _band_rows(rgb, rows, c, cfg)
    cells, sobel, hists, greys, mags, samples = [], [], [], [], [], []
    for r0 in range(0, rows, k):
        r1 = min(rows, r0 + k)
        y0, y1 = r0 * c, r1 * c
        top, bottom = max(y0 - 1, 0), min(y1 + 1, height)
        x = rgb[:, top:bottom]  # (3, h + halo, W)
        grey = x[0] * wr + x[1] * wg + x[2] * wb  # (h + halo, W)
        if y0 == 0:
            grey = torch.cat([grey[:1], grey])  # replicate the first row
        if y1 == height:
            grey = torch.cat([grey, grey[-1:]])  # replicate the last row
        grey = torch.cat([grey[:, :1], grey, grey[:, -1:]], 1)  # (h + 2, W + 2)
        # Sobel as separable slices (smooth [1, 2, 1] x derivative [-1, 0, 1]); far cheaper than conv2d on a CPU.
        dx = grey[:, 2:] - grey[:, :-2]  # (h + 2, W)
        dy = grey[2:, :] - grey[:-2, :]  # (h, W + 2)
        gx = (dx[:-2] + 2 * dx[1:-1] + dx[2:]) / 8  # (h, W)
        gy = (dy[:, :-2] + 2 * dy[:, 1:-1] + dy[:, 2:]) / 8  # (h, W)
        mag = torch.hypot(gx, gy)  # (h, W); a binary op: torch splits it over threads only above 32,768 elements
        core = grey[1:-1, 1:-1]  # (h, W)
        cells.append(torch.stack([_pool(rgb[i, y0:y1], c) for i in range(3)]))  # (3, r1 - r0, cols)
        sobel.append(torch.stack([_pool(gx.abs(), c), _pool(gy.abs(), c), _pool(mag, c)]))  # (3, r1 - r0, cols)
        hists.append(_cell_histogram(core, c, cols, bins))  # (r1 - r0, cols, bins)
        greys.append(core)
        mags.append(mag)
        samples.append(mag.flatten()[(-y0 * width) % step :: step])  # the frame's strided sample, band by band
    cells_t = torch.cat(cells, 1)  # (3, rows, cols)
    sample = torch.cat(samples)  # (S,)
    kth = max(1, int(cfg.edge_quantile * sample.numel()))
    thresh = sample.kthvalue(kth).values.clamp_min(cfg.edge_floor)  # ()
    edge_density = torch.cat([_pool((m > thresh).to(m.dtype), c) for m in mags])[None]  # (1, rows, cols)
    p = torch.cat(hists) / (c * c)  # (rows, cols, bins)
    entropy = -torch.special.xlogy(p, p).sum(-1)[None]  # (1, rows, cols); 0 log 0 = 0

    ys = (torch.arange(rows, device=rgb.device, dtype=rgb.dtype) + 0.5) / rows  # (rows,)
    xs = (torch.arange(cols, device=rgb.device, dtype=rgb.dtype) + 0.5) / cols  # (cols,)
    pos = torch.stack(torch.meshgrid(ys, xs, indexing="ij"))  # (2, rows, cols)
    grey_cells = cells_t[0] * wr + cells_t[1] * wg + cells_t[2] * wb  # (rows, cols)
    saliency = torch.stack(
        [
            _spectral_residual(_join(greys, 0), rows, cols, cfg),
            _unit((grey_cells - _blur(grey_cells, max(rows, cols) / cfg.surround)).abs()),  # centre-surround
            _colour_rarity(cells_t),
        ]
    )  # (3, rows, cols)
    return torch.cat([cells_t, pos, torch.cat(sobel, 1), saliency, entropy, edge_density])  # (13, rows, cols)


def _pool(x: torch.Tensor, c: int) -> torch.Tensor:
    """Mean over each c x c cell: (rows * c, cols * c) -> (rows, cols)."""
    height, width = x.shape
    return x.reshape(height // c, c, width // c, c).mean(dim=(1, 3))


def _cell_histogram(grey: torch.Tensor, c: int, cols: int, bins: int) -> torch.Tensor:
    """Counts of each cell's ``bins``-level grey histogram: (k * c, cols * c) -> (k, cols, bins).

    A scatter-add of ones: exact counts on every device, and a fixed output shape (unlike ``bincount``).
    """
    height, width = grey.shape
    levels = (grey * bins).long().clamp_(0, bins - 1)  # (h, W)
    row_cell = torch.arange(height, device=grey.device) // c  # (h,)
    col_cell = torch.arange(width, device=grey.device) // c  # (W,)
    index = (row_cell[:, None] * cols + col_cell[None, :]) * bins + levels  # (h, W)
    counts = grey.new_zeros((height // c) * cols * bins)  # (k * cols * bins,)
    counts.scatter_add_(0, index.flatten(), torch.ones_like(grey).flatten())
    return counts.view(height // c, cols, bins)


def _spectral_residual(grey: torch.Tensor, rows: int, cols: int, cfg: RelevanceConfig) -> torch.Tensor:
    """Spectral residual saliency (Hou & Zhang, CVPR 2007) of a grey frame (H, W), pooled to (rows, cols) in [0, 1]."""
    height, width = grey.shape
    scale = cfg.spectral_side / max(height, width)
    size = (max(8, round(height * scale)), max(8, round(width * scale)))
    small = F.interpolate(grey[None, None], size=size, mode="area")[0, 0]  # (h, w)
    if small.device.type == "cpu":
        # NumPy's FFT, log and exp run on one thread: torch splits these over intra-op threads from ~2,000
        # elements, and on a busy machine a (64, 53) map then waits for descheduled threads (3x slower)
        spectrum_np = np.fft.fft2(small.numpy())  # (h, w) complex
        log_amp = torch.from_numpy(np.log(np.abs(spectrum_np) + 1e-8)).to(small.dtype)  # (h, w)
        residual = (log_amp - _box3(log_amp)).numpy()
        sal_np = np.abs(np.fft.ifft2(np.exp(residual + 1j * np.angle(spectrum_np)))) ** 2  # (h, w)
        sal = torch.from_numpy(sal_np).to(small.dtype)
    else:
        spectrum = torch.fft.fft2(small)
        log_amp = torch.log(spectrum.abs() + 1e-8)  # (h, w)
        residual = log_amp - _box3(log_amp)
        sal = torch.fft.ifft2(torch.exp(torch.complex(residual, torch.angle(spectrum)))).abs() ** 2  # (h, w)
    sal = _blur(sal, sigma=max(size) / cfg.spectral_blur)
    sal = F.interpolate(sal[None, None], size=(rows, cols), mode="bilinear", align_corners=False)[0, 0]
    return _unit(sal)


def _colour_rarity(cells: torch.Tensor) -> torch.Tensor:
    """Distance of each cell's opponent colour from the frame's mean colour: (3, rows, cols) -> (rows, cols), [0, 1]."""
    r, g, b = cells[0], cells[1], cells[2]
    opp = torch.stack([r - g, (r + g) / 2 - b, (r + g + b) / 3])  # red-green, yellow-blue, intensity
    return _unit(torch.linalg.vector_norm(opp - opp.mean(dim=(1, 2), keepdim=True), dim=0))


def _box3(x: torch.Tensor) -> torch.Tensor:
    """3 x 3 mean with replicate padding, as sums of shifted slices: (H, W) -> (H, W)."""
    p = torch.cat([x[:1], x, x[-1:]])
    p = torch.cat([p[:, :1], p, p[:, -1:]], 1)  # (H + 2, W + 2)
    rows = p[:-2] + p[1:-1] + p[2:]  # (H, W + 2)
    return (rows[:, :-2] + rows[:, 1:-1] + rows[:, 2:]) / 9


def _blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """Separable Gaussian blur of (H, W) with replicate padding.

    A weighted sum of shifted slices with Python-float weights: every output element goes through the same float
    operations whatever the frame's size or neighbours (no conv kernel choice), and no constant tensor is made.
    """
    radius = max(1, int(math.ceil(2.5 * sigma)))
    weights = [math.exp(-0.5 * (i / max(sigma, 1e-3)) ** 2) for i in range(-radius, radius + 1)]
    total = sum(weights)
    weights = [w / total for w in weights]
    height, width = x.shape
    p = torch.cat([x[:, :1].expand(height, radius), x, x[:, -1:].expand(height, radius)], 1)  # (H, W + 2r)
    out = p[:, 0:width] * weights[0]
    for i in range(1, 2 * radius + 1):
        out = out + p[:, i : i + width] * weights[i]  # (H, W)
    p = torch.cat([out[:1].expand(radius, width), out, out[-1:].expand(radius, width)])  # (H + 2r, W)
    out = p[0:height] * weights[0]
    for i in range(1, 2 * radius + 1):
        out = out + p[i : i + height] * weights[i]
    return out


def _unit(x: torch.Tensor) -> torch.Tensor:
    """Rescale one map to [0, 1] on its own."""
    lo, hi = x.amin(), x.amax()
    return (x - lo) / (hi - lo).clamp_min(1e-8)
