"""The runner's collector settings (runner.collector): runs in flight cause no collections,
cyclic garbage is still collected, and the process gets its settings back."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from sundial.runner import collector


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection while the test runs."""
    seen: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(record)
    try:
        yield seen
    finally:
        gc.callbacks.remove(record)


def _runs_in_flight(batches: int, in_flight: int) -> None:
    """Like claimed runs: a batch of small containers alive together, then freed together."""
    for _ in range(batches):
        batch = [{"run": i, "attempt": [1]} for i in range(in_flight)]
        del batch


def test_runs_in_flight_cause_no_collection(collections: list[int]) -> None:
    with collector.tuned():
        collections.clear()  # the one collection tuned() starts with
        _runs_in_flight(batches=200, in_flight=1_000)
    # 2,000 containers alive at once stay under the young threshold: nothing is collected.
    assert len(collections) <= 5 and max(collections, default=0) == 0, collections


def test_the_defaults_collect_young_and_middle_generations(collections: list[int]) -> None:
    """The same work without the settings: the reason for them, and proof the check above can
    fail. (Whether a full collection comes depends on the whole process's heap, so it is not
    asserted here; the middle generation's collection every ten young ones does not.)"""
    before = gc.get_threshold()
    gc.collect()
    gc.set_threshold(700, 10, 10)
    try:
        collections.clear()
        _runs_in_flight(batches=200, in_flight=1_000)
    finally:
        gc.set_threshold(*before)
    assert len(collections) >= 100 and 1 in collections, collections[:50]


def test_cyclic_garbage_is_still_collected() -> None:
    with collector.tuned():
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        alive = weakref.ref(a)
        del a, b
        # More live containers than the young threshold: the youngest generation is collected.
        kept = [[i] for i in range(collector.YOUNG_THRESHOLD + 1_000)]
        assert alive() is None
        del kept


def test_the_settings_are_restored_even_after_an_error() -> None:
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    with pytest.raises(RuntimeError), collector.tuned(young_threshold=12_345):
        assert gc.get_threshold()[0] == 12_345
        assert gc.get_freeze_count() > frozen
        raise RuntimeError("the runner failed")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
