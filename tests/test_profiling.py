"""Tests of ``arr_coc.profiling.OpCounter``: exact op and sync counts of small snippets (counts are deterministic)."""

from __future__ import annotations

import numpy as np
import torch

from arr_coc.profiling import OpCounter, count_ops


def test_counts_ops_and_item() -> None:
    with OpCounter() as c:
        x = torch.arange(4.0) * 2  # arange, mul
        y = x.sum()  # sum
        assert y.item() == 12.0  # _local_scalar_dense
    assert c.n_ops == 4 and c.n_views == 0
    assert c.ops["mul"] == 1 and c.ops["sum"] == 1
    assert dict(c.syncs) == {"_local_scalar_dense": 1}
    with OpCounter() as c:
        x[1:].view(3, 1).expand(3, 2).exp()  # slice, view, expand: views; exp: one op
    assert (c.n_ops, c.n_views, c.n_syncs) == (1, 3, 0)


def test_every_kind_of_sync_is_counted() -> None:
    x = torch.arange(6.0)
    mask = x > 2
    with OpCounter() as c:
        x.tolist()
        x.numpy()
        np.asarray(x)
        x.cpu()
        x.to("cpu")
        x[mask]  # boolean index: nonzero inside
        y = x.clone()
        y[mask] = 0.0  # boolean index_put_
        int(x[0])
        bool(x[1] > 0)
        torch.nonzero(x)
        torch.unique(x)
        x.to(torch.float64)  # a dtype change on the same device: no sync
        x.to(x.device)  # following another tensor's device: an upload on an accelerator, no sync
        x[torch.tensor([0, 2])]  # integer index: no sync
    assert dict(c.syncs) == {
        "Tensor.tolist": 1, "Tensor.numpy": 1, "Tensor.__array__": 1, "Tensor.cpu": 1, "Tensor.to": 1,
        "index": 1, "index_put_": 1, "_local_scalar_dense": 2, "nonzero": 1, "_unique2": 1,
    }  # fmt: skip


def test_a_host_copy_read_after_it_waits_once() -> None:
    """``x.cpu().numpy()`` / ``.tolist()`` is one sync (the copy), not two: the read is of host memory."""
    x = torch.arange(6.0)
    with OpCounter() as c:
        x.cpu().numpy()
        x[:3].cpu().tolist()
        x.to("cpu").tolist()
    assert dict(c.syncs) == {"Tensor.cpu": 2, "Tensor.to": 1}
    with OpCounter() as c:
        x.tolist()  # no copy before it: the read itself is the sync
        x.numpy()
    assert dict(c.syncs) == {"Tensor.tolist": 1, "Tensor.numpy": 1}


def test_counter_is_inactive_outside_and_count_ops_returns_result() -> None:
    with OpCounter() as c:
        pass
    torch.ones(3).sum()
    assert c.n_ops == 0 and c.n_syncs == 0
    result, c2 = count_ops(torch.add, torch.ones(2), 1.0)
    assert torch.equal(result, torch.full((2,), 2.0))
    assert c2.n_ops == 1 and "add" in c2.summary()


def test_scalar_reads_are_syncs_in_inference_mode_too() -> None:
    """Under inference_mode ``bool(t)`` and ``int(t)`` reach the mode as ``is_nonzero`` / ``item``, not as their inner
    ``_local_scalar_dense``: still one sync each."""
    x = torch.arange(5)
    for mode in (torch.inference_mode(), torch.no_grad()):
        with mode, OpCounter() as c:
            bool((x > 1).all())
            int(x.max())
        assert c.n_syncs == 2, c.summary()


def test_host_region_counts_apart_and_syncs_nothing() -> None:
    """Inside ``on_host`` (tensors on the host by construction) ops go to ``host_ops``: not ops, not syncs, even the
    reads that would sync on a device tensor; outside it counting is unchanged, and it does nothing alone."""
    from arr_coc.profiling import on_host

    with OpCounter() as c:
        x = torch.arange(6)
        with on_host():
            y = x[x > 2].tolist()  # a masked index and a host read: syncs on a device tensor
            z = int((x * 2).sum())
        _ = x.sum().item()
    assert y == [3, 4, 5] and z == 30
    assert c.n_host_ops >= 4 and c.host_ops["index"] == 1
    assert c.n_syncs == 1 and c.syncs["item"] + c.syncs["_local_scalar_dense"] == 1
    assert "index" not in c.ops and c.n_ops == 3  # arange, sum, the scalar read
    with on_host():
        assert torch.ones(2).sum().item() == 2.0
