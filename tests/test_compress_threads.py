"""Issue 43, part 5: ``last_allocation`` (and ``last_inputs``, ``rope_deltas``) of one ``compress`` wrapper shared by
threads is each calling thread's own. Before: it belonged to whichever call finished last (5 of 12 reads in a
4-thread trial were another thread's). A tiny random checkpoint, four images of four sizes."""

from __future__ import annotations

import threading

import pytest
import torch
from PIL import Image

transformers = pytest.importorskip("transformers")

from arr_coc.integrations import compress  # noqa: E402

SIZES = [(56, 56), (112, 56), (56, 168), (112, 112)]  # four grids, so each thread's allocation is recognisable


def test_each_thread_reads_its_own_last_allocation(tiny_checkpoint_folder) -> None:
    from arr_coc.asking import load_processor

    folder = tiny_checkpoint_folder("qwen2.5-vl")
    model = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(folder).eval()
    processor = load_processor(str(folder))
    cm = compress(model, budget=0.5, processor=processor, query="What is the total?")
    inputs = []
    for w, h in SIZES:
        text = processor.apply_chat_template(
            [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is the total?"}]}],
            add_generation_prompt=True,
        )
        inputs.append(processor(text=[text], images=[Image.new("RGB", (w, h), "white")], return_tensors="pt"))
    expected = [tuple(int(v) for v in x["image_grid_thw"][0]) for x in inputs]
    assert len(set(expected)) == len(SIZES)
    barrier = threading.Barrier(len(SIZES))
    seen: list[tuple | None] = [None] * len(SIZES)
    lengths: list[tuple[int, int] | None] = [None] * len(SIZES)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            with torch.inference_mode():
                out = cm(**inputs[i])
            barrier.wait(timeout=120)  # every thread has called before any thread reads
            seen[i] = tuple(cm.last_allocation[0][0].grid)
            lengths[i] = (cm.last_inputs.input_ids.shape[1], out.logits.shape[1])
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(SIZES))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert seen == [(1, h // 2, w // 2) for (_, h, w) in expected], "a thread read another thread's allocation"
    assert all(a == b for a, b in lengths), "last_inputs is the thread's own pruned sequence"
    assert cm.last_allocation == [], "the main thread made no call: it has no last allocation"
