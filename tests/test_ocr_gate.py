"""The script gate of ``charset="auto"``: every class is computed only for the lines it lets through.

* ``gate_mask``: the Latin classes, letters of other scripts that are not ideographs, ideographs in common use.
* ``best_path(..., gate=...)`` and the device's ``ctc_best_path`` decide each line the same way.
* With the shipped model, onnxruntime's split graphs (``split_rec_model``: the gate's classes, then every class for
  the lines let through) read a Chinese and an English line as every class computed for every line does.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from arr_coc.reading.ocr.lines import ctc_best_path
from arr_coc.reading.ocr.recognition import best_path, gate_mask, latin_mask, letter_mask

needs_ocr = pytest.mark.skipif(
    importlib.util.find_spec("rapidocr") is None or importlib.util.find_spec("onnxruntime") is None,
    reason="needs rapidocr and onnxruntime (the [text] extra)",
)
# blank, Latin letters, a common ideograph, a rare one (GB2312 level 2, not in JIS level 1), a kana, a full-width
# colon (not a letter), space
CHARS = ["blank", "a", "b", "中", "饕", "あ", "：", " "]


def test_gate_mask_keeps_latin_kana_and_common_ideographs() -> None:
    assert gate_mask(CHARS).tolist() == [True, True, True, True, False, True, False, True]
    assert latin_mask(CHARS)[gate_mask(CHARS) == False].sum() == 0  # noqa: E712 - every Latin class is in the gate


def line(classes: list[int], second: dict[int, int] | None = None) -> np.ndarray:
    """(1, T, K) probabilities: frame t reads ``classes[t]`` (0.9), ``second[t]`` the runner-up (0.05)."""
    probs = np.full((1, len(classes), len(CHARS)), 0.01, dtype=np.float32)
    for t, c in enumerate(classes):
        probs[0, t, c] = 0.9
    for t, c in (second or {}).items():
        probs[0, t, c] = 0.05
    return probs


def decide(probs: np.ndarray) -> tuple[list[int], list[int]]:
    mask, letters, gate = latin_mask(CHARS), letter_mask(CHARS), gate_mask(CHARS)
    host = best_path(probs, mask, letters=letters, gate=gate)
    device = ctc_best_path(*(torch.from_numpy(a) for a in (probs, mask)), letters=torch.from_numpy(letters),
                           gate=torch.from_numpy(gate)).numpy()  # fmt: skip
    assert np.array_equal(host, device)  # the torch backend decides each line as onnxruntime's path does
    return host[0, :, 0].astype(int).tolist(), best_path(probs, mask, letters=letters)[0, :, 0].astype(int).tolist()


def test_a_line_with_a_common_ideograph_goes_through_the_gate() -> None:
    gated, ungated = decide(line([3, 0, 4, 0, 1]))  # "中饕a": two ideographs, one of them common
    assert gated == ungated == [3, 0, 4, 0, 1]


def test_a_line_the_gate_does_not_let_through_reads_over_the_latin_classes() -> None:
    # two rare ideographs, whose frames' most likely gate class is Latin: the ungated rule would read them; the gate
    # reads the line as the sliced head does (onnxruntime never computes its other classes)
    gated, ungated = decide(line([4, 0, 4, 0, 2, 0, 4], second={0: 1, 6: 2}))
    assert ungated == [4, 0, 4, 0, 2, 0, 4]
    assert gated == [1, 0, 0, 0, 2, 0, 2]
    gated, _ = decide(line([5, 0, 4, 0, 4], second={2: 1, 4: 2}))  # a kana is in the gate: the line goes through
    assert gated == [5, 0, 4, 0, 4]


@needs_ocr
def test_the_split_model_reads_as_every_class_computed() -> None:
    from PIL import Image, ImageDraw, ImageFont

    from arr_coc.reading.ocr.reader import TextReader, crop_quad
    from arr_coc.reading.ocr.recognition import LineRecognizer, decode_lines

    font = None
    for path in ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
                 "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc"):  # fmt: skip
        try:
            font = ImageFont.truetype(path, 28, index=2)
            break
        except OSError:
            continue
    if font is None:
        pytest.skip("no Noto CJK font (apt-get install fonts-noto-cjk)")
    img = Image.new("RGB", (640, 210), "white")
    draw = ImageDraw.Draw(img)
    for y, text in ((20, "合计金额：¥492.50"), (80, "Invoice total: 492.50"), (140, "株式会社 饕餮 12月28日")):
        draw.text((20, y), text, font=font, fill="black")
    detector, _ = TextReader(cache_items=0).engine()
    bgr = np.asarray(img)[:, :, ::-1].copy()
    quads = np.asarray(detector(bgr).boxes, dtype=np.float32).reshape(-1, 4, 2)
    rec = LineRecognizer(workers=1)
    rec.load()
    assert rec._split is not None  # onnxruntime: the gate's classes, then every class for the lines let through
    (_, x, owns), *rest = rec.batches([crop_quad(bgr, q) for q in quads])
    assert not rest
    probs = rec.run(x)  # every class of every line
    assert probs.shape[-1] == len(rec.characters) == 18710
    split = rec.infer(x)
    full = best_path(probs, rec.latin, rec.script_share, rec.letters)  # the rule without the gate
    assert np.array_equal(split[..., 0], full[..., 0])
    np.testing.assert_allclose(split[..., 1], full[..., 1], atol=1e-5)
    texts = [ln.text for ln in decode_lines(split, rec.characters, x.shape[3], owns)]
    assert (
        any("合计" in t for t in texts) and any("Invoice" in t for t in texts) and any("株式会社" in t for t in texts)
    )
