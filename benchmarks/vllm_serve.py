"""vLLM with and without the arr_coc plugin, one engine, one run: throughput and TTFT under a fixed request rate.

For each setting (vLLM's own path: no options; the plugin at budgets 100/33/22/11%) the same requests (one
document image each, made unique per request so no cache is hit, and a question) arrive at a fixed rate; we record
each request's time to first token and completion, and report requests/s and output tokens/s over the setting's
makespan, TTFT p50/p95, prompt tokens per request, and the relevance step's share: the time of the plugin's decision
(``arr_coc.vllm.common.decide_all``, timed where it runs, in vLLM's input processing) over the requests' latency.

Models are random weights from configs written here (``load_format="dummy"``: no weights on disk, no hub):
``cpu`` (a CPU-sized Qwen2.5-VL: 8-block 512-wide vision tower, 6-layer 512-wide language model, document pages up
to 1,024 visual tokens) and, for a GPU, the published ``qwen2.5-vl-7b`` and ``qwen3-vl-8b`` configs.

Run (from the repository root, in the vLLM environment; ``bash .ci/vllm_env.sh`` makes one):

    .venv-vllm/bin/python benchmarks/vllm_serve.py --model cpu --requests 12 --rate 0.5 --out results/vllm_serve_cpu.md
    # the OCR-aware decision (mode text) against texture, at one budget:
    .venv-vllm/bin/python benchmarks/vllm_serve.py --model cpu --mode both --budgets 0.22 --requests 8 --rate 4
    # on a GPU (vLLM's CUDA build, ``pip install -e '.[vllm]' in the arr-coc-vis clone``):
    python benchmarks/vllm_serve.py --model qwen2.5-vl-7b --requests 200 --rate 4 --dtype bfloat16 --kv-cache-mib 0 \
        --no-enforce-eager --out results/vllm_serve_qwen2.5-vl-7b.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
BUDGETS = (1.0, 0.33, 0.22, 0.11)
QUESTIONS = (
    "What is the total amount due?",
    "Who is the vendor?",
    "What is the invoice date?",
    "Which month has the highest value?",
)


def model_config(name: str):
    """(family, transformers config, max_pixels) of a benchmark model: random weights, published shapes."""
    import transformers as tf

    from arr_coc.testing import TOKEN_IDS

    ids = dict(
        image_token_id=TOKEN_IDS["<|image_pad|>"],
        video_token_id=TOKEN_IDS["<|video_pad|>"],
        vision_start_token_id=TOKEN_IDS["<|vision_start|>"],
        vision_end_token_id=TOKEN_IDS["<|vision_end|>"],
    )
    common_text = dict(
        bos_token_id=TOKEN_IDS["<|endoftext|>"],
        eos_token_id=TOKEN_IDS["<|im_end|>"],
        pad_token_id=TOKEN_IDS["<|endoftext|>"],
        max_position_embeddings=32768,
    )
    if name == "cpu":  # a CPU-sized Qwen2.5-VL: ~1/3 of the 3B's widths, few layers
        text = dict(
            vocab_size=151936, hidden_size=512, intermediate_size=1408, num_hidden_layers=6, num_attention_heads=8,
            num_key_value_heads=2, tie_word_embeddings=True,
            rope_parameters={"rope_type": "default", "mrope_section": [8, 12, 12], "rope_theta": 1000000.0},
            **common_text,
        )  # fmt: skip
        vision = dict(
            depth=8, hidden_size=512, intermediate_size=1024, num_heads=8, out_hidden_size=512, patch_size=14,
            window_size=112, fullatt_block_indexes=[3, 7], tokens_per_second=2,
        )  # fmt: skip
        return "qwen2.5-vl", tf.Qwen2_5_VLConfig(text_config=text, vision_config=vision, **ids), 1024 * 28 * 28
    if name == "qwen2.5-vl-7b":  # Qwen/Qwen2.5-VL-7B-Instruct's config.json
        text = dict(
            vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
            num_key_value_heads=4, tie_word_embeddings=False, rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "mrope_section": [16, 24, 24], "rope_theta": 1000000.0},
            **common_text,
        )  # fmt: skip
        vision = dict(
            depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, out_hidden_size=3584, patch_size=14,
            window_size=112, fullatt_block_indexes=[7, 15, 23, 31], tokens_per_second=2,
        )  # fmt: skip
        return "qwen2.5-vl", tf.Qwen2_5_VLConfig(text_config=text, vision_config=vision, **ids), 1280 * 28 * 28
    if name == "qwen3-vl-8b":  # Qwen/Qwen3-VL-8B-Instruct's config.json
        text = dict(
            vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
            num_key_value_heads=8, head_dim=128, tie_word_embeddings=False, rms_norm_eps=1e-6,
            rope_parameters={
                "rope_type": "default", "mrope_section": [24, 20, 20], "mrope_interleaved": True,
                "rope_theta": 5000000.0,
            },
            **common_text,
        )  # fmt: skip
        vision = dict(
            depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16, out_hidden_size=4096, patch_size=16,
            num_position_embeddings=2304, deepstack_visual_indexes=[8, 16, 24],
        )  # fmt: skip
        return "qwen3-vl", tf.Qwen3VLConfig(text_config=text, vision_config=vision, **ids), 1280 * 32 * 32
    raise SystemExit(f"unknown --model {name!r}: cpu, qwen2.5-vl-7b or qwen3-vl-8b")


def write_folder(name: str, folder: pathlib.Path) -> tuple[str, pathlib.Path]:
    """A checkpoint folder without weights (config, tokenizer, chat template, image processor): vLLM's dummy load."""
    from arr_coc.testing import CHAT_TEMPLATES, tiny_image_processor, tiny_tokenizer

    family, config, max_pixels = model_config(name)
    folder.mkdir(parents=True, exist_ok=True)
    config.architectures = [
        {"qwen2.5-vl": "Qwen2_5_VLForConditionalGeneration", "qwen3-vl": "Qwen3VLForConditionalGeneration"}[family]
    ]
    config.save_pretrained(folder)
    tiny_tokenizer(family).save_pretrained(folder)
    (folder / "chat_template.jinja").write_text(CHAT_TEMPLATES[family], encoding="utf-8")
    tiny_image_processor(family, max_pixels).save_pretrained(folder)
    return family, folder


def images(n: int, per_setting: int) -> list:
    """``n`` distinct document images: request ``i`` of every setting shows the same page (the shipped examples and,
    when present, realdocs-dev pages), each copy with a faint unique mark so that no processor or encoder cache
    entry is shared between requests."""
    from PIL import Image

    paths = [EXAMPLES / f for f in ("invoice.jpg", "receipt.jpg", "chart.jpg")]
    dev = pathlib.Path("/work/data/realdocs-dev/images")
    if dev.is_dir():
        paths += sorted(dev.glob("*.png"))[:8] + sorted(dev.glob("*.jpg"))[:8]
    out = []
    for i in range(n):
        img = np.asarray(Image.open(paths[(i % per_setting) % len(paths)]).convert("RGB")).copy()
        img[0, : 1 + i % img.shape[1], 0] ^= 1  # the unique mark: one pixel row's lowest bit
        img[1, 0, :] = (i // 256) % 256, i % 256, 7
        out.append(Image.fromarray(img))
    return out


def prompt_text(folder: pathlib.Path, question: str) -> str:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    content = [{"type": "image"}, {"type": "text", "text": question}]
    return tok.apply_chat_template([{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True)


async def run_setting(engine, reqs: list[dict], options: dict | None, rate: float, max_tokens: int, tag: str):
    """Send ``reqs`` at ``rate`` requests/s (evenly spaced); per request: TTFT, latency, output and prompt tokens."""
    from vllm import SamplingParams

    params = SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)
    results = []

    async def one(i: int, req: dict, start_at: float) -> None:
        await asyncio.sleep(max(0.0, start_at - time.perf_counter()))
        body = dict(req)
        if options is not None:
            body["mm_processor_kwargs"] = {"arr_coc": options}
        sent = time.perf_counter()
        first = None
        final = None
        async for out in engine.generate(body, params, request_id=f"{tag}-{i}"):
            if first is None and out.outputs and out.outputs[0].token_ids:
                first = time.perf_counter()
            final = out
        done = time.perf_counter()
        results.append(
            dict(
                ttft=(first or done) - sent,
                latency=done - sent,
                out_tokens=len(final.outputs[0].token_ids),
                prompt_tokens=len(final.prompt_token_ids),
                sent=sent,
                done=done,
            )
        )

    t0 = time.perf_counter() + 0.05
    await asyncio.gather(*(one(i, r, t0 + i / rate) for i, r in enumerate(reqs)))
    return results


class DecisionTimer:
    """Times the plugin's decision where it runs: vLLM's input processing runs in this process (the frontend), so
    the benchmark wraps ``arr_coc.vllm.common.decide_all``, the one function the plugin's processor calls per request
    (one image per request here, so one call is one image's decision)."""

    def __init__(self) -> None:
        import arr_coc.vllm.common as common

        self.common = common
        self.decide = common.decide_all
        self.seconds: list[float] = []
        common.decide_all = self.timed  # the benchmark's own instrumentation of its own function

    def timed(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return self.decide(*args, **kwargs)
        finally:
            self.seconds.append(time.perf_counter() - t)

    def take(self) -> list[float]:
        out, self.seconds = self.seconds, []
        return out


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q))


async def main_async(args: argparse.Namespace) -> list[dict]:
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.v1.engine.async_llm import AsyncLLM

    family, folder = write_folder(args.model, pathlib.Path(args.workdir) / args.model)
    engine = AsyncLLM.from_engine_args(
        AsyncEngineArgs(
            model=str(folder),
            load_format="dummy",
            dtype=args.dtype,
            max_model_len=8192,
            max_num_seqs=args.max_num_seqs,
            limit_mm_per_prompt={"image": 1, "video": 0},
            enable_prefix_caching=False,
            mm_processor_cache_gb=0,
            enforce_eager=args.enforce_eager,
            seed=0,
            **({"kv_cache_memory_bytes": args.kv_cache_mib << 20} if args.kv_cache_mib else {}),
        )
    )
    timer = DecisionTimer()
    modes = ("texture", "text") if args.mode == "both" else (args.mode,)
    settings = [("vLLM (no plugin options)", None)] + [
        (f"arr_coc {b:.0%}" + ("" if modes == ("texture",) else f" {mode}"), {"budget": b, "mode": mode})
        for mode in modes
        for b in args.budgets
    ]
    n = args.requests
    pics = images(n * (len(settings) + 1), n)
    rows = []
    try:
        warm = [
            {"prompt": prompt_text(folder, QUESTIONS[0]), "multi_modal_data": {"image": pics[-1]}},
        ]
        await run_setting(engine, warm, None, 1.0, 2, "warm")
        for mode in modes:  # loads the decision's models (text: the OCR and text models) before any timing
            await run_setting(engine, warm, {"budget": 0.5, "mode": mode}, 1.0, 2, f"warm-{mode}")
        timer.take()
        for s, (label, options) in enumerate(settings):
            reqs = []
            for i in range(n):
                q = QUESTIONS[i % len(QUESTIONS)]
                reqs.append(
                    {"prompt": prompt_text(folder, q), "multi_modal_data": {"image": pics[s * n + i]}, "_question": q}
                )
            sent = [{k: v for k, v in r.items() if not k.startswith("_")} for r in reqs]
            res = await run_setting(engine, sent, options, args.rate, args.max_tokens, f"s{s}")
            span = max(r["done"] for r in res) - min(r["sent"] for r in res)
            lat = statistics.mean(r["latency"] for r in res)
            decisions = timer.take()  # one per image of this setting's requests
            rel = 1e3 * statistics.mean(decisions) if decisions else 0.0
            rows.append(
                dict(
                    setting=label,
                    prompt_tokens=statistics.mean(r["prompt_tokens"] for r in res),
                    req_s=n / span,
                    tok_s=sum(r["out_tokens"] for r in res) / span,
                    ttft_p50=pct([r["ttft"] for r in res], 50),
                    ttft_p95=pct([r["ttft"] for r in res], 95),
                    latency=lat,
                    relevance_ms=rel,
                    relevance_share=(sum(decisions) / sum(r["latency"] for r in res)) if decisions else 0.0,
                )
            )
            print(json.dumps(rows[-1]), flush=True)
    finally:
        engine.shutdown()
    return rows


def table(rows: list[dict], args: argparse.Namespace) -> str:
    base = rows[0]
    lines = [
        "| setting | prompt tokens | req/s | output tok/s | x vLLM | TTFT p50 (s) | TTFT p95 (s) "
        "| relevance (ms/img) | relevance share |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['setting']} | {r['prompt_tokens']:.0f} | {r['req_s']:.3f} | {r['tok_s']:.2f} | "
            f"{r['req_s'] / base['req_s']:.2f} | {r['ttft_p50']:.2f} | {r['ttft_p95']:.2f} | "
            f"{r['relevance_ms']:.0f} | {r['relevance_share']:.1%} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="cpu", help="cpu, qwen2.5-vl-7b or qwen3-vl-8b")
    p.add_argument("--requests", type=int, default=12, help="requests per setting")
    p.add_argument("--rate", type=float, default=0.5, help="arrivals per second (fixed spacing)")
    p.add_argument("--max-tokens", type=int, default=16, help="output tokens per request (ignore_eos)")
    p.add_argument("--max-num-seqs", type=int, default=8)
    p.add_argument(
        "--mode", default="texture", choices=("texture", "text", "both"), help="the decision's mode (text: OCR prior)"
    )
    p.add_argument(
        "--budgets", type=lambda v: tuple(float(b) for b in v.split(",")), default=BUDGETS, help="e.g. 1.0,0.22"
    )
    p.add_argument("--dtype", default="float32")
    p.add_argument("--kv-cache-mib", type=int, default=1024, help="KV cache size (0: vLLM's default)")
    p.add_argument("--enforce-eager", action=argparse.BooleanOptionalAction, default=True, help="no CUDA graphs")
    p.add_argument("--workdir", default="/tmp/arr-coc-vllm-bench")
    p.add_argument("--out", default=None, help="write the table (markdown) here")
    args = p.parse_args(argv)
    t0 = time.time()
    rows = asyncio.run(main_async(args))
    load = os.getloadavg()
    text = "\n".join(
        [
            f"Command: python benchmarks/vllm_serve.py {' '.join(sys.argv[1:] if argv is None else argv)}",
            "",
            table(rows, args),
            "",
            f"Model {args.model} (random weights, dummy load), {args.requests} requests per setting at {args.rate}/s, "
            f"{args.max_tokens} output tokens each, dtype {args.dtype}. Load average after the run "
            f"(1/5/15 min): {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores; "
            f"wall time {time.time() - t0:.0f} s.",
        ]
    )
    print(text)
    if args.out:
        pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
