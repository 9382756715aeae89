"""The vLLM plugin's pure pieces (``arr_coc.vllm.common``), which import without vLLM: options, the question of an
image's user turn, and M-RoPE positions of a pruned prompt (equal to the model's own positions of the full prompt,
gathered at the kept tokens). The plugin inside vLLM is tested in tests/vllm_plugin (its own environment)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from arr_coc.integrations.qwen_common import QwenAdapter
from arr_coc.vllm.common import (
    OPTIONS,
    ArrCocOptionError,
    Options,
    PlacedItem,
    parse_options,
    pruned_mrope_positions,
    special_ids,
    turn_questions,
)


def test_no_options_and_disabled_mean_vllms_own_behaviour():
    assert parse_options(None) is None
    assert parse_options({"budget": 0.1, "enabled": False}) is None


def test_options_parse_with_defaults():
    opts = parse_options({"budget": 0.22, "mode": "texture", "query": "total?"})
    assert opts == Options(budget=0.22, mode="texture", query="total?")
    assert parse_options({"mode": "texture"}).budget == "adaptive"


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"budget": 1.5}, "budget 1.5"),
        ({"budget": 0}, "budget 0 is not a number in (0, 1]"),
        ({"budgte": 0.2}, "unknown option 'budgte'; allowed: " + ", ".join(OPTIONS)),
        ({"mode": "psychic"}, "mode 'psychic'"),
        ({"enabled": "no"}, "enabled must be true or false"),
        ({"query": 3}, "query must be a string"),
        ({"text_options": [1]}, "text_options must be an object"),
        ({"relevance": "/nonexistent/folder"}, "relevance must be a checkpoint folder"),
        (0.22, "options must be an object"),
    ],
)
def test_bad_options_raise_one_clear_value_error(raw, message):
    with pytest.raises(ArrCocOptionError, match="^arr_coc: ") as err:
        parse_options(raw)
    assert message in str(err.value)
    assert isinstance(err.value, ValueError)  # vLLM answers a ValueError from input processing with HTTP 400


def test_the_question_is_the_text_of_the_images_user_turn():
    from arr_coc.testing import tiny_tokenizer

    tok = tiny_tokenizer("qwen2.5-vl")
    messages = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is the total?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "42."}]},
        {"role": "user", "content": [
            {"type": "text", "text": "And the date of"}, {"type": "image"}, {"type": "text", "text": "this one?"},
        ]},
    ]  # fmt: skip
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tok.encode(text, add_special_tokens=False)
    vocab = tok.get_vocab()
    from arr_coc.integrations.qwen_common import VLLM_MARKERS

    got = turn_questions(ids, special_ids(tok, vocab["<|image_pad|>"], vocab["<|video_pad|>"], VLLM_MARKERS), tok)
    assert got == ["What is the total?", "And the date ofthis one?"]  # compress's rule: the turn's text, joined


@pytest.mark.parametrize("family", ["qwen2.5-vl", "qwen3-vl"])
def test_pruned_positions_are_the_full_prompts_positions_at_the_kept_tokens(family):
    """pruned_mrope_positions == the model's own get_rope_index of the FULL prompt, gathered at the kept columns."""
    from PIL import Image

    from arr_coc.testing import tiny_model

    model, processor = tiny_model(family)
    images = [Image.new("RGB", (200, 120), "white"), Image.new("RGB", (90, 160), "gray")]
    content = [{"type": "image"}, {"type": "text", "text": "Compare"}, {"type": "image"}, {"type": "text", "text": "?"}]
    text = processor.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True)
    inputs = processor(text=[text], images=images, return_tensors="pt")
    ids = inputs["input_ids"]
    image_id = model.config.image_token_id
    mm_types = (ids == image_id).int()
    full, _ = model.model.get_rope_index(ids, mm_token_type_ids=mm_types, image_grid_thw=inputs["image_grid_thw"])
    full = full[:, 0]  # (3, L)
    merge = model.config.vision_config.spatial_merge_size
    row = ids[0].tolist()
    # the full prompt's items; then keep every third token of the first image and tokens 0 and 5 of the second
    starts = [i for i, t in enumerate(row) if t == image_id and (i == 0 or row[i - 1] != image_id)]
    grids = [(int(t), int(h) // merge, int(w) // merge) for t, h, w in inputs["image_grid_thw"].tolist()]
    keeps = [torch.arange(0, grids[0][1] * grids[0][2], 3), torch.tensor([0, 5])]
    assert pruned_mrope_positions(len(row), [PlacedItem(s, g) for s, g in zip(starts, grids, strict=True)])[0].equal(
        full
    )
    keep_cols = torch.ones(len(row), dtype=torch.bool)
    for s, g, k in zip(starts, grids, keeps, strict=True):
        drop = torch.ones(g[0] * g[1] * g[2], dtype=torch.bool)
        drop[k] = False
        keep_cols[s + torch.nonzero(drop).flatten()] = False
    pruned_row = [t for t, keep in zip(row, keep_cols.tolist(), strict=True) if keep]
    offsets, shift = [], 0
    for s, g, k in zip(starts, grids, keeps, strict=True):
        offsets.append(s - shift)
        shift += g[0] * g[1] * g[2] - k.numel()
    items = [PlacedItem(o, g, 1.0, k) for o, g, k in zip(offsets, grids, keeps, strict=True)]
    positions, delta = pruned_mrope_positions(len(pruned_row), items)
    assert positions.equal(full[:, keep_cols])
    assert delta == int(full.max()) + 1 - len(pruned_row)


def test_a_relevance_folder_loads_with_from_pretrained_or_fails_clearly(tmp_path):
    """``relevance`` is loaded with ``Realizer.from_pretrained`` (the object allocate/compress use for that folder);
    an empty folder, or an arr-coc-vis without ``from_pretrained``, is one clear option error."""
    with pytest.raises(ArrCocOptionError, match="^arr_coc: ") as err:
        parse_options({"relevance": str(tmp_path), "mode": "texture"})
    assert "from_pretrained" in str(err.value) or "could not load the relevance checkpoint" in str(err.value)


@pytest.mark.parametrize("family", ["qwen2-vl", "qwen2.5-vl", "qwen3-vl"])
def test_tiny_config_for_vllm_has_text_head_dim_32(family):
    """vLLM's CPU attention supports text head dims 32, 64, 80, ...: the vllm=True tiny config has 32."""
    from arr_coc.testing import tiny_config

    text = tiny_config(family, vllm=True).get_text_config()
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    assert (head_dim, text.num_attention_heads, text.num_key_value_heads) == (32, 2, 1)
    assert sum(text.rope_parameters["mrope_section"]) == head_dim // 2


def test_decide_all_is_each_images_own_decision_in_one_call(monkeypatch):
    """The processor decides every image of a request in ONE ``Realizer.decide`` call; each image's kept set is what
    deciding it alone (its own pixels, grid and question) gives, bit for bit, and an image without a question is
    decided query-blind in texture mode even when the request asks for mode ``"text"``."""
    from arr_coc.realizing import Realizer
    from arr_coc.vllm.common import Geometry, _frames, decide, decide_all, realizer_for

    geometry = Geometry(14, 2, 2, (0.48, 0.46, 0.41), (0.27, 0.26, 0.28), QwenAdapter.patch_frames)
    grids = [(1, 8, 12), (1, 6, 6), (1, 10, 4)]
    gen = torch.Generator().manual_seed(0)
    pixels = torch.randn(sum(t * h * w for t, h, w in grids), 3 * 2 * 14 * 14, generator=gen)
    options = Options(budget=5, mode="text", queries=("total?", "", "date of the invoice"))
    calls = []
    original = Realizer.decide
    monkeypatch.setattr(Realizer, "decide", lambda self, *a, **k: calls.append(a[4]) or original(self, *a, **k))
    texture = replace(options, mode="texture")
    keeps = decide_all(pixels, torch.tensor(grids), geometry, texture)
    assert calls == [["texture"] * 3]
    start = 0
    for (t, h, w), question, keep in zip(grids, options.queries, keeps, strict=True):
        frames = _frames(pixels[start : start + t * h * w], (t, h, w), geometry)
        alone = original(realizer_for(None), [frames], [(h // 2, w // 2)], [question or None], 5)[0].keep
        assert torch.equal(keep, alone.long()) and keep.numel() == 5
        assert torch.equal(decide(pixels[start : start + t * h * w], (t, h, w), geometry, question, texture), keep)
        start += t * h * w
    calls.clear()  # no question: texture, whatever the request's mode
    assert torch.equal(decide(pixels[96:132], (1, 6, 6), geometry, "", options), keeps[1]) and calls == [["texture"]]
    assert decide_all(pixels[:0], torch.zeros(0, 3, dtype=torch.long), geometry, options) == []


def test_decision_device_setting(monkeypatch):
    """``ARR_COC_VLLM_DEVICE``: unset is the CPU default (the shared realizer, onnxruntime OCR); a device gives a
    realizer with the same weights whose OCR runs on the torch backend there, and the same texture decision; a value
    that is no device, or a CUDA device this process cannot see, is one clear ValueError."""
    from arr_coc.realizing import default_realizer
    from arr_coc.vllm.common import DEVICE_ENV, Geometry, decide_all, decision_device, realizer_for

    monkeypatch.delenv(DEVICE_ENV, raising=False)
    assert decision_device() is None and realizer_for(None) is default_realizer()
    geometry = Geometry(14, 2, 2, (0.48, 0.46, 0.41), (0.27, 0.26, 0.28), QwenAdapter.patch_frames)
    pixels = torch.randn(96, 3 * 2 * 14 * 14, generator=torch.Generator().manual_seed(1))
    options = Options(budget=6, mode="texture", query="total?")
    on_cpu = decide_all(pixels, torch.tensor([[1, 8, 12]]), geometry, options)
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    assert decision_device() == torch.device("cpu")
    realizer = realizer_for(None, decision_device())
    assert realizer is not default_realizer() and realizer is realizer_for(None, torch.device("cpu"))
    ocr = realizer.reading.config.ocr
    assert (ocr.backend, ocr.device) == ("torch", "cpu")
    assert realizer.config.reading["ocr"]["backend"] == "torch" and default_realizer().config.reading is None
    assert torch.equal(decide_all(pixels, torch.tensor([[1, 8, 12]]), geometry, options)[0], on_cpu[0])
    for bad, message in (("gpu0", "is not a torch device"), ("cuda:7", "CUDA device")):
        monkeypatch.setenv(DEVICE_ENV, bad)
        if bad.startswith("cuda") and torch.cuda.device_count() > 7:
            continue
        with pytest.raises(ValueError, match=message):
            decision_device()
