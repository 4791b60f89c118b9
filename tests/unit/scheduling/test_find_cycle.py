"""``dependency_cycles.find_cycle`` against brute-force reachability on random graphs."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from sundial.scheduling import dependency_cycles

NODES = "abcdefg"
GRAPHS = st.dictionaries(
    st.sampled_from(NODES), st.lists(st.sampled_from(NODES), max_size=3), min_size=1
)


def reachable(graph: dict[str, list[str]], node: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph.get(node, ()))
    while todo:
        current = todo.pop()
        if current in graph and current not in seen:
            seen.add(current)
            todo.extend(graph[current])
    return seen


@given(graph=GRAPHS, data=st.data())
def test_a_cycle_is_found_exactly_when_one_is_reachable(
    graph: dict[str, list[str]], data: st.DataObject
) -> None:
    start = data.draw(st.sampled_from(sorted(graph)))
    cycle = dependency_cycles.find_cycle(graph, start)
    on_cycle = {
        node for node in reachable(graph, start) | {start} if node in reachable(graph, node)
    }
    if not on_cycle:
        assert cycle is None
        return
    assert cycle is not None and cycle[0] == cycle[-1] and len(cycle) >= 2
    assert all(b in graph[a] for a, b in itertools.pairwise(cycle))
    assert len(set(cycle[:-1])) == len(cycle) - 1  # a simple cycle
    if start in on_cycle:
        assert cycle[0] == start
        assert len(cycle) - 1 == shortest_cycle_through(graph, start)


def shortest_cycle_through(graph: dict[str, list[str]], start: str) -> int:
    """Brute force: the fewest edges of any simple cycle through ``start``."""
    best = len(graph) + 1
    paths = [[start]]
    while paths:
        path = paths.pop()
        for dep in graph.get(path[-1], ()):
            if dep == start:
                best = min(best, len(path))
            elif dep in graph and dep not in path:
                paths.append([*path, dep])
    return best


def test_deep_chains_do_not_recurse() -> None:
    graph = {str(n): [str(n + 1)] for n in range(100_000)}
    graph["100000"] = ["0"]
    cycle = dependency_cycles.find_cycle(graph, "0")
    assert cycle is not None and len(cycle) == 100_002
