"""When the operator hands malloc's free memory back: after heavy work, once idle."""

from __future__ import annotations

import ctypes
import itertools
import platform

import pytest

from sundial.operator import heap


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def trimmer(clock: FakeClock, calls: list[float]) -> heap.HeapTrimmer:
    def record() -> heap.Trim:
        calls.append(clock.now)
        return heap.Trim(released_bytes=4096, cpu_seconds=0.002)

    return heap.HeapTrimmer(threshold=256, interval=60.0, clock=clock, trimming=record)


def test_an_operator_at_rest_never_trims():
    clock, calls = FakeClock(), []
    trimming = trimmer(clock, calls)
    for _ in range(1000):
        clock.now += 3
        trimming.after_pass(0)
    assert calls == []


def test_heavy_work_is_trimmed_once_the_operator_goes_idle():
    clock, calls = FakeClock(), []
    trimming = trimmer(clock, calls)
    for _ in range(5):
        clock.now += 3
        trimming.after_pass(100)
    assert calls == []  # still busy, and less than an interval since the start
    clock.now += 3
    trimming.after_pass(0)
    assert calls == [clock.now]
    for _ in range(10):
        clock.now += 3
        trimming.after_pass(0)
    assert len(calls) == 1  # trimmed once, not on every idle pass
    assert trimming.trims == 1
    assert trimming.cpu_seconds == pytest.approx(0.002)


def test_light_work_is_never_trimmed_until_it_adds_up():
    clock, calls = FakeClock(), []
    trimming = trimmer(clock, calls)
    for _ in range(25):
        clock.now += 3
        trimming.after_pass(10)
        trimming.after_pass(0)
    assert len(calls) == 0  # 250 objects in all: below the threshold
    trimming.after_pass(10)
    trimming.after_pass(0)
    assert len(calls) == 1


def test_work_that_goes_on_is_trimmed_at_most_every_interval():
    clock, calls = FakeClock(), []
    trimming = trimmer(clock, calls)
    for _ in range(200):  # 600 s of passes that each write 300 objects
        clock.now += 3
        trimming.after_pass(300)
    assert len(calls) == 10
    assert all(later - earlier >= 60 for earlier, later in itertools.pairwise(calls))


def test_without_malloc_trim_nothing_is_done_and_nothing_counted():
    clock = FakeClock()
    trimming = heap.HeapTrimmer(threshold=1, clock=clock, trimming=lambda: None)
    assert trimming.after_pass(5) is None
    assert trimming.after_pass(0) is None
    assert trimming.trims == 0


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_the_real_trim_returns_freed_heap_on_glibc():
    # Memory malloc gave out in pieces over its mmap threshold's reach is kept when freed;
    # the trim must run, measure itself, and leave the allocator working.
    blocks = [ctypes.create_string_buffer(100_000) for _ in range(200)]
    del blocks
    done = heap.trim()
    assert done is not None
    assert done.cpu_seconds >= 0
    assert done.released_bytes is not None
    assert len(bytes(ctypes.create_string_buffer(1000))) == 1000
