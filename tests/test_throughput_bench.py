"""Smoke test of ``benchmarks/throughput.py`` on the tiny configs: every row at every batch size, the decision's op
counts, and the foveated tower's attention calls (deterministic: one per block, against one per kept window); no
timing is asserted (timings depend on the machine)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")


def test_throughput_bench_tiny_writes_every_row(tmp_path, run_benchmark):
    out = tmp_path / "throughput.md"
    argv = ["--models", "tiny-qwen2.5-vl", "tiny-qwen3-vl", "--device", "cpu", "--repeat", "1", "--tokens", "48"]
    argv += ["--batches", "1", "2", "--budgets", "25%", "--modes", "texture", "--ops-batches", "1", "--out", str(out)]
    done = run_benchmark("throughput.py", *argv)
    report = out.read_text()
    assert report in done.stdout
    assert "Command: `python benchmarks/throughput.py --models tiny-qwen2.5-vl" in report
    data = json.loads(out.with_suffix(".json").read_text())
    results = data["results"]
    assert [(r["model"], r["batch"]) for r in results] == [
        ("tiny-qwen2.5-vl", 1), ("tiny-qwen2.5-vl", 2), ("tiny-qwen3-vl", 1), ("tiny-qwen3-vl", 2)
    ]  # fmt: skip
    for res in results:
        kinds = [(r["kind"], r["mode"], r["budget"]) for r in res["rows"]]
        assert kinds == [
            ("unpruned", "-", "-"), ("downscaled", "-", "25%"), ("compress", "texture", "25%"),
            ("foveate", "texture", "25%"),
        ]  # fmt: skip
        rows = res["rows"]
        assert rows[1]["kept"] <= rows[2]["kept"] == rows[3]["kept"] < rows[0]["kept"]  # the same token count
        counted = res["batch"] == 1
        assert all((r["ops"] is not None) == (counted and r["kind"] in ("compress", "foveate")) for r in rows)
        assert all(r["images_s"] > 0 and r["speedup"] > 0 for r in rows)
    tower = results[0]["tower"][0]  # Qwen2.5-VL, batch 1
    assert tower["batched"]["attention_calls"] == 2  # one per block (a window block and a full-attention block)
    assert tower["window block"]["batched"]["attention_calls"] == 1
    assert tower["window block"]["own"]["attention_calls"] == tower["windows"] > 1
    # fewer aten calls in all (OpCounter counts views apart since it was first landed: with 2 windows the batched
    # tower launches a few more kernels than the per-window one, and far fewer with the real configs' dozens)
    assert tower["batched"]["ops"] + tower["batched"]["views"] < tower["own"]["ops"] + tower["own"]["views"]
    assert not results[2]["tower"]  # Qwen3-VL has no windows


def test_throughput_bench_tower_only(tmp_path, run_benchmark):
    """``--tower-only``: the foveated tower's counts per block, no timed rows."""
    out = tmp_path / "tower.md"
    argv = ["--models", "tiny-qwen2.5-vl", "--device", "cpu", "--tokens", "48", "--batches", "2", "--budgets", "25%"]
    run_benchmark("throughput.py", *argv, "--tower-only", "--out", str(out))
    res = json.loads(out.with_suffix(".json").read_text())["results"][0]
    assert res["rows"] == [] and len(res["tower"]) == 1
    tower = res["tower"][0]
    assert tower["images"] == 2 and tower["batched"]["attention_calls"] == 2
    assert tower["full block"]["own"]["attention_calls"] == 2 and tower["full block"]["batched"]["attention_calls"] == 1
    assert "window block" in out.read_text()
