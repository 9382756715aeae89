"""``budget_scope="prompt"`` on every registered family whose tower runs on kept patches: a page that keeps nothing is
not encoded (no error from inside the model), the foveated sequence is the dropped one, and its logits equal the hand
reference with the foveated features (MiniCPM-V's crops included: its encoder once failed on an empty crop)."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402

from arr_coc import family_testing as ft  # noqa: E402
from arr_coc.families import (  # noqa: E402
    check_transformers,
    family_of_type,  # noqa: E402
    model_class_for_type,
)
from arr_coc.integrations import compress  # noqa: E402
from arr_coc.integrations.compress import find_adapter  # noqa: E402

TWO_PAGES = [[10, 11], ("image", (1, 8, 8)), [12], ("image", (1, 4, 8)), [13, 14]]


@pytest.mark.parametrize("model_type", sorted(ft.TINY))
def test_a_page_that_keeps_nothing_is_not_encoded(model_type: str) -> None:
    assert model_class_for_type(model_type) is not None
    try:
        check_transformers(family_of_type(model_type))
    except RuntimeError as err:
        pytest.skip(str(err).split(". ")[0])
    model = ft.tiny(model_type)
    if not find_adapter(model).supports_foveation():
        pytest.skip(f"compress(foveate=True) is not supported for {model_type}: its tower cannot run on kept patches")
    inputs = ft.batch(model, [TWO_PAGES])
    with torch.no_grad():
        dropped = compress(model, budget=1, budget_scope="prompt")
        dropped(**inputs)
        cm = compress(model, budget=1, budget_scope="prompt", foveate=True)
        out = cm(**inputs).logits
    assert sorted(len(a.keep) for per in cm.last_allocation for a in per) == [0, 1]
    assert torch.equal(cm.last_inputs.input_ids, dropped.last_inputs.input_ids)
    if ft.layout_of(model) in (ft.QWEN, ft.MINICPM):  # the hand reference of the M-RoPE layouts
        feats = list(cm.last_inputs.mm_encoder_outputs["image"].pooler_output)
        with torch.no_grad():
            ref = ft.reference_logits(model, inputs, cm, feats)
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
