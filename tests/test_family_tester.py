"""The family tester (``arr_coc.family_testing``) on every class of every registered family: full budget
bit-identical, a pruned forward equal to a hand-built reference, cached generate equal to stepwise forwards, a batch
equal to its items, allocate's grid equal to the model's token count, foveation equal to the pruned forward.

A family is tested here the moment it is registered; one without a tiny model in ``family_testing.TINY`` fails (it
must get one), and one whose transformers floor is above the installed release is skipped, as ``compress`` refuses it.
"""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402

from arr_coc import family_testing as ft  # noqa: E402
from arr_coc.families import families  # noqa: E402

ROWS = [(f, c) for f in families() for c in f.classes]
IDS = [c.model_type for _, c in ROWS]


def model_of(family, entry):
    from arr_coc.families import check_transformers

    try:
        check_transformers(family)
    except RuntimeError as err:
        pytest.skip(str(err).split(". ")[0])
    assert entry.model_type in ft.TINY, f"{entry.model_type}: add a TinyFamily to arr_coc.family_testing.TINY"
    return ft.tiny(entry.model_type)


@pytest.mark.parametrize("check", list(ft.CHECKS))
@pytest.mark.parametrize(("family", "entry"), ROWS, ids=IDS)
def test_family(family, entry, check) -> None:
    from arr_coc.families import load_object

    adapter = load_object(entry.adapter)
    if check == "foveation" and not adapter.supports_foveation():
        pytest.skip(f"compress(foveate=True) is not supported for {adapter.name}: its tower cannot run on kept patches")
    if check == "detail" and not adapter.supports_detail():
        pytest.skip(f"compress(detail=...) is not supported for {adapter.name}: its pixels take no coarse view")
    model = model_of(family, entry)
    with torch.no_grad():
        ft.CHECKS[check](model)


@pytest.mark.parametrize("family", families(), ids=[f.name for f in families()])
def test_allocate_grid_is_the_models_token_count(family) -> None:
    ft.check_allocate_grid(family.classes[0].model_type, family)
