"""Free-form JSON (``args``, Pod-template fields): what of it can reach PostgreSQL safely.

The CRD keeps these subtrees with ``x-kubernetes-preserve-unknown-fields``, so no schema bounds
their shape; the apiserver decodes JSON nested up to 10,000 levels and strings holding
``\\u0000``. PostgreSQL refuses both in its own way: ``jsonb`` rejects ``\\u0000``
(``UntranslatableCharacter``), ``text`` rejects a NUL byte, and Python's own JSON encoder, which
measures and stores these values, recurses once per level and fails near a thousand. So every
free-form value is checked here, once, by the models, before anything is written:

- at most ``MAX_DEPTH`` levels of objects and lists (the object itself is level 1). A real
  PodSpec nests about ten deep (``affinity`` is the deepest); arguments deeper than 32 levels
  are a document, which belongs in an object store with a reference in ``args``;
- no NUL character in any key or string, at any depth. Other control characters (tab, newline)
  are legitimate in data - a script in a container's ``command``, a CSV row in ``args`` - and
  PostgreSQL stores them, so they are kept;
- no lone UTF-16 surrogate (a Python ``str`` can hold one, UTF-8 cannot, so the database
  driver would fail to encode it); the apiserver never sends one (Go replaces it with U+FFFD);
- only JSON types (objects with string keys, lists, strings, finite numbers, booleans, null),
  since a Python caller can hand the models anything.

The walk is iterative, so no input, however deep, raises ``RecursionError``. Each problem is
reported with the path inside the value (``at a.b[3]``) and the fix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from sundial import errors as sundial_errors

__all__ = ["MAX_DEPTH", "FreeFormError", "check", "problem"]

MAX_DEPTH: Final = 32
"""The most levels of nested objects and lists in a free-form value (the value is level 1)."""

NUL: Final = "\x00"


class FreeFormError(sundial_errors.SundialError, ValueError):
    """A free-form value that cannot be stored; the message names where and what to do."""


def _text_problem(text: str, what: str) -> str | None:
    if NUL in text:
        return (
            f"{what} contains a NUL character (\\u0000), which PostgreSQL cannot store; remove it"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return f"{what} contains a lone UTF-16 surrogate, which is not valid Unicode; remove it"
    return None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _at(where: str, message: str) -> str:
    return f"at {where}: {message}" if where else message


def problem(value: Any, *, max_depth: int = MAX_DEPTH) -> str | None:
    """The first reason ``value`` cannot be stored as JSON, or None; a problem inside it starts
    with its path (``at a.b[3]: …``), for the caller to put after the field's own name."""
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        node, where, depth = stack.pop()
        if isinstance(node, Mapping | list | tuple):
            if depth > max_depth:
                return (
                    f"nested deeper than {max_depth} levels; flatten it, or store the data"
                    " elsewhere and pass a reference"
                )
            if isinstance(node, Mapping):
                for key, child in node.items():
                    if not isinstance(key, str):
                        return _at(where, f"key {key!r:.64} is not a string; JSON keys are strings")
                    found = _text_problem(key, f"key {key[:64]!r}")
                    if found is not None:
                        return _at(where, found)
                    stack.append((child, _join(where, key), depth + 1))
            else:
                for index, child in enumerate(node):
                    stack.append((child, f"{where}[{index}]", depth + 1))
        elif isinstance(node, str):
            found = _text_problem(node, "the string")
            if found is not None:
                return _at(where, found)
        elif isinstance(node, float):
            if not math.isfinite(node):
                return _at(where, f"{node!r} is not a JSON number; use a finite number or a string")
        elif node is not None and not isinstance(node, bool | int):
            return _at(
                where,
                f"a {type(node).__name__} is not a JSON value; use an object, a list,"
                " a string, a number, true, false or null",
            )
    return None


def check(value: Any) -> Any:
    """``value`` unchanged, or ``FreeFormError`` saying why it cannot be stored (module doc)."""
    found = problem(value)
    if found is not None:
        raise FreeFormError(found)
    return value
