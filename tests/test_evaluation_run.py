"""``arr-coc eval`` end to end on a tiny Qwen2.5-VL checkpoint and small datasets written by the test.

Why: the table a user publishes must come from the prompts lmms-eval uses, the unpruned column must be the plain
model, every allocator must run on the same inputs, a rerun must not redo (or double count) finished work, and a
bad sample must not end a long run. The checkpoint is ``arr_coc.testing.tiny_checkpoint`` with its weights re-drawn
as N(0, 4 / fan_in): the stock tiny weights (std 0.02), and even N(0, 1 / fan_in), answer these prompts with the same
tokens, which would make "equals the plain model" true of any code; at this scale the answer depends on the image
and the question.
The test builds the plain model's prompts itself, in lmms-eval's format, and uses the plain model's answers as the
reference answers, so the unpruned column must score exactly 1.0.
"""

from __future__ import annotations

import io
import json
import shutil

import pytest

transformers = pytest.importorskip("transformers")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
datasets = pytest.importorskip("datasets")

import torch  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from arr_coc.attending import resolve_budget  # noqa: E402
from arr_coc.cli import main  # noqa: E402
from arr_coc.evaluation import anls, vqa_accuracy  # noqa: E402
from arr_coc.evaluation.runner import EvalConfig, markdown_table, plan_variants, run_eval, summarize  # noqa: E402

PIXELS = ["--min-pixels", "3136", "--max-pixels", str(28 * 28 * 48)]  # <= 48 visual tokens an image
NEW = 5  # new tokens per answer
QUESTIONS = ["What is the total?", "Who signed it?", "What is the date?", "Which city?"]
POST = "\nAnswer the question using a single word or phrase."


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, tiny_checkpoint_folder):
    """A tiny Qwen2.5-VL checkpoint whose answers depend on its input (weights re-drawn as N(0, 4 / fan_in))."""
    stock = tiny_checkpoint_folder("qwen2.5-vl")  # arr_coc.testing.tiny_checkpoint, shared with other tests
    folder = tmp_path_factory.mktemp("sensitive")
    shutil.copytree(stock, folder, dirs_exist_ok=True)
    model = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(stock)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=generator) * 2.0 / p.shape[-1] ** 0.5)
    model.save_pretrained(folder)
    return folder


def page(i: int) -> Image.Image:
    """A small drawn document, different for every ``i`` (text, stripes, size)."""
    image = Image.new("RGB", (140 + 20 * i, 100 + 12 * i), (255, 255 - 30 * i, 240))
    d = ImageDraw.Draw(image)
    d.text((10, 10), f"Total: {17 * (i + 3)}.00", fill="black")
    d.text((10, 40), f"Signed: Person {i}", fill=(0, 0, 120))
    for k in range(i + 2):
        d.rectangle([10 + 25 * k, 70, 20 + 25 * k, 90], fill=(40 * k, 0, 0))
    return image


@pytest.fixture(scope="module")
def loaded(checkpoint):
    """(model, processor) of the checkpoint, loaded once for the tests that call ``run_eval`` directly."""
    from arr_coc.asking import load_processor

    model = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(checkpoint).eval()
    return model, load_processor(str(checkpoint))


def plain_answers(loaded, images, questions, batch_size: int) -> list[str]:
    """What the unmodified model answers, batch by batch, with lmms-eval's Qwen-VL prompt built here."""
    model, processor = loaded
    processor.tokenizer.padding_side = "left"
    out = []
    for start in range(0, len(images), batch_size):
        texts = [
            processor.apply_chat_template(
                [
                    {"role": "system", "content": "You are a helpful assistant."},
                    {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": q + POST}]},
                ],
                add_generation_prompt=True,
            )
            for q in questions[start : start + batch_size]
        ]
        inputs = processor(
            text=texts,
            images=images[start : start + batch_size],
            size={"shortest_edge": 3136, "longest_edge": 28 * 28 * 48},
            return_tensors="pt",
        )
        with torch.inference_mode():
            seq = model.generate(
                **inputs, max_new_tokens=NEW, do_sample=False, eos_token_id=151645, pad_token_id=151643
            )
        out += processor.batch_decode(seq[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    processor.tokenizer.padding_side = "right"
    return out


def records(out) -> list[dict]:
    return [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines() if line.strip()]


def run(*args: str) -> int:
    """``arr-coc eval ARGS`` (loads the model from its folder)."""
    return main(["eval", *args, *PIXELS, "--max-new-tokens", str(NEW), "--no-progress"])


def run_loaded(loaded, **options):
    """``run_eval`` on the already loaded model (what ``arr-coc eval`` does after loading it)."""
    model, processor = loaded
    cfg = EvalConfig(
        model="tiny", min_pixels=3136, max_pixels=28 * 28 * 48, max_new_tokens=NEW, progress=False, **options
    )
    return run_eval(cfg, model=model, processor=processor)


def image_struct(images):
    def png(image):
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        return buf.getvalue()

    return pa.array(
        [{"bytes": png(i), "path": None} for i in images], pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    )


def test_parquet_docvqa_run_matches_the_plain_model_and_resumes(checkpoint, loaded, tmp_path, capsys):
    images = [page(i) for i in range(3)]
    questions = QUESTIONS[:3]
    reference = plain_answers(loaded, images, questions, batch_size=2)
    assert len(set(reference)) > 1, "the test model should answer different inputs differently"
    data = tmp_path / "DocVQA" / "validation-00000-of-00001.parquet"
    data.parent.mkdir()
    pq.write_table(
        pa.table(
            {
                "questionId": pa.array(["q0", "q1", "q2"]),
                "question": pa.array(questions),
                "image": image_struct(images),
                "answers": pa.array([[r] for r in reference]),  # the plain model's answers are the references
            }
        ),
        data,
    )
    out = tmp_path / "out"
    args = [
        "--model",
        str(checkpoint),
        "--task",
        "docvqa",
        "--data",
        str(tmp_path),
        "--budgets",
        "1.0,0.25",
        "--allocator",
        "texture",
        "random",
        "uniform",
        "--batch-size",
        "2",
        "--out",
        str(out),
    ]
    assert run(*args) == 0
    printed = capsys.readouterr().out
    got = records(out)
    variants = ["unpruned", "texture@0.25", "random@0.25", "uniform@0.25"]
    assert sorted((r["id"], r["variant"]) for r in got) == sorted((i, v) for i in ["q0", "q1", "q2"] for v in variants)
    unpruned = {r["id"]: r for r in got if r["variant"] == "unpruned"}
    assert [unpruned[i]["prediction"] for i in ["q0", "q1", "q2"]] == reference
    assert all(unpruned[i]["score"] == 1.0 for i in unpruned)
    for r in got:
        assert r["score"] == anls(r["prediction"], r["answers"])
        if r["variant"] != "unpruned":
            assert r["tokens_kept"] == resolve_budget(0.25, r["tokens_total"]) < r["tokens_total"]
        assert r["ttft_ms"] > 0 and r["peak_bytes"] > 0
    assert any(r["prediction"] != unpruned[r["id"]]["prediction"] for r in got), "pruning changed no answer"
    # the table is the means of the JSONL
    table = (out / "results.md").read_text()
    rows = summarize(got, plan_variants(["1.0", "0.25"], ["texture", "random", "uniform"]), ["q0", "q1", "q2"])
    assert markdown_table(rows, "anls") in table and markdown_table(rows, "anls") in printed
    for row in rows[1:]:
        scores = [r["score"] for r in got if r["variant"] == row.variant]
        assert row.score == pytest.approx(sum(scores) / 3) and row.retention == pytest.approx(sum(scores) / 3)
    summary = json.loads((out / "results.json").read_text())
    assert [r["variant"] for r in summary["rows"]] == variants and summary["samples"] == 3

    # a rerun skips everything already done ...
    assert run(*args) == 0
    assert records(out) == got
    # ... and an interrupted run (last two lines lost, the last one half-written) redoes only what is missing
    lines = (out / "predictions.jsonl").read_text().splitlines()
    (out / "predictions.jsonl").write_text("\n".join(lines[:-2]) + "\n" + lines[-2][:20])
    run_loaded(
        loaded,
        task="docvqa",
        data=tmp_path,
        out=out,
        budgets=("1.0", "0.25"),
        allocators=("texture", "random", "uniform"),
        batch_size=2,
    )
    again = records(out)
    assert len(again) == len(got)
    assert {(r["id"], r["variant"]): r["prediction"] for r in again} == {
        (r["id"], r["variant"]): r["prediction"] for r in got
    }


def test_saved_textvqa_and_a_bad_jsonl_do_not_stop_the_run(loaded, tmp_path):
    images = [page(i) for i in range(2)]
    features = datasets.Features(
        {
            "question_id": datasets.Value("int32"),
            "question": datasets.Value("string"),
            "answers": datasets.Sequence(datasets.Value("string")),
            "image": datasets.Image(),
        }
    )
    rows = {
        "question_id": [5, 6],
        "question": ["what is the total?", "who signed it?"],
        "answers": [["a"] * 10] * 2,
        "image": images,
    }
    datasets.DatasetDict({"validation": datasets.Dataset.from_dict(rows, features)}).save_to_disk(str(tmp_path / "tv"))
    out = tmp_path / "tv-out"
    run_loaded(loaded, task="textvqa", data=tmp_path / "tv", out=out, budgets=("1.0", "0.5"), allocators=("model",))
    got = records(out)
    assert {(r["id"], r["variant"]) for r in got} == {(i, v) for i in ["5", "6"] for v in ["unpruned", "model@0.5"]}
    assert all(r["score"] == vqa_accuracy(r["prediction"], r["answers"]) for r in got)
    assert all(r["question"] in rows["question"] for r in got)

    # JSONL: a corrupt image, a line without a question and a line that is not JSON among good ones
    page(0).save(tmp_path / "good.png")
    (tmp_path / "bad.png").write_bytes(b"GIF89a" + b"\0" * 10)
    lines = [
        json.dumps({"id": "g1", "image": "good.png", "question": "What is the total?", "answers": ["51.00"]}),
        json.dumps({"id": "b1", "image": "bad.png", "question": "What is the total?", "answers": ["x"]}),
        json.dumps({"id": "b2", "image": "good.png", "answers": ["x"]}),
        "{oops",
        json.dumps({"id": "g2", "image": "good.png", "question": "Who signed it?", "answers": "Person 0"}),
    ]
    (tmp_path / "mine.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "jsonl-out"
    options = dict(task="jsonl", data=tmp_path / "mine.jsonl", out=out, budgets=("0.5",), allocators=("uniform",))
    result = run_loaded(loaded, batch_size=2, **options)
    got = records(out)
    errors = {r["id"]: r["error"] for r in got if "error" in r}
    assert set(errors) == {"b1", "b2", "line-4"} and result.bad == 3 and result.samples == 5
    assert "'b1'" in errors["b1"] and "mine.jsonl line 2" in errors["b1"]
    done = {(r["id"], r["variant"]) for r in got if "variant" in r}
    assert done == {(i, v) for i in ["g1", "g2"] for v in ["unpruned", "uniform@0.5"]}
    assert "3 unreadable" in (out / "results.md").read_text()
    # resuming does not retry or re-log the bad samples
    run_loaded(loaded, batch_size=2, **options)
    assert records(out) == got


def test_docgen_runs_end_to_end(loaded, tmp_path):
    from arr_coc.realizing import ocr_available

    allocators = ("random", "text") if ocr_available() else ("random",)  # text: the OCR prior ([ocr] extra)
    out = tmp_path / "docgen"
    run_loaded(loaded, task="docgen", split="dev", limit=1, out=out, budgets=("1.0", "0.2"), allocators=allocators)
    got = records(out)
    expected = [("dev/receipt/0", "unpruned")] + [("dev/receipt/0", f"{a}@0.2") for a in allocators]
    assert [(r["id"], r["variant"]) for r in got] == expected
    assert got[0]["answers"][0].startswith("$")  # the receipt's amount due, exactly as drawn
    assert all(r["tokens_kept"] == resolve_budget(0.2, r["tokens_total"]) for r in got[1:])


def test_bad_options_get_one_clear_line(checkpoint, tmp_path, capsys):
    base = ["--model", str(checkpoint), "--task", "docgen", "--out", str(tmp_path / "o")]
    assert run(*base, "--budgets", "0") == 2
    assert "budget" in capsys.readouterr().err
    assert run(*base, "--budgets", "0.5", "--allocator", "uniform", "uniform") == 2
    assert "twice" in capsys.readouterr().err
    assert run(*base, "--budgets", "adaptive", "--allocator", "uniform") == 2
    assert "uniform allocator needs a count or a fraction" in capsys.readouterr().err
    from arr_coc.evaluation.allocators import supports_foveate

    if not supports_foveate():  # until compress(foveate=True) lands, the allocator is refused up front
        assert run(*base, "--budgets", "0.5", "--allocator", "foveate") == 2
        assert "foveate allocator needs compress(..., foveate=True)" in capsys.readouterr().err
    assert run("--model", str(tmp_path / "no-such-model"), "--task", "docgen", "--out", str(tmp_path / "o")) == 2
    assert "does not exist" in capsys.readouterr().err
    assert run(*base[:2], "--task", "docvqa", "--data", str(tmp_path / "nope"), "--out", str(tmp_path / "o")) == 2
    assert "does not exist" in capsys.readouterr().err


def test_relevance_checkpoint_reaches_compress_of_the_scoring_allocators(loaded, checkpoint, tmp_path, monkeypatch,
                                                                         capsys):  # fmt: skip
    """``arr-coc eval --relevance FOLDER``: the checkpoint's Realizer goes to ``compress(..., realizer=...)`` of the
    allocators that score with the default scorer (here ``model``), never to the others (``random``)."""
    import arr_coc.integrations as integrations
    from arr_coc.reading.matching.learned import BoxScorer
    from arr_coc.realizing import Realizer

    folder = tmp_path / "relevance"
    torch.manual_seed(0)
    Realizer(box_scorer=BoxScorer(hidden=4)).save_pretrained(folder)  # an untrained scorer is enough for the wiring
    real_compress = integrations.compress
    seen: list[tuple[object, object]] = []

    def spy(model, **kwargs):
        seen.append((kwargs.get("scorer"), kwargs.get("realizer")))
        return real_compress(model, **kwargs)

    monkeypatch.setattr(integrations, "compress", spy)
    out = tmp_path / "eval"
    run_loaded(loaded, task="docgen", split="dev", limit=1, out=out, budgets=("1.0", "0.2"),
               allocators=("model", "random"), relevance=folder)  # fmt: skip
    by_scorer = {scorer == "auto": realizer for scorer, realizer in seen}
    assert by_scorer[True] is not None and isinstance(by_scorer[True].box_scorer, BoxScorer)
    expected = BoxScorer.load(folder).state_dict()
    assert all(torch.equal(v, expected[k]) for k, v in by_scorer[True].box_scorer.state_dict().items())
    assert by_scorer[False] is None  # random scores without the realizer
    assert [r["variant"] for r in records(out)] == ["unpruned", "model@0.2", "random@0.2"]
    assert json.loads((out / "results.json").read_text())["config"]["relevance"] == str(folder)
    # the command line: a folder that is not a checkpoint is one clear line, before the model loads
    base = ["--model", str(checkpoint), "--task", "docgen", "--out", str(tmp_path / "o"), "--budgets", "0.5"]
    assert run(*base, "--relevance", str(tmp_path / "no-such-checkpoint")) == 2
    assert "config.json" in capsys.readouterr().err
