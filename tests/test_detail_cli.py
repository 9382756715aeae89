"""Level-of-detail modes and the downscale baseline through ``arr-coc ask`` / ``arr-coc eval`` (tiny checkpoints)."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

from test_evaluation_run import checkpoint, loaded, records, run_loaded  # noqa: E402, F401  (fixtures)

from arr_coc.attending import resolve_budget  # noqa: E402
from arr_coc.evaluation.allocators import downscale_max_pixels  # noqa: E402
from arr_coc.evaluation.runner import markdown_table, plan_variants  # noqa: E402
from arr_coc.grid import smart_resize  # noqa: E402


@pytest.mark.parametrize(
    ("height", "width", "tokens"), [(1000, 762, 142), (600, 800, 20), (3000, 400, 300), (90, 90, 3)]
)
def test_downscale_max_pixels_is_the_largest_within_budget(height, width, tokens):
    lo, hi = downscale_max_pixels(height, width, tokens, 28, 3136)

    def count(max_pixels: int) -> int:
        h, w = smart_resize(height, width, 28, lo, max_pixels)
        return (h // 28) * (w // 28)

    assert count(hi) <= tokens
    # brute force over every max_pixels step up to twice the budget: none gives more tokens within the budget
    best = max(count(m) for m in range(28 * 28, 2 * tokens * 28 * 28 + 1, 28 * 28) if count(m) <= tokens)
    assert count(hi) == best
    assert lo <= 3136


def test_plan_variants_with_detail():
    names = [v.name for v in plan_variants(["1.0", "0.2"], ["text", "random", "downscale"], ("thumbnail", "mixed"))]
    assert names == [
        "unpruned",
        "text@0.2",
        "text+thumbnail@0.2",
        "text+mixed@0.2",
        "random@0.2",
        "downscale@0.2",
    ]


def test_eval_downscale_and_detail_rows(loaded, tmp_path):  # noqa: F811
    """The downscale baseline (a smaller image, the unwrapped model) and the detail modes give rows of the same table;
    each spends at most the budget's tokens (detail modes exactly the budget)."""
    out = tmp_path / "docgen"
    result = run_loaded(
        loaded, task="docgen", split="dev", limit=1, out=out, budgets=("1.0", "0.3"),
        allocators=("texture", "downscale"), details=("thumbnail", "mixed"),
    )  # fmt: skip
    got = records(out)
    assert [r["variant"] for r in got] == [
        "unpruned",
        "texture@0.3",
        "texture+thumbnail@0.3",
        "texture+mixed@0.3",
        "downscale@0.3",
    ]
    total = got[0]["tokens_total"]
    budget = resolve_budget(0.3, total)
    by = {r["variant"]: r for r in got}
    assert by["texture@0.3"]["tokens_kept"] == budget
    assert by["texture+thumbnail@0.3"]["tokens_kept"] == budget
    assert by["texture+mixed@0.3"]["tokens_kept"] == budget
    assert 0 < by["downscale@0.3"]["tokens_kept"] <= budget and by["downscale@0.3"]["tokens_total"] == total
    assert by["texture+mixed@0.3"]["allocator"] == "texture+mixed"
    table = markdown_table(result.rows, result.metric)
    for name in ("texture+thumbnail", "texture+mixed", "downscale"):
        assert f"| {name} |" in table


@pytest.mark.parametrize("mode", ["thumbnail", "mixed"])
def test_ask_detail(mode, tiny_checkpoint_folder, tmp_path, form_image, capsys):
    from arr_coc.cli import main

    folder = tiny_checkpoint_folder("qwen2.5-vl", max_pixels=28 * 28 * 64)
    image = tmp_path / "form.png"
    form_image.save(image)
    argv = ["ask", str(image), "--query", "What is the amount due?", "--model", str(folder), "--device", "cpu"]
    assert main([*argv, "--budget", "0.5", "--max-new-tokens", "2", "--detail", mode]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("level of detail:"))
    assert ("thumbnail of" in line) if mode == "thumbnail" else ("coarse cells" in line)
    assert "answer:" in out
