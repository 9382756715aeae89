"""Tests of ``arr_coc.compress`` on tiny random-weight Qwen2-VL, Qwen2.5-VL and Qwen3-VL models (CPU, seconds).

Models are built from configs (hidden size 32, 2 layers, tiny vision tower) with a fixed seed; inputs are built by
hand: ``<|vision_start|>``, N placeholder tokens and ``<|vision_end|>`` with the configs' token ids, random
``pixel_values`` of the right shape and the matching ``*_grid_thw``. References are computed by hand from the
model's public pieces (vision features, ``get_rope_index``, the language model with ``inputs_embeds``).
"""

from __future__ import annotations

import functools

import pytest
import torch

transformers = pytest.importorskip("transformers")

from arr_coc.families import QWEN_VL  # noqa: E402
from arr_coc.integrations import ImageContext, compress, tier_levels  # noqa: E402
from arr_coc.integrations.compress import PrunedInputs  # noqa: E402

# Every registered family (arr_coc.families), by model type: a new family is tested here once build() can make it.
# The new families (Qwen3.5, GLM-4.1V) are checked by the family tester (tests/test_family_tester.py).
FAMILIES = [f.classes[0].model_type for f in QWEN_VL]
WITH_MOE = [c.model_type for f in QWEN_VL for c in f.classes]  # + variants (Qwen3-VL-MoE), on the core tests
VOCAB = 320
PAD, BOS, EOS = 0, 1, 2
IMAGE, VIDEO, V_START, V_END = 300, 301, 302, 303
IM_START, IM_END, NEWLINE, USER, ASSISTANT = 304, 305, 306, 307, 308
TOKEN_IDS = dict(image_token_id=IMAGE, video_token_id=VIDEO, vision_start_token_id=V_START, vision_end_token_id=V_END)


@functools.cache
def build(family: str, attn: str = "sdpa") -> torch.nn.Module:
    """A tiny random model of ``family`` (same weights for every ``attn``)."""
    text = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        rope_parameters={"rope_type": "default", "mrope_section": [2, 1, 1], "rope_theta": 10000.0},
        max_position_embeddings=512,
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=EOS,
        initializer_range=0.1,
    )
    tf = transformers
    if family == "qwen2_vl":
        vision = dict(depth=2, embed_dim=32, hidden_size=32, num_heads=4, mlp_ratio=2, patch_size=14)
        config, cls = (
            tf.Qwen2VLConfig(text_config=text, vision_config=vision, **TOKEN_IDS),
            tf.Qwen2VLForConditionalGeneration,
        )
    elif family == "qwen2_5_vl":
        vision = dict(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=4,
            out_hidden_size=32,
            patch_size=14,
            window_size=56,
            fullatt_block_indexes=[1],
            tokens_per_second=2,
        )
        config = tf.Qwen2_5_VLConfig(text_config=text, vision_config=vision, **TOKEN_IDS)
        cls = tf.Qwen2_5_VLForConditionalGeneration
    else:
        text = dict(text, head_dim=8)
        if family == "qwen3_vl_moe":
            text.update(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, decoder_sparse_step=1)
        text["rope_parameters"] = dict(text["rope_parameters"], mrope_interleaved=True)
        vision = dict(
            depth=3,
            hidden_size=32,
            intermediate_size=64,
            num_heads=4,
            out_hidden_size=32,
            patch_size=16,
            num_position_embeddings=64,
            deepstack_visual_indexes=[0, 1, 2],
        )
        if family == "qwen3_vl_moe":
            config = tf.Qwen3VLMoeConfig(text_config=text, vision_config=vision, **TOKEN_IDS)
            cls = tf.Qwen3VLMoeForConditionalGeneration
        else:
            config = tf.Qwen3VLConfig(text_config=text, vision_config=vision, **TOKEN_IDS)
            cls = tf.Qwen3VLForConditionalGeneration
    config._attn_implementation = attn
    torch.manual_seed(0)
    model = cls(config).eval()
    model.generation_config.eos_token_id = None  # random weights: never stop early, compare fixed-length outputs
    model.generation_config.pad_token_id = PAD
    return model


def patch_dim(model) -> int:
    vc = model.config.vision_config
    return 3 * vc.temporal_patch_size * vc.patch_size**2


class Sample:
    """One prompt: a list of token ids plus its images / videos (patch grids and pixels), in prompt order."""

    def __init__(self, model, parts: list, seed: int = 0) -> None:
        gen = torch.Generator().manual_seed(seed)
        self.family = type(model).__name__
        qwen3 = "Qwen3" in self.family
        self.ids: list[int] = [IM_START, USER, NEWLINE]
        self.images: list[tuple[tuple[int, int, int], torch.Tensor]] = []
        self.videos: list[tuple[tuple[int, int, int], torch.Tensor]] = []
        for part in parts:
            if isinstance(part, list):
                self.ids += part
                continue
            kind, grid = part
            t, h, w = grid
            pixels = torch.randn(t * h * w, patch_dim(model), generator=gen)
            n = h * w // 4
            if kind == "image":
                self.images.append((grid, pixels))
                self.ids += [V_START] + [IMAGE] * (t * n) + [V_END]
            elif qwen3:  # a timestamp per frame, then that frame's tokens
                self.videos.append((grid, pixels))
                for f in range(t):
                    self.ids += [40 + f, 41] + [V_START] + [VIDEO] * n + [V_END]
            else:
                self.videos.append((grid, pixels))
                self.ids += [V_START] + [VIDEO] * (t * n) + [V_END]
        self.ids += [IM_END, IM_START, ASSISTANT, NEWLINE]


def batch(samples: list[Sample], side: str = "left") -> dict:
    """Processor-style inputs for ``samples`` padded on ``side``."""
    length = max(len(s.ids) for s in samples)
    ids = torch.full((len(samples), length), PAD, dtype=torch.long)
    mask = torch.zeros(len(samples), length, dtype=torch.long)
    for b, s in enumerate(samples):
        n = len(s.ids)
        cols = slice(length - n, length) if side == "left" else slice(0, n)
        ids[b, cols] = torch.tensor(s.ids)
        mask[b, cols] = 1
    out = {"input_ids": ids, "attention_mask": mask}
    out["mm_token_type_ids"] = (ids == IMAGE).int() + 2 * (ids == VIDEO).int()
    images = [im for s in samples for im in s.images]
    videos = [v for s in samples for v in s.videos]
    if images:
        out["pixel_values"] = torch.cat([p for _, p in images])
        out["image_grid_thw"] = torch.tensor([g for g, _ in images])
    if videos:
        out["pixel_values_videos"] = torch.cat([p for _, p in videos])
        out["video_grid_thw"] = torch.tensor([g for g, _ in videos])
        if "Qwen2_5" in samples[0].family:  # only Qwen2.5-VL takes (and accepts) seconds per temporal patch
            out["second_per_grid_ts"] = torch.ones(len(videos))
    return out


def position_scorer(ctx: ImageContext) -> torch.Tensor:
    """Deterministic scores from the tokens' relative (t, h, w) place: the same for an image alone or in a batch."""
    rel = ctx.positions - ctx.positions.min(dim=1, keepdim=True).values  # (3, N)
    return torch.sin(rel[0] * 2.1 + rel[1] * 1.3 + rel[2] * 0.7 + ctx.index * 0.0)


def full_features(model, inputs: dict) -> dict:
    """Per modality: (list of (N_i, D) merged tokens, DeepStack levels or None), computed on the full pixels."""
    out = {}
    for kind, pv, grid in (
        ("image", inputs.get("pixel_values"), inputs.get("image_grid_thw")),
        ("video", inputs.get("pixel_values_videos"), inputs.get("video_grid_thw")),
    ):
        if pv is None:
            continue
        fn = model.model.get_image_features if kind == "image" else model.model.get_video_features
        enc = fn(pv, grid, return_dict=True)
        deep = getattr(enc, "deepstack_features", None)
        out[kind] = (list(enc.pooler_output), [list(level) for level in deep] if deep else None)
    return out


def reference_logits(model, ids, mask, pos, prompt_len, allocation, feats, levels_override=None) -> torch.Tensor:
    """Logits by hand: LM input embeddings with the KEPT visual features scattered in, the given positions, and for
    Qwen3-VL the kept DeepStack rows, through ``model.model.language_model`` and ``lm_head``."""
    embeds = model.get_input_embeddings()(ids).clone()  # (B, L, D)
    prompt = torch.zeros_like(ids, dtype=torch.bool)
    prompt[:, :prompt_len] = True
    masks, kept, kept_deep = {}, {}, {}
    for kind, token in (("image", IMAGE), ("video", VIDEO)):
        allocs = sorted((a for per in allocation for a in per if a.kind == kind), key=lambda a: a.index)
        if not allocs:
            continue
        masks[kind] = (ids == token) & prompt
        base, deep = feats[kind]
        kept[kind] = torch.cat([base[a.index][a.keep] for a in allocs])  # (K, D)
        embeds[masks[kind]] = kept[kind]
        if deep is not None:
            rows = []
            for lvl, level in enumerate(deep):
                parts = []
                for a in allocs:
                    r = level[a.index][a.keep]
                    if a.deepstack_levels is not None:
                        r = r * (a.deepstack_levels > lvl).unsqueeze(1).to(r.dtype)
                    parts.append(r)
                rows.append(torch.cat(parts))
            kept_deep[kind] = rows
    extra = {}
    if kept_deep:
        visual = torch.zeros_like(ids, dtype=torch.bool)
        for m in masks.values():
            visual |= m
        levels = []
        for lvl in range(len(next(iter(kept_deep.values())))):
            joint = embeds.new_zeros(int(visual.sum()), embeds.shape[-1])
            for kind, m in masks.items():
                joint[m[visual]] = kept_deep[kind][lvl]
            levels.append(joint)
        extra = {"visual_pos_masks": visual, "deepstack_visual_embeds": levels}
    hidden = model.model.language_model(
        inputs_embeds=embeds, attention_mask=mask, position_ids=pos, **extra
    ).last_hidden_state
    return model.lm_head(hidden)


def unpruned_positions(model, inputs: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Full-sequence positions (3, B, L) and next position (B,) from the model's own get_rope_index."""
    extra = {"second_per_grid_ts": inputs["second_per_grid_ts"]} if "second_per_grid_ts" in inputs else {}
    if "Qwen2_5" not in type(model).__name__:
        extra = {}
    pos, deltas = model.model.get_rope_index(
        inputs["input_ids"],
        mm_token_type_ids=inputs["mm_token_type_ids"],
        image_grid_thw=inputs.get("image_grid_thw"),
        video_grid_thw=inputs.get("video_grid_thw"),
        attention_mask=inputs["attention_mask"],
        **extra,
    )
    return pos, deltas.view(-1) + inputs["attention_mask"].sum(1)


def greedy(fn, inputs: dict, n: int = 5) -> torch.Tensor:
    return fn(**inputs, max_new_tokens=n, do_sample=False)


# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", WITH_MOE)
def test_full_budget_matches_model(family):
    model = build(family)
    inputs = batch([Sample(model, [[10, 11], ("image", (1, 4, 6)), [12, 13, 14]])])
    cm = compress(model, budget=1.0, scorer="cosine")
    with torch.no_grad():
        ref = model(**inputs).logits
        out = cm(**inputs).logits
    assert torch.equal(out, ref)
    assert torch.equal(greedy(cm.generate, inputs), greedy(model.generate, inputs))
    # a left-padded batch, full budget: same layout, same numbers
    inputs = batch(
        [
            Sample(model, [[10], ("image", (1, 4, 4)), [12]]),
            Sample(model, [[9, 9, 9, 9, 9], ("image", (1, 4, 6)), [5]], 1),
        ]
    )
    with torch.no_grad():
        assert torch.allclose(cm(**inputs).logits, model(**inputs).logits, atol=1e-6)
    assert torch.equal(greedy(cm.generate, inputs), greedy(model.generate, inputs))


@pytest.mark.parametrize("family", WITH_MOE)
def test_partial_budget_positions_and_logits(family):
    model = build(family)
    s = Sample(model, [[10, 11], ("image", (1, 8, 8)), [12, 13, 14]])
    inputs = batch([s])
    cm = compress(model, budget=0.25, scorer=position_scorer)
    with torch.no_grad():
        out = cm(**inputs).logits
    pruned: PrunedInputs = cm.last_inputs
    alloc = cm.last_allocation[0][0]
    assert alloc.kind == "image" and alloc.grid == (1, 4, 4) and alloc.budget == 4 == alloc.keep.numel()
    assert alloc.scores.shape == (1, 4, 4)
    assert torch.equal(alloc.keep, torch.sort(alloc.keep).values)
    expected_keep = torch.sort(torch.sort(alloc.scores.flatten(), descending=True, stable=True).indices[:4]).values
    assert torch.equal(alloc.keep, expected_keep)
    assert pruned.input_ids.shape[1] == len(s.ids) - 12
    full_pos, next_pos = unpruned_positions(model, inputs)
    # every kept column carries exactly the position it had in the unpruned sequence
    assert torch.equal(pruned.position_ids, full_pos[:, 0, pruned.index_map[0]].unsqueeze(1))
    image_cols = (inputs["input_ids"][0] == IMAGE).nonzero().squeeze(1)
    kept_cols = pruned.index_map[0][pruned.input_ids[0] == IMAGE]
    assert torch.equal(kept_cols, image_cols[alloc.keep])
    assert int(pruned.rope_deltas[0, 0]) + pruned.input_ids.shape[1] == int(next_pos[0])
    with torch.no_grad():
        feats = full_features(model, inputs)
        ref = reference_logits(
            model,
            pruned.input_ids,
            pruned.attention_mask,
            pruned.position_ids,
            pruned.input_ids.shape[1],
            cm.last_allocation,
            feats,
        )
    assert torch.allclose(out, ref, atol=1e-5)


@pytest.mark.parametrize("family", WITH_MOE)
def test_generate_matches_stepwise_reference(family):
    model = build(family)
    inputs = batch([Sample(model, [[10, 11], ("image", (1, 8, 8)), [12, 13, 14]])])
    cm = compress(model, budget=5, scorer=position_scorer)
    n_new = 5
    with torch.no_grad():
        generated = greedy(cm.generate, inputs, n_new)
        pruned = cm.last_inputs
        assert torch.equal(generated[:, : inputs["input_ids"].shape[1]], inputs["input_ids"])
        new = generated[:, inputs["input_ids"].shape[1] :]
        # reference: full forwards without cache on the pruned sequence; new tokens at max unpruned position + 1 + j
        _, next_pos = unpruned_positions(model, inputs)
        feats = full_features(model, inputs)
        ids, mask, pos, prompt_len = (
            pruned.input_ids,
            pruned.attention_mask,
            pruned.position_ids,
            pruned.input_ids.shape[1],
        )
        ref_tokens = []
        for j in range(n_new):
            logits = reference_logits(model, ids, mask, pos, prompt_len, cm.last_allocation, feats)
            token = logits[:, -1].argmax(-1)  # (B,)
            ref_tokens.append(token)
            ids = torch.cat([ids, token[:, None]], 1)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
            pos = torch.cat([pos, (next_pos + j).view(1, -1, 1).expand(3, -1, 1)], 2)
        assert torch.equal(new, torch.stack(ref_tokens, 1))
        # a hand-written cached decoding loop through cm(...) continues at the same positions
        out = cm(**inputs, use_cache=True)
        cache, mask, tokens = out.past_key_values, cm.last_inputs.attention_mask, []
        token = out.logits[:, -1].argmax(-1)
        for _ in range(n_new):
            tokens.append(token)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
            out = cm(input_ids=token[:, None], attention_mask=mask, past_key_values=cache, use_cache=True)
            cache, token = out.past_key_values, out.logits[:, -1].argmax(-1)
        assert torch.equal(torch.stack(tokens, 1), new)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("neighbour", ["image", "text", "two_images"])
def test_batch_invariance(family, neighbour):
    model = build(family)
    a = Sample(model, [[10, 11], ("image", (1, 8, 8)), [12, 13, 14]], seed=1)
    parts = {
        "image": [[20] * 9, ("image", (1, 4, 6)), [21]],
        "text": [[22] * 30],
        "two_images": [[23], ("image", (1, 4, 4)), [24, 25], ("image", (1, 6, 4)), [26]],
    }[neighbour]
    b = Sample(model, parts, seed=2)
    with torch.no_grad():
        alone = compress(model, budget=0.3, scorer=position_scorer)
        ref_logits = alone(**batch([a])).logits[0]  # (L_a', V)
        ref_tokens = greedy(alone.generate, batch([a]))[0]
        for side in ("left", "right"):
            cm = compress(model, budget=[3, 0.3], scorer=position_scorer)
            inputs = batch([b, a], side=side)
            logits = cm(**inputs).logits
            real = cm.last_inputs.attention_mask[1].bool()
            assert torch.allclose(logits[1][real], ref_logits, atol=1e-5), side
            assert [x.budget for x in cm.last_allocation[0]] == [3] * len(b.images)
        tokens = greedy(cm.generate, batch([b, a]))
        assert torch.equal(tokens[1][-5:], ref_tokens[-5:])
        assert torch.equal(tokens[:, : inputs["input_ids"].shape[1]], batch([b, a])["input_ids"])


@pytest.mark.parametrize("family", FAMILIES)
def test_multi_image_prompt(family):
    model = build(family)
    inputs = batch([Sample(model, [[10], ("image", (1, 4, 6)), [11, 12], ("image", (1, 8, 4)), [13]])])
    cm = compress(model, budget=3, scorer=position_scorer)
    with torch.no_grad():
        out = cm(**inputs).logits
        pruned = cm.last_inputs
        allocs = cm.last_allocation[0]
        assert [(a.grid, a.budget, a.index) for a in allocs] == [((1, 2, 3), 3, 0), ((1, 4, 2), 3, 1)]
        full_pos, _ = unpruned_positions(model, inputs)
        assert torch.equal(pruned.position_ids[:, 0], full_pos[:, 0, pruned.index_map[0]])
        ref = reference_logits(
            model,
            pruned.input_ids,
            pruned.attention_mask,
            pruned.position_ids,
            pruned.input_ids.shape[1],
            cm.last_allocation,
            full_features(model, inputs),
        )
        assert torch.allclose(out, ref, atol=1e-5)
        assert greedy(cm.generate, inputs).shape == (1, inputs["input_ids"].shape[1] + 5)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("with_image", [False, True])
def test_video(family, with_image):
    model = build(family)
    parts = [[10], ("video", (4, 4, 4)), [11, 12]]
    if with_image:
        parts = [[9], ("image", (1, 4, 6))] + parts
    inputs = batch([Sample(model, parts)])
    cm = compress(model, budget=0.5, scorer=position_scorer)
    with torch.no_grad():
        out = cm(**inputs).logits
        pruned = cm.last_inputs
        video = [a for a in cm.last_allocation[0] if a.kind == "video"][0]
        assert video.grid == (4, 2, 2) and video.scores.shape == (4, 2, 2) and video.budget == 8
        full_pos, next_pos = unpruned_positions(model, inputs)
        assert torch.equal(pruned.position_ids[:, 0], full_pos[:, 0, pruned.index_map[0]])
        ref = reference_logits(
            model,
            pruned.input_ids,
            pruned.attention_mask,
            pruned.position_ids,
            pruned.input_ids.shape[1],
            cm.last_allocation,
            full_features(model, inputs),
        )
        assert torch.allclose(out, ref, atol=1e-5)
        assert int(pruned.rope_deltas[0, 0]) + int(pruned.attention_mask.sum()) == int(next_pos[0])
        full = compress(model, budget=1.0, scorer="cosine")
        assert torch.equal(greedy(full.generate, inputs), greedy(model.generate, inputs))


@pytest.mark.parametrize("family", ["qwen3_vl", "qwen3_vl_moe"])
def test_qwen3_deepstack_slicing_and_tiers(family):
    model = build(family)
    inputs = batch([Sample(model, [[10], ("image", (1, 8, 8)), [11], ("image", (1, 4, 6)), [12]])])
    with torch.no_grad():
        feats = full_features(model, inputs)
        cm = compress(model, budget=0.5, scorer=position_scorer)
        plain = cm(**inputs).logits
        out = cm.last_inputs.mm_encoder_outputs["image"]
        allocs = cm.last_allocation[0]
        for lvl, level in enumerate(feats["image"][1]):
            for a in allocs:
                assert torch.equal(out.deepstack_features[lvl][a.index], level[a.index][a.keep])
                assert torch.equal(out.pooler_output[a.index], feats["image"][0][a.index][a.keep])
        tiered = compress(model, budget=0.5, scorer=position_scorer, deepstack_tiers=(0.25, 0.25))
        tiered_logits = tiered(**inputs).logits
        out = tiered.last_inputs.mm_encoder_outputs["image"]
        for a in tiered.last_allocation[0]:
            levels = tier_levels(a.scores.flatten()[a.keep], 3, (0.25, 0.25))
            assert torch.equal(a.deepstack_levels, levels)
            assert set(levels.tolist()) <= {0, 2, 3} and levels.max() == 3 and levels.min() == 0
            for lvl, level in enumerate(feats["image"][1]):
                expected = level[a.index][a.keep] * (levels > lvl).unsqueeze(1)
                assert torch.equal(out.deepstack_features[lvl][a.index], expected)
        assert not torch.allclose(tiered_logits, plain)
        pruned = tiered.last_inputs
        ref = reference_logits(
            model,
            pruned.input_ids,
            pruned.attention_mask,
            pruned.position_ids,
            pruned.input_ids.shape[1],
            tiered.last_allocation,
            feats,
        )
        assert torch.allclose(tiered_logits, ref, atol=1e-5)
        # one tier covering every kept token = every level = no tiers
        all_levels = compress(model, budget=0.5, scorer=position_scorer, deepstack_tiers=(1.0,))
        assert torch.equal(all_levels(**inputs).logits, plain)


def test_tier_levels():
    scores = torch.tensor([0.1, 0.9, 0.5, 0.7, 0.3, 0.2, 0.8, 0.4])
    assert tier_levels(scores, 3, (0.25,)).tolist() == [0, 3, 0, 0, 0, 0, 3, 0]
    assert tier_levels(scores, 3, (0.25, 0.25)).tolist() == [0, 3, 2, 2, 0, 0, 3, 0]
    assert tier_levels(scores, 3, (0.5, 0.5)).tolist() == [0, 3, 3, 3, 0, 0, 3, 0]


@pytest.mark.parametrize("family", FAMILIES)
def test_sdpa_and_eager_agree(family):
    inputs = batch(
        [
            Sample(build(family), [[10], ("image", (1, 8, 8)), [11]]),
            Sample(build(family), [[12] * 7, ("image", (1, 4, 4)), [13]], 1),
        ]
    )
    results = []
    for attn in ("sdpa", "eager"):
        cm = compress(build(family, attn), budget=0.5, scorer=position_scorer)
        with torch.no_grad():
            results.append((cm(**inputs).logits, greedy(cm.generate, inputs), cm.last_inputs.attention_mask.bool()))
    (l1, t1, real), (l2, t2, _) = results
    assert torch.allclose(l1[real], l2[real], atol=1e-5)  # padding rows are garbage in both, differently
    assert torch.equal(t1, t2)


@pytest.mark.parametrize("family", WITH_MOE)
def test_unwrapped_model_unchanged(family):
    model = build(family)
    inputs = batch([Sample(model, [[10], ("image", (1, 8, 8)), [11]])])
    with torch.no_grad():
        before = model(**inputs).logits
        before_tokens = greedy(model.generate, inputs)
    state = {name: (type(m), sorted(vars(m))) for name, m in model.named_modules()}
    cls_forward = type(model).forward
    cm = compress(model, budget=0.25, scorer="cosine")
    with torch.no_grad():
        cm(**inputs)
        cm.generate(**inputs, max_new_tokens=3, do_sample=False)
        after = model(**inputs).logits
    assert torch.equal(before, after)
    assert torch.equal(greedy(model.generate, inputs), before_tokens)
    assert state == {name: (type(m), sorted(vars(m))) for name, m in model.named_modules()}
    assert type(model).forward is cls_forward
    assert cm.config is model.config and cm.device == model.device


class FakeTokenizer:
    """Just enough tokenizer for query strings: one id per character, special tokens at the test ids."""

    unk_token_id = None

    def convert_tokens_to_ids(self, token: str) -> int:
        return {"<|im_start|>": IM_START, "<|im_end|>": IM_END, "Ċ": NEWLINE}.get(token, -1)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [60 + (ord(c) % 100) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(i - 60 + 32) for i in ids)


@pytest.mark.parametrize("family", ["qwen2_5_vl"])
def test_query_from_turn_and_override(family):
    model = build(family)
    seen: list[ImageContext] = []

    def spy(ctx: ImageContext) -> torch.Tensor:
        seen.append(ctx)
        return position_scorer(ctx)

    s = Sample(model, [[50, 51], ("image", (1, 4, 4)), [52, 53]])
    other = Sample(model, [[54], ("image", (1, 4, 4))], seed=3)
    inputs = batch([s, other])
    cm = compress(model, budget=2, scorer=spy, tokenizer=FakeTokenizer())
    cm(**inputs)
    assert seen[0].query_ids.tolist() == [50, 51, 52, 53]
    assert seen[1].query_ids.tolist() == [54]
    assert seen[0].query_embeds.shape == (4, 32) and seen[0].query_text is not None
    assert seen[0].pixel_values.shape == (16, patch_dim(model)) and seen[0].grid_thw == (1, 4, 4)
    assert seen[0].merged_grid == (1, 2, 2) and seen[0].token_feats.shape == (4, 32)
    seen.clear()
    cm = compress(model, budget=2, scorer=spy, tokenizer=FakeTokenizer(), query=["red car", None])
    cm(**inputs)
    assert seen[0].query_text == "red car" and seen[0].query_ids.tolist() == FakeTokenizer().encode("red car")
    assert seen[1].query_ids.tolist() == [54]


@pytest.mark.parametrize("family", FAMILIES)
def test_builtin_scorers_and_budgets(family):
    """Every budget form on an image of 441 tokens (more than the largest adaptive tier, so "adaptive" must choose).

    Without redundancy the kept tokens are exactly the top-K scores (ties to the lower index), in raster order.
    """
    from arr_coc.attending import TIERS, adaptive_k

    model = build(family)
    inputs = batch([Sample(model, [[10, 11], ("image", (1, 42, 42)), [12]]), Sample(model, [[13] * 20])])
    n = 21 * 21
    scores_by_scorer = {}
    for scorer in ("cosine", "auto"):
        for budget, expected in ((7, 7), (0.5, 220), ("25%", 110), ("adaptive", None)):
            cm = compress(model, budget=budget, scorer=scorer)
            with torch.no_grad():
                out = cm(**inputs)
            assert torch.isfinite(out.logits).all()
            assert cm.last_allocation[1] == []  # the text-only sample has nothing to prune
            (a,) = cm.last_allocation[0]
            scores = a.scores.flatten()
            assert a.scores.shape == (1, 21, 21) and torch.isfinite(scores).all()
            if expected is None:
                expected = adaptive_k(scores)
                assert expected in TIERS and expected < n  # adaptive chose a tier, not "everything"
            assert a.budget == a.keep.numel() == expected
            top = sorted(range(n), key=lambda i: (-float(scores[i]), i))[:expected]
            assert a.keep.tolist() == sorted(top)  # the top-K scores, in raster order
            # the language model saw exactly the kept tokens: the first prompt shrinks by the dropped ones
            before = inputs["attention_mask"].sum(1).tolist()
            assert cm.last_inputs.attention_mask.sum(1).tolist() == [before[0] - (n - expected), before[1]]
        scores_by_scorer[scorer] = scores
    assert not torch.allclose(scores_by_scorer["cosine"], scores_by_scorer["auto"])  # two different scorers ran
    cm = compress(model, budget=50, scorer="auto", redundancy=0.3)
    with torch.no_grad():
        cm(**inputs)
    keep = cm.last_allocation[0][0].keep
    assert keep.numel() == 50 and bool((keep.diff() > 0).all())


@pytest.mark.parametrize("family", ["qwen2_vl"])
def test_labels_are_pruned_with_tokens(family):
    model = build(family)
    inputs = batch([Sample(model, [[10], ("image", (1, 8, 8)), [11, 12]]), Sample(model, [[13] * 5])])
    labels = inputs["input_ids"].masked_fill(inputs["attention_mask"] == 0, -100)
    cm = compress(model, budget=4, scorer=position_scorer)
    out = cm(**inputs, labels=labels)
    pruned = cm.last_inputs
    expected = pruned.input_ids.masked_fill(pruned.attention_mask == 0, -100)
    ref = model(
        input_ids=pruned.input_ids,
        attention_mask=pruned.attention_mask,
        position_ids=pruned.position_ids,
        mm_encoder_outputs=pruned.mm_encoder_outputs,
        labels=expected,
    )
    assert torch.allclose(out.loss, ref.loss)


def test_errors_are_clear():
    model = build("qwen2_5_vl")
    inputs = batch([Sample(model, [[10], ("image", (1, 4, 4)), [11]])])
    for bad in (0, -3, 1.5, float("nan"), "junk", True, [0.5, 0]):
        with pytest.raises(ValueError, match="budget"):
            compress(model, budget=bad)
    with pytest.raises(ValueError, match="2 budgets for a batch of 1"):
        compress(model, budget=[0.5, 0.5])(**inputs)
    with pytest.raises(ValueError, match="image_grid_thw"):
        compress(model, budget=0.5)(**{k: v for k, v in inputs.items() if k != "image_grid_thw"})
    bad_grid = dict(inputs, image_grid_thw=torch.tensor([[1, 4, 8]]), pixel_values=torch.randn(32, patch_dim(model)))
    with pytest.raises(ValueError, match="4 image placeholder tokens but image_grid_thw describes 8"):
        compress(model, budget=0.5)(**bad_grid)
    with pytest.raises(ValueError, match="no pixel_values"):
        compress(model, budget=0.5)(**{k: v for k, v in inputs.items() if k not in ("pixel_values", "image_grid_thw")})
    with pytest.raises(ValueError, match="inputs_embeds"):
        compress(model, budget=0.5)(**inputs, inputs_embeds=torch.zeros(1, 3, 32))
    with pytest.raises(ValueError, match="position_ids"):
        compress(model, budget=0.5).generate(**inputs, position_ids=torch.zeros(3, 1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="Qwen2VLForConditionalGeneration, Qwen2_5_VLForConditionalGeneration"):
        compress(model.model, budget=0.5)
    with pytest.raises(ValueError, match="supported model classes"):
        compress(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="deepstack_tiers only applies"):
        compress(model, deepstack_tiers=(0.5,))
    with pytest.raises(ValueError, match="deepstack_tiers must be"):
        compress(build("qwen3_vl"), deepstack_tiers=(0.7, 0.7))
    with pytest.raises(ValueError, match="needs a tokenizer"):
        compress(model, query="what colour?")
    with pytest.raises(ValueError, match="redundancy"):
        compress(model, redundancy=2.0)
    # two samples, the image tokens split across them: the grid does not match the prompt
    two = batch([Sample(model, [[10], ("image", (1, 4, 4))]), Sample(model, [[11], ("image", (1, 4, 4))])])
    two["image_grid_thw"] = torch.tensor([[1, 4, 8]])
    with pytest.raises(ValueError, match="span samples"):
        compress(model, budget=0.5)(**two)


def test_text_only_batch_passes_through():
    model = build("qwen2_vl")
    inputs = batch([Sample(model, [[10, 11, 12]])])
    inputs.pop("mm_token_type_ids")
    cm = compress(model, budget=0.5)
    with torch.no_grad():
        assert torch.equal(cm(**inputs).logits, model(**inputs).logits)
        assert torch.equal(greedy(cm.generate, inputs), greedy(model.generate, inputs))


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_generate_options(family):
    model = build(family)
    a = Sample(model, [[10], ("image", (1, 8, 8)), [11, 12]])
    b = Sample(model, [[13] * 6, ("image", (1, 4, 4)), [14]], seed=1)
    cm = compress(model, budget=[0.25, 1.0], scorer=position_scorer)
    with torch.no_grad():
        left = greedy(cm.generate, batch([a, b]))
        # right-padded input: generate re-pads on the left itself, so the new tokens are the same
        right = batch([a, b], side="right")
        assert torch.equal(greedy(cm.generate, right)[:, -5:], left[:, -5:])
        # several sequences per prompt, dict output: prompt part is the original input, expanded
        out = cm.generate(
            **batch([a, b]), max_new_tokens=3, num_beams=2, num_return_sequences=2, return_dict_in_generate=True
        )
        length = batch([a, b])["input_ids"].shape[1]
        assert out.sequences.shape == (4, length + 3)
        assert torch.equal(out.sequences[:, :length], batch([a, b])["input_ids"].repeat_interleave(2, 0))
        # max_length counts the ORIGINAL prompt: the same number of new tokens as without pruning
        assert cm.generate(**batch([a, b]), max_length=length + 4, do_sample=False).shape == (2, length + 4)


def test_wrapper_conveniences():
    model = build("qwen2_vl")
    cm = compress(model, budget=0.5, scorer="cosine")
    assert cm.eval() is cm and cm.to("cpu") is cm and not model.training
    assert "Qwen2VLForConditionalGeneration" in repr(cm)
    inputs = batch([Sample(model, [[10], ("image", (1, 4, 4)), [11]])])
    with torch.no_grad():
        cm(**inputs)
        assert cm.rope_deltas is not None
        text = batch([Sample(model, [[12, 13]])])
        text.pop("mm_token_type_ids")
        cm(**text)  # a text-only prompt resets the decoding offsets: the model positions text itself
        assert cm.rope_deltas is None


@pytest.mark.skipif(not __import__("arr_coc.realizing").realizing.ocr_available(), reason="needs the [ocr] extra")
def test_text_prior_keeps_the_answer(form_image):
    """compress(text_prior=True): OCR on the model's own pixels steers the kept tokens onto the answer."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    model = build("qwen2_5_vl")
    vc = model.config.vision_config
    proc = Qwen2VLImageProcessorPil(patch_size=vc.patch_size, merge_size=2, temporal_patch_size=vc.temporal_patch_size)
    pix = proc(images=form_image, return_tensors="pt")
    t, h, w = pix["image_grid_thw"][0].tolist()
    rows, cols = h // 2, w // 2
    ids = [IM_START, USER, NEWLINE, V_START] + [IMAGE] * (rows * cols) + [V_END, 70, IM_END]
    inputs = {
        "input_ids": torch.tensor([ids]),
        "attention_mask": torch.ones(1, len(ids), dtype=torch.long),
        "mm_token_type_ids": (torch.tensor([ids]) == IMAGE).int(),
        "pixel_values": pix["pixel_values"],
        "image_grid_thw": pix["image_grid_thw"],
    }
    cm = compress(model, budget=10, text_prior=True, query="How much must be paid?", tokenizer=FakeTokenizer())
    with torch.no_grad():
        cm(**inputs)
    kept = cm.last_allocation[0][0].keep
    # "$1,234.00" is drawn at x 330-460, y 310-340 of the 700 x 500 form: most kept tokens must be on that line.
    r, c = kept // cols, kept % cols
    on_answer = (r >= int(300 / 500 * rows)) & (r <= int(345 / 500 * rows)) & (c >= int(320 / 700 * cols) - 1)
    assert on_answer.float().mean() >= 0.5, (r.tolist(), c.tolist())
    with pytest.raises(ValueError, match="scorer_config"):
        compress(model, text_prior=True, scorer_config="nope")
