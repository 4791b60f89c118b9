"""Installation-wide placement of job Pods (``--job-pod-node-selector``, ``--job-pod-toleration``,
``--job-pod-affinity``): merged under the template's own, parsed strictly, and on the command
line of both launchers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from sundial import cli
from sundial.pods import manifests
from sundial.pods import placement as placements

REAL = {"key": "sundial.dev/real-node", "operator": "Exists", "effect": "NoSchedule"}
POOL = placements.Placement(
    node_selector={"pool": "batch", "zone": "a"},
    tolerations=(REAL,),
    affinity={"nodeAffinity": {"preferred": "installation"}, "podAntiAffinity": {"x": 1}},
)


def launch(template: dict[str, Any]) -> manifests.LaunchSpec:
    return manifests.LaunchSpec(
        run_id=7,
        attempt=1,
        job_id="4f1c2b7e-0000-4000-8000-000000000001",
        job_namespace="team-a",
        job_name="report",
        handler="reports.daily",
        template=template,
        args={},
        idempotency_key="run:7",
        fire_time=None,
        timeout_seconds=60,
    )


def pod_spec(template: dict[str, Any], placement: placements.Placement) -> dict[str, Any]:
    settings = manifests.ManifestSettings(runner_image="runner:1", placement=placement)
    spec: dict[str, Any] = manifests.pod_manifest(launch(template), settings)["spec"]
    return spec


def test_a_handler_pod_with_no_template_gets_the_installation_placement() -> None:
    spec = pod_spec({}, POOL)

    assert spec["containers"][0]["command"] == ["sundial", "exec", "reports.daily"]
    assert spec["nodeSelector"] == {"pool": "batch", "zone": "a"}
    assert spec["tolerations"] == [REAL]
    assert spec["affinity"] == {"nodeAffinity": {"preferred": "installation"},
                                "podAntiAffinity": {"x": 1}}  # fmt: skip


def test_the_template_wins_key_by_key_and_keeps_its_own_tolerations_first() -> None:
    own = {"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}
    template = {
        "spec": {
            "containers": [{"name": "main", "image": "busybox"}],
            "nodeSelector": {"zone": "b", "disk": "ssd"},
            "tolerations": [own, REAL],
            "affinity": {"nodeAffinity": {"required": "template"}},
        }
    }

    spec = pod_spec(template, POOL)

    assert spec["nodeSelector"] == {"pool": "batch", "zone": "b", "disk": "ssd"}
    assert spec["tolerations"] == [own, REAL]  # the installation's one is there once
    assert spec["affinity"] == {"nodeAffinity": {"required": "template"},
                                "podAntiAffinity": {"x": 1}}  # fmt: skip


def test_no_placement_changes_nothing_and_the_settings_are_not_shared() -> None:
    spec = pod_spec({}, placements.Placement())
    assert not {"nodeSelector", "tolerations", "affinity"} & set(spec)

    first = pod_spec({}, POOL)
    first["tolerations"][0]["key"] = "changed"
    first["affinity"]["podAntiAffinity"]["x"] = 2
    assert pod_spec({}, POOL)["tolerations"] == [REAL]
    assert POOL.affinity["podAntiAffinity"] == {"x": 1}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sundial.dev/real-node:NoSchedule", REAL),
        ("dedicated=batch:NoExecute",
         {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoExecute"}),
        ("dedicated", {"key": "dedicated", "operator": "Exists"}),
        (json.dumps(REAL), REAL),
        ('{"operator": "Exists"}', {"operator": "Exists"}),
        ('{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}',
         {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}),
    ],
)  # fmt: skip
def test_tolerations_parse_from_kubectl_syntax_or_json(text: str, expected: Any) -> None:
    assert placements.parse_toleration(text) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("k:NoRun", "effect must be one of NoSchedule, PreferNoSchedule, NoExecute"),
        ('{"key": "k", "opertor": "Exists"}', "unknown field(s) opertor"),
        ('{"key": "k", "operator": "In"}', "operator must be Exists or Equal"),
        ('{"key": "k", "operator": "Exists", "value": "v"}', "operator Exists takes no value"),
        ('{"key": "k", "tolerationSeconds": 5, "effect": "NoSchedule"}', "only to effect NoExec"),
        ('{"operator": "Equal", "value": "v"}', "empty key tolerates every taint only with Exists"),
        ("[1]", "not a taint key"),
        ("{not json", "not JSON"),
        ("bad key!:NoSchedule", "not a taint key"),
    ],
)  # fmt: skip
def test_a_bad_toleration_is_refused_saying_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(placements.PlacementError, match=None) as raised:
        placements.parse_toleration(text)
    assert says in str(raised.value)
    assert "--job-pod-toleration" in str(raised.value)


@pytest.mark.parametrize(
    ("values", "says"),
    [
        (["pool"], "write it as KEY=VALUE"),
        (["-pool=batch"], "is not a label key"),
        (["pool=bad value"], "is not a label value"),
        (["pool=a", "pool=b"], "names 'pool' twice"),
    ],
)
def test_a_bad_node_selector_is_refused_saying_what_is_wrong(values: list[str], says: str) -> None:
    with pytest.raises(placements.PlacementError) as raised:
        placements.parse_node_selector(values)
    assert says in str(raised.value)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[]", "must be a JSON object"),
        ('{"nodeAfinity": {}}', "unknown kind(s) nodeAfinity"),
        ('{"nodeAffinity": []}', "nodeAffinity must be an object"),
        ("{", "not JSON"),
    ],
)
def test_a_bad_affinity_is_refused_saying_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(placements.PlacementError) as raised:
        placements.parse_affinity(text)
    assert says in str(raised.value)


COMMANDS = {
    "operator": ["operator", "--dsn", "postgresql://unused/x", "--liveness-port", "0"],
    "pod-launcher": ["pod-launcher", "--dsn", "postgresql://unused/x"],
}


class _Built(Exception):
    """Raised by the recording ManifestSettings: the command got as far as its settings."""


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[manifests.ManifestSettings]:
    seen: list[manifests.ManifestSettings] = []
    real = manifests.ManifestSettings

    def record(**fields: Any) -> manifests.ManifestSettings:
        seen.append(real(**fields))
        raise _Built

    monkeypatch.setattr(manifests, "ManifestSettings", record)
    monkeypatch.setattr("kubernetes.config.new_client_from_config", lambda **_: _FakeClient())
    return seen


class _FakeClient:
    def close(self) -> None:
        pass


@pytest.mark.parametrize("command", COMMANDS)
def test_both_launchers_take_the_placement_flags(
    command: str, built: list[manifests.ManifestSettings]
) -> None:
    arguments = [
        *COMMANDS[command],
        "--job-pod-node-selector", "sundial.dev/node-kind=real",
        "--job-pod-toleration", "sundial.dev/real-node:NoSchedule",
        "--job-pod-affinity", '{"podAntiAffinity": {}}',
    ]  # fmt: skip
    result = CliRunner().invoke(cli.main, arguments)

    assert isinstance(result.exception, _Built), result.output
    [settings] = built
    assert settings.placement == placements.Placement(
        node_selector={"sundial.dev/node-kind": "real"},
        tolerations=(REAL,),
        affinity={"podAntiAffinity": {}},
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_placement_flag_is_a_usage_error_before_anything_starts(
    command: str, built: list[manifests.ManifestSettings]
) -> None:
    result = CliRunner().invoke(cli.main, [*COMMANDS[command], "--job-pod-toleration", "k:Never"])

    assert result.exit_code == 2, result.output
    assert "--job-pod-toleration 'k:Never': effect must be one of" in result.output
    assert built == []
