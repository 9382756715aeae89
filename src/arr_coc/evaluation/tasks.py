"""The benchmarks ``arr-coc eval`` knows: where each one's fields are, how it is prompted, how it is scored.

Everything here follows lmms-eval 0.7.3 (its task YAML files and ``utils.py``) as it runs the Qwen2-VL,
Qwen2.5-VL and Qwen3-VL models, so that a score printed by ``arr-coc eval`` can be compared with published
lmms-eval numbers. Those models get the tasks' ``default`` prompt (the ``qwen_vl`` entries of some YAML files are
for the first Qwen-VL, whose model name is ``qwen_vl``).

=========  ============================  ==========  ==========================================  =========  ======
task       lmms-eval dataset (config)    split       prompt after the question                   max new    metric
=========  ============================  ==========  ==========================================  =========  ======
docvqa     lmms-lab/DocVQA (DocVQA)      validation  "\\nAnswer the question using a single       32         anls
                                                     word or phrase."
infovqa    lmms-lab/DocVQA               validation  same as docvqa                              32         anls
           (InfographicVQA)
chartqa    lmms-lab/ChartQA              test        "\\nAnswer the question with a single word."  16         relaxed
textvqa    lmms-lab/textvqa              validation  same as docvqa; question ``.capitalize()``d 128 (*)    vqa
ocrbench   echo840/OCRBench              test        none (question stripped)                    128        ocrbench
jsonl      your own file                 —           same as docvqa                              32         anls
docgen     benchmarks/docgen.py          test        same as docvqa                              32         anls
=========  ============================  ==========  ==========================================  =========  ======

(*) the TextVQA YAML sets no ``max_new_tokens``: lmms-eval's Qwen-VL models then use 128. TextVQA also stops at
"ASSISTANT:"; DocVQA / InfographicVQA's "\\n\\n" stop is dropped by lmms-eval's Qwen-VL models, and so here.

lmms-eval 0.7.3 loads the ``lmms-lab-encoder/...`` copies of the ``lmms-lab/...`` datasets (same files and
columns); either download works.

Columns read from each dataset (lmms-eval's ``doc_to_visual`` / ``doc_to_text`` / ``doc_to_target``):

=========  ================  ==========  ==============================  ========================================
task       id                question    answers                         kept for scoring / reports
=========  ================  ==========  ==============================  ========================================
docvqa     ``questionId``    question    ``answers`` (list of str)       —
infovqa    ``questionId``    question    ``answers`` (list of str)       —
chartqa    row number        question    ``answer`` (str)                ``type`` (human_test / augmented_test)
textvqa    ``question_id``   question    ``answers`` (10 str)            —
ocrbench   row number        question    ``answer`` (list of str)        ``dataset`` (HME100k scoring),
                                                                         ``question_type``
=========  ================  ==========  ==============================  ========================================

All of them hold the image in the ``image`` column (a ``datasets.Image``: ``{"bytes", "path"}`` in parquet).

Generation is greedy (``do_sample=False``) everywhere. Each model gets lmms-eval's system prompt
"You are a helpful assistant." and its image resolution bounds: ``min_pixels = 256 * 28 * 28`` and
``max_pixels = 1605632`` (2,048 tokens of 28 px) for Qwen2.5-VL and Qwen3-VL, 3,136 and 602,112 (768 tokens) for
Qwen2-VL (``Family.eval_pixels`` in :mod:`arr_coc.families`).
"""

from __future__ import annotations

from dataclasses import dataclass

SHORT_ANSWER = "\nAnswer the question using a single word or phrase."
SYSTEM_PROMPT = "You are a helpful assistant."


@dataclass(frozen=True)
class TaskSpec:
    """One benchmark: its columns, prompt, generation settings and metric.

    Attributes:
        name: the ``--task`` name.
        metric: a key of :data:`arr_coc.evaluation.metrics.METRICS`.
        post_prompt: text appended to the question.
        max_new_tokens: generation limit.
        until: stop strings; the answer is cut at the first one.
        split: the split lmms-eval evaluates (used to pick files / a split of a saved dataset).
        source: the Hugging Face dataset lmms-eval loads (for messages).
        config: the dataset's configuration, which is also the folder its parquet files sit in (``DocVQA/``).
        id_column: column holding a unique id, or ``None`` for the row number.
        question_column: column holding the question.
        answers_column: column holding the reference answer(s).
        image_column: column holding the image.
        meta_columns: other columns kept with each sample (used by the metric or the report).
        capitalize: apply ``str.capitalize`` to the question (TextVQA does).
        strip_question: strip surrounding white space from the question (OCRBench does).
    """

    name: str
    metric: str
    post_prompt: str
    max_new_tokens: int
    until: tuple[str, ...] = ()
    split: str = "validation"
    source: str = ""
    config: str | None = None
    id_column: str | None = None
    question_column: str = "question"
    answers_column: str = "answers"
    image_column: str = "image"
    meta_columns: tuple[str, ...] = ()
    capitalize: bool = False
    strip_question: bool = False

    def prompt(self, question: str) -> str:
        """The user-turn text lmms-eval builds for ``question`` (``doc_to_text``)."""
        if self.strip_question:
            question = question.strip()
        if self.capitalize:
            question = question.capitalize()
        return f"{question}{self.post_prompt}"

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column this task reads."""
        cols = (self.id_column, self.question_column, self.answers_column, self.image_column, *self.meta_columns)
        return tuple(c for c in cols if c)


TASKS: dict[str, TaskSpec] = {
    t.name: t
    for t in (
        TaskSpec(
            "docvqa",
            "anls",
            SHORT_ANSWER,
            32,
            source="lmms-lab-encoder/DocVQA",
            config="DocVQA",
            id_column="questionId",
        ),
        TaskSpec(
            "infovqa",
            "anls",
            SHORT_ANSWER,
            32,
            source="lmms-lab-encoder/DocVQA",
            config="InfographicVQA",
            id_column="questionId",
        ),
        TaskSpec(
            "chartqa",
            "relaxed_accuracy",
            "\nAnswer the question with a single word.",
            16,
            split="test",
            source="lmms-lab-encoder/ChartQA",
            answers_column="answer",
            meta_columns=("type",),
        ),
        TaskSpec(
            "textvqa",
            "vqa_accuracy",
            SHORT_ANSWER,
            128,
            until=("ASSISTANT:",),
            source="lmms-lab-encoder/textvqa",
            id_column="question_id",
            capitalize=True,
        ),
        TaskSpec(
            "ocrbench",
            "ocrbench_accuracy",
            "",
            128,
            split="test",
            source="echo840/OCRBench",
            answers_column="answer",
            meta_columns=("dataset", "question_type"),
            strip_question=True,
        ),
        TaskSpec("jsonl", "anls", SHORT_ANSWER, 32, split="", id_column="id"),
        TaskSpec("docgen", "anls", SHORT_ANSWER, 32, split="test", source="benchmarks/docgen.py", id_column="id"),
    )
}


def get_task(name: str) -> TaskSpec:
    """The :class:`TaskSpec` called ``name``.

    Raises:
        ValueError: for an unknown name (the message lists the known ones).
    """
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of: {', '.join(TASKS)}")
    return TASKS[name]
