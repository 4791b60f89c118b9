"""dependsOn cycles among JobRuns: found by every member, reported, and breakable by an edit.

Random dependsOn graphs over a handful of JobRuns are reconciled in random order, several
passes (as the status mirror does), against a real PostgreSQL. The oracle is plain graph
reachability: a JobRun that can reach a cycle never runs, so it must end Stalled
(``DependencyCycle``) with a Warning Event - a member with its own cycle in the message - and
every other JobRun must be submitted. Then one edge of each cycle is removed by editing
``dependsOn`` (allowed until the run is submitted) and everything must be submitted.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile_manifests import condition, metadata, operator_context, reconciled

from sundial.api import conditions
from sundial.operator import job_runs, kube
from support.recording_api import RecordingApi

NAMESPACE = "default"
NAMES = [f"run-{letter}" for letter in "abcde"]


def job_run(name: str, depends_on: list[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"job": {"handler": {"name": "examples.hello"}}}
    if depends_on:
        spec["dependsOn"] = depends_on
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "JobRun",
        "metadata": metadata(name, str(uuid.uuid4()), 1),
        "spec": spec,
    }


def reaches_a_cycle(graph: dict[str, list[str]], start: str) -> bool:
    """Brute force: some node reachable from ``start`` reaches itself again."""

    def reachable(node: str) -> set[str]:
        seen: set[str] = set()
        todo = list(graph[node])
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(graph[current])
        return seen

    return any(node in reachable(node) for node in reachable(start) | {start})


def on_a_cycle(graph: dict[str, list[str]], node: str) -> bool:
    seen: set[str] = set()
    todo = list(graph[node])
    while todo:
        current = todo.pop()
        if current == node:
            return True
        if current not in seen:
            seen.add(current)
            todo.extend(graph[current])
    return False


async def passes(ctx: Any, api: RecordingApi, order: list[str], count: int = 3) -> None:
    for _ in range(count):
        for name in order:
            await reconciled(job_runs.reconcile(ctx, api.body(kube.JOB_RUNS, NAMESPACE, name)))
    await ctx.recorder.flush()


def break_cycles(graph: dict[str, list[str]]) -> dict[str, list[str]]:
    """``graph`` with edges removed until no node is on a cycle (each node's edges kept only
    towards nodes earlier in NAMES): a DAG, as a user would leave it."""
    return {
        node: [dep for dep in deps if NAMES.index(dep) < NAMES.index(node)]
        for node, deps in graph.items()
    }


async def cycles_scenario(dsn: str, graph: dict[str, list[str]], order: list[str]) -> None:
    async with operator_context(dsn) as (ctx, api):
        for name in graph:
            api.put(kube.JOB_RUNS, job_run(name, graph[name]))
        await passes(ctx, api, order)
        for name in graph:
            body = api.body(kube.JOB_RUNS, NAMESPACE, name)
            stalled = condition(body, "Stalled")
            if reaches_a_cycle(graph, name):
                assert "runId" not in (body.get("status") or {}), name
                assert stalled is not None and stalled["status"] == "True", (name, body)
                assert stalled["reason"] == conditions.ConditionReason.DEPENDENCY_CYCLE
                message = stalled["message"]
                if on_a_cycle(graph, name):
                    assert message.startswith("spec.dependsOn: dependsOn forms a cycle: ")
                    assert message.endswith("; remove one edge")
                    cycle = message.split("cycle: ")[1].split(";")[0].split(" -> ")
                    assert cycle[0] == cycle[-1] == name
                    assert all(b in graph[a] for a, b in itertools.pairwise(cycle))
                else:
                    assert "an upstream JobRun is on a dependsOn cycle" in message
                warnings = [e for e in api.events if e.name == name and e.event_type == "Warning"]
                assert [(w.reason, w.message) for w in warnings] == [("DependencyCycle", message)]
            else:
                assert body["status"]["runId"], (name, body)
                assert stalled is None or stalled["status"] == "False"

        # Break the cycles by editing dependsOn; nothing waits any more.
        fixed = break_cycles(graph)
        for name, deps in fixed.items():
            body = api.body(kube.JOB_RUNS, NAMESPACE, name)
            if "runId" not in body.get("status", {}):
                body["spec"]["dependsOn"] = deps
                body["metadata"]["generation"] = 2
        await passes(ctx, api, order)
        for name in graph:
            body = api.body(kube.JOB_RUNS, NAMESPACE, name)
            assert body["status"]["runId"], (name, body)
            assert condition(body, "Stalled")["status"] == "False"  # type: ignore[index]


GRAPHS = (
    st.lists(st.lists(st.sampled_from(NAMES), max_size=3, unique=True), min_size=2, max_size=5)
    .map(lambda rows: {NAMES[i]: deps for i, deps in enumerate(rows)})
    .map(
        # Edges to JobRuns that are not created would wait forever by design: keep the graph closed.
        lambda graph: {node: [d for d in deps if d in graph] for node, deps in graph.items()}
    )
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=GRAPHS, data=st.data())
def test_every_job_run_behind_a_cycle_is_stalled_and_the_rest_run(
    store_dsn: str, graph: dict[str, list[str]], data: Any
) -> None:
    order = data.draw(st.permutations(sorted(graph)))
    asyncio.run(cycles_scenario(store_dsn, graph, order))


def test_a_two_run_cycle_names_both_and_is_broken_by_an_edit(store_dsn: str) -> None:
    asyncio.run(
        cycles_scenario(store_dsn, {"run-a": ["run-b"], "run-b": ["run-a"]}, ["run-a", "run-b"])
    )


def test_self_dependency_is_a_cycle(store_dsn: str) -> None:
    asyncio.run(cycles_scenario(store_dsn, {"run-a": ["run-a"]}, ["run-a"]))
