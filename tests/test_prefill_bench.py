"""Smoke test of ``benchmarks/prefill.py`` on its tiny configs: it runs, prints and writes a table with every budget
row and a JSON with the same rows (no timing assertions: timings depend on the machine)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")


def test_prefill_bench_tiny_writes_all_budget_rows(tmp_path, run_benchmark):
    out = tmp_path / "prefill.md"
    argv = ["--models", "tiny-qwen2.5-vl", "tiny-qwen3-vl", "--device", "cpu", "--repeat", "1", "--warmup", "0"]
    argv += ["--max-tokens", "48", "--layers", "2", "--vision-layers", "2", "--out", str(out)]
    done = run_benchmark("prefill.py", *argv)
    report = out.read_text()
    assert report in done.stdout
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
