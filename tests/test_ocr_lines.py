"""OCR on the device (``arr_coc.reading.ocr.lines``) against the OpenCV / numpy path it replaces.

* CTC decoding: ``decode_lines(best_path(probs))`` and the device's ``ctc_best_path`` equal the per-line decoder the
  recogniser used before (kept below as ``old_decode``) exactly: text, score and character positions.
* Line geometry: the crops' sizes and the recogniser's widths equal ``crop_quad`` / ``LineRecognizer._prepare``.
* Crops: ``cut_lines`` (one bicubic ``grid_sample`` straight at the recogniser's resolution) against ``crop_quad`` +
  ``_prepare`` (OpenCV's bicubic warp at the line's own resolution, then its bilinear resize). Derived bound, on a
  page whose intensity is a linear ramp ``a x + b y + c`` and quads that are rotated rectangles (as the DB
  detector's ``minAreaRect`` gives them, so a crop is an affine image of the page): bilinear interpolation
  reproduces a ramp exactly; Keys' cubic kernel with a = -0.75 (OpenCV's and torch's) reproduces it up to
  ``E(t) = sum_k K(t - k) k - t`` per axis, |E| <= E_MAX (computed below, 0.048 px). OpenCV also quantises its
  warp's sample positions to 1/32 px (<= 1/64 px per axis). Each side is therefore off the ramp by at most
  (|a| + |b|) E_MAX (torch) and (|a| + |b|) (E_MAX + 1/64) (OpenCV; its bilinear resize is a convex combination
  and keeps the bound), so they differ by at most (|a| + |b|) (2 E_MAX + 1/64) grey levels. A uint8 page adds
  OpenCV's roundings: the warp's 15-bit coefficients (16 taps x 255 x 2**-16) and its uint8 result (0.5), the
  resize's 11-bit coefficients (4 taps x 255 x 2**-12) and its uint8 result (0.5). Divided by 127.5 (the
  normalisation), plus 1e-5 for float32 sample positions. A one-pixel slip of the crops moves the float ramp's first
  channel by 0.5 grey levels, about six times the float bound (negative control).
* Batched recognition: a page's lines in one call equal each line recognised alone at the same padded width.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from arr_coc.reading.ocr.lines import (
    ctc_best_path,
    cut_lines,
    line_geometry,
    page_tensor,
    recognise_page,
    width_groups,
)
from arr_coc.reading.ocr.recognition import REC_HEIGHT, LineRecognizer, LineText, best_path, decode_lines

cv2 = pytest.importorskip("cv2")


def _keys_linear_error(a: float = -0.75) -> float:
    """max over t of |sum_k K(t - k) k - t|: how far Keys' cubic kernel is from reproducing a linear ramp."""
    x = np.abs(np.linspace(0.0, 1.0, 100_001)[:, None] - np.arange(-1, 3)[None, :])  # (T, 4) tap distances
    k = np.where(x <= 1, (a + 2) * x**3 - (a + 3) * x**2 + 1, np.where(x < 2, a * (x**3 - 5 * x**2 + 8 * x - 4), 0))
    return float(np.abs(k @ np.arange(-1, 3) - np.linspace(0.0, 1.0, 100_001)).max())


E_MAX = _keys_linear_error()  # 0.048 px
FLOAT_SLOPE = 0.75  # |a| + |b| of the steepest channel of ``ramp_page(True)``
FLOAT_BOUND = FLOAT_SLOPE * (2 * E_MAX + 1 / 64) / 127.5 + 1e-5  # see the module docstring
UINT8_SLOPE = 1.0  # |a| + |b| of every channel of ``ramp_page(False)``
UINT8_ROUNDING = 16 * 255 * 2**-16 + 0.5 + 4 * 255 * 2**-12 + 0.5
UINT8_BOUND = (UINT8_SLOPE * (2 * E_MAX + 1 / 64) + UINT8_ROUNDING) / 127.5 + 1e-5


def old_decode(characters: list[str], probs: np.ndarray, width: int, own: int) -> LineText:
    """The recogniser's per-line greedy CTC decoder before the batched one (verbatim)."""
    best = probs.argmax(-1)  # (T,)
    frames = probs.shape[0]
    kept = np.ones(frames, dtype=bool)
    kept[1:] = best[1:] != best[:-1]
    kept &= best != 0
    pos = np.flatnonzero(kept)
    text = "".join(characters[j] for j in best[pos])
    score = float(probs[pos, best[pos]].mean()) if pos.size else 0.0
    frac = (pos + 0.5) * (width / frames) / own  # frame centre / line width
    return LineText(text, score, tuple(np.clip(frac, 0.0, 1.0).tolist()))


def random_probs(seed: int, n: int = 7, frames: int = 40, classes: int = 12) -> np.ndarray:
    """(n, frames, classes) probabilities with long runs, blanks, exact ties and an all-blank line."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, frames, classes)).astype(np.float32)
    runs = rng.integers(0, classes, size=(n, frames // 4))
    logits[np.arange(n)[:, None], np.arange(frames)[None], np.repeat(runs, 4, axis=1)] += 4.0  # repeats
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    probs[0, 3, :2] = probs[0, 3].max() + 0.1  # a tie: the first maximum wins in numpy and torch alike
    probs[1] = 0.0
    probs[1, :, 0] = 1.0  # nothing but blanks: an empty line
    return probs.astype(np.float32)


@pytest.mark.parametrize("seed", range(5))
def test_batched_ctc_decoding_equals_the_old_decoder_exactly(seed: int) -> None:
    probs = random_probs(seed)
    characters = ["blank", *"abcdefghij", " "]
    own = [int(x) for x in np.random.default_rng(seed).integers(40, 321, size=len(probs))]
    width = 320
    want = [old_decode(characters, p, width, o) for p, o in zip(probs, own, strict=True)]
    assert decode_lines(best_path(probs), characters, width, own) == want
    on_device = ctc_best_path(torch.from_numpy(probs)).numpy()
    assert np.array_equal(on_device, best_path(probs))
    assert decode_lines(on_device, characters, width, own) == want
    assert want[1] == LineText("", 0.0, ())


def test_ctc_best_path_stays_on_the_device_of_its_input() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        out = ctc_best_path(torch.empty(3, 40, 12, dtype=torch.bfloat16, device="cuda"))
        assert out.device.type == "cuda" and out.shape == (3, 40, 2) and out.dtype == torch.float32


def random_quads(seed: int, n: int, page_hw: tuple[int, int], margin: float = 6.0) -> np.ndarray:
    """(n, 4, 2) float32 quads inside the page (``margin`` px from its edge): rotated rectangles, some tall."""
    rng = np.random.default_rng(seed)
    h, w = page_hw
    out = []
    while len(out) < n:
        bw, bh = rng.uniform(12, 120), rng.uniform(8, 40)
        if rng.random() < 0.3:
            bw, bh = bh * 0.5, bw  # a tall line (turned a quarter)
        angle = rng.uniform(-0.15, 0.15)
        c, s = np.cos(angle), np.sin(angle)
        base = np.array([[0, 0], [bw, 0], [bw, bh], [0, bh]]) - [bw / 2, bh / 2]
        quad = base @ np.array([[c, s], [-s, c]])  # a rotated rectangle, as the DB detector's minAreaRect gives
        quad += [rng.uniform(margin + 80, w - margin - 80), rng.uniform(margin + 80, h - margin - 80)]
        if quad.min() >= margin and (quad[:, 0].max() <= w - 1 - margin) and (quad[:, 1].max() <= h - 1 - margin):
            out.append(quad)
    return np.asarray(out, dtype=np.float32)


def old_inputs(bgr: np.ndarray, quads: np.ndarray, width: int) -> tuple[np.ndarray, list[int], list[tuple]]:
    """The recogniser's input as the CPU path builds it: ``crop_quad`` then ``LineRecognizer._prepare``."""
    from arr_coc.reading.ocr.reader import crop_quad

    rec = LineRecognizer()
    crops = [crop_quad(bgr, q) for q in quads]
    prepared = [rec._prepare(c, width) for c in crops]
    return np.stack([p for p, _ in prepared]), [own for _, own in prepared], [c.shape[:2] for c in crops]


@pytest.mark.parametrize("seed", range(3))
def test_line_geometry_equals_crop_quad_and_prepare(seed: int) -> None:
    page = np.zeros((300, 400, 3), dtype=np.uint8)
    quads = random_quads(seed, 40, page.shape[:2])
    g = line_geometry(quads)
    _, own, shapes = old_inputs(page, quads, 2000)
    assert g.tall.any() and not g.tall.all()
    seen = np.stack([np.where(g.tall, g.size[:, 0], g.size[:, 1]), np.where(g.tall, g.size[:, 1], g.size[:, 0])], 1)
    assert [tuple(s) for s in seen] == [tuple(s) for s in shapes]  # (h, w) of each crop after the quarter turn
    assert g.own.tolist() == own


def ramp_page(exact_float: bool, h: int = 250, w: int = 250) -> np.ndarray:
    """(h, w, 3) page whose channels are linear ramps in x and y: float32 (slopes 0.5 / 0.25, exact in float32) or
    uint8 (x, y, 249 - x: integers, so the uint8 page is exactly linear)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    if exact_float:
        return np.stack([0.5 * x + 0.25 * y, 0.25 * x + 0.5 * y, 0.125 * (x + y) + 40], -1).astype(np.float32)
    return np.stack([x, y, (w - 1) - x], -1).astype(np.uint8)


def _cut(page: np.ndarray, geometry, width: int) -> np.ndarray:
    return cut_lines(torch.from_numpy(page.astype(np.float64)).permute(2, 0, 1), geometry, width).numpy()


@pytest.mark.parametrize("seed", range(3))
def test_cut_lines_equals_the_opencv_crop_within_the_derived_bound(seed: int) -> None:
    for exact_float, bound in ((True, FLOAT_BOUND), (False, UINT8_BOUND)):
        page = ramp_page(exact_float)
        quads = random_quads(seed, 30, page.shape[:2], margin=8.0)  # bicubic taps stay off the page's border
        g = line_geometry(quads)
        assert g.tall.any()  # the quarter turn is exercised
        width = max(8, int(g.own.max()))
        ref, own, _ = old_inputs(page, quads, width)
        assert own == g.own.tolist()
        assert np.abs(_cut(page, g, width) - ref).max() <= bound, exact_float


def test_the_crop_bound_catches_a_one_pixel_slip() -> None:
    page = ramp_page(True)
    quads = random_quads(11, 30, page.shape[:2], margin=8.0)
    g = line_geometry(quads)
    width = max(8, int(g.own.max()))
    ref, _, _ = old_inputs(page, quads, width)
    slipped = dataclasses.replace(g, corners=g.corners + np.float32([1.0, 0.0]))  # every crop one pixel right
    assert np.abs(_cut(page, slipped, width) - ref).max() > 4 * FLOAT_BOUND  # 0.5 grey levels on channel 0


def test_cut_lines_follows_the_page_device_and_dtype() -> None:
    """On the ``meta`` device every tensor the function makes must be on the page's device: a CPU constant mixed in
    fails. (Fake CUDA tensors cannot run here: torch's bicubic ``grid_sample`` decomposition indexes the grid, which a
    CPU-only build refuses for fake CUDA tensors.)"""
    quads = random_quads(0, 5, (300, 400))
    g = line_geometry(quads)
    page = torch.empty(3, 300, 400, dtype=torch.bfloat16, device="meta")
    out = cut_lines(page, g)
    assert out.device.type == "meta" and out.dtype == torch.bfloat16
    assert out.shape == (5, 3, REC_HEIGHT, max(8, int(g.own.max())))
    with pytest.raises((RuntimeError, NotImplementedError)):  # negative control: a CPU tensor in a meta computation
        torch.empty(3, device="meta") * torch.ones(3) + torch.ones(3, 1)


def test_cut_lines_pads_beyond_each_line_with_zero() -> None:
    page = ramp_page(False)
    g = line_geometry(random_quads(3, 6, page.shape[:2]))
    out = cut_lines(page_tensor(page, torch.device("cpu"), torch.float32), g, int(g.own.max()) + 5)
    for k, own in enumerate(g.own):
        assert (out[k, :, :, own:] == 0).all() and (out[k, :, :, :own] != 0).any()


rapidocr = pytest.importorskip("rapidocr")


def dejavu(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", size)
    except OSError:
        pytest.skip("DejaVu font not installed (apt: fonts-dejavu-core)")


def brute_force_groups(own: np.ndarray, k: int) -> int:
    """The least padded area of the sorted widths in at most k contiguous groups, by trying every cut."""
    import itertools

    w = np.sort(own)
    n = len(w)
    best = n * int(w[-1])
    for kk in range(2, k + 1):
        for cuts in itertools.combinations(range(1, n), kk - 1):
            bounds = (0, *cuts, n)
            best = min(best, sum((b - a) * int(w[b - 1]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_width_groups_find_the_least_padded_area_and_cover_every_line_once(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 9))
    own = rng.integers(1, 400, size=n)
    if seed % 4 == 0:
        own[rng.random(n) < 0.5] = 1000 + rng.integers(0, 50)  # a page of short fields and long rows
    k = int(rng.integers(1, 4))
    groups = width_groups(own, k, min_saving=0.0)
    assert sorted(np.concatenate(groups).tolist()) == list(range(n))  # every line exactly once
    assert 1 <= len(groups) <= k
    widest = [int(own[g].max()) for g in groups]
    assert widest == sorted(widest)  # contiguous runs of the sorted widths, the widest group last
    assert all(int(own[g].min()) >= (widest[i - 1] if i else 0) for i, g in enumerate(groups))
    area = sum(len(g) * w for g, w in zip(groups, widest, strict=True))
    assert area == brute_force_groups(own, k)


def test_width_groups_take_another_group_only_when_it_saves_enough() -> None:
    even = np.array([100, 101, 102, 103])
    assert len(width_groups(even, 2)) == 1  # splitting saves < 25%: one call
    mixed = np.array([40, 1600, 50, 1500, 60])  # the invoice's shape: short fields and table rows
    groups = width_groups(mixed, 2)
    assert [sorted(g.tolist()) for g in groups] == [[0, 2, 4], [1, 3]]
    assert width_groups(np.zeros(0, dtype=np.int64)) == []
    assert [g.tolist() for g in width_groups(np.array([7]))] == [[0]]
    with pytest.raises(ValueError, match="max_groups"):
        width_groups(even, 0)
    with pytest.raises(ValueError, match="min_saving"):
        width_groups(even, 2, min_saving=1.0)


@pytest.fixture(scope="module")
def page_recognizer():
    from arr_coc.reading.ocr.lines import PageRecognizer

    rec = PageRecognizer(device="cpu", dtype=torch.float32)
    rec.load()
    return rec


def test_batched_recognition_equals_each_line_alone(page_recognizer) -> None:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (420, 200), "white")
    draw = ImageDraw.Draw(img)
    font = dejavu(18)
    words = ["Invoice No: 4711", "Total $99.00", "Due 2024-05-01", "ACME GmbH"]
    for i, t in enumerate(words):
        draw.text((12 + 30 * (i % 2), 12 + 45 * i), t, fill="black", font=font)
    bgr = np.ascontiguousarray(np.asarray(img)[:, :, ::-1])
    boxes = [draw.textbbox((12 + 30 * (i % 2), 12 + 45 * i), t, font=font) for i, t in enumerate(words)]
    quads = np.asarray([[[x0 - 3, y0 - 3], [x1 + 3, y0 - 3], [x1 + 3, y1 + 3], [x0 - 3, y1 + 3]]
                        for x0, y0, x1, y1 in boxes], dtype=np.float32)  # fmt: skip
    g = line_geometry(quads)
    width = max(8, int(g.own.max()))
    x = cut_lines(page_tensor(bgr, torch.device("cpu"), torch.float32), g, width)
    net = page_recognizer.net
    with torch.inference_mode():
        together = net(x)  # (N, T, K)
        alone = torch.cat([net(x[i : i + 1]) for i in range(len(x))])
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=0)
    chars = page_recognizer.characters
    a = decode_lines(ctc_best_path(together).numpy(), chars, width, g.own)
    b = decode_lines(ctc_best_path(alone).numpy(), chars, width, g.own)
    assert [ln.text for ln in a] == [ln.text for ln in b] == words
    assert [ln.text for ln in page_recognizer.read_page(bgr, quads)] == words


def test_lines_recognised_in_width_groups_read_as_in_one_padded_batch(page_recognizer) -> None:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (900, 260), "white")
    draw = ImageDraw.Draw(img)
    font = dejavu(18)
    words = ["No. 17", "Total $99.00 due on receipt of this invoice, payable to ACME GmbH Berlin", "Qty 3",
             "Item 2: stainless steel hinges, 40 mm, brushed finish, packed in tens", "VAT 19%"]  # fmt: skip
    at = [(12, 12 + 48 * i) for i in range(len(words))]
    for (x, y), t in zip(at, words, strict=True):
        draw.text((x, y), t, fill="black", font=font)
    bgr = np.ascontiguousarray(np.asarray(img)[:, :, ::-1])
    boxes = [draw.textbbox(xy, t, font=font) for xy, t in zip(at, words, strict=True)]
    quads = np.asarray([[[x0 - 3, y0 - 3], [x1 + 3, y0 - 3], [x1 + 3, y1 + 3], [x0 - 3, y1 + 3]]
                        for x0, y0, x1, y1 in boxes], dtype=np.float32)  # fmt: skip
    groups = width_groups(line_geometry(quads).own, 2)
    assert [sorted(g.tolist()) for g in groups] == [[0, 2, 4], [1, 3]]  # the short fields apart from the long lines
    page = page_tensor(bgr, torch.device("cpu"), torch.float32)
    net, chars = page_recognizer.net, page_recognizer.characters
    one = recognise_page(net, chars, page, quads, max_groups=1)  # every line padded to the widest
    two = recognise_page(net, chars, page, quads, max_groups=2)
    alone = [recognise_page(net, chars, page, quads[i : i + 1])[0] for i in range(len(words))]  # no padding
    assert [ln.text for ln in two] == [ln.text for ln in one] == [ln.text for ln in alone] == words
    # a line padded far beyond its width reads with less confidence (the network sees the padding); a group padded
    # only to its own widest line reads as the line alone does, or nearer to it
    off_one = [abs(a.score - b.score) for a, b in zip(one, alone, strict=True)]
    off_two = [abs(a.score - b.score) for a, b in zip(two, alone, strict=True)]
    assert all(t <= o + 1e-6 for t, o in zip(off_two, off_one, strict=True))
    assert sum(off_two) < 0.5 * sum(off_one)
    for i in (1, 3):  # the widest group: its lines cut exactly as in the one batch, padded to the same width
        assert two[i].score == pytest.approx(one[i].score, abs=1e-5)
