"""The texture array: right shape, channels that mean what they say, same from pixels and from processor patches."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from arr_coc.config import RelevanceConfig
from arr_coc.families import families, get_family
from arr_coc.grid import GridSpec
from arr_coc.integrations.qwen_patches import texture_from_patches  # the Qwen line's patch layout
from arr_coc.texture import (
    CHANNELS,
    N_CHANNELS,
    texture_array,
    texture_from_frames,
    texture_from_pixels,
)

C = {n: i for i, n in enumerate(CHANNELS)}


def test_thirteen_channels_on_the_grid() -> None:
    assert N_CHANNELS == 13
    grid = GridSpec.for_family("qwen2.5-vl").grid_for(300, 450)
    x = texture_array(Image.new("RGB", (450, 300), (10, 200, 30)), grid)
    assert x.shape == (13, grid.rows, grid.cols)
    assert torch.allclose(x[0:3].mean((1, 2)), torch.tensor([10, 200, 30]) / 255.0, atol=1e-3)
    assert x[C["pos_y"], 0, 0] < x[C["pos_y"], -1, 0] and x[C["pos_x"], 0, 0] < x[C["pos_x"], 0, -1]
    assert x[C["sobel_mag"]].abs().max() < 1e-6 and x[C["entropy"]].abs().max() < 1e-6  # flat: no edges, no entropy


def test_edges_and_entropy_sit_where_the_ink_is() -> None:
    img = Image.new("RGB", (560, 280), "white")
    ImageDraw.Draw(img).rectangle([300, 100, 400, 180], outline="black", width=3)
    grid = GridSpec.for_family("qwen2.5-vl").grid_for(280, 560)
    x = texture_array(img, grid)
    r, c = np.unravel_index(int(x[C["sobel_mag"]].argmax()), (grid.rows, grid.cols))
    assert 300 // 28 - 1 <= c <= 400 // 28 + 1 and 100 // 28 - 1 <= r <= 180 // 28 + 1
    assert x[C["entropy"], 0, 0] == 0 and x[C["entropy"]].max() > 0.3
    assert x[C["edge_density"], 0, 0] == 0
    for name in ("sal_spectral", "sal_contrast", "sal_color"):
        assert 0 <= float(x[C[name]].min()) and float(x[C[name]].max()) <= 1


QWEN_RESIZE = [f.name for f in families() if f.resize is None and f.grid_rule is None]  # Qwen's patches, smart_resize


@pytest.mark.parametrize("family", QWEN_RESIZE)
def test_patches_give_the_same_texture(family: str) -> None:
    """texture_from_patches on the processor's pixel_values ~ texture_array on the image (same cells)."""
    proc_mod = pytest.importorskip("transformers.models.qwen2_vl.image_processing_pil_qwen2_vl")
    patch, merge = get_family(family).patch_size, get_family(family).merge_size
    spec = GridSpec.for_family(family)
    data = pytest.importorskip("skimage.data")
    img = Image.fromarray(data.astronaut()).resize((400, 300))
    grid = spec.grid_for(img.height, img.width)
    proc = proc_mod.Qwen2VLImageProcessorPil(
        patch_size=patch, merge_size=merge, size={"shortest_edge": spec.min_pixels, "longest_edge": spec.max_pixels}
    )
    out = proc(images=img, return_tensors="pt")
    t = texture_from_patches(out["pixel_values"], tuple(out["image_grid_thw"][0].tolist()), patch, merge, 2)
    ref = texture_array(img, grid)
    assert t.shape == (1, 13, grid.rows, grid.cols)
    for name in ("pos_y", "pos_x"):
        assert torch.allclose(t[0, C[name]], ref[C[name]])
    # Up to the processor's normalisation and bicubic (vs bilinear) resize; entropy bins shift the most.
    for name, least in (("r", 0.95), ("g", 0.95), ("b", 0.95), ("sobel_mag", 0.9), ("entropy", 0.8)):
        corr = np.corrcoef(t[0, C[name]].flatten(), ref[C[name]].flatten())[0, 1]
        assert corr > least, (name, corr)


@pytest.mark.parametrize("band", [0, 300])  # whole frames at once, and CPU bands of a few cell rows
def test_batch_invariance_and_bad_shapes(band: int) -> None:
    """Batch-invariant BY CONSTRUCTION, so compared bit for bit: all frames go through the same ops at once, each op
    working within a frame (element-wise or a reduction over one frame's values; the blur is a weighted sum over a
    window view, not a grouped conv2d whose kernel choice depended on the batch and differed by 1e-5 on an AMD EPYC).
    No tolerance is needed on any CPU."""
    cfg = RelevanceConfig()
    gen = torch.Generator().manual_seed(0)
    a, b = torch.rand(1, 3, 70, 98, generator=gen), torch.rand(1, 3, 70, 98, generator=gen) * 0.2
    both = texture_from_pixels(torch.cat([a, b, a]), 5, 7, cfg, band=band)
    assert torch.equal(both[0], texture_from_pixels(a, 5, 7, cfg, band=band)[0])
    assert torch.equal(both[1], texture_from_pixels(b, 5, 7, cfg, band=band)[0])
    assert torch.equal(both[2], both[0])
    with pytest.raises(ValueError, match="grid"):
        texture_from_pixels(torch.rand(1, 3, 71, 98), 5, 7)
    with pytest.raises(ValueError, match="do not match"):
        texture_from_patches(torch.rand(10, 3 * 2 * 14 * 14), (1, 4, 4), 14, 2, 2)


def test_cpu_bands_change_nothing_but_rounding() -> None:
    """Bands of cell rows (CPU) and whole frames (other devices, and ``band=0``) compute the same
    statistics: every channel but the spectral map bit for bit (each cell lies in one band, same ops; the edge
    threshold is an exact order statistic). The spectral map runs NumPy's FFT (float64 inside) with bands and torch's
    float32 FFT without (what a GPU runs): float32 rounding through a forward and an inverse FFT of a 64-px map, about
    log2(64) * 2 * 2**-24 relative per value, then a rescale to [0, 1]: 4e-6 leaves 5x room over the 8e-7 that bound
    gives and is ~30 float32 ulps of [0, 1]."""
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(2, 3, 12 * 14, 9 * 14, generator=gen)
    whole = texture_from_pixels(x, 12, 9, band=0)
    bands = texture_from_pixels(x, 12, 9, band=200)  # one cell row a band
    spectral = C["sal_spectral"]
    others = [i for i in range(13) if i != spectral]
    assert torch.equal(whole[:, others], bands[:, others])
    assert torch.allclose(whole[:, spectral], bands[:, spectral], atol=4e-6, rtol=0)


def test_uint8_and_float_frames_give_the_same_texture() -> None:
    """Float frames are rounded to uint8 levels first, so the processor's float pixels and allocate's uint8 pixels of
    the same image give the same bits."""
    gen = torch.Generator().manual_seed(2)
    u8 = torch.randint(0, 256, (1, 3, 4 * 28, 5 * 28), generator=gen, dtype=torch.uint8)
    noisy = u8.double() / 255 + (torch.rand(u8.shape, generator=gen, dtype=torch.float64) - 0.5) * 1e-3  # < 0.5/255
    assert torch.equal(texture_from_frames(u8, 4, 5), texture_from_frames(noisy.float(), 4, 5))
