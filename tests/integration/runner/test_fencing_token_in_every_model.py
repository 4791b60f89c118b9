"""The fencing token reaches the handler in every execution model: a thread, a spawned worker
process and a `sundial exec` child see the token the claim handed out, not the attempt."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from sundial.runner import outcomes, registry
from sundial.runner.executors import process_executor, subprocess_executor, thread_executor
from support.invocations import invoke

TOKEN = (9 << 32) | 2  # attempt 2 under epoch 9 of a hot queue


@pytest.mark.parametrize("model", ["thread", "process", "subprocess"])
async def test_the_handler_sees_the_token_the_claim_handed_out(
    model: str, child_env: dict[str, str], tmp_path: pathlib.Path
) -> None:
    executor: Any
    if model == "thread":
        executor = thread_executor.ThreadExecutor(registry.default_registry, max_workers=1)
    elif model == "process":
        executor = process_executor.ProcessExecutor(registry.default_registry, max_workers=1)
    else:
        executor = subprocess_executor.SubprocessExecutor(
            registry.default_registry, extra_env=child_env
        )
    out = tmp_path / "token"
    try:
        outcome = await executor.run(
            invoke("sample.echo_token", {"out": str(out)}, attempt=2, fencing_token=TOKEN)
        )
    finally:
        await executor.close()
    assert outcome == outcomes.Succeeded()
    assert out.read_text() == f"2 {TOKEN}"
