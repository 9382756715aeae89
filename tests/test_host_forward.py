"""The box scorer's host forward (``reading/matching/host_forward.py``) against the torch module's own forward."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from arr_coc.reading import QueryMatcher, TextBox
from arr_coc.reading.matching import host_forward
from arr_coc.reading.matching.learned import FEATURES, BoxScorer
from arr_coc.reading.matching.routed import RoutedScorer

F = len(FEATURES)
RULE = FEATURES.index("rule")


def scorer(seed: int = 0, **kw) -> BoxScorer:
    """A tiny random scorer with a fitted standardisation (a training range from other random rows)."""
    torch.manual_seed(seed)
    sc = BoxScorer(**kw)
    with torch.no_grad():
        for p in sc.parameters():
            p.copy_(torch.randn_like(p))
        sc.fit_standardisation(torch.randn(200, F) * 2 + 0.5)
    return sc.eval()


def rows(n: int, seed: int = 1) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, F)).astype(np.float32)
    x[:, RULE] = np.abs(x[:, RULE])
    return x


SHAPES = [
    {"hidden": 16, "residual": True, "bound": 2.0, "members": 5, "ood_page": 0.2},  # the shipped checkpoint's shape
    {"hidden": 8, "residual": True, "bound": None, "ood_margin": 0.1, "members": 3},
    {"hidden": 8, "residual": True, "ood_page": 0.9},
    {"hidden": 32},
    {"hidden": 0},
    {"hidden": 4, "members": 2, "drop_groups": ["position"]},
]


@pytest.mark.parametrize("kw", SHAPES)
@pytest.mark.parametrize("n", [1, 67, 300, 1000])  # 300 and 1000 rows: products cut into chunks (MAX_WORK)
def test_host_scores_equal_the_torch_forward(kw: dict, n: int) -> None:
    sc = scorer(**kw)
    x = rows(n)
    assert host_forward.plan(sc) is not None
    got, want = sc.box_scores(x), sc.torch_box_scores(x)
    assert got.dtype == np.float32 and got.shape == (n,)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-7)
    # every two values the torch forward holds apart keep their order
    order = np.argsort(-want, kind="stable")
    gaps = np.abs(np.diff(want[order])) > 1e-5 * np.abs(want[order][1:])
    assert np.all(np.diff(got[order])[gaps] <= 0)


def test_an_out_of_range_page_gets_the_rules_alone() -> None:
    sc = scorer(hidden=8, residual=True, ood_page=0.2)
    x = rows(40) * 100  # every box far outside the training range
    rule = x[:, RULE]
    np.testing.assert_array_equal(sc.box_scores(x), sc.torch_box_scores(x))
    np.testing.assert_array_equal(sc.box_scores(x), rule / max(1.0, rule.max()))


def test_the_plan_follows_the_module() -> None:
    sc, other = scorer(0, hidden=8, members=2), scorer(7, hidden=8, members=2)
    x = rows(50)
    first = sc.box_scores(x)
    sc.load_state_dict(other.state_dict())  # in place
    np.testing.assert_allclose(sc.box_scores(x), other.torch_box_scores(x), rtol=2e-5, atol=1e-7)
    assert not np.allclose(sc.box_scores(x), first)
    with torch.no_grad():
        sc.net.members[0][0].weight.mul_(0.5)  # a training step writes in place
    np.testing.assert_allclose(sc.box_scores(x), sc.torch_box_scores(x), rtol=2e-5, atol=1e-7)
    sc.net = other.net  # a new network
    np.testing.assert_allclose(sc.box_scores(x), sc.torch_box_scores(x), rtol=2e-5, atol=1e-7)
    sc.double()  # not float32: the torch forward
    assert host_forward.plan(sc) is None
    np.testing.assert_array_equal(sc.box_scores(x), sc.torch_box_scores(x))


def test_a_scorer_built_under_inference_mode() -> None:
    with torch.inference_mode():
        sc = scorer(3, hidden=8, residual=True, bound=2.0, members=2)
        x = rows(20)
        np.testing.assert_allclose(sc.box_scores(x), sc.torch_box_scores(x), rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(sc.box_scores(x), sc.torch_box_scores(x), rtol=2e-5, atol=1e-7)


def test_the_host_forward_runs_no_torch_linear(monkeypatch) -> None:
    sc = scorer(hidden=16, residual=True, bound=2.0, members=5, ood_page=0.2)
    x = rows(67)
    want = sc.box_scores(x)

    def refuse(*a, **k):
        raise AssertionError("torch's linear (its intra-op pool) was called")

    monkeypatch.setattr(torch.nn.functional, "linear", refuse)
    monkeypatch.setattr(torch._C._nn, "linear", refuse)
    np.testing.assert_array_equal(sc.box_scores(x), want)
    with pytest.raises(AssertionError, match="intra-op"):
        sc.torch_box_scores(x)  # the check would see the torch forward


def test_two_threads_score_at_once() -> None:
    sc = scorer(hidden=16, residual=True, bound=2.0, members=5)
    pages = [rows(n, seed) for seed, n in enumerate((30, 67, 150, 400))]
    want = [sc.box_scores(x) for x in pages]
    got: dict[int, list[np.ndarray]] = {}
    barrier = threading.Barrier(4)

    def work(i: int) -> None:
        barrier.wait()
        got[i] = [sc.box_scores(pages[(i + k) % 4]) for k in range(40)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, outs in got.items():
        for k, out in enumerate(outs):
            np.testing.assert_array_equal(out, want[(i + k) % 4])


def test_a_decision_leaves_torchs_threads_alone() -> None:
    boxes = [
        TextBox("Invoice number:", (40, 40, 200, 60)),
        TextBox("INV-2041", (210, 40, 300, 60)),
        TextBox("Total due:", (40, 80, 140, 100)),
        TextBox("$1,200.00", (150, 80, 240, 100)),
    ]
    sc = scorer(hidden=16, residual=True, bound=2.0, members=5)
    before = (torch.get_num_threads(), torch.get_num_interop_threads())
    matcher = QueryMatcher(semantic=False, scorer=RoutedScorer(sc, cells=False))
    rel, _ = matcher.relevance_and_evidence(boxes, "How much is due?", 12, 16, (400, 300))
    assert rel.shape == (12, 16) and float(rel.max()) > 0
    assert (torch.get_num_threads(), torch.get_num_interop_threads()) == before
