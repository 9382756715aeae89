"""The answer objective: train the relevance model on the language-model loss of the reference answer, VLM frozen.

    arr-coc train --objective answer --model ID_OR_FOLDER --data questions.jsonl --out runs/answer \\
        [--steps 200] [--lr 0.01] [--budget 0.25] [--evidence-weight 0.0] [--seed 0] [--device cuda] [--dtype bfloat16]

What one step does, for one (image, question, answer) sample:

    image ──► processor ──► vision tower + merger (frozen, no gradients) ──► visual tokens (N, D)
    pixels ──► texture (13 channels) ─┐
    query ──► cues, embeddings ───────┼─► Realizer.forward (trainable) ─► scores (N,) ─► keep-gate g (N,)
    (text mode) OCR prior ────────────┘                                                        │
    prompt + answer tokens ──► language model (frozen), every visual key's attention scaled by its gate ──► loss

loss = cross-entropy of the answer tokens (+ ``evidence_weight`` x the evidence loss on the scores when the sample
has answer boxes); its gradient reaches only the Realizer's parameters (every ``nn.Parameter`` of it that requires
grad: the scorers' channel weights, the participatory term weights and cue scales, the balancer, and any scorer a
later version adds), which Adam updates. The VLM's parameters are frozen (``requires_grad_(False)``) and never in
the optimiser.

Why this gate. The keep-mask sits between the vision tower and the language model and nothing leaves the sequence,
so every visual token keeps its original M-RoPE (t, h, w) position, as ``compress``'s kept tokens do. Where it acts
(``arr_coc.integrations.gating``):

* ``mask="attention"`` (default): in every attention layer, visual token i's key gets the logit bias
  log(f + (1 - f) g_i), f = 2**-24: its attention weight in every row is multiplied by about g_i. At g = 1 the
  bias is exactly 0 (the unmodified model, bit for bit in the tests); at g = 0 the token keeps 6e-8 of its weight,
  so the pass is the pruned model's up to that share (every other token sees the same keys, values and positions
  as under ``compress``) and the gradient of a dropped token still exists. Needs ``sdpa`` or ``eager`` attention.
* ``mask="embedding"``: the token's embedding (and, for Qwen3-VL, every DeepStack feature) is multiplied by g_i.
  Exact at g = 1 too, but NOT a relaxation of pruning: the decoder's pre-norm (RMSNorm) is scale-invariant, so the
  other tokens see the same layer-0 keys and values for any g > 0 and only g = 0 exactly blanks the token; the loss
  is nearly a step function of g and its gradient at g = 0 is of order 1 / sqrt(eps). Measured on the tiny Qwen3-VL
  (float64): the first-order prediction of the loss change from keeping the right half to keeping the left half was
  +30.8 with this gate and -0.083 with the attention gate; the true change was -0.030. Kept for comparison.

The gate values come from a straight-through top-K (default, ``gate="st"``): forward, g is the hard top-K mask of
``compress`` (K from the budget, ties to the lower index, as ``arr_coc.attending.select``), so the loss trained on is
that of the tokens inference keeps; backward, the gradient is that of the soft gate sigmoid((s - tau) / temperature),
tau midway between the K-th and (K+1)-th scores. ``gate="soft"`` (forward = that sigmoid) gives a smooth objective
but trains on half-kept tokens inference never sees.

The evidence objective (``evidence_weight`` > 0, samples with ``boxes``): the answer boxes are mapped to their
evidence cells on the token grid (the rule of ``benchmarks/evidence_recall.py``: a cell counts when the box covers
>= 20% of the cell or the cell >= 20% of the box, plus the cell of largest overlap) and the loss is
-log(sum over evidence cells of softmax(scores / temperature)): a listwise loss, the log of the score mass the
evidence gets.

Data: JSONL, one ``{"id", "image", "query", "answer"[, "boxes"]}`` a line; ``image`` a path relative to the file
(or absolute), ``boxes`` ``[[x0, y0, x1, y1], ...]`` in the image's pixels (the realdocs-dev schema, whose other
keys are ignored). A line that cannot be used (bad JSON, missing key, an image that fails to load, an answer that
tokenizes to nothing) is skipped with one line saying why; the run goes on.

Output (``--out FOLDER``): ``model.safetensors`` (the Realizer's ``state_dict``), ``config.json`` (the
``RelevanceConfig`` with the trained numbers written back: ``Realizer(RelevanceConfig.from_json(...))`` rebuilds the
same scorers), ``training.json`` (arguments, losses per step, step time, peak memory) and ``README.md`` (a card).
:func:`load_relevance` reads the folder back.

Example (a tiny random-weight model, CPU, about a minute):
    >>> from arr_coc.testing import tiny_checkpoint  # doctest: +SKIP
    >>> folder = tiny_checkpoint("qwen2.5-vl", "/tmp/tiny")
    >>> main(["--model", str(folder), "--data", "examples/answer.jsonl", "--steps", "5", "--out", "/tmp/run"])
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from ..attending import Budget, parse_budget, select
from ..config import RelevanceConfig
from ..deciding import ItemDecision
from ..realizing import Realizer
from .relevance_checkpoint import config_from_realizer, load_relevance, save_relevance  # noqa: F401
from .samples import (  # noqa: F401  (the data, importable from here)
    BOX_SHARE,
    CELL_SHARE,
    AnswerSample,
    Log,
    _stderr,
    evidence_cells,
    load_samples,
    parse_sample,
)

GATES = ("st", "soft")
POSITIVE = ("where_scale", "colour_scale")  # parameters that divide: kept >= MIN_SCALE after each step
# weights of weighted means, kept >= 0 after each step (a checkpoint's config refuses negative ones)
NON_NEGATIVE = ("information.weight", "perspectival.weight", "participatory.term_weight")
MIN_SCALE = 1e-3


# ----- the pieces of one step (small, pure where possible) -------------------------------------------------------
def trainable_parameters(realizer: torch.nn.Module) -> list[torch.nn.Parameter]:
    """Every parameter of the relevance model that training may change (``requires_grad``), in module order."""
    return [p for p in realizer.parameters() if p.requires_grad]


def keep_gate(scores: torch.Tensor, k: int, gate: str = "st", temperature: float = 0.1) -> torch.Tensor:
    """The differentiable keep-mask of ``k`` tokens out of N from their scores.

    Args:
        scores (torch.Tensor of shape (N,)): relevance (differentiable).
        k: tokens kept, in [1, N]; ``k == N`` gives exactly 1 everywhere (nothing dropped, no gradient).
        gate: ``"st"``: forward the hard top-K mask (``arr_coc.attending.select``: ties to the lower index),
            backward the soft gate's gradient; ``"soft"``: forward and backward the soft gate.
        temperature: width of the soft gate sigmoid((s - tau) / temperature), tau midway between the K-th and
            (K+1)-th largest scores (held constant).

    Returns:
        torch.Tensor of shape (N,), float32: 0/1 (``"st"``) or in (0, 1) (``"soft"``).
    """
    if gate not in GATES:
        raise ValueError(f"gate must be one of {', '.join(GATES)}, got {gate!r}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    s = scores.float().flatten()  # (N,)
    n = s.numel()
    k = max(1, min(int(k), n))
    if k == n:
        return torch.ones_like(s)
    ordered = torch.sort(s.detach(), descending=True).values
    tau = (ordered[k - 1] + ordered[k]) / 2
    soft = torch.sigmoid((s - tau) / temperature)  # (N,)
    if gate == "soft":
        return soft
    hard = torch.zeros_like(s)
    hard[select(s.detach(), k)] = 1.0
    return hard + (soft - soft.detach())  # forward: exactly hard; backward: d soft


def evidence_loss(scores: torch.Tensor, cells: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    """Listwise evidence loss: -log of the softmax(scores / temperature) mass on the evidence cells.

    Args:
        scores (torch.Tensor of shape (N,)): relevance.
        cells (torch.LongTensor of shape (E,)): evidence cell indices, E >= 1.
    """
    logp = torch.log_softmax(scores.float().flatten() / temperature, dim=0)  # (N,)
    return -torch.logsumexp(logp[cells.to(logp.device)], dim=0)


def answer_loss(logits: torch.Tensor, answer_ids: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the answer tokens.

    Args:
        logits (torch.Tensor of shape (A + 1, V)): the last A + 1 positions' logits (the last prompt token's
            predicts the first answer token; the last position predicts nothing).
        answer_ids (torch.LongTensor of shape (A,)): the answer's tokens (with the turn's end token).
    """
    wide = torch.promote_types(logits.dtype, torch.float32)  # bf16 logits in float32; float64 stays float64
    return F.cross_entropy(logits[:-1].to(wide), answer_ids.to(logits.device))


def build_training_inputs(processor: Any, image: Image.Image, query: str, answer: str, max_pixels: int | None = None):
    """The processor's inputs for a user turn (image, query) followed by the assistant's ``answer``.

    Returns:
        (inputs, answer_ids): ``inputs`` as the processor returns them with the answer's tokens and the end-of-turn
        token appended (``input_ids``, ``attention_mask``, ``mm_token_type_ids`` (1, L)); ``answer_ids`` (A,).

    Raises:
        ValueError: the answer tokenizes to nothing.
    """
    from ..asking import build_inputs

    tokenizer = getattr(processor, "tokenizer", processor)
    ids = tokenizer.encode(answer, add_special_tokens=False)
    if not ids:
        raise ValueError(f"the answer {answer!r} tokenizes to nothing")
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if isinstance(end, int) and end >= 0 and end != getattr(tokenizer, "unk_token_id", None):
        ids = [*ids, end]
    inputs = build_inputs(processor, image, query, max_pixels)
    answer_ids = torch.tensor([ids], dtype=inputs["input_ids"].dtype)  # (1, A)
    inputs["input_ids"] = torch.cat([inputs["input_ids"], answer_ids], 1)
    inputs["attention_mask"] = torch.cat([inputs["attention_mask"], torch.ones_like(answer_ids)], 1)
    if inputs.get("mm_token_type_ids") is not None:
        types = inputs["mm_token_type_ids"]
        inputs["mm_token_type_ids"] = torch.cat([types, torch.zeros(1, len(ids), dtype=types.dtype)], 1)
    return inputs, answer_ids[0]


@dataclass
class Prepared:
    """What a step needs of one sample that does not change during training (cached by :class:`AnswerTrainer`).

    Attributes:
        frames (torch.Tensor of shape (1, 3, H, W)): the model's own resized pixels in [0, 1] (what the realizer
            scores).
        prior (torch.Tensor of shape (1, rows, cols) or None): the OCR text prior (text mode), read once.
        cells (torch.LongTensor of shape (E,) or None): evidence cells of the answer boxes.
        grid: (rows, cols) of visual tokens.
    """

    frames: torch.Tensor
    prior: torch.Tensor | None
    cells: torch.Tensor | None
    grid: tuple[int, int]


@dataclass
class StepResult:
    """One step: the sample, the losses, the kept tokens and how long it took."""

    step: int
    id: str
    loss: float
    lm: float
    evidence: float | None
    kept: int
    tokens: int
    recall: float | None
    ms: float


@dataclass
class TrainResult:
    """What :func:`train_answer` did.

    Attributes:
        realizer: the trained relevance model (the object passed in, updated in place).
        steps: one :class:`StepResult` per step taken.
        skipped: ``(id, why)`` of the samples dropped (unreadable image, empty answer, ...).
        peak_memory: (bytes, what was measured).
    """

    realizer: Realizer
    steps: list[StepResult]
    skipped: list[tuple[str, str]]
    peak_memory: tuple[int, str] = (0, "")

    def mean(self, key: str, first: int | None = None, last: int | None = None) -> float:
        """Mean of a step field over the first or last ``n`` steps (all steps when neither is given)."""
        rows = self.steps[:first] if first else self.steps[-last:] if last else self.steps
        values = [getattr(r, key) for r in rows if getattr(r, key) is not None]
        return float(np.mean(values)) if values else math.nan


class AnswerTrainer:
    """The answer objective on one frozen Qwen-VL model: :meth:`loss` for one sample, :meth:`fit` for a run.

    Args:
        model: a Qwen2-VL / Qwen2.5-VL / Qwen3-VL ``...ForConditionalGeneration`` (frozen here: eval mode,
            ``requires_grad_(False)``).
        processor: its processor (``arr_coc.load_processor``).
        realizer: the relevance model to train (its trainable parameters: :func:`trainable_parameters`).
        budget: tokens kept per image: a count, a fraction in (0, 1] or ``"adaptive"`` (``arr_coc.attending``).
        evidence_weight: weight of the evidence loss (0: the answer loss alone).
        gate: ``"st"`` (straight-through top-K) or ``"soft"`` (see :func:`keep_gate`).
        temperature: the soft gate's and the evidence softmax's temperature, on the scores' [0, 1] scale.
        mode: ``"texture"`` or ``"text"`` (adds the OCR text prior, the ``[ocr]`` extra; computed once a sample).
        max_pixels: cap on the resized image's area (``None``: the processor's default).
        log: where skip messages go.
        cache_encoded: keep the processor inputs and the frozen vision tower's outputs of up to this many samples
            (on the model's device: about N x D values per image, x (1 + DeepStack levels) for Qwen3-VL), so a sample
            seen again skips the tower; 0 (default) recomputes them every step.
        mask: where the gate acts (``arr_coc.integrations.gating.gated_forward``): ``"attention"`` (default, each
            visual key's attention weight scaled by its gate) or ``"embedding"`` (its embedding scaled).

    Raises:
        ValueError: an unsupported model, a relevance model without trainable parameters, a bad budget / gate.
    """

    def __init__(
        self,
        model: Any,
        processor: Any,
        realizer: Realizer,
        budget: Budget = 0.25,
        evidence_weight: float = 0.0,
        gate: str = "st",
        temperature: float = 0.1,
        mode: str = "texture",
        max_pixels: int | None = None,
        log: Log = _stderr,
        cache_encoded: int = 0,
        mask: str = "attention",
    ) -> None:
        from ..families import supported_classes
        from ..integrations.compress import find_adapter

        try:
            self.adapter = find_adapter(model)
        except ValueError:
            raise ValueError(
                f"the answer objective does not support {type(model).__name__}; supported model classes: "
                f"{', '.join(supported_classes())}"
            ) from None
        if not isinstance(realizer, torch.nn.Module) or not trainable_parameters(realizer):
            raise ValueError(
                "no gradient path: the relevance model has no trainable parameters (a texture-only or rule-only "
                "scorer, or a realizer frozen with requires_grad_(False)); pass a Realizer whose parameters require "
                "grad, e.g. Realizer(RelevanceConfig())"
            )
        self.budget = parse_budget(budget)
        if gate not in GATES:
            raise ValueError(f"gate must be one of {', '.join(GATES)}, got {gate!r}")
        if not (isinstance(temperature, (int, float)) and temperature > 0):
            raise ValueError(f"temperature must be a number > 0, got {temperature!r}")
        if not (isinstance(evidence_weight, (int, float)) and evidence_weight >= 0 and math.isfinite(evidence_weight)):
            raise ValueError(f"evidence_weight must be a finite number >= 0, got {evidence_weight!r}")
        if mask not in ("attention", "embedding"):
            raise ValueError(f"mask must be 'attention' or 'embedding', got {mask!r}")
        self.mask = mask
        if mode not in ("texture", "text"):
            raise ValueError(f"mode must be 'texture' or 'text', got {mode!r}")
        self.model = model.eval().requires_grad_(False)
        self.processor = processor
        self.realizer = realizer
        self.evidence_weight = float(evidence_weight)
        self.gate = gate
        self.temperature = float(temperature)
        self.mode = mode
        self.max_pixels = max_pixels
        self.log = log
        self.device = next(model.parameters()).device
        self.realizer.to(self.device)
        self.patch, self.merge, self.tps = self.adapter.geometry(model)
        image_processor = getattr(processor, "image_processor", None)
        mean, std = getattr(image_processor, "image_mean", None), getattr(image_processor, "image_std", None)
        self.image_mean = _three(mean) if mean is not None else self.adapter.image_mean
        self.image_std = _three(std) if std is not None else self.adapter.image_std
        self._cache: dict[str, Prepared] = {}  # per sample id: texture, prior, evidence cells (small: 13 maps)
        if isinstance(cache_encoded, bool) or not isinstance(cache_encoded, int) or cache_encoded < 0:
            raise ValueError(f"cache_encoded must be an integer >= 0, got {cache_encoded!r}")
        self.cache_encoded = cache_encoded
        self._encoded: dict[str, tuple[Any, torch.Tensor, Prepared, Any]] = {}  # inputs + vision outputs, bounded

    # ----- one sample --------------------------------------------------------------------------------------------
    def inputs(self, sample: AnswerSample) -> tuple[Any, torch.Tensor, Prepared]:
        """The model inputs (on the model's device), the answer's tokens (A,) and the sample's :class:`Prepared`.

        Raises:
            ValueError: the image cannot be loaded or the answer tokenizes to nothing.
        """
        from ..integrations.qwen_patches import frames_from_patches
        from ..io import load_image_with_size

        image, (width, height) = load_image_with_size(sample.image)
        inputs, answer_ids = build_training_inputs(self.processor, image, sample.query, sample.answer, self.max_pixels)
        inputs = inputs.to(self.device)
        prepared = self._cache.get(sample.id)
        if prepared is None:
            t, h, w = (int(v) for v in inputs["image_grid_thw"][0].tolist())
            if t != 1:
                raise ValueError(f"expected one frame per image, got a grid of {t} frames")
            rows, cols = h // self.merge, w // self.merge
            frames = frames_from_patches(
                inputs["pixel_values"], (t, h, w), self.patch, self.merge, self.tps, self.image_mean, self.image_std
            )  # (1, 3, H, W) in [0, 1]
            prior = None
            if self.mode == "text":  # the OCR text prior, read once per sample (Realizer.score's text path)
                with torch.no_grad():
                    prior = self.realizer.score(frames, (rows, cols), sample.query, "text").prior  # (1, rows, cols)
            cells = None
            if sample.boxes:
                found = evidence_cells(sample.boxes, width, height, rows, cols)
                cells = torch.from_numpy(found).to(self.device) if found.size else None
            prepared = Prepared(frames, prior, cells, (rows, cols))
            self._cache[sample.id] = prepared
        return inputs, answer_ids.to(self.device), prepared

    def decision(self, prepared: Prepared, token_feats: torch.Tensor, query: str) -> ItemDecision:
        """The Realizer's decision on one sample (:meth:`~arr_coc.realizing.Realizer.decide` with ``grad=True``):
        scores differentiable in its parameters, the budget resolved with its config, the kept tokens.

        Args:
            prepared: the sample's frames / prior.
            token_feats (torch.Tensor of shape (N, D)): the merged visual tokens (constants).
            query: the question.
        """
        tokenizer = getattr(self.processor, "tokenizer", self.processor)
        q_ids = tokenizer.encode(query, add_special_tokens=False)
        embed = self.model.get_input_embeddings()
        with torch.no_grad():
            q_embeds = embed(torch.tensor(q_ids, dtype=torch.long, device=self.device)).float() if q_ids else None
        feats = token_feats.detach().float()  # (N, D)
        decision = self.realizer.decide(
            [prepared.frames], [prepared.grid], [query], self.budget, self.mode, token_feats=[feats],
            query_embeds=[q_embeds], priors=[prepared.prior], grad=True,
        )  # fmt: skip
        return decision[0]

    def scores(self, prepared: Prepared, token_feats: torch.Tensor, query: str) -> torch.Tensor:
        """The Realizer's relevance of every visual token (N,), float32, differentiable in its parameters (the
        scores of :meth:`decision`)."""
        return self.decision(prepared, token_feats, query).scores.flatten()

    def loss(self, sample: AnswerSample) -> tuple[torch.Tensor, dict[str, Any]]:
        """The objective of one sample and what it is made of.

        Returns:
            (loss, parts): the scalar loss (differentiable in the Realizer's parameters) and ``{"lm", "evidence",
            "kept", "tokens", "recall", "gate"}`` (floats / ints; ``evidence`` and ``recall`` None without boxes).
        """
        from ..integrations.gating import encode_images, gated_forward

        hit = self._encoded.get(sample.id)
        if hit is not None:
            inputs, answer_ids, prepared, encoded = hit
        else:
            inputs, answer_ids, prepared = self.inputs(sample)
            encoded = encode_images(self.model, inputs, self.adapter)  # the frozen tower: constant per sample
            if len(self._encoded) < self.cache_encoded:
                self._encoded[sample.id] = (inputs, answer_ids, prepared, encoded)
        feats = encoded.features[0]  # (N, D)
        decision = self.decision(prepared, feats, sample.query)
        scores = decision.scores.flatten()  # (N,) with gradients
        n = scores.numel()
        k = decision.choice.requested  # the budget resolved with the realizer's config
        gate = keep_gate(scores, k, self.gate, self.temperature)  # (N,)
        out = gated_forward(self.model, inputs, [gate], encoded, self.adapter, answer_ids.numel() + 1, self.mask)
        lm = answer_loss(out.logits[0], answer_ids)
        loss, ev, recall = lm, None, None
        if prepared.cells is not None:
            kept = decision.keep
            recall = float(torch.isin(prepared.cells, kept).float().mean())
            if self.evidence_weight > 0:
                ev_loss = evidence_loss(scores, prepared.cells, self.temperature)
                loss = lm + self.evidence_weight * ev_loss
                ev = float(ev_loss.detach())
        parts = {"lm": float(lm.detach()), "evidence": ev, "kept": k, "tokens": n, "recall": recall, "gate": gate}
        return loss, parts

    # ----- a run -------------------------------------------------------------------------------------------------
    def fit(
        self,
        samples: Sequence[AnswerSample],
        steps: int,
        lr: float = 0.01,
        seed: int = 0,
        on_step: Callable[[StepResult], None] | None = None,
    ) -> TrainResult:
        """``steps`` Adam steps, one sample each, in a seeded shuffled order (reshuffled every pass over the data).
        ``on_step`` is called with each step's :class:`StepResult` (e.g. to print progress).

        A sample that fails (unreadable image, empty answer) is dropped with one line through ``log`` and the
        step is taken on the next one.

        Raises:
            ValueError: no samples, or none usable; ``steps`` < 1; the loss does not reach any parameter.
        """
        from ..asking import peak_memory

        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
        if not (isinstance(lr, (int, float)) and lr > 0 and math.isfinite(lr)):
            raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
        pool = list(samples)
        if not pool:
            raise ValueError("no samples to train on (the data is empty or every line was skipped)")
        torch.manual_seed(seed)
        rng = random.Random(seed)
        params = trainable_parameters(self.realizer)
        optimiser = torch.optim.Adam(params, lr=lr)
        self.realizer.train()
        result = TrainResult(self.realizer, [], [])
        order: list[AnswerSample] = []
        bad: set[str] = set()
        step = 0
        while step < steps:
            if not order:
                order = [s for s in pool if s.id not in bad]
                if not order:
                    raise ValueError(f"no usable samples: all {len(pool)} were skipped (see the lines above)")
                rng.shuffle(order)
            sample = order.pop()
            t0 = time.perf_counter()
            optimiser.zero_grad(set_to_none=True)
            try:
                loss, parts = self.loss(sample)
            except (ValueError, OSError) as err:
                bad.add(sample.id)
                result.skipped.append((sample.id, str(err)))
                self.log(f"skipped {sample.id}: {err}")
                continue
            if not loss.requires_grad:
                self.log(f"step {step + 1}: {sample.id}: the budget keeps all {parts['tokens']} tokens, no gradient")
            elif not torch.isfinite(loss):
                self.log(f"step {step + 1}: {sample.id}: the loss is {float(loss)}; step not taken")
            else:
                loss.backward()
                if all(p.grad is None for p in params):
                    raise ValueError("no gradient path: the loss does not depend on any relevance parameter")
                optimiser.step()
                _project(self.realizer)
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
            step += 1
            result.steps.append(
                StepResult(
                    step, sample.id, float(loss.detach()), parts["lm"], parts["evidence"], parts["kept"],
                    parts["tokens"], parts["recall"], (time.perf_counter() - t0) * 1e3,
                )
            )  # fmt: skip
            if on_step is not None:
                on_step(result.steps[-1])
        self.realizer.eval()
        result.peak_memory = peak_memory(str(self.device))
        return result


def _three(value: Any) -> tuple[float, ...]:
    """A processor's ``image_mean`` / ``image_std`` (a number or 3 numbers) as 3 floats."""
    return (float(value),) * 3 if isinstance(value, (int, float)) else tuple(float(v) for v in value)


def _project(realizer: torch.nn.Module) -> None:
    """Keep the parameters that divide (cue scales) positive after a step."""
    with torch.no_grad():
        for name, p in realizer.named_parameters():
            if name.rsplit(".", 1)[-1] in POSITIVE:
                p.clamp_(min=MIN_SCALE)
            elif name in NON_NEGATIVE:
                p.clamp_(min=0.0)


def train_answer(
    model: Any,
    processor: Any,
    realizer: Realizer,
    samples: Sequence[AnswerSample],
    steps: int = 100,
    lr: float = 0.01,
    budget: Budget = 0.25,
    evidence_weight: float = 0.0,
    seed: int = 0,
    gate: str = "st",
    temperature: float = 0.1,
    mode: str = "texture",
    max_pixels: int | None = None,
    log: Log = _stderr,
    cache_encoded: int = 0,
    mask: str = "attention",
) -> TrainResult:
    """Train ``realizer`` on the answer objective (see the module docstring); the model stays frozen.

    Args: as :class:`AnswerTrainer` and :meth:`AnswerTrainer.fit`.

    Returns:
        :class:`TrainResult` (``realizer`` updated in place, in eval mode).
    """
    trainer = AnswerTrainer(
        model, processor, realizer, budget, evidence_weight, gate, temperature, mode, max_pixels, log, cache_encoded,
        mask,
    )  # fmt: skip
    return trainer.fit(samples, steps, lr, seed)


# ----- command line -------------------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="arr-coc train --objective answer",
        description="Train the relevance model on the language-model loss of reference answers, the VLM frozen.",
    )
    p.add_argument("--objective", choices=["answer"], default="answer", help="this parser: answer (arr-coc train)")
    p.add_argument("--model", required=True, help="Qwen2-VL / Qwen2.5-VL / Qwen3-VL folder or cached hub id")
    p.add_argument("--data", required=True, help='JSONL: {"id", "image", "query", "answer"[, "boxes"]} a line')
    p.add_argument("--out", required=True, help="checkpoint folder to write")
    p.add_argument("--steps", type=int, default=200, help="optimiser steps, one sample each (default 200)")
    p.add_argument("--lr", type=float, default=0.01, help="Adam learning rate (default 0.01)")
    p.add_argument("--budget", default="0.25", help="tokens kept per image: count, fraction or 'adaptive'")
    p.add_argument("--evidence-weight", type=float, default=0.0, help="weight of the evidence loss (needs boxes)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gate", choices=GATES, default="st", help="st: straight-through top-K (default); soft: sigmoid")
    p.add_argument("--mask", choices=("attention", "embedding"), default="attention", help="where the gate acts")
    p.add_argument("--temperature", type=float, default=0.1, help="soft gate / evidence softmax temperature")
    p.add_argument("--mode", choices=("auto", "text", "texture"), default="texture", help="texture (default) or text")
    p.add_argument("--relevance", default=None, help="start from this relevance checkpoint folder")
    p.add_argument("--max-pixels", type=int, default=None, help="cap on the resized image's area")
    p.add_argument("--cache-encoded", type=int, default=0, help="keep the vision outputs of N samples (memory)")
    p.add_argument("--limit", type=int, default=None, help="use the first N usable lines of --data")
    p.add_argument("--device", default=None, help="cuda, cpu, ... (default: cuda when available)")
    p.add_argument("--dtype", default="auto", help="auto (the checkpoint's), bfloat16, float16 or float32")
    p.add_argument("--log-every", type=int, default=10, help="print a line every N steps")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """``arr-coc train --objective answer ...``: returns 0 on success, 2 on bad input."""
    args = parse_args(argv)
    from ..asking import ModelNotFoundError, load_model, resolve_device, resolve_dtype
    from ..realizing import resolve_mode

    try:
        budget = parse_budget(args.budget)
        mode = resolve_mode(args.mode)
        samples = load_samples(args.data, limit=args.limit)
        if not samples:
            raise ValueError(f"--data {args.data} holds no usable sample")
        realizer = load_relevance(args.relevance) if args.relevance else Realizer(RelevanceConfig())
        device = resolve_device(args.device)
        processor, model = load_model(args.model, resolve_dtype(args.dtype), device)
    except (ValueError, ImportError, OSError, ModelNotFoundError) as err:  # ImportError: a missing extra (--mode text)
        print(f"arr-coc train: {err}", file=sys.stderr)
        return 2
    print(f"training on {len(samples)} samples, {args.steps} steps, budget {budget}, mode {mode}, device {device}")
    try:
        trainer = AnswerTrainer(
            model, processor, realizer, budget, args.evidence_weight, args.gate, args.temperature, mode,
            args.max_pixels, cache_encoded=args.cache_encoded, mask=args.mask,
        )  # fmt: skip
        every = max(1, args.log_every)

        def on_step(r: StepResult) -> None:
            if r.step % every == 0 or r.step == 1:
                ev = f" evidence {r.evidence:.4f}" if r.evidence is not None else ""
                rc = f" recall {r.recall:.2f}" if r.recall is not None else ""
                print(
                    f"step {r.step:5d}  loss {r.loss:.4f}  lm {r.lm:.4f}{ev}{rc}  "
                    f"kept {r.kept}/{r.tokens}  {r.ms:.0f} ms"
                )

        result = trainer.fit(samples, args.steps, args.lr, args.seed, on_step=on_step)
    except ValueError as err:
        print(f"arr-coc train: {err}", file=sys.stderr)
        return 2
    ms = [r.ms for r in result.steps]
    first, last = result.mean("loss", first=10), result.mean("loss", last=10)
    peak, what = result.peak_memory
    card = {
        "objective": "answer",
        "args": vars(args),
        "family": trainer.adapter.name,
        "device": str(trainer.device),
        "samples": len(samples) - len(result.skipped),
        "skipped": len(result.skipped),
        "skipped_ids": result.skipped,
        "loss_first": first,
        "loss_last": last,
        "step_ms_median": float(np.median(ms)),
        "peak_memory_mib": peak / 2**20,
        "peak_memory_what": what,
        "steps": [vars(r) for r in result.steps],
    }
    folder = save_relevance(result.realizer, args.out, card)
    print(f"loss: first 10 steps {first:.4f} -> last 10 steps {last:.4f}; median step {np.median(ms):.0f} ms; "
          f"peak memory {peak / 2**20:.0f} MiB ({what})")  # fmt: skip
    print(f"wrote {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
