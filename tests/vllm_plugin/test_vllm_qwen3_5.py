"""The vLLM plugin on Qwen3.5 (a hybrid Gated-DeltaNet + attention language model, Qwen3-VL's tower without
DeepStack): no options is vLLM's own output (the plugin's class serves it), keep-all equals it, and a pruned request
keeps what the transformers path keeps (kept indices, pruned prompt). One engine, in bfloat16: vLLM's CPU Gated-DeltaNet
kernel takes nothing else, so the prompt logprobs are not compared with the float32 transformers path."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm", reason="vllm not installed (the plugin's tests run in .venv-vllm: bash .ci/vllm_env.sh)")

from plugin_checks import (  # noqa: E402
    chat_prompt,
    close_engine,
    engine_kwargs,
    generate,
    image,
    processor_keeps,
    request,
    transformers_path,
)

QUESTION = "What is the total amount due?"


@pytest.fixture(scope="module")
def engine(checkpoints):
    from vllm import LLM

    llm = LLM(model=str(checkpoints["qwen3.5"]), **(engine_kwargs() | {"dtype": "bfloat16"}))
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
    hf_keeps, hf_ids, _ = transformers_path(folder, "qwen3.5", prompt, [img], 0.25)
    assert [k.tolist() for k in keeps] == [k.tolist() for k in hf_keeps]
    (got,) = generate(llm, [request(prompt, [img], options)])
    assert got["prompt_ids"] == hf_ids
    assert len(got["tokens"]) == 4
