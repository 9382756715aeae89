"""arr_coc.graphs: graphs per input shape, their bookkeeping tested with the eager stand-in for a CUDA graph (the
same static-buffer contract), and the real CUDA capture where a GPU is present."""

from __future__ import annotations

import warnings

import pytest
import torch

from arr_coc.engine import EngineConfig
from arr_coc.graphs import ShapeGraphs, cuda_capture, eager_capture
from arr_coc.profiling import OpCounter
from arr_coc.realizing import Realizer
from arr_coc.tensors import cached_constant


def _fn(x: torch.Tensor, scale: int = 2) -> torch.Tensor:
    return (x * cached_constant([float(scale)] * x.shape[-1], x) + 1).sin()


def _graphs(max_graphs: int = 2, after: int = 2, capture=eager_capture) -> ShapeGraphs:
    return ShapeGraphs(_fn, max_graphs, after=after, capture=capture, devices=("cpu",))


def test_captured_on_the_second_sighting_then_replayed_with_the_eager_result():
    g = _graphs()
    x = torch.randn(3, 5)
    first = g(x, 2)
    assert g.captured == 0 and g.replays == 0  # a shape seen once runs eagerly
    second = g(x, 2)
    assert g.captured == 1 and g.replays == 1
    y = torch.randn(3, 5)  # same shape, new values: the replay reads the new input
    third = g(y, 2)
    assert g.replays == 2
    assert torch.equal(first, _fn(x, 2)) and torch.equal(second, _fn(x, 2)) and torch.equal(third, _fn(y, 2))
    third.add_(1)  # the caller's copy: the graph's output buffer is not touched
    assert torch.equal(g(y, 2), _fn(y, 2))


def test_the_key_holds_shape_dtype_strides_and_arguments():
    g = _graphs(max_graphs=8, after=1)
    x = torch.randn(4, 6)
    for args in [(x, 2), (x, 3), (x.double(), 2), (x.t(), 2), (x[:2], 2)]:
        assert torch.equal(g(*args), _fn(*args))
    assert g.captured == 5
    assert torch.equal(g(x.t(), 2), _fn(x.t(), 2)) and g.captured == 5  # a transposed input has its own graph


def test_least_recently_used_shapes_go_first():
    g = _graphs(max_graphs=2, after=1)
    a, b, c = torch.randn(2, 3), torch.randn(3, 3), torch.randn(4, 3)
    g(a), g(b), g(a), g(c)  # b is the least recently used when c arrives
    assert g.captured == 2
    keys = [k[0] for k in g._entries]
    assert keys == [(2, 3), (4, 3)]


def test_clear_drops_the_graphs_and_the_sightings():
    g = _graphs(after=2)
    x = torch.randn(2, 4)
    g(x), g(x)  # captured on the second call
    assert g.captured == 1
    g.clear()
    assert g.captured == 0
    g(x)  # a first sighting again: eager, not captured
    assert g.captured == 0
    assert torch.equal(g(x), _fn(x)) and g.captured == 1


def test_max_graphs_zero_never_captures():
    g = _graphs(max_graphs=0, after=1)
    x = torch.randn(2, 2)
    assert torch.equal(g(x), _fn(x)) and g.captured == 0 and not g.usable(x)
    with pytest.raises(ValueError, match="max_graphs"):
        ShapeGraphs(_fn, -1)
    with pytest.raises(ValueError, match="after"):
        ShapeGraphs(_fn, 1, after=0)
    with pytest.raises(ValueError, match="texture_graphs must be"):
        EngineConfig(texture_graphs=-1)


def test_a_failed_capture_warns_once_and_that_shape_runs_eagerly():
    def broken(fn, static_in):
        raise RuntimeError("operation not permitted when stream is capturing")

    g = _graphs(after=1, capture=broken)
    x = torch.randn(2, 4)
    with pytest.warns(RuntimeWarning, match="capturing a CUDA graph for input \\(2, 4\\)"):
        out = g(x)
    assert torch.equal(out, _fn(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning: the shape is known to fail
        assert torch.equal(g(x), _fn(x))
    assert g.captured == 0


def test_no_graph_where_the_ops_must_be_seen_or_differentiated():
    g = _graphs(after=1)
    x = torch.randn(3, 3)
    with OpCounter() as c:  # an op counter counts what a call computes, not a replay
        g(x)
    assert c.n_ops > 0 and g.captured == 0
    leaf = torch.randn(3, 3, requires_grad=True)
    out = g(leaf)
    assert out.requires_grad and g.captured == 0
    assert not g.usable(torch.randn(3).expand(4, 3))  # overlapping strides: no buffer of that layout
    assert not ShapeGraphs(_fn, 2).usable(x)  # the default: CUDA tensors only


def test_the_graph_keeps_the_constants_its_kernels_read():
    g = _graphs(after=1)
    x = torch.randn(2, 7)
    g(x, 5)
    entry = next(iter(g._entries.values()))
    used = cached_constant([5.0] * 7, x)
    assert any(t is used for t in entry.keep)


def test_a_realizer_with_texture_graphs_decides_as_without():
    """The texture through the graph path (the eager stand-in on the CPU, the page cache off so CPU frames take that
    path): every decision equal to the plain realizer's, bit for bit, over repeated shapes."""
    cfg = EngineConfig(texture_cache_items=0, texture_graphs=4)
    plain = Realizer(engine=EngineConfig(texture_cache_items=0)).eval()
    graphed = Realizer(engine=cfg).eval()
    graphed.texture_graphs = ShapeGraphs(graphed._texture_eager, 4, capture=eager_capture, devices=("cpu",))
    gen = torch.Generator().manual_seed(0)
    pages = [torch.randint(0, 256, (1, 3, 4 * 28, 6 * 28), generator=gen, dtype=torch.uint8) for _ in range(3)]
    pages.append(torch.randint(0, 256, (1, 3, 5 * 28, 3 * 28), generator=gen, dtype=torch.uint8))
    grids = [(4, 6)] * 3 + [(5, 3)]
    for _ in range(2):
        for frames, grid in zip(pages, grids, strict=True):
            for query in ("What is the total?", None):
                a = plain.decide([frames], [grid], [query], 0.3)[0]
                b = graphed.decide([frames], [grid], [query], 0.3)[0]
                assert torch.equal(a.scores, b.scores) and torch.equal(a.keep, b.keep)
    assert graphed.texture_graphs.captured == 2 and graphed.texture_graphs.replays > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (a real graph capture)")
def test_cuda_graph_texture_equals_eager():
    dev = torch.device("cuda")
    r = Realizer(engine=EngineConfig(texture_graphs=2)).eval()
    frames = torch.randint(0, 256, (1, 3, 8 * 28, 10 * 28), dtype=torch.uint8, device=dev)
    eager = r._texture_eager(frames, 8, 10)
    with torch.inference_mode():
        outs = [r.texture(frames, 8, 10) for _ in range(3)]
    assert r.texture_graphs.captured == 1 and r.texture_graphs.replays == 2
    for out in outs:
        assert torch.equal(out, eager)
    replay, static_out = cuda_capture(lambda t: _fn(t), torch.ones(2, 3, device=dev))
    replay()
    assert torch.equal(static_out, _fn(torch.ones(2, 3, device=dev)))


def test_counted_with_the_opaque_stand_in_a_graph_replaces_the_texture_ops_by_two_copies():
    """What decision_ops.py reports: with the texture as a graph, relevance launches its ops outside the texture,
    the input's copy in and the output's copy out (the replay itself is counted apart)."""
    from arr_coc.graphs import opaque_capture
    from arr_coc.texture import texture_from_frames

    cfg = EngineConfig(cpu_band_elements=0, texture_cache_items=0)
    plain, graphed = Realizer(engine=cfg).eval(), Realizer(engine=cfg).eval()
    graphed.texture_graphs = ShapeGraphs(graphed._texture_eager, 2, after=1, capture=opaque_capture,
                                         devices=("cpu",), under_modes=True)  # fmt: skip
    frames = torch.randint(0, 256, (2, 3, 6 * 28, 5 * 28), generator=torch.Generator().manual_seed(1),
                           dtype=torch.uint8)  # fmt: skip
    graphed.relevance(frames, (6, 5), "What is the date?")  # captured
    with OpCounter() as eager:
        a = plain.relevance(frames, (6, 5), "What is the date?")
    with torch.inference_mode(), OpCounter() as tex:  # as relevance runs it
        texture_from_frames(frames, 6, 5, band=0)
    with OpCounter() as counted:
        b = graphed.relevance(frames, (6, 5), "What is the date?")
    assert torch.equal(a.scores, b.scores)
    assert counted.n_ops == eager.n_ops - tex.n_ops + 2 and counted.n_syncs == eager.n_syncs == 0
    assert graphed.texture_graphs.replays == 2  # the capturing call replays too (a capture computes nothing)
