"""The stored generations count their changes, so a quiet mirror pass can trust an old look."""

from __future__ import annotations

import pytest

from sundial.operator.context import Generations


def test_every_change_moves_the_count_and_a_read_does_not() -> None:
    generations = Generations()
    counts = [generations.changes]
    generations["a"] = 1
    counts.append(generations.changes)
    generations["a"] = 2
    counts.append(generations.changes)
    assert generations.get("a") == 2 and "a" in generations and len(generations) == 1
    counts.append(generations.changes)
    generations.pop("a", None)
    counts.append(generations.changes)
    generations["b"] = 1
    del generations["b"]
    counts.append(generations.changes)
    assert counts == [0, 1, 2, 2, 3, 5]
    assert generations == {}


@pytest.mark.parametrize("change", ["update", "setdefault"])
def test_changes_that_would_go_uncounted_are_refused(change: str) -> None:
    generations = Generations()
    with pytest.raises(TypeError, match="one by one"):
        getattr(generations, change)({"a": 1} if change == "update" else "a")
    assert generations == {} and generations.changes == 0
