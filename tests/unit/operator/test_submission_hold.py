"""The mirror's hold for JobRun submissions (``Context.submissions_quiet``): it waits while a
handler submits, goes on as soon as the last one is done, and never waits longer than its
bound, however long the submissions go on (ADR 0040, amendment)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from sundial.operator import context, events, kube
from sundial.scheduling import clock as clocks


def make_context() -> context.Context:
    # Nothing here reaches the pool, the API or the recorder: only the hold's own state.
    return context.Context(
        pool=cast(Any, None),
        api=cast(kube.KubeApi, None),
        recorder=cast(events.EventRecorder, None),
        clock=clocks.SystemClock(),
    )


async def test_the_hold_waits_for_the_last_submission_then_goes_on() -> None:
    ctx = make_context()
    ctx.submission_queued()
    ctx.submission_queued()
    quiet = asyncio.ensure_future(ctx.submissions_quiet())
    await asyncio.sleep(0.05)
    ctx.submission_done()
    await asyncio.sleep(0.05)
    assert not quiet.done()  # one submission still under way
    ctx.submission_done()
    await asyncio.wait_for(quiet, timeout=1)


async def test_submissions_that_never_pause_hold_the_mirror_only_for_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(context, "SUBMISSION_HOLD_SECONDS", 0.2)
    ctx = make_context()
    ctx.submission_queued()  # and never done
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.wait_for(ctx.submissions_quiet(), timeout=5)
    assert loop.time() - started >= 0.2
    assert not ctx.no_submissions.is_set()
