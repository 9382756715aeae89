"""The fields of one ``arr-coc allocate --batch`` line, parsed strictly: its id, image, query and budget.

A line is ``{"id", "image", "query"[, "budget"]}`` (a document's line, ``"pdf"`` or ``"images"``, is read by
:func:`arr_coc.documents.document_fields`); nothing else is coerced, and a wrong field is one ``ValueError`` naming it.
"""

from __future__ import annotations

from pathlib import Path

from .attending import parse_budget

BATCH_FIELDS = '{"id": string or integer, "image": path string, "query": string[, "budget": number or string]}'


def batch_id(item: object, n: int) -> str | int:
    """The id of parsed batch line ``n`` (default ``"line-N"``), or a ``ValueError``; see ``batch_fields``."""
    if not isinstance(item, dict):
        raise ValueError(f"line {n} is a JSON {_json_type(item)}, not an object {BATCH_FIELDS}")
    record_id = item.get("id", f"line-{n}")
    if isinstance(record_id, bool) or not isinstance(record_id, (str, int)):
        raise ValueError(f'"id" must be a string or an integer, got {_json_type(record_id)} {record_id!r}')
    return record_id


def batch_fields(item: dict, n: int, default_budget: object) -> tuple[Path, str, object]:
    """``(image path, query, budget)`` of parsed batch line ``n``, or a ``ValueError`` naming the field at fault.

    The rule: ``id`` is a string or an integer (``batch_id``); ids are compared as text, so ``5`` and ``"5"`` are the
    same id; ``image`` a non-empty string; ``query`` a string (``""``: query-blind; default ``""``); ``budget`` a
    number or a string as ``--budget`` takes it (default: ``--budget``). Nothing else is coerced.
    """
    if "image" not in item:
        raise ValueError(f'line {n} has no "image"; each line is {BATCH_FIELDS}')
    image = item["image"]
    if not isinstance(image, str) or not image.strip():
        raise ValueError(f'"image" must be a non-empty path string, got {_json_type(image)} {image!r}')
    query = item.get("query", "")
    if not isinstance(query, str):
        raise ValueError(
            f'"query" must be a string ("" for a query-blind allocation), got {_json_type(query)} {query!r}'
        )
    budget = item.get("budget", default_budget)
    if isinstance(budget, bool) or not isinstance(budget, (str, int, float)):
        raise ValueError(
            f'"budget" must be a number or a string such as "adaptive", got {_json_type(budget)} {budget!r}'
        )
    return Path(image), query, parse_budget(budget)


def _json_type(value: object) -> str:
    """The JSON name of a parsed value's type (null, boolean, number, string, array, object)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), type(value).__name__)
