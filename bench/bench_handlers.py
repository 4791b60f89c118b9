"""The handler bench/runner_throughput.py runs in `sundial runner` (``--handlers bench_handlers``
with bench/ on PYTHONPATH)."""

from __future__ import annotations

from typing import Any

import sundial


@sundial.job("bench.noop")
async def noop(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    return None
