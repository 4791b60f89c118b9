"""The Argo CD health checks and actions of charts/sundial/argocd, run as Argo CD runs them.

Every case of each kind's ``health_test.yaml`` and ``actions/action_test.yaml`` (Argo CD's own
test format) runs under the libraries Argo CD loads for a customization without
``useOpenLibs`` (``argocd_lua.LuaSandbox``), so a script that uses ``string.*`` fails here.
"""

from __future__ import annotations

import copy
import pathlib
from typing import Any

import pytest
import yaml

from support import argocd_lua

CHART = pathlib.Path(__file__).resolve().parents[3] / "charts" / "sundial"
CUSTOMIZATIONS = CHART / "argocd" / "sundial.dev"
KINDS = ("ScheduledJob", "JobRun")


def _load(path: pathlib.Path) -> Any:
    return yaml.safe_load(path.read_text())


def _health_cases() -> list[Any]:
    cases = []
    for kind in KINDS:
        for case in _load(CUSTOMIZATIONS / kind / "health_test.yaml")["tests"]:
            cases.append(pytest.param(kind, case, id=f"{kind}/{case['inputPath']}"))
    return cases


def _action_file(kind: str) -> dict[str, Any]:
    loaded: dict[str, Any] = _load(CUSTOMIZATIONS / kind / "actions" / "action_test.yaml")
    return loaded


def _action_cases(section: str) -> list[Any]:
    cases = []
    for kind in KINDS:
        for case in _action_file(kind).get(section, ()):
            label = case.get("action", "discovery")
            cases.append(pytest.param(kind, case, id=f"{kind}/{label}/{case['inputPath']}"))
    return cases


@pytest.fixture
def sandbox() -> argocd_lua.LuaSandbox:
    return argocd_lua.LuaSandbox()


@pytest.mark.parametrize(("kind", "case"), _health_cases())
def test_health_check_matches_its_test_case(
    sandbox: argocd_lua.LuaSandbox, kind: str, case: dict[str, Any]
) -> None:
    script = CUSTOMIZATIONS / kind / "health.lua"
    obj = _load(CUSTOMIZATIONS / kind / case["inputPath"])
    result = sandbox.run(script.read_text(), f"{kind}/health.lua", obj)
    assert result == case["healthStatus"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_testdata_object_has_a_health_case(kind: str) -> None:
    tested = {
        case["inputPath"] for case in _load(CUSTOMIZATIONS / kind / "health_test.yaml")["tests"]
    }
    present = {f"testdata/{p.name}" for p in (CUSTOMIZATIONS / kind / "testdata").glob("*.yaml")}
    assert tested == present


@pytest.mark.parametrize("kind", KINDS)
def test_health_is_never_missing_and_always_says_why(
    sandbox: argocd_lua.LuaSandbox, kind: str
) -> None:
    script = (CUSTOMIZATIONS / kind / "health.lua").read_text()
    for path in sorted((CUSTOMIZATIONS / kind / "testdata").glob("*.yaml")):
        result = sandbox.run(script, path.name, _load(path))
        assert result["status"] in {"Healthy", "Progressing", "Degraded", "Suspended"}, path
        assert result["message"], path


@pytest.mark.parametrize(("kind", "case"), _action_cases("discoveryTests"))
def test_action_discovery_matches_its_test_case(
    sandbox: argocd_lua.LuaSandbox, kind: str, case: dict[str, Any]
) -> None:
    script = CUSTOMIZATIONS / kind / "actions" / "discovery.lua"
    obj = _load(CUSTOMIZATIONS / kind / "actions" / case["inputPath"])
    actions = sandbox.run(script.read_text(), f"{kind}/discovery.lua", obj)
    found = sorted(
        (
            {"name": name, "disabled": bool(action.get("disabled", False))}
            for name, action in actions.items()
        ),
        key=lambda action: action["name"],
    )
    assert found == case["result"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_discovered_action_has_a_script_and_a_test(kind: str) -> None:
    folder = CUSTOMIZATIONS / kind / "actions"
    scripts = {p.parent.name for p in folder.glob("*/action.lua")}
    tested = {case["action"] for case in _action_file(kind)["actionTests"]}
    discovered = {
        action["name"] for case in _action_file(kind)["discoveryTests"] for action in case["result"]
    }
    assert scripts == tested == discovered


@pytest.mark.parametrize(("kind", "case"), _action_cases("actionTests"))
def test_action_produces_its_expected_output(
    sandbox: argocd_lua.LuaSandbox, kind: str, case: dict[str, Any]
) -> None:
    folder = CUSTOMIZATIONS / kind / "actions"
    script = folder / case["action"] / "action.lua"
    obj = _load(folder / case["inputPath"])
    expected = _load(folder / case["expectedOutputPath"])
    result = sandbox.run(script.read_text(), f"{kind}/{case['action']}", copy.deepcopy(obj))
    if isinstance(result, list):
        # A list of impacted resources (Argo CD 2.8+): here, one object to create. As in Argo
        # CD's own tests, the created object's time-derived name is compared by its prefix.
        [impacted] = result
        assert impacted["operation"] == "create"
        result = impacted["resource"]
        name = result["metadata"]["name"]
        prefix = f"{obj['metadata']['name']}-manual-"
        assert name.startswith(prefix) and name[len(prefix) :].isdigit(), name
        result["metadata"]["name"] = expected["metadata"]["name"]
    assert result == expected


@pytest.mark.parametrize(
    "code",
    [
        'return string.format("%s", obj.kind)',
        "return obj.kind:lower()",
        'return string.find(obj.kind, "Job")',
        'local os = require("os"); return os.getenv("HOME")',
        'return io.open("/etc/hostname")',
    ],
)
def test_the_sandbox_refuses_what_argo_cd_does_not_load(
    sandbox: argocd_lua.LuaSandbox, code: str
) -> None:
    with pytest.raises(argocd_lua.LuaScriptError):
        sandbox.run(code, "probe", {"kind": "JobRun"})


def test_the_sandbox_has_what_argo_cd_loads(sandbox: argocd_lua.LuaSandbox) -> None:
    code = (
        'local os = require("os")\n'
        'return {table.concat({"a", "b"}, "-"), os.date("!%Y") ~= nil, tostring(#obj.items)}'
    )
    assert sandbox.run(code, "probe", {"items": [1, 2]}) == ["a-b", True, "2"]
