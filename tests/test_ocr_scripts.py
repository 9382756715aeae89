"""The recogniser reads every script its model has classes for (``OcrConfig.charset="auto"``).

* ``best_path(probs, latin)``: a line read mostly in Latin classes is read over the Latin classes alone (exactly the
  argmax the sliced head gives), a Chinese or mixed line over every class; the device's ``ctc_best_path`` is the same
  bit for bit (the torch backend reads as onnxruntime does).
* A CJK key's colon ends a key box ("金额：¥492.50" has no space after it).
* With the shipped model: a Chinese line is read in Chinese, an English page reads as with ``charset="latin"``.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from arr_coc.reading.config import OcrConfig
from arr_coc.reading.ocr.lines import ctc_best_path
from arr_coc.reading.ocr.reader import TextBox, split_after_colons
from arr_coc.reading.ocr.recognition import best_path, latin_mask, letter_mask

needs_ocr = pytest.mark.skipif(
    importlib.util.find_spec("rapidocr") is None or importlib.util.find_spec("onnxruntime") is None,
    reason="needs rapidocr and onnxruntime (the [text] extra)",
)
CHARS = ["blank", "a", "b", "c", "中", "文", "日", " "]  # blank first, space last, as the model's class list


def script_probs(seed: int, foreign: float) -> np.ndarray:
    """(4, 30, 8) probabilities, each line's frames read as a CJK class with probability ``foreign``."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(4, 30, len(CHARS))).astype(np.float32)
    pick = rng.random((4, 30)) < foreign
    logits[..., 4:7] -= 4.0  # CJK classes unlikely ...
    logits[..., 4] += np.where(pick, 10.0, 0.0)  # ... but where the line is Chinese
    logits[..., 0] += np.where(rng.random((4, 30)) < 0.4, 5.0, 0.0)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def test_latin_mask_keeps_blank_latin_and_space() -> None:
    assert latin_mask(CHARS).tolist() == [True, True, True, True, False, False, False, True]


@pytest.mark.parametrize("seed", range(4))
def test_a_latin_line_reads_over_the_latin_classes_alone(seed: int) -> None:
    probs = script_probs(seed, foreign=0.0)
    mask = latin_mask(CHARS)
    keep = np.flatnonzero(mask)
    got = best_path(probs, mask)
    sub = probs[..., keep]
    assert np.array_equal(got[..., 0], keep[sub.argmax(-1)].astype(np.float32))  # the sliced head's argmax
    want_conf = sub.max(-1) / sub.sum(-1)  # the sliced head's softmax: the kept probabilities renormalised
    np.testing.assert_allclose(got[..., 1], want_conf, rtol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_a_cjk_line_reads_over_every_class_and_the_device_agrees(seed: int) -> None:
    probs = script_probs(seed, foreign=0.5)
    mask = latin_mask(CHARS)
    got = best_path(probs, mask)
    assert np.array_equal(got, best_path(probs))  # every line has CJK frames: read as with charset="all"
    assert (got[..., 0] == 4).any()
    mixed = np.concatenate([probs[:2], script_probs(seed, 0.0)[:2]])  # two CJK lines, two Latin lines
    letters = letter_mask(CHARS)
    on_host = best_path(mixed, mask, letters=letters)
    on_device = ctc_best_path(torch.from_numpy(mixed), torch.from_numpy(mask), letters=torch.from_numpy(letters))
    on_device = on_device.numpy()
    assert np.array_equal(on_host, on_device)  # the torch backend decides each line as onnxruntime's path does
    assert np.array_equal(on_host[:2], best_path(mixed[:2]))


def test_one_stray_cjk_letter_does_not_switch_a_latin_line() -> None:
    probs = np.full((1, 8, len(CHARS)), 0.01, dtype=np.float32)
    for t, c in enumerate([1, 0, 2, 0, 4, 0, 3, 0]):  # "a b 中 c": one letter outside Latin of four
        probs[0, t, c] = 0.9
    probs[0, 4, 3] = 0.05  # the Latin reading of that frame: "c"
    mask, letters = latin_mask(CHARS), letter_mask(CHARS)
    assert best_path(probs, mask, letters=letters)[0, :, 0].tolist() == [1, 0, 2, 0, 3, 0, 3, 0]
    probs[0, 2, 5], probs[0, 2, 2] = 0.95, 0.01  # a second CJK letter: the line is read in its script
    assert best_path(probs, mask, letters=letters)[0, :, 0].tolist() == [1, 0, 5, 0, 4, 0, 3, 0]
    assert letter_mask(CHARS).tolist() == [False, True, True, True, True, True, True, False]


def test_one_cjk_letter_without_latin_letters_is_read_in_its_script() -> None:
    chars = ["blank", "9", "6", "3", "円", " "]  # "963円": one CJK letter, no Latin letter
    probs = np.full((1, 8, len(chars)), 0.01, dtype=np.float32)
    for t, c in enumerate([1, 0, 2, 0, 3, 0, 4, 0]):
        probs[0, t, c] = 0.9
    probs[0, 6, 1] = 0.05  # the Latin reading of the last glyph: "9"
    mask, letters = latin_mask(chars), letter_mask(chars)
    assert best_path(probs, mask, letters=letters)[0, :, 0].tolist() == [1, 0, 2, 0, 3, 0, 4, 0]
    on_device = ctc_best_path(torch.from_numpy(probs), torch.from_numpy(mask), letters=torch.from_numpy(letters))
    assert np.array_equal(on_device.numpy(), best_path(probs, mask, letters=letters))


def test_an_empty_line_stays_empty() -> None:
    probs = np.zeros((1, 10, len(CHARS)), dtype=np.float32)
    probs[..., 0] = 1.0
    assert (best_path(probs, latin_mask(CHARS))[..., 0] == 0).all()


def test_a_cjk_key_colon_splits_without_a_space() -> None:
    text = "金额：¥492.50"
    line = TextBox(text, (0.0, 0.0, 100.0, 10.0), 0.9)
    parts = split_after_colons(line, text, [(i + 0.5) / len(text) for i in range(len(text))])
    assert [p.text for p in parts] == ["金额：", "¥492.50"]
    assert split_after_colons(TextBox("12:30", line.box), "12:30", [0.1, 0.3, 0.5, 0.7, 0.9])[0].text == "12:30"


def test_charset_config_is_checked() -> None:
    assert OcrConfig().charset == "auto"
    with pytest.raises(ValueError, match="charset"):
        OcrConfig(charset="korean")
    with pytest.raises(ValueError, match="script_share"):
        OcrConfig(script_share=2.0)


def cjk_font(size: int):
    from PIL import ImageFont

    for path in (
        "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
        "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc",
    ):
        try:
            return ImageFont.truetype(path, size, index=2)
        except OSError:
            continue
    pytest.skip("no Noto CJK font (apt-get install fonts-noto-cjk)")


@needs_ocr
def test_the_shipped_model_reads_chinese_and_english_the_same_as_latin() -> None:
    from PIL import Image, ImageDraw

    from arr_coc.reading.ocr.reader import TextReader

    img = Image.new("RGB", (640, 150), "white")
    draw = ImageDraw.Draw(img)
    draw.text((20, 20), "合计金额：¥492.50", font=cjk_font(28), fill="black")
    draw.text((20, 80), "Invoice total: 492.50", font=cjk_font(28), fill="black")
    auto = [b.text for b in TextReader(cache_items=0).read(img)]
    latin = [b.text for b in TextReader(cache_items=0, charset="latin").read(img)]
    assert "合计金额：" in auto and "¥492.50" in auto
    assert [t for t in auto if t.isascii()] == [t for t in latin if t.isascii()]  # the English line as before
