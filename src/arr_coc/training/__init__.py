"""Training the relevance model (``arr-coc train``); the library imports without it.

Objectives:
    evidence   (``training/evidence.py``) the learned box scorer of the text path, trained with a listwise ranking
               loss on annotated evidence boxes (realdocs-schema JSONL, docgen's dev split); CPU, minutes
    answer     (``training/answer.py``) the seed design's objective: the language-model loss of the reference answer
               through a differentiable keep-mask, the vision-language model frozen (needs weights; a GPU helps)

Beside them: ``records.py`` (the evidence objective's records, OCR cache and recall), ``evidence_card.py`` (its
checkpoint card and default decision), ``samples.py`` (the answer objective's data) and ``relevance_checkpoint.py``
(its checkpoint folder), ``data.py`` (questions, folds).

``main(argv)`` dispatches on ``--objective`` (default ``evidence``); each objective's module has its own
``main(argv)``, so a test can run a whole tiny training loop.

Example:
    arr-coc train --data /work/data/realdocs-dev --docgen-dev 12 --ocr-cache /tmp/ocr --out runs/evidence
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

OBJECTIVES = ("evidence", "answer")


def objective_of(argv: Sequence[str]) -> str:
    """The ``--objective`` value in ``argv`` (``--objective X`` or ``--objective=X``), default "evidence"."""
    argv = list(argv)
    for i, a in enumerate(argv):
        if a == "--objective" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--objective="):
            return a.split("=", 1)[1]
    return "evidence"


def main(argv: Sequence[str] | None = None) -> int:
    """``arr-coc train``: run the objective's ``main(argv)`` (the answer objective is imported only when asked for).

    Raises:
        SystemExit: with a clear message for an unknown objective or one whose module is not installed.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    objective = objective_of(argv)
    if objective not in OBJECTIVES:
        raise SystemExit(f"arr-coc train: unknown --objective {objective!r}; choose from {', '.join(OBJECTIVES)}")
    try:
        module = importlib.import_module(f"{__name__}.{objective}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{objective}":
            raise
        raise SystemExit(
            f"arr-coc train: the {objective!r} objective is not available in this installation "
            f"(arr_coc.training.{objective} is missing)"
        ) from None
    try:
        return int(module.main(argv) or 0)
    except (ValueError, OSError) as err:  # bad data or paths: one line, not a traceback
        print(f"arr-coc train: error: {err}", file=sys.stderr)
        return 2
