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
``compress`` and the vLLM plugin by undoing the processor's patch flattening and normalisation (each family's layout:
its adapter's ``patch_frames``, in :mod:`arr_coc.integrations`). Both are quantised to the 256 levels of a uint8
image first, so the two paths see identical pixels and give identical textures. The frames are then analysed at half
resolution (14 px a cell for 28-px tokens, 16 px for 32-px tokens), covering exactly the model's cells at a quarter
of the cost.

Device and dtype: everything runs on the frames' device; the few constants (grey weights, cell positions, histogram
indices, blur weights) are built once per size, device and dtype (``arr_coc.tensors.CONSTANTS``); statistics are
computed in float32 (float64 if given float64: histograms and FFTs need more than bfloat16's 8 bits).

All frames in one pass: every op takes the whole (T, ...) batch, so T frames cost the ops of one (76 aten ops,
``benchmarks/decision_ops.py``), and each op works within a frame (element-wise, or a reduction over one frame's
values), so a frame's texture does not depend on the other frames of the batch, bit for bit (tested). On a CPU the
pixel-level work also runs in bands of cell rows small enough that no op is split over intra-op threads
(``band``, ``arr_coc.engine.EngineConfig.cpu_band_elements``; 0 turns the bands off and runs exactly the ops a GPU
runs): on a busy machine each split op waits for a descheduled thread, which made the texture path 10-20x slower.

Example:
    >>> from PIL import Image
    >>> from arr_coc.grid import GridSpec
    >>> grid = GridSpec(patch_size=14, merge_size=2, min_pixels=56 * 56, max_pixels=1280 * 28 * 28).grid_for(280, 560)
    >>> texture_array(Image.new("RGB", (560, 280)), grid).shape
    torch.Size([13, 10, 20])
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from .config import CHANNELS, RelevanceConfig  # noqa: F401  (CHANNELS: importable from here too)
from .grid import Grid
from .tensors import CONSTANTS, constant  # noqa: F401  (constant: importable from here too; it lives in arr_coc.tensors)

# The CPU bands' default size in single-channel elements (``texture_from_frames``' ``band``; the engine's
# ``EngineConfig.cpu_band_elements``): just below the 32,768 elements above which PyTorch splits an op over threads.
DEFAULT_CPU_BAND = 32767

N_CHANNELS = len(CHANNELS)


def frames_from_image(image: Image.Image, grid: Grid) -> torch.Tensor:
    """Resize ``image`` as the model's image processor does (PIL bicubic to the grid's size), as uint8 frames.

    Returns:
        torch.ByteTensor of shape (1, 3, rows * cell, cols * cell) (a view of the resized image's array).
    """
    rgb = image if image.mode == "RGB" else image.convert("RGB")  # convert() copies even an RGB image
    resized = rgb.resize(grid.resized, Image.Resampling.BICUBIC)
    return torch.from_numpy(np.asarray(resized, dtype=np.uint8).copy()).permute(2, 0, 1).unsqueeze(0)


def texture_from_frames(
    frames: torch.Tensor, rows: int, cols: int, config: RelevanceConfig | None = None, *, band: int = DEFAULT_CPU_BAND
) -> torch.Tensor:
    """The texture array of frames at the processor's resolution: the one texture path of ``allocate`` and
    ``compress``.

    Args:
        frames (torch.Tensor of shape (T, 3, rows * cell, cols * cell)): uint8 in [0, 255] or floats in [0, 1]
            (rounded to the nearest uint8 level first), any device.
        rows, cols: the merged-token grid.
        config: the relevance config (default ``RelevanceConfig()``).
        band: on a CPU, the pixel work's bands stay below this many single-channel elements (0: whole frames, the
            ops a GPU runs; ``arr_coc.engine.EngineConfig.cpu_band_elements``). The result is the same up to float
            rounding.

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
    banded = frames.device.type == "cpu" and band > 0
    if banded:
        step = min(height, max(f, band // (3 * t * width * f) * f))
    for y0 in range(0, height, step):
        part = frames[:, :, y0 : y0 + step].to(dtype)  # (T, 3, h, W)
        if frames.dtype == torch.uint8:
            part = part / 255.0
        else:
            part = (part.clamp(0.0, 1.0) * 255.0).round() / 255.0  # the 256 levels of a uint8 image
        if f > 1 and not banded:
            # f x f mean: one pooling op, summing the f*f pixels in raster order and dividing by f*f (a power of two
            # here, so bit for bit the CPU's sum of strided views times 1 / f**2 below)
            part = F.avg_pool2d(part, f)  # (T, 3, h / f, W / f)
        elif f > 1:
            # the same mean as a sum of f*f strided views: element-wise adds stay below the intra-op split size, and
            # the CPU's pooling kernel is several times slower
            acc = part[:, :, 0::f, 0::f]
            for dy in range(f):
                for dx in range(f):
                    if dy or dx:
                        acc = acc + part[:, :, dy::f, dx::f]
            part = acc * (1.0 / (f * f))  # (T, 3, h / f, W / f)
        parts.append(part)
    return texture_from_pixels(_join(parts, 2), rows, cols, cfg, band=band)  # (T, 3, H / f, W / f)


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


def texture_from_pixels(
    rgb: torch.Tensor, rows: int, cols: int, config: RelevanceConfig | None = None, *, band: int = DEFAULT_CPU_BAND
) -> torch.Tensor:
    """Texture array from images already at the analysis resolution, all frames in one pass (batch-invariant).

    Args:
        rgb (torch.Tensor of shape (B, 3, rows * c, cols * c)): floats in [0, 1], for some cell size c >= 2.
        rows, cols: the grid.
        config: the relevance config (default ``RelevanceConfig()``).
        band: the CPU bands' size in elements (0: off), as in :func:`texture_from_frames`.

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
    return _texture(rgb, rows, cols, c, cfg, int(band))


def _band_rows(rgb: torch.Tensor, rows: int, c: int, band: int) -> int:
    """Cell rows per band: all of them off the CPU; on the CPU as many as keep a padded single-channel band of all
    frames below ``band`` elements (at least one)."""
    if rgb.device.type != "cpu" or band <= 0:
        return rows
    width = (rgb.shape[-1] + 2) * rgb.shape[0]
    return max(1, min(rows, (band // width - 2) // c))


def _texture(rgb: torch.Tensor, rows: int, cols: int, c: int, cfg: RelevanceConfig, band: int) -> torch.Tensor:
    """Texture of B frames (B, 3, rows * c, cols * c) -> (B, 13, rows, cols), every frame in the same ops.

    Each op works per frame (element-wise, or a reduction within one frame), so a frame's result does not depend on
    the others. On a CPU the pixel work runs in bands of cell rows (``_band_rows``); elsewhere in one band.
    """
    b, _, height, width = rgb.shape
    luma = _luma(cfg, rgb)  # (1, 3, 1, 1)
    bins = int(cfg.entropy_bins)
    step = max(1, height * width // int(cfg.edge_sample))  # stride of the edge-quantile sample
    k = _band_rows(rgb, rows, c, band)
    cells, sobel, hists, greys, mags, samples = [], [], [], [], [], []
    for r0 in range(0, rows, k):
        r1 = min(rows, r0 + k)
        y0, y1 = r0 * c, r1 * c
        top, bottom = max(y0 - 1, 0), min(y1 + 1, height)
        x = rgb[:, :, top:bottom]  # (B, 3, h + halo, W)
        grey = (x * luma).sum(1)  # (B, h + halo, W); the same bits as x[:, 0] * wr + x[:, 1] * wg + x[:, 2] * wb
        # replicate the first / last row (at the frame's edges) and the first / last column
        grey = F.pad(grey[:, None], (1, 1, int(y0 == 0), int(y1 == height)), mode="replicate")[:, 0]  # (B, h+2, W+2)
        # Sobel as separable slices (smooth [1, 2, 1] x derivative [-1, 0, 1]); far cheaper than conv2d on a CPU.
        # Eight times the Sobel response: its 1 / 8 is applied once to the pooled cells below, and the edge threshold
        # is compared at eight times its floor. Scaling by a power of two is exact and commutes with every rounding
        # here (sums, means, hypot, the quantile), so the channels and the edge density keep their bits.
        dx = grey[:, :, 2:] - grey[:, :, :-2]  # (B, h + 2, W)
        dy = grey[:, 2:, :] - grey[:, :-2, :]  # (B, h, W + 2)
        # a + 2 b + c with add's alpha: 2 b is exact, so one op gives the bits of a + 2 * b (fused or not)
        gx = torch.add(dx[:, :-2], dx[:, 1:-1], alpha=2) + dx[:, 2:]  # (B, h, W), 8 x Sobel
        gy = torch.add(dy[:, :, :-2], dy[:, :, 1:-1], alpha=2) + dy[:, :, 2:]  # (B, h, W), 8 x Sobel
        mag = torch.hypot(gx, gy)  # (B, h, W), 8 x the gradient magnitude
        core = grey[:, 1:-1, 1:-1]  # (B, h, W)
        cells.append(_pool(rgb[:, :, y0:y1], c))  # (B, 3, r1 - r0, cols)
        sobel.append(_pool(torch.stack([gx, gy, mag], 1).abs(), c))  # (B, 3, r1 - r0, cols); |mag| is mag
        hists.append(_cell_histogram(core, c, cols, bins))  # (B, r1 - r0, cols, bins)
        greys.append(core)
        mags.append(mag)
        samples.append(mag.flatten(1)[:, (-y0 * width) % step :: step])  # the frame's strided sample, band by band
    cells_t = _join(cells, 2)  # (B, 3, rows, cols)
    sample = _join(samples, 1)  # (B, S)
    kth = max(1, int(cfg.edge_quantile * sample.shape[1]))
    thresh = sample.kthvalue(kth, dim=1, keepdim=True).values.clamp_min(8 * cfg.edge_floor)[:, :, None]  # (B, 1, 1)
    edge_density = _join([_pool(m > thresh, c, m.dtype) for m in mags], 1)  # (B, rows, cols)
    p = _join(hists, 1) / (c * c)  # (B, rows, cols, bins)
    entropy = torch.special.entr(p).sum(-1)  # (B, rows, cols); entr(p) = -p log p, 0 at p = 0

    pos = _positions(rows, cols, rgb).expand(b, 2, rows, cols)  # (B, 2, rows, cols)
    grey_cells = (cells_t * luma).sum(1)  # (B, rows, cols)
    saliency = _unit(
        torch.stack(
            [
                _spectral_residual(_join(greys, 1), rows, cols, cfg, band),
                (grey_cells - _blur(grey_cells, max(rows, cols) / cfg.surround)).abs(),  # centre-surround
                _colour_rarity(cells_t),
            ],
            1,
        )
    )  # (B, 3, rows, cols), each map rescaled to [0, 1] on its own
    sobel_t = _join(sobel, 2) / 8  # (B, 3, rows, cols): the 1 / 8 of the Sobel kernel, once
    return torch.cat([cells_t, pos, sobel_t, saliency, entropy[:, None], edge_density[:, None]], 1)


def _luma(cfg: RelevanceConfig, like: torch.Tensor) -> torch.Tensor:
    """The RGB -> grey weights (1, 3, 1, 1), cached per weights, device and dtype. A weighted sum over the 3
    channels (multiply, then a sum over dim 1) adds in channel order from zero: the bits of the three products added
    one by one."""
    weights = tuple(float(v) for v in cfg.grey_weights)
    return CONSTANTS.get(
        ("texture.luma", weights, like.device, like.dtype),
        lambda: torch.tensor(weights, dtype=like.dtype).to(like.device).view(1, 3, 1, 1),
    )


def _positions(rows: int, cols: int, like: torch.Tensor) -> torch.Tensor:
    """Cell centres (2, rows, cols) in (0, 1): y then x, cached per size, device and dtype."""

    def build() -> torch.Tensor:
        ys = (torch.arange(rows, device=like.device, dtype=like.dtype) + 0.5) / rows  # (rows,)
        xs = (torch.arange(cols, device=like.device, dtype=like.dtype) + 0.5) / cols  # (cols,)
        return torch.stack(torch.meshgrid(ys, xs, indexing="ij"))  # (2, rows, cols)

    return CONSTANTS.get(("texture.positions", rows, cols, like.device, like.dtype), build)


def _pool(x: torch.Tensor, c: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Mean over each c x c cell of the last two dims: (..., rows * c, cols * c) -> (..., rows, cols); a boolean ``x``
    is averaged in ``dtype`` (one op: the mean casts, with the bits of casting first)."""
    *lead, height, width = x.shape
    return x.reshape(*lead, height // c, c, width // c, c).mean(dim=(-3, -1), dtype=dtype)


def _cell_histogram(grey: torch.Tensor, c: int, cols: int, bins: int) -> torch.Tensor:
    """Counts of each cell's ``bins``-level grey histogram: (B, k * c, cols * c) -> (B, k, cols, bins).

    A scatter-add of ones: exact counts on every device, and a fixed output shape (unlike ``bincount``).
    """
    b, height, width = grey.shape
    levels = (grey * bins).long().clamp_(0, bins - 1)  # (B, h, W)

    def build() -> tuple[torch.Tensor, torch.Tensor]:
        row_cell = torch.arange(height, device=grey.device) // c  # (h,)
        col_cell = torch.arange(width, device=grey.device) // c  # (W,)
        frame = torch.arange(b, device=grey.device)[:, None, None] * ((height // c) * cols * bins)  # (B, 1, 1)
        base = frame + (row_cell[:, None] * cols + col_cell[None, :]) * bins  # (B, h, W): the cell's first bin
        ones = torch.ones(b * height * width, device=grey.device, dtype=grey.dtype)
        return base, ones, grey.new_zeros(b * (height // c) * cols * bins, device=grey.device)

    key = ("texture.histogram", b, height, width, c, cols, bins, grey.device, grey.dtype)
    base, ones, zeros = CONSTANTS.get(key, build)
    counts = torch.scatter_add(zeros, 0, (base + levels).flatten(), ones)  # (B * k * cols * bins,): a new tensor
    return counts.view(b, height // c, cols, bins)


def _spectral_residual(grey: torch.Tensor, rows: int, cols: int, cfg: RelevanceConfig, band: int) -> torch.Tensor:
    """Spectral residual saliency (Hou & Zhang, CVPR 2007) of grey frames (B, H, W), pooled to (B, rows, cols)
    (not yet rescaled: the caller rescales each map to [0, 1])."""
    _, height, width = grey.shape
    scale = cfg.spectral_side / max(height, width)
    size = (max(8, round(height * scale)), max(8, round(width * scale)))
    small = F.interpolate(grey[:, None], size=size, mode="area")[:, 0]  # (B, h, w)
    if small.device.type == "cpu" and band > 0:
        # NumPy's FFT, log and exp run on one thread: torch splits these over intra-op threads from ~2,000
        # elements, and on a busy machine a (64, 53) map then waits for descheduled threads (3x slower). A CPU
        # detail like the bands: with ``band=0`` the CPU runs the torch ops a GPU runs.
        spectrum_np = np.fft.fft2(small.numpy())  # (B, h, w) complex, each frame on its own
        log_amp = torch.from_numpy(np.log(np.abs(spectrum_np) + 1e-8)).to(small.dtype)  # (B, h, w)
        residual = (log_amp - _box3(log_amp)).numpy()
        sal_np = np.abs(np.fft.ifft2(np.exp(residual + 1j * np.angle(spectrum_np)))) ** 2  # (B, h, w)
        sal = torch.from_numpy(sal_np).to(small.dtype)
    else:
        spectrum = torch.fft.fft2(small)  # (B, h, w) complex
        log_amp = torch.log(spectrum.abs() + 1e-8)  # (B, h, w)
        residual = log_amp - _box3(log_amp)
        sal = torch.fft.ifft2(torch.exp(torch.complex(residual, torch.angle(spectrum)))).abs() ** 2  # (B, h, w)
    sal = _blur(sal, sigma=max(size) / cfg.spectral_blur)
    return F.interpolate(sal[:, None], size=(rows, cols), mode="bilinear", align_corners=False)[:, 0]


def _colour_rarity(cells: torch.Tensor) -> torch.Tensor:
    """Distance of each cell's opponent colour from its frame's mean colour: (B, 3, rows, cols) -> (B, rows, cols)
    (not yet rescaled)."""
    r, g, b = cells[:, 0], cells[:, 1], cells[:, 2]
    rg = r + g
    # red-green, blue-yellow, intensity. Blue-yellow is b - rg / 2 in one op (sub's alpha; rg / 2 is exact): the
    # negative of yellow-blue bit for bit, and the distance below does not see a channel's sign
    opp = torch.stack([r - g, torch.sub(b, rg, alpha=0.5), (rg + b) / 3], 1)
    return torch.linalg.vector_norm(opp - opp.mean(dim=(2, 3), keepdim=True), dim=1)


def _box3(x: torch.Tensor) -> torch.Tensor:
    """3 x 3 mean with replicate padding: (B, H, W) -> (B, H, W)."""
    return F.avg_pool2d(F.pad(x[:, None], (1, 1, 1, 1), mode="replicate"), 3, stride=1)[:, 0]


def _gaussian(sigma: float, like: torch.Tensor) -> torch.Tensor:
    """Normalised Gaussian weights (2r + 1,) with r = ceil(2.5 sigma), cached per sigma, device and dtype."""

    def build() -> torch.Tensor:
        radius = max(1, int(math.ceil(2.5 * sigma)))
        weights = [math.exp(-0.5 * (i / max(sigma, 1e-3)) ** 2) for i in range(-radius, radius + 1)]
        total = sum(weights)
        return torch.tensor([w / total for w in weights], dtype=like.dtype).to(like.device)

    return CONSTANTS.get(("texture.gaussian", float(sigma), like.device, like.dtype), build)


def _blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """Separable Gaussian blur of (B, H, W) with replicate padding: (B, H, W).

    Each pass is a weighted sum over a window view (``unfold``): a few ops whatever the radius, and each output
    element goes through the same float operations whatever the frame's size or its neighbours in the batch (no
    conv kernel choice, which depended on the batch size on some CPUs).
    """
    weights = _gaussian(sigma, x)  # (2r + 1,)
    radius = (weights.shape[0] - 1) // 2
    p = F.pad(x[:, None], (radius, radius, radius, radius), mode="replicate")[:, 0]  # (B, H + 2r, W + 2r)
    p = (p.unfold(2, 2 * radius + 1, 1) * weights).sum(-1)  # (B, H + 2r, W)
    return (p.unfold(1, 2 * radius + 1, 1) * weights).sum(-1)  # (B, H, W)


def _unit(x: torch.Tensor) -> torch.Tensor:
    """Rescale each map of the last two dims to [0, 1] on its own: (..., H, W) -> (..., H, W)."""
    flat = x.flatten(-2)  # (..., H * W)
    lo, hi = torch.aminmax(flat, dim=-1, keepdim=True)  # (..., 1) each
    return ((flat - lo) / (hi - lo).clamp_min(1e-8)).view(x.shape)
