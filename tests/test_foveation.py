"""Tests of foveation (``compress(..., foveate=True)``): the vision tower runs only on the kept tokens' patches.

Pure index arithmetic is checked against brute force; the tower pieces on the tiny random models of
``test_compress.py`` (all three families, plus Qwen3-VL-MoE). Equalities are EXACT (``torch.equal``) where the
foveated run performs the very same float operations, in the same order, on the same numbers as the reference
(all tokens kept; a crop that is its own window set; the rows a patch receives before the first block), so no
rounding can differ; elsewhere the tolerance is stated where it is used.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_compress import (  # noqa: E402
    FAMILIES,
    WITH_MOE,
    Sample,
    batch,
    build,
    greedy,
    patch_dim,
    position_scorer,
    reference_logits,
    unpruned_positions,
)
from transformers.vision_utils import get_vision_window_index  # noqa: E402

from arr_coc.integrations import compress  # noqa: E402
from arr_coc.integrations.compress import find_adapter  # noqa: E402
from arr_coc.integrations.foveation import (  # noqa: E402
    KeptItem,
    concat_items,
    kept_cu_seqlens,
    kept_patch_rows,
    kept_windows,
)

# ---------------------------------------------------------------- pure index arithmetic -----------------------------


def test_kept_patch_rows_are_merge_groups():
    rows = kept_patch_rows(torch.tensor([0, 3, 5]), merge_size=2)
    assert rows.tolist() == [0, 1, 2, 3, 12, 13, 14, 15, 20, 21, 22, 23]


def test_kept_cu_seqlens_one_segment_per_frame_empty_frames_dropped():
    # merged grid (3, 2, 2): frame 0 keeps tokens 0, 3; frame 1 nothing; frame 2 keeps 8, 9, 11
    cu = kept_cu_seqlens(torch.tensor([0, 3, 8, 9, 11]), (3, 2, 2), merge_size=2)
    assert cu.dtype == torch.int32
    assert cu.tolist() == [0, 8, 20]


@pytest.mark.parametrize("grid", [(1, 8, 12), (2, 6, 10), (1, 10, 4)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kept_windows_match_brute_force(grid, seed):
    """Kept tokens are visited in the tower's window order; each window's size is its count of kept members."""
    merge, window, patch = 2, 56, 14  # a 2x2-token window
    full_index, full_cu = get_vision_window_index(torch.tensor([grid]), merge, window, patch)
    n = grid[0] * grid[1] * grid[2] // 4
    gen = torch.Generator().manual_seed(seed)
    keep = torch.randperm(n, generator=gen)[: max(1, n // 3)].sort().values
    window_index, cu = kept_windows(keep, full_index, full_cu, merge)
    # brute force: the window of every token from the full partition, then filter
    bounds = (full_cu // 4).tolist()
    window_of = {}
    for w in range(len(bounds) - 1):
        for pos in range(bounds[w], bounds[w + 1]):
            window_of[int(full_index[pos])] = w
    kept = keep.tolist()
    expected_order = [kept.index(tok) for tok in full_index.tolist() if tok in kept]
    sizes = {}
    for tok in kept:
        sizes[window_of[tok]] = sizes.get(window_of[tok], 0) + 4
    expected_cu = [0]
    for w in sorted(sizes):
        expected_cu.append(expected_cu[-1] + sizes[w])
    assert window_index.tolist() == expected_order
    assert cu.tolist() == expected_cu
    everything, cu_all = kept_windows(torch.arange(n), full_index, full_cu, merge)
    assert torch.equal(everything, full_index) and cu_all.tolist() == torch.unique_consecutive(full_cu).tolist()


def test_concat_items_shifts_boundaries_and_indices():
    a = KeptItem(torch.arange(8), 2, {"cu_seqlens": torch.tensor([0, 8]), "window_index": torch.tensor([1, 0])})
    b = KeptItem(
        torch.arange(4, 16), 3, {"cu_seqlens": torch.tensor([0, 4, 12]), "window_index": torch.tensor([0, 2, 1])}
    )
    rows, kw = concat_items([a, b], [0, 100])
    assert rows.tolist() == list(range(8)) + list(range(104, 116))
    assert kw["cu_seqlens"].tolist() == [0, 8, 12, 20]
    assert kw["window_index"].tolist() == [1, 0, 2, 4, 3]


# ---------------------------------------------------------------- the tower on kept patches --------------------------


def _pixels(model, grids: list[tuple[int, int, int]], seed: int = 1) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(sum(t * h * w for t, h, w in grids), patch_dim(model), generator=gen)


@pytest.mark.parametrize("family", WITH_MOE)
@pytest.mark.parametrize("kind", ["image", "video"])
def test_all_kept_equals_full_tower(family, kind):
    """Keeping every token: features (and DeepStack levels) identical to ``get_image_features`` / video."""
    model = build(family)
    adapter = find_adapter(model)
    grids = [(1, 8, 12), (1, 4, 8)] if kind == "image" else [(2, 4, 8), (3, 4, 4)]
    pv, grid = _pixels(model, grids), torch.tensor(grids)
    with torch.no_grad():
        full = adapter.encode(model, kind, pv, grid)
        kept = adapter.encode_kept(model, kind, pv, grid, [torch.arange(f.shape[0]) for f in full.features])
    for a, b in zip(full.features, kept.features, strict=True):
        assert torch.equal(a, b)
    assert (full.deepstack is None) == (kept.deepstack is None) == ("qwen3" not in family)
    for la, lb in zip(full.deepstack or [], kept.deepstack or [], strict=True):
        for a, b in zip(la, lb, strict=True):
            assert torch.equal(a, b)


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl"])
@pytest.mark.parametrize(("rows", "cols"), [(2, 2), (4, 4), (2, 6), (4, 2)])
def test_top_left_rectangle_equals_crop(family, rows, cols):
    """Kept = a top-left rectangle whose sides are multiples of the window (2 tokens in the tiny Qwen2.5-VL):
    features equal the model's own ``get_image_features`` on the crop (same rotary positions, same windows, same
    attention sets), for the first image of a two-image call (the second shifts nothing)."""
    model = build(family)
    adapter = find_adapter(model)
    grids = [(1, 8, 12), (1, 4, 4)]
    pv, grid = _pixels(model, grids, seed=rows * 10 + cols), torch.tensor(grids)
    keep = torch.tensor([r * 6 + c for r in range(rows) for c in range(cols)])
    with torch.no_grad():
        kept = adapter.encode_kept(model, "image", pv, grid, [keep, torch.arange(4)])
        crop_rows = kept_patch_rows(keep, 2)
        crop = model.model.get_image_features(pv[crop_rows], torch.tensor([[1, 2 * rows, 2 * cols]]), return_dict=True)
    # Same float operations on matrices of other shapes (the kept run holds the second image too): a CPU GEMM may
    # then sum a dot product's d terms in another order, which moves the result by at most d * eps * sum|terms|
    # per matmul (Higham's gamma_d). Bound: blocks x width x eps x the largest feature, about 1e-6 here; a wrong
    # rotary angle or window changes features at the scale of the features themselves (see the next test).
    ref = crop.pooler_output[0]
    vision = model.config.vision_config
    bound = vision.depth * vision.hidden_size * torch.finfo(ref.dtype).eps * ref.abs().max().item()
    torch.testing.assert_close(kept.features[0], ref, rtol=0.0, atol=bound)


def test_qwen2_5_window_is_the_original_grid_window():
    """A kept set that straddles windows differs from the crop that re-windows it: windows come from the full grid.

    Tokens (0..1, 1..2) of a (4, 6)-token image lie in two original 2x2 windows; as a 2x2 crop they would share one.
    Qwen2.5-VL's tiny tower has one window block, so the two runs must differ by far more than rounding: float32
    rounding through two 32-wide blocks is ~1e-6 relative, the bound below is 1e-3 relative."""
    model = build("qwen2_5_vl")
    adapter = find_adapter(model)
    pv, grid = _pixels(model, [(1, 8, 12)]), torch.tensor([[1, 8, 12]])
    keep = torch.tensor([1, 2, 7, 8])
    with torch.no_grad():
        kept = adapter.encode_kept(model, "image", pv, grid, [keep]).features[0]
        crop = model.model.get_image_features(pv[kept_patch_rows(keep, 2)], torch.tensor([[1, 4, 4]])).pooler_output[0]
    assert (kept - crop).abs().max() > 1e-3 * crop.abs().max()


@pytest.mark.parametrize("family", WITH_MOE)
def test_dropped_patches_cannot_influence_kept(family):
    model = build(family)
    adapter = find_adapter(model)
    grids = [(1, 8, 12), (2, 4, 8)]
    pv, grid = _pixels(model, grids), torch.tensor(grids)
    keeps = [torch.tensor([0, 5, 6, 7, 13, 20]), torch.tensor([1, 2, 9, 15])]
    kept_rows = torch.cat([kept_patch_rows(keeps[0], 2), kept_patch_rows(keeps[1], 2) + 96])
    dropped = torch.ones(pv.shape[0], dtype=torch.bool)
    dropped[kept_rows] = False
    other = pv.clone()
    other[dropped] = torch.randn(int(dropped.sum()), pv.shape[1]) * 5
    with torch.no_grad():
        a = adapter.encode_kept(model, "image", pv, grid, keeps)
        b = adapter.encode_kept(model, "image", other, grid, keeps)
        full_a = adapter.encode(model, "image", pv, grid).features[0][keeps[0]]
        full_b = adapter.encode(model, "image", other, grid).features[0][keeps[0]]
    for x, y in zip(a.features, b.features, strict=True):
        assert torch.equal(x, y)
    # the full tower does see them (so the test can fail): far above float32 rounding (~1e-6 relative)
    assert (full_a - full_b).abs().max() > 1e-3 * full_a.abs().max()


def _capture(model, pv, grid, run):
    """Inputs of the first vision block and the rotary (cos, sin) the tower computes, while ``run()`` executes."""
    seen = {}
    visual = model.model.visual

    def block0(module, args, kwargs) -> None:
        seen.setdefault("block0", args[0] if args else kwargs["hidden_states"])

    def rotary(module, args, out) -> None:
        seen.setdefault("rotary", out)

    h1 = visual.blocks[0].register_forward_pre_hook(block0, with_kwargs=True)
    h2 = visual.rotary_pos_emb.register_forward_hook(rotary)
    try:
        with torch.no_grad():
            run()
    finally:
        h1.remove()
        h2.remove()
    return seen


@pytest.mark.parametrize("family", ["qwen3_vl", "qwen3_vl_moe"])
def test_qwen3_kept_patches_get_full_run_position_embedding_and_rotary(family):
    """Qwen3-VL: what enters the first block (patch embedding + interpolated learned position embedding) and the
    rotary angles of each kept patch equal the full run's at that patch, exactly (same rows, same operations)."""
    model = build(family)
    adapter = find_adapter(model)
    grids = [(1, 8, 12), (1, 6, 4)]
    pv, grid = _pixels(model, grids), torch.tensor(grids)
    keeps = [torch.tensor([0, 4, 9, 10, 23]), torch.tensor([1, 5])]
    full = _capture(model, pv, grid, lambda: adapter.encode(model, "image", pv, grid))
    kept = _capture(model, pv, grid, lambda: adapter.encode_kept(model, "image", pv, grid, keeps))
    rows = torch.cat([kept_patch_rows(keeps[0], 2), kept_patch_rows(keeps[1], 2) + 96])
    assert torch.equal(kept["block0"], full["block0"][rows])
    assert len(kept["rotary"]) == 2 and kept["rotary"][0].shape[0] == rows.numel()  # (cos, sin), one row a patch
    for a, b in zip(kept["rotary"], full["rotary"], strict=True):
        assert torch.equal(a, b[rows])


def test_encode_kept_errors():
    model = build("qwen2_vl")
    adapter = find_adapter(model)
    pv, grid = _pixels(model, [(1, 4, 4)]), torch.tensor([[1, 4, 4]])
    with pytest.raises(ValueError, match="strictly increasing"):
        adapter.encode_kept(model, "image", pv, grid, [torch.tensor([2, 1])])
    with pytest.raises(ValueError, match="at least one kept token"):
        adapter.encode_kept(model, "image", pv, grid, [torch.tensor([], dtype=torch.long)])
    with pytest.raises(ValueError, match=r"in \[0, 4\)"):
        adapter.encode_kept(model, "image", pv, grid, [torch.tensor([4])])
    with pytest.raises(ValueError, match="patch rows"):
        adapter.encode_kept(model, "image", pv[:-1], grid, [torch.tensor([0])])


# ---------------------------------------------------------------- compress(..., foveate=True) -------------------------


def foveated_features(model, inputs: dict, allocation) -> dict:
    """Like ``test_compress.full_features`` but from ONE tower run on the kept patches (per modality): (N_i, D)
    tensors that hold the foveated features at the kept rows and NaN elsewhere (a reference reading a dropped row
    would turn the logits into NaN)."""
    adapter = find_adapter(model)
    out = {}
    for kind, pv, grid in (
        ("image", inputs.get("pixel_values"), inputs.get("image_grid_thw")),
        ("video", inputs.get("pixel_values_videos"), inputs.get("video_grid_thw")),
    ):
        if pv is None:
            continue
        allocs = sorted((a for per in allocation for a in per if a.kind == kind), key=lambda a: a.index)
        enc = adapter.encode_kept(model, kind, pv, grid, [a.keep for a in allocs])

        def spread(rows, allocs=allocs):
            full = []
            for a, r in zip(allocs, rows, strict=True):
                f = r.new_full((a.grid[0] * a.grid[1] * a.grid[2], r.shape[1]), float("nan"))
                f[a.keep] = r
                full.append(f)
            return full

        deep = [spread(level) for level in enc.deepstack] if enc.deepstack else None
        out[kind] = (spread(enc.features), deep)
    return out


PROMPTS = {
    "image": [[10, 11], ("image", (1, 8, 8)), [12, 13, 14]],
    "two_images": [[10], ("image", (1, 4, 6)), [11, 12], ("image", (1, 8, 4)), [13]],
    "video_and_image": [[9], ("image", (1, 4, 6)), [10], ("video", (4, 4, 4)), [11, 12]],
}


@pytest.mark.parametrize("family", WITH_MOE)
def test_foveate_full_budget_matches_model(family):
    model = build(family)
    cm = compress(model, budget=1.0, scorer=position_scorer, foveate=True)
    for parts in PROMPTS.values():
        inputs = batch([Sample(model, parts)])
        with torch.no_grad():
            assert torch.equal(cm(**inputs).logits, model(**inputs).logits)
        assert torch.equal(greedy(cm.generate, inputs), greedy(model.generate, inputs))


def _tower_rows(model):
    """Counts the patch rows that enter the vision tower (a forward pre-hook: observes, changes nothing)."""
    seen: list[int] = []

    def hook(module, args, kwargs) -> None:
        seen.append(int((args[0] if args else kwargs["hidden_states"]).shape[0]))

    return seen, model.model.visual.register_forward_pre_hook(hook, with_kwargs=True)


@pytest.mark.parametrize("family", WITH_MOE)
@pytest.mark.parametrize("prompt", list(PROMPTS))
def test_foveate_gives_the_language_model_what_post_encoder_pruning_gives(family, prompt):
    """Same kept tokens, same pruned ids / mask / positions / rope deltas as post-encoder pruning; the tower sees only
    the kept patches; the logits are the hand-made reference's with the foveated features (and DeepStack rows)."""
    model = build(family)
    inputs = batch([Sample(model, PROMPTS[prompt])])
    post = compress(model, budget=0.3, scorer=position_scorer)
    fov = compress(model, budget=0.3, scorer=position_scorer, foveate=True)
    seen, handle = _tower_rows(model)
    try:
        with torch.no_grad():
            post_logits = post(**inputs).logits
            n_post = list(seen)
            seen.clear()
            out = fov(**inputs).logits
    finally:
        handle.remove()
    allocs = fov.last_allocation[0]
    assert [a.keep.tolist() for a in allocs] == [a.keep.tolist() for a in post.last_allocation[0]]
    grids = [g for k in ("image_grid_thw", "video_grid_thw") if k in inputs for g in inputs[k]]
    assert sum(n_post) == sum(int(g.prod()) for g in grids)  # post-encoder pruning encodes every patch
    assert sum(seen) == 4 * sum(a.budget for a in allocs) < sum(n_post)  # kept tokens' merge groups only
    a, b = fov.last_inputs, post.last_inputs
    for field_name in ("input_ids", "attention_mask", "position_ids", "index_map", "rope_deltas"):
        assert torch.equal(getattr(a, field_name), getattr(b, field_name)), field_name
    with torch.no_grad():
        ref = reference_logits(
            model,
            a.input_ids,
            a.attention_mask,
            a.position_ids,
            a.input_ids.shape[1],
            fov.last_allocation,
            foveated_features(model, inputs, fov.last_allocation),
        )
    # same numbers through a differently-batched but identical-shaped LM call: float32 rounding only (~1e-7 relative
    # per op over 2 layers); 1e-5 absolute is far below the features' effect checked next
    assert torch.allclose(out, ref, atol=1e-5)
    assert (out - post_logits).abs().max() > 1e-3 * post_logits.abs().max()  # the kept features did see less


@pytest.mark.parametrize("family", FAMILIES)
def test_foveate_generate_with_cache_matches_stepwise_reference(family):
    model = build(family)
    inputs = batch([Sample(model, PROMPTS["two_images"])])
    cm = compress(model, budget=3, scorer=position_scorer, foveate=True)
    n_new = 5
    with torch.no_grad():
        generated = greedy(cm.generate, inputs, n_new)
        pruned = cm.last_inputs
        assert torch.equal(generated[:, : inputs["input_ids"].shape[1]], inputs["input_ids"])
        new = generated[:, inputs["input_ids"].shape[1] :]
        _, next_pos = unpruned_positions(model, inputs)
        feats = foveated_features(model, inputs, cm.last_allocation)
        ids, mask, pos = pruned.input_ids, pruned.attention_mask, pruned.position_ids
        prompt_len = ids.shape[1]
        ref_tokens = []
        for j in range(n_new):  # full forwards without cache; new tokens at max unpruned position + 1 + j
            token = reference_logits(model, ids, mask, pos, prompt_len, cm.last_allocation, feats)[:, -1].argmax(-1)
            ref_tokens.append(token)
            ids = torch.cat([ids, token[:, None]], 1)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
            pos = torch.cat([pos, (next_pos + j).view(1, -1, 1).expand(3, -1, 1)], 2)
        assert torch.equal(new, torch.stack(ref_tokens, 1))
        out = cm(**inputs, use_cache=True)  # a hand-written cached loop through cm(...) gives the same tokens
        cache, mask, tokens = out.past_key_values, cm.last_inputs.attention_mask, []
        token = out.logits[:, -1].argmax(-1)
        for _ in range(n_new):
            tokens.append(token)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
            out = cm(input_ids=token[:, None], attention_mask=mask, past_key_values=cache, use_cache=True)
            cache, token = out.past_key_values, out.logits[:, -1].argmax(-1)
        assert torch.equal(torch.stack(tokens, 1), new)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("neighbour", ["image", "two_images", "video"])
def test_foveate_batch_invariance(family, neighbour):
    """A sample's logits and tokens do not depend on its neighbours, though all items share ONE tower call."""
    model = build(family)
    a = Sample(model, PROMPTS["image"], seed=1)
    parts = {
        "image": [[20] * 9, ("image", (1, 4, 6)), [21]],
        "two_images": [[23], ("image", (1, 4, 4)), [24, 25], ("image", (1, 6, 4)), [26]],
        "video": [[27], ("video", (2, 4, 6)), [28]],
    }[neighbour]
    b = Sample(model, parts, seed=2)
    with torch.no_grad():
        alone = compress(model, budget=0.3, scorer=position_scorer, foveate=True)
        ref_logits = alone(**batch([a])).logits[0]  # (L_a', V)
        ref_tokens = greedy(alone.generate, batch([a]))[0]
        for side in ("left", "right"):
            cm = compress(model, budget=[3, 0.3], scorer=position_scorer, foveate=True)
            logits = cm(**batch([b, a], side=side)).logits
            real = cm.last_inputs.attention_mask[1].bool()
            # same numbers, different padding / packing: float32 rounding only
            assert torch.allclose(logits[1][real], ref_logits, atol=1e-5), side
        tokens = greedy(cm.generate, batch([b, a]))
        assert torch.equal(tokens[1][-5:], ref_tokens[-5:])


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_foveate_scorers_and_options(family):
    """Custom scorers get ``token_feats=None``; the default scorer, redundancy and DeepStack tiers work; cosine
    (which needs the tower's features) is refused with a clear error."""
    model = build(family)
    inputs = batch([Sample(model, PROMPTS["two_images"])])
    seen = []

    def scorer(ctx):
        seen.append(ctx.token_feats)
        return position_scorer(ctx)

    with torch.no_grad():
        compress(model, budget=4, scorer=scorer, foveate=True)(**inputs)
        assert seen and all(f is None for f in seen)
        cm = compress(model, budget=4, foveate=True)  # the default (realizing) scorer: pixels + query cues
        assert cm(**inputs).logits.isfinite().all()
        assert [a.budget for a in cm.last_allocation[0]] == [4, 4]
        cm = compress(model, budget=4, scorer=position_scorer, foveate=True, redundancy=0.5)
        cm(**inputs)
        assert [a.budget for a in cm.last_allocation[0]] == [4, 4]
        if family == "qwen3_vl":
            cm = compress(model, budget=4, scorer=position_scorer, foveate=True, deepstack_tiers=[0.5])
            cm(**inputs)
            levels = cm.last_allocation[0][0].deepstack_levels
            assert levels is not None and sorted(levels.tolist()) == [0, 0, 3, 3]
    with pytest.raises(ValueError, match="foveate=True scores before the tower"):
        compress(model, scorer="cosine", foveate=True)
    with pytest.raises(ValueError, match="foveate must be True or False"):
        compress(model, foveate="yes")
    assert "foveate=True" in repr(compress(model, foveate=True))


@pytest.mark.parametrize("family", ["qwen2.5-vl", "qwen3-vl"])
def test_ask_foveate(family, tiny_checkpoint_folder, tmp_path, form_image, capsys):
    """``arr-coc ask --foveate`` on a tiny checkpoint with the real tokenizer: prunes, answers, says it foveated."""
    from arr_coc.cli import main

    patch = 28 if family == "qwen2.5-vl" else 32
    folder = tiny_checkpoint_folder(family, max_pixels=patch * patch * 64)
    image = tmp_path / "form.png"
    form_image.save(image)
    argv = ["ask", str(image), "--query", "What is the amount due?", "--model", str(folder), "--device", "cpu"]
    assert main([*argv, "--budget", "0.5", "--max-new-tokens", "3", "--foveate"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("visual tokens:"))
    n, k = (int(v) for v in line.split(":")[1].split("(")[0].split("->"))
    assert k == round(n / 2) or k == n // 2
    assert f"foveated: the vision tower encoded {k} of {n} tokens' patches" in out
    assert "answer:" in out


# ---------------------------------------------------------------- the benchmark script -------------------------------


def _load_bench():
    import importlib.util
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "benchmarks"
    sys.path.insert(0, str(root))  # the script imports its sibling prefill.py, as when run as a script
    try:
        spec = importlib.util.spec_from_file_location("foveation_bench", root / "foveation.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(root))
    return module


def test_bench_depth_cut_in_proportion():
    bench = _load_bench()
    spec = bench.proportional_spec(bench.ALL_CONFIGS["qwen2.5-vl-7b"], 1 / 4)
    assert spec["vision_config"]["depth"] == 8 and spec["text_config"]["num_hidden_layers"] == 7
    assert spec["vision_config"]["fullatt_block_indexes"] == [7]  # one in eight, as in the real tower
    spec = bench.proportional_spec(bench.ALL_CONFIGS["qwen2.5-vl-7b"], 1 / 16)
    assert (spec["vision_config"]["depth"], spec["text_config"]["num_hidden_layers"]) == (2, 2)
    assert spec["vision_config"]["fullatt_block_indexes"] == [1]  # at least one, the last block
    spec = bench.proportional_spec(bench.ALL_CONFIGS["qwen3-vl-8b"], 1 / 9)
    assert (spec["vision_config"]["depth"], spec["text_config"]["num_hidden_layers"]) == (3, 4)
    assert spec["vision_config"]["deepstack_visual_indexes"] == [0, 1, 2]
    assert bench.proportional_spec(bench.ALL_CONFIGS["qwen3-vl-8b"], 1) == bench.ALL_CONFIGS["qwen3-vl-8b"]
    with pytest.raises(ValueError, match="fraction"):
        bench.proportional_spec(bench.ALL_CONFIGS["qwen3-vl-8b"], 0)


def test_bench_tiny_writes_every_row(tmp_path, capsys):
    """Smoke test on the tiny configs: every mode x budget row, the goals, the JSON (no timing assertions)."""
    import json

    bench = _load_bench()
    out = tmp_path / "fov.md"
    argv = ["--models", "tiny-qwen2.5-vl", "tiny-qwen3-vl", "--tokens", "40", "--fraction", "1", "--repeat", "1"]
    assert bench.main([*argv, "--device", "cpu", "--out", str(out)]) == 0
    report = out.read_text()
    assert report in capsys.readouterr().out
    rows = [line.split("|")[1:3] for line in report.splitlines() if line.startswith("| ") and "mode" not in line]
    expected = [("unpruned", "100%")] + [(m, b) for m in ("post-encoder", "foveated") for b in bench.DEFAULT_BUDGETS]
    assert [(a.strip(), b.strip()) for a, b in rows] == expected * 2
    assert report.count("% of ideal") >= 6 and "vs post-encoder" in report
    data = json.loads(out.with_suffix(".json").read_text())
    kept = {(r["mode"], r["budget"]): r["kept"] for r in data["results"][0]["rows"]}
    assert kept[("foveated", "11.1%")] == kept[("post-encoder", "11.1%")] < kept[("unpruned", "100%")]
