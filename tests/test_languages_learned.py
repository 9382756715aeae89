"""Issue 45, item 4: the learned box scorer's features do not assume English, and ``arr-coc train`` takes a
multilingual realdocs-schema file. Also the quotation rule of foreign questions (``matching.quotes``).

Nothing here needs OCR models, MiniLM or ../shared: pages are blank images whose OCR boxes are written into the
OCR cache beforehand (``--ocr-cache``), so training reads them as a recognised page."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from arr_coc.reading import QueryMatcher, ReadingConfig, TextBox
from arr_coc.reading.matching.learned import FEATURES, box_features
from arr_coc.reading.matching.lexical import foreign_words, lexical_scores
from arr_coc.reading.matching.quotes import inline_values, quotations, quote_scores
from arr_coc.reading.matching.script_neutral import cased_share, cjk_org, spaced, word_count
from arr_coc.training import main as train_main
from arr_coc.training.records import DiskOcrCache

ENGLISH = ["Total due: $1,234.00", "INVOICE No. 00123456", "Ms Elena Albers", "Größe 12", "Tel: +1 (555) 010-9999", ""]


def test_script_neutral_helpers_are_the_old_values_on_english() -> None:
    for t in ENGLISH:
        letters = [c for c in t if c.isalpha()]
        assert word_count(t) == len(t.split())
        assert cased_share(t) == sum(c.isupper() for c in letters) / max(len(letters), 1)
        assert spaced(t) == t
        assert not cjk_org(t)


def test_script_neutral_helpers_on_chinese_and_japanese() -> None:
    assert word_count("合计金额") == 2.0  # a CJK run: its characters / 2
    assert word_count("发票号码 No. 12") == 2.0 + 2
    assert cased_share("合计") == 0.0 and cased_share("合计 ABC") == 1.0  # Han has no case
    assert spaced("号码12345678") == "号码 12345678"
    assert cjk_org("北京星光科技有限公司") and cjk_org("山田商事株式会社")


def _feature(rows: np.ndarray, name: str) -> np.ndarray:
    return rows[:, FEATURES.index(name)]


def test_page_features_read_chinese_values() -> None:
    boxes = [
        TextBox("发票号码12345678", (10.0, 10.0, 200.0, 30.0)),
        TextBox("北京星光科技有限公司", (10.0, 40.0, 200.0, 60.0)),
        TextBox("日期2026-11-28", (10.0, 70.0, 200.0, 90.0)),
        TextBox("合计金额", (10.0, 100.0, 200.0, 120.0)),
    ]
    rows = box_features(QueryMatcher(ReadingConfig(), semantic=False), boxes, "发票号码是多少？")
    assert _feature(rows, "digit_run")[0] == 1.0  # no \b between 码 and 1: the Han-digit edge is spaced first
    assert _feature(rows, "is_org")[1] == 1.0
    assert _feature(rows, "is_date")[2] == 1.0
    assert _feature(rows, "n_words")[3] == pytest.approx(np.log1p(2.0))
    assert _feature(rows, "upper_share")[3] == 0.0


def test_quotations_and_their_boxes() -> None:
    q = "「す。ここでは」の後に何と書いてありますか？"
    assert foreign_words(q)
    assert quotations(q) == (["す。ここでは"], [])
    texts = ["これはペンです。ここでは", "ここは東京です"]
    assert quote_scores(texts, q).tolist() == pytest.approx([1.0, 1 / 9])
    assert lexical_scores(texts, q, ReadingConfig().lexical)[0] == 1.0  # a hiragana quotation: no token, found
    # the German quotation marks make the question foreign (its words alone do not: "Was", "in" are English too)
    de = "Was steht nach „Vermeiden Sie, in“?"
    assert foreign_words(de)
    lines = ["Vermeiden Sie, in Shell-Skripten zu verwenden,", "Vermeiden:", "Vermeiden Sie, in"]
    assert inline_values(lines, de).tolist() == [1.0, 0.0, 0.0]  # the quotation with more after it: the answer
    assert inline_values(["x"], "What is the total?") is None  # English questions are never read this way
    # a CJK quotation held by most of its bigrams counts only where no box holds it whole (an OCR misreading)
    zh = "「正则表达式被」后面写的是什么？"
    lines = ["正则表达式被使用在许多文本处理工具中。", "正则表达式描述要匹配的模式"]
    assert inline_values(lines, zh).tolist() == [1.0, 0.0]
    assert inline_values(lines[1:], zh).tolist() == [1.0]  # 4 of its 5 bigrams, and no box holds it whole


def test_english_questions_skip_the_quotation_rule() -> None:
    texts = ['the "Total" row', "Total: 12.00"]
    q = 'What does "Total" say?'
    assert not foreign_words(q)
    m = QueryMatcher(ReadingConfig(), semantic=False)
    boxes = [TextBox(t, (0.0, 30.0 * i, 100.0, 30.0 * i + 20)) for i, t in enumerate(texts)]
    parts = m.box_parts(boxes, q)
    assert parts["values"][0] < 1.0  # not made the answer by the quotation


LANGS = {
    "zh": ("合计金额是多少？", "合计", "{:.2f}元", ["商品", "数量", "单价", "备注"]),
    "ja": ("合計金額はいくらですか？", "合計", "{:.0f}円", ["商品", "数量", "単価", "備考"]),
    "de": ("Wie hoch ist der Gesamtbetrag?", "Gesamtbetrag", "{:.2f} €", ["Artikel", "Menge", "Preis", "Notiz"]),
    "en": ("What is the total amount?", "Total amount", "${:.2f}", ["Item", "Qty", "Price", "Note"]),
}


def _page(folder: Path, cache: DiskOcrCache, lang: str, i: int, rng: random.Random) -> dict:
    """A receipt page in ``lang``: a blank image, its boxes written into the OCR cache; the answer is the total."""
    question, key, money, words = LANGS[lang]
    img = Image.new("RGB", (280, 392), (255, 255, 255))
    img.putpixel((0, 0), (i, len(lang), ord(lang[0])))  # a distinct page
    name = f"images/{lang}_{i}.png"
    img.save(folder / name)
    boxes, y = [], 10.0
    for _ in range(rng.randint(4, 8)):
        boxes.append([f"{rng.choice(words)} {rng.randint(1, 9)}", [10.0, y, 150.0, y + 16], 0.99])
        boxes.append([money.format(rng.uniform(1, 99)), [180.0, y, 270.0, y + 16], 0.99])
        y += 22
    total = [money.format(rng.uniform(100, 999)), [180.0, y + 10, 270.0, y + 26], 0.99]
    boxes += [[key, [10.0, y + 10, 150.0, y + 26], 0.99], total]
    rng.shuffle(boxes)
    path = cache.path(img.convert("RGB"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(boxes))
    return {"id": f"{lang}_{i}", "query": question, "answer": total[0], "boxes": [total[1]], "image": name,
            "image_size": [280, 392], "doc_type": "receipt", "language": lang, "source": f"synth-{lang}"}  # fmt: skip


def test_arr_coc_train_takes_a_multilingual_realdocs_file(tmp_path: Path) -> None:
    data, cache_dir, out = tmp_path / "data", tmp_path / "ocr", tmp_path / "run"
    (data / "images").mkdir(parents=True)
    cache, rng = DiskOcrCache(cache_dir), random.Random(0)
    lines = [_page(data, cache, lang, i, rng) for lang in LANGS for i in range(4)]
    (data / "questions.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in lines))
    argv = ["--data", str(data), "--docgen-dev", "0", "--ocr-cache", str(cache_dir), "--cached-only", "--out",
            str(out), "--folds", "2", "--inner-folds", "2", "--epochs", "2", "--family", "mlp16"]  # fmt: skip
    assert train_main(argv) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert (out / "model.safetensors").is_file() and (out / "scorer.json").is_file()
    assert metrics["n_questions"] == 16 and metrics["n_sources"] == 4  # every language's pages, one source each
