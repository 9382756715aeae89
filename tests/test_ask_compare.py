"""``arr-coc ask --compare``: a saving is reported only where there is one, noise is called noise, and the output
carries no error from a missing optional package (torchvision)."""

from __future__ import annotations

import re

import pytest

from arr_coc.asking import Noise, RunResult, StageTimes, explain_speedup, median_run, savings, ttft_verdict
from arr_coc.cli import main


def run(ttft: float, vision: float, scorer: float, prefill: float) -> RunResult:
    return RunResult("a", 3, ttft, ttft + 30.0, 0, 100, StageTimes(vision, scorer, prefill, 30.0, 2))


def test_a_tower_that_sees_every_patch_saves_nothing_whatever_the_clock_says() -> None:
    full, pruned = run(841.0 + 60, 841.0, 0.0, 55.0), run(279.0 + 70, 279.0, 60.0, 10.0)
    line = savings(full, pruned, foveated=False)
    assert "vision tower 841 -> 279 ms: the same work (every patch), no saving" in line
    assert "563 ms saved" not in line and "prefill 55 -> 10 ms, 45 ms saved" in line
    why = explain_speedup(run(100.0, 40.0, 0.0, 55.0), run(120.0, 12.0, 60.0, 15.0))
    assert why is not None and "12 ms: the same work (every patch), no saving" in why and "28 ms saved" not in why


def test_a_difference_inside_the_run_to_run_spread_is_within_noise() -> None:
    fulls = [run(600.0, 500.0, 0.0, 45.0), run(1100.0, 990.0, 0.0, 50.0)]
    pruneds = [run(500.0, 430.0, 30.0, 38.0), run(700.0, 600.0, 30.0, 40.0)]
    noise = Noise.of(fulls, pruneds)
    assert (noise.ttft_ms, noise.vision_ms, noise.prefill_ms) == (500.0, 490.0, 5.0)
    full, pruned = median_run(fulls), median_run(pruneds)
    assert (full.ttft_ms, pruned.ttft_ms) == (850.0, 600.0)
    assert ttft_verdict(full, pruned, noise) == "within noise (run-to-run spread 500 ms)"
    assert ttft_verdict(full, pruned) == "1.42x"  # no spread known: the ratio
    line = savings(full, pruned, foveated=True, noise=noise)
    assert "vision tower (foveated) 745 -> 515 ms, within noise (run-to-run spread 490 ms)" in line
    assert "prefill 48 -> 39 ms, 8 ms saved" in line  # 8.5 > the 5 ms spread: a saving
    assert not re.search(r"-\d", line)


@pytest.fixture(scope="module")
def tiny_checkpoint(tiny_checkpoint_folder):
    return tiny_checkpoint_folder("qwen2.5-vl", max_pixels=28 * 28 * 64)


def test_ask_compare_says_noise_and_prints_no_import_error(tiny_checkpoint, tmp_path, form_image, capfd) -> None:

    image = tmp_path / "form.png"
    form_image.save(image)
    argv = ["ask", str(image), "-q", "What is the total?", "--model", str(tiny_checkpoint), "--mode", "texture"]
    assert main([*argv, "--max-new-tokens", "2", "--compare"]) == 0
    out, err = capfd.readouterr()
    assert "median of 2 alternating runs" in out and "saved: language-model prefill" in out
    assert "vision tower" in out and ": the same work (every patch), no saving" in out  # not foveated
    for stream in (out, err):
        assert "ImportError" not in stream and "Traceback" not in stream
    assert "torchvision" not in err


def test_the_processor_without_torchvision_is_no_error(tiny_checkpoint, capfd) -> None:
    import importlib.util

    from arr_coc.processing import NO_TORCHVISION, describe, load_processor

    processor = load_processor(tiny_checkpoint)
    if importlib.util.find_spec("torchvision") is None:
        assert processor.arr_coc_kind == "pil" and processor.arr_coc_reason == NO_TORCHVISION
    assert "Error" not in describe(processor)
    out, err = capfd.readouterr()
    assert "torchvision" not in err and "Error" not in err


def test_the_foveated_explanation_counts_the_encoded_patches() -> None:
    from arr_coc.asking import RunResult, StageTimes, explain_speedup

    full = RunResult("a", 3, 100.0, 130.0, 0, 300, StageTimes(40.0, 0.0, 55.0, 30.0, 2))
    fov = RunResult("b", 3, 120.0, 150.0, 0, 100, StageTimes(12.0, 60.0, 15.0, 30.0, 2))
    why = explain_speedup(full, fov, encoded=(53, 242))
    assert why is not None and "every patch" not in why
    assert "encoded the patches of 53 of 242 tokens (40 -> 12 ms, 28 ms saved)" in why
    assert "still sees every patch" in explain_speedup(full, fov)  # type: ignore[operator]


# ----- ask --compare --foveate -------------------------------------------------------------------------------------
def test_the_compare_explanation_never_prints_a_negative_saving() -> None:
    from arr_coc.asking import RunResult, StageTimes, explain_speedup

    full = RunResult("a", 3, 200.0, 300.0, 0, 300, StageTimes(98.0, 0.0, 2.0, 30.0, 2))
    fov = RunResult("b", 3, 900.0, 990.0, 0, 100, StageTimes(421.0, 400.0, 30.0, 30.0, 2))
    why = explain_speedup(full, fov, encoded=(53, 242))
    assert why is not None and not re.search(r"-\d", why)  # no negative number anywhere
    assert "2 -> 30 ms, 28 ms slower" in why and "98 -> 421 ms, 323 ms slower" in why
    assert "took longer although it had fewer tokens" in why and "net 700 ms slower" in why
