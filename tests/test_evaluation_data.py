"""Reading benchmark samples from the local layouts users have: parquet downloads, saved dataset folders, JSONL.

Why: a benchmark run is only right if it reads the right split, the right configuration and the right columns, and
a user with a half-broken copy must get a clear message (or, for one bad sample, a recorded error and a run that
goes on) instead of a traceback from inside pyarrow. Every file here is written by the test, in the column layout
of the dataset lmms-eval uses (see ``arr_coc.evaluation.tasks``).
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image, ImageDraw

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
datasets = pytest.importorskip("datasets")

from arr_coc.evaluation.datasets import BadSample, DatasetError, Sample, open_dataset  # noqa: E402
from arr_coc.evaluation.tasks import TASKS, get_task  # noqa: E402


def drawn(text: str, size=(96, 64)) -> Image.Image:
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).text((8, 24), text, fill="black")
    return image


def png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def write_parquet(path, columns: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


def image_column(images):
    return pa.array(
        [{"bytes": png(i), "path": None} for i in images], pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    )


def docvqa_columns(ids, images):
    return {
        "questionId": pa.array(ids),
        "question": pa.array([f"What is written in {i}?" for i in ids]),
        "question_types": pa.array([["handwritten"]] * len(ids)),
        "image": image_column(images),
        "docId": pa.array(list(range(len(ids))), pa.int64()),
        "answers": pa.array([[f"word {i}", f"WORD {i}"] for i in ids]),
        "data_split": pa.array(["val"] * len(ids)),
    }


@pytest.fixture
def docvqa_download(tmp_path):
    """A download of lmms-lab/DocVQA: two configurations, two splits; only DocVQA/validation is docvqa's."""
    root = tmp_path / "DocVQA-repo"
    images = [drawn("alpha"), drawn("beta"), drawn("gamma")]
    write_parquet(root / "DocVQA" / "validation-00000-of-00002.parquet", docvqa_columns(["11", "12"], images[:2]))
    write_parquet(root / "DocVQA" / "validation-00001-of-00002.parquet", docvqa_columns(["13"], images[2:]))
    write_parquet(root / "DocVQA" / "test-00000-of-00001.parquet", docvqa_columns(["91"], images[:1]))
    write_parquet(root / "InfographicVQA" / "validation-00000-of-00001.parquet", docvqa_columns(["71"], images[:1]))
    return root, images


def test_parquet_download_reads_the_tasks_configuration_and_split(docvqa_download):
    root, images = docvqa_download
    ds = open_dataset("docvqa", root)
    samples = list(ds)
    assert len(ds) == 3 and [s.id for s in samples] == ["11", "12", "13"]
    assert samples[0].question == "What is written in 11?" and samples[0].answers == ["word 11", "WORD 11"]
    for s, image in zip(samples, images, strict=True):
        assert np.array_equal(np.asarray(s.load_image()), np.asarray(image))  # PNG: lossless
    assert [s.id for s in open_dataset("infovqa", root)] == ["71"]
    assert [s.id for s in open_dataset("docvqa", root, split="test")] == ["91"]
    with pytest.raises(DatasetError, match="no parquet file of the 'train' split.*found splits: test, validation"):
        open_dataset("docvqa", root, split="train")
    single = open_dataset("docvqa", root / "DocVQA" / "test-00000-of-00001.parquet")
    assert [s.id for s in single] == ["91"]


def test_missing_column_names_the_file_and_what_was_expected(tmp_path):
    cols = docvqa_columns(["1"], [drawn("x")])
    del cols["answers"]
    write_parquet(tmp_path / "validation-00000-of-00001.parquet", cols)
    with pytest.raises(DatasetError) as err:
        open_dataset("docvqa", tmp_path)
    message = str(err.value)
    assert "validation-00000-of-00001.parquet" in message and "'answers'" in message
    assert "questionId, question, answers, image" in message  # what the task expects


def test_unknown_layouts_and_missing_paths_get_clear_errors(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        open_dataset("docvqa", tmp_path / "nowhere")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(DatasetError, match="unknown layout"):
        open_dataset("docvqa", tmp_path)
    with pytest.raises(DatasetError, match="unknown file type '.txt'"):
        open_dataset("docvqa", tmp_path / "notes.txt")
    (tmp_path / "broken.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(DatasetError, match="broken.parquet is not a readable parquet file"):
        open_dataset("docvqa", tmp_path / "broken.parquet")
    with pytest.raises(DatasetError, match="needs --data"):
        open_dataset("docvqa", None)
    with pytest.raises(ValueError, match="unknown task 'vqav3'"):
        get_task("vqav3")


def test_saved_dataset_dict_textvqa(tmp_path):
    images = [drawn("stop"), drawn("go")]
    features = datasets.Features(
        {
            "question_id": datasets.Value("int32"),
            "question": datasets.Value("string"),
            "answers": datasets.Sequence(datasets.Value("string")),
            "image": datasets.Image(),
            "ocr_tokens": datasets.Sequence(datasets.Value("string")),
        }
    )
    rows = {
        "question_id": [34602, 34603],
        "question": ["what does the sign say?", "and this one?"],
        "answers": [["stop"] * 10, ["go"] * 9 + ["green"]],
        "image": images,
        "ocr_tokens": [["stop"], ["go"]],
    }
    train = {k: v[:1] for k, v in rows.items()}
    dd = datasets.DatasetDict(
        {"validation": datasets.Dataset.from_dict(rows, features), "train": datasets.Dataset.from_dict(train, features)}
    )
    dd.save_to_disk(str(tmp_path / "textvqa"))
    samples = list(open_dataset("textvqa", tmp_path / "textvqa"))
    assert [s.id for s in samples] == ["34602", "34603"]
    assert samples[1].answers == ["go"] * 9 + ["green"]
    assert np.array_equal(np.asarray(samples[1].load_image()), np.asarray(images[1]))
    assert TASKS["textvqa"].prompt(samples[0].question) == (
        "What does the sign say?\nAnswer the question using a single word or phrase."
    )
    assert len(open_dataset("textvqa", tmp_path / "textvqa", split="train")) == 1
    with pytest.raises(DatasetError, match="has no 'test' split.*validation, train"):
        open_dataset("textvqa", tmp_path / "textvqa", split="test")
    with pytest.raises(DatasetError, match="no column 'answer'"):  # ChartQA's columns are not TextVQA's
        open_dataset("chartqa", tmp_path / "textvqa", split="validation")


def test_chartqa_and_ocrbench_columns(tmp_path):
    write_parquet(
        tmp_path / "chartqa" / "data" / "test-00000-of-00001.parquet",
        {
            "type": pa.array(["human_test", "augmented_test"]),
            "question": pa.array(["How many?", "Which is largest?"]),
            "answer": pa.array(["12", "Peru"]),
            "image": image_column([drawn("12"), drawn("Peru")]),
        },
    )
    chart = list(open_dataset("chartqa", tmp_path / "chartqa"))
    assert [(s.id, s.answers, s.meta) for s in chart] == [
        ("row-0", ["12"], {"type": "human_test"}),
        ("row-1", ["Peru"], {"type": "augmented_test"}),
    ]
    assert TASKS["chartqa"].prompt("How many?") == "How many?\nAnswer the question with a single word."
    write_parquet(
        tmp_path / "ocrbench.parquet",
        {
            "dataset": pa.array(["IIIT5K", "HME100k"]),
            "question": pa.array([" what is written in the image? ", "Write the formula."]),
            "question_type": pa.array(["Regular Text Recognition", "Handwritten Mathematical Expression Recognition"]),
            "answer": pa.array([["CHAIN"], ["x = 1"]]),
            "image": image_column([drawn("CHAIN"), drawn("x=1")]),
        },
    )
    ocr = list(open_dataset("ocrbench", tmp_path / "ocrbench.parquet"))
    assert ocr[1].meta["dataset"] == "HME100k" and ocr[0].answers == ["CHAIN"]
    assert TASKS["ocrbench"].prompt(ocr[0].question) == "what is written in the image?"  # stripped, no instruction


def test_jsonl_bad_lines_become_bad_samples_and_the_rest_go_on(tmp_path):
    drawn("ok").save(tmp_path / "ok.png")
    (tmp_path / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    lines = [
        {"id": "a", "image": "ok.png", "question": "Q?", "answers": "one", "source": "mine"},
        {"id": "b", "image": "corrupt.png", "question": "Q?", "answers": ["x"]},
        {"id": "c", "image": "ok.png", "answers": ["x"]},  # no question
        "{not json",
        {"id": "a", "image": "ok.png", "question": "again?", "answers": ["y"]},  # duplicate id
        {"id": "e", "image": "missing.png", "question": "Q?", "answers": []},  # no answer
        {"image": "ok.png", "question": "no id?", "answers": ["z"]},
    ]
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n\n"
    (tmp_path / "data.jsonl").write_text(text)
    items = list(open_dataset("jsonl", tmp_path / "data.jsonl"))
    assert len(items) == 7
    ok, corrupt, no_q, not_json, dup, no_answer, no_id = items
    assert isinstance(ok, Sample) and ok.answers == ["one"] and ok.meta == {"source": "mine"}
    assert ok.load_image().size == (96, 64)
    assert isinstance(corrupt, Sample)
    with pytest.raises(ValueError, match="sample 'b' .*data.jsonl line 2"):
        corrupt.load_image()
    assert isinstance(no_q, BadSample) and "'question'" in no_q.error and "line 3" in no_q.error
    assert isinstance(not_json, BadSample) and not_json.id == "line-4" and "not JSON" in not_json.error
    assert isinstance(dup, BadSample) and "duplicate id 'a'" in dup.error
    assert isinstance(no_answer, BadSample) and "no reference answer" in no_answer.error
    assert isinstance(no_id, Sample) and no_id.id == "line-7"


def test_docgen_task_draws_documents_with_exact_answers():
    ds = open_dataset("docgen", None, split="dev", limit=1)
    first = next(iter(ds))
    assert first.id == "dev/receipt/0" and first.meta == {"kind": "receipt"}
    assert first.answers and first.answers[0] and first.load_image().size[0] > 100
    with pytest.raises(DatasetError, match="splits dev, test"):
        open_dataset("docgen", None, split="validation")
