"""The allocators ``arr-coc eval`` compares: the query-blind baselines keep what they say, whatever the batch, and
the ``texture`` allocator does not look at the model's features.

Why: a baseline that silently changes with batch composition, or a "texture" column that secretly uses the model's
embeddings, would make the comparison table say something it does not measure.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from PIL import Image  # noqa: E402

from arr_coc.evaluation.allocators import (  # noqa: E402
    ALLOCATORS,
    RandomScorer,
    UniformScorer,
    check_allocators,
    compress_options,
    supports_foveate,
    texture_scorer,
)
from arr_coc.evaluation.runner import UNPRUNED, build_batch, plan_variants  # noqa: E402
from arr_coc.evaluation.tasks import TASKS  # noqa: E402
from arr_coc.integrations import compress  # noqa: E402

BOUNDS = (3136, 28 * 28 * 64)


@pytest.fixture(scope="module")
def tiny():
    from arr_coc.testing import tiny_model

    return tiny_model("qwen2.5-vl")


def picture(seed: int, size=(300, 200)) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def kept(tiny, scorer, images, questions, budget=0.25) -> list[list[int]]:
    model, processor = tiny
    inputs = build_batch(processor, TASKS["docvqa"], images, questions, BOUNDS)
    cm = compress(model, budget=budget, processor=processor, query=questions, scorer=scorer)
    with torch.inference_mode():
        cm(**inputs)
    return [a.keep.tolist() for sample in cm.last_allocation for a in sample]


def test_uniform_keeps_evenly_spread_tokens(tiny):
    model, processor = tiny
    inputs = build_batch(processor, TASKS["docvqa"], [picture(0)], ["q"], BOUNDS)
    t, h, w = inputs["image_grid_thw"][0].tolist()
    n = t * h * w // 4
    for budget in (0.25, 0.111, 7):
        k = round(budget * n) if isinstance(budget, float) else budget
        expected = [int(np.floor((i + 0.5) * n / k)) for i in range(k)]
        assert kept(tiny, UniformScorer(budget), [picture(0)], ["q"], budget) == [expected]


def test_random_is_seeded_by_the_sample_not_the_batch(tiny):
    alone = kept(tiny, RandomScorer(0), [picture(1)], ["What is the total?"])
    together = kept(tiny, RandomScorer(0), [picture(2), picture(1)], ["Who?", "What is the total?"])
    assert together[1] == alone[0]  # same sample, other batch position and neighbour
    assert kept(tiny, RandomScorer(0), [picture(1)], ["What is the total?"]) == alone  # every run
    assert kept(tiny, RandomScorer(1), [picture(1)], ["What is the total?"]) != alone  # the seed matters
    assert kept(tiny, RandomScorer(0), [picture(1)], ["Who signed?"]) != alone  # and the question


def test_texture_ignores_the_models_features_but_not_the_question(tiny):
    contexts = []

    def spy(ctx):
        contexts.append(ctx)
        return texture_scorer(ctx)

    kept(tiny, spy, [picture(3)], ["What is in the top left corner?"])
    ctx = contexts[0]
    scores = texture_scorer(ctx).scores  # TokenScores: without OCR there are no word units
    assert texture_scorer(ctx).units == []
    noise = torch.randn_like(ctx.token_feats)
    from dataclasses import replace

    assert torch.equal(texture_scorer(replace(ctx, token_feats=noise, query_embeds=noise[:3])).scores, scores)
    other = texture_scorer(replace(ctx, query_text="What is in the bottom right corner?")).scores
    assert not torch.equal(other, scores)


def test_checks_and_variants():
    with pytest.raises(ValueError, match="unknown allocator 'oracle'"):
        check_allocators(["oracle"], [0.5])
    with pytest.raises(ValueError, match="uniform allocator needs a count or a fraction"):
        check_allocators(["uniform"], ["adaptive"])
    if not supports_foveate():
        with pytest.raises(ValueError, match="foveate allocator needs compress"):
            check_allocators(["foveate"], [0.5])
    else:
        check_allocators(["foveate"], [0.5])
        assert compress_options("foveate", 0.5)["foveate"] is True
    assert set(ALLOCATORS) == {"text", "texture", "model", "foveate", "random", "uniform", "downscale"}
    assert [v.name for v in plan_variants(["100%"], ["model"])] == [UNPRUNED]  # 100% is the unpruned model
    variants = plan_variants(["1.0", "0.333", "64"], ["model", "random"])
    assert [v.name for v in variants] == [UNPRUNED, "model@0.333", "random@0.333", "model@64", "random@64"]
    assert variants[3].budget == 64 and variants[1].budget == pytest.approx(0.333)
    with pytest.raises(ValueError, match="twice"):
        plan_variants(["0.5", "50%"], ["model"])
    with pytest.raises(ValueError, match="budget"):
        plan_variants(["0"], ["model"])
