"""The gated relevance option (issue 40 item 4): the learned scorer where its ensemble agrees, else the rules."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arr_coc.reading.matching.gated import GatedScorer, gate_of
from arr_coc.reading.matching.learned import BoxScorer

# one page of three boxes: feature "a" pushes a member towards box 0 (weight > 0) or box 2 (weight < 0); the rules
# prefer box 1
PAGE = np.array([[1.0, 0.2], [0.0, 0.5], [-1.0, 0.3]], dtype=np.float32)  # columns: a, rule


def ensemble(weights: list[float]) -> BoxScorer:
    """A residual linear ensemble on ("a", "rule"), member m's correction ``w_m * a`` (bounded by 2)."""
    sc = BoxScorer(hidden=0, features=("a", "rule"), residual=True, bound=2.0, members=len(weights))
    nets = sc.net.members if len(weights) > 1 else [sc.net]
    with torch.no_grad():
        for net, w in zip(nets, weights, strict=True):
            net.weight.copy_(torch.tensor([[w, 0.0]]))
            net.bias.zero_()
    return sc.eval()


def test_gate_of_names():
    assert gate_of("hybrid") == ("agree", "learned")
    assert gate_of("hybrid-floor") == ("floor", "learned")
    assert gate_of("hybrid:/x/run") == ("agree", "/x/run")
    assert gate_of("learned") == (None, "learned")
    assert gate_of("/some/folder") == (None, "/some/folder")


def test_members_agree_learned_scores():
    sc = ensemble([2.0, 2.0, 2.0])
    gate = GatedScorer(sc)
    assert list(gate.member_votes(PAGE)) == [0, 0, 0]
    assert gate.sure(PAGE)
    out = gate.box_scores(PAGE)
    np.testing.assert_allclose(out, sc.box_scores(PAGE))
    assert int(np.argmax(out)) == 0  # the learned scorer moved the best box off the rules' choice (box 1)
    assert gate.pages == {"learned": 1, "rules": 0}


def test_members_disagree_rules_scores():
    sc = ensemble([4.0, -2.0, -2.0])  # the mean correction is 0: the ensemble keeps box 1, two members vote box 2
    gate = GatedScorer(sc)
    assert list(gate.member_votes(PAGE)) == [0, 2, 2]
    assert not gate.sure(PAGE)
    np.testing.assert_allclose(gate.box_scores(PAGE), PAGE[:, 1])
    assert gate.pages == {"learned": 0, "rules": 1}


def test_single_network_is_always_sure():
    sc = ensemble([2.0])
    gate = GatedScorer(sc)
    assert gate.sure(PAGE)
    np.testing.assert_allclose(gate.box_scores(PAGE), sc.box_scores(PAGE))


def test_floor_keeps_both_tops():
    sc = ensemble([2.0, 2.0, 2.0])
    out = GatedScorer(sc, "floor").box_scores(PAGE)
    learned = sc.box_scores(PAGE) / sc.box_scores(PAGE).max()
    rules = PAGE[:, 1] / PAGE[:, 1].max()
    np.testing.assert_allclose(out, np.maximum(learned, rules), rtol=1e-6)
    assert out[0] == pytest.approx(1.0) and out[1] == pytest.approx(1.0)  # learned's best and rules' best


def test_empty_page_and_bad_arguments():
    gate = GatedScorer(ensemble([1.0, 1.0]))
    assert gate.box_scores(np.zeros((0, 2), dtype=np.float32)).shape == (0,)
    with pytest.raises(ValueError, match="gate mode"):
        GatedScorer(ensemble([1.0]), "sometimes")
    with pytest.raises(ValueError, match="agree"):
        GatedScorer(ensemble([1.0]), agree=1.0)


def test_from_pretrained_wraps_the_builtin():
    from arr_coc.realizing import Realizer, relevance_folder

    hybrid = Realizer.from_pretrained("hybrid")
    assert isinstance(hybrid.box_scorer, GatedScorer) and hybrid.box_scorer.mode == "agree"
    learned = Realizer.from_pretrained("learned")
    assert isinstance(learned.box_scorer, BoxScorer)
    assert hybrid.box_scorer.features == learned.box_scorer.features
    floor = Realizer.from_pretrained(f"hybrid-floor:{relevance_folder('learned')}")
    assert floor.box_scorer.mode == "floor" and floor.box_scorer.config["gate"] == "floor"
