"""Family.tiny: the registry row names the module that builds a family's tiny checkpoint; testing and
processing dispatch through it (no family names in their code)."""

from __future__ import annotations

import importlib
import pathlib

import pytest

from arr_coc.families import families

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "arr_coc"


def test_tiny_modules_have_the_interface() -> None:
    rows = [row for row in families() if row.tiny]
    assert {row.name for row in rows} >= {"glm-4.1v", "minicpm-v-4.7", "internvl", "llava-onevision", "mistral3",
                                          "gemma-3"}  # fmt: skip
    for row in rows:
        module = importlib.import_module(row.tiny)
        for name in ("tokenizer", "config", "checkpoint"):
            assert callable(getattr(module, name)), (row.name, name)


@pytest.mark.parametrize("name", ["testing.py", "processing.py"])
def test_no_family_name_branches(name: str) -> None:
    text = (SRC / name).read_text(encoding="utf-8")
    for needle in ("== GLM", "== MINICPM", "in tiny_tiled.FAMILIES", "family.name ==", "family.name in"):
        assert needle not in text, needle
