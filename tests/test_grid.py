"""The grid must be exactly the model's: same resize as the processor, cell (r, c) = visual token r * cols + c."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from arr_coc.families import families, family_names, get_family
from arr_coc.grid import GridSpec, normalize_family, smart_resize

hf_resize = pytest.importorskip("transformers.models.qwen2_vl.image_processing_pil_qwen2_vl").smart_resize


@settings(max_examples=300, deadline=None)
@given(
    h=st.integers(1, 9000),
    w=st.integers(1, 9000),
    factor=st.sampled_from([28, 32]),
    max_tokens=st.sampled_from([4, 64, 256, 1280, 16384]),
)
def test_smart_resize_matches_transformers(h: int, w: int, factor: int, max_tokens: int) -> None:
    lo, hi = 56 * 56, max_tokens * factor * factor
    if max(h, w) / min(h, w) > 200:
        with pytest.raises(ValueError, match="aspect ratio"):
            smart_resize(h, w, factor, lo, hi)
        return
    assert smart_resize(h, w, factor, lo, hi) == hf_resize(h, w, factor=factor, min_pixels=lo, max_pixels=hi)


@pytest.mark.parametrize("family", family_names())  # every registered family (arr_coc.families)
def test_cell_is_token_in_processor_output(family: str) -> None:
    """Paint every grid cell a distinct colour; the processor's merged token r*cols+c must carry that colour."""
    proc_mod = pytest.importorskip("transformers.models.qwen2_vl.image_processing_pil_qwen2_vl")
    patch, merge = get_family(family).patch_size, get_family(family).merge_size
    spec = GridSpec.for_family(family)
    orig_h, orig_w = 300, 450
    grid = spec.grid_for(orig_h, orig_w)
    colours = np.random.default_rng(1).integers(0, 256, (grid.rows, grid.cols, 3)).astype(np.uint8)
    # Paint in the resized frame, then the processor's resize of an already-exact size is the identity.
    img = Image.fromarray(np.kron(colours, np.ones((grid.cell, grid.cell, 1), np.uint8)))
    proc = proc_mod.Qwen2VLImageProcessorPil(
        patch_size=patch,
        merge_size=merge,
        temporal_patch_size=2,
        do_normalize=False,
        do_rescale=False,
        size={"shortest_edge": spec.min_pixels, "longest_edge": spec.max_pixels},
    )
    out = proc(images=img, return_tensors="np")
    t, gh, gw = out["image_grid_thw"][0]
    assert (gh // merge, gw // merge) == (grid.rows, grid.cols)
    pv = out["pixel_values"].reshape(grid.rows * grid.cols, merge * merge, 3, 2, patch, patch)
    token_colour = pv.mean(axis=(1, 3, 4, 5))  # (N, 3)
    np.testing.assert_allclose(token_colour, colours.reshape(-1, 3), atol=1.0)


@pytest.mark.parametrize("family", [f.name for f in families() if f.resize is None and f.tiles is None])  # smart_resize
def test_grid_for_uses_processor_resize(family: str) -> None:
    """Qwen's ``smart_resize`` = the Qwen2-VL processor's (a family with its own ``resize``, Mistral3 and Gemma 3, is
    checked against its own processor: ``tests/test_mistral3_gemma3.py``, the family tester's allocate grid)."""
    proc_mod = pytest.importorskip("transformers.models.qwen2_vl.image_processing_pil_qwen2_vl")
    if get_family(family).grid_rule is not None:  # its own resize, against its own processor in the family tester
        pytest.skip(f"{family} does not resize with smart_resize (its grid_rule: family_testing.check_allocate_grid)")
    patch, merge = get_family(family).patch_size, get_family(family).merge_size
    spec = GridSpec.for_family(family, max_pixels=300 * (patch * merge) ** 2)
    proc = proc_mod.Qwen2VLImageProcessorPil(
        patch_size=patch, merge_size=merge, size={"shortest_edge": spec.min_pixels, "longest_edge": spec.max_pixels}
    )
    for w, h in [(1000, 1300), (37, 911), (1600, 400), (1, 1)]:
        if max(w, h) / min(w, h) > 200:
            continue
        out = proc(images=Image.new("RGB", (w, h)), return_tensors="np")
        _, gh, gw = out["image_grid_thw"][0]
        grid = spec.grid_for(h, w)
        assert (grid.rows, grid.cols) == (gh // merge, gw // merge), (w, h)
        assert grid.n_tokens <= 300


def test_family_names_and_bad_specs() -> None:
    assert normalize_family("Qwen2_5_VL") == "qwen2.5-vl"
    assert GridSpec.for_family("qwen3-vl").factor == 32
    with pytest.raises(ValueError, match="supported: qwen2-vl"):
        GridSpec.for_family("llava")
    with pytest.raises(ValueError, match="min_pixels"):
        GridSpec.for_family("qwen2-vl", min_pixels=10_000, max_pixels=5_000)
    with pytest.raises(ValueError, match="aspect ratio"):
        GridSpec.for_family("qwen2-vl").grid_for(1, 500)
    with pytest.raises(ValueError, match="positive"):
        smart_resize(0, 10, 28, 1, 10**6)
