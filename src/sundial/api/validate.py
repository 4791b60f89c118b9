"""Checks the CRD schema cannot express, run by the operator before it accepts an object.

CEL can bound the number of keys in a free-form object but cannot measure its serialized size,
so the byte bound on ``args`` lives here (see docs/adr/0003); nor can it (portably) read a
Kubernetes quantity, so ``memory_bytes`` does. The pydantic models call these checks too, so
parsing a manifest with ``sundial.api`` applies them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from sundial import errors as sundial_errors

ArgsT = TypeVar("ArgsT", bound=Mapping[str, Any])

MAX_ARGS_BYTES = 64 * 1024
"""The largest ``args`` object, serialized as compact UTF-8 JSON."""

MAX_ARGS_KEYS = 64
"""The most top-level keys in an ``args`` object; enforced by the schema too."""


MAX_MEMORY_BYTES = 2**63 - 1
"""The largest memory quantity the store can hold (a bigint); 8Ei."""


class ArgsTooLargeError(sundial_errors.SundialError, ValueError):
    """``args`` serialize to more than ``MAX_ARGS_BYTES``. The store's refusal of a submission
    (``store.errors.ArgsTooLargeError``) is one of these too: one ``except`` catches both."""


def too_large(size: int, limit: int = MAX_ARGS_BYTES) -> str:
    """What every refusal of ``args`` of ``size`` bytes says."""
    return (
        f"args are {size} bytes as JSON, more than the limit of {limit} bytes: pass a"
        " reference (an object-store URL or a row id) instead of the data itself"
    )


def args_size(args: Mapping[str, Any]) -> int:
    """The size in bytes of ``args`` as compact UTF-8 JSON, the way it is stored and sent."""
    encoded = json.dumps(args, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return len(encoded.encode("utf-8"))


def validate_args_size(args: ArgsT) -> ArgsT:
    """Return ``args`` unchanged, or raise ``ArgsTooLargeError`` if they are too large to store."""
    size = args_size(args)
    if size > MAX_ARGS_BYTES:
        raise ArgsTooLargeError(too_large(size))
    return args


_MEMORY_QUANTITY = re.compile(
    r"^((?:[0-9]+(?:\.[0-9]*)?)|(?:\.[0-9]+))(?:([KMGTPE]i|[kMGTPE])|[eE]([0-9]{1,2}))?$"
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def memory_bytes(quantity: str) -> int | None:
    """A Kubernetes memory quantity (``512Mi``, ``1.5G``, ``1e9``, ``1024``) in whole bytes,
    rounded up as the kubelet does; None for anything else (milli-bytes, a sign, a typo)."""
    match = _MEMORY_QUANTITY.match(quantity.strip())
    if match is None:
        return None
    number: str = match.group(1)
    suffix: str | None = match.group(2)
    exponent: str | None = match.group(3)
    if exponent is not None:
        multiplier = int(10 ** int(exponent))
    elif suffix is not None:
        multiplier = _BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix]
    else:
        multiplier = 1
    whole, _, fraction = number.partition(".")
    # Integer arithmetic, rounding up: 1.1Gi is 1181116007 bytes, not a float's guess.
    scale = int(10 ** len(fraction))
    numerator = (int(whole or "0") * scale + int(fraction or "0")) * multiplier
    return -(-numerator // scale)
