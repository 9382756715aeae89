"""Tests of foveation (``compress(..., foveate=True)``): the vision tower runs only on the kept tokens' patches.

Pure index arithmetic is checked against brute force; the tower pieces on the tiny random models of
``test_compress.py`` (all three families, plus Qwen3-VL-MoE). Equalities are EXACT (``torch.equal``) where the
foveated run performs the very same float operations, in the same order, on the same numbers as the reference
(all tokens kept; a crop that is its own window set; the rows a patch receives before the first block), so no
rounding can differ; elsewhere the tolerance is stated where it is used.
"""

from __future__ import annotations

import math

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
        seen.setdefault("block0", args[0] if args else kwargs["input"])

    def rotary(module, args, out) -> None:
        seen.setdefault("rotary", out)

    # the first block's first norm: what enters the block, whether the block's forward or the foveated tower runs it
    h1 = visual.blocks[0].norm1.register_forward_pre_hook(block0, with_kwargs=True)
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
    """Counts the patch rows that enter the vision tower's patch embedding (a forward pre-hook: observes, changes
    nothing); the patch embedding, not the tower, because the foveated Qwen2.5-VL tower runs the tower's modules
    itself (one attention call per block)."""
    seen: list[int] = []

    def hook(module, args, kwargs) -> None:
        seen.append(int((args[0] if args else kwargs["hidden_states"]).shape[0]))

    return seen, model.model.visual.patch_embed.register_forward_pre_hook(hook, with_kwargs=True)


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


def test_bench_tiny_writes_every_row(tmp_path, run_benchmark):
    """Smoke test on the tiny configs: every mode x budget row, the goals, the JSON (no timing assertions)."""
    import json

    out = tmp_path / "fov.md"
    argv = ["--models", "tiny-qwen2.5-vl", "tiny-qwen3-vl", "--tokens", "40", "--fraction", "1", "--repeat", "1"]
    done = run_benchmark("foveation.py", *argv, "--device", "cpu", "--out", str(out))
    report = out.read_text()
    assert report in done.stdout
    rows = [line.split("|")[1:3] for line in report.splitlines() if line.startswith("| ") and "mode" not in line]
    expected = [("unpruned", "100%")] + [
        (m, b) for m in ("post-encoder", "foveated") for b in ("33.3%", "22.2%", "11.1%")
    ]
    assert [(a.strip(), b.strip()) for a, b in rows] == expected * 2
    assert report.count("% of ideal") >= 6 and "vs post-encoder" in report
    data = json.loads(out.with_suffix(".json").read_text())
    kept = {(r["mode"], r["budget"]): r["kept"] for r in data["results"][0]["rows"]}
    assert kept[("foveated", "11.1%")] == kept[("post-encoder", "11.1%")] < kept[("unpruned", "100%")]


# ---------------------------------------------------------------- one attention call per block (Qwen2.5-VL, SDPA) ---


def _per_segment_attention(cu: torch.Tensor):
    """The library's SDPA path, as ``Qwen2_5_VLVisionAttention.forward`` runs it: split at ``cu_seqlens``, one
    ``sdpa_attention_forward`` per segment, concatenated. Returns ``attend(query, key, value, scale)`` on (P, H, d)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    module = torch.nn.Module()
    module.num_key_value_groups = 1
    module.training = False
    lengths = (cu[1:] - cu[:-1]).tolist()

    def attend(query, key, value, scale):
        splits = [torch.split(t.transpose(0, 1).unsqueeze(0), lengths, dim=2) for t in (query, key, value)]
        outs = [
            sdpa_attention_forward(module, q, k, v, attention_mask=None, scaling=scale, dropout=0.0, is_causal=False)[0]
            for q, k, v in zip(*splits, strict=True)
        ]  # each (1, L_s, H, d)
        return torch.cat(outs, dim=1)[0]  # (P, H, d)

    return attend


def _attention_bound(query, key, value, cu, scale) -> float:
    """Largest possible |batched - per-segment| of one attention output element in float arithmetic.

    Both compute o_i = sum_j w_ij v_j with w_ij = exp(s_ij) / sum_k exp(s_ik), s_ij = scale * q_i . k_j over the same
    segment; they may sum in other orders (another tile shape, a tail loop vs a padded one). Per computation
    (Higham's gamma_n = n u / (1 - n u), u the unit roundoff): each logit is off by at most
    delta = gamma_d * kappa, kappa = scale * max_ij sum_c |q_ic k_jc|, which moves every normalised weight by a factor
    within exp(+-2 delta), so o by at most (exp(2 delta) - 1) max|v|; the numerator and denominator sums over at most
    L terms add gamma_L max|v| each; the kernel's vectorised exp (torch's ``exp_u20``: about 2^-20 relative) adds
    2^-20 max|v| twice (numerator and denominator). Two computations: twice that.
    """
    u = torch.finfo(query.dtype).eps / 2
    d, longest = query.shape[-1], int((cu[1:] - cu[:-1]).max())

    def gamma(n: int) -> float:
        return n * u / (1 - n * u)

    kappa = scale * torch.einsum("phc,qhc->hpq", query.abs(), key.abs()).max().item()
    vmax = value.abs().max().item()
    one = (math.expm1(2 * gamma(d) * kappa) + 2 * gamma(longest) + 2 * 2.0**-20) * vmax
    return 2 * one


def _segments(lengths: list[int], heads: int, dim: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    cu = torch.tensor([0, *lengths]).cumsum(0).to(torch.int32)
    qkv = [torch.randn(int(cu[-1]), heads, dim, generator=gen) for _ in range(3)]
    return cu, qkv


@pytest.mark.parametrize(
    "lengths", [[64, 12, 40, 64, 4, 28], [16, 16, 16], [4], [8, 64, 64, 64, 20, 36, 4, 64, 60, 12], [16, 4, 12, 8]]
)
@pytest.mark.parametrize(("heads", "dim"), [(4, 8), (16, 80)])  # the tiny tower's heads; Qwen2.5-VL-7B's (16 x 80)
def test_padded_segments_attention_equals_per_segment(lengths, heads, dim):
    """One padded SDPA call equals the library's per-segment calls: EXACTLY when all segments have one length (no
    mask, the same kernel on the same (L, d) blocks); otherwise within the bound of :func:`_attention_bound`, and a
    layout that mixes segments (a wrong mask) lands far outside it."""
    from arr_coc.integrations.foveation import PaddedSegments

    cu, (q, k, v) = _segments(lengths, heads, dim, seed=sum(lengths) + dim)
    scale = dim**-0.5
    ref = _per_segment_attention(cu)(q, k, v, scale)
    got = PaddedSegments.from_cu_seqlens(cu).attend(q, k, v, scale)
    if len(set(lengths)) == 1:
        assert torch.equal(got, ref)
    bound = _attention_bound(q, k, v, cu, scale)
    assert (got - ref).abs().max().item() <= bound
    assert bound < 1e-2 * v.abs().max().item()  # the bound is tight enough to mean something
    if len(lengths) > 1:  # negative control: the segments as one (no mask) differs by far more than the bound
        whole = PaddedSegments.from_cu_seqlens(cu[[0, -1]]).attend(q, k, v, scale)
        assert (whole - ref).abs().max().item() > 10 * bound


@pytest.mark.parametrize(
    "lengths",
    [[64, 12, 40, 64, 4, 28], [64, 64, 48, 64, 64, 48, 16, 16, 12], [16, 16, 16], [4], [8, 64, 64, 20, 8]],
)
@pytest.mark.parametrize(("heads", "dim"), [(4, 8), (16, 80)])
def test_grouped_segments_attention_equals_per_segment_exactly(lengths, heads, dim):
    """One SDPA call per distinct segment length is EXACTLY the library's per-segment calls, whatever the mix of lengths
    (no padding, no mask: the same kernel on the same (L, d) blocks, laid out with the same strides); one length is a
    plain reshape; an empty segment (a repeated boundary) is skipped."""
    from arr_coc.integrations.foveation import GroupedSegments

    cu, (q, k, v) = _segments(lengths, heads, dim, seed=sum(lengths) + dim)
    layout = GroupedSegments.from_cu_seqlens(cu)
    assert sorted(n for n, *_ in layout.groups) == sorted(set(lengths))
    assert torch.equal(layout.attend(q, k, v, dim**-0.5), _per_segment_attention(cu)(q, k, v, dim**-0.5))
    calls = _attention_calls(lambda: layout.attend(q, k, v, dim**-0.5))
    assert calls == len(set(lengths))
    repeated = torch.cat([cu[:1], cu[:1], cu[1:], cu[-1:]])  # two empty segments
    assert torch.equal(GroupedSegments.from_cu_seqlens(repeated).attend(q, k, v, 0.5), layout.attend(q, k, v, 0.5))


def test_grouped_segments_errors():
    from arr_coc.integrations.foveation import GroupedSegments

    for bad in ([1, 4], [0, 4, 2], [0], [0, 0]):
        with pytest.raises(ValueError, match="cu_seqlens"):
            GroupedSegments.from_cu_seqlens(torch.tensor(bad))
    with pytest.raises(ValueError, match="rows"):
        q = torch.zeros(5, 1, 2)
        GroupedSegments.from_cu_seqlens(torch.tensor([0, 2, 4, 7])).attend(q, q, q, 1.0)


def test_padded_segments_layout_matches_brute_force():
    from arr_coc.integrations.foveation import PaddedSegments

    cu = torch.tensor([0, 4, 4, 12, 20, 24], dtype=torch.int32)  # an empty segment is skipped
    lay = PaddedSegments.from_cu_seqlens(cu)
    assert (lay.n_segments, lay.length, lay.n_rows) == (4, 8, 24)
    starts, lengths = [0, 4, 12, 20], [4, 8, 8, 4]
    for s, (a, n) in enumerate(zip(starts, lengths, strict=True)):
        assert lay.index[s, :n].tolist() == list(range(a, a + n))
        assert lay.key_mask[s, 0, 0].tolist() == [True] * n + [False] * (8 - n)
        assert lay.slots[a : a + n].tolist() == [s * 8 + j for j in range(n)]
    uniform = PaddedSegments.from_cu_seqlens(torch.tensor([0, 8, 16]))
    assert uniform.index is None and uniform.slots is None and uniform.key_mask is None


def test_padded_segments_errors():
    from arr_coc.integrations.foveation import PaddedSegments

    for bad in ([1, 4], [0, 4, 2], [0], [0, 0]):
        with pytest.raises(ValueError, match="cu_seqlens"):
            PaddedSegments.from_cu_seqlens(torch.tensor(bad))
    with pytest.raises(ValueError, match="rows"):
        q = torch.zeros(5, 1, 2)
        PaddedSegments.from_cu_seqlens(torch.tensor([0, 4])).attend(q, q, q, 1.0)


def _kept_tower_inputs(model, grids, keeps, seed=1):
    adapter = find_adapter(model)
    items = [adapter.kept_item(model, g, k) for g, k in zip(grids, keeps, strict=True)]
    starts = torch.tensor([0] + [t * h * w for t, h, w in grids[:-1]]).cumsum(0).tolist()
    rows, kwargs = concat_items(items, starts)
    return _pixels(model, grids, seed)[rows], torch.tensor(grids), kwargs


def test_block_forward_is_the_blocks_own_computation():
    """With the library's per-window attention plugged in, ``block_forward`` is bit for bit the model's own block
    (same modules, same operations, same order): the batched tower differs from the model's only in the grouping
    of its attention calls, which the test above bounds."""
    from arr_coc.integrations.qwen2_5_vl import block_forward

    model = build("qwen2_5_vl")
    visual = model.model.visual
    hidden, _, kwargs = _kept_tower_inputs(
        model, [(1, 8, 12), (1, 4, 8)], [torch.tensor([0, 5, 6, 7, 13, 20]), torch.tensor([1, 2, 3])]
    )
    with torch.no_grad():
        x = visual.patch_embed(hidden)
        rows = x.shape[0]
        x = visual.permute_input_for_window_attn(x, kwargs["window_index"], seq_len=rows)
        pe = tuple(
            visual.permute_input_for_window_attn(f, kwargs["window_index"], seq_len=rows)
            for f in visual.rotary_pos_emb(x, kwargs["position_ids"])
        )
        for layer, block in enumerate(visual.blocks):
            cu = kwargs["cu_seqlens"] if layer in visual.fullatt_block_indexes else kwargs["cu_window_seqlens"]
            ours = block_forward(block, x, pe, _per_segment_attention(cu))
            theirs = block(x, cu_seqlens=cu, position_embeddings=pe)
            assert torch.equal(ours, theirs), layer
            x = theirs


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_batched_tower_equals_model_tower(family, seed):
    """The foveated tower with one attention call per block against the model's own tower (one call per window or
    image) on the same kept patches and keyword arguments: features (and DeepStack levels) within float rounding of
    each other. Bound as in ``test_top_left_rectangle_equals_crop``: per block, the attention moves by at most its
    rounding bound (test above, ~d * eps relative) and every later matmul adds Higham's gamma_D; blocks x width x eps
    x the largest feature covers both; a wrong window or mask moves features at their own scale (tests above)."""
    model = build(family)
    gen = torch.Generator().manual_seed(seed)
    grids = [(1, 8, 12), (1, 4, 8), (1, 6, 6)]
    keeps = [torch.randperm(t * h * w // 4, generator=gen)[: 3 + seed * 2].sort().values for t, h, w in grids]
    hidden, grid, kwargs = _kept_tower_inputs(model, grids, keeps, seed)
    with torch.no_grad():
        ours = find_adapter(model).run_tower(model, hidden, grid, dict(kwargs))
        theirs = model.model.visual(hidden, grid_thw=grid, return_dict=True, **dict(kwargs))
    vision = model.config.vision_config
    ref = theirs.pooler_output
    bound = vision.depth * vision.hidden_size * torch.finfo(ref.dtype).eps * ref.abs().max().item()
    torch.testing.assert_close(ours.pooler_output, ref, rtol=0.0, atol=bound)
    assert ours.last_hidden_state.shape == theirs.last_hidden_state.shape
    deep_ours, deep_theirs = (getattr(o, "deepstack_features", None) or [] for o in (ours, theirs))
    for a, b in zip(deep_ours, deep_theirs, strict=True):
        torch.testing.assert_close(
            a, b, rtol=0.0, atol=vision.depth * vision.hidden_size * torch.finfo(b.dtype).eps * b.abs().max()
        )
    assert (getattr(theirs, "deepstack_features", None) is None) == (family in ("qwen2_vl", "qwen2_5_vl"))


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_batched_tower_exact_when_segments_have_one_length(family):
    """Kept = 8 tokens in each of two images (Qwen2.5-VL: two whole windows each): every window segment holds 16
    patches and every image 32, so no padding, no mask: the very same kernels on the same blocks, EXACTLY the model's
    own tower (and its DeepStack levels)."""
    model = build(family)
    grids = [(1, 8, 12), (1, 4, 8)]
    keeps = [torch.tensor([0, 1, 2, 3, 6, 7, 8, 9]), torch.tensor([0, 1, 4, 5, 2, 3, 6, 7]).sort().values]
    hidden, grid, kwargs = _kept_tower_inputs(model, grids, keeps)
    for key in ("cu_window_seqlens", "cu_seqlens"):
        assert key not in kwargs or len(set(kwargs[key].diff().tolist())) == 1
    with torch.no_grad():
        ours = find_adapter(model).run_tower(model, hidden, grid, dict(kwargs))
        theirs = model.model.visual(hidden, grid_thw=grid, return_dict=True, **dict(kwargs))
    assert torch.equal(ours.pooler_output, theirs.pooler_output)
    deep_ours, deep_theirs = (getattr(o, "deepstack_features", None) or [] for o in (ours, theirs))
    for a, b in zip(deep_ours, deep_theirs, strict=True):
        assert torch.equal(a, b)


def _attention_calls(fn) -> int:
    from arr_coc.profiling import OpCounter

    with OpCounter() as counter, torch.no_grad():
        fn()
    return sum(n for name, n in counter.ops.items() if "scaled_dot_product" in name)


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_foveated_tower_makes_one_attention_call_per_block(family):
    """Counted with a dispatch mode: the model's own tower makes one SDPA call per kept window in each window block and
    one per image / frame in each full-attention block; the foveated tower one per block."""
    model = build(family)
    grids = [(1, 8, 12), (1, 4, 8), (2, 4, 4)]
    keeps = [torch.tensor([0, 5, 6, 7, 13, 20]), torch.tensor([1, 2, 3]), torch.tensor([0, 5, 6])]
    hidden, grid, kwargs = _kept_tower_inputs(model, grids, keeps)
    visual = model.model.visual
    n_segments = kwargs["cu_seqlens"].numel() - 1  # images, and frames of the video (both have kept tokens here)
    n_windows = kwargs["cu_window_seqlens"].numel() - 1 if "cu_window_seqlens" in kwargs else 0
    n_full = len(getattr(visual, "fullatt_block_indexes", range(len(visual.blocks))))
    own = _attention_calls(lambda: visual(hidden, grid_thw=grid, **dict(kwargs)))
    ours = _attention_calls(lambda: find_adapter(model).run_tower(model, hidden, grid, dict(kwargs)))
    assert n_segments == 4
    assert own == (len(visual.blocks) - n_full) * n_windows + n_full * n_segments
    assert ours == len(visual.blocks) < own


@pytest.mark.parametrize(
    "grids",
    [
        [(1, 8, 12)],  # the tiny tower's windows are 2 x 2 tokens: six whole windows, one length
        [(1, 10, 14), (1, 4, 8), (1, 10, 14)],  # cut windows: three lengths, and two images of one size
        [(2, 6, 10), (3, 4, 4)],  # videos: windows per frame
    ],
)
def test_full_tower_is_the_models_tower_exactly(grids):
    """``compress``'s full tower for Qwen2.5-VL on SDPA (each window length in one call) gives the model's own tower's
    output bit for bit (``get_image_features``), with one attention call per block and distinct window length
    instead of one per window."""
    from arr_coc.integrations.qwen2_5_vl import full_tower

    model = build("qwen2_5_vl")
    visual = model.model.visual
    pv, grid = _pixels(model, grids), torch.tensor(grids)
    with torch.no_grad():
        ours = full_tower(visual, pv, grid)
        theirs = visual(pv, grid_thw=grid, return_dict=True)
        encoded = find_adapter(model).encode(model, "image", pv, grid)
    assert torch.equal(ours.pooler_output, theirs.pooler_output)
    assert torch.equal(ours.last_hidden_state, theirs.last_hidden_state)
    sizes = [t * h * w // 4 for t, h, w in grids]
    assert [f.shape[0] for f in encoded.features] == sizes
    assert torch.equal(torch.cat(encoded.features), theirs.pooler_output)
    encode_calls = _attention_calls(lambda: find_adapter(model).encode(model, "image", pv, grid))
    assert encode_calls < _attention_calls(lambda: visual(pv, grid_thw=grid))  # encode went through it
    _, cu_window = get_vision_window_index(
        grid, spatial_merge_size=2, window_size=visual.window_size, patch_size=visual.patch_size
    )
    windows = cu_window.diff()
    n_windows, n_lengths = int((windows > 0).sum()), len(set(windows[windows > 0].tolist()))
    n_images = sum(t for t, _, _ in grids)
    n_sizes = len({h * w for _, h, w in grids})
    n_full = len(visual.fullatt_block_indexes)
    own = _attention_calls(lambda: visual(pv, grid_thw=grid))
    ours_calls = _attention_calls(lambda: full_tower(visual, pv, grid))
    assert own >= (len(visual.blocks) - n_full) * n_windows + n_full * n_images
    assert ours_calls == (len(visual.blocks) - n_full) * n_lengths + n_full * n_sizes < own


@pytest.mark.parametrize("budget", [1.0, 0.3])
def test_compress_with_the_grouped_tower_is_compress_with_the_models(budget, monkeypatch):
    """End to end: a compress forward and greedy generation with the grouped full tower (the default on SDPA) equal
    those with the model's own tower (the grouping switched off) bit for bit, at full budget (the unmodified model's
    logits) and pruned (the same kept tokens, the same features), on a page with cut windows."""
    from arr_coc.integrations import qwen2_5_vl

    model = build("qwen2_5_vl")
    inputs = batch([Sample(model, [[10, 11], ("image", (1, 10, 14)), [12, 13]])])
    with torch.no_grad():
        assert qwen2_5_vl.groups_windows(model.model.visual)
        grouped = compress(model, budget=budget, scorer="cosine")(**inputs).logits
        grouped_tokens = greedy(compress(model, budget=budget, scorer="cosine").generate, inputs)
        if budget == 1.0:
            assert torch.equal(grouped, model(**inputs).logits)
        monkeypatch.setattr(qwen2_5_vl, "groups_windows", lambda visual: False)
        own = compress(model, budget=budget, scorer="cosine")(**inputs).logits
        own_tokens = greedy(compress(model, budget=budget, scorer="cosine").generate, inputs)
    assert torch.equal(grouped, own)
    assert torch.equal(grouped_tokens, own_tokens)


def test_run_tower_uses_the_models_tower_unless_sdpa():
    """Eager attention (and flash-attn, whose varlen kernel is already one call per block) run the model's own tower:
    the same result bit for bit as calling it."""
    model = build("qwen2_5_vl", attn="eager")
    assert model.model.visual.config._attn_implementation == "eager"
    hidden, grid, kwargs = _kept_tower_inputs(model, [(1, 8, 12)], [torch.tensor([0, 5, 6, 7, 13, 20])])
    with torch.no_grad():
        ours = find_adapter(model).run_tower(model, hidden, grid, dict(kwargs)).pooler_output
        theirs = model.model.visual(hidden, grid_thw=grid, **dict(kwargs)).pooler_output
    assert torch.equal(ours, theirs)


def test_window_batched_tower_refuses_a_tower_it_does_not_know():
    from types import SimpleNamespace

    from arr_coc.integrations.qwen2_5_vl import check_tower

    block = SimpleNamespace(norm1=None, norm2=None, mlp=None, attn=SimpleNamespace(qkv=None, proj=None))
    visual = SimpleNamespace(
        patch_embed=None,
        rotary_pos_emb=None,
        blocks=[block],
        merger=None,
        fullatt_block_indexes=[],
        spatial_merge_unit=4,
    )
    with pytest.raises(RuntimeError, match=r"blocks\[i\]\.attn\.num_heads"):
        check_tower(visual)


@pytest.mark.parametrize("foveate", [False, True])
def test_tower_hooks_see_one_run_of_either_tower(foveate):
    """``arr_coc.loading.tower_hooks`` (what the stage timers use) fires one start and one end per forward, whether the
    model's own tower runs or the foveated tower runs the tower's modules itself."""
    from arr_coc.loading import tower_hooks

    model = build("qwen2_5_vl")
    inputs = batch([Sample(model, PROMPTS["two_images"])])
    events: list[str] = []
    handles = tower_hooks(model.model.visual, lambda: events.append("start"), lambda: events.append("end"))
    try:
        with torch.no_grad():
            compress(model, budget=0.3, scorer=position_scorer, foveate=foveate)(**inputs)
    finally:
        for h in handles:
            h.remove()
    assert events == ["start", "end"]


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_tower_inputs_built_on_the_host_sync_once_per_layout_not_per_item(family):
    """``compress`` hands ``encode_kept`` the decision's host copies and the host grids: the tower's inputs are built
    on the host (``profiling.on_host``) and uploaded once, with the same result bit for bit as building them from
    the keeps item by item; the syncs counted do not grow with the number of items (only the batched tower's
    segment layouts are read), where building them from device keeps costs syncs per item."""
    import numpy as np

    from arr_coc.profiling import OpCounter

    model = build(family)
    adapter = find_adapter(model)
    all_grids = [(1, 8, 12), (1, 4, 8), (1, 6, 6), (1, 8, 8)]
    all_keeps = [torch.tensor([0, 5, 6, 7, 13, 20]), torch.tensor([1, 2, 3]), torch.tensor([0, 4]), torch.tensor([9])]
    counts = {}
    for n in (2, 4):
        grids, keeps = all_grids[:n], all_keeps[:n]
        pv, grid = _pixels(model, grids), torch.tensor(grids)
        with torch.no_grad():
            reference = adapter.encode_kept(model, "image", pv, grid, keeps)
            with OpCounter() as host:
                ours = adapter.encode_kept(model, "image", pv, grid, keeps, np.asarray(grids))
            with OpCounter() as device:
                adapter.encode_kept(model, "image", pv, grid, keeps)
        for a, b in zip(ours.features, reference.features, strict=True):
            assert torch.equal(a, b)
        assert host.n_host_ops > 0
        counts[n] = (host.n_syncs, device.n_syncs)
    assert counts[2][0] == counts[4][0] < counts[4][1]
    assert counts[2][1] < counts[4][1]  # item by item: more items, more syncs


@pytest.mark.parametrize("family", [f for f in WITH_MOE if f != "qwen2_5_vl"])
@pytest.mark.parametrize(
    "grids",
    [
        [(1, 8, 12)],  # one image
        [(1, 8, 12), (1, 4, 8), (1, 8, 12)],  # two sizes, two images of one size
        [(2, 4, 8), (3, 4, 4)],  # videos: a segment per frame
    ],
)
def test_qwen2_and_qwen3_full_tower_is_the_models_tower_exactly(family, grids):
    """``compress``'s full tower for Qwen2-VL / Qwen3-VL on SDPA (each image / frame size attended in one call,
    ``GroupedSegments``) gives the model's own tower's output bit for bit (``pooler_output``, the last hidden state,
    every DeepStack level), and ``encode`` splits it per item as ``get_image_features`` does; one attention call per
    block and distinct segment length instead of one per image / frame."""
    model = build(family)
    adapter = find_adapter(model)
    visual = model.model.visual
    pv, grid = _pixels(model, grids), torch.tensor(grids)
    kind = "video" if grids[0][0] > 1 else "image"
    with torch.no_grad():
        ours = adapter.run_full_tower(model, pv, grid)
        theirs = visual(pv, grid_thw=grid, return_dict=True)
        encoded = adapter.encode(model, kind, pv, grid)
        fn = model.model.get_image_features if kind == "image" else model.model.get_video_features
        reference = fn(pv, grid, return_dict=True)
    assert torch.equal(ours.pooler_output, theirs.pooler_output)
    assert torch.equal(ours.last_hidden_state, theirs.last_hidden_state)
    levels = (getattr(ours, "deepstack_features", None) or [], getattr(theirs, "deepstack_features", None) or [])
    for a, b in zip(*levels, strict=True):
        assert torch.equal(a, b)
    assert len(encoded.features) == len(reference.pooler_output)
    for a, b in zip(encoded.features, reference.pooler_output, strict=True):
        assert torch.equal(a, b)
    if "qwen3" in family:
        assert encoded.deepstack is not None and len(encoded.deepstack) == len(reference.deepstack_features)
        for la, lb in zip(encoded.deepstack, reference.deepstack_features, strict=True):
            for a, b in zip(la, lb, strict=True):
                assert torch.equal(a, b)
    n_segments = sum(t for t, _, _ in grids)
    n_lengths = len({h * w for _, h, w in grids})
    own = _attention_calls(lambda: visual(pv, grid_thw=grid))
    calls = _attention_calls(lambda: adapter.run_full_tower(model, pv, grid))
    assert own == len(visual.blocks) * n_segments
    assert calls == len(visual.blocks) * n_lengths <= own


def test_qwen2_full_tower_uses_the_models_tower_unless_sdpa():
    model = build("qwen2_vl", attn="eager")
    pv, grid = _pixels(model, [(1, 8, 12), (1, 4, 8)]), torch.tensor([(1, 8, 12), (1, 4, 8)])
    with torch.no_grad():
        ours = find_adapter(model).run_full_tower(model, pv, grid).pooler_output
        theirs = model.model.visual(pv, grid_thw=grid).pooler_output
    assert torch.equal(ours, theirs)
