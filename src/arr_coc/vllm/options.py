"""The vLLM plugin's request options and the relevance model they name: the ``arr_coc`` key of
``mm_processor_kwargs``, the fields it adds to an item, what each option means (:data:`OPTIONS`), their parsing
(:func:`parse_options`, :func:`request_options`, :func:`plugin_budget`), and one shared ``Realizer`` per checkpoint
folder and device (:func:`realizer_for`, :func:`decision_device`). Moved from :mod:`.common` unchanged;
:mod:`.common` re-exports every name."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from arr_coc.attending import Budget, parse_budget

KEY = "arr_coc"  # the key in mm_processor_kwargs
KEEP_FIELD = "arr_coc_keep"  # the field added to each pruned image item: its kept merged-token indices
COUNT_FIELD = "arr_coc_kept"  # and its kept count (to split the batched indices per image)
QUERIES = "_queries"  # internal: the per-image questions, filled in by ProcessorMixin.apply (part of the cache key)
DOCUMENT = "_document"  # internal: budget_scope "prompt": a digest of all the request's images (part of the cache key)
OPTIONS = {
    "budget": "tokens to keep per image: a number in (0, 1] is a fraction (1 keeps all), a whole number >= 2 a count; "
    "or a string: '22%', '256' (a count; '1' keeps one token), 'adaptive' (default)",
    "mode": "'text' (OCR-aware, needs the [ocr] extra), 'texture' (no OCR) or 'auto' (text if [ocr] is installed)",
    "query": "the question to score against (default: the text of the user turn that holds the image)",
    "text_options": "mode 'text' only: the matcher's switches (lexical, semantic, layout, structure, query_parsing, "
    "whole_words: true, false or null), e.g. {'semantic': false}",
    "relevance": "a relevance checkpoint folder or name (Realizer.from_pretrained; 'rules': the rules alone); "
    "default routed-cells",
    "enabled": "false: this request is served unpruned even when the server has defaults",
    "budget_scope": "'item' (default: the budget is per image) or 'prompt': ONE budget over all the request's images "
    "(a document's pages), shared by their relevance to the question; each image keeps at least one token",
    "positions": "'original' or 'renumber': the ids kept tokens get (compress(positions=...)); each family serves one "
    "in vLLM (M-RoPE families: original; 1-D families: renumber, vLLM numbers tokens by index) and refuses the other",
}


class ArrCocOptionError(ValueError):
    """A request's ``arr_coc`` options are invalid (vLLM answers such a ValueError with HTTP 400)."""


@dataclass(frozen=True)
class Options:
    """One request's pruning options (server defaults merged under the request's own).

    Attributes:
        budget: tokens to keep per image (``arr_coc.attending``: fraction, count or ``"adaptive"``).
        mode: ``"text"`` or ``"texture"`` (``"auto"`` resolved when the options are parsed).
        query: the question for every image, or None (each image's user turn).
        text_options: the text path's switches (mode ``"text"``), or None.
        relevance: a relevance checkpoint folder or name, or None (the default realizer, ``routed-cells``).
        queries: filled in by the processor: one question per image of the request, in prompt order.
        budget_scope: ``"item"`` (the budget per image) or ``"prompt"`` (one budget over the request's images).
        positions: ``"original"``, ``"renumber"`` or None (the family's served choice; the other is refused).
    """

    budget: Budget = "adaptive"
    mode: str = "texture"
    query: str | None = None
    text_options: Mapping[str, Any] | None = None
    relevance: str | None = None
    queries: tuple[str, ...] | None = None
    budget_scope: str = "item"
    positions: str | None = None


def plugin_budget(value: object) -> Budget:
    """A request's ``budget`` as JSON clients send it -> the library's budget (:func:`arr_coc.attending.parse_budget`).

    JSON has one number type: JavaScript's ``JSON.stringify(1.0)`` is ``1``, and a Python client's ``1.0`` arrives as
    a float. So a number's VALUE decides, never its type: a number in (0, 1] is a fraction (``1`` and ``1.0`` both keep
    every token), a whole number >= 2 is a token count (``256`` and ``256.0`` alike, as the library reads 256.0), and
    anything else is an error. Strings are read as the library reads them: ``"22%"`` and ``"0.22"`` fractions,
    ``"256"`` a count (``"1"``: keep ONE token, the only way to ask for that), ``"adaptive"``. The library's own rule
    differs only at the Python ``int`` 1 (one token), which no JSON client can tell apart from 1.0.

    Raises:
        ArrCocOptionError: naming the value and the allowed forms.
    """
    allowed = (
        "a number in (0, 1] (a fraction: 0.22 keeps 22%, 1 keeps all), a whole number >= 2 (a token count), "
        "or a string: '22%', '256' (a count), 'adaptive'"
    )
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ArrCocOptionError(f"arr_coc: budget {value!r} is not {allowed}")
    if isinstance(value, str):
        try:
            return parse_budget(value)
        except ValueError:
            raise ArrCocOptionError(f"arr_coc: budget {value!r} is not {allowed}") from None
    number = float(value)
    if 0.0 < number <= 1.0:
        return number  # a fraction; 1 and 1.0: every token
    if number > 1.0 and number.is_integer() and number < 2**62:
        return int(number)
    raise ArrCocOptionError(f"arr_coc: budget {value!r} is not {allowed}")


def _text_options(value: object) -> dict[str, bool | None] | None:
    """``text_options`` checked against the text path's switches (``ReadingConfig.with_switches``): one clear message
    for an unknown switch or a value that is not true / false / null (never a matcher's ``TypeError``)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ArrCocOptionError(f"arr_coc: text_options must be an object, got {type(value).__name__}")
    for name, on in value.items():
        if on is not None and not isinstance(on, bool):
            raise ArrCocOptionError(f"arr_coc: text_options.{name} must be true, false or null, got {on!r}")
    try:
        from arr_coc.reading import ReadingConfig
    except ImportError as exc:  # the [ocr] extra: resolve_mode("text") says so first; keep the message if not
        raise ArrCocOptionError(f"arr_coc: text_options need the text path: {exc}") from None
    try:
        ReadingConfig().with_switches(**dict(value))
    except (TypeError, ValueError) as exc:
        raise ArrCocOptionError(f"arr_coc: text_options: {exc}") from None
    return dict(value)


def parse_options(raw: Any) -> Options | None:
    """The request's ``mm_processor_kwargs["arr_coc"]`` (already merged with the server's) -> :class:`Options`.

    Returns None when there is nothing to do (no options, or ``enabled: false``): vLLM's own behaviour.

    Raises:
        ArrCocOptionError: one clear message for an unknown option or a bad value.
    """
    from arr_coc.realizing import resolve_mode

    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ArrCocOptionError(f"arr_coc: options must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(OPTIONS) - {QUERIES, DOCUMENT})
    if unknown:
        allowed = ", ".join(OPTIONS)
        raise ArrCocOptionError(f"arr_coc: unknown option {unknown[0]!r}; allowed: {allowed}")
    enabled = raw.get("enabled", True)
    if enabled is None:
        enabled = True
    if not isinstance(enabled, bool):
        raise ArrCocOptionError(f"arr_coc: enabled must be true or false, got {enabled!r}")
    if not enabled:
        return None
    raw_budget = raw.get("budget")
    budget = "adaptive" if raw_budget is None else plugin_budget(raw_budget)
    try:
        mode = resolve_mode(raw.get("mode") or "auto")
    except (ValueError, ImportError) as exc:
        raise ArrCocOptionError(f"arr_coc: {exc}") from None
    query = raw.get("query")
    if query is not None and not isinstance(query, str):
        raise ArrCocOptionError(f"arr_coc: query must be a string, got {type(query).__name__}")
    text_options = _text_options(raw.get("text_options"))
    relevance = raw.get("relevance")
    if relevance is not None:
        if not isinstance(relevance, str) or not Path(relevance).is_dir():
            raise ArrCocOptionError(f"arr_coc: relevance must be a checkpoint folder on the server, got {relevance!r}")
        realizer_for(relevance)  # a clear error now, not inside the engine
    queries = raw.get(QUERIES)
    scope = raw.get("budget_scope") or "item"
    if scope not in ("item", "prompt"):
        raise ArrCocOptionError(f"arr_coc: budget_scope must be 'item' or 'prompt', got {scope!r}")
    positions = raw.get("positions")
    if positions not in (None, "original", "renumber"):
        raise ArrCocOptionError(f"arr_coc: positions must be 'original' or 'renumber', got {positions!r}")
    return Options(
        positions=positions,
        budget=budget,
        mode=mode,
        query=query,
        text_options=text_options,
        relevance=relevance,
        queries=tuple(queries) if queries is not None else None,
        budget_scope=scope,
    )


def request_options(request_kwargs: Mapping[str, object]) -> Mapping[str, object]:
    """A request's own ``mm_processor_kwargs`` with JSON ``null`` read as "not set": ``"arr_coc": null`` and
    ``{"arr_coc": {"budget": null}}`` leave the server's defaults in force (whole, or for that option).

    A client that serialises unset fields as null must not switch pruning off by accident; ``{"enabled": false}``
    does that on purpose.
    """
    if KEY not in request_kwargs:
        return request_kwargs
    own = request_kwargs[KEY]
    rest = {k: v for k, v in request_kwargs.items() if k != KEY}
    if own is None:
        return rest
    if isinstance(own, Mapping):
        return {**rest, KEY: {k: v for k, v in own.items() if v is not None}}
    return request_kwargs  # not an object: parse_options names the problem


# ----- the relevance model: one Realizer per checkpoint folder, shared, bounded -----------------------------------
_realizers: OrderedDict[tuple[str | None, str | None], Any] = OrderedDict()
_realizers_lock = threading.Lock()
MAX_REALIZERS = 4  # distinct (relevance checkpoint, device) pairs held at once (least recently used dropped first)

DEVICE_ENV = "ARR_COC_VLLM_DEVICE"  # where the decision runs: unset = the CPU of the process that processes inputs


def decision_device() -> torch.device | None:
    """Where the plugin decides (:data:`DEVICE_ENV`, read on each call; unset or empty: None, the CPU and
    onnxruntime OCR, as ``allocate`` runs by default).

    Set, e.g. ``ARR_COC_VLLM_DEVICE=cuda:0``, every image's frames go to that device for texture and relevance, and
    the text mode's OCR runs there on the torch backend (``OcrConfig(backend="torch", device=...)``, float32: the
    page's lines cut at once, read in at most two width groups, decoded at once). It runs in the process where vLLM
    processes inputs (the API server), which then holds a CUDA context of its own on that GPU (a few hundred MiB).

    Raises:
        ValueError: the value is not a torch device, or names a CUDA device this process cannot use.
    """
    import os

    value = os.environ.get(DEVICE_ENV, "").strip()
    if not value:
        return None
    try:
        device = torch.device(value)
    except RuntimeError as exc:
        raise ValueError(f"{DEVICE_ENV}={value!r} is not a torch device ({exc}); e.g. 'cuda:0', 'cpu'") from None
    if device.type == "cuda" and not (torch.cuda.is_available() and (device.index or 0) < torch.cuda.device_count()):
        raise ValueError(
            f"{DEVICE_ENV}={value!r}: this process sees {torch.cuda.device_count()} CUDA device(s); unset it to "
            "decide on the CPU"
        )
    return device


def on_device(realizer: Any, device: torch.device) -> Any:
    """A copy of ``realizer`` (same config, same learned box scorer) whose text path reads on ``device`` with the
    torch OCR backend. Frozen like the original."""
    from arr_coc.realizing import Realizer

    reading = dict(realizer.config.reading or {})
    reading["ocr"] = {**dict(reading.get("ocr") or {}), "backend": "torch", "device": str(device)}
    config = replace(realizer.config, reading=reading)
    return Realizer(config, box_scorer=realizer.box_scorer).eval().requires_grad_(False)


def realizer_for(relevance: str | None, device: torch.device | None = None) -> Any:
    """The :class:`~arr_coc.realizing.Realizer` for a relevance folder or name (None: the default one,
    ``default_realizer``: ``arr_coc.model.DEFAULT_RELEVANCE``; ``"rules"``: the training-free rules alone), with
    its OCR on ``device`` (:func:`on_device`) when one is given.

    A folder is loaded once with ``Realizer.from_pretrained`` (the same object and config ``allocate`` and
    ``compress`` use when given that folder) and kept in a small LRU table.
    """
    from arr_coc.realizing import Realizer, default_realizer

    if relevance is None and device is None:
        return default_realizer()
    # a folder by its absolute path; a name (built-in, "rules", "routed-structure:FOLDER") as given
    name = None if relevance is None else Path(relevance).resolve() if Path(relevance).is_dir() else relevance
    key = (None if name is None else str(name), None if device is None else str(device))
    with _realizers_lock:
        if key in _realizers:
            _realizers.move_to_end(key)
            return _realizers[key]
        if relevance is None:
            realizer = default_realizer()
        else:
            if not hasattr(Realizer, "from_pretrained"):
                raise ArrCocOptionError(
                    "arr_coc: relevance checkpoints need Realizer.from_pretrained, which this arr-coc-vis lacks; "
                    "upgrade arr-coc-vis or leave 'relevance' out"
                )
            try:
                realizer = Realizer.from_pretrained(key[0]).eval().requires_grad_(False)
            except Exception as exc:  # a bad folder is the request's problem: one clear message
                raise ArrCocOptionError(
                    f"arr_coc: could not load the relevance checkpoint {relevance!r}: {exc}"
                ) from None
        if device is not None:
            realizer = on_device(realizer, device)
        _realizers[key] = realizer
        while len(_realizers) > MAX_REALIZERS:
            _realizers.popitem(last=False)
        return realizer
