"""Scorers and balancer: shapes, ranges, batch invariance, and that query cues move relevance the right way."""

from __future__ import annotations

import pytest
import torch
from PIL import Image, ImageDraw

from arr_coc import allocate
from arr_coc.balancing import TensionBalancer
from arr_coc.grid import GridSpec
from arr_coc.knowing import InformationScorer, ParticipatoryScorer, PerspectivalScorer
from arr_coc.query import parse_query
from arr_coc.realizing import Realizer
from arr_coc.texture import texture_array

TEXTURE_SCORERS = [InformationScorer, PerspectivalScorer]


def _textures(n: int = 3) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    t = torch.rand(n, 13, 6, 9, generator=g)
    if n > 1:
        t[1] *= 0.1  # a low-contrast neighbour
    return t


# Batch invariance tolerance: outputs lie in [0, 1] after a handful of float32 operations per cell (two per-sample
# rescalings and a 3-term weighted sum); a batched kernel may round in another order, which moves the result by a
# few units in the last place of 1.0. 16 ulp of 1.0 (16 * 2**-23 = 1.9e-6) bounds that; a real dependence on the
# neighbour sample (e.g. a min/max over the batch) moves scores by far more (the neighbour here has 10x less contrast).
BATCH_ATOL = 16 * torch.finfo(torch.float32).eps


@pytest.mark.parametrize("cls", TEXTURE_SCORERS, ids=lambda c: c.__name__)
def test_texture_scorer_contract(cls) -> None:
    """Shape, range, batch invariance, and exactly the documented weighted mix of exactly its own channels."""
    from arr_coc.texture import CHANNELS

    scorer = cls()
    t = _textures()
    out = scorer(t)
    assert out.shape == (3, 6, 9) and out.min() >= 0 and out.max() <= 1
    for i in range(3):  # batch invariance: a sample's scores do not depend on its neighbours
        assert torch.allclose(out[i], scorer(t[i : i + 1])[0], atol=BATCH_ATOL, rtol=0)
    # it reads its own channels and no other: scrambling every other channel changes nothing
    own = set(scorer.index)
    scrambled = t.clone()
    for c in range(len(CHANNELS)):
        if c not in own:
            scrambled[:, c] = torch.rand_like(scrambled[:, c])
    assert torch.equal(scorer(scrambled), out)
    # an exact value: three cells with its channels at (0, 0, 0), (1, 0, 0), (1, 1, 1) score 0, w0 / sum(w), 1
    x = torch.zeros(1, len(CHANNELS), 1, 3)
    first, *rest = scorer.index
    x[0, first, 0, 1:] = 1.0
    for c in rest:
        x[0, c, 0, 2] = 1.0
    w = scorer.weight.detach()
    expected = torch.tensor([0.0, float(w[0] / w.sum()), 1.0])
    assert torch.allclose(scorer(x)[0, 0], expected, atol=BATCH_ATOL, rtol=0)
    # learnable: a loss on the scores reaches every weight (no detach, no non-differentiable step in the way)
    scorer(t)[:, 2, 3].sum().backward()
    assert scorer.weight.grad is not None and torch.isfinite(scorer.weight.grad).all()
    assert bool((scorer.weight.grad != 0).all())


def test_participatory_contract_and_cues() -> None:
    t = _textures()
    cues = [parse_query("what is in the top left?"), parse_query("describe it"), parse_query("the red thing")]
    scores, signal = ParticipatoryScorer()(t, cues)
    assert scores.shape == (3, 6, 9) and signal.shape == (3,)
    assert signal[1] == 0  # a vague query gives no coupling signal
    assert scores[0, 0, 0] > scores[0, -1, -1]  # top left beats bottom right
    one, _ = ParticipatoryScorer()(t[:1], cues[:1])
    assert torch.allclose(one[0], scores[0], atol=1e-6)
    with pytest.raises(ValueError, match="queries"):
        ParticipatoryScorer()(t, cues[:2])


def test_participatory_embedding_coupling() -> None:
    t = _textures(1)
    feats = torch.randn(1, 54, 16)
    q = feats[0, 20:21].clone()  # the query is token 20's own embedding
    scores, signal = ParticipatoryScorer()(t, [parse_query("")], token_feats=feats, query_embeds=[q])
    assert scores.flatten(1).argmax() == 20 and signal[0] > 0


def test_balancer_opponent_processing() -> None:
    bal = TensionBalancer()
    specific, vague = parse_query("What is the invoice number?"), parse_query("Describe the image")
    w = bal([specific, vague], torch.tensor([0.9, 0.0]))
    assert torch.allclose(w.sum(1), torch.ones(2))
    assert w[0].argmax() == 2  # specific + evidence -> participatory leads
    assert w[1, 2] == 0 and w[1, 1] > w[1, 0]  # vague, no evidence -> salience leads, participatory off
    weak = bal([specific], torch.tensor([0.05]))
    assert weak[0, 2] < w[0, 2]  # exploit vs explore: less evidence, less participatory


def test_realizer_is_batch_invariant() -> None:
    t = _textures()
    cues = [parse_query(q) for q in ("top text?", "", "blue sign")]
    rel, maps, w = Realizer()(t, cues)
    for i in range(3):
        one, _, _ = Realizer()(t[i : i + 1], cues[i : i + 1])
        assert torch.allclose(rel[i], one[0], atol=1e-6)
    assert set(maps) == {"information", "perspectival", "participatory"} and w.shape == (3, 3)


def test_spatial_query_moves_the_allocation() -> None:
    img = Image.new("RGB", (560, 560), "white")
    d = ImageDraw.Draw(img)
    for y in (40, 480):  # the same text at the top and at the bottom
        d.text((100, y), "HELLO WORLD 12345", fill="black")
    top = allocate(img, "What is written at the top?", budget=6, mode="texture")
    bottom = allocate(img, "What is written at the bottom?", budget=6, mode="texture")
    assert top.mask[:10].sum() > top.mask[10:].sum()
    assert bottom.mask[10:].sum() > bottom.mask[:10].sum()


def test_texture_path_prefers_content_over_blank_paper() -> None:
    img = Image.new("RGB", (840, 560), "white")
    ImageDraw.Draw(img).multiline_text((420, 300), "Total 1,234.00\nTax 12.00\nDue 1,246.00", fill="black")
    grid = GridSpec.for_family("qwen2.5-vl").grid_for(560, 840)
    ink = texture_array(img, grid)[11] > 0  # entropy > 0 where there is ink
    a = allocate(img, "What is the total?", budget=int(ink.sum()), mode="texture")
    assert ink.flatten()[a.keep].float().mean() >= 0.9
