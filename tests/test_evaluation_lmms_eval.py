"""The lmms-eval plugin: lmms-eval finds ``--model arr_coc`` through the entry point ``pyproject.toml`` declares,
instantiates it from a ``--model_args`` string, and it answers ``generate_until`` requests with a tiny checkpoint.

Why: a plugin that lmms-eval cannot find, or that answers differently from the model it wraps, gives published
tables nobody can trust. lmms-eval is installed without its requirement set (``pip install --no-deps
lmms-eval==0.7.3`` plus loguru; see ``.ci/run``): its full set pulls torchvision, which breaks the CPU torch.
Only its model registry and model interface are used here, not its task loader (that needs the hub).

lmms-eval runs in a subprocess: importing it changes process-wide state (``warnings.filterwarnings("ignore")``,
loguru's handlers) that must not leak into the other tests. The entry point comes from a ``*.dist-info`` folder
written from ``pyproject.toml``'s ``[project.entry-points."lmms_eval.models"]`` table and put on ``PYTHONPATH``:
exactly what ``pip install`` writes, so the test checks the declaration itself, also where the package was
installed before the entry point existed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("transformers")
if importlib.util.find_spec("lmms_eval") is None or importlib.util.find_spec("loguru") is None:
    pytest.skip(
        "lmms-eval is not installed (CI installs it: pip install --no-deps lmms-eval==0.7.3 loguru)",
        allow_module_level=True,
    )

ROOT = Path(__file__).resolve().parents[1]
PIXELS = 28 * 28 * 48

SCRIPT = r"""
import json, sys
from PIL import Image, ImageDraw
import torch, transformers
from lmms_eval.api.instance import Instance
from lmms_eval.models import get_model, list_available_models

folder, bounds = sys.argv[1], sys.argv[2]  # "min,max" pixel bounds, or "" for the family's defaults
assert "arr_coc" in list_available_models(), "lmms-eval did not register arr_coc"
cls = get_model("arr_coc")

def page(i):
    image = Image.new("RGB", (140 + 20 * i, 100), (255, 250 - 40 * i, 240))
    ImageDraw.Draw(image).text((10, 10 + 20 * i), f"Total: {17 * (i + 3)}.00", fill="black")
    return image

docs = [{"image": page(i), "question": q} for i, q in enumerate(["What is the total?", "Who signed it?"])]
post = "\nAnswer the question using a single word or phrase."
gen = {"max_new_tokens": 5, "temperature": 0, "do_sample": False, "until": ["\n\n"]}
requests = [
    Instance(
        "generate_until",
        (d["question"] + post, dict(gen), lambda doc: [doc["image"]], i, "docvqa_val", "validation"),
        idx=i,
        metadata={"task": "docvqa_val", "doc_id": i, "repeats": 1},
    )
    for i, d in enumerate(docs)
]
out = {"class": cls.__module__ + "." + cls.__name__}
pixel_args = ",min_pixels={},max_pixels={}".format(*bounds.split(",")) if bounds else ""
for budget in ("1.0", "0.25"):
    lm = cls.create_from_arg_string(
        f"pretrained={folder},budget={budget},allocator=uniform,dtype=float32,device=cpu{pixel_args}",
        {"batch_size": 2, "max_batch_size": None, "device": None},  # as lmms-eval's evaluator
    )
    lm.task_dict = {"docvqa_val": {"validation": docs}}
    out[budget] = lm.generate_until(requests)
    out[budget + " kept"] = [[a.budget for a in s] for s in lm.last_allocation]

# the plain model (the unwrapped one the plugin holds) on the same prompts, built here in lmms-eval's format, the
# pixel bounds as the family's processor takes them (Qwen's area bounds; InternVL's tile counts)
from arr_coc.family_processors import pixel_kwargs
from arr_coc.loading import visual_tokens
model, processor = lm.model, lm.processor
tok = processor.tokenizer
tok.padding_side = "left"
texts = [processor.apply_chat_template([
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": d["question"] + post}]},
], add_generation_prompt=True) for d in docs]
inputs = processor(text=texts, images=[d["image"] for d in docs], padding=True, return_tensors="pt",
                   **pixel_kwargs(processor, *lm.bounds))
with torch.inference_mode():
    seq = model.generate(**inputs, max_new_tokens=5, do_sample=False, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id)
out["plain"] = processor.batch_decode(seq[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
out["tokens"] = [visual_tokens(model, inputs, i) for i in range(len(docs))]
from arr_coc.evaluation.lmms_eval_plugin import question_of
out["questions"] = [
    question_of("What is the total?\nAnswer the question using a single word or phrase."),
    question_of("<image>How many bars?\nAnswer the question with a single word."),
    question_of("what is written in the image?"),
]
print("RESULT " + json.dumps(out))
"""


def write_dist_info(folder: Path) -> None:
    """A minimal installed-distribution record holding pyproject.toml's lmms-eval entry points."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    entry_points = project["entry-points"]["lmms_eval.models"]
    info = folder / "arr_coc_vis_entry_points-0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: arr-coc-vis-entry-points\nVersion: 0.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text("[lmms_eval.models]\n" + lines)


@pytest.mark.parametrize(
    ("family", "bounds"),
    [("qwen2.5-vl", f"3136,{PIXELS}"), ("internvl", "")],  # Qwen's area bounds; InternVL's own (tiles) by default
)
def test_lmms_eval_finds_instantiates_and_runs_the_plugin(tiny_checkpoint_folder, tmp_path, family, bounds):
    import shutil

    import torch
    import transformers

    # weights re-drawn as N(0, 4 / fan_in) so that answers depend on the input (see test_evaluation_run.py)
    folder = tmp_path / "model"
    shutil.copytree(tiny_checkpoint_folder(family), folder)
    model = transformers.AutoModelForImageTextToText.from_pretrained(folder)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=generator) * 2.0 / p.shape[-1] ** 0.5)
    model.save_pretrained(folder)

    write_dist_info(tmp_path / "site")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site"), str(ROOT / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(folder), bounds], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    out = json.loads(line.removeprefix("RESULT "))
    assert out["class"] == "arr_coc.evaluation.lmms_eval_plugin.ArrCocQwenVL"
    assert out["1.0"] == out["plain"]  # budget 1.0 is the unmodified model, same prompts, same pixel bounds
    assert len(set(out["plain"])) == 2  # ... whose answers depend on the input
    assert out["1.0 kept"] == []  # nothing pruned
    if family == "qwen2.5-vl":
        assert out["0.25 kept"] == [[round(0.25 * n)] for n in out["tokens"]]
    else:  # InternVL: one allocation a tile (and the thumbnail), a quarter of the image's tokens over them
        assert [sum(s) for s in out["0.25 kept"]] == [
            pytest.approx(0.25 * n, abs=len(s)) for n, s in zip(out["tokens"], out["0.25 kept"], strict=True)
        ]
    assert all(isinstance(a, str) for a in out["0.25"]) and out["0.25"] != out["plain"]
    # the question the allocator scores with: the context without the task's answer-format instruction
    assert out["questions"] == ["What is the total?", "How many bars?", "what is written in the image?"]
