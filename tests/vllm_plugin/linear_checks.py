"""The references the 1-D families' vLLM tests (test_vllm_mistral3.py, test_vllm_gemma3.py) compare against: the
plugin's decision on the transformers processor's pixels, and ``compress(positions="renumber")`` on the same checkpoint
keeping exactly those tokens (the plugin decides before the tower, so ``compress``'s drop mode, which also couples the
tower's features with the question, is not the reference: :mod:`arr_coc.vllm.linear`)."""

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
