"""Ordering a submitted DAG, and refusing cycles and dangling edges before anything is stored."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sundial.store import dependencies, errors


def test_diamond_is_ordered_parents_first() -> None:
    order = dependencies.topological_order({"d": ["b", "c"], "b": ["a"], "c": ["a"], "a": []})
    assert order.index("a") < order.index("b") < order.index("d")
    assert order.index("c") < order.index("d")


def test_a_cycle_is_named_in_the_error() -> None:
    with pytest.raises(errors.CyclicDependencyError, match="a -> b -> c -> a"):
        dependencies.topological_order({"a": ["b"], "b": ["c"], "c": ["a"]})


def test_a_self_edge_is_a_cycle() -> None:
    with pytest.raises(errors.CyclicDependencyError):
        dependencies.topological_order({"a": ["a"]})


def test_an_edge_to_an_undefined_node_is_refused() -> None:
    with pytest.raises(errors.DependencyError, match="does not define"):
        dependencies.topological_order({"a": ["ghost"]})


@given(st.integers(min_value=1, max_value=30).flatmap(
    lambda n: st.lists(
        st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60
    ).map(lambda edges: (n, edges))
))  # fmt: skip
def test_acyclic_graphs_are_ordered_and_cyclic_ones_refused(
    graph: tuple[int, list[tuple[int, int]]],
) -> None:
    n, edges = graph
    # Edges from a higher to a lower number can never form a cycle.
    forward = {f"n{i}": sorted({f"n{b}" for a, b in edges if a == i and b < i}) for i in range(n)}
    order = dependencies.topological_order(forward)
    assert sorted(order) == sorted(forward)
    position = {node: index for index, node in enumerate(order)}
    for node, deps in forward.items():
        assert all(position[dep] < position[node] for dep in deps)
    if n >= 2:
        cyclic = dict(forward)
        cyclic["n0"] = [*cyclic["n0"], f"n{n - 1}"]
        cyclic[f"n{n - 1}"] = [*cyclic[f"n{n - 1}"], "n0"]
        with pytest.raises(errors.CyclicDependencyError):
            dependencies.topological_order(cyclic)
