"""Validation grouped by source and the residual scorer's fallback to the rules.

* A synthetic set of receipts from three sources, each printing the shop's name in its own place and with its own
  type size: document-level folds over sources A and B let a scorer memorise each source's layout and promise a
  recall that a new source C does not get; source-grouped folds predict C's figure.
* The residual scorer (a bounded correction of the rules' score) scores every out-of-range box exactly as the rules
  do, and a zero correction is the rules.
Nothing here needs /work/shared, /work/data, OCR models or MiniLM.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from arr_coc.reading import QueryMatcher, ReadingConfig, TextBox
from arr_coc.reading.matching.learned import FEATURES, BoxScorer
from arr_coc.training.data import Question, derive_sources, folds, load_jsonl, source_folds
from arr_coc.training.evidence import (
    CANDIDATES,
    candidate_recalls,
    choose,
    extract,
    fit,
    holdout_sources,
    nested_validate,
    recall_at,
    rule_scores,
    rules_checkpoint,
    summarise,
)

SIZE = (560, 784)
SLOTS = [(x, 30.0 + 92.0 * r) for r in range(8) for x in (30.0, 290.0)]  # 16 name-like boxes on every page
NAMES = [
    f"{a} {b}" for a in ("ACME", "SUNRISE", "KEDAI", "BLUE", "GOLDEN", "PINE") for b in ("MART", "TRADING", "STORE")
]
SOURCES = {"A": (0, 18.0), "B": (15, 30.0), "C": (8, 42.0)}  # source -> (slot of the answer, text height)


class FakeReader:
    """OCR stand-in: the page's synthetic boxes, keyed by its pixels."""

    def __init__(self) -> None:
        self.pages: dict[bytes, list[TextBox]] = {}

    def add(self, seed: int, boxes: list[TextBox]) -> Image.Image:
        img = Image.new("RGB", SIZE, (255, 255, 255))
        img.putpixel((0, 0), (seed % 256, seed // 256 % 256, 9))
        self.pages[img.tobytes()] = boxes
        return img

    def read(self, image: Image.Image | np.ndarray) -> list[TextBox]:  # a PIL image or (H, W, 3) uint8 pixels
        return list(self.pages[np.asarray(image.convert("RGB") if isinstance(image, Image.Image) else image).tobytes()])


def page(rng: random.Random, source: str) -> tuple[list[TextBox], int]:
    """A receipt of ``source``: 16 upper-case names in two columns (one is the shop: the answer, in the source's
    slot), in the source's type size; returns the boxes and the answer's index."""
    slot, h = SOURCES[source]
    names = rng.sample(NAMES, len(SLOTS))
    boxes = [TextBox(n, (x, y, x + 240.0, y + h)) for n, (x, y) in zip(names, SLOTS, strict=True)]
    return boxes, slot


@pytest.fixture(scope="module")
def three_sources() -> dict[str, list]:
    rng = random.Random(0)
    reader = FakeReader()
    qs: dict[str, list[Question]] = {}
    for s, source in enumerate(SOURCES):
        for n in range(24):
            boxes, answer = page(rng, source)
            image = reader.add(100 * s + n, boxes)
            q = Question(
                f"{source}{n}",
                "Which company issued this receipt?",
                [boxes[answer].box],
                doc=f"{source}/page{n}",
                doc_type="receipt",
                source=source,
                image=image,
            )
            qs.setdefault(source, []).append(q)
    matcher = QueryMatcher(ReadingConfig(), semantic=False)
    return {source: extract(q, matcher, reader) for source, q in qs.items()}


def _recall(records, recalls) -> float:
    return summarise(records, recalls)["overall"]["recall"]


def test_document_folds_overestimate_and_source_folds_predict_a_new_source(three_sources) -> None:
    """Trained on sources A and B (free MLP: it can memorise where each source prints the name, told apart by the
    type size), a new source C gets a low recall; document-level folds over A and B promise a high one, source
    folds (train on A, score B and back) promise what C gets."""
    train = three_sources["A"] + three_sources["B"]
    new = three_sources["C"]
    cand = {"mlp16": CANDIDATES["mlp16"]}
    doc_rec, _ = candidate_recalls(train, folds([r.question for r in train], 2, 0), 2, cand, 30, 0)
    src_of = source_folds([r.question for r in train], 2, 0)
    assert {src_of[0], src_of[-1]} == {0, 1}  # A and B in different folds
    src_rec, _ = candidate_recalls(train, src_of, 2, cand, 30, 0)
    scorer = fit(train, hidden=16, epochs=30, seed=0)
    actual = _recall(new, [recall_at(r, scorer.box_scores(r.feats)) for r in new])
    doc_est, src_est = _recall(train, doc_rec["mlp16"]), _recall(train, src_rec["mlp16"])
    assert doc_est >= 0.8, doc_est  # the document-level figure: memorised layouts
    assert actual <= 0.4, actual  # what a new source gets
    assert doc_est - actual >= 0.5, (doc_est, actual)  # the overestimate
    assert abs(src_est - actual) <= 0.25, (src_est, actual)  # the source-grouped figure predicts it


def test_nested_choice_uses_only_the_training_part(three_sources) -> None:
    """Nested validation over three sources: each outer fold's choice comes from its inner folds (training part
    only), the chosen figure is that candidate's held-out figure, and a fold's chosen scorer is None for the rules."""
    records = three_sources["A"] + three_sources["B"] + three_sources["C"]
    fold_of = source_folds([r.question for r in records], 3, 0)
    assert len({(r.question.source, f) for r, f in zip(records, fold_of, strict=True)}) == 3
    cands = {"rules": CANDIDATES["rules"], "res16-b2": CANDIDATES["res16-b2"]}
    nested = nested_validate(records, fold_of, 3, cands, lambda qs: source_folds(qs, 2, 0), 2, epochs=10, seed=0)
    assert set(nested.choice) == {0, 1, 2}
    for f, name in nested.choice.items():
        assert name == choose(nested.inner[f])
        assert (nested.scorers[f] is None) == (name == "rules")
        for i, g in enumerate(fold_of):
            if g == f:
                assert nested.chosen[i] == nested.per_candidate[name][i]


def test_choose_prefers_the_rules_on_ties() -> None:
    assert choose({"mlp16": 0.9, "rules": 0.9}) == "rules"
    assert choose({"rules": 0.8, "mlp16": 0.9, "res16": 0.9}) == "mlp16"


def test_residual_scorer_falls_back_to_the_rules_out_of_distribution(three_sources) -> None:
    """A residual scorer with the range check scores a box whose features lie outside the training range exactly
    as the rules do, and in-range boxes by its correction; without the check the same box is corrected."""
    records = three_sources["A"] + three_sources["B"]
    scorer = fit(records, hidden=16, epochs=10, seed=0, residual=True, bound=2.0)
    feats = records[0].feats.copy()
    rule = rule_scores(records[0])
    assert not np.allclose(scorer.box_scores(feats), rule)  # in range: corrected
    far = feats.copy()
    far[:, FEATURES.index("xc")] = 50.0  # boxes 50 page-widths to the right: nothing seen in training
    scorer.ood_margin = None
    assert not np.allclose(scorer.box_scores(far), rule)  # no check: the correction still applies
    scorer.ood_margin = 0.5
    assert scorer.out_of_range(torch.from_numpy(far)).all()
    np.testing.assert_array_equal(scorer.box_scores(far), rule / max(1.0, float(rule.max())))
    mixed = feats.copy()
    mixed[0, FEATURES.index("n_chars")] = 1e3  # one box out of range: only it falls back
    ood = scorer.out_of_range(torch.from_numpy(mixed)).numpy()
    assert ood.tolist() == [True] + [False] * (len(mixed) - 1)
    with torch.no_grad():
        c = scorer.correction(torch.from_numpy(mixed))
    assert float(c[0]) == 0.0 and bool((c[1:].abs() < 2.0).all())  # bounded


def test_rules_checkpoint_is_the_rules(three_sources, tmp_path: Path) -> None:
    scorer = rules_checkpoint()
    scorer.save(tmp_path)
    loaded = BoxScorer.load(tmp_path)
    for r in three_sources["A"][:5]:
        np.testing.assert_array_equal(loaded.box_scores(r.feats), rule_scores(r))


def test_residual_options_are_checked() -> None:
    with pytest.raises(ValueError, match="residual=True"):
        BoxScorer(bound=2.0)
    with pytest.raises(ValueError, match="bound must be"):
        BoxScorer(residual=True, bound=0.0)
    with pytest.raises(ValueError, match="ood_margin"):
        BoxScorer(residual=True, ood_margin=-1.0)


def test_old_checkpoint_without_a_range_loads(tmp_path: Path) -> None:
    """Checkpoints saved before the training range was recorded have none: they load, and nothing is out of range."""
    from safetensors.torch import load_file, save_file

    scorer = BoxScorer(hidden=4)
    scorer.save(tmp_path)
    state = {k: v for k, v in load_file(str(tmp_path / "model.safetensors")).items() if k not in ("lo", "hi")}
    save_file(state, str(tmp_path / "model.safetensors"))
    loaded = BoxScorer.load(tmp_path)
    feats = torch.randn(3, len(FEATURES)) * 100
    assert not loaded.out_of_range(feats).any()
    assert torch.equal(loaded(feats), scorer(feats))


def test_derived_sources_and_source_folds(tmp_path: Path) -> None:
    rows = [
        {"id": "f1", "image": "a.png", "doc_type": "realform", "render": {"file": "0060000813.png"}},
        {"id": "f2", "image": "b.png", "doc_type": "realform", "render": {"file": "00920222.png"}},
        {"id": "r1", "image": "r.jpg", "doc_type": "realreceipt", "key": "company", "answer": "MR. D.I.Y. (M) SDN"},
        {"id": "r2", "image": "r.jpg", "doc_type": "realreceipt", "key": "date", "answer": "1/2/18"},
        {"id": "r3", "image": "s.jpg", "doc_type": "realreceipt", "key": "date", "answer": "1/2/18"},
        {"id": "t1", "image": "t.png", "doc_type": "realtable", "render": {"source": "cam_eu-002.pdf"}},
        {"id": "t2", "image": "u.png", "doc_type": "realtable", "render": {"source": "jsv_pr-138-example.pdf"}},
        {"id": "x1", "image": "x.png", "doc_type": "realtable", "source": "docling:2206.01062"},
        {"id": "d1", "image": "d.png"},
    ]
    assert derive_sources(rows) == [
        "funsd:10d0060",
        "funsd:8d00",
        "sroie:MR D",
        "sroie:MR D",
        "sroie:file:s.jpg",
        "pdf:icdar2013-eu",
        "pdf:jsv_pr-138-example",
        "docling:2206.01062",
        "page:d.png",
    ]
    path = tmp_path / "q.jsonl"
    path.write_text(
        "".join(f'{{"id": "{r["id"]}", "query": "q", "boxes": [[0, 0, 1, 1]], "image": "i.png"}}\n' for r in rows[:2])
    )
    assert [q.source for q in load_jsonl(path)] == ["page:i.png", "page:i.png"]
    qs = [
        Question(f"{s}{i}", "q", [(0, 0, 1, 1)], doc=f"{s}/{i // 2}", doc_type=t, source=s)
        for t, sizes in (("form", {"a": 12, "b": 3, "c": 3, "d": 2}), ("receipt", {"e": 4, "f": 4}))
        for s, n in sizes.items()
        for i in range(n)
    ]
    f = source_folds(qs, k=3, seed=0)
    by_source: dict[str, set[int]] = {}
    for q, g in zip(qs, f, strict=True):
        by_source.setdefault(q.source, set()).add(g)
    assert all(len(v) == 1 for v in by_source.values())  # no source in two folds
    assert by_source["a"] != by_source["b"] and by_source["a"] != by_source["c"]  # the big source has a fold alone
    assert f == source_folds(qs, k=3, seed=0)
    held = holdout_sources(qs, 0.3, (), seed=0)
    assert "a" not in held and held & {"b", "c", "d"} and held & {"e", "f"}


def test_default_decision_needs_every_kind_docgen_and_held_out_sources() -> None:
    """The learned scorer is the default only if it loses no kind on source folds, on docgen's test split (which
    must be measured) and on held-out sources."""
    from arr_coc.training.evidence import decide

    def t(**kinds: float) -> dict:
        return {k: {"recall": v, "full_hit": v, "n": 1} for k, v in kinds.items()}

    heldout = {
        "rules": {"doc_type": t(form=0.9, overall=0.8), "wording": t(literal=0.8, overall=0.8)},
        "nested": {"doc_type": t(form=0.95, overall=0.9), "wording": t(literal=0.9, overall=0.9)},
    }
    meta = {"heldout": heldout, "folds_by": "source", "family": "res16-b2", "docgen_test": {}, "holdout": {}}
    assert decide(meta)["default"] == "rules"  # docgen not measured
    meta["docgen_test"] = {"rules": t(form=1.0, overall=1.0), "res16-b2": t(form=1.0, overall=1.0)}
    assert decide(meta)["default"] == "learned"
    meta["holdout"] = {"rules": t(text=0.95), "res16-b2": t(text=0.94)}
    assert (
        decide(meta) == {**decide(meta), "default": "rules"}
        and "held-out sources text -0.010" in decide(meta)["losses"]
    )
    meta["holdout"] = {}
    meta["docgen_test"]["res16-b2"] = t(form=0.99, overall=0.99)
    assert decide(meta)["default"] == "rules"
    meta["docgen_test"]["res16-b2"] = t(form=1.0, overall=1.0)
    meta["folds_by"] = "document"
    assert decide(meta)["default"] == "rules"  # optimistic folds decide nothing


def test_held_out_sources_of_a_kind_do_not_move_when_another_kind_is_added() -> None:
    """Each doc_type draws its held-out sources from its own seeded generator: adding a new kind's data (a new
    collection) must not change which receipts are held out (it did with one generator shared across kinds)."""

    def qs(kinds: dict[str, int]) -> list[Question]:
        return [
            Question(f"{t}{s}-{i}", "q", [(0, 0, 1, 1)], doc=f"{t}{s}/{i}", doc_type=t, source=f"{t}:{s}")
            for t, n_sources in kinds.items()
            for s in range(n_sources)
            for i in range(3)
        ]

    before = holdout_sources(qs({"receipt": 10, "table": 6}), 0.2, (), seed=0)
    after = holdout_sources(qs({"apdf": 7, "receipt": 10, "table": 6}), 0.2, (), seed=0)
    assert {s for s in before if s.startswith("receipt")} == {s for s in after if s.startswith("receipt")}
    assert {s for s in before if s.startswith("table")} == {s for s in after if s.startswith("table")}
    assert any(s.startswith("apdf") for s in after)


def test_seed_ensemble_is_the_mean_of_its_members(three_sources, tmp_path: Path) -> None:
    """A seed ensemble (``Candidate(members=3)``) outputs the mean of its members' network outputs, saves and loads
    exactly, and refuses members trained on other rows."""
    train = three_sources["A"] + three_sources["B"]
    members = [fit(train, hidden=4, epochs=2, seed=s, residual=True, bound=2.0) for s in range(3)]
    ens = BoxScorer.ensemble(members)
    assert ens.members == 3 and ens.config["members"] == 3
    x = torch.from_numpy(np.concatenate([r.feats for r in three_sources["C"][:3]]))
    z = (x - members[0].mean) / members[0].scale * members[0].mask
    with torch.no_grad():
        mean_net = torch.stack([m.net(z).squeeze(-1) for m in members]).mean(0)
        torch.testing.assert_close(ens.correction(x), 2.0 * torch.tanh(mean_net / 2.0))
    ens.save(tmp_path)
    loaded = BoxScorer.load(tmp_path)
    np.testing.assert_array_equal(loaded.box_scores(x.numpy()), ens.box_scores(x.numpy()))
    made = CANDIDATES["res16-b2-x5"].__class__(hidden=4, residual=True, bound=2.0, members=3).make(train, 2, 0)
    np.testing.assert_array_equal(made.box_scores(x.numpy()), ens.box_scores(x.numpy()))  # seeds 0, 1, 2
    other = fit(three_sources["C"], hidden=4, epochs=1, seed=0, residual=True, bound=2.0)
    with pytest.raises(ValueError, match="standardisation"):
        BoxScorer.ensemble([members[0], other])
    with pytest.raises(ValueError, match="members must be"):
        BoxScorer(members=0)


def test_page_unlike_training_is_scored_by_the_rules(three_sources) -> None:
    """``ood_page``: a page on which more than that share of the boxes lie outside the training range gets the
    rules' scores on every box (a kind never trained on), while a page like the training pages keeps the learned
    correction; the threshold is checked."""
    scorer = fit(three_sources["A"] + three_sources["B"], hidden=4, epochs=3, seed=0, residual=True, bound=2.0)
    scorer.ood_page = 0.2
    inside = three_sources["A"][0].feats  # a training page
    assert not scorer.page_out_of_range(torch.from_numpy(inside))
    learned = scorer.box_scores(inside)
    assert not np.allclose(learned, inside[:, FEATURES.index("rule")])  # the correction acts
    far = inside.copy()
    far[: len(far) // 2, FEATURES.index("n_chars")] = 1e3  # half the boxes far outside the training range
    assert scorer.page_out_of_range(torch.from_numpy(far))
    np.testing.assert_array_equal(scorer.box_scores(far), np.clip(far[:, FEATURES.index("rule")], 0.0, None))
    scorer.ood_page = 0.6  # half is not more than 60%: the correction acts again
    assert not scorer.page_out_of_range(torch.from_numpy(far))
    with pytest.raises(ValueError, match="ood_page"):
        BoxScorer(residual=True, ood_page=1.0)
    with pytest.raises(ValueError, match="residual=True"):
        BoxScorer(ood_page=0.2)


def test_candidate_epochs_override_the_commands(three_sources) -> None:
    """``Candidate(epochs=N)`` trains N passes whatever the command's ``--epochs`` (so the nested validation can
    choose the number of passes), and candidates differing only in it do not share a fit."""
    from arr_coc.training.evidence import Candidate

    train = three_sources["A"] + three_sources["B"]
    x = np.concatenate([r.feats for r in three_sources["C"][:2]])
    own = Candidate(hidden=4, residual=True, bound=2.0, epochs=3).make(train, 1, 0)
    ref = fit(train, hidden=4, epochs=3, seed=0, residual=True, bound=2.0)
    np.testing.assert_array_equal(own.box_scores(x), ref.box_scores(x))
    assert Candidate(epochs=3).fit_key() != Candidate().fit_key()
    assert CANDIDATES["res16-b2-x5-page-e30"].epochs == 30
