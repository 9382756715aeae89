"""Tests of the level-of-detail modes (``compress(..., detail="thumbnail" | "mixed")``, ``integrations/detail.py``).

Pure steps are checked against brute force or hand-computed values; the wrapper on the tiny random models of
``test_compress.py`` (all three families). Equalities with the unwrapped model are EXACT (``torch.equal``): at a full
budget no coarse view is made and the foveated run keeps every patch, the same float operations in the same order.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_compress import (  # noqa: E402
    FAMILIES,
    IMAGE,
    V_END,
    V_START,
    Sample,
    batch,
    build,
    greedy,
    position_scorer,
)

from arr_coc.integrations import compress  # noqa: E402
from arr_coc.integrations.detail import (  # noqa: E402
    DetailPlan,
    anchor_of,
    block_bounds,
    block_ids,
    coarse_rows,
    composite,
    image_from_patches,
    insert_thumbnails,
    mixed_total,
    parse_detail,
    patches_from_image,
    plan_detail,
    thumbnail_grid,
)
from arr_coc.integrations.foveation import kept_patch_rows  # noqa: E402

MODES = ["thumbnail", "mixed"]


def topk(scores: torch.Tensor):
    order = torch.sort(scores, descending=True, stable=True).indices
    return lambda k: order[:k].sort().values


# ---------------------------------------------------------------- pure steps ---------------------------------------


def test_patches_round_trip_and_processor_layout():
    """``patches_from_image`` is the Qwen2-VL image processor's own patchify; ``image_from_patches`` inverts it."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    gen = torch.Generator().manual_seed(0)
    image = torch.randn(3, 8 * 14, 12 * 14, generator=gen)
    ours = patches_from_image(image, 14, 2, 2)
    theirs, gh, gw = Qwen2VLImageProcessorPil.patchify(None, image.numpy(), 14, 2, 2)
    assert (gh, gw) == (8, 12) and torch.equal(ours, torch.from_numpy(np.ascontiguousarray(theirs)))
    assert torch.equal(image_from_patches(ours, (8, 12), 14, 2, 2), image)


def test_thumbnail_grid_is_smart_resize_within_budget():
    for h, w, cap in [(64, 80, 64), (16, 16, 4), (100, 30, 100), (8, 200, 10), (40, 40, 1000)]:
        th, tw = thumbnail_grid((h, w), 14, 2, cap)
        assert th % 2 == 0 and tw % 2 == 0 and th >= 2 and tw >= 2
        assert th * tw // 4 <= max(cap, 1)
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    for h, w, cap in [(64, 80, 64), (100, 30, 100), (40, 40, 256)]:
        want = smart_resize(h * 14, w * 14, 28, 28 * 28, cap * 28 * 28)
        assert thumbnail_grid((h, w), 14, 2, cap) == (want[0] // 14, want[1] // 14)


def test_blocks_and_anchors_by_hand():
    ids = block_ids((5, 6), 4)  # 2 x 2 blocks: rows 0-3 / 4, cols 0-3 / 4-5
    assert ids.view(5, 6).tolist() == [[0, 0, 0, 0, 1, 1]] * 4 + [[2, 2, 2, 2, 3, 3]]
    assert [block_bounds((5, 6), 4, b) for b in range(4)] == [(0, 0, 4, 4), (0, 4, 4, 6), (4, 0, 5, 4), (4, 4, 5, 6)]
    # anchors: the centre rounded to the top-left: (1, 1), (1, 4), (4, 1), (4, 4)
    assert [anchor_of(block_bounds((5, 6), 4, b), 6) for b in range(4)] == [7, 10, 25, 28]
    assert anchor_of((0, 0, 2, 2), 6) == 0  # a 2x2 block: the top-left cell
    assert anchor_of((0, 0, 8, 8), 10) == 33  # 8x8: cell (3, 3)


@pytest.mark.parametrize("seed", range(5))
def test_mixed_total_brute_force(seed):
    gen = torch.Generator().manual_seed(seed)
    h, w, c = 7, 9, 2
    order = torch.randperm(h * w, generator=gen)
    blocks = block_ids((h, w), c)
    n_blocks = int(blocks.max()) + 1
    totals = mixed_total(order, blocks, n_blocks)
    for k in range(1, h * w + 1):
        touched = len(set(blocks[order[:k]].tolist()))
        assert int(totals[k - 1]) == k + n_blocks - touched
    assert bool((totals[1:] - totals[:-1] >= 0).all()) and bool((totals[1:] - totals[:-1] <= 1).all())


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("mode", MODES)
def test_plan_spends_exactly_the_budget(seed, mode):
    """Property: coarse + fine = budget, fine and coarse never overlap, the fine part holds the top tokens the
    adaptive rule asks for (thumbnail: fine is exactly top-k)."""
    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(6, 40)), int(rng.integers(6, 40))
    n = h * w
    scores = torch.from_numpy(rng.random(n).astype(np.float32))
    budget = int(rng.integers(max(5, math.ceil(h / 8) * math.ceil(w / 8) + 1), n))
    plan = plan_detail(mode, scores, (h, w), budget, topk(scores))
    assert plan.budget == budget == plan.fine.numel() + plan.n_coarse
    if mode == "thumbnail":
        assert torch.equal(plan.fine, topk(scores)(plan.fine.numel()))
    if mode == "mixed":
        # the top `want` tokens (or as many as the chosen cover fits) are fine
        want = min(plan.fine_need, budget - max(4, min(64, budget // 2)))
        order = torch.sort(scores, descending=True, stable=True).indices
        blocks = block_ids((h, w), plan.factor)
        fits = int((mixed_total(order, blocks, int(blocks.max()) + 1) <= budget).sum())
        assert bool(torch.isin(order[: min(want, fits)], plan.fine).all())
        blocks = block_ids((h, w), plan.factor)
        fine_blocks = set(blocks[plan.fine].tolist())
        assert len(plan.blocks) == plan.anchors.numel()
        for anchor, bounds in zip(plan.anchors.tolist(), plan.blocks, strict=True):
            r0, c0, r1, c1 = bounds
            assert r0 <= anchor // w < r1 and c0 <= anchor % w < c1  # the anchor lies in its block
            assert blocks[anchor].item() not in fine_blocks  # a coarse block holds no fine token
        assert len(fine_blocks) + len(plan.blocks) == int(blocks.max()) + 1  # every block is covered once
        assert plan.kept.numel() == budget and bool((plan.kept[1:] > plan.kept[:-1]).all())
    else:
        assert plan.thumb_grid is not None and plan.n_thumb >= 1  # smart_resize may round a 4-token target down


def test_split_follows_concentration():
    """Concentrated relevance (adaptive tier 64) leaves more to the coarse view than diffuse relevance (tier 400)."""
    h, w, budget = 40, 48, 600
    peaked = torch.zeros(h * w)
    peaked[:20] = 1.0
    flat = torch.rand(h * w, generator=torch.Generator().manual_seed(0))
    for mode in MODES:
        a = plan_detail(mode, peaked, (h, w), budget, topk(peaked))
        b = plan_detail(mode, flat, (h, w), budget, topk(flat))
        assert a.fine_need == 64 and b.fine_need == 400
        assert a.n_coarse > b.n_coarse and a.budget == b.budget == budget
    thumb = plan_detail("thumbnail", peaked, (h, w), budget, topk(peaked))
    assert thumb.n_thumb <= 400  # snapped down to a tier: 600 - 64 = 536, capped at N/4 = 480 -> 400 at most


def test_full_budget_means_no_coarse_view():
    scores = torch.rand(48)
    for mode in MODES:
        plan = plan_detail(mode, scores, (6, 8), 48, topk(scores))
        assert plan.mode == "full" and plan.n_coarse == 0 and torch.equal(plan.fine, torch.arange(48))


def test_plan_errors():
    scores = torch.rand(400)
    with pytest.raises(ValueError, match="smallest thumbnail"):
        plan_detail("thumbnail", scores, (20, 20), 4, topk(scores))
    with pytest.raises(ValueError, match="too small for a mixed-resolution view"):
        plan_detail("mixed", scores, (20, 20), 8, topk(scores))  # 3x3 blocks of 8 need 9 tokens
    with pytest.raises(ValueError, match="detail must be"):
        plan_detail("zoom", scores, (20, 20), 100, topk(scores))
    with pytest.raises(ValueError, match="detail must be None"):
        parse_detail("zoom")
    assert parse_detail("off") is None and parse_detail(None) is None and parse_detail("Mixed") == "mixed"


def test_coarse_rows_hold_the_downsampled_block():
    """A constant block downsamples to the same constant; the anchor rows get it, fine rows stay as they were."""
    patch, merge, tps = 14, 2, 2
    image = torch.zeros(3, 8 * 14, 8 * 14)  # 4x4 merged tokens
    image[:, : 4 * 14, : 4 * 14] = 0.75  # block (0, 0) of a 2x2-token cover
    rows = patches_from_image(image, patch, merge, tps)
    scores = torch.zeros(16)
    scores[15] = 1.0
    plan = DetailPlan(
        "mixed",
        torch.tensor([15]),
        4,
        1,
        factor=2,
        anchors=torch.tensor([0, 2, 8]),
        blocks=[(0, 0, 2, 2), (0, 2, 2, 4), (2, 0, 4, 2)],
    )
    out = coarse_rows(rows, (8, 8), plan, patch, merge, tps)
    assert torch.allclose(out[0:4], torch.full_like(out[0:4], 0.75), atol=1e-5)
    assert torch.allclose(out[8:12], torch.zeros_like(out[8:12]), atol=1e-6)
    assert torch.equal(out[60:64], rows[60:64])


def test_insert_thumbnails_by_hand():
    ids = {"image": 9, "vision_start": 7, "vision_end": 8}
    input_ids = torch.tensor([[0, 0, 1, 7, 9, 9, 8, 2], [1, 7, 9, 9, 8, 2, 3, 4]])
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1], [1] * 8])
    types = (input_ids == 9).long()
    new, new_mask, new_types, labels, origin = insert_thumbnails(input_ids, mask, types, None, {0: [(3, 2)]}, ids, 0)
    # old padding dropped, the thumbnail block inserted before column 3 (the <|vision_start|>), re-padded on the left
    assert new.tolist() == [[1, 7, 9, 9, 8, 7, 9, 9, 8, 2], [0, 0, 1, 7, 9, 9, 8, 2, 3, 4]]
    assert new_mask.tolist() == [[1] * 10, [0, 0] + [1] * 8]
    assert new_types.tolist() == [[0, 0, 1, 1, 0, 0, 1, 1, 0, 0], [0] * 4 + [1, 1] + [0] * 4]
    assert origin.tolist() == [[2, -1, -1, -1, -1, 3, 4, 5, 6, 7], [-1, -1] + list(range(8))]
    assert labels is None


def test_insert_thumbnails_reads_each_input_once_not_each_column():
    """The longer prompt is laid out on host copies (``thumbnail_layout``): one read per integer input and one upload,
    where the per-column loop read the mask once per column (16 syncs here, B * L on a GPU)."""
    from arr_coc.integrations.detail import thumbnail_layout
    from arr_coc.profiling import OpCounter

    ids = {"image": 9, "vision_start": 7, "vision_end": 8}
    input_ids = torch.tensor([[0, 0, 1, 7, 9, 9, 8, 2], [1, 7, 9, 9, 8, 2, 3, 4]])
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1], [1] * 8])
    types = (input_ids == 9).long()
    with OpCounter() as c:
        new, *_ = insert_thumbnails(input_ids, mask, types, None, {0: [(3, 2)]}, ids, 0)
    assert c.n_syncs == 3 and c.n_ops == 1, c.summary()  # ids, mask, types read; one upload
    hosts = (input_ids.numpy(), mask.numpy(), types.numpy())
    with OpCounter() as c:
        layout = thumbnail_layout(*hosts, {0: [(3, 2)]}, ids, 0)
    assert c.n_syncs == 0 and c.n_ops == 0  # compress passes its host copies: nothing on the device
    assert layout[0].tolist() == new.tolist()


def test_composite_by_hand():
    image = np.full((40, 40, 3), 0, dtype=np.uint8)
    drop = composite(image, (4, 4), None, keep=np.array([0, 5]))
    assert (drop[:10, :10] == 0).all() and (drop[:10, 10:20] == 255).all() and (drop[10:20, 10:20] == 0).all()
    plan = DetailPlan(
        "mixed",
        torch.tensor([0]),
        4,
        1,
        factor=2,
        anchors=torch.tensor([2, 8, 10]),
        blocks=[(0, 2, 2, 4), (2, 0, 4, 2), (2, 2, 4, 4)],
    )
    mixed = composite(image, (4, 4), plan)
    assert (mixed[:10, :10] == 0).all() and (mixed[:10, 10:20] == 255).all()  # fine / dropped in a fine block
    assert (mixed[20:, 20:] < 5).all()  # a coarse block of a black page stays black


# ---------------------------------------------------------------- the wrapper ----------------------------------------

PROMPT = [[10, 11], ("image", (1, 16, 20)), [12, 13, 14]]  # an 8 x 10 merged grid


def corner_scorer(ctx) -> torch.Tensor:
    """Relevance concentrated in the top-left corner (from the tokens' relative positions; ties by raster order)."""
    rel = ctx.positions - ctx.positions.min(dim=1, keepdim=True).values  # (3, N)
    return -(rel[1] + rel[2]).float()


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("mode", MODES)
def test_full_budget_is_bit_identical(family, mode):
    model = build(family)
    cm = compress(model, budget=1.0, scorer=position_scorer, detail=mode)
    for parts in (PROMPT, [[9], ("image", (1, 4, 6)), [10], ("image", (1, 8, 4)), [13]]):
        inputs = batch([Sample(model, parts)])
        with torch.no_grad():
            assert torch.equal(cm(**inputs).logits, model(**inputs).logits)
        assert torch.equal(greedy(cm.generate, inputs), greedy(model.generate, inputs))
        assert all(a.detail.mode == "full" for a in cm.last_allocation[0])


def _expected_image_positions(start: int, h: int, w: int) -> torch.Tensor:
    """M-RoPE of an image block whose first token sits at text position ``start``: (start, start + r, start + c)."""
    r, c = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    return torch.stack([torch.full((h * w,), start), start + r.flatten(), start + c.flatten()])  # (3, h*w)


@pytest.mark.parametrize("family", FAMILIES)
def test_mixed_positions_by_hand(family):
    """Fine tokens at their own cell, each coarse token at its block's anchor cell, text after the image where the
    unpruned sequence puts it; the tower receives the anchor rows holding the downsampled block."""
    model = build(family)
    inputs = batch([Sample(model, PROMPT)])
    h, w = 8, 10
    cm = compress(model, budget=24, scorer=corner_scorer, detail="mixed")
    seen = []
    # the tower's first module sees its input rows, on the model's own tower and on Qwen2.5-VL's window-batched one
    # (integrations/qwen2_5_vl.run_tower, which calls the tower's modules, not model.model.visual itself)
    handle = model.model.visual.patch_embed.register_forward_pre_hook(
        lambda m, args, kw: seen.append(args[0] if args else kw["hidden_states"]), with_kwargs=True
    )
    try:
        with torch.no_grad():
            cm(**inputs)
    finally:
        handle.remove()
    alloc = cm.last_allocation[0][0]
    plan = alloc.detail
    assert plan.mode == "mixed" and plan.n_coarse > 0 and alloc.budget == 24 == plan.fine.numel() + plan.n_coarse
    pruned = cm.last_inputs
    ids = pruned.input_ids[0]
    image_cols = (ids == IMAGE).nonzero().flatten()
    assert image_cols.numel() == 24
    start = 3 + 2 + 1  # <|im_start|> user \n, two text tokens, <|vision_start|>
    expected = _expected_image_positions(start, h, w)[:, plan.kept]  # (3, 24), kept in raster order
    assert torch.equal(pruned.position_ids[:, 0, image_cols], expected)
    end_col = int((ids == V_END).nonzero()[0])
    assert pruned.position_ids[:, 0, end_col].tolist() == [start + max(h, w)] * 3
    # coarse tokens sit at the anchors: block centres rounded to the top-left
    for anchor, (r0, c0, r1, c1) in zip(plan.anchors.tolist(), plan.blocks, strict=True):
        assert divmod(anchor, w) == (r0 + (r1 - r0 - 1) // 2, c0 + (c1 - c0 - 1) // 2)
    # the tower's input: the kept rows of pixel_values with the anchors' rows replaced by their block
    pv = inputs["pixel_values"]
    patch, merge, tps = cm.adapter.geometry(model)
    modified = coarse_rows(pv, (16, 20), plan, patch, merge, tps)
    rows = kept_patch_rows(plan.kept, merge)
    assert seen and torch.equal(seen[0], modified[rows].type(seen[0].dtype))
    assert not torch.equal(modified[kept_patch_rows(plan.anchors, merge)], pv[kept_patch_rows(plan.anchors, merge)])


@pytest.mark.parametrize("family", FAMILIES)
def test_thumbnail_positions_by_hand(family):
    """The thumbnail is an ordinary image block before the page; the page's fine tokens sit where a two-image
    prompt puts them, the text after continues after the page; thumbnail + fine tokens = the budget."""
    model = build(family)
    inputs = batch([Sample(model, PROMPT)])
    h, w = 8, 10
    cm = compress(model, budget=30, scorer=position_scorer, detail="thumbnail")
    with torch.no_grad():
        out = cm(**inputs)
    alloc = cm.last_allocation[0][0]
    plan = alloc.detail
    th, tw = plan.thumb_grid[0] // 2, plan.thumb_grid[1] // 2
    assert plan.mode == "thumbnail" and plan.n_thumb == th * tw >= 1  # tiny grid: the adaptive rule asks for all
    assert alloc.budget == 30 == plan.fine.numel() + plan.n_thumb
    pruned = cm.last_inputs
    ids = pruned.input_ids[0]
    starts = (ids == V_START).nonzero().flatten().tolist()
    ends = (ids == V_END).nonzero().flatten().tolist()
    assert len(starts) == len(ends) == 2
    image_cols = (ids == IMAGE).nonzero().flatten()
    assert image_cols.numel() == 30 and out.logits.shape[1] == ids.numel()
    thumb_cols, page_cols = image_cols[: plan.n_thumb], image_cols[plan.n_thumb :]
    assert bool((thumb_cols < ends[0]).all()) and bool((page_cols > starts[1]).all())
    t0 = 3 + 2 + 1  # the thumbnail's first token
    assert torch.equal(pruned.position_ids[:, 0, thumb_cols], _expected_image_positions(t0, th, tw))
    p0 = t0 + max(th, tw) + 2  # its <|vision_end|>, the page's <|vision_start|>, then the page
    assert torch.equal(pruned.position_ids[:, 0, page_cols], _expected_image_positions(p0, h, w)[:, plan.fine])
    assert pruned.position_ids[:, 0, ends[1]].tolist() == [p0 + max(h, w)] * 3
    assert bool((pruned.index_map[0, thumb_cols] == -1).all())  # inserted: no column of the caller's prompt
    assert cm.rope_deltas is not None
    assert int(cm.rope_deltas[0]) + int(pruned.attention_mask[0].sum()) == p0 + max(h, w) + 1 + 3 + 4


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
@pytest.mark.parametrize("mode", MODES)
def test_generate_and_batch_invariance(family, mode):
    """A sample's logits and generated tokens do not depend on its neighbour (whose thumbnail / cover differs)."""
    model = build(family)
    a = Sample(model, PROMPT, seed=1)
    b = Sample(model, [[20] * 5, ("image", (1, 12, 8)), [21]], seed=2)
    with torch.no_grad():
        alone = compress(model, budget=0.4, scorer=position_scorer, detail=mode)
        ref = alone(**batch([a])).logits[0]
        ref_tokens = greedy(alone.generate, batch([a]))[0]
        for side in ("left", "right"):
            cm = compress(model, budget=[10, 0.4], scorer=position_scorer, detail=mode)
            logits = cm(**batch([b, a], side=side)).logits
            real = cm.last_inputs.attention_mask[1].bool()
            assert torch.allclose(logits[1][real], ref, atol=1e-5), side  # float32 rounding of a different packing
        tokens = greedy(cm.generate, batch([b, a]))
    assert torch.equal(tokens[1][-5:], ref_tokens[-5:])
    assert [x.budget for x in cm.last_allocation[0]] == [10]


def test_wrapper_errors_and_videos():
    model = build("qwen2_vl")
    with pytest.raises(ValueError, match="detail must be None"):
        compress(model, detail="zoom")
    with pytest.raises(ValueError, match="scores before the tower"):
        compress(model, scorer="cosine", detail="mixed")
    q3 = build("qwen3_vl")
    with pytest.raises(ValueError, match="deepstack_tiers cannot be combined"):
        compress(q3, detail="thumbnail", deepstack_tiers=[0.5])
    inputs = batch([Sample(model, PROMPT)])
    with pytest.raises(ValueError, match="too small for detail='thumbnail'"):
        compress(model, budget=3, scorer=position_scorer, detail="thumbnail")
    with pytest.raises(ValueError, match="too small for detail='mixed'"):
        compress(model, budget=[5, 1], detail="mixed")
    # a fraction that resolves to too few tokens for one image: that image is pruned drop-only, with the reason
    cm = compress(model, budget=0.05, scorer=position_scorer, detail="thumbnail")
    with torch.no_grad():
        assert cm(**inputs).logits.isfinite().all()
    plan = cm.last_allocation[0][0].detail
    assert plan.mode == "drop" and "smallest thumbnail" in plan.note and cm.last_allocation[0][0].budget == 4
    # a video beside an image: the image gets the coarse view, the video is pruned drop-only
    parts = [[9], ("image", (1, 8, 8)), [10], ("video", (2, 4, 4)), [11]]
    inputs = batch([Sample(model, parts)])
    cm = compress(model, budget=0.5, scorer=position_scorer, detail="thumbnail")
    with torch.no_grad():
        assert cm(**inputs).logits.isfinite().all()
    image, video = cm.last_allocation[0]
    assert image.detail.mode == "thumbnail" and video.detail is None and video.budget == 4
    assert "detail='thumbnail'" in repr(cm)


@pytest.mark.parametrize("mode", MODES)
def test_qwen3_deepstack_rows_follow_the_kept_tokens(mode):
    """Qwen3-VL: every DeepStack level carries one row per token the language model receives (fine, coarse cells,
    thumbnail), from the same foveated run as the main tokens; with every token kept they equal the full run's."""
    model = build("qwen3_vl")
    inputs = batch([Sample(model, PROMPT)])
    cm = compress(model, budget=24, scorer=corner_scorer, detail=mode)
    with torch.no_grad():
        cm(**inputs)
    out = cm.last_inputs.mm_encoder_outputs["image"]
    n_images = 2 if mode == "thumbnail" else 1
    assert len(out.pooler_output) == n_images and len(out.deepstack_features) == 3
    per_image = [int(p.shape[0]) for p in out.pooler_output]
    assert sum(per_image) == 24 == cm.last_allocation[0][0].budget
    for level in out.deepstack_features:
        assert [int(x.shape[0]) for x in level] == per_image
    full = compress(model, budget=1.0, scorer=corner_scorer, detail=mode)
    with torch.no_grad():
        full(**inputs)
        ref = model.model.get_image_features(inputs["pixel_values"], inputs["image_grid_thw"], return_dict=True)
    got = full.last_inputs.mm_encoder_outputs["image"]
    for a, b in zip(got.deepstack_features, ref.deepstack_features, strict=True):
        assert torch.equal(a[0], b[0] if isinstance(b, (list, tuple)) else b)
