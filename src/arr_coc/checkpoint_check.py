"""Checkpoints validated at load: every file named, every value of the exact type, finite and in its range.

A relevance checkpoint folder holds ``config.json`` (:class:`~arr_coc.config.RelevanceConfig`, the text path's
``ReadingConfig`` inside) and, with a learned box scorer, ``scorer.json`` + ``model.safetensors``
(``arr_coc.reading.matching.learned.BoxScorer``). Whatever is wrong with one of them is ONE error type,
:class:`CheckpointError` (a ``ValueError``), whose message starts with the file and names the field:

* a truncated or corrupt file (JSON that does not parse, a safetensors header or data cut short);
* a value of the wrong type: no strings for numbers (``"0.5"``), no booleans for numbers, no ``16.0`` for an integer;
* a number that is NaN or infinite, or outside its range (negative weights, tiers not ascending or not positive,
  a temperature of 0 ...);
* a tensor that is missing, unexpected, of another shape, or holds NaN / infinity;
* a ``version`` newer than this release reads ("made by a newer release of arr-coc-vis: upgrade").

A checkpoint without a ``version`` field is of the first format (everything written before the field existed, the
shipped ``learned-2026-11`` among them) and loads as before, bit for bit.

Example:
    >>> from arr_coc.config import RelevanceConfig
    >>> try:
    ...     RelevanceConfig.from_dict({"term_weights": [float("nan"), 1.0, 0.5]})
    ... except CheckpointError as err:
    ...     print(err)
    term_weights[0] must be a finite number, got nan
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# The format of the files this release writes (config.json, scorer.json). 1: the first one (no field in the file).
CHECKPOINT_VERSION = 1
MAX_MAGNITUDE = 1e6  # no weight, scale or threshold of the relevance model is larger (float32 sums stay finite)
MAX_COUNT = 10**9  # no count (cache items, samples, tiers) is larger


class CheckpointError(ValueError):
    """A checkpoint (or a config read from one) that cannot be used: the message names the file and the field.

    Attributes:
        path: the file at fault (None when the values did not come from a file).
        field: the field at fault, dotted (``reading.ocr.box_thresh``, ``term_weights[0]``), or None.
    """

    def __init__(self, message: str, path: str | Path | None = None, field: str | None = None) -> None:
        self.path = None if path is None else Path(path)
        self.field = field
        self.reason = message
        super().__init__(message if path is None else f"{path}: {message}")

    def in_file(self, path: str | Path) -> CheckpointError:
        """The same error, said of ``path`` (when it did not name a file yet)."""
        return self if self.path is not None else CheckpointError(self.reason, path, self.field)


# ----- the files ----------------------------------------------------------------------------------------------------
def read_json(path: str | Path) -> dict[str, Any]:
    """A checkpoint's JSON object, or a :class:`CheckpointError` naming the file and what is wrong with it
    (unreadable, not UTF-8, truncated or corrupt JSON, not an object). NaN and Infinity parse (so that the field
    holding one is named by the checks that follow)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise CheckpointError(f"not UTF-8 text (byte {err.start}); the file is corrupt", path) from None
    except OSError as err:
        raise CheckpointError(f"cannot be read ({err.strerror or err})", path) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        cut = " (the file ends there: it was cut short)" if err.pos >= len(text.rstrip()) else ""
        raise CheckpointError(
            f"not valid JSON: {err.msg} at line {err.lineno} column {err.colno}{cut}; the file is truncated or "
            "corrupt: copy it again or write it again with arr-coc train",
            path,
        ) from None
    if not isinstance(data, dict):
        raise CheckpointError(f"must hold a JSON object, got {_kind(data)}", path)
    return data


def check_version(data: dict[str, Any], path: str | Path | None = None) -> int:
    """Remove ``version`` from ``data`` and return it (1 when absent: the first format); a
    :class:`CheckpointError` for a version this release does not know."""
    version = data.pop("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CheckpointError(f"version must be a positive integer, got {version!r}", path, "version")
    if version > CHECKPOINT_VERSION:
        from . import __version__

        raise CheckpointError(
            f"made by a newer release of arr-coc-vis (checkpoint format version {version}; arr-coc-vis {__version__} "
            f"reads up to version {CHECKPOINT_VERSION}): upgrade arr-coc-vis (pip install -U arr-coc-vis)",
            path,
            "version",
        )
    return version


def load_relevance_config(path: str | Path) -> Any:
    """The :class:`~arr_coc.config.RelevanceConfig` of a checkpoint's ``config.json``, every value checked (its
    text path's ``ReadingConfig`` too); a :class:`CheckpointError` naming the file and the field otherwise."""
    from .config import RelevanceConfig, check_reading

    data = read_json(path)
    try:
        config = RelevanceConfig.from_dict(data)
        if config.reading is not None:
            check_reading(config.reading)
        return config
    except CheckpointError as err:
        raise err.in_file(path) from None
    except (ValueError, TypeError) as err:
        raise CheckpointError(str(err), path) from None


def load_tensors(
    path: str | Path,
    expected: Mapping[str, tuple[int, ...]],
    optional: Mapping[str, Any] = {},
    allow_inf: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The tensors of a ``model.safetensors`` file, checked against the module they load into.

    Args:
        path: the file.
        expected: every tensor the module has, by name, with its shape.
        optional: tensors older files may lack, with the value they take then.
        allow_inf: tensors that may hold +-infinity (never NaN), e.g. an unbounded range.

    Raises:
        CheckpointError: the file is truncated or corrupt, a tensor is missing or unexpected, of another shape, not
            floating point, or holds NaN (or infinity where it may not); the message names the file and the tensor.
    """
    import torch
    from safetensors.torch import load_file

    path = Path(path)
    try:
        state = load_file(str(path))
    except Exception as err:  # safetensors raises its own SafetensorError, OSError, or ValueError
        raise CheckpointError(
            f"not a readable safetensors file ({str(err).strip() or type(err).__name__}); the file is truncated or "
            "corrupt: copy it again or write it again with arr-coc train",
            path,
        ) from None
    for name, value in optional.items():
        state.setdefault(name, value)
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        parts = ([f"missing {missing}"] if missing else []) + ([f"unexpected {unexpected}"] if unexpected else [])
        raise CheckpointError(f"tensors do not fit the model: {'; '.join(parts)}", path, (missing or unexpected)[0])
    for name, shape in expected.items():
        t = state[name]
        if tuple(t.shape) != tuple(shape):
            raise CheckpointError(
                f"tensor {name} has shape {tuple(t.shape)}, the model needs {tuple(shape)}", path, name
            )
        if not t.is_floating_point():
            raise CheckpointError(f"tensor {name} must be floating point, got {t.dtype}", path, name)
        bad = torch.isnan(t) if name in allow_inf else ~torch.isfinite(t)
        if bool(bad.any()):
            what = "NaN" if name in allow_inf else "NaN or infinite"
            raise CheckpointError(
                f"tensor {name} holds {int(bad.sum())} {what} value(s) of {t.numel()}; the file is corrupt", path, name
            )
    return state


# ----- the values ---------------------------------------------------------------------------------------------------
def _kind(value: Any) -> str:
    """What a parsed JSON value is, in words (``a string '0.5'``, ``a boolean true``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"a string {value!r}"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def check_types(cls: type, data: Mapping[str, Any], prefix: str = "") -> None:
    """Check that ``data`` (parsed JSON for dataclass ``cls``) holds values of exactly the types ``cls`` declares,
    every number finite and at most ``MAX_MAGNITUDE`` (counts: ``MAX_COUNT``); unknown keys are an error naming the
    known ones. Nested dataclass fields are checked the same way.

    Raises:
        CheckpointError: naming the field (``prefix`` + name).
    """
    if not isinstance(data, Mapping):
        raise CheckpointError(f"{prefix.rstrip('.') or cls.__name__} must be an object, got {_kind(data)}", None,
                              prefix.rstrip(".") or None)  # fmt: skip
    hints = _hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise CheckpointError(
            f"unknown field(s) {[prefix + u for u in unknown]} for {cls.__name__}; known: {', '.join(names)}",
            None,
            prefix + unknown[0],
        )
    for key, value in data.items():
        check_value(prefix + key, value, hints[key])


def check_value(name: str, value: Any, hint: Any) -> None:
    """Check one parsed value against a type hint (see :func:`check_types`)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return
        arms = [a for a in args if a is not type(None)]
        if len(arms) == 1:
            return check_value(name, value, arms[0])
        errors = []
        for arm in arms:
            try:
                return check_value(name, value, arm)
            except CheckpointError as err:
                errors.append(err)
        raise errors[0]
    if hint is Any:
        _check_any(name, value)
    elif hint is bool:
        if not isinstance(value, bool):
            raise CheckpointError(f"{name} must be true or false, got {_kind(value)}", None, name)
    elif hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise CheckpointError(f"{name} must be an integer, got {_kind(value)}", None, name)
        if abs(value) > MAX_COUNT:
            raise CheckpointError(f"{name} must be at most {MAX_COUNT:,} in size, got {value}", None, name)
    elif hint is float:
        check_number(name, value)
    elif hint is str:
        if not isinstance(value, str):
            raise CheckpointError(f"{name} must be a string, got {_kind(value)}", None, name)
    elif origin is tuple or origin is list:
        if not isinstance(value, (list, tuple)):
            raise CheckpointError(f"{name} must be a list, got {_kind(value)}", None, name)
        if origin is list or (len(args) == 2 and args[1] is Ellipsis):
            for i, v in enumerate(value):
                check_value(f"{name}[{i}]", v, args[0])
        elif args:
            if len(value) != len(args):
                raise CheckpointError(f"{name} needs {len(args)} items, got {len(value)}", None, name)
            for i, (v, a) in enumerate(zip(value, args, strict=True)):
                check_value(f"{name}[{i}]", v, a)
    elif origin is dict:
        if not isinstance(value, dict):
            raise CheckpointError(f"{name} must be an object, got {_kind(value)}", None, name)
        for k, v in value.items():
            check_value(f"{name}.{k}", v, args[1] if args else Any)
    elif dataclasses.is_dataclass(hint) and isinstance(hint, type):
        check_types(hint, value, name + ".")
    # anything else: no rule here (the class' own checks run when it is built)


def check_number(name: str, value: Any) -> float:
    """``value`` as a float if it is a finite JSON number (not a boolean, not a string) of magnitude at most
    ``MAX_MAGNITUDE``; a :class:`CheckpointError` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CheckpointError(f"{name} must be a number, got {_kind(value)}", None, name)
    if not math.isfinite(value):
        raise CheckpointError(f"{name} must be a finite number, got {value!r}", None, name)
    if abs(value) > MAX_MAGNITUDE:
        raise CheckpointError(f"{name} must be at most {MAX_MAGNITUDE:g} in size, got {value!r}", None, name)
    return float(value)


def _check_any(name: str, value: Any) -> None:
    """Free-form values (a detector's extra parameters): numbers in them finite, nothing but JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        raise CheckpointError(f"{name} must be a finite number, got {value!r}", None, name)
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_any(f"{name}[{i}]", v)
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_any(f"{name}.{k}", v)


def check_range(name: str, value: float, lo: float | None = None, hi: float | None = None, *, above: bool = False,
                below: bool = False) -> None:  # fmt: skip
    """A :class:`CheckpointError` naming ``name`` unless ``value`` is finite and in ``[lo, hi]`` (``above``: lo
    excluded; ``below``: hi excluded; None: no bound on that side)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and lo is not None:
        ok = value > lo if above else value >= lo
    if ok and hi is not None:
        ok = value < hi if below else value <= hi
    if not ok:
        left = "any" if lo is None else f"{'(' if above else '['}{lo:g}"
        right = "" if hi is None else f"{hi:g}{')' if below else ']'}"
        where = f"in {left}, {right}" if lo is not None and hi is not None else (
            f"{'>' if above else '>='} {lo:g}" if lo is not None else f"{'<' if below else '<='} {hi:g}"
        )  # fmt: skip
        raise CheckpointError(f"{name} must be a finite number {where}, got {value!r}", None, name)


def check_scores(scores: Any, what: str = "the relevance") -> None:
    """A ``ValueError`` when ``scores`` (an array of one item's token scores) holds NaN or infinity: the ordering
    would be silent nonsense (NaN sorts anywhere), so the item is an error instead."""
    import numpy as np

    arr = np.asarray(scores)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(
            f"{what} gave {int(bad.sum())} non-finite score(s) of {arr.size} (NaN or infinite), so there is no "
            "ordering to keep tokens by; check the relevance checkpoint's numbers (--relevance)"
        )
