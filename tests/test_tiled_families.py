"""The tiled families, InternVL and LLaVA-OneVision, on tiny random-weight models of their own config classes.

* the layouts (:mod:`arr_coc.tiling`) against the processors' own counts, and ``allocate``'s grid = the model's
  visual token count with each token's page box;
* the issue's independent check (budget 1.0 bit-identical, budget 0.25 keeps 15-40% and shortens the logits by the
  dropped tokens, generate gives 3 new tokens), default scorer;
* a pruned forward = a hand-built reference (the model's own features at the kept tokens, its embeddings, the original
  1-D ids gathered); a batch = its items one by one;
* tiles chosen before the tower: ``compress(foveate=True)`` encodes only the tiles with a kept token (and the
  thumbnail / base view), and its features are the model's own tower on exactly those tiles;
* LLaVA-OneVision's newlines stay (a row with no kept cell keeps its newline); bad input is named in one line.
"""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")
import numpy as np  # noqa: E402
import torch  # noqa: E402

from arr_coc import tiled_testing as tt  # noqa: E402
from arr_coc.integrations import compress  # noqa: E402
from arr_coc.tiling import internvl_tiles_for, onevision_tiles_for  # noqa: E402


@pytest.fixture(scope="module")
def internvl():
    return tt.build(tt.internvl)


@pytest.fixture(scope="module")
def onevision():
    return tt.build(tt.onevision)


def sine_scorer(ctx) -> torch.Tensor:
    return torch.sin(torch.arange(ctx.n_tokens, dtype=torch.float32) * 1.7)  # (N,)


def ONE_INTERNVL():  # noqa: N802
    return tt.internvl_inputs([[3]])  # 2 tiles + the thumbnail


def ONE_ONEVISION():  # noqa: N802
    return tt.onevision_inputs([[(100, 150)]])  # 2 x 3 tiles + the base view


CASES = {"internvl": ("internvl", ONE_INTERNVL), "llava-onevision": ("onevision", ONE_ONEVISION)}


# ----- the layouts against the processors -----------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(1000, 700), (700, 1000), (448, 448), (3000, 500), (200, 2400), (1600, 1200)])
def test_internvl_tiles_are_the_processors(size) -> None:
    from transformers import GotOcr2ImageProcessor

    h, w = size
    proc = GotOcr2ImageProcessor(crop_to_patches=True, size={"height": 448, "width": 448})
    kwargs = {"crop_to_patches": True, "min_patches": 1, "max_patches": 12}
    tiles = internvl_tiles_for(h, w, {"size": 448})
    assert tiles.n_tiles == proc.get_number_of_image_patches(h, w, kwargs)
    assert tiles.n_tokens == 256 * tiles.n_tiles
    boxes = tiles.token_boxes()
    assert boxes.shape == (tiles.n_tokens, 4) and boxes.min() >= 0
    assert np.allclose(boxes[:, 2].max(), w) and np.allclose(boxes[:, 3].max(), h)


@pytest.mark.parametrize("size", [(1000, 700), (700, 1000), (384, 384), (3000, 500), (200, 2400), (1600, 1200)])
def test_onevision_token_count_is_the_processors(size) -> None:
    from transformers.models.llava_onevision.processing_llava_onevision import LlavaOnevisionProcessor

    from arr_coc.tiling import ONEVISION_PINPOINTS

    h, w = size
    proc = LlavaOnevisionProcessor.__new__(LlavaOnevisionProcessor)  # only the counting arithmetic, no tokenizer
    proc.num_image_tokens, proc.vision_aspect_ratio = 729, "anyres_max_9"
    proc.image_processor = type("P", (), {"image_grid_pinpoints": ONEVISION_PINPOINTS})()
    lay = onevision_tiles_for(h, w, ONEVISION_PINPOINTS)
    assert lay.n_tokens == proc._get_number_of_features(h, w, 384, 384)
    boxes = lay.token_boxes()
    lines = lay.newline_tokens()
    assert np.isnan(boxes[lines]).all() and not np.isnan(np.delete(boxes, lines, 0)).any()


@pytest.mark.parametrize("family", ["internvl", "llava-onevision"])
def test_allocate_grid_is_the_models_token_count(family) -> None:
    from PIL import Image

    from arr_coc import allocate

    img = Image.new("RGB", (1000, 700), "white")
    a = allocate(img, "the total", 0.25, family=family, mode="texture")
    from arr_coc.tiling import ONEVISION_PINPOINTS

    if family == "internvl":
        n = internvl_tiles_for(700, 1000).n_tokens
    else:
        n = onevision_tiles_for(700, 1000, ONEVISION_PINPOINTS).n_tokens
    assert a.n_tokens == n and a.scores.size == n
    j = a.to_json()
    assert len(j["boxes"]) == n and j["tiles"]["scheme"] == family
    assert 0.15 <= a.budget / n <= 0.40
    with pytest.raises(ValueError, match=f"min_pixels / max_pixels do not apply to {family}"):
        allocate(img, "x", 4, family=family, mode="texture", max_pixels=448 * 448)


def test_unmapped_settings_are_refused_naming_them() -> None:
    with pytest.raises(ValueError, match="do_resize=False") as err:
        internvl_tiles_for(100, 100, {"do_resize": False})
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="vision_feature_select_strategy='default'"):
        onevision_tiles_for(100, 100, [[384, 384]], strategy="default")
    with pytest.raises(ValueError, match="vision_aspect_ratio='pad'"):
        onevision_tiles_for(100, 100, [[384, 384]], aspect_ratio="pad")


# ----- the independent check ----------------------------------------------------------------------------------
CHECKS = ("budget 1.0 bit-identical", "budget 0.25 keeps 15-40%", "generate 3 new tokens")


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("family", list(CASES))
def test_independent_check(family, check, request) -> None:
    fixture, make = CASES[family]
    model = request.getfixturevalue(fixture)
    inputs = make()
    n_image = int((inputs["input_ids"] == tt.IMAGE).sum())
    with torch.no_grad():
        ref = model(**inputs).logits
        if check == CHECKS[0]:
            assert torch.equal(compress(model, budget=1.0)(**inputs).logits, ref)
        elif check == CHECKS[1]:
            cm = compress(model, budget=0.25)
            out = cm(**inputs).logits
            kept = int(cm.last_allocation[0][0].keep.numel())
            assert 0.15 <= kept / n_image <= 0.40, (kept, n_image)
            assert out.shape[1] == ref.shape[1] - (n_image - kept)
        else:
            seq = compress(model, budget=0.25).generate(**inputs, max_new_tokens=3, do_sample=False)
            assert seq.shape[1] - inputs["input_ids"].shape[1] == 3


# ----- exactness ------------------------------------------------------------------------------------------------------
def _reference(model, cm, feats) -> torch.Tensor:
    """The pruned call built by hand: the kept ids' embeddings, ``feats`` in the kept placeholders, the positions the
    full sequence gives each kept token (0, 1, ... over the full prompt, gathered), the language model."""
    pruned = cm.last_inputs
    full = (pruned.index_map.clamp_min(0)).masked_fill(pruned.index_map < 0, 0)  # original columns
    embeds = model.get_input_embeddings()(pruned.input_ids).clone()
    embeds[pruned.input_ids == tt.IMAGE] = feats.to(embeds.dtype)
    hidden = model.model.language_model(inputs_embeds=embeds, attention_mask=pruned.attention_mask,
                                        position_ids=full).last_hidden_state  # fmt: skip
    return model.lm_head(hidden)


@pytest.mark.parametrize("family", list(CASES))
def test_pruned_forward_is_the_hand_reference(family, request) -> None:
    fixture, make = CASES[family]
    model = request.getfixturevalue(fixture)
    inputs = make()  # one image, no padding: positions are the original columns
    with torch.no_grad():
        cm = compress(model, budget=0.25, scorer=sine_scorer)
        out = cm(**inputs).logits
        keep = cm.last_allocation[0][0].keep
        if family == "internvl":
            full = model.model.get_image_features(pixel_values=inputs["pixel_values"]).pooler_output.flatten(0, 1)
        else:
            full = model.model.get_image_features(
                inputs["pixel_values"], inputs["image_sizes"], batch_num_images=inputs["batch_num_images"]
            ).pooler_output[0]
        assert torch.equal(cm.last_inputs.position_ids[0], cm.last_inputs.index_map)  # original ids, with gaps
        ref = _reference(model, cm, full[keep])
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_a_batch_is_its_items(internvl, onevision) -> None:
    for model, both, alone in (
        (internvl, tt.internvl_inputs([[3], [1, 1]]), [tt.internvl_inputs([[3]]), tt.internvl_inputs([[1, 1]])]),
        (onevision, tt.onevision_inputs([[(100, 150)], [(60, 60), (50, 120)]]),
         [tt.onevision_inputs([[(100, 150)]]), tt.onevision_inputs([[(60, 60), (50, 120)]])]),
    ):  # fmt: skip
        alone[1]["pixel_values"] = both["pixel_values"][-2:] if model is onevision else both["pixel_values"][3:]
        alone[0]["pixel_values"] = both["pixel_values"][:1] if model is onevision else both["pixel_values"][:3]
        if model is onevision:
            alone[0]["pixel_values"] = alone[0]["pixel_values"][:, : 1 + 6]
        cm = compress(model, budget=0.25, scorer=sine_scorer)
        with torch.no_grad():
            out = cm(**both).logits
            real = cm.last_inputs.attention_mask.bool()
            for b in range(2):
                torch.testing.assert_close(out[b, real[b]], cm(**alone[b]).logits[0], rtol=1e-5, atol=1e-5)


# ----- tiles chosen before the tower ----------------------------------------------------------------------------------
def test_internvl_foveation_encodes_only_the_chosen_tiles_with_the_models_tower(internvl) -> None:
    inputs = tt.internvl_inputs([[7]])  # 2 x 3 tiles + the thumbnail

    def first_tile(ctx):  # only tile 0 and tile 2 matter: every other tile has no kept token
        s = torch.full((ctx.n_tokens,), -1.0)
        s[:4], s[2 * 16 + 5] = 1.0, 2.0
        return s

    with torch.no_grad():
        cm = compress(internvl, budget=5, scorer=first_tile, foveate=True)
        out = cm(**inputs).logits
        enc = cm.last_inputs.mm_encoder_outputs["image"].pooler_output[0]  # (5, D)
        keep = cm.last_allocation[0][0].keep
        assert keep.tolist() == [0, 1, 2, 3, 37]
        tiles = [0, 2, 6]  # the kept tokens' tiles and the thumbnail; tiles 1, 3, 4, 5 never reach the tower
        own = internvl.model.get_image_features(pixel_values=inputs["pixel_values"][tiles]).pooler_output
        assert torch.equal(enc, torch.cat([own[0, :4], own[1, 5:6]]))
        pruned = compress(internvl, budget=5, scorer=first_tile)(**inputs).logits
        torch.testing.assert_close(out, pruned, rtol=1e-5, atol=1e-5)
        full = compress(internvl, budget=1.0, foveate=True)(**inputs).logits
        torch.testing.assert_close(full, internvl(**inputs).logits, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("size", "ratio"), [((100, 150), "anyres_max_9"), ((90, 200), "anyres_max_9"),
                                             ((100, 150), "anyres_max_1")])  # fmt: skip
def test_onevision_foveation_encodes_only_the_tiles_kept_tokens_read(size, ratio) -> None:
    from arr_coc.integrations.llava_onevision import tiles_read

    model = tt.build(lambda: tt.onevision(ratio))
    inputs = tt.onevision_inputs([[size]], aspect_ratio=ratio)
    lay = tt.onevision_layout(*size, aspect_ratio=ratio)

    def left_cells(ctx):  # the first anyres cell of each row: the left tiles only (and the base view)
        s = torch.full((ctx.n_tokens,), -1.0)
        cells = torch.from_numpy(lay.anyres_tokens().reshape(lay.final)[:, 0])
        s[cells] = 1.0
        return s

    with torch.no_grad():
        k = lay.final[0]
        cm = compress(model, budget=k, scorer=left_cells, foveate=True)
        out = cm(**inputs).logits
        keep = cm.last_allocation[0][0].keep
        assert set(lay.newline_tokens().tolist()) <= set(keep.tolist())  # every newline stays
        wanted = tiles_read(lay, keep.numpy())
        assert wanted[0] == 0 and len(wanted) < 1 + lay.rows * lay.cols  # the right tiles never reach the tower
        enc = cm.last_inputs.mm_encoder_outputs["image"].pooler_output[0]
        full = model.model.get_image_features(inputs["pixel_values"], inputs["image_sizes"]).pooler_output[0]
        torch.testing.assert_close(enc, full[keep], rtol=1e-5, atol=1e-5)  # = the model's tower on those tiles
        pruned = compress(model, budget=k, scorer=left_cells)(**inputs).logits
        torch.testing.assert_close(out, pruned, rtol=1e-5, atol=1e-5)
        ref = model(**inputs).logits
        torch.testing.assert_close(compress(model, budget=1.0, foveate=True)(**inputs).logits, ref, rtol=1e-5,
                                   atol=1e-5)  # fmt: skip


# ----- structure ------------------------------------------------------------------------------------------------------
def test_onevision_newlines_stay_even_on_empty_rows(onevision) -> None:
    inputs = ONE_ONEVISION()
    lay = tt.onevision_layout(100, 150)
    top = lay.anyres_tokens().reshape(lay.final)[0]

    def top_row(ctx):
        s = torch.full((ctx.n_tokens,), -1.0)
        s[torch.from_numpy(top)] = 1.0
        return s

    with torch.no_grad():
        cm = compress(onevision, budget=len(top), scorer=top_row)
        cm(**inputs)
        keep = set(cm.last_allocation[0][0].keep.tolist())
    lines = lay.newline_tokens().tolist()
    assert set(lines) <= keep  # every row keeps its newline, the rows with no kept cell too
    cells = keep - set(lines)
    assert len(cells) == len(top)  # a count budget is shared by the base view and the anyres raster by their cells
    assert cells & set(lay.anyres_tokens().tolist()) <= set(top.tolist())  # the anyres cells kept are the top row's


# ----- bad input ------------------------------------------------------------------------------------------------------
def test_placeholders_that_do_not_match_the_tiles_are_named_with_both_counts(internvl, onevision) -> None:
    inputs = tt.internvl_inputs([[3]])
    bad = dict(inputs, pixel_values=inputs["pixel_values"][:2])
    with pytest.raises(ValueError, match=r"describe 3 tiles \(48 tokens\) but pixel_values holds 2 tiles"):
        compress(internvl, budget=0.25)(**bad)
    ids = inputs["input_ids"]
    cut = torch.cat([ids[:, :8], ids[:, 9:]], 1)
    bad = dict(inputs, input_ids=cut, attention_mask=torch.ones_like(cut))
    with pytest.raises(ValueError, match=r"has 47 placeholder tokens, not a whole number of tiles of 16 tokens"):
        compress(internvl, budget=0.25)(**bad)
    ov = ONE_ONEVISION()
    bad = dict(ov, image_sizes=torch.tensor([[150, 100]]))
    n = tt.onevision_layout(100, 150).n_tokens
    with pytest.raises(ValueError, match=rf"holds {n} image placeholder tokens but the images' tiles .* make "):
        compress(onevision, budget=0.25)(**bad)


def test_positions_are_one_row_and_original_ids(internvl) -> None:
    inputs = tt.internvl_inputs([[3]])
    with torch.no_grad():
        cm = compress(internvl, budget=0.25)
        cm(**inputs)
    pos = cm.last_inputs.position_ids
    assert pos.shape[0] == 1 and torch.equal(pos[0], cm.last_inputs.index_map)


@pytest.mark.parametrize("family", list(CASES))
def test_no_attention_mask_is_the_same_pruned_forward(family, request) -> None:
    """Without an attention mask, transformers would read the gap in the original ids as a new packed sequence; the
    adapters always hand the model a mask, so the pruned forward is the same with or without one."""
    fixture, make = CASES[family]
    model = request.getfixturevalue(fixture)
    inputs = make()
    bare = {k: v for k, v in inputs.items() if k != "attention_mask"}
    with torch.no_grad():
        cm = compress(model, budget=0.25, scorer=sine_scorer)
        torch.testing.assert_close(cm(**bare).logits, cm(**inputs).logits, rtol=1e-5, atol=1e-5)


def test_cli_allocate_for_a_tiled_family(tmp_path) -> None:
    """``arr-coc allocate --family internvl``: the model's token count, each token's page box; the heatmap draws the
    tiles' mosaic over the page (the page view: kept cells are kept tokens)."""
    import json

    from PIL import Image

    from arr_coc import allocate
    from arr_coc.cli import main

    page = tmp_path / "page.png"
    Image.new("RGB", (1000, 700), "white").save(page)
    out, heat = tmp_path / "a.json", tmp_path / "h.png"
    args = ["allocate", str(page), "--query", "total", "--budget", "0.25", "--family", "internvl", "--mode", "texture"]
    assert main([*args, "--json", str(out), "--heatmap", str(heat)]) == 0
    got = json.loads(out.read_text())
    n = internvl_tiles_for(700, 1000).n_tokens
    assert got["grid"][0] * got["grid"][1] == n == len(got["boxes"]) and got["tiles"]["scheme"] == "internvl"
    assert heat.stat().st_size > 0
    for family in ("internvl", "llava-onevision"):
        a = allocate(Image.open(page), "total", 0.25, family=family, mode="texture")
        scores, kept = a.page_view()
        cells = a.tiles.page_tokens()
        assert scores.shape == cells.shape
        assert set(cells.reshape(-1)[kept.numpy()].tolist()) == set(a.keep.tolist()) & set(cells.reshape(-1).tolist())


@pytest.mark.parametrize("family", ["internvl", "llava-onevision"])
def test_demo_allocates_and_draws_a_tiled_family(family, tmp_path) -> None:
    pytest.importorskip("gradio")
    from PIL import Image

    from arr_coc import demo

    page = tmp_path / "page.png"
    Image.new("RGB", (700, 500), "white").save(page)
    app = demo.DemoApp()
    heat, record, state = app.allocate(page, "What is the amount due?", "0.11", family, "texture")
    assert isinstance(heat, Image.Image) and record["family"] == family and len(record["boxes"]) == record["grid"][
        0] * record["grid"][1]  # fmt: skip
    baseline, summary = app.details(state)
    assert isinstance(baseline, Image.Image) and f"{state['allocation'].n_tokens} → " in summary
