"""`score_visual_tokens`: the relevance pipeline on a processor's pixel_values, as `compress` uses it."""

from __future__ import annotations

import pytest
import torch

from arr_coc import score_visual_tokens
from arr_coc.grid import GridSpec
from arr_coc.realizing import ocr_available

proc_mod = pytest.importorskip("transformers.models.qwen2_vl.image_processing_pil_qwen2_vl")


def _patches(image, family="qwen2.5-vl"):
    spec = GridSpec.for_family(family)
    proc = proc_mod.Qwen2VLImageProcessorPil(
        patch_size=spec.patch_size,
        merge_size=2,
        size={"shortest_edge": spec.min_pixels, "longest_edge": spec.max_pixels},
    )
    out = proc(images=image, return_tensors="pt")
    return out["pixel_values"], tuple(out["image_grid_thw"][0].tolist()), spec


def test_embedding_coupling_picks_the_matching_token(noise_image) -> None:
    pv, thw, spec = _patches(noise_image)
    n = thw[0] * thw[1] * thw[2] // 4
    feats = torch.randn(n, 32, generator=torch.Generator().manual_seed(0))
    target = 17
    query = feats[target : target + 1]
    p = spec.patch_size
    scores = score_visual_tokens(pv, thw, p, 2, 2, token_feats=feats, query_embeds=query, query_text="where?")
    assert scores.shape == (n,) and torch.isfinite(scores).all()
    assert int(scores.argmax()) == target
    with pytest.raises(ValueError, match="token_feats"):
        score_visual_tokens(pv, thw, spec.patch_size, 2, 2, token_feats=feats[:-1], query_embeds=feats[:1])


@pytest.mark.skipif(not ocr_available(), reason="needs the [ocr] extra")
def test_text_prior_from_the_models_own_pixels(form_image) -> None:
    pv, thw, spec = _patches(form_image)
    rows, cols = thw[1] // 2, thw[2] // 2
    scores = score_visual_tokens(pv, thw, spec.patch_size, 2, 2, query_text="How much must be paid?", text_prior=True)
    top = scores.view(rows, cols)
    # "$1,234.00" is drawn at x 330-460, y 310-340 of a 700 x 500 image: its cells must be among the top 5%.
    r0, r1 = int(310 / 500 * rows), int(340 / 500 * rows)
    c0, c1 = int(330 / 700 * cols), int(460 / 700 * cols)
    answer = top[r0 : r1 + 1, c0 : c1 + 1].max()
    assert answer >= torch.quantile(scores, 0.95)
