"""Printed keys for questions that name none: a small paraphrase lexicon for German, French and Spanish questions.

An English question that names no printed key ("How much must be paid?" for "Total") is matched to the key by the
English MiniLM; a question worded in another language is not (``semantic.foreign_strong_factor``; the MiniLM's
similarities to "Combien faut-il payer en tout ?" are noise). This lexicon maps what such a question asks about, in
its own words, to the keys documents print for it, in every language at once: "payer en tout" asks for a total, and
a total is printed "Montant total", "Total TTC", "Net à payer", "Importe total", "Gesamtbetrag", "Summe"...

``key_phrases(question)`` returns those printed keys; ``lexical.lexical_scores`` scores each as a query of its own,
for a question worded in another language (``lexical.foreign_words``) whose own words name no key
(``PARAPHRASE_BELOW``), and keeps a box's best score, times ``PARAPHRASE_WEIGHT``. English questions never reach it.

Concepts are tested in order; each lists the concepts it rules out when its cue is in the question ("avant les
taxes" asks for the subtotal, not the tax; "avant quand faut-il payer" asks for the due date, not the total; "quel
numéro appeler" for the telephone, not the document's number). The cues are written in lower case without accents:
the question is folded the same way before they are tested.

The lexicon was written from the vocabulary of invoices, receipts and forms in those languages, not from the
benchmark's question templates (``evaluation.langgen.VOCAB``), whose paraphrased questions are one wording each.

Example:
    >>> key_phrases("Combien faut-il payer en tout ?")[:2]
    ('montant total', 'total')
"""

from __future__ import annotations

import re
import unicodedata

PARAPHRASE_BELOW = 0.95  # the question's own best lexical match under this: it names no printed key in full
PARAPHRASE_WEIGHT = 0.9  # a printed key found through the lexicon scores this much of its own match

# (concept, cue in the question (folded: lower case, no accents), printed keys, concepts it rules out)
LEXICON: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "subtotal",
        r"\b(?:avant|hors|sans) (?:les |la |l'|toute )?(?:taxes?|tva|impots?)\b|\bsous-?total\b|\bmontant net\b|"
        r"\b(?:antes de|sin) (?:los |el |la )?(?:impuestos?|iva|tasas)\b|\bbase imponible\b|\bsubtotal\b|"
        r"\b(?:vor|ohne) (?:den |der |die )?(?:steuern?|mwst|mehrwertsteuer|ust)\b|\bnetto\w*\b|\bzwischensumme\b",
        ("sous-total", "total ht", "montant ht", "subtotal", "base imponible", "zwischensumme", "nettobetrag"),
        ("tax", "total"),
    ),
    (
        "due",
        r"\bavant quand\b|\bd'ici quand\b|\bjusqu'(?:a|au) quand\b|\bdate limite\b|\becheance\b|\bdelai\b|"
        r"\bhasta cuando\b|\bplazo\b|\bvencimiento\b|\bvence\b|\bfecha limite\b|"
        r"\bbis wann\b|\bfallig\w*\b|\bfrist\b|\bzahlungsziel\b|\bspatestens\b",
        (
            "échéance",
            "date d'échéance",
            "date limite",
            "vencimiento",
            "fecha de vencimiento",
            "fällig am",
            "fälligkeit",
            "zahlungsziel",
        ),  # fmt: skip
        ("total", "date"),
    ),
    (
        "phone",
        r"\bappel\w*\b|\bjoindre\b|\btelephon\w*\b|\bllam\w*\b|\btelefon\w*\b|\banruf\w*\b|\berreichen\b",
        ("téléphone", "tél", "teléfono", "telefon", "tel"),
        ("number",),
    ),
    (
        "customer",
        r"\ba qui\b|\badresse(?:e|s|es)\b|\bdestinataire\b|\bfacture(?:e|s|es)? a\b|\bclient\w*\b|\bacheteur\b|"
        r"\ba quien\b|\bdirigid[ao]\b|\bdestinatari[oa]\b|\bcomprador\w*\b|"
        r"\ban wen\b|\bgerichtet\b|\bempfanger\b|\bkunde\w*\b|\bkaufer\w*\b",
        ("client", "cliente", "kunde", "destinataire", "empfänger", "rechnungsempfänger"),
        ("address",),
    ),
    (
        "address",
        r"\bou (?:se )?(?:trouve|situe|est|sont|sis)\w*\b|\bsitue\w*\b|\bsiege\b|\badresse\b|\blocalis\w*\b|"
        r"\bdonde (?:esta|se encuentra|se ubica|queda)\w*\b|\bubicad\w*\b|\bsede\b|\bdireccion\b|\bdomicilio\b|"
        r"\bwo (?:sitzt|ist|befindet|liegt)\b|\bsitz\b|\banschrift\b|\bstandort\b",
        ("adresse", "siège", "dirección", "domicilio", "anschrift", "adresse", "sitz"),
        (),
    ),
    (
        "date",
        r"\bemise?\b|\bemission\b|\betabli\w*\b|\bdate\b|\bdatee?\b|"
        r"\bemiti\w*\b|\bemision\b|\bexpedi\w*\b|\bfecha\b|"
        r"\bausgestellt\b|\bausstellung\w*\b|\bdatum\b|\bdatiert\b",
        (
            "date de facture",
            "date d'émission",
            "fecha de emisión",
            "fecha de factura",
            "rechnungsdatum",
            "ausstellungsdatum",
            "datum",
        ),  # fmt: skip
        (),
    ),
    (
        "number",
        r"\breference\b|\bnumero\b|\bn°|\breferencia\b|\bnummer\b|\breferenz\b|\baktenzeichen\b|\bnr\b",
        (
            "n° de facture",
            "numéro de facture",
            "référence",
            "número de factura",
            "referencia",
            "rechnungsnummer",
            "referenz",
        ),  # fmt: skip
        (),
    ),
    (
        "tax",
        r"\btaxes?\b|\btva\b|\bimpots?\b|\bimpuestos?\b|\biva\b|\bsteuer\w*\b|\bmwst\b|\bust\b",
        ("tva", "montant tva", "iva", "impuestos", "mwst", "ust", "mehrwertsteuer", "steuer"),
        ("total",),
    ),
    (
        "total",
        r"\ben tout\b|\bau total\b|\btotal\w*\b|\bpayer\b|\bregler\b|\bsomme\b|\bcout\w*\b|"
        r"\ben total\b|\bpagar\b|\babonar\b|\bimporte\b|\bcuesta\b|\bsuma\b|"
        r"\binsgesamt\b|\bzahlen\b|\bgezahlt\b|\bbezahl\w*\b|\bgesamt\w*\b|\bsumme\b|\bendbetrag\b|\bkostet\b",
        (
            "montant total",
            "total",
            "total ttc",
            "net à payer",
            "importe total",
            "total a pagar",
            "gesamtbetrag",
            "gesamtsumme",
            "summe",
            "endbetrag",
            "rechnungsbetrag",
        ),  # fmt: skip
        (),
    ),
)
_CUES = tuple((name, re.compile(cue), keys, rules_out) for name, cue, keys, rules_out in LEXICON)


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", text.lower().replace("’", "'"))
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def concepts(question: str) -> tuple[str, ...]:
    """The concepts ``question`` asks about, in ``LEXICON``'s order, those ruled out by an earlier one dropped."""
    return cued(_fold(question), _CUES)


def cued(q: str, cues) -> tuple[str, ...]:
    """The names of ``cues`` (``(name, cue pattern, keys, names it rules out)`` rows, in order) whose pattern is found
    in the folded question ``q``, those ruled out by an earlier one dropped (also ``paraphrase_en``'s)."""
    found: list[str] = []
    out: set[str] = set()
    for name, cue, _, rules_out in cues:
        if name not in out and cue.search(q):
            found.append(name)
            out.update(rules_out)
    return tuple(found)


def key_phrases(question: str) -> tuple[str, ...]:
    """The printed keys of every concept ``question`` asks about (``concepts``), in every language of the lexicon."""
    keys = {name: k for name, _, k, _ in LEXICON}
    return tuple(dict.fromkeys(p for name in concepts(question) for p in keys[name]))
