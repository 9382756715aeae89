"""Mistral3 (Pixtral vision) and Gemma 3 beyond the family tester: their structure tokens and masks under pruning, the
grid ``allocate`` gives against their processors, and bad input (a placeholder count or layout that does not match the
image, a processor setting the grid cannot map), on tiny random-weight models of their own config classes."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")
import torch  # noqa: E402

from arr_coc import family_testing as ft  # noqa: E402
from arr_coc.family_layouts import MISTRAL_BREAK, MISTRAL_END  # noqa: E402
from arr_coc.integrations import compress  # noqa: E402

ONE = [[20, 21], ("image", (1, 8, 8)), [22, 23, 24]]  # a 4 x 4 grid of visual tokens


def rows_scorer(keep_rows):
    """Scores that keep whole rows of the token grid (the others score lowest)."""

    def score(ctx):
        _, h, w = ctx.merged_grid
        r = torch.arange(h * w) // w
        return torch.isin(r, torch.tensor(keep_rows)).float() + torch.arange(h * w) * 1e-3

    return score


# ----- Mistral3: [IMG_BREAK] a row, [IMG_END] ------------------------------------------------------------------------
def test_mistral3_breaks_stay_at_their_positions_and_an_empty_row_keeps_its_break() -> None:
    model = ft.tiny("mistral3")
    inputs = ft.batch(model, [ONE])
    ids = inputs["input_ids"][0]
    for positions in ("original", "renumber"):
        cm = compress(model, budget=8, scorer=rows_scorer([0, 2]), positions=positions)
        with torch.no_grad():
            out = cm(**inputs).logits
        pruned = cm.last_inputs
        kept_ids = pruned.input_ids[0].tolist()
        cols = pruned.index_map[0].tolist()
        assert out.shape[1] == ids.shape[0] - 8
        structure = [(i, c) for i, c in zip(kept_ids, cols, strict=True) if i in (MISTRAL_BREAK, MISTRAL_END)]
        assert [i for i, _ in structure] == [MISTRAL_BREAK] * 3 + [MISTRAL_END]  # every row's break, the end
        assert all(int(ids[c]) == i for i, c in structure)  # each at its own original column
        image = kept_ids[kept_ids.index(ft.IMAGE) : kept_ids.index(MISTRAL_END) + 1]
        b, e = MISTRAL_BREAK, MISTRAL_END
        assert image == [ft.IMAGE] * 4 + [b, b] + [ft.IMAGE] * 4 + [b, e]  # rows 1 and 3 empty: break after break
        pos = pruned.position_ids[0, 0].tolist()
        if positions == "original":
            assert pos == cols  # one prompt, no padding: a kept token's id is its original column
        else:
            assert pos == list(range(len(cols)))
        assert cm.last_allocation[0][0].grid == (1, 4, 4)  # the grid holds the [IMG] cells only, never the breaks


def test_mistral3_placeholders_that_do_not_match_the_image_are_named() -> None:
    model = ft.tiny("mistral3")
    cm = compress(model, budget=0.25, scorer=ft.position_scorer)
    inputs = ft.batch(model, [ONE])
    short = dict(inputs)
    ids = inputs["input_ids"].clone()
    first = int((ids[0] == ft.IMAGE).nonzero()[0])
    short["input_ids"] = torch.cat([ids[:, :first], ids[:, first + 1 :]], 1)  # one [IMG] too few
    short["attention_mask"] = inputs["attention_mask"][:, 1:]
    with pytest.raises(ValueError, match=r"input_ids holds 15 image placeholder tokens but image_sizes describes 16"):
        cm(**short)
    moved = dict(inputs, input_ids=ids.clone())
    moved["input_ids"][0, first + 4 : first + 6] = torch.tensor([ft.IMAGE, MISTRAL_BREAK])  # rows wrong
    with pytest.raises(ValueError, match=r"image 0: its 16 \[IMG\] placeholders are not laid out as 4 rows of 4"):
        cm(**moved)


def test_mistral3_processor_setting_the_grid_cannot_map_is_one_line() -> None:
    model = ft.tiny("mistral3")

    class Processor:  # a PixtralProcessor's settings: another merge than the model's
        patch_size = 14
        spatial_merge_size = 1

    with pytest.raises(ValueError) as err:
        compress(model, budget=0.25, processor=Processor())
    text = str(err.value)
    assert "\n" not in text and "the processor's spatial_merge_size is 1 but the model's is 2" in text


# ----- Gemma 3: bidirectional attention among an image's tokens -----------------------------------------------------
def _hand_mask(ids: torch.Tensor) -> torch.Tensor:
    """(1, 1, L, L) bool: causal, OR both tokens placeholders of the same run (one image's kept tokens)."""
    is_img = ids[0] == ft.IMAGE
    start = is_img & ~torch.cat([torch.zeros(1, dtype=torch.bool), is_img[:-1]])
    group = torch.where(is_img, torch.cumsum(start.long(), 0), -1)  # (L,)
    n = ids.shape[1]
    causal = torch.arange(n)[None, :] <= torch.arange(n)[:, None]
    same = (group[:, None] == group[None, :]) & is_img[:, None] & is_img[None, :]
    return (causal | same)[None, None]


@pytest.mark.parametrize("positions", ["original", "renumber"])
def test_gemma3_bidirectional_mask_follows_the_kept_tokens(positions) -> None:
    """Two images pruned to 4 of 16 tokens each: the pruned forward equals the language model run with a mask built
    by hand (causal, and each image's KEPT tokens see each other both ways), and differs from a causal-only mask."""
    model = ft.tiny("gemma3")
    inputs = ft.batch(model, [[[20], ("image", (1, 8, 8)), [21, 22], ("image", (1, 8, 8)), [23]]])
    cm = compress(model, budget=0.25, scorer=ft.position_scorer, positions=positions)
    with torch.no_grad():
        out = cm(**inputs).logits
        pruned = cm.last_inputs
        ids = pruned.input_ids
        assert int((ids == ft.IMAGE).sum()) == 8 and out.shape[1] == inputs["input_ids"].shape[1] - 24
        embeds = model.get_input_embeddings()(ids).clone()
        embeds[ids == ft.IMAGE] = torch.cat(ft.kept_features(model, inputs, cm))
        pos = pruned.position_ids[0]
        lm = model.model.language_model
        results = []
        for mask in (_hand_mask(ids), _hand_mask(ids) & torch.ones_like(_hand_mask(ids)).tril()):
            hidden = lm(inputs_embeds=embeds, attention_mask={"full_attention": mask, "sliding_attention": mask},
                        position_ids=pos).last_hidden_state  # fmt: skip
            results.append(model.lm_head(hidden))
    torch.testing.assert_close(out, results[0], rtol=1e-5, atol=1e-5)
    assert not torch.allclose(out, results[1], atol=1e-4)  # the bidirectional part matters


def test_gemma3_geometry_of_the_published_config() -> None:
    """896-pixel images, 14-pixel patches, 256 tokens: 64 x 64 patches pooled 4 x 4, a 56-pixel cell: the row's."""
    from arr_coc.families import get_family
    from arr_coc.integrations.gemma3 import ADAPTER

    config = transformers.Gemma3Config(vision_config={"model_type": "siglip_vision_model", "image_size": 896,
                                                      "patch_size": 14})  # fmt: skip

    class Holder:
        pass

    holder = Holder()
    holder.config = config
    family = get_family("gemma3")
    assert ADAPTER.geometry(holder)[:2] == (family.patch_size, family.merge_size) == (14, 4)
    assert ADAPTER.token_ids(holder)["image"] == family.token_ids["image"] == config.image_token_id
    assert (family.token_ids["boi"], family.token_ids["eoi"]) == (config.boi_token_id, config.eoi_token_id)


def test_gemma3_token_types_that_mark_other_tokens_and_pan_and_scan_are_refused() -> None:
    model = ft.tiny("gemma3")
    inputs = ft.batch(model, [ONE])
    bad = dict(inputs, token_type_ids=torch.zeros_like(inputs["token_type_ids"]))
    with pytest.raises(ValueError, match=r"token_type_ids marks other tokens than the image placeholders"):
        compress(model, budget=0.25, scorer=ft.position_scorer)(**bad)
    processor = transformers.Gemma3ImageProcessorPil(do_pan_and_scan=True)
    with pytest.raises(ValueError) as err:
        compress(model, budget=0.25, processor=processor)
    assert "\n" not in str(err.value) and "do_pan_and_scan=True" in str(err.value)


# ----- allocate's grid: every visual token a page region, as the processors resize ----------------------------------
@pytest.mark.parametrize(("w", "h"), [(1700, 2200), (640, 480), (3000, 500), (300, 200)])
def test_allocate_grid_is_the_processors(w, h) -> None:
    """``allocate --family``'s grid covers exactly the image the processor makes (each token a ``cell``-pixel square
    of it, row breaks not in the grid): Pixtral's longest-edge resize at its published 1540 pixels, and Gemma 3's
    896 x 896 square."""
    from PIL import Image

    from arr_coc import allocate

    img = Image.new("RGB", (w, h), "white")
    pixtral = transformers.PixtralImageProcessorPil(size={"longest_edge": 1540}, patch_size={"height": 28, "width": 28})
    rh, rw = (int(v) for v in pixtral(images=img, return_tensors="pt")["image_sizes"][0])
    a = allocate(img, "x", 0.25, family="mistral3", mode="texture", max_pixels=1540 * 1540)
    assert a.grid == (rh // 28, rw // 28) and a.resized == (rw, rh)
    gemma = transformers.Gemma3ImageProcessorPil(size={"height": 896, "width": 896})
    _, _, gh, gw = gemma(images=img, return_tensors="pt")["pixel_values"].shape
    g = allocate(img, "x", 0.25, family="gemma-3", mode="texture")
    assert g.grid == (gh // 56, gw // 56) == (16, 16) and g.resized == (896, 896)
    assert 0.2 <= g.budget / 256 <= 0.3


def test_allocate_cli_takes_the_new_families(tmp_path) -> None:
    import json

    from PIL import Image

    from arr_coc.cli import main

    path = tmp_path / "page.png"
    Image.new("RGB", (800, 600), "white").save(path)
    for family, grid in (("mistral3", [22, 29]), ("gemma-3", [16, 16])):
        out = tmp_path / f"{family}.json"
        assert main(["allocate", str(path), "-q", "Total?", "--family", family, "--budget", "0.25", "--mode",
                     "texture", "--json", str(out)]) == 0  # fmt: skip
        data = json.loads(out.read_text())
        assert data["grid"] == grid and data["family"] == family, (family, data["grid"])


def test_original_ids_with_gaps_are_not_read_as_packed_sequences() -> None:
    """Without an attention mask and without a cache, transformers reads a jump in 1-D ``position_ids`` as a new packed
    sequence (``find_packed_sequence_indices``) and hides the text before it; the 1-D adapters always pass a mask, so
    the same call with and without the caller's mask gives the same logits, and they differ from the model run with
    the gaps and no mask (the hazard is real)."""
    model = ft.tiny("mistral3")
    inputs = ft.batch(model, [ONE])
    no_mask = {k: v for k, v in inputs.items() if k != "attention_mask"}
    cm = compress(model, budget=0.25, scorer=ft.position_scorer)
    with torch.no_grad():
        with_mask = cm(**inputs, use_cache=False).logits
        without = cm(**no_mask, use_cache=False).logits
        torch.testing.assert_close(without, with_mask, rtol=0, atol=0)
        kwargs = cm.adapter.model_inputs({}, _packed(cm), cm.last_inputs.mm_encoder_outputs, False)
        del kwargs["attention_mask"]
        packed_read = model(**kwargs, use_cache=False).logits
    assert not torch.allclose(packed_read, with_mask, atol=1e-4)


def _packed(cm):
    from types import SimpleNamespace

    last = cm.last_inputs
    return SimpleNamespace(input_ids=last.input_ids, attention_mask=None, labels=None, position_ids=last.position_ids)


def test_the_demo_allocates_on_the_new_families(tmp_path) -> None:
    """The demo's family list is the registry's: its allocate endpoint takes both families' grids."""
    pytest.importorskip("gradio")
    from PIL import Image

    from arr_coc import demo

    path = tmp_path / "page.png"
    Image.new("RGB", (800, 600), "white").save(path)
    for family, grid in (("mistral3", [22, 29]), ("gemma-3", [16, 16])):
        _, data, _ = demo.DemoApp().allocate(str(path), "Total?", "0.25", family, "texture")
        assert data["family"] == family and data["grid"] == grid
