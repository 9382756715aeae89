"""LeanDBPostProcess extracts the same boxes and scores as rapidocr's DBPostProcess, bit for bit; the torch
detector's on-device normalisation equals rapidocr's NumPy one; the reader's detector uses both."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("rapidocr")

from rapidocr.ch_ppocr_det.utils import DBPostProcess, DetPreProcess  # noqa: E402

from arr_coc.reading.ocr.detection import LeanDBPostProcess  # noqa: E402

SETTINGS = {"thresh": 0.3, "box_thresh": 0.5, "max_candidates": 1000, "unclip_ratio": 1.6, "score_mode": "fast"}


def probability_map(seed: int, n: int, shape: tuple[int, int] = (256, 320)) -> np.ndarray:
    """(1, 1, H, W) float32 map with ``n`` rotated, blurred text-line-like rectangles of random strength, some of
    them touching the border or each other, over faint noise."""
    rng = np.random.default_rng(seed)
    h, w = shape
    canvas = np.zeros(shape, np.float32)
    for _ in range(n):
        centre = (float(rng.uniform(-10, w + 10)), float(rng.uniform(-10, h + 10)))
        size = (float(rng.uniform(2, 120)), float(rng.uniform(2, 18)))
        corners = cv2.boxPoints((centre, size, float(rng.uniform(-30, 30))))
        cv2.fillPoly(canvas, [np.round(corners).astype(np.int32)], float(rng.uniform(0.2, 1.0)))
    canvas = cv2.GaussianBlur(canvas, (0, 0), float(rng.uniform(0.5, 2.0)))
    canvas += rng.random(shape, dtype=np.float32) * 0.05
    return np.clip(canvas, 0, 1)[None, None]


def both(pred: np.ndarray, page: tuple[int, int], dilation: bool) -> tuple[tuple, tuple]:
    ref = DBPostProcess(**SETTINGS, use_dilation=dilation)
    return ref(pred, page), LeanDBPostProcess.like(ref)(pred, page)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(0, 60), dilation=st.booleans(),
       page=st.sampled_from([(256, 320), (512, 640), (300, 251), (1376, 1151)]))  # fmt: skip
def test_lean_post_process_equals_rapidocr(seed: int, n: int, dilation: bool, page: tuple[int, int]) -> None:
    (boxes_a, scores_a), (boxes_b, scores_b) = both(probability_map(seed, n), page, dilation)
    assert boxes_b.dtype == boxes_a.dtype and boxes_b.shape == boxes_a.shape
    assert np.array_equal(boxes_a, boxes_b)
    assert scores_a == scores_b  # the same floats, not close ones


def test_many_boxes_are_compared() -> None:
    """The property test is not vacuous: a dense map gives dozens of boxes, equal on both."""
    (boxes_a, scores_a), (boxes_b, scores_b) = both(probability_map(7, 80, (512, 640)), (1024, 1280), True)
    assert len(boxes_a) >= 10
    assert np.array_equal(boxes_a, boxes_b) and scores_a == scores_b


def test_slow_score_mode_is_rapidocrs_own() -> None:
    ref = DBPostProcess(**{**SETTINGS, "score_mode": "slow"})
    pred = probability_map(3, 30)
    (a, sa), (b, sb) = ref(pred, (256, 320)), LeanDBPostProcess.like(ref)(pred, (256, 320))
    assert np.array_equal(a, b) and sa == sb


IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


@pytest.mark.parametrize("mean_std", [((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)), IMAGENET])
def test_device_normalisation_equals_rapidocrs(mean_std) -> None:
    pytest.importorskip("onnx")
    import torch

    from arr_coc.reading.ocr.torch_backend import DeviceDetPreProcess, TorchDetSession

    mean, std = mean_std
    rng = np.random.default_rng(0)
    for shape in [(300, 500, 3), (1376, 1151, 3), (31, 40, 3)]:
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        pre = DetPreProcess(736, "max", list(mean), list(std))
        expected = pre(img)  # (1, 3, H, W) float32, NumPy on the host
        session = object.__new__(TorchDetSession)  # the normalisation alone, no network
        session.device = torch.device("cpu")
        TorchDetSession._constants(session, pre)
        got = session.normalise(DeviceDetPreProcess(736, "max", list(mean), list(std))(img)).numpy()
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert np.array_equal(got, expected)


def test_reader_detectors_use_both() -> None:
    pytest.importorskip("onnx")
    from arr_coc.reading import TextReader
    from arr_coc.reading.ocr.torch_backend import DeviceDetPreProcess, TorchDetSession

    det, _ = TextReader().engine()
    assert isinstance(det._load_det_model().postprocess_op, LeanDBPostProcess)
    det, _ = TextReader(backend="torch", device="cpu").engine()
    stage = det._load_det_model()
    assert isinstance(stage.postprocess_op, LeanDBPostProcess)
    assert isinstance(stage.session, TorchDetSession) and isinstance(stage.get_preprocess(), DeviceDetPreProcess)
