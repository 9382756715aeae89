"""The pure steps of ``compress`` (locate, question, allocate, kept columns, repack) on hand-made tensors, no model.

Token ids are made up: 9 = image placeholder, 8 = video placeholder, 5/6 = vision start/end, 1/2 = im_start/im_end,
3 = newline. Every expected value below is written out by hand from the step's documented contract.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from arr_coc.deciding import allocate_tokens
from arr_coc.integrations.base import FamilyAdapter
from arr_coc.integrations.sequence import kept_columns, locate_items, padding_side, repack, turn_query_ids

generation_position_ids = FamilyAdapter.generation_position_ids

IDS = dict(image=9, video=8, vision_start=5, vision_end=6, im_start=1, im_end=2, newline=3)


def test_locate_items_assigns_blocks_in_row_major_order() -> None:
    # sample 0: one image of 2 tokens; sample 1: an image of 2 tokens then one of 1 token (grids are in patches)
    ids = torch.tensor([[0, 5, 9, 9, 6, 0, 0, 0, 0], [5, 9, 9, 6, 7, 5, 9, 6, 0]])
    grid = torch.tensor([[1, 2, 4], [1, 4, 2], [1, 2, 2]])  # 2, 2 and 1 merged tokens with merge 2
    items = locate_items(ids, None, "image", 9, grid, 2)
    assert [(it.index, it.sample, it.cols.tolist(), it.patch_start) for it in items] == [
        (0, 0, [2, 3], 0),
        (1, 1, [1, 2], 8),
        (2, 1, [6], 16),
    ]
    assert items[1].merged_grid(2) == (1, 2, 1) and items[1].n_patches == 8


def test_locate_items_refuses_mismatches() -> None:
    ids = torch.tensor([[5, 9, 9, 6], [5, 9, 9, 6]])
    with pytest.raises(ValueError, match="holds 4 image placeholder tokens but image_grid_thw describes 2"):
        locate_items(ids, None, "image", 9, torch.tensor([[1, 2, 2], [1, 2, 2]]), 2)
    with pytest.raises(ValueError, match="span samples"):  # one image of 4 tokens over two rows
        locate_items(ids, None, "image", 9, torch.tensor([[1, 4, 4]]), 2)
    with pytest.raises(ValueError, match="masked out"):
        locate_items(ids, torch.tensor([[1, 1, 0, 1], [1, 1, 1, 1]]), "image", 9, torch.tensor([[1, 2, 4]] * 2), 2)
    with pytest.raises(ValueError, match=r"shape \(num_images, 3\)"):
        locate_items(ids, None, "image", 9, torch.tensor([1, 2, 4]), 2)


def test_turn_query_ids_is_the_user_turn_around_the_item() -> None:
    # <im_start> system \n S <im_end> <im_start> user \n A <vs> 9 9 <ve> B C <im_end> <im_start> assistant
    row = [1, 40, 3, 41, 2, 1, 42, 3, 50, 5, 9, 9, 6, 51, 52, 2, 1, 43]
    mask = [1] * len(row)
    assert turn_query_ids(row, mask, 10, 11, IDS) == [50, 51, 52]
    mask[14] = 0  # padding inside the turn is not the question
    assert turn_query_ids(row, mask, 10, 11, IDS) == [50, 51]
    # a prompt without chat markers: the whole row minus vision tokens
    assert turn_query_ids([50, 5, 9, 6, 51], [1] * 5, 2, 2, IDS) == [50, 51]


def test_allocate_tokens_budget_and_redundancy() -> None:
    scores = torch.tensor([0.1, 0.9, 0.5, 0.9, 0.2])
    assert allocate_tokens(scores, 2).tolist() == [1, 3]
    assert allocate_tokens(scores, 0.6).tolist() == [1, 2, 3]  # round(0.6 * 5) = 3
    assert allocate_tokens(scores, 100).tolist() == [0, 1, 2, 3, 4]  # clamped to N
    feats = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # token 3 duplicates 1
    assert allocate_tokens(scores, 2, feats, redundancy=1.0).tolist() == [1, 2]
    assert allocate_tokens(scores, 2, feats, redundancy=0.0).tolist() == [1, 3]  # features ignored


def test_kept_columns_drops_unkept_placeholders_and_padding() -> None:
    ids = torch.tensor([[0, 5, 9, 9, 9, 6], [5, 9, 6, 7, 7, 7]])
    mask = torch.tensor([[0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    items = locate_items(ids, mask, "image", 9, torch.tensor([[1, 2, 6], [1, 2, 2]]), 2)
    keep_col = kept_columns(ids, mask, items, [torch.tensor([0, 2]), torch.tensor([0])])
    assert keep_col.tolist() == [[False, True, True, False, True, True], [True] * 6]


def test_padding_side() -> None:
    assert padding_side(None) == "left"
    assert padding_side(torch.tensor([[1, 1, 0]])) == "right"
    assert padding_side(torch.tensor([[0, 1, 1]])) == "left"
    assert padding_side(torch.tensor([[0, 1, 1]]), "right") == "right"


def _inputs() -> tuple[torch.Tensor, ...]:
    ids = torch.tensor([[0, 5, 9, 9, 9, 6, 7], [5, 9, 6, 7, 7, 7, 7]])
    mask = torch.tensor([[0, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1]])
    keep_col = torch.tensor([[False, True, True, False, False, True, True], [True] * 7])
    pos = torch.arange(7).repeat(3, 2, 1) * torch.tensor([1, 10, 100]).view(3, 1, 1)  # (3, 2, 7) easy to read
    deltas = torch.tensor([[-2], [-1]])
    return ids, mask, keep_col, pos, deltas


@pytest.mark.parametrize("side", ["left", "right"])
def test_repack_gathers_at_kept_columns_and_repads(side: str) -> None:
    ids, mask, keep_col, pos, deltas = _inputs()
    types = (ids == 9).long()
    labels = ids + 100
    out = repack(ids, mask, keep_col, pos, deltas, side, pad_id=-7, mm_token_type_ids=types, labels=labels)
    if side == "left":
        assert out.index_map.tolist() == [[-1, -1, -1, 1, 2, 5, 6], [0, 1, 2, 3, 4, 5, 6]]
        assert out.input_ids.tolist() == [[-7, -7, -7, 5, 9, 6, 7], [5, 9, 6, 7, 7, 7, 7]]
        assert out.attention_mask.tolist() == [[0, 0, 0, 1, 1, 1, 1], [1] * 7]
    else:
        assert out.index_map.tolist() == [[1, 2, 5, 6, -1, -1, -1], [0, 1, 2, 3, 4, 5, 6]]
        assert out.attention_mask.tolist() == [[1, 1, 1, 1, 0, 0, 0], [1] * 7]
    kept = out.index_map >= 0
    for r, scale in enumerate((1, 10, 100)):  # kept tokens keep their full-sequence positions; padding gets 0
        assert torch.equal(out.position_ids[r][kept], (out.index_map * scale)[kept])
        assert bool((out.position_ids[r][~kept] == 0).all())
    assert out.mm_token_type_ids.tolist()[0] == ([0, 0, 0, 0, 1, 0, 0] if side == "left" else [0, 1, 0, 0, 0, 0, 0])
    assert bool((out.labels[~kept] == -100).all())
    assert out.labels[0][kept[0]].tolist() == [105, 109, 106, 107]
    # next position (max + 1 of the unpruned sequence) minus the real pruned length: row 0: -2 + 6 - 4, row 1: -1
    assert out.rope_deltas.tolist() == [[0], [-1]]


def test_repack_without_mask_or_padding_keeps_mask_none() -> None:
    ids, _, _, pos, deltas = _inputs()
    keep_col = torch.tensor([[True, True, False, True, True, True, True], [True, True, True, False, True, True, True]])
    out = repack(ids, None, keep_col, pos, deltas, "left", pad_id=0)
    assert out.attention_mask is None and out.mm_token_type_ids is None and out.labels is None
    assert out.input_ids.tolist() == [[0, 5, 9, 9, 6, 7], [5, 9, 6, 7, 7, 7]]
    assert out.rope_deltas.tolist() == [[-1], [0]]  # one token dropped from each row
    forced = repack(ids, None, keep_col, pos, deltas, "left", pad_id=0, always_mask=True)
    assert forced.attention_mask.tolist() == [[1] * 6, [1] * 6]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda b: st.tuples(
            st.just(b),
            st.integers(1, 9).flatmap(
                lambda n: st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=b, max_size=b)
            ),
        )
    ),
    st.sampled_from(["left", "right"]),
)
def test_repack_property_rows_are_the_kept_columns_in_order(case: tuple[int, list[list[bool]]], side: str) -> None:
    batch, rows = case
    keep_col = torch.tensor(rows)  # (B, L)
    keep_col[:, 0] = True  # every row keeps at least one token (compress keeps >= 1 token per item)
    length = keep_col.shape[1]
    ids = torch.arange(batch * length).view(batch, length) + 10
    pos = torch.arange(length).repeat(3, batch, 1)
    out = repack(ids, None, keep_col, pos, torch.zeros(batch, 1, dtype=torch.long), side, pad_id=-1)
    assert out.input_ids.shape == (batch, int(keep_col.sum(1).max()))
    for b in range(batch):
        real = out.index_map[b][out.index_map[b] >= 0]
        assert real.tolist() == keep_col[b].nonzero().flatten().tolist()
        n = real.numel()
        block = out.index_map[b, -n:] if side == "left" else out.index_map[b, :n]
        assert bool((block >= 0).all())  # real tokens are contiguous on the other side from the padding
        assert out.input_ids[b][out.index_map[b] >= 0].tolist() == ids[b][keep_col[b]].tolist()


def test_generation_position_ids_text_row_counts_real_tokens() -> None:
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    pos = torch.arange(5).repeat(3, 2, 1) + 7
    out = generation_position_ids(mask, pos)
    assert out.shape == (4, 2, 5)
    assert out[0].tolist() == [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]]
    assert torch.equal(out[1:], pos)
