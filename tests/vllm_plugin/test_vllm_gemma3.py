"""The vLLM plugin on Gemma 3 (tiny checkpoint with the tokenizer built in code, ``arr_coc.tiny_tiled``, ``vllm=True``):
no options is vLLM's own output (the plugin's class serves it), keep-all equals it, and a pruned request keeps the
plugin's decision, drops only soft tokens (``<start_of_image>`` / ``<end_of_image>`` stay), has the pruned ids of
``compress(positions="renumber")`` keeping the same tokens, and gives each image ONE bidirectional span: exactly its
kept soft tokens (what vLLM's GPU runner reads, ``mm_position.extract_embeds_range()``).

vLLM's CPU attention has no bidirectional spans (Gemma 3's images attend causally on the CPU build, pruned or not), so
the prompt logprobs are compared with the transformers language model run causally on the same pruned sequence and
kept features; the bidirectional forward is ``compress``'s (tests/test_mistral3_gemma3.py). One engine."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("vllm", reason="vllm not installed (the plugin's tests run in .venv-vllm: bash .ci/vllm_env.sh)")

import torch  # noqa: E402
from linear_checks import compressed, hf_model, reference_keeps  # noqa: E402
from plugin_checks import (  # noqa: E402
    assert_logprobs_close,
    chat_prompt,
    close_engine,
    generate,
    image,
    open_engine,
    request,
)

QUESTION = "What is the total amount due?"
SOFT, BOI, EOI = 262144, 255999, 256000


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from arr_coc.testing import tiny_checkpoint

    folder = tiny_checkpoint("gemma-3", tmp_path_factory.mktemp("vllm-gemma3"), vllm=True)
    llm = open_engine(folder)
    yield llm, folder
    close_engine(llm)


def processed(llm, prompt: str, images: list, options: dict):
    """The engine's own processor on one request: (kept indices per image, the expanded prompt ids, placeholders)."""
    from vllm.multimodal import MULTIMODAL_REGISTRY
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    proc = MULTIMODAL_REGISTRY.create_processor(llm.llm_engine.model_config)
    ids = proc.info.get_tokenizer().encode(prompt, add_special_tokens=False)
    items = proc.info.parse_mm_data({"image": images})
    inputs = ProcessorInputs(prompt=ids, mm_data_items=items, hf_processor_mm_kwargs={"arr_coc": options})
    res = proc.apply(inputs, TimingContext())
    keeps = [it["arr_coc_keep"].data.clone() for it in res["mm_kwargs"]["image"]]
    return keeps, list(res["prompt_token_ids"]), list(res["mm_placeholders"]["image"])


def causal_logprobs(model, inputs, ids: list[int], keeps: list[torch.Tensor]) -> list[float]:
    """The transformers Gemma 3 on the pruned ``ids`` (kept features in the soft tokens, positions 0, 1, ...),
    attending causally as vLLM's CPU build does: each token's log-probability (nan for the first)."""
    with torch.no_grad():
        feats = model.model.get_image_features(inputs["pixel_values"], return_dict=True).pooler_output  # (n, 16, D)
        row = torch.tensor([ids])
        embeds = model.get_input_embeddings()(row).clone()
        embeds[row == SOFT] = torch.cat([f[k] for f, k in zip(feats, keeps, strict=True)]).to(embeds)
        hidden = model.model.language_model(inputs_embeds=embeds, position_ids=torch.arange(len(ids))[None])
        logits = model.lm_head(hidden.last_hidden_state)[0].float()
    lp = torch.log_softmax(logits, -1)[:-1].gather(1, row[0, 1:, None]).squeeze(1)
    return [math.nan] + lp.tolist()


def test_no_options_and_keep_all_are_vllms_own_result(engine):
    llm, folder = engine
    assert llm.apply_model(lambda model: type(model).__name__) == ["ArrCocGemma3ForConditionalGeneration"]
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    own, kept_all = generate(llm, [request(prompt, [img], None), request(prompt, [img], {"budget": 1.0})])
    assert kept_all["prompt_ids"] == own["prompt_ids"]
    assert kept_all["tokens"] == own["tokens"]
    assert kept_all["logprobs"] == own["logprobs"]
    assert kept_all["prompt_logprobs"][1:] == own["prompt_logprobs"][1:]


def test_pruned_request_keeps_its_markers_and_one_bidirectional_span_of_kept_tokens(engine):
    llm, folder = engine
    imgs = [image("invoice.jpg"), image("chart.jpg")]
    prompt = chat_prompt(folder, imgs, QUESTION)
    options = {"budget": 0.25, "mode": "texture", "positions": "renumber"}  # the question: the user turn's text
    keeps, prompt_ids, places = processed(llm, prompt, imgs, options)
    model, processor = hf_model(folder, "Gemma3ForConditionalGeneration")
    inputs = processor(text=[prompt], images=imgs, return_tensors="pt")
    ip = processor.image_processor
    m, s = torch.tensor(ip.image_mean).view(3, 1, 1), torch.tensor(ip.image_std).view(3, 1, 1)
    frames = [(px * s + m).clamp(0, 1)[None] for px in inputs["pixel_values"]]
    assert [k.tolist() for k in keeps] == [k.tolist() for k in reference_keeps(frames, [(4, 4)] * 2, QUESTION, 0.25)]
    for place, keep in zip(places, keeps, strict=True):  # the span vLLM's GPU runner makes bidirectional
        ((first, last),) = place.extract_embeds_range()
        assert prompt_ids[first : last + 1] == [SOFT] * int(keep.numel())
        assert prompt_ids[first - 1] == BOI and prompt_ids[last + 1] == EOI
    (got,) = generate(llm, [request(prompt, imgs, options)])
    assert got["prompt_ids"] == prompt_ids
    assert prompt_ids.count(BOI) == prompt_ids.count(EOI) == 2
    assert prompt_ids.count(SOFT) == sum(int(k.numel()) for k in keeps)
    hf_keeps, hf_ids, _ = compressed(model, processor, prompt, imgs, keeps, 0.25)
    assert [k.tolist() for k in hf_keeps] == [k.tolist() for k in keeps]
    assert prompt_ids == hf_ids
    assert len(got["tokens"]) == 4
    assert_logprobs_close(got["prompt_logprobs"], causal_logprobs(model, inputs, prompt_ids, keeps))


def test_original_positions_are_refused_in_one_line(engine):
    llm, folder = engine
    img = image("invoice.jpg")
    prompt = chat_prompt(folder, [img], QUESTION)
    with pytest.raises(ValueError, match=r"positions 'original' is not served for gemma-3 in vLLM 0\.32") as err:
        generate(llm, [request(prompt, [img], {"budget": 0.25, "positions": "original"})])
    assert "\n" not in str(err.value)
