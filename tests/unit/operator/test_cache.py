"""The watch-fed cache ends where the apiserver is, whatever the order of events and LISTs.

An oracle: a model apiserver (one revision counter; create, update, delete) whose events reach
the cache late, in order, and whose LIST answers are applied late too (each after the events
that were delivered before it, in the order they were taken). Once every event is delivered,
the cache must hold exactly the objects the apiserver holds, each at its last version.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.operator import cache

NAMES = ["a", "b", "c"]
steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.sampled_from(NAMES)),
        st.tuples(st.just("delete"), st.sampled_from(NAMES)),
        st.tuples(st.just("list"), st.integers(min_value=0, max_value=5)),
        st.tuples(st.just("deliver"), st.integers(min_value=0, max_value=5)),
    ),
    max_size=60,
)


def _body(name: str, uid: str, version: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid,
            "resourceVersion": str(version),
            "managedFields": [{"manager": "kubectl"}],
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{}",
                "sundial.dev/run-now": "1",
            },
        },
        "spec": {"version": version},
    }


@settings(max_examples=400, deadline=None)
@given(steps)
def test_the_cache_ends_at_the_apiserver_state(plan: list[tuple[str, Any]]) -> None:
    objects = cache.ObjectCache()
    truth: dict[str, dict[str, Any]] = {}
    revision = 0
    undelivered: list[tuple[str, dict[str, Any]]] = []
    lists: list[tuple[int, list[dict[str, Any]], str]] = []  # (events before it, items, rv)
    delivered = 0

    def deliver(count: int) -> None:
        nonlocal delivered
        for _ in range(count):
            if delivered == len(undelivered):
                return
            while lists and lists[0][0] <= delivered:
                _, items, version = lists.pop(0)
                objects.replace(items, version)
            kind, body = undelivered[delivered]
            objects.observe(kind, body)
            delivered += 1

    for step, argument in plan:
        if step == "write":
            revision += 1
            old = truth.get(argument)
            uid = old["metadata"]["uid"] if old else f"{argument}-{revision}"
            truth[argument] = _body(argument, uid, revision)
            undelivered.append(("ADDED" if old is None else "MODIFIED", truth[argument]))
        elif step == "delete" and argument in truth:
            revision += 1
            gone = truth.pop(argument)
            undelivered.append(("DELETED", _body(argument, gone["metadata"]["uid"], revision)))
        elif step == "list":
            # Answered now, applied once `argument` more events were delivered: events sent
            # after the answer may reach the cache before it, as a watch's do.
            lists.append((delivered + argument, list(truth.values()), str(revision)))
        elif step == "deliver":
            deliver(argument)
    deliver(len(undelivered))
    for _, items, version in lists:
        objects.replace(items, version)

    held = {body["metadata"]["name"]: body for body in objects.bodies()}
    assert {name: body["metadata"]["resourceVersion"] for name, body in held.items()} == {
        name: body["metadata"]["resourceVersion"] for name, body in truth.items()
    }
    for body in held.values():
        assert "managedFields" not in body["metadata"]
        assert body["metadata"]["annotations"] == {"sundial.dev/run-now": "1"}


def test_it_lists_first_and_then_only_when_the_resync_is_due() -> None:
    objects = cache.ObjectCache(resync_seconds=3600)
    assert objects.needs_list()
    objects.replace([], "1")
    assert not objects.needs_list()
    assert cache.ObjectCache(resync_seconds=0).needs_list()
