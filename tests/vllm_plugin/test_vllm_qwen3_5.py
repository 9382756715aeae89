"""The vLLM plugin on Qwen3.5 (a hybrid Gated-DeltaNet + attention language model, Qwen3-VL's tower without
DeepStack): no options is vLLM's own output (the plugin's class serves it), keep-all equals it, and a pruned request
matches the transformers path (kept indices, pruned prompt, prompt logprobs). One engine."""

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

QUESTION = "What is the total amount due?"


@pytest.fixture(scope="module")
def engine(checkpoints):
    llm = open_engine(checkpoints["qwen3.5"])
    yield llm, checkpoints["qwen3.5"]
    close_engine(llm)


def test_no_options_and_keep_all_are_vllms_own_result(engine):
    llm, folder = engine
    assert llm.apply_model(lambda model: type(model).__name__) == ["ArrCocQwen3_5ForConditionalGeneration"]
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    own, again, kept_all = generate(
        llm,
        [request(prompt, [img], None), request(prompt, [img], None), request(prompt, [img], {"budget": 1.0})],
    )
    assert again == own
    assert kept_all["prompt_ids"] == own["prompt_ids"]
    assert kept_all["tokens"] == own["tokens"]
    assert kept_all["logprobs"] == own["logprobs"]


def test_partial_budget_matches_compress(engine):
    llm, folder = engine
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    options = {"budget": 0.25, "mode": "texture"}
    keeps, _ = processor_keeps(llm, prompt, [img], options)
    hf_keeps, hf_ids, hf_lp = transformers_path(folder, "qwen3.5", prompt, [img], 0.25)
    assert [k.tolist() for k in keeps] == [k.tolist() for k in hf_keeps]
    (got,) = generate(llm, [request(prompt, [img], options)])
    assert got["prompt_ids"] == hf_ids
    assert len(got["tokens"]) == 4
    assert_logprobs_close(got["prompt_logprobs"], hf_lp)
