"""Synthetic documents with exact answer boxes, for ARR-COC-VIS's evidence-recall benchmark.

Why: to measure whether an allocator keeps the visual tokens that hold a question's answer we need images whose
answer location is known to the pixel. This module draws such documents with PIL and records the box of the
answer text as it is drawn (``ImageDraw.textbbox``), then applies a light "scanned" look (rotation of about a
degree, blur, noise, JPEG) and carries the box through the rotation.

Kinds (``KINDS``): receipts, invoices, key-value forms, tables (row x column question), bar charts with value
labels, multi-column text pages (a fact stated in one sentence) and text on photos (a sign or caption drawn on a
scikit-image sample photo). Every document has distractors: fields with similar keys (Subtotal / Total,
Ship to / Bill to, Due date / Date), other facts of the same shape, other bars and cells. About a third of the
questions are paraphrased so they do not repeat the key's words ("How much must be paid?" for "Amount due").

Two splits:
    * ``"dev"``: the templates, fonts (DejaVu Sans family) and key vocabulary an engine may be tuned on.
    * ``"test"``: held out. Different layouts, different key vocabulary and question wording, different photos
      and different fonts: Liberation / Noto when installed (``apt-get install fonts-liberation fonts-noto-core``),
      otherwise DejaVu Serif / Mono, which the dev split never uses (``held_out_fonts()`` says which). The test
      split also holds one real scan, ``skimage.data.page()``, with a hand-checked answer box (kind
      ``"real_scan"``).

Everything is deterministic: a sample depends only on (split, kind, index, seed).

Example:
    >>> samples = generate("dev", n=1, seed=0)
    >>> sorted({s.kind for s in samples}) == sorted(KINDS)
    True
"""

from __future__ import annotations

import io
import math
import os
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

Box = tuple[int, int, int, int]  # (x0, y0, x1, y1) in original image pixels, x1/y1 exclusive

KINDS: tuple[str, ...] = (
    "receipt",
    "invoice",
    "form",
    "table",
    "bar_chart",
    "text_page",
    "photo_text",
    "page_layout",
    "running_text",
    "line_chart",
)
CATEGORIES: dict[str, str] = {  # DocVQA-style question category of each kind
    "receipt": "form",
    "invoice": "form",
    "form": "form",
    "table": "table/list",
    "bar_chart": "figure/chart",
    "line_chart": "figure/chart",
    "text_page": "running text",
    "running_text": "running text",
    "page_layout": "layout",
    "photo_text": "photo",
    "real_scan": "running text",
}
REAL_SCAN_KIND = "real_scan"
SPLITS: tuple[str, ...] = ("dev", "test")
PARAPHRASE_EVERY = 3  # sample i of a kind is paraphrased when i % 3 == 1: a third of the questions
MAX_ATTEMPTS = 50  # a draw whose answer is not unique in the document is redrawn with the next attempt number

FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", os.path.expanduser("~/.fonts"))
DEV_FONTS = (
    "DejaVuSans.ttf",
    "DejaVuSans-Bold.ttf",
    "DejaVuSansCondensed.ttf",
    "DejaVuSansCondensed-Bold.ttf",
    "DejaVuSans-Oblique.ttf",
)
TEST_FONTS = (
    "LiberationSans-Regular.ttf",
    "LiberationSerif-Regular.ttf",
    "LiberationMono-Regular.ttf",
    "LiberationSansNarrow-Regular.ttf",
    "LiberationSans-Bold.ttf",
    "NotoSans-Regular.ttf",
    "NotoSerif-Regular.ttf",
    "NotoSerif-Bold.ttf",
)
TEST_FALLBACK_FONTS = (  # DejaVu faces the dev split never uses
    "DejaVuSerif.ttf",
    "DejaVuSerif-Bold.ttf",
    "DejaVuSerifCondensed.ttf",
    "DejaVuSansMono.ttf",
    "DejaVuSansMono-Bold.ttf",
)

# The real scan: skimage.data.page() (384 x 191). Box found by inspecting the image (ink of the code line
# ">>> markers = np.zeros_like(coins)", right-hand side only; the line runs into the bottom edge).
REAL_SCAN_QUESTION = "In the code example, what is assigned to markers?"
REAL_SCAN_ANSWER = "np.zeros_like(coins)"
REAL_SCAN_BOX: Box = (105, 174, 241, 191)


@dataclass(frozen=True)
class Sample:
    """One document, one question, and where the answer is."""

    id: str  # "<split>/<kind>/<index>"
    kind: str  # one of KINDS or REAL_SCAN_KIND
    image: Image.Image  # RGB
    query: str
    answer: str
    answer_box: Box  # original pixels, x1/y1 exclusive, inside the image
    paraphrased: bool  # the question avoids the key's words

    @property
    def category(self) -> str:
        """DocVQA-style category: form, table/list, layout, running text, figure/chart, photo."""
        return CATEGORIES[self.kind]


# --------------------------------------------------------------------------------------------------- fonts


@lru_cache(maxsize=1)
def _installed_fonts() -> dict[str, str]:
    """File name -> path of every TrueType/OpenType font under the usual font folders."""
    found: dict[str, str] = {}
    for root in FONT_DIRS:
        for dirpath, _, files in os.walk(root):
            for name in files:
                if name.lower().endswith((".ttf", ".otf")):
                    found.setdefault(name, os.path.join(dirpath, name))
    return found


def held_out_fonts() -> tuple[list[str], bool]:
    """The test split's font files and whether they are the preferred Liberation/Noto set.

    Returns:
        (paths, preferred): ``preferred`` is False when Liberation/Noto are absent and the DejaVu Serif/Mono
        fallback (still unused by the dev split) is used instead.
    """
    fonts = _installed_fonts()
    preferred = [fonts[n] for n in TEST_FONTS if n in fonts]
    if len(preferred) >= 3:
        return preferred, True
    return [fonts[n] for n in TEST_FALLBACK_FONTS if n in fonts], False


def font_files(split: str) -> list[str]:
    """Font files a split draws with (may be empty: then PIL's built-in font is used)."""
    if split == "dev":
        fonts = _installed_fonts()
        return [fonts[n] for n in DEV_FONTS if n in fonts]
    return held_out_fonts()[0]


@lru_cache(maxsize=256)
def _font(path: str, size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    if path:
        return ImageFont.truetype(path, size)
    return ImageFont.load_default(size)


class _Fonts:
    """A sample's fonts: a regular and a bold face drawn from its split's set."""

    def __init__(self, rng: random.Random, split: str) -> None:
        files = font_files(split) or [""]
        self.regular = rng.choice(files)
        bolds = [f for f in files if "Bold" in f] or files
        self.bold_path = rng.choice(bolds)

    def reg(self, size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
        return _font(self.regular, int(size))

    def bold(self, size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
        return _font(self.bold_path, int(size))


# --------------------------------------------------------------------------------------------------- canvas


@dataclass
class _Canvas:
    """An image being drawn, with every text item and its box recorded."""

    image: Image.Image
    items: list[tuple[str, Box]] = field(default_factory=list)

    @classmethod
    def blank(cls, width: int, height: int, paper: tuple[int, int, int]) -> _Canvas:
        return cls(Image.new("RGB", (width, height), paper))

    @property
    def draw(self) -> ImageDraw.ImageDraw:
        return ImageDraw.Draw(self.image)

    @property
    def size(self) -> tuple[int, int]:
        return self.image.size

    def text(
        self,
        xy: tuple[float, float],
        s: str,
        font: ImageFont.FreeTypeFont | ImageFont.ImageFont,
        fill: tuple[int, int, int] = (25, 25, 25),
        anchor: str = "la",
    ) -> Box:
        """Draw ``s`` and return its ink box (integers, exclusive ends)."""
        draw = self.draw
        x0, y0, x1, y1 = draw.textbbox(xy, s, font=font, anchor=anchor)
        draw.text(xy, s, font=font, fill=fill, anchor=anchor)
        box = (math.floor(x0), math.floor(y0), math.ceil(x1), math.ceil(y1))
        self.items.append((s, box))
        return box

    def all_text(self) -> str:
        return " ".join(s for s, _ in self.items)


@dataclass
class _Built:
    """What a template returns: the canvas, the question and the answer's text and box."""

    canvas: _Canvas
    query: str
    answer: str
    box: Box
    paraphrased: bool
    scan: bool = True  # apply rotation/blur/noise (documents) or only noise/JPEG (photos)
    unique: bool = True  # the answer text occurs once (key questions); structural questions locate it by position


def _occurrences(text: str, answer: str) -> int:
    """How many times ``answer`` occurs in ``text`` as a whole phrase (case-insensitive)."""
    pattern = r"(?<![\w.,'])" + re.escape(answer.lower()) + r"(?![\w'])"
    return len(re.findall(pattern, text.lower()))


# --------------------------------------------------------------------------------------------------- scan look


def _rotate_box(box: Box, angle: float, size: tuple[int, int]) -> Box:
    """Axis-aligned box of ``box`` after ``Image.rotate(angle)`` (counter-clockwise about the centre)."""
    w, h = size
    cx, cy = w / 2.0, h / 2.0
    t = math.radians(angle)
    xs, ys = [], []
    for x, y in ((box[0], box[1]), (box[2], box[1]), (box[0], box[3]), (box[2], box[3])):
        dx, dy = x - cx, y - cy
        xs.append(cx + dx * math.cos(t) + dy * math.sin(t))
        ys.append(cy - dx * math.sin(t) + dy * math.cos(t))
    return (
        max(0, math.floor(min(xs))),
        max(0, math.floor(min(ys))),
        min(w, math.ceil(max(xs))),
        min(h, math.ceil(max(ys))),
    )


def _scan_look(image: Image.Image, box: Box, rng: random.Random, rotate: bool) -> tuple[Image.Image, Box]:
    """Rotate by up to ~1.2 degrees (documents), blur a little, add shading, noise and JPEG artefacts."""
    if rotate:
        angle = rng.uniform(-1.2, 1.2)
        paper = image.getpixel((2, 2))
        image = image.rotate(angle, resample=Image.BICUBIC, fillcolor=paper)
        box = _rotate_box(box, angle, image.size)
        if rng.random() < 0.7:
            image = image.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 0.9)))
    arr = np.asarray(image, dtype=np.float32)
    nrng = np.random.default_rng(rng.getrandbits(32))
    h, w = arr.shape[:2]
    if rotate:  # uneven scanner lighting
        ramp = np.linspace(rng.uniform(0.9, 1.0), 1.0, w, dtype=np.float32)[None, :, None]
        arr = arr * ramp
    arr = arr + nrng.normal(0.0, rng.uniform(2.0, 7.0), size=arr.shape).astype(np.float32)
    image = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
    if rng.random() < 0.6:
        buf = io.BytesIO()
        image.save(buf, format="JPEG", quality=rng.randint(60, 92))
        buf.seek(0)
        image = Image.open(buf).convert("RGB")
    return image, box


# --------------------------------------------------------------------------------------------------- vocabulary


@dataclass(frozen=True)
class _Concept:
    """A field: the key labels each split uses, and paraphrased questions that avoid the keys' words."""

    keys: dict[str, tuple[str, ...]]
    paraphrases: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _c(dev: tuple[str, ...], test: tuple[str, ...], pdev: tuple[str, ...] = (), ptest: tuple[str, ...] = ()):
    return _Concept({"dev": dev, "test": test}, {"dev": pdev, "test": ptest} if pdev else {})


CONCEPTS: dict[str, _Concept] = {
    "total": _c(
        ("Total", "Amount due"),
        ("Balance due", "Sum payable", "To pay"),
        ("How much must be paid?", "What is the final sum to pay?"),
        ("What does the customer owe in the end?", "How much money is owed altogether?"),
    ),
    "subtotal": _c(("Subtotal",), ("Net amount",)),
    "tax": _c(
        ("Tax", "VAT"),
        ("Sales tax", "GST"),
        ("How much of the price goes to the government?", "What levy was added?"),
        ("What was charged as duty to the state?", "How big is the fiscal surcharge?"),
    ),
    "paid": _c(("Cash", "Paid"), ("Tendered", "Received")),
    "change": _c(
        ("Change",),
        ("Returned",),
        ("How much money was handed back?", "What came back to the shopper?"),
        ("What sum went back to the buyer after paying?", "How much did the cashier give back?"),
    ),
    "date": _c(
        ("Date", "Invoice date"),
        ("Issued", "Dated"),
        ("When was it issued?", "On which day was this made out?"),
        ("What day is this document from?", "When was this drawn up?"),
    ),
    "due_date": _c(("Due date",), ("Payment by",)),
    "bill_to": _c(
        ("Bill to", "Billed to"),
        ("Sold to", "Client"),
        ("Who is the customer?", "Which person is being charged?"),
        ("Who is the buyer?", "Whom is the purchaser named as?"),
    ),
    "ship_to": _c(("Ship to",), ("Deliver to",)),
    "invoice_no": _c(
        ("Invoice no.", "Invoice #"),
        ("Reference", "Doc. number"),
        ("What number identifies this document?", "Under which serial is this bill filed?"),
        ("Which identifier does this paperwork carry?", "What code is this statement registered under?"),
    ),
    "order_no": _c(("Order no.",), ("PO ref",)),
    "name": _c(
        ("Full name", "Name"),
        ("Applicant", "Holder"),
        ("Who filled in this form?", "Whose details are these?"),
        ("Whose details are recorded here?", "Which person submitted this?"),
    ),
    "emergency": _c(("Emergency contact",), ("Next of kin",)),
    "dob": _c(
        ("Date of birth", "Birth date"),
        ("Born",),
        ("What is the person's birthday?", "When did this person come into the world?"),
        ("What birth date does the applicant have?", "On what day did the applicant arrive in the world?"),
    ),
    "signed": _c(("Date signed",), ("Signature date",)),
    "phone": _c(
        ("Phone", "Telephone"),
        ("Tel.", "Contact no."),
        ("What number can be called to reach the person?", "How can the person be rung up?"),
        ("What should be dialled to reach them?", "Which number rings the applicant?"),
    ),
    "fax": _c(("Fax",), ("Alt. line",)),
    "email": _c(
        ("Email", "E-mail"),
        ("Electronic mail", "Mailbox"),
        ("Where can messages be sent online?", "What is the person's inbox address?"),
        ("What is the online contact address?", "To which internet address can one write?"),
    ),
    "city": _c(
        ("City", "Town"),
        ("Municipality", "Locality"),
        ("Where does the person live?", "In which place is the home?"),
        ("In which place is the residence?", "Where is the applicant's home?"),
    ),
    "postcode": _c(("Postcode",), ("ZIP",)),
    "address": _c(("Street address",), ("Residence",)),
    "country": _c(("Country",), ("Nation of residence",)),
    "employer": _c(("Employer",), ("Company",)),
    "member_no": _c(("Member no.",), ("Account ID",)),
    "gender": _c(("Gender",), ("Sex",)),
    "occupation": _c(
        ("Occupation", "Job"),
        ("Profession", "Employment"),
        ("What does the person do for a living?", "What work does the person do?"),
        ("What is their line of work?", "How does the applicant earn money?"),
    ),
}

KEY_QUESTIONS = {  # non-paraphrased question templates per split
    "dev": ("What is the {key}?", "What is the {key} on this {doc}?", "What {key} is given?"),
    "test": ("Read the {key} field.", "What value does the {doc} show for {key}?", "Tell me the {key}."),
}

FIRST = (
    "Anna",
    "Boris",
    "Carla",
    "David",
    "Elena",
    "Felix",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kira",
    "Lukas",
    "Maya",
    "Nils",
    "Olga",
    "Pablo",
    "Rosa",
    "Stefan",
    "Tara",
    "Viktor",
    "Wanda",
    "Yusuf",
    "Zoe",
    "Omar",
)
LAST = (
    "Albers",
    "Brandt",
    "Castillo",
    "Dubois",
    "Eklund",
    "Fischer",
    "Garcia",
    "Horvath",
    "Ivanova",
    "Jensen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Novak",
    "Okafor",
    "Petrov",
    "Quinn",
    "Rossi",
    "Schmidt",
    "Tanaka",
    "Ueda",
    "Varga",
    "Weber",
    "Yilmaz",
)
CITIES = (
    "Bergen",
    "Lyon",
    "Porto",
    "Graz",
    "Tampere",
    "Utrecht",
    "Gdansk",
    "Bilbao",
    "Malmo",
    "Ghent",
    "Brno",
    "Cork",
    "Leipzig",
    "Turin",
    "Aarhus",
    "Split",
    "Basel",
    "Krakow",
    "Seville",
    "Linz",
)
STREETS = ("Oak", "Maple", "Birch", "Cedar", "Willow", "Elm", "Aspen", "Linden", "Harbor", "Mill", "Station")
STORES = (
    "FRESH MART",
    "CORNER GROCER",
    "GREEN BASKET",
    "DAILY GOODS",
    "SUNRISE MARKET",
    "CITY PANTRY",
    "HILLTOP FOODS",
    "BLUE DOOR DELI",
)
COMPANIES = (
    "Nordlicht Systems",
    "Brightwave Ltd",
    "Atlas Components",
    "Cobalt & Finch",
    "Helix Supplies",
    "Meridian Works",
    "Orchid Analytics",
    "Kestrel Tooling",
)
ITEMS = (
    "Milk 1L",
    "Bread",
    "Eggs x12",
    "Butter",
    "Apples",
    "Coffee beans",
    "Rice 2kg",
    "Olive oil",
    "Tomatoes",
    "Cheese",
    "Yogurt",
    "Bananas",
    "Pasta",
    "Orange juice",
    "Chocolate",
    "Tea bags",
    "Onions",
    "Soap",
)
SERVICES = (
    "Consulting hours",
    "Server rental",
    "Design review",
    "Annual licence",
    "Support plan",
    "Cable set",
    "Sensor kit",
    "Training day",
    "Firmware update",
    "Maintenance visit",
)
JOBS = ("nurse", "carpenter", "chemist", "teacher", "pilot", "architect", "baker", "librarian", "surveyor")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _date(rng: random.Random, split: str, year: tuple[int, int] = (2019, 2024)) -> str:
    y, m, d = rng.randint(*year), rng.randint(1, 12), rng.randint(1, 28)
    if split == "dev":
        return rng.choice((f"{y}-{m:02d}-{d:02d}", f"{m:02d}/{d:02d}/{y}"))
    return rng.choice((f"{d} {MONTHS[m - 1][:3]} {y}", f"{MONTHS[m - 1]} {d}, {y}"))


def _money(value: float, split: str) -> str:
    if split == "dev":
        return f"${value:,.2f}"
    return f"CHF {value:,.2f}".replace(",", "'")


def _phone(rng: random.Random, split: str) -> str:
    if split == "dev":
        return f"+1 {rng.randint(200, 989)}-{rng.randint(200, 989)}-{rng.randint(1000, 9999)}"
    return f"0{rng.randint(20, 89)} {rng.randint(100, 999)} {rng.randint(10, 99)} {rng.randint(10, 99)}"


def _question(rng: random.Random, split: str, concept: str, key: str, doc: str, paraphrased: bool) -> str:
    if paraphrased:
        return rng.choice(CONCEPTS[concept].paraphrases[split])
    if not key.isupper():  # "Amount due" -> "amount due"; acronyms (VAT, GST, ZIP) stay
        key = key[0].lower() + key[1:]
    q = rng.choice(KEY_QUESTIONS[split]).format(key=key, doc=doc)
    return q.replace("..", ".").replace(".?", "?")


def _paper(rng: random.Random) -> tuple[int, int, int]:
    base = rng.randint(238, 255)
    return (base, base - rng.randint(0, 6), base - rng.randint(0, 12))


def _ink(rng: random.Random) -> tuple[int, int, int]:
    v = rng.randint(10, 60)
    return (v, v, v + rng.randint(0, 30))


FINE_PRINT = {
    "dev": (
        "All prices include applicable charges unless stated otherwise.",
        "Goods may be returned within thirty days with proof of purchase.",
        "Personal data is processed in accordance with the privacy notice.",
        "The signatory confirms that the information provided is correct and complete.",
        "Claims must be made in writing and will be reviewed by our office.",
        "Opening hours may change on public holidays without prior notice.",
        "Please keep this document for your records and future reference.",
    ),
    "test": (
        "Liability is limited to the value of the goods or services concerned.",
        "Disputes fall under the jurisdiction of the courts at the seller's seat.",
        "Late payments may incur interest as permitted by law.",
        "Applicants agree that their details may be verified with third parties.",
        "Information supplied here is stored securely and never sold.",
        "This statement is computer generated and valid without a signature.",
        "Any alteration renders this form void unless initialled by staff.",
    ),
}


def _fine_print(
    cv: _Canvas, rng: random.Random, split: str, font, ink, x0: float, y0: float, x1: float, y1: float
) -> float:
    """Fill the rectangle with small flowing filler text (terms, notes); returns the y below the last line."""
    line_h = font.size * 1.35 if hasattr(font, "size") else 14
    space = font.getlength(" ")
    x, y = x0, y0
    while y + line_h <= y1:
        for word in rng.choice(FINE_PRINT[split]).split():
            wlen = font.getlength(word)
            if x + wlen > x1 and x > x0:
                x, y = x0, y + line_h
                if y + line_h > y1:
                    return y
            cv.text((x, y), word, font, ink)
            x += wlen + space
    return y


# --------------------------------------------------------------------------------------------------- receipts


def _receipt(rng: random.Random, split: str, para: bool) -> _Built:
    fonts = _Fonts(rng, split)
    w, h = rng.randint(700, 950), rng.randint(1250, 1700)
    cv = _Canvas.blank(w, h, _paper(rng))
    ink = _ink(rng)
    fs = rng.randint(22, 30)
    reg, bold = fonts.reg(fs), fonts.bold(fs)
    m = rng.randint(50, 90)
    y = m
    store = rng.choice(STORES)
    store_phone = _phone(rng, split)
    if split == "dev":  # centred header, right-aligned prices
        cv.text((w / 2, y), store, fonts.bold(fs * 1.5), ink, "ma")
        y += fs * 2.2
        cv.text((w / 2, y), f"{rng.randint(1, 300)} {rng.choice(STREETS)} Street, {rng.choice(CITIES)}", reg, ink, "ma")
        y += fs * 1.4
        cv.text((w / 2, y), store_phone, reg, ink, "ma")
        y += fs * 2.0
    else:  # left header inside a frame, quantities column
        top = y
        cv.text((m + 15, y + 12), store.title(), fonts.bold(fs * 1.4), ink)
        y += fs * 2.2
        cv.text((m + 15, y + 12), f"{rng.choice(CITIES)}, {rng.choice(STREETS)} Road {rng.randint(1, 99)}", reg, ink)
        y += fs * 1.4
        cv.text((m + 15, y + 12), store_phone, reg, ink)
        y += fs * 1.6
        cv.draw.rectangle((m, top, w - m, y + 12), outline=ink, width=2)
        y += fs * 2.0

    fields: dict[str, tuple[str, Box]] = {}

    def kv(concept: str, value: str, font, y: float) -> None:
        key = rng.choice(CONCEPTS[concept].keys[split])
        label = key.upper() if split == "dev" else key
        cv.text((m, y), f"{label}:", font, ink)
        fields[concept] = (key, cv.text((w - m, y), value, font, ink, "ra"))

    date = _date(rng, split)
    time = f"{rng.randint(7, 21):02d}:{rng.randint(0, 59):02d}"
    if split == "dev":
        kv("date", date, reg, y)
        y += fs * 1.4
        cv.text((m, y), f"TIME: {time}   TILL {rng.randint(1, 9)}", reg, ink)
        y += fs * 1.6
    cv.text((m, y), "-" * 60, reg, ink)
    y += fs * 1.4
    n_items = rng.randint(4, 10)
    names = rng.sample(ITEMS, n_items)
    subtotal = 0.0
    item_boxes: dict[str, Box] = {}
    for name in names:
        price = round(rng.uniform(0.5, 25.0), 2)
        if split == "dev":
            cv.text((m, y), name.upper(), reg, ink)
            box = cv.text((w - m, y), f"{price:.2f}", reg, ink, "ra")
            subtotal += price
        else:
            qty = rng.randint(1, 4)
            cv.text((m, y), name, reg, ink)
            cv.text((w * 0.55, y), f"{qty} x {price:.2f}", reg, ink)
            box = cv.text((w - m, y), f"{qty * price:.2f}", reg, ink, "ra")
            price = qty * price
            subtotal += price
        item_boxes[name] = box
        y += fs * 1.35
    cv.text((m, y), "-" * 60, reg, ink)
    y += fs * 1.4
    subtotal = round(subtotal, 2)
    tax = round(subtotal * rng.choice((0.05, 0.07, 0.08, 0.19)), 2)
    total = round(subtotal + tax, 2)
    paid = float(math.ceil(total / 10.0) * 10 + rng.choice((0, 10, 20)))
    if paid <= total:
        paid += 10.0
    kv("subtotal", _money(subtotal, split), reg, y)
    y += fs * 1.35
    kv("tax", _money(tax, split), reg, y)
    y += fs * 1.35
    kv("total", _money(total, split), bold, y)
    y += fs * 1.8
    kv("paid", _money(paid, split), reg, y)
    y += fs * 1.35
    kv("change", _money(round(paid - total, 2), split), reg, y)
    y += fs * 2.0
    if split == "test":
        kv("date", date, reg, y)
        y += fs * 1.4
        cv.text((m, y), f"Time {time} / Register {rng.randint(1, 9)}", reg, ink)
        y += fs * 1.6
    cv.text(
        (w / 2, y),
        rng.choice(("THANK YOU FOR SHOPPING!", "Thank you - see you soon", "Keep this receipt")),
        reg,
        ink,
        "ma",
    )
    y += fs * 2.0
    if rng.random() < 0.8:
        y = _fine_print(cv, rng, split, fonts.reg(fs * 0.7), ink, m, y, w - m, h - m - 80) + fs
    x = m
    while x < w - m and y + 60 < h:  # a barcode
        bw = rng.choice((2, 3, 5))
        cv.draw.rectangle((x, y, x + bw - 1, y + 60), fill=ink)
        x += bw + rng.choice((2, 3, 4))

    if rng.random() < 0.25 and not para:
        item = rng.choice(names)
        q = f"How much did the {item.lower()} cost?" if split == "dev" else f"What amount is listed for {item.lower()}?"
        box = item_boxes[item]
        answer = next(s for s, b in cv.items if b == box)
        return _Built(cv, q, answer, box, False)
    concept = rng.choice(("total", "total", "tax", "change", "date"))
    key, box = fields[concept]
    answer = next(s for s, b in cv.items if b == box)
    return _Built(cv, _question(rng, split, concept, key, "receipt", para), answer, box, para)


# --------------------------------------------------------------------------------------------------- invoices


def _invoice(rng: random.Random, split: str, para: bool) -> _Built:
    fonts = _Fonts(rng, split)
    w, h = rng.randint(1050, 1400), rng.randint(1350, 1700)
    cv = _Canvas.blank(w, h, _paper(rng))
    ink = _ink(rng)
    fs = rng.randint(20, 26)
    reg, bold, big = fonts.reg(fs), fonts.bold(fs), fonts.bold(fs * 1.9)
    m = rng.randint(60, 100)
    fields: dict[str, tuple[str, Box]] = {}
    company = rng.choice(COMPANIES)
    bill_name, ship_name = _person(rng), _person(rng)
    while ship_name == bill_name:
        ship_name = _person(rng)
    date = _date(rng, split)
    due = _date(rng, split)
    inv_no = (
        f"INV-{rng.randint(10000, 99999)}" if split == "dev" else f"{rng.randint(100, 999)}/{rng.randint(1000, 9999)}"
    )
    order_no = f"PO-{rng.randint(1000, 9999)}" if split == "dev" else f"R{rng.randint(100000, 999999)}"

    def key_of(concept: str) -> str:
        return rng.choice(CONCEPTS[concept].keys[split])

    def meta_block(x: float, y: float, concepts: list[tuple[str, str]]) -> float:
        keys = [(c, key_of(c), v) for c, v in concepts]
        kw = max(bold.getlength(k + ":") for _, k, _ in keys) + 20
        for c, k, v in keys:
            cv.text((x, y), k + ":", bold, ink)
            fields[c] = (k, cv.text((x + kw, y), v, reg, ink))
            y += fs * 1.5
        return y

    def party(x: float, y: float, concept: str, name: str) -> float:
        k = key_of(concept)
        cv.text((x, y), k + ":" if split == "dev" else k.upper(), bold, ink)
        y += fs * 1.5
        fields[concept] = (k, cv.text((x, y), name, reg, ink))
        y += fs * 1.4
        cv.text((x, y), f"{rng.randint(1, 250)} {rng.choice(STREETS)} Lane", reg, ink)
        y += fs * 1.4
        cv.text((x, y), f"{rng.randint(1000, 9999)} {rng.choice(CITIES)}", reg, ink)
        return y + fs * 1.4

    if split == "dev":
        y = m
        cv.text((m, y), company, big, ink)
        cv.text((w - m, y), "INVOICE", big, ink, "ra")
        y += fs * 3
        cv.text((m, y), f"{rng.randint(1, 99)} {rng.choice(STREETS)} Street", reg, ink)
        cv.text((m, y + fs * 1.4), f"{rng.choice(CITIES)}  |  {_phone(rng, split)}", reg, ink)
        meta_block(w * 0.58, y, [("invoice_no", inv_no), ("date", date), ("due_date", due), ("order_no", order_no)])
        y += fs * 7
        y1 = party(m, y, "bill_to", bill_name)
        party(w * 0.5, y, "ship_to", ship_name)
        y = y1 + fs * 1.5
    else:
        y = m
        cv.text((w / 2, y), company.upper(), big, ink, "ma")
        y += fs * 3
        cv.draw.line((m, y, w - m, y), fill=ink, width=3)
        y += fs
        top = y
        y2 = meta_block(
            m + 15, y + 15, [("order_no", order_no), ("invoice_no", inv_no), ("due_date", due), ("date", date)]
        )
        cv.draw.rectangle((m, top, w * 0.45, y2 + 5), outline=ink, width=2)
        party(w * 0.52, top + 15, "ship_to", ship_name)
        y1 = party(w * 0.76, top + 15, "bill_to", bill_name)
        y = max(y1, y2) + fs * 2
        cv.text((m, y), "STATEMENT OF ACCOUNT", fonts.bold(fs * 1.3), ink)
        y += fs * 2.5

    cols = [m, w * 0.55, w * 0.68, w - m]
    heads = (
        ("Description", "Qty", "Unit price", "Amount") if split == "dev" else ("Item", "Units", "Rate", "Line total")
    )
    if split == "dev":
        cv.draw.rectangle((m - 8, y - 8, w - m + 8, y + fs * 1.4), fill=(215, 215, 215))
    for i, head in enumerate(heads):
        cv.text((cols[i], y), head, bold, ink, "la" if i < 3 else "ra")
    y += fs * 2
    subtotal = 0.0
    for name in rng.sample(SERVICES, rng.randint(3, 8)):
        qty, unit = rng.randint(1, 20), round(rng.uniform(15, 900), 2)
        cv.text((cols[0], y), name, reg, ink)
        cv.text((cols[1], y), str(qty), reg, ink)
        cv.text((cols[2], y), f"{unit:,.2f}", reg, ink)
        cv.text((cols[3], y), f"{qty * unit:,.2f}", reg, ink, "ra")
        subtotal += qty * unit
        y += fs * 1.6
    cv.draw.line((m, y, w - m, y), fill=ink, width=2)
    y += fs
    subtotal = round(subtotal, 2)
    tax = round(subtotal * rng.choice((0.07, 0.1, 0.2)), 2)
    total = round(subtotal + tax, 2)
    tx = w * 0.6 if split == "dev" else m
    vx = w - m if split == "dev" else m + w * 0.35
    for concept, value, font in (("subtotal", subtotal, reg), ("tax", tax, reg), ("total", total, bold)):
        k = key_of(concept)
        cv.text((tx, y), k + ":", font, ink)
        fields[concept] = (k, cv.text((vx, y), _money(value, split), font, ink, "ra"))
        y += fs * 1.6
    y += fs
    if y + fs * 3 < h:
        cv.text(
            (m, y), rng.choice(("Payment terms: 30 days net.", "Please quote the reference with payment.")), reg, ink
        )
        cv.text((m, y + fs * 1.5), "Thank you for your business.", reg, ink)
        y += fs * 3.5
    if rng.random() < 0.85:
        _fine_print(cv, rng, split, fonts.reg(fs * 0.75), ink, m, y, w - m, h - m)
    concept = rng.choice(("total", "total", "date", "bill_to", "invoice_no", "tax"))
    key, box = fields[concept]
    answer = next(s for s, b in cv.items if b == box)
    return _Built(cv, _question(rng, split, concept, key, "invoice", para), answer, box, para)


# --------------------------------------------------------------------------------------------------- forms


def _form(rng: random.Random, split: str, para: bool) -> _Built:
    fonts = _Fonts(rng, split)
    landscape = rng.random() < 0.3
    w, h = (
        (rng.randint(1300, 1700), rng.randint(900, 1150))
        if landscape
        else (rng.randint(950, 1250), rng.randint(1250, 1650))
    )
    cv = _Canvas.blank(w, h, _paper(rng))
    ink = _ink(rng)
    fs = rng.randint(20, 26)
    reg, bold = fonts.reg(fs), fonts.bold(fs)
    hand_path = rng.choice(font_files(split) or [""])

    def hand(text: str, room: float):
        """The filling-in font, shrunk until ``text`` fits in ``room`` pixels."""
        size = fs + 2
        while size > 10 and _font(hand_path, size).getlength(text) > room:
            size -= 1
        return _font(hand_path, size)

    pen = (20, 40, rng.randint(110, 170))
    m = rng.randint(60, 100)
    first, surname = rng.choice(FIRST), rng.choice(LAST)
    emergency = _person(rng)
    while emergency.split()[1] == surname:
        emergency = _person(rng)
    values = {
        "name": f"{first} {surname}",
        "dob": _date(rng, split, (1950, 2004)),
        "phone": _phone(rng, split),
        "fax": _phone(rng, split),
        "email": f"{first.lower()}.{surname.lower()}@{rng.choice(('mail.com', 'post.net', 'inbox.org'))}",
        "city": rng.choice(CITIES),
        "postcode": str(rng.randint(10000, 99999)),
        "occupation": rng.choice(JOBS).capitalize(),
        "emergency": emergency,
        "signed": _date(rng, split, (2022, 2024)),
        "address": f"{rng.randint(1, 200)} {rng.choice(STREETS)} Street",
        "country": rng.choice(("Portugal", "Norway", "Austria", "Ireland", "Belgium", "Poland")),
        "employer": rng.choice(COMPANIES),
        "member_no": f"M-{rng.randint(100000, 999999)}",
        "gender": rng.choice(("Female", "Male", "Diverse")),
    }
    for extra in rng.sample(("address", "country", "employer", "member_no", "gender"), rng.randint(0, 5)):
        del values[extra]
    order = list(values)
    rng.shuffle(order)
    fields: dict[str, tuple[str, Box]] = {}
    y = m
    title = (
        rng.choice(("Registration Form", "Patient Intake Form", "Club Enrolment Form"))
        if split == "dev"
        else rng.choice(("MEMBERSHIP APPLICATION", "Tenant Information Sheet", "Volunteer Sign-up"))
    )
    cv.text((w / 2, y), title, fonts.bold(fs * 1.6), ink, "ma")
    y += fs * 3
    cv.text(
        (m, y), rng.choice(("Please complete all fields in block letters.", "Fields marked * are required.")), reg, ink
    )
    y += fs * 2.5
    ncol = 2
    if split == "dev":  # "Key: value____" in two columns
        colw = (w - 2 * m) / 2
        for i, concept in enumerate(order):
            x = m + (i % 2) * colw
            yy = y + (i // 2) * fs * 3.2
            key = rng.choice(CONCEPTS[concept].keys[split])
            kb = cv.text((x, yy), key + ":", bold, ink)
            vx = kb[2] + 15
            cv.draw.line((vx, yy + fs * 1.25, x + colw - 30, yy + fs * 1.25), fill=ink, width=1)
            font = hand(values[concept], x + colw - 40 - vx)
            fields[concept] = (key, cv.text((vx + 5, yy - 2), values[concept], font, pen))
    else:  # small label above a framed box, three columns
        ncol = 3 if not landscape else 4
        colw = (w - 2 * m) / ncol
        small = fonts.reg(fs * 0.75)
        for i, concept in enumerate(order):
            x = m + (i % ncol) * colw
            yy = y + (i // ncol) * fs * 4.2
            key = rng.choice(CONCEPTS[concept].keys[split])
            cv.text((x, yy), key.upper(), small, ink)
            cv.draw.rectangle((x, yy + fs * 1.0, x + colw - 20, yy + fs * 2.9), outline=ink, width=1)
            font = hand(values[concept], colw - 40)
            fields[concept] = (key, cv.text((x + 8, yy + fs * 1.35), values[concept], font, pen))
    rows_used = math.ceil(len(order) / (2 if split == "dev" else ncol))
    y += rows_used * fs * (3.2 if split == "dev" else 4.2) + fs
    if y + fs * 3 < h - m and rng.random() < 0.85:
        _fine_print(cv, rng, split, fonts.reg(fs * 0.75), ink, m, y, w - m, h - m)
    concept = rng.choice(("name", "dob", "phone", "email", "city", "occupation"))
    key, box = fields[concept]
    return _Built(cv, _question(rng, split, concept, key, "form", para), values[concept], box, para)


# --------------------------------------------------------------------------------------------------- tables

TABLE_COLUMNS = {  # (header, paraphrase) pairs
    "dev": (
        ("Q1", "the first quarter"),
        ("Q2", "the second quarter"),
        ("Q3", "the third quarter"),
        ("Q4", "the fourth quarter"),
        ("Units", "the number of items sold"),
        ("Revenue", "the money earned"),
        ("Returns", "the goods sent back"),
        ("Staff", "the headcount"),
    ),
    "test": (
        ("H1", "the first half-year"),
        ("H2", "the second half-year"),
        ("Price", "the cost"),
        ("Weight", "the mass"),
        ("Stock", "the inventory on hand"),
        ("Rating", "the score it received"),
        ("Share", "the fraction of the market"),
    ),
}
TABLE_ROWS = {
    "dev": (
        "Norway",
        "Chile",
        "Kenya",
        "Japan",
        "Canada",
        "Peru",
        "Greece",
        "Vietnam",
        "Morocco",
        "Finland",
        "Austria",
        "Ireland",
    ),
    "test": (
        "Model A-12",
        "Model B-7",
        "Model C-30",
        "Model D-4",
        "Unit K9",
        "Unit M2",
        "Series X",
        "Series Z",
        "Type 110",
        "Type 220",
    ),
}


def _table(rng: random.Random, split: str, para: bool) -> _Built:
    fonts = _Fonts(rng, split)
    w, h = rng.randint(1000, 1650), rng.randint(750, 1300)
    cv = _Canvas.blank(w, h, _paper(rng))
    ink = _ink(rng)
    m = rng.randint(50, 90)
    cols = rng.sample(TABLE_COLUMNS[split], rng.randint(3, min(6, len(TABLE_COLUMNS[split]))))
    rows = rng.sample(TABLE_ROWS[split], rng.randint(4, 10))
    title = (
        rng.choice(("Regional summary", "Annual figures by country", "Sales overview"))
        if split == "dev"
        else rng.choice(("PRODUCT SHEET", "Inventory report", "Catalogue extract"))
    )
    fs_title = rng.randint(30, 40)
    cv.text((m, m), title, fonts.bold(fs_title), ink)
    top = m + fs_title * 2
    avail_h = h - top - m
    row_h = min(avail_h / (len(rows) + 1), 70)
    fs = int(min(row_h * 0.5, 30))
    reg, bold = fonts.reg(fs), fonts.bold(fs)
    first_w = max(bold.getlength(r) for r in rows) + 40
    col_w = (w - 2 * m - first_w) / len(cols)
    used: set[str] = set()
    cells: dict[tuple[int, int], tuple[str, Box]] = {}

    def value() -> str:
        while True:
            v = f"{rng.randint(100, 99999):,}" if split == "dev" else f"{rng.uniform(0.1, 999.9):.1f}"
            if v not in used:
                used.add(v)
                return v

    for i in range(len(rows) + 1):
        yy = top + i * row_h
        if split == "test" and i % 2 == 0 and i > 0:
            cv.draw.rectangle((m, yy, w - m, yy + row_h), fill=(228, 232, 238))
        if split == "dev" or i <= 1:
            cv.draw.line((m, yy, w - m, yy), fill=ink, width=2 if i <= 1 else 1)
    if split == "dev":
        cv.draw.line((m, top + (len(rows) + 1) * row_h, w - m, top + (len(rows) + 1) * row_h), fill=ink, width=2)
        for j in range(len(cols) + 1):
            x = m + first_w + j * col_w
            cv.draw.line((x, top, x, top + (len(rows) + 1) * row_h), fill=ink, width=1)
        cv.draw.line((m, top, m, top + (len(rows) + 1) * row_h), fill=ink, width=1)
    pad = (row_h - fs) / 2
    cv.text((m + 10, top + pad), "Country" if split == "dev" else "Product", bold, ink)
    for j, (head, _) in enumerate(cols):
        x = m + first_w + (j + 0.5) * col_w
        cv.text((x, top + pad), head, bold, ink, "ma")
    for i, row in enumerate(rows):
        yy = top + (i + 1) * row_h + pad
        cv.text((m + 10, yy), row, bold if split == "test" else reg, ink)
        for j in range(len(cols)):
            v = value()
            if split == "dev":
                box = cv.text((m + first_w + (j + 0.5) * col_w, yy), v, reg, ink, "ma")
            else:
                box = cv.text((m + first_w + (j + 1) * col_w - 15, yy), v, reg, ink, "ra")
            cells[(i, j)] = (v, box)
    i, j = rng.randrange(len(rows)), rng.randrange(len(cols))
    head, phrase = cols[j]
    if split == "dev":
        q = f"What is {phrase} value for {rows[i]}?" if para else f"What is the {head} value for {rows[i]}?"
    else:
        q = (
            f"What does the table give as {phrase} of {rows[i]}?"
            if para
            else f"In the row {rows[i]}, what does the {head} column say?"
        )
    v, box = cells[(i, j)]
    return _Built(cv, q, v, box, para)


# --------------------------------------------------------------------------------------------------- bar charts

BAR_CATEGORIES = {  # (label, paraphrase) pairs; paraphrases name the category without its label
    "dev": (
        tuple(
            (m[:3], f"the {o} month")
            for m, o in zip(
                MONTHS,
                (
                    "first",
                    "second",
                    "third",
                    "fourth",
                    "fifth",
                    "sixth",
                    "seventh",
                    "eighth",
                    "ninth",
                    "tenth",
                    "eleventh",
                    "twelfth",
                ),
                strict=True,
            )
        ),
        (
            ("Mon", "the first working day of the week"),
            ("Tue", "the day after Monday"),
            ("Wed", "the middle of the week"),
            ("Thu", "the day before Friday"),
            ("Fri", "the last working day"),
            ("Sat", "the first day of the weekend"),
            ("Sun", "the last day of the weekend"),
        ),
    ),
    "test": (
        tuple(
            (f"Q{q} {y}", f"the {o} quarter of {y}")
            for y in (2022, 2023)
            for q, o in zip((1, 2, 3, 4), ("first", "second", "third", "fourth"), strict=True)
        ),
        tuple((str(y), f"the year {y - 2000} years into the millennium") for y in range(2015, 2024)),
    ),
}


def _bar_chart(rng: random.Random, split: str, para: bool) -> _Built:
    fonts = _Fonts(rng, split)
    w, h = rng.randint(1000, 1600), rng.randint(750, 1150)
    cv = _Canvas.blank(w, h, (255, 255, 255) if rng.random() < 0.5 else _paper(rng))
    ink = _ink(rng)
    palette = [(66, 110, 180), (200, 90, 60), (70, 150, 90), (140, 90, 170), (90, 90, 90)]
    color = rng.choice(palette)
    seq = rng.choice(BAR_CATEGORIES[split])
    n = rng.randint(5, min(10, len(seq)))
    start = rng.randrange(len(seq) - n + 1)
    cats = seq[start : start + n]
    vmax = rng.choice((100, 500, 1000, 5000))
    values: list[int] = []
    while len(values) < n:
        v = rng.randint(vmax // 20, vmax)
        if v not in values:
            values.append(v)
    fs = rng.randint(18, 26)
    reg, bold = fonts.reg(fs), fonts.bold(fs)
    m = rng.randint(50, 80)
    title = (
        rng.choice(("Monthly sales (units)", "Visitors per day", "Orders received"))
        if split == "dev"
        else rng.choice(("Revenue by period, kCHF", "Shipments per period", "Energy use (MWh)"))
    )
    cv.text((w / 2, m), title, fonts.bold(fs * 1.4), ink, "ma")
    boxes: list[Box] = []
    if split == "dev":  # vertical bars, category under, value above
        x0, x1 = m + 70, w - m
        y_base, y_top = h - m - fs * 2.5, m + fs * 4
        cv.draw.line((x0, y_base, x1, y_base), fill=ink, width=2)
        cv.draw.line((x0, y_base, x0, y_top - 20), fill=ink, width=2)
        small = fonts.reg(fs * 0.8)
        for t in range(1, 5):  # gridlines and tick labels
            yt = y_base - (y_base - y_top) * t / 4
            cv.draw.line((x0, yt, x1, yt), fill=(200, 200, 200), width=1)
            cv.text((x0 - 8, yt), f"{vmax * t // 4}", small, ink, "rm")
        slot = (x1 - x0) / n
        bw = slot * rng.uniform(0.45, 0.75)
        for i, (cat, v) in enumerate(zip(cats, values, strict=True)):
            cx = x0 + (i + 0.5) * slot
            top = y_base - (y_base - y_top) * v / vmax
            cv.draw.rectangle((cx - bw / 2, top, cx + bw / 2, y_base), fill=color)
            cv.text((cx, y_base + 10), cat[0], reg, ink, "ma")
            boxes.append(cv.text((cx, top - 8), str(v), bold, ink, "md"))
    else:  # horizontal bars, category left, value at the bar's end
        label_w = max(reg.getlength(c[0]) for c in cats) + 30
        x0, x1 = m + label_w, w - m - fs * 4
        y0, y1 = m + fs * 3.5, h - m
        cv.draw.line((x0, y0, x0, y1), fill=ink, width=2)
        small = fonts.reg(fs * 0.8)
        y1 -= fs * 2
        cv.draw.line((x0, y1, x1, y1), fill=ink, width=1)
        for t in range(0, 5):  # axis ticks under the bars
            xt = x0 + (x1 - x0) * t / 4
            cv.draw.line((xt, y1, xt, y1 + 6), fill=ink, width=1)
            cv.text((xt, y1 + 10), f"{vmax * t // 4:,}", small, ink, "ma")
        slot = (y1 - y0) / n
        bh = slot * rng.uniform(0.5, 0.75)
        for i, (cat, v) in enumerate(zip(cats, values, strict=True)):
            cy = y0 + (i + 0.5) * slot
            right = x0 + (x1 - x0) * v / vmax
            cv.draw.rectangle((x0, cy - bh / 2, right, cy + bh / 2), fill=color)
            cv.text((x0 - 15, cy), cat[0], reg, ink, "rm")
            boxes.append(cv.text((right + 10, cy), f"{v:,}", bold, ink, "lm"))
    i = rng.randrange(n)
    label, phrase = cats[i]
    if split == "dev":
        q = f"What value does the chart show for {phrase}?" if para else f"What value is shown for {label}?"
    else:
        q = f"What figure is reported for {phrase}?" if para else f"What number is printed at the {label} bar?"
    return _Built(cv, q, f"{values[i]:,}" if split == "test" else str(values[i]), boxes[i], para)


# --------------------------------------------------------------------------------------------------- text pages


@dataclass(frozen=True)
class _Fact:
    """A sentence with one slot-filled value, and the questions that ask for that value."""

    sentence: str  # with {e} (entity) and {v} (value)
    question: str
    paraphrase: str
    entity: Callable[[random.Random], str]
    value: Callable[[random.Random], str]


def _town(rng: random.Random) -> str:
    return rng.choice(CITIES)


FACTS = {
    "dev": (
        _Fact(
            "The bridge in {e} is {v} long.",
            "How long is the bridge in {e}?",
            "What is the length of the {e} crossing over the water?",
            _town,
            lambda r: f"{r.randint(40, 2400):,} metres",
        ),
        _Fact(
            "{e} was born in {v}.",
            "Where was {e} born?",
            "What is the birthplace of {e}?",
            _person,
            lambda r: r.choice(CITIES),
        ),
        _Fact(
            "The library of {e} holds {v} books.",
            "How many books does the library of {e} hold?",
            "How large is the collection of the {e} reading room?",
            _town,
            lambda r: f"{r.randint(2000, 900000):,}",
        ),
        _Fact(
            "The annual fair in {e} opens on {v}.",
            "When does the annual fair in {e} open?",
            "On what day does the yearly market of {e} begin?",
            _town,
            lambda r: f"{r.randint(1, 28)} {r.choice(MONTHS)}",
        ),
        _Fact(
            "{e} works as a {v}.",
            "What does {e} work as?",
            "What is the occupation of {e}?",
            _person,
            lambda r: r.choice(JOBS),
        ),
    ),
    "test": (
        _Fact(
            "{e} founded the company in {v}.",
            "In which year did {e} found the company?",
            "When did {e} establish the firm?",
            _person,
            lambda r: str(r.randint(1850, 2015)),
        ),
        _Fact(
            "The summit of Mount {e} rises to {v}.",
            "How high does the summit of Mount {e} rise?",
            "What is the elevation of Mount {e}?",
            lambda r: r.choice(LAST),
            lambda r: f"{r.randint(900, 6500):,} m",
        ),
        _Fact(
            "The river near {e} flows into {v}.",
            "Into what does the river near {e} flow?",
            "Where does the {e} waterway end?",
            _town,
            lambda r: r.choice(
                ("Lake Arlen", "the North Sea", "the Baltic", "Lake Moor", "the Adriatic", "Lake Veld", "the Atlantic")
            ),
        ),
        _Fact(
            "Last year the museum in {e} welcomed {v} visitors.",
            "How many visitors did the museum in {e} welcome last year?",
            "What was the attendance at the {e} gallery in the previous year?",
            _town,
            lambda r: f"{r.randint(1000, 500000):,}",
        ),
        _Fact(
            "{e} moved abroad at the age of {v}.",
            "At what age did {e} move abroad?",
            "How old was {e} when emigrating?",
            _person,
            lambda r: str(r.randint(16, 70)),
        ),
    ),
}
FILLER = {
    "dev": (
        "Records from that period are incomplete.",
        "Several local historians have written about this.",
        "The region has changed a great deal since then.",
        "Most visitors arrive in the summer months.",
        "Further details can be found in the appendix.",
        "The figures were checked by an independent office.",
    ),
    "test": (
        "Archival sources disagree on some of the details.",
        "This account follows the municipal chronicle.",
        "Weather conditions often made travel difficult.",
        "Later surveys confirmed the earlier estimate.",
        "A short summary appears at the end of the chapter.",
        "The original documents are kept in a vault.",
    ),
}


def _text_page(rng: random.Random, split: str, para: bool) -> _Built:
    fonts = _Fonts(rng, split)
    w = rng.randint(950, 1450)
    h = int(w * rng.uniform(1.15, 1.42))
    h = min(h, 1700)
    cv = _Canvas.blank(w, h, _paper(rng))
    ink = _ink(rng)
    ncol = rng.choice((2, 3)) if w > 1100 else 2
    fs = rng.randint(19, 27)
    font = fonts.reg(fs)
    m = rng.randint(60, 100)
    gutter = rng.randint(30, 60)
    title = (
        rng.choice(("Notes on the Region", "A Short Gazetteer", "Local Chronicle"))
        if split == "dev"
        else rng.choice(("FIELD REPORT", "Travel Almanac, Vol. II", "Municipal Yearbook"))
    )
    cv.text((m, m), title, fonts.bold(fs * 2), ink)
    top = m + fs * 4
    col_w = (w - 2 * m - gutter * (ncol - 1)) / ncol
    line_h = fs * 1.45

    # sentences: facts with unique (template, entity) and unique values, interleaved with filler
    facts: list[tuple[_Fact, str, str]] = []
    seen_e: set[tuple[int, str]] = set()
    seen_v: set[str] = set()
    for _ in range(200):
        if len(facts) >= 120:
            break
        fi = rng.randrange(len(FACTS[split]))
        f = FACTS[split][fi]
        e, v = f.entity(rng), f.value(rng)
        if (fi, e) in seen_e or v in seen_v:
            continue
        seen_e.add((fi, e))
        seen_v.add(v)
        facts.append((f, e, v))
    # sentence = list of (word, glued): a glued word (trailing punctuation after the value) takes no space before it
    sentences: list[tuple[list[tuple[str, bool]], int, int | None]] = []  # (words, value word index, fact index)
    for k, (f, e, v) in enumerate(facts):
        if rng.random() < 0.3:
            sentences.append(([(t, False) for t in rng.choice(FILLER[split]).split()], -1, None))
        before, after = f.sentence.format(e=e, v="\0").split("\0")
        tail = [(t, i == 0 and not after[:1].isspace()) for i, t in enumerate(after.split())]
        words = [(t, False) for t in before.split()] + [(v, False)] + tail
        sentences.append((words, len(before.split()), k))

    # flow words into columns; the value is one unbreakable unit (never split across lines)
    col, x, y = 0, float(m), float(top)
    placed: dict[int, Box] = {}
    space = font.getlength(" ")
    done = False
    for words, vi, k in sentences:
        xl = m + col * (col_w + gutter)
        if rng.random() < 0.15 and (y > top or x > xl):  # paragraph break
            x, y = xl, y + line_h * 1.6
        for wi, (word, glued) in enumerate(words):
            wlen = font.getlength(word)
            xl = m + col * (col_w + gutter)
            if glued:
                x -= space
            elif x + wlen > xl + col_w and x > xl:
                x, y = xl, y + line_h
            if y + line_h > h - m:
                col += 1
                if col >= ncol:
                    done = True
                    break
                x, y = m + col * (col_w + gutter), float(top)
            box = cv.text((x, y), word, font, ink)
            if k is not None and wi == vi:
                placed[k] = box
            x += wlen + space
        if done:
            if k is not None:
                placed.pop(k, None)  # the sentence was cut off
            break
    text = cv.all_text()
    candidates = [k for k in sorted(placed) if _occurrences(text, facts[k][2]) == 1]
    if not candidates:  # every placed value also occurs elsewhere; make_sample redraws
        k = min(placed)
    else:
        k = rng.choice(candidates)
    f, e, v = facts[k]
    q = (f.paraphrase if para else f.question).format(e=e)
    return _Built(cv, q, v, placed[k], para)


# --------------------------------------------------------------------------------------------------- photos

PHOTOS = {"dev": ("astronaut", "coffee"), "test": ("chelsea", "rocket")}
SIGNS = {  # kind -> split -> (question, paraphrase)
    "street": {
        "dev": ("What does the street sign say?", "Which road is this?"),
        "test": ("What is written on the road sign?", "What is the name of this thoroughfare?"),
    },
    "shop": {
        "dev": ("What does the shop sign say?", "What is the store called?"),
        "test": ("Read the storefront board.", "What business is advertised here?"),
    },
    "caption": {
        "dev": ("What does the caption say?", "How is this picture titled?"),
        "test": ("What text is in the caption strip?", "What title was given to this photograph?"),
    },
}


@lru_cache(maxsize=8)
def _photo(name: str) -> Image.Image:
    import skimage.data

    return Image.fromarray(getattr(skimage.data, name)()).convert("RGB")


def _photo_text(rng: random.Random, split: str, para: bool) -> _Built:
    fonts = _Fonts(rng, split)
    src = _photo(rng.choice(PHOTOS[split]))
    sw, sh = src.size
    cw = int(sw * rng.uniform(0.75, 1.0))
    ch = int(sh * rng.uniform(0.75, 1.0))
    cx, cy = rng.randint(0, sw - cw), rng.randint(0, sh - ch)
    crop = src.crop((cx, cy, cx + cw, cy + ch))
    scale = rng.uniform(max(720 / cw, 720 / ch), min(1650 / cw, 1650 / ch))
    w, h = int(cw * scale), int(ch * scale)
    cv = _Canvas(crop.resize((w, h), Image.BICUBIC))
    kind = rng.choice(tuple(SIGNS))
    fs = rng.randint(34, 56)
    font = fonts.bold(fs)
    if kind == "street":
        text = f"{rng.choice(STREETS)} {rng.choice(('St', 'Avenue', 'Road', 'Lane'))}"
    elif kind == "shop":
        text = rng.choice(
            (
                f"{rng.choice(FIRST)}'s Bakery",
                f"Cafe {rng.choice(CITIES)}",
                f"{rng.choice(LAST)} Books",
                f"{rng.choice(STREETS)} Pharmacy",
            )
        )
    else:
        season = rng.choice(("Summer", "Winter", "Spring", "Autumn"))
        text = f"{season} in {rng.choice(CITIES)}, {rng.randint(1990, 2023)}"
    tw = font.getlength(text)
    pad = fs * 0.5
    strip_y: float | None = None
    if kind == "caption":
        strip_y = rng.choice((0, h - fs * 2))
        cv.draw.rectangle((0, strip_y, w, strip_y + fs * 2), fill=(0, 0, 0) if split == "dev" else (250, 250, 235))
        x = rng.uniform(pad, max(pad, w - tw - pad))
        box = cv.text((x, strip_y + fs), text, font, (255, 255, 255) if split == "dev" else (30, 30, 30), "lm")
    else:
        bg, fg = ((30, 120, 60), (255, 255, 255)) if kind == "street" else ((170, 40, 40), (255, 240, 200))
        if split == "test":
            bg, fg = ((20, 60, 150), (255, 220, 40)) if kind == "street" else ((245, 245, 240), (20, 20, 20))
        sx = rng.uniform(0.05 * w, max(0.05 * w, w - tw - 2 * pad - 0.05 * w))
        sy = rng.uniform(0.08 * h, 0.75 * h)
        cv.draw.rectangle((sx, sy, sx + tw + 2 * pad, sy + fs + 2 * pad), fill=bg, outline=fg, width=3)
        box = cv.text((sx + pad, sy + pad + fs / 2), text, font, fg, "lm")
    small = fonts.reg(max(16, fs // 2))
    credit, stamp = f"Photo: {_person(rng)}", _date(rng, split)
    if strip_y is None:  # photo credit bottom right, camera date stamp top left
        cv.text((w - 15, h - 15), credit, small, (235, 235, 235), "rs")
        cv.text((15, 15), stamp, small, (255, 170, 40), "la")
    else:  # both on the side away from the caption strip
        top = strip_y > 0
        cv.text((w - 15, 15 if top else h - 15), credit, small, (235, 235, 235), "ra" if top else "rs")
        cv.text((15, 15 if top else h - 15), stamp, small, (255, 170, 40), "la" if top else "ls")
    q, p = SIGNS[kind][split]
    return _Built(cv, p if para else q, text, box, para, scan=False)


# --------------------------------------------------------------------------------------------------- articles

# Running-text pages with structure: a title, sections with headings in several columns, paragraphs, a code line
# and footnotes. Their questions name no key printed next to the answer; they refer to the page's structure.
PROSE = {
    "dev": {
        "noun": (
            "river",
            "valley",
            "harbour",
            "market",
            "council",
            "farmer",
            "bridge",
            "village",
            "road",
            "school",
            "mill",
            "forest",
            "museum",
            "station",
            "garden",
            "tower",
            "chapel",
            "archive",
            "festival",
            "orchard",
            "quarry",
            "workshop",
            "ferry",
            "canal",
        ),
        "adj": (
            "old",
            "quiet",
            "narrow",
            "busy",
            "northern",
            "eastern",
            "small",
            "ancient",
            "wooden",
            "modern",
            "famous",
            "distant",
        ),
        "verb": (
            "supplies",
            "crosses",
            "follows",
            "shelters",
            "records",
            "connects",
            "overlooks",
            "borders",
            "feeds",
            "serves",
        ),
        "templates": (
            "The {a} {n} {v} the {n} near the {n}.",
            "Over time the {n} {v} a {a} {n}.",
            "Visitors say the {n} {v} the {a} {n} every year.",
            "In winter the {n} of the {n} {v} the {n}.",
            "Its {a} {n} gave the {n} the ability to grow.",
            "Many believe the {a} {n} {v} each {n}.",
        ),
        "headings": (
            "Early History",
            "The Harbour",
            "Trade Routes",
            "Local Crafts",
            "Festivals",
            "Water Supply",
            "Farming",
            "Schools",
            "Transport",
            "Later Years",
            "Architecture",
            "Population",
        ),
        "titles": ("Notes on the Old Valley", "A Guide to the Northern Towns", "Village Life in Winter"),
        "code": (("rate", "compute(total, 3)"), ("count", "len(records)"), ("path", "join(root, name)")),
        "foot": ("Figures from the parish register.", "See the appendix for sources.", "Estimated by the council."),
    },
    "test": {
        "noun": (
            "glacier",
            "lighthouse",
            "plateau",
            "brewery",
            "observatory",
            "tramway",
            "monastery",
            "vineyard",
            "foundry",
            "reservoir",
            "estuary",
            "aqueduct",
            "citadel",
            "granary",
            "pier",
            "boulevard",
            "tannery",
            "cannery",
            "signal",
            "dune",
        ),
        "adj": (
            "windswept",
            "coastal",
            "remote",
            "restored",
            "crowded",
            "southern",
            "western",
            "steep",
            "medieval",
            "sunny",
            "rocky",
            "humble",
        ),
        "verb": (
            "guards",
            "drains",
            "faces",
            "links",
            "powers",
            "dominates",
            "protects",
            "hosts",
            "irrigates",
            "frames",
        ),
        "templates": (
            "Beyond the {a} {n} lies a {n} that {v} the {n}.",
            "Each spring the {n} {v} the {a} {n}.",
            "Engineers claim the {n} still {v} the {n} of the {n}.",
            "A {a} {n} now {v} what was once a {n}.",
            "Locals recall how the {n} {v} their {a} {n}.",
        ),
        "headings": (
            "ORIGINS",
            "THE COASTLINE",
            "INDUSTRY",
            "PILGRIMS",
            "MARKETS",
            "CLIMATE",
            "RAILWAYS",
            "HARVESTS",
            "DEFENCES",
            "TOURISM",
            "GEOLOGY",
            "GOVERNANCE",
        ),
        "titles": ("Coastal Survey Bulletin", "Report on the Southern Plateau", "Chronicle of the Estuary"),
        "code": (("flux", "integrate(area, dt)"), ("total_len", "sum(segments)"), ("cfg", "load_config(path)")),
        "foot": ("Measured during the 2019 survey.", "Source: harbour authority records.", "Rounded to whole units."),
    },
}
ORDINAL_WORDS = (
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
)
ARTICLE_QUESTIONS = {  # question kind -> split -> (literal, paraphrase)
    "title": {
        "dev": ("What is the title of this page?", "How is this article titled?"),
        "test": ("What headline does this document carry?", "Read the main heading of the report."),
    },
    "section": {
        "dev": (
            "What is the heading of the {o} section in the {s} column?",
            "Which heading does the {o} section of the {s} column have?",
        ),
        "test": (
            "Which heading opens the {o} part of the {s}-hand column?",
            "Name the {o} chapter heading in the {s}-hand column.",
        ),
    },
    "after": {
        "dev": ("Which word comes right after '{p}'?", "What is the next word after '{p}'?"),
        "test": ("What word follows the phrase \u201c{p}\u201d?", "Which word is printed just after \u201c{p}\u201d?"),
    },
    "last_word": {
        "dev": ("What is the last word of the section titled '{h}'?", "How does the section titled '{h}' end?"),
        "test": (
            "What is the final word in the section headed \u201c{h}\u201d?",
            "With which word does the part headed \u201c{h}\u201d close?",
        ),
    },
    "para_end": {
        "dev": (
            "What is mentioned at the end of the paragraph that begins with '{f}'?",
            "What is the last word of the paragraph starting with '{f}'?",
        ),
        "test": (
            "Which word ends the paragraph opening with \u201c{f}\u201d?",
            "What is the closing word of the passage beginning \u201c{f}\u201d?",
        ),
    },
    "code": {
        "dev": ("In the code line, what is assigned to {v}?", "What value does the code give {v}?"),
        "test": ("According to the code snippet, what does {v} receive?", "What expression is stored in {v}?"),
    },
}
LAYOUT_QUESTIONS = ("title", "section")
TEXT_QUESTIONS = ("after", "last_word", "para_end", "code")


def _sentence(rng: random.Random, split: str) -> list[str]:
    vocab = PROSE[split]
    tpl = rng.choice(vocab["templates"])
    out = re.sub(r"\{(\w)\}", lambda m: rng.choice(vocab[{"a": "adj", "n": "noun", "v": "verb"}[m.group(1)]]), tpl)
    return out.split()


def _article(rng: random.Random, split: str, para: bool, questions: tuple[str, ...]) -> _Built:
    """A multi-column page with title, headed sections, paragraphs, a code line and footnotes."""
    fonts = _Fonts(rng, split)
    vocab = PROSE[split]
    w = rng.randint(1000, 1500)
    h = min(1700, int(w * rng.uniform(1.2, 1.4)))
    cv = _Canvas.blank(w, h, _paper(rng))
    ink = _ink(rng)
    fs = rng.randint(18, 24)
    font, small = fonts.reg(fs), fonts.reg(int(fs * 0.75))
    head_font = fonts.bold(int(fs * (1.35 if split == "dev" else 1.25)))
    m = rng.randint(60, 90)
    ncol = 2 if split == "dev" or w < 1250 else rng.choice((2, 3))
    gutter = rng.randint(40, 70)
    title = rng.choice(vocab["titles"])
    title_box = cv.text(
        (m if split == "dev" else w / 2, m), title, fonts.bold(int(fs * 2.1)), ink, "la" if split == "dev" else "ma"
    )
    top = title_box[3] + fs * 2.5
    cv.draw.line((m, top - fs, w - m, top - fs), fill=ink, width=2)
    foot_top = h - m - fs * 3
    col_w = (w - 2 * m - gutter * (ncol - 1)) / ncol
    line_h = fs * 1.45
    space = font.getlength(" ")
    # the page's words in reading order: (text, box, line y, paragraph index)
    words: list[tuple[str, Box, float, int]] = []
    sections: list[dict] = []  # {"heading", "box", "col", "words": [word index]}
    paragraphs: list[list[int]] = []
    code: tuple[str, str, Box] | None = None
    col, y = 0, float(top)
    headings = rng.sample(vocab["headings"], len(vocab["headings"]))
    code_at = rng.randrange(1, 4)
    full = False
    for sec_i, heading in enumerate(headings):
        xl = m + col * (col_w + gutter)
        if y + line_h * 4 > foot_top:
            col += 1
            if col >= ncol:
                break
            xl, y = m + col * (col_w + gutter), float(top)
        if y > top:
            y += line_h * 0.8
        hbox = cv.text((xl, y), heading, head_font, ink)
        sections.append({"heading": heading, "box": hbox, "col": col, "words": []})
        y += line_h * 1.5
        for _p in range(rng.randint(1, 2)):
            para_words: list[int] = []
            x = xl
            sentences = [_sentence(rng, split) for _ in range(rng.randint(2, 4))]
            for sent in sentences:
                for tok in sent:
                    core, punct = (tok[:-1], tok[-1]) if tok[-1] in ".," else (tok, "")
                    wlen = font.getlength(core)
                    if x + wlen + font.getlength(punct) > xl + col_w and x > xl:
                        x, y = xl, y + line_h
                    if y + line_h > foot_top:
                        col += 1
                        if col >= ncol:
                            full = True
                            break
                        xl, x, y = m + col * (col_w + gutter), m + col * (col_w + gutter), float(top)
                    box = cv.text((x, y), core, font, ink)
                    words.append((core, box, y, len(paragraphs)))
                    para_words.append(len(words) - 1)
                    sections[-1]["words"].append(len(words) - 1)
                    x += wlen
                    if punct:
                        cv.text((x, y), punct, font, ink)
                        x += font.getlength(punct)
                    x += space
                if full:
                    break
            if para_words:
                paragraphs.append(para_words)
            if full:
                break
            y += line_h * 1.6
            if sec_i == code_at and code is None and y + line_h * 2 < foot_top:
                var, expr = rng.choice(vocab["code"])
                cv.draw.rectangle((xl - 4, y - 4, xl + col_w, y + fs * 1.3), fill=(235, 235, 235))
                kbox = cv.text((xl + 4, y), f"{var} =", font, (20, 20, 120))
                vbox = cv.text((kbox[2] + space, y), expr, font, (20, 20, 120))
                code = (var, expr, vbox)
                y += line_h * 1.8
        if full:
            break
    # footnotes across the page bottom
    cv.draw.line((m, foot_top + fs * 0.6, m + (w - 2 * m) / 3, foot_top + fs * 0.6), fill=ink, width=1)
    fy = foot_top + fs
    for k, note in enumerate(rng.sample(vocab["foot"], 2), 1):
        cv.text((m, fy), f"{k} {note}", small, ink)
        fy += fs * 0.95
    # a full section has a heading and at least one whole paragraph
    sections = [s for s in sections if s["words"] and (not full or s is not sections[-1])]
    if full and paragraphs:
        paragraphs = paragraphs[:-1]
    kind = rng.choice([q for q in questions if q != "code" or code is not None])
    qs = ARTICLE_QUESTIONS[kind][split]
    template = qs[1] if para else qs[0]
    text_norm = [re.sub(r"\W", "", t.lower()) for t, *_ in words]
    if kind == "title":
        return _Built(cv, template, title, title_box, para, unique=False)
    if kind == "section":
        side = rng.choice(("left", "right"))
        c = 0 if side == "left" else ncol - 1
        in_col = [s for s in sections if s["col"] == c]
        k = rng.randrange(min(len(in_col), 4))
        q = template.format(o=ORDINAL_WORDS[k], s=side)
        return _Built(cv, q, in_col[k]["heading"], in_col[k]["box"], para, unique=False)
    if kind == "code":
        var, expr, vbox = code  # type: ignore[misc]
        return _Built(cv, template.format(v=var), expr, vbox, para, unique=False)
    if kind == "last_word":
        s = rng.choice(sections[:-1] or sections)
        last = s["words"][-1]
        return _Built(
            cv,
            template.format(h=s["heading"].title() if split == "dev" else s["heading"].title()),
            words[last][0],
            words[last][1],
            para,
            unique=False,
        )
    if kind == "para_end":
        p = rng.choice(paragraphs)
        starts = [[text_norm[i] for i in q] for q in paragraphs if q is not p]
        n = 3  # as many first words as it takes to tell the paragraph apart from every other
        while n < len(p) and any(st[:n] == [text_norm[i] for i in p[:n]] for st in starts):
            n += 1
        first = " ".join(words[i][0] for i in p[:n])
        return _Built(cv, template.format(f=first), words[p[-1]][0], words[p[-1]][1], para, unique=False)
    # "after": a 2-3 word phrase that occurs once on the page; half of them run over a line break
    cands = []
    for i in range(len(words) - 3):
        for n in (2, 3):
            if words[i + n][3] != words[i][3]:
                continue  # phrase and answer in one paragraph
            phrase = text_norm[i : i + n]
            hits = sum(text_norm[j : j + n] == phrase for j in range(len(words) - n + 1))
            if hits == 1 and all(phrase):
                crosses = words[i][2] != words[i + n][2] or words[i][2] != words[i + n - 1][2]
                cands.append((i, n, crosses))
                break
    crossing = [c for c in cands if c[2]]
    i, n, _ = rng.choice(crossing if crossing and rng.random() < 0.5 else cands)
    phrase = " ".join(words[j][0] for j in range(i, i + n))
    return _Built(cv, template.format(p=phrase), words[i + n][0], words[i + n][1], para, unique=False)


def _page_layout(rng: random.Random, split: str, para: bool) -> _Built:
    return _article(rng, split, para, LAYOUT_QUESTIONS)


def _running_text(rng: random.Random, split: str, para: bool) -> _Built:
    return _article(rng, split, para, TEXT_QUESTIONS)


# --------------------------------------------------------------------------------------------------- line charts

LINE_SERIES = {
    "dev": (tuple(m[:3] for m in MONTHS), ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")),
    "test": (MONTHS, ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"), CITIES[:10]),
}
LINE_QUESTIONS = {  # question kind -> split -> (literal, paraphrase); {u}: the category noun
    "max": {
        "dev": ("Which {u} has the highest value?", "In which {u} did the line peak?"),
        "test": ("Where is the largest figure recorded, by {u}?", "Which {u} tops the chart?"),
    },
    "min": {
        "dev": ("Which {u} has the lowest value?", "Which {u} shows the smallest number?"),
        "test": ("Which {u} has the least?", "In which {u} is the figure lowest?"),
    },
    "ordinal": {
        "dev": ("What is the value for the {o} {u} of the {p}?", "What number is shown for the {o} {u}?"),
        "test": ("What figure is given for the {o} {u} of the {p}?", "Read the value of the {o} {u}."),
    },
}


def _line_chart(rng: random.Random, split: str, para: bool) -> _Built:
    """A line chart with point value labels, category labels, axis titles and a legend."""
    fonts = _Fonts(rng, split)
    w, h = rng.randint(1000, 1500), rng.randint(720, 1000)
    cv = _Canvas.blank(w, h, (255, 255, 255) if rng.random() < 0.5 else _paper(rng))
    ink = _ink(rng)
    seq = rng.choice(LINE_SERIES[split])
    unit = "month" if seq[0].startswith("Jan") else "day" if seq[0].startswith("Mon") else "city"
    n = rng.randint(6, len(seq)) if unit != "city" else rng.randint(6, 8)
    cats = list(seq[:n])
    if unit == "city":
        cats = rng.sample(list(seq), n)
    vmax = rng.choice((100, 500, 1000))
    values: list[int] = []
    while len(values) < n:
        v = rng.randint(vmax // 20, vmax - vmax // 20)
        if v not in values:
            values.append(v)
    fs = rng.randint(17, 23)
    reg, bold, small = fonts.reg(fs), fonts.bold(fs), fonts.reg(int(fs * 0.85))
    m = rng.randint(50, 80)
    title = (
        rng.choice(("Monthly visitors", "Orders per period", "Rainfall (mm)"))
        if split == "dev"
        else rng.choice(("Deliveries by site", "Energy demand, MWh", "Passenger counts"))
    )
    cv.text((w / 2, m), title, fonts.bold(int(fs * 1.4)), ink, "ma")
    x0, x1 = m + 80, w - m - 40
    y_top, y_base = m + fs * 5, h - m - fs * 4
    cv.draw.line((x0, y_base, x1, y_base), fill=ink, width=2)
    cv.draw.line((x0, y_base, x0, y_top - 10), fill=ink, width=2)
    for t in range(0, 5):
        yt = y_base - (y_base - y_top) * t / 4
        if t:
            cv.draw.line((x0, yt, x1, yt), fill=(215, 215, 215), width=1)
        cv.text((x0 - 8, yt), f"{vmax * t // 4}", small, ink, "rm")
    cv.text((x0 - 60, y_top - fs * 2.2), "units", small, ink)
    color = rng.choice([(66, 110, 180), (200, 90, 60), (70, 150, 90)])
    slot = (x1 - x0) / n
    pts = [(x0 + (i + 0.5) * slot, y_base - (y_base - y_top) * v / vmax) for i, v in enumerate(values)]
    cv.draw.line(pts, fill=color, width=3)
    value_boxes: list[Box] = []
    label_boxes: list[Box] = []
    for i, ((px, py), v) in enumerate(zip(pts, values, strict=True)):
        cv.draw.ellipse((px - 5, py - 5, px + 5, py + 5), fill=color)
        below = split == "test" and i % 2 == 1
        value_boxes.append(cv.text((px, py + 12 if below else py - 12), str(v), bold, ink, "ma" if below else "md"))
        label_boxes.append(cv.text((px, y_base + 10), cats[i], reg, ink, "ma"))
    # legend, top right
    lx = x1 - 200
    cv.draw.line((lx, m + fs * 2.6, lx + 30, m + fs * 2.6), fill=color, width=3)
    cv.text((lx + 40, m + fs * 2.6), rng.choice(("2023", "This year", "Series A")), small, ink, "lm")
    kind = rng.choice(("max", "min", "ordinal") if unit != "city" else ("max", "min"))
    qs = LINE_QUESTIONS[kind][split]
    template = qs[1] if para else qs[0]
    if kind in ("max", "min"):
        i = values.index(max(values) if kind == "max" else min(values))
        return _Built(cv, template.format(u=unit), cats[i], label_boxes[i], para)
    i = rng.randrange(n)
    period = "year" if unit == "month" else "week"
    q = template.format(o=ORDINAL_WORDS[i], u=unit, p=period)
    return _Built(cv, q, str(values[i]), value_boxes[i], para)


# --------------------------------------------------------------------------------------------------- API

BUILDERS: dict[str, Callable[[random.Random, str, bool], _Built]] = {
    "receipt": _receipt,
    "invoice": _invoice,
    "form": _form,
    "table": _table,
    "bar_chart": _bar_chart,
    "text_page": _text_page,
    "photo_text": _photo_text,
    "page_layout": _page_layout,
    "running_text": _running_text,
    "line_chart": _line_chart,
}


def make_sample(split: str, kind: str, index: int, seed: int = 0) -> Sample:
    """Draw sample ``index`` of ``kind`` for ``split``; a pure function of its arguments.

    Raises:
        ValueError: on an unknown split or kind.
        RuntimeError: if no draw with a unique answer is found (does not happen with the shipped templates).
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if kind not in BUILDERS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    para = index % PARAPHRASE_EVERY == 1
    for attempt in range(MAX_ATTEMPTS):
        rng = random.Random(f"arr-coc-docgen|{split}|{kind}|{index}|{seed}|{attempt}")
        built = BUILDERS[kind](rng, split, para)
        if built.unique and _occurrences(built.canvas.all_text(), built.answer) != 1:
            continue
        image, box = _scan_look(built.canvas.image, built.box, rng, rotate=built.scan)
        return Sample(f"{split}/{kind}/{index}", kind, image, built.query, built.answer, box, para)
    raise RuntimeError(f"no unique-answer draw for {split}/{kind}/{index} seed={seed}")


def real_scan_sample() -> Sample:
    """The real scanned page ``skimage.data.page()`` with a hand-checked question and answer box."""
    import skimage.data

    image = Image.fromarray(skimage.data.page()).convert("RGB")
    return Sample("test/real_scan/0", REAL_SCAN_KIND, image, REAL_SCAN_QUESTION, REAL_SCAN_ANSWER, REAL_SCAN_BOX, False)


def generate(split: str, n: int, seed: int = 0, kinds: Sequence[str] = KINDS) -> list[Sample]:
    """``n`` samples of every kind for ``split`` (kind-major order); the test split adds the real scan at the end.

    Args:
        split: "dev" or "test".
        n: samples per kind (>= 0).
        seed: changes every document; the same (split, n, seed) always gives the same samples.
        kinds: which kinds to draw (default all of ``KINDS``).
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    samples = [make_sample(split, kind, i, seed) for kind in kinds for i in range(n)]
    if split == "test" and n > 0:
        samples.append(real_scan_sample())
    return samples
