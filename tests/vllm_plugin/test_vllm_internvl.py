"""The vLLM plugin on InternVL ("-hf", ``InternVLForConditionalGeneration``; vLLM 0.32 serves it with its InternS1
class): a tiny checkpoint (``arr_coc.tiny_tiled``, ``vllm=True``) with the real processor. No options is vLLM's own
output (the plugin's class serves it), keep-all equals it, a pruned request keeps what ``compress(..., foveate=True,
positions="renumber")`` keeps (kept indices, pruned prompt with ``<img>`` / ``</img>``, prompt logprobs within the
float32 tolerance), the tower runs on the tiles with a kept token only, and ``positions="original"`` is refused in one
line. One engine."""

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
IMAGE, V_START, V_END = (spec("internvl").specials[t] for t in ("<IMG_CONTEXT>", "<img>", "</img>"))


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from arr_coc.testing import tiny_checkpoint

    folder = tiny_checkpoint("internvl", tmp_path_factory.mktemp("internvl"), vllm=True)
    llm = open_engine(folder)
    yield llm, folder
    close_engine(llm)


def test_no_options_and_keep_all_are_vllms_own_result(engine):
    llm, _ = engine
    assert llm.apply_model(lambda model: type(model).__name__) == ["ArrCocInternVLForConditionalGeneration"]
    img = image("invoice.jpg")
    prompt = prompt_for("<IMG_CONTEXT>", 1, QUESTION)
    own, kept_all = generate(llm, [request(prompt, [img], None), request(prompt, [img], {"budget": 1.0})])
    assert own["prompt_ids"].count(IMAGE) % 16 == 0 and own["prompt_ids"].count(IMAGE) > 16  # tiles + thumbnail
    assert kept_all["prompt_ids"] == own["prompt_ids"]
    assert kept_all["tokens"] == own["tokens"]
    assert kept_all["logprobs"] == own["logprobs"]
    assert kept_all["prompt_logprobs"][1:] == own["prompt_logprobs"][1:]


@pytest.mark.parametrize("budget", [0.25, 3])  # 3 tokens an image: at most 3 of its 5 tiles (and the thumbnail) run
def test_partial_budget_keeps_what_compress_keeps_with_renumbered_positions(engine, budget):
    from arr_coc.vllm.internvl import tile_plan

    llm, folder = engine
    imgs = [image("invoice.jpg"), image("chart.jpg")]
    prompt = prompt_for("<IMG_CONTEXT>", 2, QUESTION)
    options = {"budget": budget, "mode": "texture"}
    keeps, _ = processor_keeps(llm, prompt, imgs, options)
    hf_keeps, hf_ids, hf_lp = transformers_renumbered(folder, prompt, imgs, budget)
    assert [k.tolist() for k in keeps] == [k.tolist() for k in hf_keeps]
    (got,) = generate(llm, [request(prompt, imgs, options)])
    assert got["prompt_ids"].count(IMAGE) == sum(int(k.numel()) for k in keeps)
    assert got["prompt_ids"].count(V_START) == 2 and got["prompt_ids"].count(V_END) == 2  # <img> / </img> stay
    assert got["prompt_ids"] == hf_ids
    assert len(got["tokens"]) == 4
    assert_logprobs_close(got["prompt_logprobs"], hf_lp)
    if budget == 3:  # the logprobs above were compared with tiles left out of the tower
        chosen, _ = tile_plan(keeps, [5, 5], 16)
        assert len(chosen) < 10


def test_tiles_without_a_kept_token_are_not_encoded():
    import torch

    from arr_coc.vllm.internvl import tile_plan

    # image 0: 3 tiles + thumbnail, tokens kept in tile 1 only; image 1: one tile (no thumbnail), kept
    chosen, rows = tile_plan([torch.tensor([17, 20]), torch.tensor([0, 15])], [4, 1], 16)
    assert chosen == [1, 3, 4]  # tile 1, image 0's thumbnail, image 1's tile
    assert [r.tolist() for r in rows] == [[1, 4], [32, 47]]


def test_original_positions_and_one_budget_a_prompt_are_refused_in_one_line(engine):
    llm, _ = engine
    img = image("invoice.jpg")
    prompt = prompt_for("<IMG_CONTEXT>", 1, QUESTION)
    with pytest.raises(ValueError, match="positions='original' cannot be served .* only positions='renumber'"):
        processor_keeps(llm, prompt, [img], {"budget": 0.25, "positions": "original"})
    with pytest.raises(ValueError, match="budget_scope='prompt' is not served for the tiled families"):
        processor_keeps(llm, prompt, [img], {"budget": 0.25, "budget_scope": "prompt"})
    keeps, _ = processor_keeps(llm, prompt, [img], {"budget": 0.25, "positions": "renumber"})
    asked, _ = processor_keeps(llm, prompt, [img], {"budget": 0.25, "query": QUESTION})
    assert [k.tolist() for k in keeps] == [k.tolist() for k in asked]  # the turn's question is QUESTION
