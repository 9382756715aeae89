"""Smoke test of ``benchmarks/prefill.py`` on its tiny configs: it runs, prints and writes a table with every budget
row and a JSON with the same rows (no timing assertions: timings depend on the machine)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "prefill.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("prefill_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    return module


def test_prefill_bench_tiny_writes_all_budget_rows(tmp_path, capsys):
    bench = load_bench()
    out = tmp_path / "prefill.md"
    argv = ["--models", "tiny-qwen2.5-vl", "tiny-qwen3-vl", "--device", "cpu", "--repeat", "1", "--warmup", "0"]
    argv += ["--max-tokens", "48", "--layers", "2", "--vision-layers", "2", "--out", str(out)]
    assert bench.main(argv) == 0
    report = out.read_text()
    assert report in capsys.readouterr().out
    for model in ("tiny-qwen2.5-vl", "tiny-qwen3-vl"):
        assert f"## {model}: LM layers 2 of 2, vision blocks 2 of " in report
    rows = [line for line in report.splitlines() if line.startswith("| ") and not line.startswith("| budget")]
    assert [line.split("|")[1].strip() for line in rows] == ["100%", "33%", "22%", "11%", "64"] * 2
    assert "Targets" in report and "of ideal" in report
    data = json.loads(out.with_suffix(".json").read_text())
    assert [r["model"] for r in data["results"]] == ["tiny-qwen2.5-vl", "tiny-qwen3-vl"]
    for result in data["results"]:
        budgets = {r["budget"]: r for r in result["rows"]}
        assert list(budgets) == ["100%", "33%", "22%", "11%", "64"]
        n = result["visual_tokens"]
        assert budgets["100%"]["kept"] == n
        assert budgets["22%"]["kept"] < budgets["33%"]["kept"] < n
        assert budgets["22%"]["seq_len"] == budgets["100%"]["seq_len"] - (n - budgets["22%"]["kept"])


def test_cut_config_keeps_block_indexes_inside_the_tower():
    bench = load_bench()
    q25 = bench.cut_config(bench.CONFIGS["qwen2.5-vl-3b"], 2, 9)
    assert q25["text_config"]["num_hidden_layers"] == 2 and q25["vision_config"]["depth"] == 9
    assert q25["vision_config"]["fullatt_block_indexes"] == [7]
    q3 = bench.cut_config(bench.CONFIGS["qwen3-vl-8b"], 4, 2)
    assert q3["vision_config"]["deepstack_visual_indexes"] == [0, 1]
    assert bench.CONFIGS["qwen3-vl-8b"]["vision_config"]["deepstack_visual_indexes"] == [8, 16, 24]  # not modified
