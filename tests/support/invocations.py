"""Invocations as the runner hands them to an executor, for the executor tests of every tier."""

from __future__ import annotations

from typing import Any

from sundial.runner import invocation


def invoke(
    handler: str, args: dict[str, Any] | None = None, **fields: Any
) -> invocation.Invocation:
    fields.setdefault("run_id", "run-1")
    fields.setdefault("attempt", 1)
    fields.setdefault("idempotency_key", "key-1")
    return invocation.Invocation(handler=handler, args=args or {}, **fields)
