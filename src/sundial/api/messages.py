"""pydantic validation errors worded the way the apiserver words a CRD's schema errors.

A manifest refused by the models (the operator's reconcile, a Python caller, the demo's loader)
should read like the same manifest refused by ``kubectl apply``: the field's path with list
indices in brackets (``spec.failurePolicy.rules[0].action``), then the apiserver's phrase for
the broken bound (``must be of type integer``, ``should be less than or equal to 9``,
``Unsupported value: "Sometimes": supported values: "Forbid", "Allow", "Replace"``). Messages
of our own rules (CEL rules and the checks in ``validate`` and ``json_values``) are kept as
they are, without pydantic's ``Value error,`` prefix. ``describe`` joins every error of one
validation into one line, for a condition message or an Event.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pydantic
from pydantic_core import ErrorDetails

__all__ = ["describe", "field_path", "phrase"]

_JSON_TYPES = {
    "int_type": "integer",
    "int_parsing": "integer",
    "int_from_float": "integer",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "string_type": "string",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "list_type": "array",
    "float_type": "number",
}


def field_path(location: Sequence[int | str], root: str = "spec") -> str:
    """``("failurePolicy", "rules", 0, "action")`` as ``spec.failurePolicy.rules[0].action``."""
    path = root
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    if value is None:
        return "null"
    return type(value).__name__


def _shown(value: Any) -> str:
    """A value as the apiserver quotes it (JSON), cut short."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        text = f"<{_json_type(value)}>"
    return text if len(text) <= 80 else text[:77] + "..."


def phrase(detail: ErrorDetails) -> str:
    """One error's message, in the apiserver's words where there are some."""
    kind = detail["type"]
    context: dict[str, Any] = dict(detail.get("ctx") or {})
    value = detail.get("input")
    if kind in _JSON_TYPES:
        return f'Invalid value: "{_json_type(value)}": must be of type {_JSON_TYPES[kind]}'
    if kind == "missing":
        return "Required value"
    if kind == "extra_forbidden":
        return "unknown field: remove it (or check its spelling)"
    if kind == "literal_error":
        expected = context.get("expected", "")
        return f"Unsupported value: {_shown(value)}: supported values: {expected}"
    if kind == "greater_than_equal":
        return f"Invalid value: {_shown(value)}: should be greater than or equal to {context['ge']}"
    if kind == "less_than_equal":
        return f"Invalid value: {_shown(value)}: should be less than or equal to {context['le']}"
    if kind == "string_too_long":
        return f"Too long: may not be more than {context['max_length']} characters"
    if kind == "string_too_short":
        return (
            f"Invalid value: {_shown(value)}: should be at least {context['min_length']} chars long"
        )
    if kind == "string_pattern_mismatch":
        return f"Invalid value: {_shown(value)}: should match '{context['pattern']}'"
    if kind == "too_long":
        return (
            f"Too many: {context.get('actual_length')}: must have at most"
            f" {context['max_length']} items"
        )
    if kind == "too_short":
        return (
            f"Invalid value: {context.get('actual_length')}: should have at least"
            f" {context['min_length']} items"
        )
    if kind == "string_unicode":
        return "Invalid value: the string is not valid Unicode (a lone surrogate); remove it"
    message = detail["msg"]
    return message.removeprefix("Value error, ")


def describe(error: pydantic.ValidationError, root: str = "spec") -> str:
    """Every error of ``error`` on one line: ``spec.priority: Invalid value: …; …``."""
    return "; ".join(
        f"{field_path(detail['loc'], root)}: {phrase(detail)}" for detail in error.errors()
    )
