"""Share of section questions whose answer box centre lies in the structural evidence (which the budget keeps before
anything else), by source and kind; pages not in the OCR cache are skipped (no OCR is run).

Example:
    python benchmarks/section_evidence.py /work/data/weakspots/multicol/questions.jsonl /work/cache/weakspots/ocr
    python benchmarks/section_evidence.py QUESTIONS OCR_CACHE new.json base.json   # per question; ids that differ

A third argument writes every question's evidence (answer inside, rule, regions, weights) as JSON; a fourth, an
earlier such file (another checkout's), prints the questions whose evidence differs: only those can be allocated
differently, since everything else on the text path is the same.
"""

import collections
import json
import sys
from pathlib import Path

from PIL import Image

from arr_coc.reading.layout.structural_query import parse, resolve
from arr_coc.reading.layout.structure import analyse
from arr_coc.training.evidence import DiskOcrCache

cache = DiskOcrCache(sys.argv[2])
qs = [json.loads(line) for line in open(sys.argv[1])]
res = collections.defaultdict(list)
pages = {}
each = {}
for q in qs:
    im = Image.open(str(Path(sys.argv[1]).parent / q["image"])).convert("RGB")
    if not cache.path(im).exists():
        continue
    if q["image"] not in pages:
        pages[q["image"]] = analyse([(b.text, b.box) for b in cache.read(im)])
    ev = resolve(pages[q["image"]], parse(q["query"]))
    a = q["boxes"][0]
    cx, cy = (a[0] + a[2]) / 2, (a[1] + a[3]) / 2
    ok = ev is not None and any(r[0] <= cx <= r[2] and r[1] <= cy <= r[3] for r in ev.regions)
    res[(q["source"], q["render"]["kind"])].append(ok)
    got = None if ev is None else [ev.rule, [[float(v) for v in r] for r in ev.regions], [float(w) for w in ev.weights]]
    each[q["id"]] = [ok, got]
print(json.dumps({f"{s} {k}": [sum(v), len(v)] for (s, k), v in sorted(res.items())}))
if len(sys.argv) > 3:
    Path(sys.argv[3]).write_text(json.dumps(each))
if len(sys.argv) > 4:
    old = json.loads(Path(sys.argv[4]).read_text())
    differ = [(k, old[k][0], v[0]) for k, v in each.items() if k in old and old[k][1] != v[1]]
    print(f"evidence differs on {len(differ)} of {len(each)}; answer inside (base -> this):")
    for k, a, b in differ:
        print(f"  {k}: {a} -> {b}")
