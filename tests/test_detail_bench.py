"""Level of detail at equal tokens: the half-read rule and the downscale baseline (``arr_coc.evaluation.evidence``),
and ``benchmarks/detail.py`` / ``evidence_recall.py``'s downscale rows, each run as a script."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from arr_coc.evaluation import docgen
from arr_coc.evaluation import evidence as er
from arr_coc.integrations.detail import DetailPlan

METHODS = ("drop", "thumbnail", "mixed", "downscale")  # benchmarks/detail.py's rows


def test_half_read_rule_by_hand():
    """Fine 1, coarse 0.5, dropped 0: drop keeps cells 0 and 5 of a 4x4 grid; mixed has one coarse block."""
    drop = er.seen("drop", 16, np.array([0, 5]), None, 4, 4)
    assert drop.tolist() == [1, 0, 0, 0, 0, 1] + [0] * 10
    plan = DetailPlan("mixed", torch.tensor([0]), 2, 1, factor=2, anchors=torch.tensor([10]), blocks=[(2, 2, 4, 4)])
    mixed = er.seen("mixed", 16, None, plan, 4, 4)
    assert mixed[0] == 1 and mixed[1] == 0 and mixed[[10, 11, 14, 15]].tolist() == [0.5] * 4
    thumb = er.seen("thumbnail", 16, None, DetailPlan("thumbnail", torch.tensor([3]), 5, 1, n_thumb=4), 4, 4)
    assert thumb[3] == 1 and (np.delete(thumb, 3) == 0.5).all()
    assert (er.seen("downscale", 16, None, None, 4, 4) == 0.5).all()


def test_downscaled_view_is_within_budget():
    image = Image.new("RGB", (762, 1000), "white")
    grid = er.grid_of(762, 1000)
    view = image.resize((grid.cols * 28, grid.rows * 28))
    for frac in (1 / 9, 2 / 9, 1 / 3):
        k = er.budget_k(frac, grid.n_tokens)
        shown, tokens = er.downscaled(image, view.size, k)
        assert shown.size == view.size and 0.8 * k <= tokens <= k


def test_evidence_recall_downscale_rows(tmp_path, run_benchmark):
    """downscale sits beside the baselines: half-read recall, and the reader sees the downscaled page."""
    out = tmp_path / "er.md"
    argv = ["--split", "dev", "--n-per-kind", "1", "--kinds", "receipt", "--allocators", "random,downscale"]
    run_benchmark("evidence_recall.py", *argv, "--out", str(out))
    (r,) = json.loads(out.with_suffix(".json").read_text())["samples"]
    assert all(v == er.DOWNSCALE_RECALL for v in r["recall"]["downscale"].values())
    sample = docgen.generate("dev", 1, 0, kinds=["receipt"])[0]
    page = er.downscale_page(sample.image, 20)
    assert page.size == sample.image.size
    assert np.asarray(page).std() < np.asarray(sample.image.convert("RGB")).std()  # blurred: less contrast


@pytest.mark.skipif(__import__("shutil").which("tesseract") is None, reason="tesseract-ocr not installed")
def test_detail_bench_main_writes_every_row(tmp_path, run_benchmark):
    from arr_coc.realizing import ocr_available

    if not ocr_available():
        pytest.skip("the text allocator needs the [ocr] extra")
    out = tmp_path / "detail.md"
    argv = ["--source", "docgen", "--split", "dev", "--n-per-kind", "1", "--kinds", "receipt,table", "--out", str(out)]
    run_benchmark("detail.py", *argv)
    text = out.read_text()
    for m in METHODS:
        assert f"| {m} |" in text
    data = json.loads(out.with_suffix(".json").read_text())
    samples = data["sources"][0]["samples"]
    assert [s["kind"] for s in samples] == ["receipt", "table"]
    for s in samples:
        for label, _ in er.BUDGETS:
            k = er.budget_k(dict(er.BUDGETS)[label], s["n_tokens"])
            assert s["tokens"]["drop"][label] == k
            assert s["tokens"]["thumbnail"][label] == k and s["tokens"]["mixed"][label] == k  # equal tokens
            assert s["tokens"]["downscale"][label] <= k
            assert s["recall"]["downscale"][label] == 0.5
