"""The family tester: one set of checks every registered family runs (in the manner of ``transformers``'
``ModelTesterMixin``), on tiny random-weight models built from the family's own config classes.

A family is testable once it has a :class:`TinyFamily` here: a builder of a tiny model (hidden 32, 2 layers, 2 vision
blocks, a 320-id vocabulary whose ids 300-308 are the image / video placeholders, the vision start / end markers and
the chat turn markers) and the image processor its checkpoints use. Prompts are laid out as the family's processor
lays them out: ``<start>`` + one placeholder a merged visual token + ``<end>`` inside a user turn.

The checks (``tests/test_family_tester.py`` runs each on every class of every family):

* :func:`check_full_budget`: ``compress`` at budget 1.0 is bit-identical to the unwrapped model (forward, generate);
* :func:`check_pruned_forward`: a pruned forward equals a reference built by hand from the model's own position
  function (``get_rope_index`` of the FULL prompt, gathered at the kept columns), its own vision features at the kept
  indices, and the language model;
* :func:`check_generate_stepwise`: ``generate`` with cache over the pruned prompt equals step-by-step uncached
  forwards (the recurrent state of hybrid models included);
* :func:`check_batch`: a left-padded batch equals its items one by one;
* :func:`check_allocate_grid`: ``allocate``'s grid equals the model's visual token count for the processor's resize;
* :func:`check_foveation`: a foveated forward keeps the same sequence and positions as the pruned one, equals the
  hand reference with the features of the tower run on the kept patches, and at budget 1.0 equals the model;
* :func:`check_detail`: level of detail (thumbnail, mixed) bit-identical at budget 1.0, and pruned within budget.

Everything is CPU, float32, a second or two a check.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

VOCAB = 320
PAD, BOS, EOS = 0, 1, 2
IMAGE, VIDEO, V_START, V_END = 300, 301, 302, 303
IM_START, IM_END, NEWLINE, USER, ASSISTANT = 304, 305, 306, 307, 308

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


SLICE_START, SLICE_END = 309, 310  # MiniCPM-V's <slice> / </slice>


def _minicpmv4_7() -> Any:
    """A tiny MiniCPM-V 4.7: a 2-layer SigLIP tower with the window merger after layer 0 ("16x": 4x4 patches a
    token), Qwen3.5's hybrid language model; ``<image>`` / ``</image>`` are V_START / V_END, "\n" is NEWLINE."""
    import transformers as tf

    vision = dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, patch_size=14, image_size=112,
    )  # fmt: skip
    ids = dict(
        image_token_id=IMAGE, video_token_id=VIDEO, image_start_id=V_START, image_end_id=V_END,
        slice_start_id=SLICE_START, slice_end_id=SLICE_END, newline_id=NEWLINE,
    )  # fmt: skip
    text = dict(qwen3_5_text(), model_type="qwen3_5_text")  # 5.19 reads the text config's type from the dict
    config = tf.MiniCPMV4_7Config(text_config=text, vision_config=vision, insert_layer_id=0, **ids)
    return tf.MiniCPMV4_7ForConditionalGeneration, config


class CanvasLayout:
    """Prompts, references and grids as MiniCPM-V lays them out (a thumbnail and its slices, NaViT-packed).

    An ``("image", (t, h, w))`` part is a thumbnail of the tokens a merge-2 family would give it (h/2 x w/2 tokens:
    h/2*m x w/2*m patches, m the model's merge size), so every check's token counts hold unchanged; an optional
    third element ``(rows, cols)`` adds that many slices of the same size after it (``<slice>`` ... ``</slice>``,
    rows joined by ``"\n"``)."""

    @staticmethod
    def prompt(model: Any, parts: list, seed: int = 0) -> tuple[list[int], list[tuple[tuple[int, int], torch.Tensor]]]:
        from arr_coc.families import load_object, match_model

        found = match_model(model)
        assert found is not None
        _, merge, _ = load_object(found[1].adapter).geometry(model)
        p = int(model.config.vision_config.patch_size)
        gen = torch.Generator().manual_seed(seed)
        ids, crops = [IM_START, USER, NEWLINE], []
        for part in parts:
            if isinstance(part, list):
                ids += part
                continue
            _, (_, h, w), *rest = part
            hw = (h // 2 * merge, w // 2 * merge)
            n = (h // 2) * (w // 2)
            rows, cols = rest[0] if rest else (0, 0)
            ids += [V_START] + [IMAGE] * n + [V_END]
            for r in range(rows):
                ids += ([NEWLINE] if r else []) + ([SLICE_START] + [IMAGE] * n + [SLICE_END]) * cols
            for _ in range(1 + rows * cols):
                crops.append((hw, torch.randn(3, p, hw[0] * hw[1] * p, generator=gen)))
        return ids + [IM_END, IM_START, ASSISTANT, NEWLINE], crops

    @staticmethod
    def visual(crops: list[tuple[tuple[int, int], torch.Tensor]]) -> dict[str, torch.Tensor]:
        return {"pixel_values": torch.cat([px for _, px in crops], dim=-1).unsqueeze(0),
                "target_sizes": torch.tensor([hw for hw, _ in crops], dtype=torch.int32)}  # fmt: skip

    @staticmethod
    def rope_index(model: Any, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return model.model.get_rope_index(
            inputs["input_ids"], mm_token_type_ids=inputs["mm_token_type_ids"], target_sizes=inputs["target_sizes"],
            attention_mask=inputs["attention_mask"],
        )[0]  # fmt: skip

    @staticmethod
    def image_features(model: Any, inputs: dict[str, torch.Tensor]) -> Any:
        return model.model.get_image_features(inputs["pixel_values"], inputs["target_sizes"], return_dict=True)

    @staticmethod
    def token_grid(proc: Any, img: Any, merge: int) -> tuple[int, int]:
        """The processor's tokens of a page as one grid: its slices' canvas, or the thumbnail without slices."""
        out = proc(images=img, return_tensors="pt")
        sizes, (rows, cols) = out["target_sizes"], out["grids"][0]
        if rows == 0:
            return int(sizes[0][0]) // merge, int(sizes[0][1]) // merge
        return rows * int(sizes[1][0]) // merge, cols * int(sizes[1][1]) // merge


def _minicpm_image_processor(patch: int, min_pixels: int, max_pixels: int) -> Any:
    """MiniCPM-V's image processor (its resize has no pixel bounds: a thumbnail of about 448 x 448, and slices)."""
    from transformers import MiniCPMV4_6ImageProcessorPil

    return MiniCPMV4_6ImageProcessorPil(patch_size=patch)


def _qwen_image_processor(patch: int, min_pixels: int, max_pixels: int) -> Any:
    from transformers import Qwen2VLImageProcessorPil

    size = {"shortest_edge": min_pixels, "longest_edge": max_pixels}
    return Qwen2VLImageProcessorPil(size=size, patch_size=patch, merge_size=2, temporal_patch_size=2)


def _glm_image_processor(patch: int, min_pixels: int, max_pixels: int) -> Any:
    """GLM's resize bounds count the two temporal copies of an image: twice the area bounds of one frame."""
    from transformers import Glm4vImageProcessorPil

    size = {"shortest_edge": 2 * min_pixels, "longest_edge": 2 * max_pixels}
    return Glm4vImageProcessorPil(size=size, patch_size=patch, merge_size=2, temporal_patch_size=2)


@dataclass(frozen=True)
class TinyFamily:
    """How the tester builds one model class: ``build() -> (class, config)`` and its image processor
    ``image_processor(patch_size, min_pixels, max_pixels)`` (one frame's area bounds, as ``allocate`` takes them)."""

    model_type: str
    build: Callable[[], Any]
    image_processor: Callable[[int, int, int], Any] = _qwen_image_processor
    videos: bool = True  # whether compress takes this family's videos
    layout: Any = None  # prompts not laid out as Qwen's (CanvasLayout): how to build them and the references


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
        TinyFamily("minicpmv4_7", _minicpmv4_7, _minicpm_image_processor, videos=False, layout=CanvasLayout),
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


def patch_dim(model: Any) -> int:
    vc = model.config.vision_config
    tps = vc.temporal_patch_size if isinstance(vc.temporal_patch_size, int) else vc.temporal_patch_size[0]
    return 3 * int(tps) * int(vc.patch_size) ** 2


def prompt(model: Any, parts: list, seed: int = 0) -> tuple[list[int], list[tuple[tuple[int, int, int], torch.Tensor]]]:
    """One user turn of text id lists and ``("image", (t, h, w))`` items: its ids and images (grid, pixels)."""
    gen = torch.Generator().manual_seed(seed)
    ids, images = [IM_START, USER, NEWLINE], []
    for part in parts:
        if isinstance(part, list):
            ids += part
            continue
        _, (t, h, w) = part
        images.append(((t, h, w), torch.randn(t * h * w, patch_dim(model), generator=gen)))
        ids += [V_START] + [IMAGE] * (t * h * w // 4) + [V_END]
    return ids + [IM_END, IM_START, ASSISTANT, NEWLINE], images


def _layout(model: Any) -> Any:
    """The family's :attr:`TinyFamily.layout` (None: Qwen's)."""
    found = TINY.get(getattr(model.config, "model_type", ""))
    return found.layout if found is not None else None


def batch(model: Any, samples: list[list], side: str = "left", seed: int = 0) -> dict[str, torch.Tensor]:
    """Processor-style inputs for prompts ``samples`` (each a ``parts`` list of :func:`prompt`), padded on ``side``;
    sample ``i``'s pixels from seed ``seed + i``."""
    lay = _layout(model)
    made = [(lay.prompt if lay else prompt)(model, parts, seed=seed + i) for i, parts in enumerate(samples)]
    length = max(len(ids) for ids, _ in made)
    input_ids = torch.full((len(made), length), PAD, dtype=torch.long)
    mask = torch.zeros(len(made), length, dtype=torch.long)
    for b, (ids, _) in enumerate(made):
        cols = slice(length - len(ids), length) if side == "left" else slice(0, len(ids))
        input_ids[b, cols] = torch.tensor(ids)
        mask[b, cols] = 1
    out = {"input_ids": input_ids, "attention_mask": mask, "mm_token_type_ids": (input_ids == IMAGE).int()}
    images = [im for _, ims in made for im in ims]
    if images and lay:
        out.update(lay.visual(images))
    elif images:
        out["pixel_values"] = torch.cat([p for _, p in images])
        out["image_grid_thw"] = torch.tensor([g for g, _ in images])
    return out


def position_scorer(ctx: Any) -> torch.Tensor:
    """Deterministic scores from the tokens' relative (t, h, w) place: the same alone, in a batch, foveated or not."""
    rel = ctx.positions - ctx.positions.min(dim=1, keepdim=True).values  # (3, N)
    return torch.sin(rel[0] * 2.1 + rel[1] * 1.3 + rel[2] * 0.7)


def reference_logits(model: Any, inputs: dict[str, torch.Tensor], cm: Any, features: list[torch.Tensor]) -> Any:
    """Logits of ``cm``'s last pruned call built by hand: the model's own ``get_rope_index`` of the FULL prompt gathered
    at the kept columns, the input embeddings of the kept ids with ``features`` (per image, its kept tokens) in the
    kept placeholders, and the language model (Qwen3-VL: the kept DeepStack rows where their tokens are)."""
    pruned = cm.last_inputs
    lay = _layout(model)
    full_pos = lay.rope_index(model, inputs) if lay else model.model.get_rope_index(
        inputs["input_ids"], mm_token_type_ids=inputs["mm_token_type_ids"], image_grid_thw=inputs.get("image_grid_thw"),
        attention_mask=inputs["attention_mask"],
    )[0]  # fmt: skip
    cols = pruned.index_map.clamp_min(0)  # (B, L'): original column of each kept column
    pos = torch.stack([full_pos[r].gather(1, cols) for r in range(full_pos.shape[0])])  # (3, B, L')
    real = pruned.attention_mask.bool()
    assert torch.equal(pos[:, real], pruned.position_ids[:, real]), "positions differ from the model's own"
    ids = pruned.input_ids
    embeds = model.get_input_embeddings()(ids).clone()
    placeholder = ids == IMAGE
    embeds[placeholder] = torch.cat(features).to(embeds.dtype)
    extra = {}
    out = pruned.mm_encoder_outputs.get("image")
    deep = getattr(out, "deepstack_features", None)
    if deep:
        extra = {"visual_pos_masks": placeholder, "deepstack_visual_embeds": [torch.cat(level) for level in deep]}
    hidden = model.model.language_model(inputs_embeds=embeds, attention_mask=pruned.attention_mask, position_ids=pos,
                                        **extra).last_hidden_state  # fmt: skip
    return model.lm_head(hidden)


def kept_features(model: Any, inputs: dict[str, torch.Tensor], cm: Any) -> list[torch.Tensor]:
    """Per image, the model's own full-tower features (``get_image_features``) at the kept indices."""
    lay = _layout(model)
    enc = lay.image_features(model, inputs) if lay else model.model.get_image_features(
        inputs["pixel_values"], inputs["image_grid_thw"], return_dict=True
    )  # fmt: skip
    allocs = sorted((a for per in cm.last_allocation for a in per), key=lambda a: a.index)
    return [enc.pooler_output[a.index][a.keep] for a in allocs]


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


def check_pruned_forward(model: Any) -> None:
    from arr_coc.integrations import compress

    inputs = batch(model, [ONE])
    cm = compress(model, budget=0.25, scorer=position_scorer)
    with torch.no_grad():
        out = cm(**inputs).logits
        (alloc,) = cm.last_allocation[0]
        assert alloc.grid == (1, 4, 4) and alloc.budget == 4
        assert out.shape[1] == inputs["input_ids"].shape[1] - 12
        ref = reference_logits(model, inputs, cm, kept_features(model, inputs, cm))
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def check_generate_stepwise(model: Any, n: int = 3) -> None:
    """Cached ``generate`` over the pruned prompt = uncached forwards of the prompt plus the tokens so far."""
    from arr_coc.integrations import compress

    inputs = batch(model, [ONE])
    cm = compress(model, budget=0.25, scorer=position_scorer)
    with torch.no_grad():
        seq = cm.generate(**inputs, max_new_tokens=n, do_sample=False)
        ids, mask, types = inputs["input_ids"], inputs["attention_mask"], inputs["mm_token_type_ids"]
        for step in range(n):
            grown = dict(inputs, input_ids=ids, attention_mask=mask, mm_token_type_ids=types)
            nxt = cm(**grown).logits[:, -1].argmax(-1, keepdim=True)  # (B, 1)
            assert torch.equal(nxt, seq[:, ids.shape[1] : ids.shape[1] + 1]), f"token {step} differs"
            ids, mask = torch.cat([ids, nxt], 1), torch.cat([mask, torch.ones_like(nxt)], 1)
            types = torch.cat([types, torch.zeros_like(nxt, dtype=types.dtype)], 1)
    assert torch.equal(seq, ids)


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
    cell = family.cell
    lo, hi = family.min_pixels, 300 * cell * cell
    proc = tiny_family.image_processor(family.patch_size, lo, hi)
    shapes = ((1000, 1300), (640, 480), (1600, 400)) + (((300, 200),) if tiny_family.layout is not None else ())
    for w, h in shapes:
        img = Image.new("RGB", (w, h), "white")
        a = allocate(img, "x", 4, family=family.name, mode="texture", min_pixels=lo, max_pixels=hi)
        if tiny_family.layout is not None:
            assert a.grid == tiny_family.layout.token_grid(proc, img, family.merge_size), (w, h, a.grid)
            continue
        _, gh, gw = (int(v) for v in proc(images=img, return_tensors="pt")["image_grid_thw"][0])
        assert a.grid == (gh // family.merge_size, gw // family.merge_size), (w, h, a.grid, gh, gw)


def check_foveation(model: Any) -> None:
    from arr_coc.integrations import compress

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


CHECKS: dict[str, Callable[[Any], None]] = {
    "full_budget": check_full_budget,
    "pruned_forward": check_pruned_forward,
    "generate_stepwise": check_generate_stepwise,
    "batch": check_batch,
    "foveation": check_foveation,
    "detail": check_detail,
}

__all__ = ["CHECKS", "TINY", "TinyFamily", "batch", "check_allocate_grid", "position_scorer", "prompt", "tiny"]
