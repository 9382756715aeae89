"""Score a trained box-scorer checkpoint and the rules on docgen's test split, 12 per kind (pages already in the OCR
cache only), text map recall at 11.1%: the docgen check of issue 26's default decision.

Example::

    python benchmarks/learned_docgen_test.py runs/source out/cache/ocr out/cache/feats
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
for name, t in (("rules", rules), ("learned res16-b2", learned)):
    print(f"| {name} | " + " | ".join(f"{v['recall']:.3f}" for v in t.values()) + " |")
