"""Before/after exactness of the token decision: dump what ``allocate`` decides, then compare two dumps.

    # dump with the code on PYTHONPATH (e.g. an older checkout's src/), then with this one, then compare:
    PYTHONPATH=/tmp/before/src python benchmarks/decision_exactness.py dump /work/data/kernels/before.pt
    PYTHONPATH=$PWD/src python benchmarks/decision_exactness.py dump /work/data/kernels/after.pt
    python benchmarks/decision_exactness.py compare /work/data/kernels/before.pt /work/data/kernels/after.pt

What is dumped, per (image, query, mode, CPU banding): the relevance scores (rows, cols) and the kept token indices at
budgets 11% and 22% (``Allocation.select``, words kept whole in text mode) and ``"adaptive"``. Images: the repo's
``examples/*.jpg`` (four queries each) and ``--realdocs N`` images of realdocs-dev (``/work/data/realdocs-dev``,
their own questions, at most ``--per-image`` each; the first N images in sorted order). Modes: texture for every image,
text (OCR prior) on the examples and on the first ``--text-images`` realdocs images. CPU banding: on (the default
config) and off (``cpu_band_elements=0``, the path a GPU runs). A batch check: relevance of 8 frames at once equals
each frame alone (the texture-mode invoice, shifted by 0-7 px).

``compare`` prints, per mode: the number of decisions, how many have identical kept sets at each budget, the largest
absolute score difference, and the largest difference relative to the map's score range.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_QUERIES = ["How much must be paid?", "What is the date?", "Describe the image", "What is at the top left?"]
BUDGETS = (0.11, 0.22, "adaptive")


def _cases(realdocs: Path, n_real: int, per_image: int, text_images: int) -> list[tuple[Path, str, str]]:
    cases = []
    for path in sorted((ROOT / "examples").glob("*.jpg")):
        if path.name.endswith("_heatmap.jpg"):
            continue
        for q in EXAMPLE_QUERIES:
            cases += [(path, q, "texture"), (path, q, "text")]
    qfile = realdocs / "questions.jsonl"
    if n_real and qfile.is_file():
        by_image: dict[str, list[str]] = {}
        for line in qfile.read_text().splitlines():
            row = json.loads(line)
            by_image.setdefault(row["image"], []).append(row["query"])
        for i, image in enumerate(sorted(by_image)[:n_real]):
            for q in by_image[image][:per_image]:
                cases.append((realdocs / image, q, "texture"))
                if i < text_images:
                    cases.append((realdocs / image, q, "text"))
    return cases


def dump(args: argparse.Namespace) -> None:
    import arr_coc
    from arr_coc.config import RelevanceConfig
    from arr_coc.engine import EngineConfig
    from arr_coc.grid import GridSpec
    from arr_coc.texture import frames_from_image

    realizers = {"bands on": arr_coc.Realizer(RelevanceConfig()).eval()}
    realizers["bands off"] = arr_coc.Realizer(engine=EngineConfig(cpu_band_elements=0)).eval()
    out = {}
    cases = _cases(Path(args.realdocs), args.realdocs_images, args.per_image, args.text_images)
    for j, (path, query, mode) in enumerate(cases):
        for band, realizer in realizers.items():
            if mode == "text" and band == "bands off":
                continue  # the text prior comes from the host OCR; the banding is checked in texture mode
            a = arr_coc.allocate(str(path), query, budget=0.11, mode=mode, realizer=realizer, family="qwen2.5-vl")
            key = f"{path.name}|{query}|{mode}|{band}"
            out[key] = dict(
                scores=torch.from_numpy(a.scores.copy()),
                kept={str(b): a.select(b) if b != 0.11 else a.keep for b in BUDGETS},
            )
        if j % 20 == 0:
            print(f"{j}/{len(cases)}", file=sys.stderr, flush=True)
    # batch invariance: 8 shifted frames at once against each alone
    from PIL import Image

    image = Image.open(ROOT / "examples" / "invoice.jpg")
    grid = GridSpec.for_family("qwen2.5-vl").grid_for(image.height, image.width)
    frame = frames_from_image(image, grid)
    frames = torch.cat([torch.roll(frame, shifts=i, dims=3) for i in range(8)])
    for band, realizer in realizers.items():
        together = realizer.relevance(frames, (grid.rows, grid.cols), EXAMPLE_QUERIES[0]).scores
        alone = torch.cat(
            [realizer.relevance(f[None], (grid.rows, grid.cols), EXAMPLE_QUERIES[0]).scores for f in frames]
        )
        out[f"batch8|{band}"] = dict(scores=together, alone=alone)
    Path(args.file).parent.mkdir(parents=True, exist_ok=True)
    torch.save(out, args.file)
    print(f"{len(out)} decisions -> {args.file}")


def compare(args: argparse.Namespace) -> None:
    a, b = torch.load(args.before), torch.load(args.after)
    common = sorted(set(a) & set(b))
    print(f"{len(common)} decisions in both dumps ({len(a)} before, {len(b)} after)")
    groups: dict[str, dict] = {}
    for key in common:
        if key.startswith("batch8|"):
            continue
        _, _, mode, band = key.split("|")
        g = groups.setdefault(f"{mode}, {band}", dict(n=0, bitwise=0, max_abs=0.0, max_rel=0.0, same={}, diff=[]))
        sa, sb = a[key]["scores"].double(), b[key]["scores"].double()
        g["n"] += 1
        g["bitwise"] += int(torch.equal(a[key]["scores"], b[key]["scores"]))
        d = (sa - sb).abs().max().item()
        g["max_abs"] = max(g["max_abs"], d)
        g["max_rel"] = max(g["max_rel"], d / max((sa.max() - sa.min()).item(), 1e-12))
        for budget, kept in a[key]["kept"].items():
            same = torch.equal(kept, b[key]["kept"][budget])
            g["same"][budget] = g["same"].get(budget, 0) + int(same)
            if not same:
                g["diff"].append(f"{key} @ {budget}: {len(set(kept.tolist()) ^ set(b[key]['kept'][budget].tolist()))}")
    print("| mode | decisions | scores bit-identical | max abs diff | max diff / range | kept identical @ " +
          " / ".join(str(x) for x in BUDGETS) + " |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---|")
    for name, g in groups.items():
        same = " / ".join(f"{g['same'].get(str(x), 0)}" for x in BUDGETS)
        print(f"| {name} | {g['n']} | {g['bitwise']} | {g['max_abs']:.3g} | {g['max_rel']:.3g} | {same} |")
    for name, g in groups.items():
        for line in g["diff"]:
            print(f"  kept set differs ({name}): {line} tokens in the symmetric difference")
    for key in common:
        if key.startswith("batch8|"):
            for label, dump_ in (("before", a), ("after", b)):
                d = (dump_[key]["scores"] - dump_[key]["alone"]).abs().max().item()
                print(f"{key} {label}: 8 frames at once vs each alone, max abs diff {d:.3g}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="dump the decisions of the code on PYTHONPATH")
    d.add_argument("file")
    d.add_argument("--realdocs", default="/work/data/realdocs-dev", help="realdocs-dev folder (skipped if absent)")
    d.add_argument("--realdocs-images", type=int, default=60, help="how many realdocs-dev images (sorted order)")
    d.add_argument("--per-image", type=int, default=2, help="questions per realdocs-dev image")
    d.add_argument("--text-images", type=int, default=10, help="realdocs-dev images also run in text mode")
    c = sub.add_parser("compare", help="compare two dumps")
    c.add_argument("before")
    c.add_argument("after")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    dump(args) if args.cmd == "dump" else compare(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
