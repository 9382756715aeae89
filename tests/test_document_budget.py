"""``compress(..., budget_scope="prompt")``: one budget over a prompt's images (a document's pages), on the family
tester's tiny random-weight models (issue 39, "in the model")."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arr_coc.deciding import Scoring
from arr_coc.family_testing import (
    IMAGE,
    V_END,
    V_START,
    batch,
    kept_features,
    position_scorer,
    prompt,
    reference_logits,
    tiny,
)
from arr_coc.integrations import compress
from arr_coc.integrations.document_budget import prompt_groups, split_prompt
from arr_coc.integrations.options import CompressOptions

# three pages of 16, 8 and 8 tokens in one user turn, text between them
DOC = [[10], ("image", (1, 8, 8)), [11], ("image", (1, 4, 8)), [12], ("image", (1, 8, 4)), [13, 14]]
TWO_PAGES = [[9, 9], ("image", (1, 4, 4)), [5], ("image", (1, 4, 8)), [6]]
FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_5", "glm4v")


def _budgets(cm: object) -> list[list[int]]:
    return [[a.budget for a in row] for row in cm.last_allocation]  # type: ignore[attr-defined]


@pytest.mark.parametrize("model_type", FAMILIES)
def test_full_budget_is_the_model(model_type):
    model = tiny(model_type)
    inputs = batch(model, [DOC])
    with torch.no_grad():
        ref = model(**inputs).logits
        for scorer in (position_scorer, "auto"):
            cm = compress(model, budget=1.0, scorer=scorer, budget_scope="prompt")
            assert torch.equal(cm(**inputs).logits, ref), scorer
            assert _budgets(cm) == [[16, 8, 8]]
        fov = compress(model, budget=1.0, scorer=position_scorer, budget_scope="prompt", foveate=True)
        torch.testing.assert_close(fov(**inputs).logits, ref, rtol=1e-5, atol=1e-5)
        cm = compress(model, budget=1.0, scorer=position_scorer, budget_scope="prompt")
        ours = cm.generate(**inputs, max_new_tokens=3, do_sample=False)
        assert torch.equal(ours, model.generate(**inputs, max_new_tokens=3, do_sample=False))


@pytest.mark.parametrize("model_type", FAMILIES)
def test_pruned_forward_with_an_empty_page_is_the_hand_reference(model_type):
    """Two tokens over three pages: the even split gives the first two pages one each, the third nothing; its
    markers stay, its placeholders all go; the forward equals the hand reference, dropped and foveated."""
    model = tiny(model_type)
    inputs = batch(model, [DOC])
    with torch.no_grad():
        cm = compress(model, budget=2, scorer=position_scorer, budget_scope="prompt")
        out = cm(**inputs).logits
        assert _budgets(cm) == [[1, 1, 0]]
        ids = cm.last_inputs.input_ids[0]
        assert int((ids == IMAGE).sum()) == 2 and int((ids == V_START).sum()) == 3 and int((ids == V_END).sum()) == 3
        assert out.shape[1] == inputs["input_ids"].shape[1] - 30
        ref = reference_logits(model, inputs, cm, kept_features(model, inputs, cm))
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)

        fov = compress(model, budget=2, scorer=position_scorer, budget_scope="prompt", foveate=True)
        out_f = fov(**inputs).logits
        assert torch.equal(fov.last_inputs.input_ids, cm.last_inputs.input_ids)
        assert torch.equal(fov.last_inputs.position_ids, cm.last_inputs.position_ids)
        feats = list(fov.last_inputs.mm_encoder_outputs["image"].pooler_output)
        assert [int(f.shape[0]) for f in feats] == [1, 1, 0]
        torch.testing.assert_close(out_f, reference_logits(model, inputs, fov, feats), rtol=1e-5, atol=1e-5)
        seq = fov.generate(**inputs, max_new_tokens=2, do_sample=False)
        assert seq.shape[1] == inputs["input_ids"].shape[1] + 2


@pytest.mark.parametrize("model_type", ("qwen2_vl", "qwen3_vl"))
def test_a_batch_of_documents_is_each_alone(model_type):
    """Rows with three and two pages, each its own budget over its own pages: the batch equals each row alone."""
    model = tiny(model_type)
    both = batch(model, [DOC, TWO_PAGES])
    with torch.no_grad():
        for foveate in (False, True):
            cm = compress(model, budget=0.25, scorer=position_scorer, budget_scope="prompt", foveate=foveate)
            out = cm(**both).logits
            together = _budgets(cm)
            kept = cm.last_inputs.attention_mask.bool()
            for b, parts in enumerate((DOC, TWO_PAGES)):
                alone = batch(model, [parts])
                alone["pixel_values"] = torch.cat([p for _, p in prompt(model, parts, seed=b)[1]])
                single = cm(**alone).logits[0]
                assert _budgets(cm) == [together[b]]
                torch.testing.assert_close(out[b, kept[b]], single, rtol=1e-5, atol=1e-5)
    assert [sum(row) for row in together] == [8, 3]  # 25% of 32 and of 12 tokens


def test_a_count_is_for_the_whole_prompt_and_one_image_rows_are_unchanged():
    model = tiny("qwen2_vl")
    one = [[10, 11], ("image", (1, 8, 8)), [12]]
    inputs = batch(model, [DOC, one])
    with torch.no_grad():
        per_item = compress(model, budget=4, scorer=position_scorer)
        per_item(**inputs)
        per_prompt = compress(model, budget=4, scorer=position_scorer, budget_scope="prompt")
        per_prompt(**inputs)
    assert _budgets(per_item) == [[4, 4, 4], [4]]
    assert _budgets(per_prompt)[0] == [2, 1, 1] and sum(_budgets(per_prompt)[0]) == 4
    a, b = per_item.last_allocation[1][0], per_prompt.last_allocation[1][0]  # the one-image row: as before
    assert torch.equal(a.keep, b.keep)
    adaptive = compress(model, "adaptive", budget_scope="prompt")
    with torch.no_grad():
        adaptive(**batch(model, [DOC]))
    assert 1 <= sum(_budgets(adaptive)[0]) <= 32  # the most relevant page's adaptive count, over the document


def test_the_default_scope_is_per_item():
    assert CompressOptions.build(0.5).budget_scope == "item"
    with pytest.raises(ValueError, match="budget_scope must be one of"):
        CompressOptions.build(0.5, budget_scope="document")
    with pytest.raises(ValueError, match="does not take detail"):
        CompressOptions.build(0.5, budget_scope="prompt", detail="thumbnail")
    with pytest.raises(ValueError, match="does not take redundancy"):
        CompressOptions.build(0.5, budget_scope="prompt", redundancy=0.5)


def test_foveation_does_not_encode_an_empty_item():
    """An item that keeps nothing is not seen by the tower: the others' features are those of a call without it."""
    model = tiny("qwen2_5_vl")
    adapter = compress(model, budget=1.0).adapter
    inputs = batch(model, [DOC])
    px, grid = inputs["pixel_values"], inputs["image_grid_thw"]
    keeps = [torch.tensor([0, 5, 9]), torch.zeros(0, dtype=torch.long), torch.tensor([1, 7])]
    with torch.no_grad():
        got = adapter.encode_kept(model, "image", px, grid, keeps)
        without = adapter.encode_kept(model, "image", torch.cat([px[:64], px[96:]]), grid[[0, 2]], [keeps[0], keeps[2]])
    assert [int(f.shape[0]) for f in got.features] == [3, 0, 2]
    assert torch.equal(got.features[0], without.features[0]) and torch.equal(got.features[2], without.features[1])
    with pytest.raises(ValueError, match="at least one kept token"):
        adapter.encode_kept(model, "image", px, grid, [torch.zeros(0, dtype=torch.long)] * 3)


def _text_scoring(n: int, prior: float, words: str) -> Scoring:
    box = type("Box", (), {"text": words})()
    cells = torch.linspace(0, 1, n).view(1, 1, n)
    return Scoring(scores=cells, units=[], prior=torch.full((1, 1, n), prior), mode="text", boxes=[[box]])


def test_the_page_that_matches_gets_the_budget():
    """The text path's page match decides the share (pages.match_pages / split_pages, as allocate_pages)."""
    scorings = [
        _text_scoring(20, 0.5, "weather report"),
        _text_scoring(20, 1.0, "invoice total due 42"),
        _text_scoring(20, 0.5, "weather"),
    ]
    scores = [s.scores.flatten() for s in scorings]
    keeps = split_prompt(scores, CompressOptions.build(6).budget, "What is the total due?", scorings)  # type: ignore[arg-type]
    assert [int(k.numel()) for k in keeps] == [0, 6, 0]
    assert keeps[1].tolist() == list(range(14, 20))  # its own best cells
    # no question (or no text read): an even split, each page its own best cells
    even = split_prompt(scores, CompressOptions.build(6).budget, None, scorings)  # type: ignore[arg-type]
    assert [int(k.numel()) for k in even] == [2, 2, 2]
    blind = split_prompt(scores, CompressOptions.build(0.1).budget, "total due", None)  # type: ignore[arg-type]
    assert [int(k.numel()) for k in blind] == [2, 2, 2] and np.all([k.max() == 19 for k in blind])


def test_prompt_groups():
    assert prompt_groups([0, 0, 1, 1, 1, 2], ["image", "image", "image", "video", "image", "image"]) == {
        0: [0, 1],
        1: [2, 4],
    }
