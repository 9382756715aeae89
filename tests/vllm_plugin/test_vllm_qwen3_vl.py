"""The vLLM plugin on Qwen3-VL (learned position embeddings, DeepStack) and Qwen2-VL: keep-all identity and the
transformers path's kept tokens and logprobs (DeepStack levels pruned with the main tokens' indices: a wrong level
would move the logprobs far past the tolerance). One engine per family, opened in turn."""

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
CLASSES = {"qwen3-vl": "ArrCocQwen3VLForConditionalGeneration", "qwen2-vl": "ArrCocQwen2VLForConditionalGeneration"}


@pytest.fixture(scope="module", params=["qwen3-vl", "qwen2-vl"])
def engine(request, checkpoints):
    family = request.param
    llm = open_engine(checkpoints[family])
    yield llm, checkpoints[family], family
    close_engine(llm)


def test_keep_all_is_vllms_own_result(engine):
    llm, folder, family = engine
    assert llm.apply_model(lambda model: type(model).__name__) == [CLASSES[family]]
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    own, kept_all = generate(
        llm, [request(prompt, [img], None), request(prompt, [img], {"budget": 1.0, "mode": "texture"})]
    )
    assert kept_all["prompt_ids"] == own["prompt_ids"]
    assert kept_all["tokens"] == own["tokens"]
    assert kept_all["logprobs"] == own["logprobs"]
    assert kept_all["prompt_logprobs"][1:] == own["prompt_logprobs"][1:]


def test_partial_budget_matches_compress_deepstack_included(engine):
    llm, folder, family = engine
    imgs = [image("invoice.jpg"), image("chart.jpg")]
    prompt = chat_prompt(folder, imgs, QUESTION)
    options = {"budget": 0.22, "mode": "texture"}
    keeps, _ = processor_keeps(llm, prompt, imgs, options)
    hf_keeps, hf_ids, hf_lp = transformers_path(folder, family, prompt, imgs, 0.22)
    assert [k.tolist() for k in keeps] == [k.tolist() for k in hf_keeps]
    (got,) = generate(llm, [request(prompt, imgs, options)])
    assert got["prompt_ids"] == hf_ids
    assert_logprobs_close(got["prompt_logprobs"], hf_lp)


def test_every_family_is_registered_with_its_processor():
    """The entry point's register() replaces vLLM's four classes; each carries the plugin's processor (no engine:
    Qwen3-VL-MoE has no tiny checkpoint here, its seams are Qwen3-VL's)."""
    from vllm import ModelRegistry

    from arr_coc.vllm import ARCHITECTURES, register

    register()
    for arch, target in ARCHITECTURES.items():
        module, name = target.split(":")
        cls = getattr(__import__(module, fromlist=[name]), name)
        assert ModelRegistry._try_load_model_cls(arch) is cls
        assert "ArrCoc" in cls._processor_factory.processor.__name__
