"""Shared pieces of the vLLM plugin's tests: one tiny checkpoint and one engine per family, shared by its tests.

These tests run in the vLLM virtual environment (``bash .ci/vllm_env.sh``, then ``.venv-vllm/bin/python -m pytest
tests/vllm_plugin``); elsewhere they skip ("vllm not installed"). Engines run in this process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``), float32, with a small KV cache.
"""

from __future__ import annotations

import os
import pathlib

import pytest

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine in this process: no spawn, shared fixtures
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory) -> dict[str, pathlib.Path]:
    """Tiny random-weight checkpoints vLLM's CPU build serves (text head dim 32), by family, written on demand."""
    from plugin_checks import MAX_PIXELS

    from arr_coc.testing import tiny_checkpoint

    root = tmp_path_factory.mktemp("vllm-ckpt")

    class Lazy(dict):
        def __missing__(self, family: str) -> pathlib.Path:
            self[family] = tiny_checkpoint(family, root / family, max_pixels=MAX_PIXELS[family], vllm=True)
            return self[family]

    return Lazy()
