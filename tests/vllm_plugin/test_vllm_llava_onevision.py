"""The vLLM plugin on LLaVA-OneVision (``LlavaOnevisionForConditionalGeneration``): a tiny checkpoint
(``arr_coc.tiny_tiled``, ``vllm=True``) with the real processor. No options is vLLM's own output (the plugin's class
serves it), keep-all equals it, a pruned request keeps what ``compress(..., foveate=True, positions="renumber")`` keeps
(kept indices with every row's newline, pruned prompt, prompt logprobs within the float32 tolerance), the tower runs on
the base view and the tiles a kept token reads only, and ``positions="original"`` is refused in one line. One engine."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm", reason="vllm not installed (the plugin's tests run in .venv-vllm: bash .ci/vllm_env.sh)")

from linear_checks import generate_ignoring_eos as generate  # noqa: E402
from linear_checks import prompt_for, transformers_renumbered  # noqa: E402
from plugin_checks import (  # noqa: E402
    assert_logprobs_close,
    close_engine,
    image,
    open_engine,
    processor_keeps,
    request,
)

from arr_coc.tiny_tiled import spec  # noqa: E402

QUESTION = "What is the total amount due?"
IMAGE = spec("llava-onevision").specials["<image>"]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from arr_coc.testing import tiny_checkpoint

    folder = tiny_checkpoint("llava-onevision", tmp_path_factory.mktemp("onevision"), vllm=True)
    llm = open_engine(folder)
    yield llm, folder
    close_engine(llm)


def test_no_options_and_keep_all_are_vllms_own_result(engine):
    llm, _ = engine
    assert llm.apply_model(lambda model: type(model).__name__) == ["ArrCocLlavaOnevisionForConditionalGeneration"]
    img = image("invoice.jpg")
    prompt = prompt_for("<image>", 1, QUESTION)
    own, kept_all = generate(llm, [request(prompt, [img], None), request(prompt, [img], {"budget": 1.0})])
    assert kept_all["prompt_ids"] == own["prompt_ids"]
    assert kept_all["tokens"] == own["tokens"]
    assert kept_all["logprobs"] == own["logprobs"]
    assert kept_all["prompt_logprobs"][1:] == own["prompt_logprobs"][1:]


@pytest.mark.parametrize("name", ["invoice.jpg", "chart.jpg"])
def test_partial_budget_keeps_what_compress_keeps_with_renumbered_positions(engine, name):
    from arr_coc.vllm.llava_onevision import layout, tiles_encoded

    llm, folder = engine
    img = image(name)
    prompt = prompt_for("<image>", 1, QUESTION)
    options = {"budget": 0.25, "mode": "texture"}
    (keep,), _ = processor_keeps(llm, prompt, [img], options)
    (hf_keep,), hf_ids, hf_lp = transformers_renumbered(folder, prompt, [img], 0.25)
    assert keep.tolist() == hf_keep.tolist()
    lay = layout(llm.llm_engine.model_config.hf_config, img.height, img.width)
    assert set(lay.newline_tokens().tolist()) <= set(keep.tolist())  # every row keeps its newline
    encoded = tiles_encoded([lay], [keep])
    assert (0, 0) in encoded  # the base view always
    if name == "chart.jpg":  # 2 of its 9 tiles feed no kept token: the logprobs below are compared without them
        assert len(encoded) < 1 + lay.rows * lay.cols
    (got,) = generate(llm, [request(prompt, [img], options)])
    assert got["prompt_ids"].count(IMAGE) == int(keep.numel())
    assert got["prompt_ids"] == hf_ids
    assert len(got["tokens"]) == 4
    assert_logprobs_close(got["prompt_logprobs"], hf_lp)


def test_two_images_a_prompt_are_each_laid_out_anyres_and_pruned(engine):
    """vLLM lays every image of a prompt out anyres (it reads no ``batch_num_images``; transformers lays an image of a
    multi-image prompt out as its base view), so the plugin decides each as one image: no HF comparison here."""
    from arr_coc.vllm.llava_onevision import layout

    llm, _ = engine
    imgs = [image("invoice.jpg"), image("chart.jpg")]
    prompt = prompt_for("<image>", 2, QUESTION)
    keeps, _ = processor_keeps(llm, prompt, imgs, {"budget": 0.25})
    cfg = llm.llm_engine.model_config.hf_config
    for img, keep in zip(imgs, keeps, strict=True):
        lay = layout(cfg, img.height, img.width)
        assert set(lay.newline_tokens().tolist()) <= set(keep.tolist()) and keep.numel() < lay.n_tokens
    own, (got,) = generate(llm, [request(prompt, imgs, None)]), generate(llm, [request(prompt, imgs, {"budget": 0.25})])
    assert own[0]["prompt_ids"].count(IMAGE) == sum(layout(cfg, i.height, i.width).n_tokens for i in imgs)
    assert got["prompt_ids"].count(IMAGE) == sum(int(k.numel()) for k in keeps)
    assert len(got["tokens"]) == 4


def test_original_positions_are_refused_in_one_line(engine):
    llm, _ = engine
    with pytest.raises(ValueError, match="positions='original' cannot be served .* only positions='renumber'"):
        processor_keeps(llm, prompt_for("<image>", 1, QUESTION), [image("invoice.jpg")], {"positions": "original"})
