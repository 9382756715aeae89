"""The plugin's request-facing rules and its guards, without an engine: budgets as JSON sends them, ``null``, text
options, the vLLM version check, the encoder length check and the data-parallel split of pruned images.

Only the split test needs vLLM (its load balance); the rest runs in the main environment too.
"""

from __future__ import annotations

import pytest
import torch

from arr_coc.vllm import SUPPORTED_VLLM, check_vllm_version
from arr_coc.vllm.common import (
    ArrCocOptionError,
    check_encoded,
    encode_kept_sharded,
    parse_options,
    plugin_budget,
    request_options,
)


@pytest.mark.parametrize(
    "sent, read",
    [
        (1, 1.0),  # JSON 1 == 1.0 (JavaScript sends 1.0 as 1): every token, never ONE token
        (1.0, 1.0),
        (0.22, 0.22),
        (256, 256),
        (256.0, 256),  # a whole number > 1 is a count whatever its JSON spelling
        ("22%", 0.22),
        ("0.5", 0.5),
        ("256", 256),
        ("1", 1),  # the one way to ask for a single token
        ("adaptive", "adaptive"),
    ],
)
def test_budget_is_read_by_its_json_value(sent, read):
    got = plugin_budget(sent)
    assert got == read and type(got) is type(read)


def test_budget_one_keeps_every_token_in_the_options():
    """The defect: ``"budget": 1`` kept one token while ``1.0`` kept all; a JSON client cannot tell them apart."""
    assert parse_options({"budget": 1, "mode": "texture"}).budget == 1.0
    assert parse_options({"budget": 1.0, "mode": "texture"}).budget == 1.0


@pytest.mark.parametrize("sent", [3.5, 0, -1, 0.0, True, False, [0.2], {"v": 1}, "lots", float("nan"), float("inf")])
def test_bad_budget_is_one_clear_error(sent):
    with pytest.raises(ArrCocOptionError, match=r"arr_coc: budget .* is not a number in \(0, 1\]"):
        plugin_budget(sent)


def test_null_means_not_set():
    """``"arr_coc": null`` leaves the server's defaults in force (it switched them off); null options drop out."""
    assert request_options({"arr_coc": None, "size": 3}) == {"size": 3}
    assert request_options({"arr_coc": {"budget": None, "mode": "texture"}}) == {"arr_coc": {"mode": "texture"}}
    assert request_options({"other": 1}) == {"other": 1}
    assert parse_options({"budget": None, "mode": None, "enabled": None, "query": None}) == parse_options({})


@pytest.mark.parametrize(
    "text_options, message",
    [
        ({"semantics": False}, "unknown text switch(es) ['semantics']; allowed: lexical, semantic"),
        ({"semantic": "no"}, "text_options.semantic must be true, false or null, got 'no'"),
        ("fast", "text_options must be an object"),
    ],
)
def test_text_options_are_checked_with_a_user_facing_message(text_options, message):
    """An unknown switch used to reach the matcher: ``QueryMatcher.__init__() got an unexpected keyword argument``."""
    pytest.importorskip("arr_coc.reading")
    with pytest.raises(ArrCocOptionError) as err:
        parse_options({"mode": "texture", "text_options": text_options})
    assert message in str(err.value) and "QueryMatcher" not in str(err.value)


def test_text_options_pass_through_when_valid():
    pytest.importorskip("arr_coc.reading")
    options = parse_options({"mode": "texture", "text_options": {"semantic": False, "layout": None}})
    assert options.text_options == {"semantic": False, "layout": None}


@pytest.mark.parametrize("version", ["0.32.0", "0.32.1", "0.32.0+cpu", "0.32.2.dev3+g1234abc"])
def test_supported_vllm_versions_register(version):
    check_vllm_version(version)


@pytest.mark.parametrize("version", ["0.31.2", "0.33.0", "1.0.0", "0.3.2", "dev"])
def test_other_vllm_versions_are_refused_with_the_range(version):
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED_VLLM
    with pytest.raises(RuntimeError) as err:
        check_vllm_version(version)
    message = str(err.value)
    assert f"vLLM >={lo_major}.{lo_minor},<{hi_major}.{hi_minor}" in message and version in message
    assert "VLLM_PLUGINS=" in message  # how to serve without the plugin


def test_register_checks_the_installed_vllm(monkeypatch):
    vllm = pytest.importorskip("vllm", reason="vllm not installed")
    from arr_coc.vllm import register

    monkeypatch.setattr(vllm, "__version__", "0.99.0")
    with pytest.raises(RuntimeError, match="this is vLLM 0.99.0"):
        register()


def test_length_check_names_the_pruned_image():
    keeps = [torch.arange(5), torch.arange(3)]
    check_encoded([torch.zeros(5, 8), torch.zeros(3, 8)], keeps, "here")
    with pytest.raises(RuntimeError, match="returned 12 rows for pruned image 1, whose prompt has 3 placeholders"):
        check_encoded([torch.zeros(5, 8), torch.zeros(12, 8)], keeps, "here")
    with pytest.raises(RuntimeError, match="1 encoder outputs for 2 pruned images"):
        check_encoded([torch.zeros(5, 8)], keeps, "here")


def fake_encode(pixel_values, grids, keeps, m=2):
    """A stand-in for a family's ``encode_kept``: item-specific rows, one per kept token."""
    out, start = [], 0
    for (t, h, w), keep in zip(grids, keeps, strict=True):
        n = t * h * w
        item = pixel_values[start : start + n]  # (n, C)
        out.append(item.mean(0, keepdim=True)[:, :4] + keep.float()[:, None])  # (k, 4)
        start += n
    return out


@pytest.mark.parametrize("world_size", [2, 3])
def test_data_parallel_split_of_pruned_images_equals_one_rank(world_size):
    """``--mm-encoder-tp-mode data``: each rank encodes its share (balanced on the KEPT patches), all-gather, reorder:
    the same outputs as one rank encoding every image, in item order (simulated ranks; a rank may get no image)."""
    pytest.importorskip("vllm", reason="vllm not installed (vLLM's load balance)")
    gen = torch.Generator().manual_seed(0)
    grids = [(1, 8, 8), (1, 4, 6), (1, 6, 6), (1, 2, 2)][: world_size + 1]
    keeps = [torch.sort(torch.randperm(t * h * w // 4, generator=gen)[: 1 + i * 2]).values for i, (t, h, w) in
             enumerate(grids)]  # fmt: skip
    pixels = torch.randn(sum(t * h * w for t, h, w in grids), 12, generator=gen)
    want = fake_encode(pixels, grids, keeps)
    padded: dict[int, torch.Tensor] = {}
    common = dict(merge=2, out_dim=4, dtype=torch.float32, world_size=world_size)

    def capture(rank):
        def gather(x):
            padded[rank] = x
            return torch.cat([x] * world_size)

        return gather

    for rank in range(world_size):  # each rank's padded block
        encode_kept_sharded(fake_encode, pixels, grids, keeps, rank=rank, all_gather=capture(rank), **common)
    assert len({p.shape for p in padded.values()}) == 1  # all_gather needs equal blocks
    for rank in range(world_size):
        got = encode_kept_sharded(
            fake_encode, pixels, grids, keeps, rank=rank,
            all_gather=lambda x: torch.cat([padded[r] for r in range(world_size)]), **common,
        )  # fmt: skip
        assert [g.shape[0] for g in got] == [int(k.numel()) for k in keeps]
        for g, w in zip(got, want, strict=True):
            assert torch.equal(g, w)
