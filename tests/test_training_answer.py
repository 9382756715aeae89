"""Tests of the answer objective (``arr_coc.training.answer``) on tiny random-weight Qwen-VL checkpoints (CPU).

The toy task: a 8 x 8-token image whose left half is blank paper and right half seeded noise, the question "What
is on the left?", budget half the tokens. The answer is picked from a fixed list of words as the one whose loss the
region matters most for (the largest loss gap between the initial keep set and keeping exactly the left half), so
that the language-model loss of the answer depends on which region is kept.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from PIL import Image  # noqa: E402

from arr_coc.config import RelevanceConfig  # noqa: E402
from arr_coc.families import families  # noqa: E402
from arr_coc.integrations.gating import encode_images, gated_forward  # noqa: E402
from arr_coc.processing import load_processor  # noqa: E402
from arr_coc.realizing import Realizer  # noqa: E402
from arr_coc.testing import FAMILIES as FAMILY_NAMES  # noqa: E402
from arr_coc.training.answer import (  # noqa: E402
    AnswerSample,
    AnswerTrainer,
    answer_loss,
    build_training_inputs,
    evidence_cells,
    keep_gate,
    load_relevance,
    load_samples,
    main,
    save_relevance,
    train_answer,
    trainable_parameters,
)

FAMILIES = list(FAMILY_NAMES)  # every family with a tiny checkpoint (arr_coc.testing)
CLASSES = {f.name: f.classes[0].hf_class for f in families()}
CELL = {f.name: f.cell for f in families()}
WORDS = ("yes", "no", "red", "blue", "cat", "dog", "seven", "left", "right", "paper", "white", "noise")
QUERY = "What is on the left?"


def load(folder_of, family: str):
    """A fresh (model, processor) of the family's tiny checkpoint: each test may freeze / inspect its own copy."""
    folder = folder_of(family)
    model = getattr(transformers, CLASSES[family]).from_pretrained(folder).eval()
    return model, load_processor(str(folder))


@functools.cache
def toy_image(family: str) -> Image.Image:
    side = 8 * CELL[family]
    pixels = np.full((side, side, 3), 255, np.uint8)
    pixels[:, side // 2 :] = np.random.default_rng(0).integers(0, 256, (side, side // 2, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


def sample(family: str, answer: str = "cat") -> AnswerSample:
    side = 8 * CELL[family]
    return AnswerSample(answer, toy_image(family), QUERY, answer, [(0.0, 0.0, side / 2, float(side))])


def vlm_state(model) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


# ----- the gate ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mask", ["attention", "embedding"])
@pytest.mark.parametrize("family", FAMILIES)
def test_all_ones_gate_is_the_unmodified_model_exactly(family, mask, tiny_checkpoint_folder):
    """Gate 1: the key bias is log(f + (1 - f)) == log(1.0) == 0 exactly (f = 2**-24, 1 - f exact in float32), or
    x * 1.0 == x; the pass uses the model's own positions: logits bit for bit."""
    model, processor = load(tiny_checkpoint_folder, family)
    inputs, _ = build_training_inputs(processor, toy_image(family), QUERY, "cat")
    with torch.no_grad():
        reference = model(**inputs).logits
        encoded = encode_images(model, inputs)
        n = encoded.features[0].shape[0]
        gated = gated_forward(model, inputs, [torch.ones(n)], encoded, mask=mask).logits
        blanked = gated_forward(model, inputs, [torch.zeros(n)], encoded, mask=mask).logits
    assert torch.equal(gated, reference)
    assert not torch.equal(blanked, reference)  # the gate does reach the language model


@pytest.mark.parametrize("family", FAMILIES)
def test_hard_attention_gate_is_the_pruned_model(family, tiny_checkpoint_folder):
    """A 0/1 attention gate vs ``compress`` keeping the same tokens: every token but the dropped ones sees the same
    keys, values and positions, except that a dropped key keeps f = 2**-24 of its weight. With 32 dropped keys and
    attention logits of this model well under 5 in size, their share of any row is below 32 * 6e-8 * e**10 ~ 0.05%,
    so logits (of size ~1) agree to 1e-3; float32 rounding of the different sums is far below that."""
    from arr_coc.integrations import compress

    model, processor = load(tiny_checkpoint_folder, family)
    inputs, _ = build_training_inputs(processor, toy_image(family), QUERY, "cat")
    encoded = encode_images(model, inputs)
    n = encoded.features[0].shape[0]
    scores = torch.linspace(0, 1, n).flip(0)  # keep the first half in raster order
    gate = torch.zeros(n)
    gate[: n // 2] = 1
    cm = compress(model, budget=n // 2, scorer=lambda ctx: scores, processor=processor)
    with torch.no_grad():
        pruned = cm(**inputs).logits[0, -1]
        gated = gated_forward(model, inputs, [gate], encoded).logits[0, -1]
        full = model(**inputs).logits[0, -1]
    assert cm.last_allocation[0][0].keep.tolist() == list(range(n // 2))
    assert torch.allclose(gated, pruned, atol=1e-3, rtol=0)
    assert (gated - full).abs().max() > 100 * (gated - pruned).abs().max()  # the check is not vacuous


@pytest.mark.parametrize("family", FAMILIES)
def test_gate_gradient_matches_finite_differences(family, tiny_checkpoint_folder):
    """Autograd's d loss / d g along v = sign(grad) equals the central difference, at the interior gate 0.5.

    The model runs in float64 but its RMSNorm computes in float32, so the loss (~12) carries rounding of ~1e-6; with
    h = 0.05 that is ~2e-5 of error in the difference quotient, while the directional derivative here is 0.03-0.07
    and the truncation error (h**2 / 6 x a third derivative of the same order) ~3e-5: they agree to 1% (0.2% seen).
    The embedding gate's derivative near 0 would be off by orders of magnitude (see arr_coc.training.answer)."""
    model, processor = load(tiny_checkpoint_folder, family)
    model = model.double().requires_grad_(False)
    inputs, answer_ids = build_training_inputs(processor, toy_image(family), QUERY, "cat")
    inputs["pixel_values"] = inputs["pixel_values"].double()
    encoded = encode_images(model, inputs)
    n = encoded.features[0].shape[0]
    keep = answer_ids.numel() + 1

    def loss(g: torch.Tensor) -> torch.Tensor:
        return answer_loss(gated_forward(model, inputs, [g], encoded, logits_to_keep=keep).logits[0], answer_ids)

    g = torch.full((n,), 0.5, dtype=torch.float64, requires_grad=True)
    loss(g).backward()
    v = g.grad.sign()  # the steepest direction in the 1-norm: the derivative along it is ||grad||_1, no cancellation
    h = 0.05
    with torch.no_grad():
        numeric = (float(loss(g.detach() + h * v)) - float(loss(g.detach() - h * v))) / (2 * h)
    analytic = float(g.grad @ v)
    assert abs(numeric) > 1e-2  # far above the error bounds: the comparison means something
    assert analytic == pytest.approx(numeric, rel=0.01)


def test_qwen3_gate_scales_deepstack_with_the_same_gate(tiny_checkpoint_folder):
    model, processor = load(tiny_checkpoint_folder, "qwen3-vl")
    inputs, _ = build_training_inputs(processor, toy_image("qwen3-vl"), QUERY, "cat")
    encoded = encode_images(model, inputs)
    n = encoded.features[0].shape[0]
    gate = torch.linspace(0, 1, n)
    from arr_coc.integrations.compress import find_adapter

    out = find_adapter(model).gated_output(encoded, [gate])  # the embedding mask's DeepStack gating
    assert len(out.deepstack_features) == len(encoded.deepstack) == 2
    for level, original in zip(out.deepstack_features, encoded.deepstack, strict=True):
        assert torch.equal(level[0], original[0] * gate[:, None])
    assert torch.equal(out.pooler_output[0], encoded.features[0] * gate[:, None])


def test_keep_gate_forward_is_the_hard_top_k_and_backward_is_the_soft_gate():
    scores = torch.tensor([0.1, 0.9, 0.5, 0.9, 0.3], requires_grad=True)
    gate = keep_gate(scores, 2, "st", temperature=0.1)
    assert gate.tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]  # arr_coc.attending.select: indices 1 and 3
    gate.sum().backward()
    tau = (0.9 + 0.5) / 2
    soft = torch.sigmoid((scores.detach() - tau) / 0.1)
    assert torch.allclose(scores.grad, soft * (1 - soft) / 0.1)
    ones = keep_gate(torch.rand(7, requires_grad=True), 7)
    assert torch.equal(ones, torch.ones(7)) and ones.grad_fn is None  # full budget: nothing dropped
    soft_gate = keep_gate(scores, 2, "soft", temperature=0.1)
    assert torch.allclose(soft_gate, torch.sigmoid((scores - tau) / 0.1))
    with pytest.raises(ValueError, match="gate must be"):
        keep_gate(scores, 2, "hard")


@pytest.mark.parametrize("family", FAMILIES)
def test_full_budget_loss_is_the_unmodified_models_answer_loss(family, tiny_checkpoint_folder):
    model, processor = load(tiny_checkpoint_folder, family)
    trainer = AnswerTrainer(model, processor, Realizer(), budget=1.0)
    loss, parts = trainer.loss(sample(family))
    assert parts["kept"] == parts["tokens"] == 64
    inputs, answer_ids = build_training_inputs(processor, toy_image(family), QUERY, "cat")
    with torch.no_grad():
        logits = model(**inputs).logits[0, -(answer_ids.numel() + 1) :]
    assert float(loss) == float(answer_loss(logits, answer_ids))


# ----- gradients reach the relevance model; the VLM never changes ---------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_gradients_reach_the_relevance_parameters_and_not_the_vlm(family, tiny_checkpoint_folder):
    model, processor = load(tiny_checkpoint_folder, family)
    before = vlm_state(model)
    realizer = Realizer()
    trainer = AnswerTrainer(model, processor, realizer, budget=0.5, evidence_weight=0.0)
    loss, parts = trainer.loss(sample(family))
    loss.backward()
    grads = {name: p.grad for name, p in realizer.named_parameters()}
    # every scorer that the toy query reaches: information / perspectival channel weights, the participatory term
    # weights and the spatial cue ("left"), the balancer; only the colour cue is unused by this query
    for name in ("information.weight", "perspectival.weight", "participatory.term_weight",
                 "participatory.where_scale", "balancer.linear.weight"):  # fmt: skip
        assert grads[name] is not None and bool(grads[name].abs().sum() > 0), name
    assert grads["participatory.colour_scale"] is None or float(grads["participatory.colour_scale"]) == 0.0
    assert all(not p.requires_grad and p.grad is None for p in model.parameters())
    train_answer(model, processor, realizer, [sample(family)], steps=2, lr=0.1, budget=0.5, cache_encoded=1)
    assert all(torch.equal(before[name], p) for name, p in model.named_parameters())  # bit for bit
    assert all(not p.requires_grad and p.grad is None for p in model.parameters())


@pytest.mark.parametrize("family", FAMILIES)
def test_a_few_steps_on_the_toy_task_lower_the_loss(family, tiny_checkpoint_folder):
    """Soft gate (a smooth objective), Adam at lr 0.01: Adam's first step moves each parameter by lr * sign(grad),
    so to first order the loss falls by lr * ||grad||_1; the curvature term is O(lr**2). After three steps the loss
    must be below the start by at least half of that first-order prediction (and the steps must go downhill)."""
    model, processor = load(tiny_checkpoint_folder, family)
    lr = 0.01
    trainer = AnswerTrainer(model, processor, Realizer(), budget=0.5, gate="soft", cache_encoded=1)
    toy = pick_toy_answer(trainer, family)
    loss, _ = trainer.loss(toy)
    loss.backward()
    predicted = lr * sum(float(p.grad.abs().sum()) for p in trainer_params(trainer))
    assert predicted > 1e-4  # the answer's loss depends on the gate: far above float32 rounding of a loss of ~12
    fresh = AnswerTrainer(model, processor, Realizer(), budget=0.5, gate="soft", cache_encoded=1)
    result = fresh.fit([toy], steps=4, lr=lr)
    losses = [s.loss for s in result.steps]  # losses[i] is measured before step i's update
    assert losses[0] == pytest.approx(float(loss.detach()), abs=1e-6)
    assert losses[-1] <= losses[0] - 0.5 * predicted, (losses, predicted)


def trainer_params(trainer: AnswerTrainer) -> list[torch.nn.Parameter]:
    return [p for p in trainable_parameters(trainer.realizer) if p.grad is not None]


def pick_toy_answer(trainer: AnswerTrainer, family: str) -> AnswerSample:
    """The word whose answer loss falls most from the initial keep set to keeping exactly the left half."""
    best = None
    for word in WORDS:
        toy = sample(family, word)
        inputs, answer_ids, prepared = trainer.inputs(toy)
        rows, cols = prepared.grid
        left = torch.zeros(rows, cols)
        left[:, : cols // 2] = 1
        with torch.no_grad():
            start, _ = trainer.loss(toy)
            logits = gated_forward(trainer.model, inputs, [left.flatten()], logits_to_keep=answer_ids.numel() + 1)
            ideal = float(answer_loss(logits.logits[0], answer_ids))
        if best is None or float(start) - ideal > best[0]:
            best = (float(start) - ideal, toy)
    return best[1]


# ----- evidence objective, data, checkpoint, bad input ---------------------------------------------------------------
def test_evidence_objective_adds_to_the_loss_and_moves_scores_to_the_evidence(tiny_checkpoint_folder):
    model, processor = load(tiny_checkpoint_folder, "qwen2.5-vl")
    toy = sample("qwen2.5-vl")
    realizer = Realizer()
    start = AnswerTrainer(model, processor, Realizer(), budget=0.5, evidence_weight=1.0).loss(toy)[1]
    assert start["evidence"] is not None and start["evidence"] > 0
    result = train_answer(
        model, processor, realizer, [toy], steps=15, lr=0.1, budget=0.5, evidence_weight=5.0, cache_encoded=1
    )
    # the evidence loss is the -log of the score mass on the left half: 15 Adam steps on it raise the kept share
    assert result.steps[-1].evidence < result.steps[0].evidence
    assert result.steps[-1].recall > result.steps[0].recall


def test_evidence_cells_follow_the_benchmark_rule():
    # a 100 x 100 image on a 4 x 4 grid (25 px cells): a box over the left half holds columns 0 and 1
    cells = evidence_cells([(0, 0, 50, 100)], 100, 100, 4, 4)
    assert cells.tolist() == [0, 1, 4, 5, 8, 9, 12, 13]
    # a tiny box still has its cell of largest overlap; a box outside the image has none
    assert evidence_cells([(60, 60, 61, 61)], 100, 100, 4, 4).tolist() == [10]
    assert evidence_cells([(200, 200, 210, 210)], 100, 100, 4, 4).size == 0


def test_checkpoint_round_trip_is_bit_identical(tmp_path):
    realizer = Realizer()
    with torch.no_grad():
        for i, p in enumerate(realizer.parameters()):
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(i)).abs() * 0.1)  # weights stay >= 0
    folder = save_relevance(realizer, tmp_path / "ckpt", {"args": {"steps": 1}})
    assert {f.name for f in folder.iterdir()} >= {"model.safetensors", "config.json", "training.json", "README.md"}
    loaded = load_relevance(folder)
    for (name, a), (_, b) in zip(realizer.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    # the config alone rebuilds the same parameters (trained numbers written back into RelevanceConfig)
    rebuilt = Realizer(RelevanceConfig.from_json((folder / "config.json").read_text()))
    for (name, a), (_, b) in zip(realizer.state_dict().items(), rebuilt.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    texture = torch.rand(1, 13, 4, 5)
    cues = [realizer.cues("What is on the left?")]
    with torch.no_grad():
        assert torch.equal(realizer(texture, cues)[0], loaded(texture, cues)[0])


def test_bad_input_gets_clear_errors(tiny_checkpoint_folder, tmp_path):
    model, processor = load(tiny_checkpoint_folder, "qwen2.5-vl")
    frozen = Realizer().requires_grad_(False)
    with pytest.raises(ValueError, match="no gradient path"):
        AnswerTrainer(model, processor, frozen)
    with pytest.raises(ValueError, match="does not support"):
        AnswerTrainer(torch.nn.Linear(2, 2), processor, Realizer())
    with pytest.raises(ValueError, match="no samples"):
        train_answer(model, processor, Realizer(), [], steps=1)
    with pytest.raises(ValueError, match="tokenizes to nothing"):
        build_training_inputs(processor, toy_image("qwen2.5-vl"), QUERY, "")
    # one bad image and one empty answer are skipped with a line each; training goes on with the good sample
    lines: list[str] = []
    broken = AnswerSample("broken", tmp_path / "missing.png", QUERY, "cat")
    result = train_answer(
        model, processor, Realizer(), [broken, sample("qwen2.5-vl")], steps=2, lr=0.01, log=lines.append
    )
    assert len(result.steps) == 2 and all(s.id == "cat" for s in result.steps)
    assert [sid for sid, _ in result.skipped] == ["broken"] and "broken" in lines[0]


def test_load_samples_skips_bad_lines_with_a_reason(tmp_path):
    toy_image("qwen2.5-vl").save(tmp_path / "toy.png")
    rows = [
        {"id": "ok", "image": "toy.png", "query": QUERY, "answer": "cat", "boxes": [[0, 0, 112, 224]]},
        {"id": "no-answer", "image": "toy.png", "query": QUERY, "answer": "  "},
        {"id": "bad-box", "image": "toy.png", "query": QUERY, "answer": "x", "boxes": [[5, 5, 1, 1]]},
        {"id": "ok", "image": "toy.png", "query": "Again?", "answer": "dog"},
        {"image": "toy.png", "query": "No id?", "answer": "cow"},
    ]
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join([*map(json.dumps, rows), "{not json"]) + "\n")
    lines: list[str] = []
    samples = load_samples(data, log=lines.append)
    assert [s.id for s in samples] == ["ok", "data.jsonl:4", "data.jsonl:5"]  # ids are unique: a run caches per id
    assert samples[0].image == tmp_path / "toy.png" and samples[0].boxes == [(0.0, 0.0, 112.0, 224.0)]
    assert len(lines) == 4 and "answer" in lines[0] and "empty" in lines[1] and "seen before" in lines[2]
    assert "data.jsonl:6" in lines[3]  # the line that is not JSON


def test_main_trains_and_writes_a_checkpoint(tiny_checkpoint_folder, tmp_path, capsys):
    toy_image("qwen2.5-vl").save(tmp_path / "toy.png")
    row = {"id": "t", "image": "toy.png", "query": QUERY, "answer": "cat", "boxes": [[0, 0, 112, 224]]}
    (tmp_path / "data.jsonl").write_text(json.dumps(row) + "\n")
    out = tmp_path / "run"
    argv = ["--model", str(tiny_checkpoint_folder("qwen2.5-vl")), "--data", str(tmp_path / "data.jsonl")]
    argv += ["--out", str(out), "--steps", "3", "--budget", "0.5", "--evidence-weight", "1", "--device", "cpu"]
    assert main(argv + ["--cache-encoded", "1"]) == 0
    printed = capsys.readouterr().out
    assert "wrote" in printed and "step     1" in printed
    card = json.loads((out / "training.json").read_text())
    assert len(card["steps"]) == 3 and card["family"] == "qwen2.5-vl"
    load_relevance(out)
    (tmp_path / "empty.jsonl").write_text("\n")
    assert main(["--model", "x", "--data", str(tmp_path / "empty.jsonl"), "--out", str(out)]) == 2
    assert "no usable sample" in capsys.readouterr().err


def test_arr_coc_train_dispatches_the_answer_objective(tiny_checkpoint_folder, tmp_path, capsys):
    """``arr-coc train --objective answer ...`` reaches this objective with its flags (``--objective`` included)."""
    from arr_coc.cli import main as cli_main

    toy_image("qwen2.5-vl").save(tmp_path / "toy.png")
    row = {"id": "t", "image": "toy.png", "query": QUERY, "answer": "cat"}
    (tmp_path / "data.jsonl").write_text(json.dumps(row) + "\n")
    out = tmp_path / "run"
    argv = ["train", "--objective", "answer", "--model", str(tiny_checkpoint_folder("qwen2.5-vl"))]
    argv += ["--data", str(tmp_path / "data.jsonl"), "--out", str(out), "--steps", "1", "--budget", "0.5"]
    assert cli_main(argv + ["--device", "cpu"]) == 0
    assert len(json.loads((out / "training.json").read_text())["steps"]) == 1
