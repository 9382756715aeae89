"""Score a trained box-scorer checkpoint and the rules on docgen's test split, 12 per kind (pages already in the OCR
cache only), text map recall at 11.1%: the docgen check of the rule that picks the default scorer.

Example::

    python benchmarks/learned_docgen_test.py runs/source out/cache/ocr out/cache/feats
    python benchmarks/learned_docgen_test.py src/arr_coc/checkpoints/learned-2026-11 out/cache/ocr out/cache/feats

The first argument is a folder holding ``scorer.json`` + ``model.safetensors`` (a run of ``arr-coc train`` or the
package's built-in checkpoint).
"""

import sys

from arr_coc.reading import QueryMatcher, default_reading
from arr_coc.reading.matching.learned import BoxScorer
from arr_coc.training.data import docgen_questions
from arr_coc.training.evidence import DiskOcrCache, extract, recall_at, rule_scores, summarise

scorer = BoxScorer.load(sys.argv[1])
qs = docgen_questions("test", 12, 0)
matcher = QueryMatcher(default_reading().config, embedder=default_reading().embedder)
recs = extract(qs, matcher, DiskOcrCache(sys.argv[2]), None, sys.argv[3], cached_only=True)
rules = summarise(recs, [recall_at(r, rule_scores(r)) for r in recs])
learned = summarise(recs, [recall_at(r, scorer.box_scores(r.feats)) for r in recs])
print(f"docgen test, {len(recs)} of {len(qs)} questions OCR-cached")
print("| model | " + " | ".join(f"{k} (n={v['n']})" for k, v in rules.items()) + " |")
print("|---|" + "---:|" * len(rules))
for name, t in (("rules", rules), (f"learned {sys.argv[1]}", learned)):
    print(f"| {name} | " + " | ".join(f"{v['recall']:.3f}" for v in t.values()) + " |")
