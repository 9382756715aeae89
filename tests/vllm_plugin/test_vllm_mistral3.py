"""The vLLM plugin on Mistral3 (Pixtral vision; tiny checkpoint with the tokenizer built in code,
``arr_coc.tiny_tiled``, ``vllm=True``): no options is vLLM's own output (the plugin's class serves it), keep-all equals
it, a pruned request drops only ``[IMG]`` placeholders (every ``[IMG_BREAK]`` and the ``[IMG_END]`` stay) and equals
``compress(positions="renumber")`` keeping the same tokens (ids, prompt logprobs within the float32 tolerance), and
``positions: "original"`` is refused in one line. One engine."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm", reason="vllm not installed (the plugin's tests run in .venv-vllm: bash .ci/vllm_env.sh)")

from linear_checks import compressed, hf_model, reference_keeps  # noqa: E402
from plugin_checks import (  # noqa: E402
    assert_logprobs_close,
    chat_prompt,
    close_engine,
    generate,
    image,
    open_engine,
    processor_keeps,
    request,
)

QUESTION = "What is the total amount due?"
IMG, BREAK, END = 10, 12, 13  # [IMG], [IMG_BREAK], [IMG_END]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from arr_coc.testing import tiny_checkpoint

    folder = tiny_checkpoint("mistral3", tmp_path_factory.mktemp("vllm-mistral3"), vllm=True)
    llm = open_engine(folder)
    yield llm, folder
    close_engine(llm)


def test_no_options_and_keep_all_are_vllms_own_result(engine):
    llm, folder = engine
    assert llm.apply_model(lambda model: type(model).__name__) == ["ArrCocMistral3ForConditionalGeneration"]
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    own, kept_all = generate(llm, [request(prompt, [img], None), request(prompt, [img], {"budget": 1.0})])
    assert kept_all["prompt_ids"] == own["prompt_ids"]
    assert kept_all["tokens"] == own["tokens"]
    assert kept_all["logprobs"] == own["logprobs"]
    assert kept_all["prompt_logprobs"][1:] == own["prompt_logprobs"][1:]


def test_pruned_request_keeps_every_break_and_equals_compress_renumbered(engine):
    llm, folder = engine
    imgs = [image("invoice.jpg"), image("chart.jpg")]
    prompt = chat_prompt(folder, imgs, QUESTION)
    options = {"budget": 0.25, "mode": "texture", "positions": "renumber"}
    keeps, _ = processor_keeps(llm, prompt, imgs, options)
    model, processor = hf_model(folder, "Mistral3ForConditionalGeneration")
    inputs = processor(text=[prompt], images=imgs, return_tensors="pt")
    cell = 28
    mean = processor.image_processor.image_mean
    std = processor.image_processor.image_std
    frames, grids = [], []
    for px, (h, w) in zip(inputs["pixel_values"], inputs["image_sizes"].tolist(), strict=True):
        m, s = px.new_tensor(mean).view(3, 1, 1), px.new_tensor(std).view(3, 1, 1)
        frames.append((px[:, :h, :w] * s + m).clamp(0, 1)[None])
        grids.append((h // cell, w // cell))
    want = reference_keeps(frames, grids, QUESTION, 0.25)
    assert [k.tolist() for k in keeps] == [k.tolist() for k in want]
    (got,) = generate(llm, [request(prompt, imgs, options)])
    ids = got["prompt_ids"]
    assert ids.count(IMG) == sum(int(k.numel()) for k in keeps)
    assert ids.count(BREAK) + ids.count(END) == sum(r for r, _ in grids)  # every row's break, each image's end
    assert ids.count(END) == 2
    hf_keeps, hf_ids, hf_lp = compressed(model, processor, prompt, imgs, keeps, 0.25)
    assert [k.tolist() for k in hf_keeps] == [k.tolist() for k in keeps]
    assert ids == hf_ids
    assert len(got["tokens"]) == 4
    assert_logprobs_close(got["prompt_logprobs"], hf_lp)


def test_original_positions_are_refused_in_one_line(engine):
    llm, folder = engine
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    with pytest.raises(ValueError, match=r"positions 'original' is not served for mistral3 in vLLM 0\.32") as err:
        generate(llm, [request(prompt, [img], {"budget": 0.25, "positions": "original"})])
    assert "\n" not in str(err.value)
    (after,) = generate(llm, [request(prompt, [img], None)])  # the engine goes on
    assert len(after["tokens"]) == 4


def test_only_unkept_placeholders_are_dropped_and_an_empty_row_keeps_its_break():
    import torch

    from arr_coc.vllm.linear import drop_placeholders

    full = ([IMG] * 3 + [BREAK]) * 3
    full[-1] = END  # 3 rows of 3
    got = drop_placeholders(full, IMG, torch.tensor([0, 2, 7]))
    assert got == [IMG, IMG, BREAK, BREAK, IMG, END]  # row 2 kept nothing: break after break
