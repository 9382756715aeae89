"""The checks every family's vLLM test module runs against its one engine (imported by test_vllm_*.py).

Kept here, not in conftest, so that each family module states which checks it runs; the arithmetic behind the
tolerances is in :data:`LOGPROB_ATOL`.
"""

from __future__ import annotations

import gc
import json
import math
import os
import pathlib

import torch

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
MAX_PIXELS = {
    "qwen2-vl": 160 * 28 * 28,
    "qwen2.5-vl": 160 * 28 * 28,
    "qwen3-vl": 160 * 32 * 32,
    "qwen3.5": 160 * 32 * 32,
    "glm-4.1v": 160 * 28 * 28,
}  # <= 160 tokens


def engine_kwargs() -> dict:
    """What every test engine uses: float32 (exact comparisons), a 256 MiB KV cache, no compilation.

    ``ARR_COC_VLLM_ENGINE`` (a JSON object of ``LLM`` keyword arguments) overrides them, for the GPU checks of
    ``docs/serving-vllm.md`` (encoder CUDA graphs, ``compile_mm_encoder``, the data-parallel encoder).
    """
    return dict(
        dtype="float32",
        max_model_len=4096,
        max_num_seqs=8,
        limit_mm_per_prompt={"image": 3, "video": 0},
        kv_cache_memory_bytes=256 << 20,
        enforce_eager=True,
        seed=0,
    ) | json.loads(os.environ.get("ARR_COC_VLLM_ENGINE") or "{}")


def open_engine(folder: pathlib.Path):
    from vllm import LLM

    return LLM(model=str(folder), **engine_kwargs())


def close_engine(llm) -> None:
    del llm
    gc.collect()


def image(name: str):
    from PIL import Image

    return Image.open(EXAMPLES / name).convert("RGB")


def chat_prompt(folder: pathlib.Path, images: list, question: str) -> str:
    """The chat template's text for one user turn with ``images`` then ``question`` (the generation prompt added)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    content = [{"type": "image"} for _ in images] + [{"type": "text", "text": question}]
    return tok.apply_chat_template([{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True)


# vLLM and transformers compute the same float32 network with different kernels (attention, rotary, matmul
# blocking), so sums are taken in different orders. A float32 sum of n terms of size <= 1 differs by at most about
# n * eps32 = n * 1.2e-7; the largest sums here are the softmax's logsumexp over the 151,936-entry vocabulary and
# attention over <= 400 prompt tokens, through 2 decoder layers and 2 vision blocks, and a log-probability is
# about 12 in size: 4e2 tokens * 1.2e-7 * 12 ~ 6e-4 per stage, so we allow 2e-3 (three stages) -- far below the
# ~1e-2 steps by which greedy-token logprobs of this random model differ from one another.
LOGPROB_ATOL = 2e-3


def request(prompt: str, images: list, options: dict | None) -> dict:
    """One vLLM prompt dict: text, images and (optionally) this request's arr_coc options."""
    req = {"prompt": prompt, "multi_modal_data": {"image": images if len(images) != 1 else images[0]}}
    if options is not None:
        req["mm_processor_kwargs"] = {"arr_coc": options}
    return req


def params(max_tokens: int = 4):
    from vllm import SamplingParams

    return SamplingParams(temperature=0.0, max_tokens=max_tokens, logprobs=0, prompt_logprobs=0)


def summary(out) -> dict:
    """Prompt ids, greedy tokens and their logprobs, prompt logprobs (of the prompt's own tokens) of one output."""
    ids = list(out.prompt_token_ids)
    prompt_lp = [math.nan] + [lp[ids[i]].logprob for i, lp in enumerate(out.prompt_logprobs) if i > 0]
    gen = out.outputs[0]
    return {
        "prompt_ids": ids,
        "tokens": list(gen.token_ids),
        "logprobs": [lp[t].logprob for t, lp in zip(gen.token_ids, gen.logprobs, strict=True)],
        "prompt_logprobs": prompt_lp,
    }


def generate(llm, reqs: list[dict], max_tokens: int = 4) -> list[dict]:
    return [summary(o) for o in llm.generate(reqs, params(max_tokens), use_tqdm=False)]


def processor_keeps(llm, prompt: str, images: list, options: dict) -> tuple[list[torch.Tensor], list[str]]:
    """What the engine's own processor class decides for one request: kept indices per image, and the items' hashes
    (the processor / encoder cache keys)."""
    from vllm.multimodal import MULTIMODAL_REGISTRY
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    proc = MULTIMODAL_REGISTRY.create_processor(llm.llm_engine.model_config)
    ids = proc.info.get_tokenizer().encode(prompt, add_special_tokens=False)
    inputs = ProcessorInputs(
        prompt=ids,
        mm_data_items=proc.info.parse_mm_data({"image": images}),
        hf_processor_mm_kwargs={"arr_coc": options},
    )
    res = proc.apply(inputs, TimingContext())
    items = res["mm_kwargs"]["image"]
    return [it["arr_coc_keep"].data.clone() for it in items], list(res["mm_hashes"]["image"])


def transformers_path(
    folder: pathlib.Path,
    family: str,
    prompt: str,
    images: list,
    budget,
    question=None,
    text_prior: bool = False,
    realizer=None,
):
    """``compress(model, budget, foveate=True)`` on the same checkpoint and prompt: kept indices per image, the pruned
    prompt's ids and the log-probability of each of its tokens (nan for the first). ``realizer``: compress's
    relevance model (None: the default one)."""
    from arr_coc import compress, load_processor
    from arr_coc.testing import _model_class

    model = _model_class(family).from_pretrained(str(folder), dtype=torch.float32).eval()
    processor = load_processor(str(folder))
    inputs = processor(text=[prompt], images=images, return_tensors="pt")
    cm = compress(
        model, budget, processor=processor, foveate=True, query=question, text_prior=text_prior, realizer=realizer
    )
    with torch.no_grad():
        logits = cm(**inputs).logits[0].float()  # (L', V)
    ids = cm.last_inputs.input_ids[0]  # (L',)
    lp = torch.log_softmax(logits, -1)[:-1].gather(1, ids[1:, None]).squeeze(1)  # (L'-1,)
    keeps = [a.keep.clone() for a in cm.last_allocation[0]]
    return keeps, ids.tolist(), [math.nan] + lp.tolist()


def assert_logprobs_close(got: list[float], want: list[float], atol: float = LOGPROB_ATOL) -> None:
    a, b = torch.tensor(got[1:]), torch.tensor(want[1:])
    assert a.shape == b.shape, (a.shape, b.shape)
    worst = float((a - b).abs().max())
    assert worst <= atol, f"largest prompt-logprob difference {worst:.2e} > {atol:.0e}"
