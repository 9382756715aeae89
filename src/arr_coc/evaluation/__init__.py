"""Answer accuracy of a pruned Qwen-VL model on the standard benchmarks, from local files.

* :mod:`~arr_coc.evaluation.metrics`: ``anls``, ``relaxed_accuracy``, ``vqa_accuracy``, ``ocrbench_accuracy``.
* :mod:`~arr_coc.evaluation.tasks`: each benchmark's columns, prompt, generation settings and metric (lmms-eval's).
* :mod:`~arr_coc.evaluation.datasets`: samples from a saved dataset folder, parquet files or JSONL; ``docgen``.
* :mod:`~arr_coc.evaluation.runner`: ``arr-coc eval``: every allocator at every budget beside the unpruned model.
* :mod:`~arr_coc.evaluation.lmms_eval_plugin`: the ``arr_coc`` model for lmms-eval (``--model arr_coc``).

Only the metrics are imported here; the rest needs torch / transformers / pyarrow and is imported on use.
"""

from .metrics import METRICS, anls, normalize_vqa_answer, ocrbench_accuracy, relaxed_accuracy, vqa_accuracy

__all__ = ["METRICS", "anls", "normalize_vqa_answer", "ocrbench_accuracy", "relaxed_accuracy", "vqa_accuracy"]
