"""Synthetic documents in Chinese, Japanese, German, French and Spanish, with exact answer boxes (issue 45).

The English generator (``docgen``) draws its pages in English; this one draws the same kinds of page in five more
languages, each with its own key vocabulary, question wording (a literal and a paraphrased form), number and date
formats (2026年11月28日, 28.11.2026, 1.234,56 €, ¥492.50) and fonts (Debian's Noto CJK for Chinese and Japanese;
Noto Sans, Liberation or DejaVu for the European languages). Kinds: ``receipt``, ``invoice``, ``form``, ``table``
and ``columns`` (two columns of running text, the fact in one sentence).

The pages are written as a realdocs-schema folder (``questions.jsonl`` + ``images/``), so every realdocs tool reads
them (``benchmarks/languages.py``, ``benchmarks/realdocs_recall.py --data``, ``arr-coc train --data``); each line
also carries ``language`` and ``source`` ("docgen-<language>"). Everything is deterministic in (language, kind,
index, seed).

Example:
    >>> pages = generate(["de"], n=1, kinds=["invoice"])
    >>> pages[0].language, pages[0].kind, len(pages[0].questions) >= 1
    ('de', 'invoice', True)
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

Box = tuple[int, int, int, int]
LANGUAGES: tuple[str, ...] = ("zh", "ja", "de", "fr", "es")
KINDS: tuple[str, ...] = ("receipt", "invoice", "form", "table", "columns")
_CJK_FONTS = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc",
)
_TTC_INDEX = {"ja": 0, "zh": 2}  # Noto CJK collections: JP first, SC third
_LATIN_FONTS = (
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
)

# concept -> (printed key, literal question, paraphrased question) per language
VOCAB: dict[str, dict[str, tuple[str, str, str]]] = {
    "zh": {
        "number": ("发票号码", "发票号码是多少？", "这张单据的编号是什么？"),
        "date": ("开票日期", "开票日期是哪一天？", "这张发票是哪一天开的？"),
        "due": ("付款期限", "付款期限是哪一天？", "最晚什么时候要付款？"),
        "customer": ("客户名称", "客户名称是什么？", "这张发票开给谁？"),
        "phone": ("联系电话", "联系电话是多少？", "应该拨打哪个号码？"),
        "subtotal": ("小计", "小计是多少？", "税前的金额是多少？"),
        "tax": ("税额", "税额是多少？", "交了多少税？"),
        "total": ("合计", "合计金额是多少？", "一共要付多少钱？"),
        "address": ("地址", "地址是什么？", "公司在哪里？"),
    },
    "ja": {
        "number": ("請求書番号", "請求書番号は何ですか？", "この書類の番号は？"),
        "date": ("発行日", "発行日はいつですか？", "この請求書はいつ出されましたか？"),
        "due": ("支払期限", "支払期限はいつですか？", "いつまでに払う必要がありますか？"),
        "customer": ("お客様名", "お客様名は何ですか？", "請求先は誰ですか？"),
        "phone": ("電話番号", "電話番号は何番ですか？", "どの番号に電話すればいいですか？"),
        "subtotal": ("小計", "小計はいくらですか？", "税抜きの金額はいくらですか？"),
        "tax": ("消費税", "消費税はいくらですか？", "税金はいくらかかりましたか？"),
        "total": ("合計", "合計金額はいくらですか？", "全部でいくら払いますか？"),
        "address": ("住所", "住所はどこですか？", "会社の所在地は？"),
    },
    "de": {
        "number": ("Rechnungsnummer", "Wie lautet die Rechnungsnummer?", "Welche Nummer hat dieses Dokument?"),
        "date": ("Rechnungsdatum", "Was ist das Rechnungsdatum?", "Wann wurde die Rechnung ausgestellt?"),
        "due": ("Fällig am", "Wann ist die Zahlung fällig?", "Bis wann muss bezahlt werden?"),
        "customer": ("Kunde", "Wer ist der Kunde?", "An wen ist die Rechnung gerichtet?"),
        "phone": ("Telefon", "Wie lautet die Telefonnummer?", "Welche Nummer kann man anrufen?"),
        "subtotal": ("Zwischensumme", "Wie hoch ist die Zwischensumme?", "Wie viel kostet es vor Steuern?"),
        "tax": ("MwSt.", "Wie viel MwSt. wurde berechnet?", "Wie hoch ist die Steuer?"),
        "total": ("Gesamtbetrag", "Wie hoch ist der Gesamtbetrag?", "Wie viel muss insgesamt gezahlt werden?"),
        "address": ("Anschrift", "Wie lautet die Anschrift?", "Wo sitzt die Firma?"),
    },
    "fr": {
        "number": ("N° de facture", "Quel est le numéro de facture ?", "Quelle est la référence du document ?"),
        "date": ("Date de facture", "Quelle est la date de facture ?", "Quand la facture a-t-elle été émise ?"),
        "due": ("Échéance", "Quelle est la date d'échéance ?", "Avant quand faut-il payer ?"),
        "customer": ("Client", "Qui est le client ?", "À qui la facture est-elle adressée ?"),
        "phone": ("Téléphone", "Quel est le numéro de téléphone ?", "Quel numéro faut-il appeler ?"),
        "subtotal": ("Sous-total", "Quel est le sous-total ?", "Combien avant les taxes ?"),
        "tax": ("TVA", "Quel est le montant de la TVA ?", "Combien de taxes ont été payées ?"),
        "total": ("Montant total", "Quel est le montant total ?", "Combien faut-il payer en tout ?"),
        "address": ("Adresse", "Quelle est l'adresse ?", "Où se trouve l'entreprise ?"),
    },
    "es": {
        "number": ("Número de factura", "¿Cuál es el número de factura?", "¿Qué referencia tiene el documento?"),
        "date": ("Fecha de emisión", "¿Cuál es la fecha de emisión?", "¿Cuándo se emitió la factura?"),
        "due": ("Vencimiento", "¿Cuándo es el vencimiento?", "¿Hasta cuándo hay que pagar?"),
        "customer": ("Cliente", "¿Quién es el cliente?", "¿A quién va dirigida la factura?"),
        "phone": ("Teléfono", "¿Cuál es el teléfono?", "¿A qué número hay que llamar?"),
        "subtotal": ("Subtotal", "¿Cuál es el subtotal?", "¿Cuánto es antes de impuestos?"),
        "tax": ("IVA", "¿Cuánto es el IVA?", "¿Cuántos impuestos se pagaron?"),
        "total": ("Importe total", "¿Cuál es el importe total?", "¿Cuánto hay que pagar en total?"),
        "address": ("Dirección", "¿Cuál es la dirección?", "¿Dónde está la empresa?"),
    },
}
TITLES = {
    "zh": ("发票", "收据", "申请表", "价格表"),
    "ja": ("請求書", "領収書", "申込書", "料金表"),
    "de": ("Rechnung", "Kassenbon", "Antragsformular", "Preisliste"),
    "fr": ("Facture", "Ticket", "Formulaire", "Tarifs"),
    "es": ("Factura", "Recibo", "Formulario", "Tarifas"),
}
SHOPS = {
    "zh": ("北京星辰科技有限公司", "上海东方贸易有限公司", "广州南方食品商店", "深圳华美超市"),
    "ja": ("東京さくら商事株式会社", "大阪みなと食品店", "京都文具センター", "横浜グリーンマート"),
    "de": ("Müller & Söhne GmbH", "Bäckerei Schönfeld", "Großhandel Weiß KG", "Buchhandlung Köhler"),
    "fr": ("Boulangerie Lefèvre", "Société Générale d'Électricité", "Café des Arts SARL", "Librairie Bérénice"),
    "es": ("Panadería Muñoz S.L.", "Ferretería García", "Librería Peñalver", "Comercial Ibáñez S.A."),
}
PEOPLE = {
    "zh": ("王小明", "李华", "张伟", "刘洋", "陈静"),
    "ja": ("山田太郎", "佐藤花子", "鈴木一郎", "高橋美咲", "田中健"),
    "de": ("Jürgen Groß", "Sabine Köhler", "Björn Weiß", "Anna Schäfer", "Lukas Müller"),
    "fr": ("Hélène Dubois", "François Lefèvre", "Chloé Martin", "Jérôme Petit", "Noémie Roux"),
    "es": ("José Núñez", "María Pérez", "Begoña Ruiz", "Íñigo López", "Lucía Gómez"),
}
ITEMS = {
    "zh": ("办公用品", "打印纸", "墨盒", "订书机", "文件夹", "笔记本", "白板笔", "计算器"),
    "ja": ("コピー用紙", "ボールペン", "ノート", "ホチキス", "ファイル", "電卓", "付箋", "封筒"),
    "de": (
        "Druckerpapier",
        "Kugelschreiber",
        "Ordner",
        "Heftgerät",
        "Notizblock",
        "Taschenrechner",
        "Tinte",
        "Briefumschläge",
    ),
    "fr": ("Papier", "Stylos", "Classeur", "Agrafeuse", "Bloc-notes", "Calculatrice", "Encre", "Enveloppes"),
    "es": ("Papel", "Bolígrafos", "Carpeta", "Grapadora", "Cuaderno", "Calculadora", "Tinta", "Sobres"),
}
CITIES = {
    "zh": ("北京市海淀区中关村大街1号", "上海市浦东新区世纪大道88号", "广州市天河区体育西路5号"),
    "ja": ("東京都千代田区丸の内1-1", "大阪府大阪市北区梅田2-3", "京都府京都市中京区三条4"),
    "de": ("Hauptstraße 12, 80331 München", "Bahnhofstraße 5, 50667 Köln", "Schloßallee 3, 10115 Berlin"),
    "fr": ("12 rue de la Paix, 75002 Paris", "5 avenue Jean-Jaurès, 69007 Lyon", "3 place Bellecour, 69002 Lyon"),
    "es": ("Calle Mayor 12, 28013 Madrid", "Avenida Diagonal 5, 08019 Barcelona", "Plaza España 3, 41013 Sevilla"),
}
# table questions: (row header, column header) -> "What is <col> of <row>?"
TABLE_Q = {
    "zh": ("{row}的{col}是多少？", ("商品", "数量", "单价", "金额")),
    "ja": ("{row}の{col}はいくらですか？", ("品名", "数量", "単価", "金額")),
    "de": ("Was ist der {col} für {row}?", ("Artikel", "Menge", "Einzelpreis", "Betrag")),
    "fr": ("Quel est le {col} pour {row} ?", ("Article", "Quantité", "Prix unitaire", "Montant")),
    "es": ("¿Cuál es el {col} de {row}?", ("Artículo", "Cantidad", "Precio unitario", "Importe")),
}
# running text: a fact about a town, stated in one sentence, asked about it
FACTS = {
    "zh": (
        "{town}的人口约为{n}万人。",
        "{town}的人口是多少？",
        ("杭州", "苏州", "南京", "成都", "武汉", "西安", "重庆", "天津"),
    ),
    "ja": (
        "{town}の人口は約{n}万人です。",
        "{town}の人口は何人ですか？",
        ("札幌", "仙台", "名古屋", "神戸", "広島", "福岡", "金沢", "熊本"),
    ),
    "de": (
        "{town} hat etwa {n} Tausend Einwohner.",
        "Wie viele Einwohner hat {town}?",
        ("Lübeck", "Göttingen", "Würzburg", "Tübingen", "Münster", "Düsseldorf", "Nürnberg", "Fürth"),
    ),
    "fr": (
        "{town} compte environ {n} mille habitants.",
        "Combien d'habitants compte {town} ?",
        ("Besançon", "Orléans", "Nîmes", "Angoulême", "Périgueux", "Béziers", "Chambéry", "Évreux"),
    ),
    "es": (
        "{town} tiene unos {n} mil habitantes.",
        "¿Cuántos habitantes tiene {town}?",
        ("Córdoba", "Málaga", "Cádiz", "León", "Logroño", "Almería", "Ávila", "Cáceres"),
    ),
}
FILLER = {
    "zh": (
        "本地区气候温和，四季分明。",
        "当地的传统手工艺品很受欢迎。",
        "这里的交通十分便利。",
        "每年春天都会举办文化节。",
    ),
    "ja": (
        "この地域の気候は穏やかです。",
        "伝統的な工芸品が有名です。",
        "交通の便がとても良いです。",
        "毎年春に祭りが開かれます。",
    ),
    "de": (
        "Das Klima ist mild und angenehm.",
        "Die Altstadt ist sehenswert.",
        "Der Bahnhof liegt zentral.",
        "Im Frühjahr gibt es ein Stadtfest.",
    ),
    "fr": (
        "Le climat y est doux et agréable.",
        "La vieille ville mérite une visite.",
        "La gare est très centrale.",
        "Une fête a lieu chaque printemps.",
    ),
    "es": (
        "El clima es suave y agradable.",
        "El casco antiguo merece una visita.",
        "La estación está en el centro.",
        "Cada primavera hay una fiesta.",
    ),
}


@dataclass
class LangPage:
    """One generated page and its questions (realdocs schema, boxes in the page's pixels)."""

    id: str  # "<language>/<kind>/<index>"
    language: str
    kind: str
    image: Image.Image
    questions: list[dict] = field(default_factory=list)  # {"query", "answer", "boxes", "paraphrased", "template"}


@lru_cache(maxsize=32)
def _font(language: str, size: int, variant: int = 0) -> ImageFont.FreeTypeFont:
    if language in _TTC_INDEX:
        paths = [p for p in _CJK_FONTS if os.path.isfile(p)]
        if not paths:
            raise FileNotFoundError("Chinese and Japanese pages need Noto CJK (apt-get install fonts-noto-cjk)")
        return ImageFont.truetype(paths[variant % len(paths)], size, index=_TTC_INDEX[language])
    paths = [p for p in _LATIN_FONTS if os.path.isfile(p)]
    if not paths:
        return ImageFont.load_default(size)  # type: ignore[return-value]
    return ImageFont.truetype(paths[variant % len(paths)], size)


def _money(language: str, value: float) -> str:
    if language == "zh":
        return f"¥{value:,.2f}"
    if language == "ja":
        return f"{round(value):,}円"
    s = f"{value:,.2f}".replace(",", " ").replace(".", ",").replace(" ", ".")  # 1.234,56
    return f"{s} €"


def _date(language: str, rng: random.Random) -> str:
    y, m, d = rng.randint(2019, 2026), rng.randint(1, 12), rng.randint(1, 28)
    if language in ("zh", "ja"):
        return f"{y}年{m}月{d}日"
    if language == "de":
        return f"{d:02d}.{m:02d}.{y}"
    return f"{d:02d}/{m:02d}/{y}"


def _phone(language: str, rng: random.Random) -> str:
    a, b = rng.randint(1000, 9999), rng.randint(1000, 9999)
    return {
        "zh": f"010-{a}{b}",
        "ja": f"03-{a}-{b}",
        "de": f"+49 89 {a} {b}",
        "fr": f"01 {a // 100} {a % 100:02d} {b // 100} {b % 100:02d}",
        "es": f"+34 91 {a} {b}",
    }[language]


class _Page:
    """A white page, text drawn in one language, each answer's box recorded as it is drawn."""

    def __init__(self, language: str, rng: random.Random, size: tuple[int, int] = (900, 1150)) -> None:
        self.language, self.rng = language, rng
        self.image = Image.new("RGB", size, (255, 255, 255))
        self.draw = ImageDraw.Draw(self.image)
        self.variant = rng.randint(0, 3)

    def text(self, xy: tuple[int, int], text: str, size: int = 22) -> Box:
        font = _font(self.language, size, self.variant)
        self.draw.text(xy, text, font=font, fill=(20, 20, 20))
        x0, y0, x1, y1 = self.draw.textbbox(xy, text, font=font)
        return int(x0), int(y0), int(x1), int(y1)

    def width(self, text: str, size: int = 22) -> int:
        x0, _, x1, _ = self.draw.textbbox((0, 0), text, font=_font(self.language, size, self.variant))
        return int(x1 - x0)


def _fine_print(p: _Page, y: int, size: int = 18) -> None:
    """Fill the page below ``y`` with lines of running text (terms, notes): distractors, so the answer is a small
    share of the page's text, as on real documents (a sparse page is kept whole at 11.1% whatever the question)."""
    w, h = p.image.size
    filler = list(FILLER[p.language])
    y += 30
    while y < h - 40:
        line = ""
        while True:
            nxt = (line + " " if line and p.language not in ("zh", "ja") else line) + p.rng.choice(filler)
            if p.width(nxt, size) > w - 100:
                break
            line = nxt
        p.text((50, y), line, size)
        y += size + 12


def _ask(page: LangPage, concept: str, answer: str, box: Box, para: bool) -> None:
    _, literal, paraphrased = VOCAB[page.language][concept]
    page.questions.append(
        {
            "query": paraphrased if para else literal,
            "answer": answer,
            "boxes": [list(box)],
            "paraphrased": para,
            "template": f"{page.kind}_{concept}",
        }
    )


def _key_values(p: _Page, rng: random.Random, concepts: Sequence[str], x: int, y: int, sep: str, gap: int = 40):
    """Draw ``key: value`` rows; (concept, value, value box) per row."""
    out = []
    for c in concepts:
        key = VOCAB[p.language][c][0]
        value = {
            "number": f"{rng.choice('ABCDFK')}{rng.randint(10000, 99999)}",
            "date": _date(p.language, rng),
            "due": _date(p.language, rng),
            "customer": rng.choice(PEOPLE[p.language]),
            "phone": _phone(p.language, rng),
            "address": rng.choice(CITIES[p.language]),
        }.get(c, _money(p.language, rng.uniform(5, 4000)))
        label = f"{key}{sep}"
        p.text((x, y), label)
        vx = x + p.width(label) + 12
        out.append((c, value, p.text((vx, y), value)))
        y += gap
    return out, y


def _items(p: _Page, rng: random.Random, y: int, n: int, cols: Sequence[int]) -> tuple[list, int, float]:
    rows, total = [], 0.0
    for name in rng.sample(ITEMS[p.language], n):
        qty, unit = rng.randint(1, 12), rng.uniform(1, 90)
        total += qty * unit
        cells = [name, str(qty), _money(p.language, unit), _money(p.language, qty * unit)]
        rows.append([(c, p.text((x, y), c)) for c, x in zip(cells, cols, strict=True)])
        y += 34
    return rows, y, total


def _invoice(page: LangPage, rng: random.Random, para: bool) -> None:
    p = _Page(page.language, rng)
    sep = "：" if page.language in ("zh", "ja") else ":"
    p.text((60, 40), rng.choice(SHOPS[page.language]), 30)
    p.text((620, 40), TITLES[page.language][0], 34)
    fields, y = _key_values(p, rng, ["number", "date", "due", "customer", "phone"], 60, 130, sep)
    header = TABLE_Q[page.language][1]
    cols = (60, 360, 520, 700)
    for h, x in zip(header, cols, strict=True):
        p.text((x, y + 20), h)
    _, y, total = _items(p, rng, y + 64, rng.randint(3, 6), cols)
    tax = total * 0.1
    sums = []
    for c, v in (("subtotal", total), ("tax", tax), ("total", total + tax)):
        key = VOCAB[page.language][c][0] + sep
        p.text((480, y + 20), key)
        sums.append((c, _money(page.language, v), p.text((700, y + 20), _money(page.language, v))))
        y += 38
    _fine_print(p, y + 20)
    page.image = p.image
    for c, v, box in rng.sample(fields, 2) + [sums[2]]:
        _ask(page, c, v, box, para)


def _receipt(page: LangPage, rng: random.Random, para: bool) -> None:
    p = _Page(page.language, rng, (640, 1000))
    sep = "：" if page.language in ("zh", "ja") else ":"
    shop = rng.choice(SHOPS[page.language])
    p.text((40, 30), shop, 26)
    p.text((40, 72), rng.choice(CITIES[page.language]), 18)
    fields, y = _key_values(p, rng, ["date", "phone"], 40, 110, sep, 34)
    _, y, total = _items(p, rng, y + 20, rng.randint(4, 7), (40, 260, 340, 470))
    tax = total * 0.08
    sums = []
    for c, v in (("subtotal", total), ("tax", tax), ("total", total + tax)):
        p.text((260, y + 16), VOCAB[page.language][c][0] + sep)
        sums.append((c, _money(page.language, v), p.text((470, y + 16), _money(page.language, v))))
        y += 34
    _fine_print(p, y + 16, 16)
    page.image = p.image
    for c, v, box in [sums[2], fields[0], sums[1]]:
        _ask(page, c, v, box, para)


def _form(page: LangPage, rng: random.Random, para: bool) -> None:
    p = _Page(page.language, rng)
    sep = "：" if page.language in ("zh", "ja") else ":"
    p.text((60, 40), TITLES[page.language][2], 32)
    concepts = ["customer", "phone", "address", "date", "number"]
    rng.shuffle(concepts)
    left, _ = _key_values(p, rng, concepts[:3], 60, 140, sep, 60)
    right, y = _key_values(p, rng, concepts[3:], 60, 340, sep, 60)
    _fine_print(p, y)
    page.image = p.image
    for c, v, box in rng.sample(left + right, 3):
        _ask(page, c, v, box, para)


def _table(page: LangPage, rng: random.Random, para: bool) -> None:
    p = _Page(page.language, rng)
    p.text((60, 40), TITLES[page.language][3], 32)
    header = TABLE_Q[page.language][1]
    cols = (60, 360, 520, 700)
    for h, x in zip(header, cols, strict=True):
        p.text((x, 120), h)
    rows, y, _ = _items(p, rng, 170, rng.randint(6, 8), cols)
    _fine_print(p, y)
    page.image = p.image
    for r in rng.sample(rows, 3):
        j = rng.randint(1, 3)
        q = TABLE_Q[page.language][0].format(row=r[0][0], col=header[j])
        page.questions.append(
            {"query": q, "answer": r[j][0], "boxes": [list(r[j][1])], "paraphrased": False, "template": f"table_{j}"}
        )


def _columns(page: LangPage, rng: random.Random, para: bool) -> None:
    p = _Page(page.language, rng)
    fact, question, towns = FACTS[page.language]
    chosen = rng.sample(towns, 6)
    lines = []
    for town in chosen:
        lines.append((town, fact.format(town=town, n=rng.randint(12, 950))))
        lines.extend((None, f) for f in rng.sample(FILLER[page.language], 2))
    x, y = 50, 60
    facts = []
    for i, (town, sentence) in enumerate(lines):
        if i == len(lines) // 2:
            x, y = 470, 60  # the second column
        box = p.text((x, y), sentence, 19 if page.language in ("zh", "ja") else 17)
        if town is not None:
            facts.append((town, sentence, box))
        y += 40
    page.image = p.image
    for town, sentence, box in rng.sample(facts, 3):
        page.questions.append(
            {
                "query": question.format(town=town),
                "answer": sentence,
                "boxes": [list(box)],
                "paraphrased": False,
                "template": "columns_fact",
            }
        )


def dense_page(language: str = "zh", rows: int = 24, seed: int = 0) -> Image.Image:
    """A dense invoice in ``language`` (about as many text lines as the English example invoice's 67): fields, a
    ``rows``-row item table and its sums. The CJK page of ``benchmarks/stages.py --language zh``."""
    rng = random.Random(f"dense/{language}/{seed}")
    p = _Page(language, rng, (1000, 1400))
    sep = "：" if language in ("zh", "ja") else ":"
    p.text((60, 40), SHOPS[language][0], 30)
    p.text((700, 40), TITLES[language][0], 34)
    _, y = _key_values(p, rng, ["number", "date", "due", "customer", "phone", "address"], 60, 110, sep, 36)
    cols = (60, 400, 580, 780)
    for h, x in zip(TABLE_Q[language][1], cols, strict=True):
        p.text((x, y + 10), h)
    y += 50
    total = 0.0
    for _ in range(rows):
        qty, unit = rng.randint(1, 12), rng.uniform(1, 90)
        total += qty * unit
        for c, x in zip(
            (rng.choice(ITEMS[language]), str(qty), _money(language, unit), _money(language, qty * unit)),
            cols,
            strict=True,
        ):
            p.text((x, y), c, 20)
        y += 30
    for c, v in (("subtotal", total), ("tax", total * 0.1), ("total", total * 1.1)):
        p.text((580, y + 12), VOCAB[language][c][0] + sep)
        p.text((780, y + 12), _money(language, v))
        y += 34
    return p.image


_BUILDERS = {"receipt": _receipt, "invoice": _invoice, "form": _form, "table": _table, "columns": _columns}


def make_page(language: str, kind: str, index: int, seed: int = 0) -> LangPage:
    """One page of ``kind`` in ``language`` (deterministic in its arguments); a third of them paraphrased."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    if kind not in _BUILDERS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    rng = random.Random(f"{language}/{kind}/{index}/{seed}")
    page = LangPage(f"{language}/{kind}/{index}", language, kind, Image.new("RGB", (1, 1)))
    _BUILDERS[kind](page, rng, para=index % 3 == 1)
    return page


def generate(
    languages: Sequence[str] = LANGUAGES, n: int = 4, seed: int = 0, kinds: Sequence[str] = KINDS
) -> list[LangPage]:
    """``n`` pages of every kind in every language."""
    return [make_page(lang, kind, i, seed) for lang in languages for kind in kinds for i in range(n)]


def write_folder(pages: Sequence[LangPage], out: str | Path) -> Path:
    """Write ``pages`` as a realdocs-schema folder: ``out/questions.jsonl`` and ``out/images/*.png``."""
    out = Path(out)
    (out / "images").mkdir(parents=True, exist_ok=True)
    lines = []
    for page in pages:
        name = page.id.replace("/", "_")
        page.image.save(out / "images" / f"{name}.png")
        for k, q in enumerate(page.questions):
            lines.append(
                json.dumps(
                    {
                        "id": f"{name}_q{k}",
                        "query": q["query"],
                        "answer": q["answer"],
                        "boxes": q["boxes"],
                        "image": f"images/{name}.png",
                        "doc_type": page.kind,
                        "paraphrased": q["paraphrased"],
                        "template": q["template"],
                        "language": page.language,
                        "source": f"docgen-{page.language}",
                        "image_size": list(page.image.size),
                    },
                    ensure_ascii=False,
                )
            )
    (out / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out
