"""Shared pieces of the vLLM plugin's tests: one tiny checkpoint and one engine per family, shared by its tests.

These tests run in the vLLM virtual environment (``bash .ci/vllm_env.sh``, then ``.venv-vllm/bin/python -m pytest
tests/vllm``); elsewhere they skip ("vllm not installed"). Engines run in this process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``), float32, with a small KV cache.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import pathlib

import pytest

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine in this process: no spawn, shared fixtures
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HAVE_VLLM = importlib.util.find_spec("vllm") is not None
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
MAX_PIXELS = {"qwen2-vl": 160 * 28 * 28, "qwen2.5-vl": 160 * 28 * 28, "qwen3-vl": 160 * 32 * 32}  # <= 160 tokens


def engine_kwargs() -> dict:
    """What every test engine uses: float32 (exact comparisons), a 256 MiB KV cache, no compilation."""
    return dict(
        dtype="float32",
        max_model_len=4096,
        max_num_seqs=8,
        limit_mm_per_prompt={"image": 3, "video": 0},
        kv_cache_memory_bytes=256 << 20,
        enforce_eager=True,
        seed=0,
    )


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory) -> dict[str, pathlib.Path]:
    """Tiny random-weight checkpoints vLLM's CPU build serves (text head dim 32), by family, written on demand."""
    from arr_coc.testing import tiny_checkpoint

    root = tmp_path_factory.mktemp("vllm-ckpt")

    class Lazy(dict):
        def __missing__(self, family: str) -> pathlib.Path:
            self[family] = tiny_checkpoint(family, root / family, max_pixels=MAX_PIXELS[family], vllm=True)
            return self[family]

    return Lazy()


def open_engine(folder: pathlib.Path):
    from vllm import LLM

    return LLM(model=str(folder), **engine_kwargs())


def close_engine(llm) -> None:
    del llm
    gc.collect()


def image(name: str):
    from PIL import Image

    return Image.open(EXAMPLES / name).convert("RGB")


def chat_prompt(folder: pathlib.Path, images: list, question: str) -> str:
    """The chat template's text for one user turn with ``images`` then ``question`` (the generation prompt added)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    content = [{"type": "image"} for _ in images] + [{"type": "text", "text": question}]
    return tok.apply_chat_template([{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True)
