"""The family tester: one set of checks every registered family runs (in the manner of ``transformers``'
``ModelTesterMixin``), on tiny random-weight models built from the family's own config classes.

A family is testable once it has a :class:`TinyFamily` here: a builder of a tiny model (hidden 32, 2 layers, 2 vision
blocks, a 320-id vocabulary whose ids 300-308 are the image / video placeholders, the vision start / end markers and
the chat turn markers) and the image processor its checkpoints use. Prompts are laid out as the family's processor
lays them out, inside a user turn: the Qwen line's ``<start>`` + one placeholder a merged visual token + ``<end>``, a
1-D family's placeholders with its own structure tokens (its :class:`~arr_coc.family_layouts.PromptLayout`, which
also builds the hand references: positions, features, the language model).

The checks (``tests/test_family_tester.py`` runs each on every class of every family):

* :func:`check_full_budget`: ``compress`` at budget 1.0 is bit-identical to the unwrapped model (forward, generate);
* :func:`check_pruned_forward`: a pruned forward equals a reference built by hand from the model's own position
  function (``get_rope_index`` of the FULL prompt, gathered at the kept columns; 1-D: 0, 1, ... over the full
  prompt's real tokens, gathered), its own vision features at the kept indices, and the language model;
* :func:`check_generate_stepwise`: ``generate`` with cache over the pruned prompt equals step-by-step uncached
  forwards (the recurrent state of hybrid models included);
* :func:`check_batch`: a left-padded batch equals its items one by one;
* :func:`check_positions`: ``positions="renumber"`` (1-D families: pruned forward and stepwise generate with the pruned
  sequence numbered 0, 1, ...; M-RoPE families: refused in one line);
* :func:`check_allocate_grid`: ``allocate``'s grid equals the model's visual token count for the processor's resize;
* :func:`check_foveation`: a foveated forward keeps the same sequence and positions as the pruned one, equals the
  hand reference with the features of the tower run on the kept patches, and at budget 1.0 equals the model;
* :func:`check_detail`: level of detail (thumbnail, mixed) bit-identical at budget 1.0, and pruned within budget.

A family without foveation or level of detail passes those two checks when ``compress`` refuses the option at wrap
time in one line naming the family.

Everything is CPU, float32, a second or two a check.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from arr_coc import tiled_testing
from arr_coc.family_layouts import (  # noqa: F401  (the tester's ids, re-exported)
    ASSISTANT,
    BOS,
    EOS,
    GEMMA3,
    IM_END,
    IM_START,
    IMAGE,
    LINEAR,
    MINICPM,
    MISTRAL3,
    NEWLINE,
    PAD,
    QWEN,
    SLICE_END,
    SLICE_START,
    USER,
    V_END,
    V_START,
    VIDEO,
    VOCAB,
    CanvasLayout,
    LinearPrompt,
    PromptLayout,
    gemma3,
    gemma3_image_processor,
    minicpm_image_processor,
    minicpmv4_7,
    mistral3,
    patch_dim,
    pixtral_image_processor,
)

_TEXT = dict(
    vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, max_position_embeddings=512, pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS,
    initializer_range=0.1, rope_parameters={"rope_type": "default", "mrope_section": [2, 1, 1], "rope_theta": 10000.0},
)  # fmt: skip
_QWEN_IDS = dict(image_token_id=IMAGE, video_token_id=VIDEO, vision_start_token_id=V_START, vision_end_token_id=V_END)


def _qwen2_vl() -> Any:
    import transformers as tf

    vision = dict(depth=2, embed_dim=32, hidden_size=32, num_heads=4, mlp_ratio=2, patch_size=14)
    return tf.Qwen2VLForConditionalGeneration, tf.Qwen2VLConfig(text_config=_TEXT, vision_config=vision, **_QWEN_IDS)


def _qwen2_5_vl() -> Any:
    import transformers as tf

    vision = dict(
        depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=32, patch_size=14, window_size=56,
        fullatt_block_indexes=[1], tokens_per_second=2,
    )  # fmt: skip
    config = tf.Qwen2_5_VLConfig(text_config=_TEXT, vision_config=vision, **_QWEN_IDS)
    return tf.Qwen2_5_VLForConditionalGeneration, config


def _qwen3_vl(moe: bool) -> Any:
    import transformers as tf

    text = dict(_TEXT, head_dim=8, rope_parameters=dict(_TEXT["rope_parameters"], mrope_interleaved=True))
    if moe:
        text.update(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, decoder_sparse_step=1)
    vision = dict(
        depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=32, patch_size=16,
        num_position_embeddings=64, deepstack_visual_indexes=[0, 1],
    )  # fmt: skip
    if moe:
        config = tf.Qwen3VLMoeConfig(text_config=text, vision_config=vision, **_QWEN_IDS)
        return tf.Qwen3VLMoeForConditionalGeneration, config
    return tf.Qwen3VLForConditionalGeneration, tf.Qwen3VLConfig(text_config=text, vision_config=vision, **_QWEN_IDS)


def qwen3_5_text(moe: bool = False) -> dict[str, Any]:
    """A tiny Qwen3.5 language model: one Gated-DeltaNet layer, then one full-attention layer."""
    text = dict(
        _TEXT, head_dim=8, linear_key_head_dim=8, linear_value_head_dim=8, linear_num_key_heads=2,
        linear_num_value_heads=4, layer_types=["linear_attention", "full_attention"],
        rope_parameters=dict(_TEXT["rope_parameters"], mrope_interleaved=True, partial_rotary_factor=1.0),
    )  # fmt: skip
    if moe:
        text.update(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, shared_expert_intermediate_size=16)
    return text


def _qwen3_5(moe: bool) -> Any:
    import transformers as tf

    vision = dict(
        depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=32, patch_size=16,
        num_position_embeddings=64,
    )  # fmt: skip
    if moe:
        config = tf.Qwen3_5MoeConfig(text_config=qwen3_5_text(True), vision_config=vision, **_QWEN_IDS)
        return tf.Qwen3_5MoeForConditionalGeneration, config
    config = tf.Qwen3_5Config(text_config=qwen3_5_text(), vision_config=vision, **_QWEN_IDS)
    return tf.Qwen3_5ForConditionalGeneration, config


def _glm4v() -> Any:
    import transformers as tf

    text = dict(_TEXT, rope_parameters=dict(_TEXT["rope_parameters"], partial_rotary_factor=1.0))
    vision = dict(
        depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=32, patch_size=14, image_size=56,
    )  # fmt: skip
    ids = dict(
        image_token_id=IMAGE, video_token_id=VIDEO, image_start_token_id=V_START, image_end_token_id=V_END,
        video_start_token_id=V_START, video_end_token_id=V_END,
    )  # fmt: skip
    return tf.Glm4vForConditionalGeneration, tf.Glm4vConfig(text_config=text, vision_config=vision, **ids)


def _glm46v() -> Any:
    import transformers as tf

    cls, config = _glm4v()
    text = dict(config.text_config.to_dict(), model_type="glm4v_text")
    vision = dict(config.vision_config.to_dict(), model_type="glm4v_vision")
    keys = ("image", "video", "image_start", "image_end", "video_start", "video_end")
    ids = {f"{k}_token_id": getattr(config, f"{k}_token_id") for k in keys}
    return tf.Glm46VForConditionalGeneration, tf.Glm46VConfig(text_config=text, vision_config=vision, **ids)


def _glm_ocr() -> Any:
    import transformers as tf

    text = dict(_TEXT, rope_parameters=dict(_TEXT["rope_parameters"], partial_rotary_factor=1.0))
    vision = dict(
        depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=32, patch_size=14, image_size=56,
    )  # fmt: skip
    ids = dict(
        image_token_id=IMAGE, video_token_id=VIDEO, image_start_token_id=V_START, image_end_token_id=V_END,
        video_start_token_id=V_START, video_end_token_id=V_END,
    )  # fmt: skip
    return tf.GlmOcrForConditionalGeneration, tf.GlmOcrConfig(text_config=text, vision_config=vision, **ids)


def _qwen_image_processor(patch: int, min_pixels: int, max_pixels: int) -> Any:
    from transformers import Qwen2VLImageProcessorPil

    size = {"shortest_edge": min_pixels, "longest_edge": max_pixels}
    return Qwen2VLImageProcessorPil(size=size, patch_size=patch, merge_size=2, temporal_patch_size=2)


def _glm_image_processor(patch: int, min_pixels: int, max_pixels: int) -> Any:
    """GLM's resize bounds count the two temporal copies of an image: twice the area bounds of one frame."""
    from transformers import Glm4vImageProcessorPil

    size = {"shortest_edge": 2 * min_pixels, "longest_edge": 2 * max_pixels}
    return Glm4vImageProcessorPil(size=size, patch_size=patch, merge_size=2, temporal_patch_size=2)


def _minicpmv4_7() -> Any:
    return minicpmv4_7(qwen3_5_text())


@dataclass(frozen=True)
class TinyFamily:
    """How the tester builds one model class: ``build() -> (class, config)`` and its image processor
    ``image_processor(patch_size, min_pixels, max_pixels)`` (one frame's area bounds, as ``allocate`` takes them);
    ``layout``: how its prompts and hand references look (:mod:`arr_coc.family_layouts`: the Qwen line's M-RoPE
    by default; :class:`~arr_coc.family_layouts.LinearPrompt` for a 1-D family, with its structure tokens)."""

    model_type: str
    build: Callable[[], Any]
    image_processor: Callable[[int, int, int], Any] = _qwen_image_processor
    videos: bool = True  # whether compress takes this family's videos
    layout: PromptLayout = QWEN


TINY: dict[str, TinyFamily] = {
    t.model_type: t
    for t in (
        TinyFamily("qwen2_vl", _qwen2_vl),
        TinyFamily("qwen2_5_vl", _qwen2_5_vl),
        TinyFamily("qwen3_vl", functools.partial(_qwen3_vl, False)),
        TinyFamily("qwen3_vl_moe", functools.partial(_qwen3_vl, True)),
        TinyFamily("qwen3_5", functools.partial(_qwen3_5, False)),
        TinyFamily("qwen3_5_moe", functools.partial(_qwen3_5, True)),
        TinyFamily("glm4v", _glm4v, _glm_image_processor, videos=False),
        TinyFamily("glm46v", _glm46v, _glm_image_processor, videos=False),
        TinyFamily("glm_ocr", _glm_ocr, _glm_image_processor, videos=False),
        TinyFamily("minicpmv4_7", _minicpmv4_7, minicpm_image_processor, videos=False, layout=MINICPM),
        TinyFamily("mistral3", mistral3, pixtral_image_processor, videos=False, layout=MISTRAL3),
        TinyFamily("gemma3", gemma3, gemma3_image_processor, videos=False, layout=GEMMA3),
        TinyFamily("internvl", tiled_testing.internvl, videos=False, layout=tiled_testing.INTERNVL),
        TinyFamily("llava_onevision", tiled_testing.onevision, videos=False, layout=tiled_testing.ONEVISION),
    )
}


@functools.cache
def tiny(model_type: str, attn: str = "sdpa") -> Any:
    """A tiny random model of ``model_type`` (seeded: the same weights every time), eval mode, CPU."""
    if model_type not in TINY:
        raise KeyError(f"the family tester has no tiny model for {model_type!r}; add a TinyFamily to TINY")
    cls, config = TINY[model_type].build()
    config._attn_implementation = attn
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = cls(config).eval()
    model.generation_config.eos_token_id = None  # random weights: never stop early
    model.generation_config.pad_token_id = PAD
    return model


def layout_of(model: Any) -> PromptLayout:
    """The :class:`~arr_coc.family_layouts.PromptLayout` of a tiny model's family."""
    return TINY[model.config.model_type].layout


def prompt(model: Any, parts: list, seed: int = 0) -> tuple[list[int], list[tuple[tuple[int, int, int], torch.Tensor]]]:
    """One user turn of text id lists and ``("image", (t, h, w))`` items: its ids and images (grid, pixels), laid
    out as the family's processor lays them out (its :class:`~arr_coc.family_layouts.PromptLayout`)."""
    layout = layout_of(model)
    gen = torch.Generator().manual_seed(seed)
    ids, images = [IM_START, USER, NEWLINE], []
    for part in parts:
        if isinstance(part, list):
            ids += part
            continue
        part_ids, part_images = layout.part(model, part, gen)
        images += part_images
        ids += part_ids
    return ids + [IM_END, IM_START, ASSISTANT, NEWLINE], images


def batch(model: Any, samples: list[list], side: str = "left", seed: int = 0) -> dict[str, torch.Tensor]:
    """Processor-style inputs for prompts ``samples`` (each a ``parts`` list of :func:`prompt`), padded on ``side``;
    sample ``i``'s pixels from seed ``seed + i``."""
    made = [prompt(model, parts, seed=seed + i) for i, parts in enumerate(samples)]
    length = max(len(ids) for ids, _ in made)
    input_ids = torch.full((len(made), length), PAD, dtype=torch.long)
    mask = torch.zeros(len(made), length, dtype=torch.long)
    for b, (ids, _) in enumerate(made):
        cols = slice(length - len(ids), length) if side == "left" else slice(0, len(ids))
        input_ids[b, cols] = torch.tensor(ids)
        mask[b, cols] = 1
    out = {"input_ids": input_ids, "attention_mask": mask}
    out.update(layout_of(model).visual_inputs(model, input_ids, [im for _, ims in made for im in ims]))
    return out


def position_scorer(ctx: Any) -> torch.Tensor:
    """Deterministic scores from the tokens' relative (t, h, w) place: the same alone, in a batch, foveated or not
    (M-RoPE: read from the positions; 1-D positions: from the token grid)."""
    if ctx.positions.shape[0] >= 3:
        rel = ctx.positions - ctx.positions.min(dim=1, keepdim=True).values  # (3, N)
    else:
        t, h, w = ctx.merged_grid
        i = torch.arange(t * h * w)
        rel = torch.stack([i // (h * w), i // w % h, i % w])  # (3, N)
    return torch.sin(rel[0] * 2.1 + rel[1] * 1.3 + rel[2] * 0.7)


def reference_logits(model: Any, inputs: dict[str, torch.Tensor], cm: Any, features: list[torch.Tensor]) -> Any:
    """Logits of ``cm``'s last pruned call built by hand: the positions the family's layout says (Qwen: the model's
    own ``get_rope_index`` of the FULL prompt gathered at the kept columns; 1-D: the original ids or renumbered, as
    ``cm.options.positions`` says), the input embeddings of the kept ids with ``features`` (per image, its kept
    tokens) in the kept placeholders, and the language model (the layout's :meth:`PromptLayout.logits`)."""
    layout = layout_of(model)
    pruned = cm.last_inputs
    pos = layout.positions(model, inputs, cm)  # (P, B, L')
    mask = pruned.attention_mask
    real = mask.bool() if mask is not None else torch.ones_like(pruned.input_ids, dtype=torch.bool)  # (B, L')
    assert torch.equal(pos[:, real], pruned.position_ids[:, real]), "positions differ from the model's own"
    ids = pruned.input_ids
    embeds = model.get_input_embeddings()(ids).clone()
    embeds[ids == IMAGE] = torch.cat(features).to(embeds.dtype)
    return layout.logits(model, embeds, pos, cm)


def kept_features(model: Any, inputs: dict[str, torch.Tensor], cm: Any) -> list[torch.Tensor]:
    """Per image, the model's own full-tower features at the kept indices."""
    feats = layout_of(model).features(model, inputs)
    allocs = sorted((a for per in cm.last_allocation for a in per), key=lambda a: a.index)
    return [feats[a.index][a.keep] for a in allocs]


# ----- the checks ---------------------------------------------------------------------------------------------------
ONE = [[10, 11], ("image", (1, 8, 8)), [12, 13, 14]]
TWO = [[9, 9, 9], ("image", (1, 4, 8)), [5]]


def check_full_budget(model: Any) -> None:
    from arr_coc.integrations import compress

    inputs = batch(model, [ONE])
    cm = compress(model, budget=1.0, scorer=position_scorer)
    with torch.no_grad():
        assert torch.equal(cm(**inputs).logits, model(**inputs).logits)
        ours = cm.generate(**inputs, max_new_tokens=3, do_sample=False)
        theirs = model.generate(**inputs, max_new_tokens=3, do_sample=False)
    assert torch.equal(ours, theirs)


def check_pruned_forward(model: Any, positions: str = "original") -> None:
    from arr_coc.integrations import compress

    inputs = batch(model, [ONE])
    cm = compress(model, budget=0.25, scorer=position_scorer, positions=positions)
    with torch.no_grad():
        out = cm(**inputs).logits
        (alloc,) = cm.last_allocation[0]
        grid, kept = layout_of(model).pruned(model, ONE[1][1], 0.25)  # Qwen: (1, 4, 4), 4 of 16
        assert alloc.grid == grid and alloc.budget == kept, (alloc.grid, alloc.budget, grid, kept)
        assert out.shape[1] == inputs["input_ids"].shape[1] - (math.prod(grid) - kept)
        ref = reference_logits(model, inputs, cm, kept_features(model, inputs, cm))
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def check_generate_stepwise(model: Any, n: int = 3, positions: str = "original") -> None:
    """Cached ``generate`` over the pruned prompt = uncached forwards of the prompt plus the tokens so far."""
    from arr_coc.integrations import compress

    inputs = batch(model, [ONE])
    per_token = [k for k in dict.fromkeys(("mm_token_type_ids", *layout_of(model).per_token)) if k in inputs]
    cm = compress(model, budget=0.25, scorer=position_scorer, positions=positions)
    with torch.no_grad():
        seq = cm.generate(**inputs, max_new_tokens=n, do_sample=False)
        grown = dict(inputs)
        for step in range(n):
            ids = grown["input_ids"]
            nxt = cm(**grown).logits[:, -1].argmax(-1, keepdim=True)  # (B, 1)
            assert torch.equal(nxt, seq[:, ids.shape[1] : ids.shape[1] + 1]), f"token {step} differs"
            grown["input_ids"] = torch.cat([ids, nxt], 1)
            grown["attention_mask"] = torch.cat([grown["attention_mask"], torch.ones_like(nxt)], 1)
            for key in per_token:  # decoded tokens are text
                grown[key] = torch.cat([grown[key], torch.zeros_like(nxt, dtype=grown[key].dtype)], 1)
    assert torch.equal(seq, grown["input_ids"])


def check_positions(model: Any) -> None:
    """``positions="renumber"``: a 1-D family's pruned forward equals the hand reference with the pruned sequence
    numbered 0, 1, ... and cached ``generate`` equals stepwise forwards; an M-RoPE family refuses it in one line."""
    from arr_coc.integrations import compress

    if layout_of(model).rows != 1:
        try:
            compress(model, budget=0.25, positions="renumber")
        except ValueError as err:
            assert "positions='renumber' applies to 1-D positions only" in str(err) and "\n" not in str(err)
            return
        raise AssertionError("an M-RoPE family took positions='renumber'")
    check_pruned_forward(model, positions="renumber")
    check_generate_stepwise(model, positions="renumber")


def check_batch(model: Any) -> None:
    from arr_coc.integrations import compress

    cm = compress(model, budget=0.25, scorer=position_scorer)
    both = batch(model, [ONE, TWO])
    with torch.no_grad():
        out = cm(**both).logits
        kept_b = cm.last_inputs.attention_mask.bool()
        for b, parts in enumerate((ONE, TWO)):
            alone = batch(model, [parts], seed=b)
            single = cm(**alone).logits[0]
            torch.testing.assert_close(out[b, kept_b[b]], single, rtol=1e-5, atol=1e-5)


def check_allocate_grid(model_type: str, family: Any) -> None:
    """``allocate``'s grid = the processor's merged grid, for a few page shapes."""
    from PIL import Image

    from arr_coc import allocate

    tiny_family = TINY[model_type]
    if family.tiles is not None:  # a tiled family: its published processor's tiles (arr_coc.tiling), no pixel bounds
        for w, h in ((1000, 1300), (640, 480), (1600, 400)):
            img = Image.new("RGB", (w, h), "white")
            a = allocate(img, "x", 4, family=family.name, mode="texture")
            assert a.grid == tiny_family.layout.token_grid(None, img, family.merge_size), (w, h, a.grid)
        return
    cell = family.cell
    lo, hi = family.min_pixels, 300 * cell * cell
    proc = tiny_family.image_processor(family.patch_size, lo, hi)
    for w, h in ((1000, 1300), (640, 480), (1600, 400)) + tiny_family.layout.extra_shapes:
        img = Image.new("RGB", (w, h), "white")
        gh, gw = tiny_family.layout.token_grid(proc, img, family.merge_size)
        a = allocate(img, "x", 4, family=family.name, mode="texture", min_pixels=lo, max_pixels=hi)
        assert a.grid == (gh, gw), (w, h, a.grid, gh, gw)


def _refused(model: Any, option: dict[str, Any], what: str) -> bool:
    """True when the model's family lacks ``what`` (its adapter says so) and ``compress(**option)`` refuses it at
    wrap time in one line naming the family (then there is nothing else to check)."""
    from arr_coc.integrations import compress
    from arr_coc.integrations.compress import find_adapter

    adapter = find_adapter(model)
    if getattr(adapter, f"supports_{what}")():
        return False
    try:
        compress(model, budget=0.25, **option)
    except ValueError as err:
        assert f"is not supported for {adapter.name}" in str(err) and "\n" not in str(err), str(err)
        return True
    raise AssertionError(f"{adapter.name} lacks {what} but compress took {option}")


def check_foveation(model: Any) -> None:
    from arr_coc.integrations import compress

    if _refused(model, {"foveate": True, "scorer": position_scorer}, "foveation"):
        return
    inputs = batch(model, [ONE])
    with torch.no_grad():
        full = compress(model, budget=1.0, scorer=position_scorer, foveate=True)
        torch.testing.assert_close(full(**inputs).logits, model(**inputs).logits, rtol=1e-5, atol=1e-5)
        pruned = compress(model, budget=0.25, scorer=position_scorer)
        pruned(**inputs)
        cm = compress(model, budget=0.25, scorer=position_scorer, foveate=True)
        out = cm(**inputs).logits
        assert torch.equal(cm.last_inputs.input_ids, pruned.last_inputs.input_ids)
        assert torch.equal(cm.last_inputs.position_ids, pruned.last_inputs.position_ids)
        feats = list(cm.last_inputs.mm_encoder_outputs["image"].pooler_output)
        ref = reference_logits(model, inputs, cm, feats)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def check_detail(model: Any) -> None:
    """Level of detail (thumbnail, mixed): bit-identical at budget 1.0; at 0.25 the image costs its budget (fine +
    coarse tokens) and the prompt shrinks to match; ``generate`` runs."""
    from arr_coc.integrations import compress
    from arr_coc.integrations.compress import find_adapter

    if _refused(model, {"detail": "thumbnail"}, "detail"):
        return
    if find_adapter(model).has_own_coarse_view():
        return check_own_coarse(model)
    inputs = batch(model, [[[10, 11], ("image", (1, 16, 16)), [12, 13]]])
    with torch.no_grad():
        ref = model(**inputs).logits
        for detail in ("thumbnail", "mixed"):
            full = compress(model, budget=1.0, detail=detail, scorer=position_scorer)
            assert torch.equal(full(**inputs).logits, ref), detail
            cm = compress(model, budget=0.25, detail=detail, scorer=position_scorer)
            out = cm(**inputs).logits
            (alloc,) = cm.last_allocation[0]
            assert alloc.budget == 16 and out.shape[1] < ref.shape[1], (detail, alloc.budget, out.shape)
            seq = cm.generate(**inputs, max_new_tokens=2, do_sample=False)
            assert seq.shape[1] == inputs["input_ids"].shape[1] + 2


def check_own_coarse(model: Any) -> None:
    """Level of detail on a family with its own coarse view (InternVL's thumbnail, OneVision's base view,
    :mod:`arr_coc.integrations.own_coarse`): bit-identical at budget 1.0; ``"mixed"`` refused in one line; at 0.5 the
    coarse view is kept whole, the image costs what drop-only keeps, and the logits equal the hand reference with the
    model's own features at the kept tokens (plain and foveated); ``generate`` runs."""
    from arr_coc.integrations import compress
    from arr_coc.integrations.compress import find_adapter

    adapter = find_adapter(model)
    inputs = batch(model, [[[10, 11], ("image", (1, 16, 16)), [12, 13]]])
    rest = {k: v for k, v in inputs.items() if k != "input_ids"}
    with torch.no_grad():
        ref = model(**inputs).logits
        full = compress(model, budget=1.0, detail="thumbnail", scorer=position_scorer)
        assert torch.equal(full(**inputs).logits, ref)
        try:
            compress(model, budget=0.5, detail="mixed")
            raise AssertionError(f"{adapter.name}: detail='mixed' was not refused")
        except ValueError as err:
            assert "is not supported for" in str(err) and "\n" not in str(err), str(err)
        drop = compress(model, budget=0.5, scorer=position_scorer)
        drop(**inputs)
        for foveate in (False, True):
            cm = compress(model, budget=0.5, detail="thumbnail", scorer=position_scorer, foveate=foveate)
            out = cm(**inputs).logits
            (alloc,), (plain,) = cm.last_allocation[0], drop.last_allocation[0]
            (item,) = cm._find_items(inputs["input_ids"], dict(rest)).items
            coarse = set(adapter.coarse_tokens(item).tolist())
            kept = set(alloc.keep.tolist())
            assert coarse <= kept and not coarse <= set(plain.keep.tolist()), (adapter.name, len(coarse))
            assert alloc.budget == plain.budget and out.shape == drop.last_inputs.input_ids.shape + (out.shape[2],)
            feats = list(cm.last_inputs.mm_encoder_outputs["image"].pooler_output) if foveate else None
            expected = reference_logits(model, inputs, cm, feats or kept_features(model, inputs, cm))
            torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
        seq = cm.generate(**inputs, max_new_tokens=2, do_sample=False)
        assert seq.shape[1] == inputs["input_ids"].shape[1] + 2


CHECKS: dict[str, Callable[[Any], None]] = {
    "full_budget": check_full_budget,
    "pruned_forward": check_pruned_forward,
    "generate_stepwise": check_generate_stepwise,
    "batch": check_batch,
    "positions": check_positions,
    "foveation": check_foveation,
    "detail": check_detail,
}

_minicpm_image_processor = minicpm_image_processor  # as tests/test_minicpm.py reads it

__all__ = ["CHECKS", "TINY", "TinyFamily", "batch", "check_allocate_grid", "position_scorer", "prompt", "tiny"]
