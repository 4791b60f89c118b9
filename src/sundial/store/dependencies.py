"""DAG edges between runs: what finishing, failing or cancelling an upstream run does downstream.

Guarantee: a child's ``pending_dependencies`` counter is decremented under the child's row
lock in the SAME transaction that completes the parent. Two parents completing at once both
decrement (the second waits for the first's lock and sees its result), so the child is
released exactly once and never stranded; a crash between the two writes is impossible
because there is no "between". An upstream run that ends any other way fails (or, if it was
cancelled, cancels) every blocked run downstream of it, with the cause in ``last_error``.

Submissions can only depend on runs that already exist, and a run's edges are written once,
with the run, so a cycle cannot be stored - not even by two submissions racing, since neither
can name the other's run before it exists. :func:`topological_order` rejects cycles in a
graph submitted as a whole before anything is written; ``scheduling.dependency_cycles``
finds the cycles of named objects that never get that far (JobRuns whose ``dependsOn`` wait
on each other).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sundial.store import errors, queries
from sundial.store.pool import Connection

__all__ = ["fail_dependents", "release_dependents", "topological_order"]


async def release_dependents(conn: Connection, completed_ids: Sequence[int]) -> dict[int, str]:
    """Count completed upstream runs off their children; return children whose state changed."""
    if not completed_ids:
        return {}
    cursor = await conn.execute(queries.get("release_dependents"), {"ids": list(completed_ids)})
    return {row[0]: row[1] for row in await cursor.fetchall()}


async def fail_dependents(conn: Connection, ended: Mapping[int, str]) -> dict[int, str]:
    """End every blocked run downstream of ``ended`` (run id -> the state it ended in)."""
    if not ended:
        return {}
    cursor = await conn.execute(
        queries.get("fail_dependents"),
        {"ids": list(ended), "states": list(ended.values())},
    )
    return {row[0]: row[1] for row in await cursor.fetchall()}


def topological_order(graph: Mapping[str, Sequence[str]]) -> list[str]:
    """Order node names so each comes after what it depends on; raise on cycles or unknowns.

    ``graph`` maps a node to the nodes it depends on. Deterministic: ties keep insertion order.
    """
    missing = sorted({d for deps in graph.values() for d in deps if d not in graph})
    if missing:
        raise errors.DependencyError(
            f"the graph depends on nodes it does not define: {missing}; add them or drop the edges"
        )
    order: list[str] = []
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for start in graph:
        if state.get(start) == 2:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = []
        while stack:
            node, index = stack.pop()
            if index == 0:
                state[node] = 1
                path.append(node)
            deps = list(graph[node])
            if index < len(deps):
                stack.append((node, index + 1))
                dep = deps[index]
                if state.get(dep) == 1:
                    cycle = [*path[path.index(dep) :], dep]
                    raise errors.CyclicDependencyError(cycle)
                if state.get(dep) != 2:
                    stack.append((dep, 0))
            else:
                state[node] = 2
                path.pop()
                order.append(node)
    return order
