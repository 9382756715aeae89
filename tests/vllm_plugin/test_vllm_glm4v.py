"""The vLLM plugin on GLM-4.1V (tiny checkpoint with the tokenizer built in code, ``arr_coc.tiny_glm``): no options is
vLLM's own output (the plugin's class serves it), keep-all equals it, and a pruned request keeps what the transformers
path keeps (kept indices, pruned prompt, prompt logprobs within the float32 tolerance). One engine."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm", reason="vllm not installed (the plugin's tests run in .venv-vllm: bash .ci/vllm_env.sh)")

from plugin_checks import (  # noqa: E402
    assert_logprobs_close,
    chat_prompt,
    close_engine,
    generate,
    image,
    open_engine,
    processor_keeps,
    request,
    transformers_path,
)

FAMILY = "glm-4.1v"
QUESTION = "What is the total amount due?"


@pytest.fixture(scope="module")
def engine(checkpoints):
    llm = open_engine(checkpoints[FAMILY])
    yield llm, checkpoints[FAMILY]
    close_engine(llm)


def test_no_options_and_keep_all_are_vllms_own_result(engine):
    llm, folder = engine
    assert llm.apply_model(lambda model: type(model).__name__) == ["ArrCocGlm4vForConditionalGeneration"]
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    own, again, kept_all = generate(
        llm,
        [request(prompt, [img], None), request(prompt, [img], None), request(prompt, [img], {"budget": 1.0})],
    )
    # the same request again reads its prompt from vLLM's prefix cache: the same tokens (logprobs to float rounding)
    assert again["prompt_ids"] == own["prompt_ids"] and again["tokens"] == own["tokens"]
    assert kept_all["prompt_ids"] == own["prompt_ids"]
    assert kept_all["tokens"] == own["tokens"]
    assert kept_all["logprobs"] == own["logprobs"]
    assert kept_all["prompt_logprobs"][1:] == own["prompt_logprobs"][1:]


def test_partial_budget_keeps_the_requested_count_as_compress_does(engine):
    llm, folder = engine
    imgs = [image("invoice.jpg"), image("chart.jpg")]
    prompt = chat_prompt(folder, imgs, QUESTION)
    options = {"budget": 0.25, "mode": "texture"}
    keeps, _ = processor_keeps(llm, prompt, imgs, options)
    hf_keeps, hf_ids, hf_lp = transformers_path(folder, FAMILY, prompt, imgs, 0.25)
    assert [k.tolist() for k in keeps] == [k.tolist() for k in hf_keeps]
    (got,) = generate(llm, [request(prompt, imgs, options)])
    image_id = 151343  # <|image|>
    assert got["prompt_ids"].count(image_id) == sum(int(k.numel()) for k in keeps)
    assert got["prompt_ids"] == hf_ids
    assert len(got["tokens"]) == 4
    assert_logprobs_close(got["prompt_logprobs"], hf_lp)
