"""`arr_coc.allocate`: budgets respected on the model's grid, queries of any length, modes, and the OCR extra."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import arr_coc
from arr_coc import GridSpec, allocate
from arr_coc import text_prior as text_prior_mod


@settings(max_examples=25, deadline=None)
@given(
    w=st.integers(8, 900),
    h=st.integers(8, 900),
    family=st.sampled_from(["qwen2-vl", "qwen2.5-vl", "qwen3-vl"]),
    budget=st.one_of(st.integers(1, 2000), st.floats(0.001, 1.0), st.just("adaptive")),
    seed=st.integers(0, 2**16),
)
def test_budget_grid_and_order(w: int, h: int, family: str, budget, seed: int) -> None:
    if max(w, h) / min(w, h) > 200:
        return
    img = Image.fromarray(np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8))
    a = allocate(img, "what is here?", budget=budget, family=family, mode="texture")
    grid = GridSpec.for_family(family).grid_for(h, w)
    assert a.grid == (grid.rows, grid.cols) and a.resized == grid.resized and a.original == (w, h)
    assert a.scores.shape == a.grid and np.isfinite(a.scores).all()
    keep = a.keep.numpy()
    assert 1 <= keep.size <= a.n_tokens and np.all(np.diff(keep) > 0)
    if isinstance(budget, int):
        assert keep.size == min(budget, a.n_tokens)
    elif budget == "adaptive":
        assert keep.size in arr_coc.TIERS or keep.size == a.n_tokens < arr_coc.TIERS[-1]
    else:
        assert keep.size == max(1, min(a.n_tokens, round(budget * a.n_tokens)))
    assert a.mask.sum() == keep.size


def test_input_form_does_not_change_the_allocation(noise_image, tmp_path) -> None:
    """A path, its text, its bytes, an open file, the PIL image and its array are one image: one allocation."""
    path = tmp_path / "noise.png"
    noise_image.save(path)
    ref = allocate(noise_image, "the red part", budget=0.2, mode="texture")
    with path.open("rb") as handle:
        forms = [path, str(path), path.read_bytes(), handle, np.asarray(noise_image)]
        for form in forms:
            a = allocate(form, "the red part", budget=0.2, mode="texture")
            assert (a.original, a.grid) == (ref.original, ref.grid), type(form)
            assert np.array_equal(a.scores, ref.scores) and a.keep.tolist() == ref.keep.tolist(), type(form)
    grey = noise_image.convert("L")  # a grey image and the same pixels as RGB are the same picture
    a, b = allocate(grey, "q", budget=10, mode="texture"), allocate(grey.convert("RGB"), "q", budget=10, mode="texture")
    assert np.array_equal(a.scores, b.scores)


@pytest.mark.parametrize("query", ["", None, "   ", "?" * 10, "word " * 50_000])
def test_empty_and_huge_queries(noise_image, query) -> None:
    a = allocate(noise_image, query, budget=10, mode="texture")
    assert a.budget == 10 and len(a.query) <= 4000  # documented clamp: queries are cut to 4,000 characters


def test_bad_mode_family_budget(noise_image) -> None:
    with pytest.raises(ValueError, match="mode"):
        allocate(noise_image, "q", budget=10, mode="ocr-please")
    with pytest.raises(ValueError, match="family"):
        allocate(noise_image, "q", budget=10, family="llava")
    with pytest.raises(ValueError, match="budget"):
        allocate(noise_image, "q", budget=float("nan"), mode="texture")


def test_missing_ocr_extra_is_explained(noise_image, monkeypatch) -> None:
    monkeypatch.setattr(text_prior_mod, "ocr_available", lambda: False)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[ocr\]' in the arr-coc-vis clone.*texture"):
        allocate(noise_image, "q", budget=10, mode="text")
    assert allocate(noise_image, "q", budget=10, mode="auto").mode == "texture"  # auto falls back, and says so


def test_input_is_not_modified(noise_image) -> None:
    before = np.asarray(noise_image).copy()
    allocate(noise_image, "q", budget=10, mode="texture")
    assert np.array_equal(np.asarray(noise_image), before)


def test_timings_are_reported(noise_image) -> None:
    """Every stage's time is there and is a non-negative number (how long is the speed benchmark's business)."""
    a = allocate(noise_image, "q", budget=10, mode="texture")
    assert set(a.timings_ms) == {"load", "texture", "ocr", "scoring", "total", "model_load"}
    assert all(isinstance(v, float) and np.isfinite(v) and v >= 0 for v in a.timings_ms.values())
    assert a.timings_ms["ocr"] == 0  # the texture path runs no OCR
    # the stages are consecutive intervals of one clock, so they add up to the total up to float64 rounding of a few
    # subtractions and * 1e3 (relative error ~1e-15; 1e-9 leaves a wide margin and still catches a missing stage)
    t = a.timings_ms
    assert t["load"] + t["texture"] + t["ocr"] + t["scoring"] == pytest.approx(t["total"], rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("content", [None, b"hi", b"\x89PNG\r\n\x1a\n" + b"\0" * 40])
def test_a_bad_or_missing_image_is_refused_before_any_model_loads(tmp_path, monkeypatch, content, capsys) -> None:
    """Text mode (the default with [ocr]) checks the picture first: no OCR or text model loads for a bad file."""
    pytest.importorskip("rapidocr", reason="text mode needs the [ocr] extra")
    from arr_coc.cli import main
    from arr_coc.reading import Reading

    def loading(*args, **kwargs):
        raise AssertionError("the OCR and text models were loaded before the image was checked")

    monkeypatch.setattr(Reading, "warmup", loading)
    path = tmp_path / "page.png"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ValueError, match="page.png"):
        allocate(path, "How much?", budget=0.1, mode="text")
    assert main(["allocate", str(path), "--query", "How much?"]) == 2  # the CLI's default mode
    err = capsys.readouterr().err
    assert "page.png" in err and "AssertionError" not in err
