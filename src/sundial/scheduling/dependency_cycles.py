"""Cycles among named objects that wait on each other (JobRuns' ``dependsOn``), and how a
JobRun on one is told (pure: the operator and ``kubectl sundial lint`` word it the same)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["cycle_message", "find_cycle"]


def find_cycle(graph: Mapping[str, Sequence[str]], start: str) -> list[str] | None:
    """A dependency cycle reachable from ``start``, as ``[a, b, a]``, or None.

    ``graph`` maps a node to the nodes it depends on; a node missing from it has no edges. The
    shortest cycle through ``start`` is preferred (``start`` is then first and last); else the
    first cycle found downstream of it. Iterative, so any depth is fine.
    """
    # Breadth-first from start: the shortest path back to start is the cycle to report.
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for dep in graph.get(node, ()):
                if dep == start:
                    back = [node]
                    while back[-1] != start:
                        back.append(parents[back[-1]])
                    return [start, *reversed(back[:-1]), start]
                if dep not in parents and dep in graph:
                    parents[dep] = node
                    following.append(dep)
        frontier = following
    # No cycle through start: one further up (start waits on a node that is on a cycle).
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    stack: list[tuple[str, int]] = [(start, 0)]
    path: list[str] = []
    while stack:
        node, index = stack.pop()
        if index == 0:
            state[node] = 1
            path.append(node)
        deps = [dep for dep in graph.get(node, ()) if dep in graph]
        if index < len(deps):
            stack.append((node, index + 1))
            dep = deps[index]
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if state.get(dep) is None:
                stack.append((dep, 0))
        else:
            state[node] = 2
            path.pop()
    return None


def cycle_message(name: str, cycle: Sequence[str]) -> str:
    """The Stalled message of JobRun ``name``, whose ``dependsOn`` reaches ``cycle`` (as
    ``find_cycle`` gives it); ``kubectl sundial lint`` words it the same."""
    shown = " -> ".join(cycle)
    if name in cycle:
        return f"spec.dependsOn: dependsOn forms a cycle: {shown}; remove one edge"
    return (
        f"spec.dependsOn: an upstream JobRun is on a dependsOn cycle: {shown}; it can"
        " never run: remove one edge of the cycle"
    )
