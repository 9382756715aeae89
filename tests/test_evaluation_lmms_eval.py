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

folder, pixels = sys.argv[1], int(sys.argv[2])
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
for budget in ("1.0", "0.25"):
    lm = cls.create_from_arg_string(
        f"pretrained={folder},budget={budget},allocator=uniform,dtype=float32,device=cpu,min_pixels=3136,"
        f"max_pixels={pixels}", {"batch_size": 2, "max_batch_size": None, "device": None},  # as lmms-eval's evaluator
    )
    lm.task_dict = {"docvqa_val": {"validation": docs}}
    out[budget] = lm.generate_until(requests)
    out[budget + " kept"] = [[a.budget for a in s] for s in lm.last_allocation]

# the plain model (the unwrapped one the plugin holds) on the same prompts, built here in lmms-eval's format
model, processor = lm.model, lm.processor
processor.tokenizer.padding_side = "left"
texts = [processor.apply_chat_template([
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": d["question"] + post}]},
], add_generation_prompt=True) for d in docs]
inputs = processor(text=texts, images=[d["image"] for d in docs],
                   size={"shortest_edge": 3136, "longest_edge": pixels}, return_tensors="pt")
with torch.inference_mode():
    seq = model.generate(**inputs, max_new_tokens=5, do_sample=False, eos_token_id=151645, pad_token_id=151643)
out["plain"] = processor.batch_decode(seq[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
out["tokens"] = [int(t * h * w // 4) for t, h, w in inputs["image_grid_thw"].tolist()]
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


def test_lmms_eval_finds_instantiates_and_runs_the_plugin(tiny_checkpoint_folder, tmp_path):
    import shutil

    import torch
    import transformers

    # weights re-drawn as N(0, 4 / fan_in) so that answers depend on the input (see test_evaluation_run.py)
    folder = tmp_path / "model"
    shutil.copytree(tiny_checkpoint_folder("qwen2.5-vl"), folder)
    model = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(folder)
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
        [sys.executable, "-c", SCRIPT, str(folder), str(PIXELS)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    out = json.loads(line.removeprefix("RESULT "))
    assert out["class"] == "arr_coc.evaluation.lmms_eval_plugin.ArrCocQwenVL"
    assert out["1.0"] == out["plain"]  # budget 1.0 is the unmodified model, same prompts
    assert len(set(out["plain"])) == 2  # ... whose answers depend on the input
    assert out["1.0 kept"] == []  # nothing pruned
    assert out["0.25 kept"] == [[round(0.25 * n)] for n in out["tokens"]]
    assert all(isinstance(a, str) for a in out["0.25"]) and out["0.25"] != out["plain"]
    # the question the allocator scores with: the context without the task's answer-format instruction
    assert out["questions"] == ["What is the total?", "How many bars?", "what is written in the image?"]
