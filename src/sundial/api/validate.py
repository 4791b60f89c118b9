"""Checks the CRD schema cannot express, run by the operator before it accepts an object.

CEL can bound the number of keys in a free-form object but cannot measure its serialized size,
so the byte bound on ``args`` lives here (see docs/adr/0003). The pydantic models call these
checks too, so parsing a manifest with ``sundial.api`` applies them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

ArgsT = TypeVar("ArgsT", bound=Mapping[str, Any])

MAX_ARGS_BYTES = 64 * 1024
"""The largest ``args`` object, serialized as compact UTF-8 JSON."""

MAX_ARGS_KEYS = 64
"""The most top-level keys in an ``args`` object; enforced by the schema too."""


class ArgsTooLargeError(ValueError):
    """``args`` serialize to more than ``MAX_ARGS_BYTES``."""


def args_size(args: Mapping[str, Any]) -> int:
    """The size in bytes of ``args`` as compact UTF-8 JSON, the way it is stored and sent."""
    encoded = json.dumps(args, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return len(encoded.encode("utf-8"))


def validate_args_size(args: ArgsT) -> ArgsT:
    """Return ``args`` unchanged, or raise ``ArgsTooLargeError`` if they are too large to store."""
    size = args_size(args)
    if size > MAX_ARGS_BYTES:
        raise ArgsTooLargeError(
            f"args are {size} bytes as JSON, more than the limit of {MAX_ARGS_BYTES} bytes; "
            "pass a reference (an object-store URL or a database key) instead of the data"
        )
    return args
