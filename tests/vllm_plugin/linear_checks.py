"""The references the 1-D / tiled families' vLLM tests (test_vllm_mistral3.py, test_vllm_gemma3.py,
test_vllm_internvl.py, test_vllm_llava_onevision.py) compare against, on the tiny checkpoints of
:mod:`arr_coc.tiny_tiled` (``tiny_checkpoint(family, folder, vllm=True)``): the plugin's decision on the transformers
processor's pixels, and ``compress(positions="renumber")`` on the same checkpoint keeping exactly those tokens (the
plugin decides before the tower, so ``compress``'s drop mode, which also couples the tower's features with the
question, is not the reference: :mod:`arr_coc.vllm.linear`), or for the tiled families choosing them itself
(``foveate=True``)."""

from __future__ import annotations

import math
import pathlib

import torch


def hf_model(folder: pathlib.Path, hf_class: str):
    import transformers

    model = getattr(transformers, hf_class).from_pretrained(str(folder), dtype=torch.float32).eval()
    return model, transformers.AutoProcessor.from_pretrained(str(folder))


def reference_keeps(frames: list[torch.Tensor], grids: list[tuple[int, int]], question: str, budget) -> list:
    """The realizer's decision (the plugin's, :func:`arr_coc.vllm.linear.decide_frames`) on frames in [0, 1]."""
    from arr_coc.vllm.options import realizer_for

    n = len(frames)
    decision = realizer_for(None, None).decide(frames, grids, [question] * n, budget, ["texture"] * n)
    return [decision[i].keep.long().cpu() for i in range(n)]


def keep_scorer(keeps: list[torch.Tensor]):
    """A ``compress`` scorer that ranks each image's ``keeps`` first (so a budget of their count keeps them)."""

    def score(ctx):
        n = math.prod(ctx.merged_grid)
        s = -torch.arange(n, dtype=torch.float32) * 1e-6
        s[keeps[ctx.index]] += 1.0
        return s

    return score


def compressed(model, processor, prompt: str, images: list, keeps: list[torch.Tensor], budget):
    """``compress(positions="renumber")`` keeping ``keeps``: kept indices, pruned ids, prompt log-probabilities."""
    from arr_coc import compress

    inputs = processor(text=[prompt], images=images, return_tensors="pt")
    cm = compress(model, budget, processor=processor, scorer=keep_scorer(keeps), positions="renumber")
    with torch.no_grad():
        logits = cm(**inputs).logits[0].float()  # (L', V)
    ids = cm.last_inputs.input_ids[0]
    lp = torch.log_softmax(logits, -1)[:-1].gather(1, ids[1:, None]).squeeze(1)
    got = [a.keep.clone() for a in cm.last_allocation[0]]
    return got, ids.tolist(), [math.nan] + lp.tolist()


def prompt_for(placeholder: str, n_images: int, question: str) -> str:
    """One ChatML user turn: ``n_images`` placeholders (one a line), then the question; the generation prompt added."""
    return f"<|im_start|>user\n{(placeholder + chr(10)) * n_images}{question}<|im_end|>\n<|im_start|>assistant\n"


def transformers_renumbered(folder: pathlib.Path, prompt: str, images: list, budget):
    """``compress(model, budget, foveate=True, positions="renumber")`` on the checkpoint (what vLLM serves for a tiled
    family): kept indices per image, the pruned prompt's ids and each token's log-probability (nan first)."""
    import transformers as tf

    from arr_coc import compress

    config = tf.AutoConfig.from_pretrained(str(folder))
    model, processor = hf_model(folder, config.architectures[0])
    inputs = processor(text=[prompt], images=images, return_tensors="pt")
    cm = compress(model, budget, processor=processor, foveate=True, positions="renumber")
    with torch.no_grad():
        logits = cm(**inputs).logits[0].float()  # (L', V)
    ids = cm.last_inputs.input_ids[0]
    lp = torch.log_softmax(logits, -1)[:-1].gather(1, ids[1:, None]).squeeze(1)
    return [a.keep.clone() for a in cm.last_allocation[0]], ids.tolist(), [math.nan] + lp.tolist()


def generate_ignoring_eos(llm, reqs: list[dict], max_tokens: int = 4) -> list[dict]:
    """``plugin_checks.generate`` with ``ignore_eos``: a random-weight model may emit its end token at any step."""
    from plugin_checks import summary
    from vllm import SamplingParams

    sp = SamplingParams(temperature=0.0, max_tokens=max_tokens, logprobs=0, prompt_logprobs=0, ignore_eos=True)
    return [summary(o) for o in llm.generate(reqs, sp, use_tqdm=False)]
