"""The chart renders, lints and is refused bad values with a message naming the key.

These need only the helm binary built with the control plane; ``test_chart_dry_run.py``
sends the rendered objects to the apiserver.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from sundial.pods import manifests
from sundial.store import server
from support.chart import CHART, EVERYTHING, RENDER_FOR_THE_TEST_CLUSTER


def _kinds(objects: list[dict[str, Any]]) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for obj in objects:
        kinds[obj["kind"]] = kinds.get(obj["kind"], 0) + 1
    return kinds


def _one(objects: list[dict[str, Any]], kind: str, name_part: str = "") -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind and name_part in o["metadata"]["name"]]
    return found


def _pod_specs(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        o["spec"]["template"]["spec"] if o["kind"] != "Pod" else o["spec"]
        for o in objects
        if o["kind"] in {"Deployment", "StatefulSet", "Job", "Pod"}
    ]


def test_the_chart_lints_strictly(helm: Callable[..., Any], tmp_path: Any) -> None:
    helm("lint", "--strict", str(CHART))
    values = tmp_path / "everything.yaml"
    values.write_text(yaml.safe_dump(EVERYTHING))
    helm("lint", "--strict", str(CHART), "--values", str(values))


def test_the_chart_names_the_kubernetes_it_needs_and_where_it_comes_from(
    helm: Callable[..., Any],
) -> None:
    """Chart.yaml's kubeVersion is the README's minimum, an older cluster is refused before
    anything is made, and its sources and icon point at the repository its images come from."""
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    readme = (CHART.parents[1] / "README.md").read_text()
    [minimum] = re.findall(r"Kubernetes (\d+\.\d+) or newer", readme)
    assert chart["kubeVersion"] == f">={minimum}.0-0"
    major, minor = (int(part) for part in minimum.split("."))
    older = helm(
        "template", "release", str(CHART), "--kube-version", f"{major}.{minor - 1}.0", check=False
    )
    assert older.returncode != 0
    assert f"chart requires kubeVersion: >={minimum}.0-0" in older.stderr, older.stderr
    helm("template", "release", str(CHART), "--kube-version", f"{major}.{minor}.0")

    [source] = chart["sources"]
    owner = source.removeprefix("https://github.com/").split("/")[0]
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["imageRegistry"] == f"ghcr.io/{owner}"
    prefix = f"https://raw.githubusercontent.com/{owner}/sundial/main/"
    assert chart["icon"].startswith(prefix)
    assert (CHART.parents[1] / chart["icon"].removeprefix(prefix)).is_file()


def test_default_values_render_the_core_of_an_installation(render: Callable[..., Any]) -> None:
    objects = render()
    assert _kinds(objects) == {
        "CustomResourceDefinition": 2,
        "ServiceAccount": 5,  # operator, history API, runner, migrate hook, job Pods
        # operator, its CRD watch, view and edit aggregates, history, metrics-reader
        "ClusterRole": 6,
        # operator, CRD watch, the history API's and the metrics' auth-delegator
        "ClusterRoleBinding": 4,
        "RoleBinding": 1,  # the history API reads the front proxy's CA in kube-system
        "Deployment": 3,  # operator, history API, runner
        "Job": 1,
        "NetworkPolicy": 3,  # job Pods' egress, the history API's and the runners' ingress
        "Service": 2,  # the operator's health and metrics, the history API's
        "APIService": 1,  # v1alpha1.history.sundial.dev
        "Secret": 2,  # the serving certificates: the history API's, the operator's metrics
        "PodDisruptionBudget": 1,  # the history API's: one replica always answers
        "Pod": 1,  # `helm test`'s check
    }
    operator = _one(objects, "Deployment", "operator")
    assert operator["spec"]["strategy"] == {"type": "Recreate"}
    container = operator["spec"]["template"]["spec"]["containers"][0]
    assert "--all-namespaces" in container["args"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert {"name": "health", "containerPort": 8080, "protocol": "TCP"} in container["ports"]
    [dsn] = [e for e in container["env"] if e["name"] == "SUNDIAL_DSN"]
    assert dsn["valueFrom"]["secretKeyRef"] == {"name": "sundial-postgresql", "key": "dsn"}
    for crd in (o for o in objects if o["kind"] == "CustomResourceDefinition"):
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_the_crd_templates_are_the_repositorys_crds(render: Callable[..., Any]) -> None:
    rendered = {
        o["metadata"]["name"]: o for o in render() if o["kind"] == "CustomResourceDefinition"
    }
    for path in (CHART.parents[1] / "crds").glob("*.yaml"):
        source = yaml.safe_load(path.read_text())
        crd = rendered.pop(source["metadata"]["name"])
        assert crd["spec"] == source["spec"], path.name
    assert rendered == {}


def test_the_migrate_job_is_a_helm_and_argo_cd_hook(render: Callable[..., Any]) -> None:
    objects = render()
    job = _one(objects, "Job")
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert annotations["argocd.argoproj.io/hook"] == "PreSync"
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "migrate",
        "--role-prefix=sundial",
        "--hot-queue=off",
    ]
    kept = render(
        {"postgresql": {"roles": {"loginNamespaces": {"runner-a": ["team-a", "x"], "old": "*"}}}}
    )
    assert _one(kept, "Job")["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "migrate",
        "--role-prefix=sundial",
        "--login-namespaces=old=*",
        "--login-namespaces=runner-a=team-a,x",
        "--hot-queue=off",
    ]
    account = _one(objects, "ServiceAccount", "migrate")
    assert account["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert int(account["metadata"]["annotations"]["helm.sh/hook-weight"]) < int(
        annotations["helm.sh/hook-weight"]
    )
    # Helm never deletes a hook on uninstall: both go once the hooks succeeded.
    for hook in (job, account):
        policy = hook["metadata"]["annotations"]["helm.sh/hook-delete-policy"].split(",")
        assert "hook-succeeded" in policy and "before-hook-creation" in policy
        argo = hook["metadata"]["annotations"]["argocd.argoproj.io/hook-delete-policy"]
        assert "HookSucceeded" in argo.split(",")


def test_the_history_api_is_registered_served_and_read_under_namespace_rbac(
    render: Callable[..., Any],
) -> None:
    objects = render()
    service = _one(objects, "Service", "history-api")
    assert {port["name"]: port["targetPort"] for port in service["spec"]["ports"]} == {
        "history": "history"
    }
    history_api = _one(objects, "Deployment", "history-api")
    assert service["spec"]["selector"] == history_api["spec"]["selector"]["matchLabels"]
    pod = history_api["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["args"][:2] == ["history-api", "--port=8443"]
    assert {"name": "history", "containerPort": 8443, "protocol": "TCP"} in container["ports"]
    assert container["readinessProbe"]["tcpSocket"] == {"port": "history"}
    secret = _one(objects, "Secret", "history-api-tls")
    assert secret["type"] == "kubernetes.io/tls"
    [volume] = [v for v in pod["volumes"] if v["name"] == "history-tls"]
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]
    api_service = _one(objects, "APIService")
    assert api_service["metadata"]["name"] == "v1alpha1.history.sundial.dev"
    assert api_service["spec"]["service"] == {
        "name": service["metadata"]["name"],
        "namespace": service["metadata"]["namespace"],
        "port": 443,
    }
    assert api_service["spec"]["caBundle"] == secret["data"]["ca.crt"]
    assert "insecureSkipTLSVerify" not in api_service["spec"]
    # Reading history is per namespace like reading JobRuns: folded into view.
    history = _one(objects, "ClusterRole", "history")
    assert history["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert history["rules"] == [
        {"apiGroups": ["history.sundial.dev"], "resources": ["runs"], "verbs": ["get", "list"]}
    ]
    # No role of the chart opens a proxy.
    for role in (o for o in objects if o["kind"] in ("ClusterRole", "Role")):
        assert not any(
            resource.endswith("/proxy")
            for rule in role["rules"]
            for resource in rule.get("resources", [])
        ), role["metadata"]["name"]
    # Only its HTTPS port is open to other Pods.
    policy = _one(objects, "NetworkPolicy", "history-api")
    assert policy["spec"]["podSelector"]["matchLabels"] == service["spec"]["selector"]
    assert policy["spec"]["ingress"] == [{"ports": [{"port": "history", "protocol": "TCP"}]}]

    off = render({"historyApi": {"enabled": False}})
    assert not [o for o in off if o["kind"] == "APIService"]
    assert not [o for o in off if "history-api" in o["metadata"]["name"]]
    given = render({"historyApi": {"tls": {"existingSecret": "history-cert", "caBundle": "Q0E="}}})
    assert not [o for o in given if o["metadata"]["name"].endswith("history-api-tls")]
    assert _one(given, "APIService")["spec"]["caBundle"] == "Q0E="


def test_the_history_api_holds_none_of_the_operators_powers(
    render: Callable[..., Any],
) -> None:
    """The network-facing read path runs apart from the operator: its own Pod and
    ServiceAccount, bound only to review tokens and access and to read the front proxy's CA,
    and the reader's database login; the operator serves no history and has no such port."""
    objects = render({"postgresql": {"bundled": {"enabled": True}}})
    history_api = _one(objects, "Deployment", "history-api")["spec"]["template"]["spec"]
    operator = _one(objects, "Deployment", "operator")["spec"]["template"]["spec"]
    account = history_api["serviceAccountName"]
    assert account != operator["serviceAccountName"]
    bindings = [
        o
        for o in objects
        if o["kind"] in ("ClusterRoleBinding", "RoleBinding")
        and any(subject["name"] == account for subject in o["subjects"])
    ]
    assert sorted(b["roleRef"]["name"] for b in bindings) == [
        "extension-apiserver-authentication-reader",
        "system:auth-delegator",
    ]
    assert _dsn_keys(history_api["containers"][0]) == {"SUNDIAL_DSN": "reader-dsn"}
    [container] = operator["containers"]
    assert not [a for a in container["args"] if "history" in a]
    assert [p["name"] for p in container["ports"]] == ["health", "metrics"]  # no history port
    assert "history-tls" not in {v["name"] for v in operator["volumes"]}
    # Its image is the operator's unless named.
    assert history_api["containers"][0]["image"] == container["image"]
    image = {"repository": "registry.example/history", "tag": "1"}
    named = render({"historyApi": {"image": image}})
    spec = _one(named, "Deployment", "history-api")["spec"]["template"]["spec"]
    assert spec["containers"][0]["image"] == "registry.example/history:1"


def test_the_history_api_flags_are_ones_its_command_accepts(
    render: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sundial.cli import daemons

    spec = _one(render(), "Deployment", "history-api")["spec"]["template"]["spec"]
    args = spec["containers"][0]["args"]
    assert args[0] == "history-api"
    # The TLS files exist only in the Pod; the parser is given files that exist here.
    monkeypatch.setenv("SUNDIAL_DSN", "postgresql://unused/sundial")
    flags = [re.sub(r"^--tls-(cert|key)=.*", rf"--tls-\1={__file__}", a) for a in args[1:]]
    params = daemons.history_api.make_context("history-api", flags).params
    assert params["port"] == 8443 and params["tls_cert"] == __file__


def test_the_operator_is_scraped_with_its_labels_honoured(render: Callable[..., Any]) -> None:
    monitors = {o["metadata"]["name"]: o for o in render(EVERYTHING) if o["kind"] == "PodMonitor"}
    assert sorted(monitors) == ["release-sundial", "release-sundial-operator"]
    [endpoint] = monitors["release-sundial-operator"]["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == "metrics" and endpoint["scheme"] == "https"
    assert endpoint["path"] == "/metrics"
    assert endpoint["honorLabels"] is True  # a ScheduledJob's namespace, not the Pod's
    selector = monitors["release-sundial-operator"]["spec"]["selector"]["matchLabels"]
    assert selector["app.kubernetes.io/component"] == "operator"


@pytest.mark.parametrize("values", [{}, EVERYTHING], ids=["default", "everything"])
def test_every_pod_is_restricted_by_default(
    render: Callable[..., Any], values: dict[str, Any]
) -> None:
    for spec in _pod_specs(render(values)):
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in spec["containers"] + spec.get("initContainers", []):
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False
            assert context["readOnlyRootFilesystem"] is True
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert context["runAsNonRoot"] is True
            assert isinstance(context["runAsUser"], int)
            assert "resources" in container


def test_scheduling_values_are_passed_through(render: Callable[..., Any]) -> None:
    objects = render(EVERYTHING)
    operator = _one(objects, "Deployment", "operator")["spec"]["template"]["spec"]
    assert operator["nodeSelector"] == EVERYTHING["operator"]["nodeSelector"]
    assert operator["tolerations"] == EVERYTHING["operator"]["tolerations"]
    assert operator["priorityClassName"] == "system-cluster-critical"
    assert operator["containers"][0]["image"] == "registry.example/sundial/operator:1.2.3"
    runner = _one(objects, "Deployment", "runner")["spec"]["template"]["spec"]
    assert runner["affinity"] == EVERYTHING["runner"]["affinity"]
    [handlers] = [e for e in runner["containers"][0]["env"] if e["name"] == "SUNDIAL_HANDLERS"]
    assert handlers["value"] == "acme.reports acme.cleanup"
    assert runner["containers"][0]["imagePullPolicy"] == "Always"
    assert runner["automountServiceAccountToken"] is False


def test_watch_namespaces_get_roles_and_no_cluster_wide_write(render: Callable[..., Any]) -> None:
    objects = render(EVERYTHING)
    roles = [o for o in objects if o["kind"] == "Role"]
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["team-a", "team-b"]
    operator = _one(objects, "Deployment", "operator")["spec"]["template"]["spec"]
    args = operator["containers"][0]["args"]
    assert "--namespace=team-a" in args and "--namespace=team-b" in args
    assert "--all-namespaces" not in args
    for role in (o for o in objects if o["kind"] == "ClusterRole"):
        name = role["metadata"]["name"]
        verbs = {verb for rule in role["rules"] for verb in rule["verbs"]}
        if name.endswith("-operator-discovery"):
            # get: a namespace's Pod Security label, read before a job Pod is created there.
            assert verbs == {"get", "list", "watch"}
        elif name.endswith("-history"):
            assert verbs == {"get", "list"}  # runs.history.sundial.dev, per namespace
        elif name.endswith("-metrics-reader"):
            assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
        else:
            assert name.endswith(("-view", "-edit")), name
    # Job Pods run in the watched namespaces: their ServiceAccount and NetworkPolicy are there.
    job_accounts = [
        o
        for o in objects
        if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == "sundial-job"
    ]
    assert sorted(a["metadata"]["namespace"] for a in job_accounts) == ["team-a", "team-b"]
    assert all(a["automountServiceAccountToken"] is False for a in job_accounts)


def test_existing_service_accounts_are_used_and_bound_not_made(
    render: Callable[..., Any],
) -> None:
    objects = render(
        {
            "operator": {"serviceAccount": {"create": False, "name": "ops-controller"}},
            "runner": {"serviceAccount": {"create": False, "name": "handlers"}},
            "historyApi": {"serviceAccount": {"name": "history-reader"}},
        }
    )
    made = {o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"}
    assert "ops-controller" not in made and "handlers" not in made
    assert "history-reader" in made  # named, and still made (create defaults to true)
    assert not any(name.endswith(("-operator", "-runner", "-history-api")) for name in made)
    accounts = {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]["serviceAccountName"]
        for o in objects
        if o["kind"] == "Deployment"
    }
    assert sorted(accounts.values()) == ["handlers", "history-reader", "ops-controller"]
    subjects = {
        (binding["metadata"]["name"], subject["name"])
        for binding in objects
        if binding["kind"] in {"ClusterRoleBinding", "RoleBinding"}
        for subject in binding["subjects"]
        if subject["kind"] == "ServiceAccount"
    }
    bound = {account for _, account in subjects}
    # Every binding names the account the Pods run as, none the default name.
    assert bound <= {"ops-controller", "history-reader"} | {
        o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"
    }
    assert {"ops-controller", "history-reader"} <= bound
    assert not any(account.endswith(("-operator", "-history-api")) for account in bound)


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        present = expression["key"] in labels
        if expression["operator"] == "Exists" and not present:
            return False
        if (
            expression["operator"] == "In"
            and labels.get(expression["key"]) not in expression["values"]
        ):
            return False
    return True


def test_the_network_policy_keeps_job_pods_and_only_them_off_postgresql(
    render: Callable[..., Any],
) -> None:
    objects = render()
    policy = _one(objects, "NetworkPolicy", "job-pods")
    spec = manifests.LaunchSpec(
        run_id=41, attempt=2, job_id="5f1c7f0e-6c1d-4a57-9d59-6a0a0c6f3e11",
        job_namespace="sundial", job_name="nightly", handler="reports.nightly", template={},
        args={}, idempotency_key="k", fire_time=None, timeout_seconds=60,
    )  # fmt: skip
    settings = manifests.ManifestSettings(instance="release")  # the chart's --pod-instance
    job_pod = manifests.pod_manifest(spec, settings)
    assert _selects(policy["spec"]["podSelector"], job_pod["metadata"]["labels"])
    for deployment in (o for o in objects if o["kind"] == "Deployment"):
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert not _selects(policy["spec"]["podSelector"], labels)
    [rule] = policy["spec"]["egress"]
    allowed = [
        (port["protocol"], port["port"], port.get("endPort", port["port"]))
        for port in rule["ports"]
    ]
    assert not any(p == "TCP" and low <= 5432 <= high for p, low, high in allowed)
    assert ("TCP", 1, 5431) in allowed and ("TCP", 5433, 65535) in allowed
    assert ("UDP", 1, 65535) in allowed  # DNS
    operator = _one(objects, "Deployment", "operator")["spec"]["template"]["spec"]
    assert "--pod-service-account=sundial-job" in operator["containers"][0]["args"]
    assert "--pod-instance=release" in operator["containers"][0]["args"]


def test_the_bundled_postgresql_migrates_in_init_containers_and_admits_only_sundial(
    render: Callable[..., Any],
) -> None:
    objects = render(EVERYTHING)
    assert "Job" not in _kinds(objects)
    operator = _one(objects, "Deployment", "operator")["spec"]["template"]["spec"]
    assert [c["args"] for c in operator["initContainers"]] == [
        [
            "migrate",
            "--role-prefix=sundial",
            "--login=operator=sundial_operator_login",
            "--login=runner=sundial_runner_login",
            "--login=reader=sundial_reader_login",
            "--hot-queue=on",
        ]
    ]
    runner = _one(objects, "Deployment", "runner")["spec"]["template"]["spec"]
    assert "initContainers" not in runner  # the owner's DSN never reaches a runner
    policy = _one(objects, "NetworkPolicy", "postgresql")
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    secret = _one(objects, "Secret", "postgresql")["stringData"]
    assert secret["dsn"].startswith("postgresql://sundial:")
    for component in ("operator", "runner", "reader"):
        login = f"sundial_{component}_login"
        password = secret[f"{component}-password"]
        assert secret[f"{component}-dsn"].startswith(f"postgresql://{login}:{password}@")
        assert password != secret["password"] and len(password) == 32


def test_one_value_turns_the_hot_queue_on_and_the_bundled_redis_admits_only_sundial(
    render: Callable[..., Any],
) -> None:
    """Off by default (the migrate step keeps the database off, no component gets a Redis URL);
    on, the database is switched on and the runners and the operator read the URL from your
    Secret or the bundled Redis's, which keeps an fsynced append-only file behind a password."""

    def hot_queue_env(objects: list[dict[str, Any]], component: str) -> list[Any]:
        spec = _one(objects, "Deployment", component)["spec"]["template"]["spec"]
        env = spec["containers"][0].get("env", [])
        return [e["valueFrom"]["secretKeyRef"] for e in env if e["name"] == "SUNDIAL_HOT_QUEUE_URL"]

    default = render()
    migrate = _one(default, "Job", "migrate")["spec"]["template"]["spec"]["containers"][0]
    assert migrate["args"][-1] == "--hot-queue=off"
    assert hot_queue_env(default, "runner") == hot_queue_env(default, "operator") == []
    assert not [o for o in default if "redis" in o["metadata"]["name"]]

    own = render({"hotQueue": {"enabled": True, "existingSecret": {"name": "ha", "key": "u"}}})
    migrate = _one(own, "Job", "migrate")["spec"]["template"]["spec"]["containers"][0]
    assert migrate["args"][-1] == "--hot-queue=on"
    for component in ("runner", "operator", "history-api"):
        assert hot_queue_env(own, component) == [{"name": "ha", "key": "u"}]
    assert not [o for o in own if "redis" in o["metadata"]["name"]]

    bundled = render(EVERYTHING)
    for component in ("runner", "operator", "history-api"):
        assert hot_queue_env(bundled, component) == [
            {"name": "release-sundial-redis", "key": "url"}
        ]
    secret = _one(bundled, "Secret", "redis")["stringData"]
    assert (
        secret["url"] == f"redis://:{secret['password']}@release-sundial-redis.sundial.svc:6379/0"
    )
    [redis] = _one(bundled, "StatefulSet", "redis")["spec"]["template"]["spec"]["containers"]
    assert "$(REDIS_PASSWORD)" in redis["args"] and secret["password"] not in redis["args"]
    assert redis["args"][redis["args"].index("--appendfsync") + 1] == "always"
    policy = _one(bundled, "NetworkPolicy", "redis")["spec"]
    [rule] = policy["ingress"]
    [peer] = rule["from"]
    assert peer["podSelector"]["matchExpressions"][0]["values"] == [
        "operator",
        "runner",
        "history-api",
    ]


def test_the_bundled_redis_can_listen_on_the_node_s_loopback(render: Callable[..., Any]) -> None:
    """As the bundled PostgreSQL can (a cluster with no Pod network, the local real node): on
    the node's network, bound to one address the URL names, probed where it listens (a TCP
    probe goes to the Pod's address), the probe's password from the Secret, not its command."""
    on_node = {"enabled": True, "hostNetwork": True, "host": "127.0.0.1", "password": "pw-7f3a"}
    objects = render(
        {
            "hotQueue": {
                "enabled": True,
                "port": 7001,
                "bundled": {**on_node, "listenAddress": "127.0.0.1"},
            }
        }
    )
    secret = _one(objects, "Secret", "redis")["stringData"]
    assert secret["url"] == f"redis://:{secret['password']}@127.0.0.1:7001/0"
    spec = _one(objects, "StatefulSet", "redis")["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    [redis] = spec["containers"]
    assert redis["args"][redis["args"].index("--bind") + 1] == "127.0.0.1"
    probe = redis["readinessProbe"]["exec"]["command"]
    assert probe == ["redis-cli", "-h", "127.0.0.1", "-p", "7001", "ping"]
    assert {"name": "REDISCLI_AUTH", "valueFrom": {"secretKeyRef": {
        "name": "release-sundial-redis", "key": "password"}}} in redis["env"]  # fmt: skip
    assert secret["password"] not in json.dumps(spec)
    everywhere = render({"hotQueue": {"enabled": True, "bundled": {"enabled": True}}})
    [redis] = _one(everywhere, "StatefulSet", "redis")["spec"]["template"]["spec"]["containers"]
    assert "--bind" not in redis["args"]  # every address of the Pod


def test_a_bundled_redis_without_the_hot_queue_is_refused(
    helm: Callable[..., Any], tmp_path: Any
) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump({"hotQueue": {"bundled": {"enabled": True}}}))
    result = helm(
        "template", "release", str(CHART), "--values", str(path),
        *RENDER_FOR_THE_TEST_CLUSTER, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "set hotQueue.enabled=true too" in result.stderr, result.stderr


def _dsn_keys(container: dict[str, Any]) -> dict[str, str]:
    return {
        e["name"]: e["valueFrom"]["secretKeyRef"]["key"]
        for e in container.get("env", [])
        if "secretKeyRef" in e.get("valueFrom", {})
    }


def test_each_component_connects_as_its_own_database_login(render: Callable[..., Any]) -> None:
    """Bundled: the operator's, runner's and history reader's own logins; the owner's DSN only
    where `sundial migrate` runs. Your own PostgreSQL: the keys you name, else the owner's."""
    objects = render(EVERYTHING)
    operator = _one(objects, "Deployment", "operator")["spec"]["template"]["spec"]
    hot_queue = {"SUNDIAL_HOT_QUEUE_URL": "url"}  # the bundled Redis's, not a database login
    assert _dsn_keys(operator["containers"][0]) == {"SUNDIAL_DSN": "operator-dsn", **hot_queue}
    history_api = _one(objects, "Deployment", "history-api")["spec"]["template"]["spec"]
    assert _dsn_keys(history_api["containers"][0]) == {"SUNDIAL_DSN": "reader-dsn", **hot_queue}
    assert _dsn_keys(operator["initContainers"][0]) == {
        "SUNDIAL_DSN": "dsn",
        "SUNDIAL_LOGIN_PASSWORD_OPERATOR": "operator-password",
        "SUNDIAL_LOGIN_PASSWORD_RUNNER": "runner-password",
        "SUNDIAL_LOGIN_PASSWORD_READER": "reader-password",
    }
    runner = _one(objects, "Deployment", "runner")["spec"]["template"]["spec"]
    assert _dsn_keys(runner["containers"][0]) == {"SUNDIAL_DSN": "runner-dsn", **hot_queue}

    own = render(
        {"postgresql": {"existingSecret": {"name": "pg", "key": "dsn", "runnerKey": "runner"}}}
    )
    runner = _one(own, "Deployment", "runner")["spec"]["template"]["spec"]
    assert _dsn_keys(runner["containers"][0]) == {"SUNDIAL_DSN": "runner"}
    operator = _one(own, "Deployment", "operator")["spec"]["template"]["spec"]
    assert _dsn_keys(operator["containers"][0]) == {"SUNDIAL_DSN": "dsn"}


def _images(objects: list[dict[str, Any]]) -> dict[str, str]:
    """The image of every container and init container, by its Pod's owner and name."""
    images = {}
    for obj in objects:
        if obj["kind"] not in {"Deployment", "StatefulSet", "Job"}:
            continue
        spec = obj["spec"]["template"]["spec"]
        for container in spec.get("initContainers", []) + spec["containers"]:
            images[f"{obj['metadata']['name']}/{container['name']}"] = container["image"]
    return images


def test_images_come_from_the_release_registry_unless_named_and_pin_a_digest(
    render: Callable[..., Any],
) -> None:
    chart_app_version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    images = _images(render())
    expected = {
        "ghcr.io/sundial-scheduler/operator:" + chart_app_version,
        "ghcr.io/sundial-scheduler/runner:" + chart_app_version,
    }
    assert set(images.values()) == expected, images
    digest = "sha256:" + "5" * 64
    mirrored = render(
        {
            "imageRegistry": "mirror.example:5000/platform/sundial/",
            "operator": {"image": {"digest": digest}},
            "runner": {"image": {"repository": "acme/handlers", "tag": "7"}},
        }
    )
    operator = f"mirror.example:5000/platform/sundial/operator:{chart_app_version}@{digest}"
    images = _images(mirrored)
    assert set(images.values()) == {operator, "acme/handlers:7"}, images
    # The history API and the migrate hook run the operator's image, pinned the same way.
    assert [name for name, image in images.items() if image == operator]
    [deployment] = [
        o for o in mirrored if o["kind"] == "Deployment" and "operator" in o["metadata"]["name"]
    ]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--runner-image=acme/handlers:7" in args


PLATFORM = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
        }
    ],
    "extraVolumes": [{"name": "pg-ca", "configMap": {"name": "pg-ca"}}],
    "extraVolumeMounts": [{"name": "pg-ca", "mountPath": "/etc/pg-ca", "readOnly": True}],
    "extraEnvFrom": [{"secretRef": {"name": "pg-settings"}}],
}


@pytest.mark.parametrize("bundled", [False, True], ids=["own-postgresql", "bundled"])
def test_every_component_takes_spread_volumes_and_env_from(
    render: Callable[..., Any], bundled: bool
) -> None:
    values: dict[str, Any] = {
        component: PLATFORM for component in ("operator", "historyApi", "runner", "migrations")
    }
    values["postgresql"] = {"bundled": {"enabled": bundled}}
    values["runner"] = {**PLATFORM, "updateStrategy": {"rollingUpdate": {"maxUnavailable": 0}}}
    values["extraObjects"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "{{ .Release.Name }}-ca"}},
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\n",
    ]
    objects = render(values)
    workloads = [o for o in objects if o["kind"] in {"Deployment", "Job"}]
    names = sorted(o["metadata"]["name"] for o in workloads)
    assert len(workloads) == (3 if bundled else 4), names  # bundled: migrate is an init container
    for workload in workloads:
        spec = workload["spec"]["template"]["spec"]
        assert spec["topologySpreadConstraints"] == PLATFORM["topologySpreadConstraints"]
        volumes = [volume["name"] for volume in spec["volumes"]]
        assert volumes.count("pg-ca") == 1, (workload["metadata"]["name"], volumes)
        for container in spec.get("initContainers", []) + spec["containers"]:
            assert container["envFrom"] == PLATFORM["extraEnvFrom"], container["name"]
            assert PLATFORM["extraVolumeMounts"][0] in container["volumeMounts"], container["name"]
    runner = _one(objects, "Deployment", "runner")
    assert runner["spec"]["strategy"] == {"rollingUpdate": {"maxUnavailable": 0}}
    config_maps = {o["metadata"]["name"] for o in objects if o["kind"] == "ConfigMap"}
    assert {"release-ca", "release-settings"} <= config_maps


def test_optional_parts_render_only_when_enabled(render: Callable[..., Any]) -> None:
    kinds = _kinds(render(EVERYTHING))
    for kind in ("HorizontalPodAutoscaler", "PrometheusRule"):
        assert kinds.get(kind) == 1, kind
    assert kinds.get("PodMonitor") == 2  # the runners' and the operator's
    assert kinds.get("PodDisruptionBudget") == 2  # the runners' and the history API's
    defaults = _kinds(render())
    for kind in ("HorizontalPodAutoscaler", "PodMonitor", "PrometheusRule"):
        assert kind not in defaults
    assert defaults["PodDisruptionBudget"] == 1  # the history API's, always


def test_the_dashboard_and_the_argocd_cm_snippet_are_built_from_the_charts_files(
    render: Callable[..., Any],
) -> None:
    objects = render(EVERYTHING)
    dashboard = json.loads(_one(objects, "ConfigMap", "dashboard")["data"]["sundial.json"])
    assert dashboard["uid"] == "sundial-overview"
    data = _one(objects, "ConfigMap", "argocd-cm")["data"]
    customizations = CHART / "argocd" / "sundial.dev"
    for kind in ("ScheduledJob", "JobRun"):
        health = data[f"resource.customizations.health.sundial.dev_{kind}"]
        assert health == (customizations / kind / "health.lua").read_text()
        actions = yaml.safe_load(data[f"resource.customizations.actions.sundial.dev_{kind}"])
        assert (
            actions["discovery.lua"]
            == (customizations / kind / "actions/discovery.lua").read_text()
        )
        for definition in actions["definitions"]:
            script = customizations / kind / "actions" / definition["name"] / "action.lua"
            assert definition["action.lua"] == script.read_text()
        names = {d["name"] for d in actions["definitions"]}
        assert names == {
            p.parent.name for p in (customizations / kind / "actions").glob("*/action.lua")
        }


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"operater": {}}, "additional properties 'operater' not allowed"),
        ({"runner": {"replica": 3}}, "at '/runner': additional properties 'replica' not allowed"),
        ({"hotQueue": {"bundled": {"password": "a@b"}}}, "/hotQueue/bundled/password"),
        ({"runner": {"replicas": "three"}}, "at '/runner/replicas': got string, want integer"),
        ({"crds": {"keep": "yes"}}, "at '/crds/keep': got string, want boolean"),
        (
            {"operator": {"image": {"pullPolicy": "Sometimes"}}},
            "at '/operator/image/pullPolicy'",
        ),
        ({"watchNamespaces": ["Team_A"]}, "at '/watchNamespaces/0'"),
        ({"runner": {"concurrency": {"fibers": 2}}}, "additional properties 'fibers' not allowed"),
        ({"operator": {"service": {"name": "Sundial_Operator"}}}, "at '/operator/service/name'"),
        (
            {"operator": {"fireBudget": {"namespaceFiresPerSecond": 0}}},
            "at '/operator/fireBudget/namespaceFiresPerSecond'",
        ),
        ({"runner": {"namespaceWeights": {"team-a": 0}}}, "at '/runner/namespaceWeights/team-a'"),
        ({"runner": {"namespaceWeights": {"Team_A": 2}}}, "invalid propertyName 'Team_A'"),
        ({"operator": {"image": {"digest": "sha256:abc"}}}, "at '/operator/image/digest'"),
        ({"runner": {"image": {"digest": "md5:" + "0" * 32}}}, "at '/runner/image/digest'"),
        ({"imageRegistry": "ghcr.io/acme sundial"}, "at '/imageRegistry'"),
        ({"imageRegistry": ""}, "at '/imageRegistry'"),
        (
            {"runner": {"topologySpreadConstraints": [{"topologyKey": "zone"}]}},
            "at '/runner/topologySpreadConstraints/0'",
        ),
        (
            {"operator": {"extraVolumeMounts": [{"name": "ca"}]}},
            "at '/operator/extraVolumeMounts/0'",
        ),
        ({"runner": {"updateStrategy": {"type": "Sideways"}}}, "at '/runner/updateStrategy/type'"),
    ],
)
def test_bad_values_are_refused_naming_the_key(
    helm: Callable[..., Any], tmp_path: Any, values: dict[str, Any], message: str
) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    result = helm(
        "template", "release", str(CHART), "--values", str(path),
        *RENDER_FOR_THE_TEST_CLUSTER, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "values don't meet the specifications of the schema" in result.stderr
    assert message in result.stderr, result.stderr


def test_the_schema_closes_every_object_the_chart_defines() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())

    def walk(node: dict[str, Any], path: str) -> None:
        if "properties" in node:
            assert node.get("additionalProperties") is False, path or "/"
            for key, child in node["properties"].items():
                walk(child, f"{path}/{key}")

    walk(schema, "")
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())

    def covered(values: Any, node: dict[str, Any], path: str) -> None:
        if isinstance(values, dict) and "properties" in node:
            for key, value in values.items():
                assert key in node["properties"], f"{path}/{key} has no schema"
                covered(value, node["properties"][key], f"{path}/{key}")

    covered(defaults, schema, "")


def test_job_pod_placement_values_reach_the_operator_as_flags_it_parses_back(
    render: Callable[..., Any],
) -> None:
    from sundial.cli import options
    from sundial.pods import placement

    toleration = {"key": "sundial.dev/real-node", "operator": "Exists", "effect": "NoSchedule"}
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    values = {
        "jobPods": {
            "nodeSelector": {"sundial.dev/node-kind": "real", "pool": "batch"},
            "tolerations": [toleration, {"key": "dedicated", "operator": "Exists"}],
            "affinity": affinity,
        }
    }
    args = _one(render(values), "Deployment", "operator")["spec"]["template"]["spec"]["containers"][
        0
    ]["args"]

    def given(flag: str) -> tuple[str, ...]:
        return tuple(a.removeprefix(f"{flag}=") for a in args if a.startswith(f"{flag}="))

    [affinity_flag] = given("--job-pod-affinity")
    parsed = options.job_pod_placement(
        given("--job-pod-node-selector"), given("--job-pod-toleration"), affinity_flag
    )
    assert parsed == placement.Placement(
        node_selector=values["jobPods"]["nodeSelector"],
        tolerations=(toleration, {"key": "dedicated", "operator": "Exists"}),
        affinity=affinity,
    )
    default_args = _one(render(), "Deployment", "operator")["spec"]["template"]["spec"][
        "containers"
    ][0]["args"]
    assert not [a for a in default_args if a.startswith("--job-pod-")]


def test_host_network_and_the_bundled_databases_address_for_a_cluster_without_pod_network(
    render: Callable[..., Any],
) -> None:
    bundled = {"enabled": True, "hostNetwork": True, "host": "127.0.0.1",
               "listenAddress": "127.0.0.1"}  # fmt: skip
    objects = render(
        {
            "postgresql": {"port": 25432, "bundled": bundled},
            "operator": {"hostNetwork": True},
            "historyApi": {"hostNetwork": True},
            "runner": {"hostNetwork": True},
        }
    )
    for spec in _pod_specs(objects):
        if "migrate" not in json.dumps(spec["containers"][0]["name"]):
            assert (spec.get("hostNetwork"), spec.get("dnsPolicy")) == (
                True,
                "ClusterFirstWithHostNet",
            )
    secret = _one(objects, "Secret", "postgresql")
    assert secret["stringData"]["dsn"] == "postgresql://sundial:sundial@127.0.0.1:25432/sundial"
    database = _one(objects, "StatefulSet", "postgresql")["spec"]["template"]["spec"]
    container = database["containers"][0]
    assert container["args"] == [
        "-p", "25432", "-c", "listen_addresses=127.0.0.1", "-c", "autovacuum_naptime=10s"
    ]  # fmt: skip
    assert container["readinessProbe"]["exec"]["command"][:5] == [
        "pg_isready", "-h", "127.0.0.1", "-p", "25432"
    ]  # fmt: skip
    # By default nothing shares the node's network and the DSN names the Service.
    default = render({"postgresql": {"bundled": {"enabled": True}}})
    assert not [s for s in _pod_specs(default) if s.get("hostNetwork")]
    dsn = _one(default, "Secret", "postgresql")["stringData"]["dsn"]
    assert dsn == "postgresql://sundial:sundial@release-sundial-postgresql.sundial.svc:5432/sundial"


def test_the_bundled_postgresql_gets_the_settings_the_run_store_needs_and_yours(
    render: Callable[..., Any],
) -> None:
    def settings(objects: list[dict[str, Any]]) -> dict[str, str]:
        args = _one(objects, "StatefulSet", "postgresql")["spec"]["template"]["spec"]
        given = args["containers"][0]["args"]
        pairs = [given[i + 1] for i, arg in enumerate(given) if arg == "-c"]
        return dict(pair.split("=", 1) for pair in pairs)

    assert settings(render({"postgresql": {"bundled": {"enabled": True}}})) == server.RECOMMENDED
    mine = {"autovacuum_naptime": "5s", "work_mem": "8MB", "log_min_duration_statement": 500}
    given = settings(render({"postgresql": {"bundled": {"enabled": True, "settings": mine}}}))
    assert given == {**server.RECOMMENDED, **{k: str(v) for k, v in mine.items()}}


def test_the_runner_serves_the_release_namespace_or_what_it_is_told(
    render: Callable[..., Any],
) -> None:
    def served(values: dict[str, Any] | None = None) -> list[str]:
        runner = _one(render(values, namespace="platform"), "Deployment", "runner")
        args = runner["spec"]["template"]["spec"]["containers"][0]["args"]
        return [arg.split("=", 1)[1] for arg in args if arg.startswith("--namespace=")]

    # A tenant's handlers never run for another namespace unless the platform team says so.
    assert served() == ["platform"]
    assert served({"watchNamespaces": ["team-a", "team-b"]}) == ["team-a", "team-b"]
    assert served({"runner": {"namespaces": ["team-c"]}}) == ["team-c"]
    assert served({"runner": {"namespaces": ["*"]}}) == []  # no flag: every namespace


def test_the_fire_budget_reaches_the_operator_as_flags_it_accepts(
    render: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sundial.cli import daemons

    def args_of(values: dict[str, Any] | None = None) -> list[str]:
        operator = _one(render(values), "Deployment", "operator")["spec"]["template"]["spec"]
        return list(operator["containers"][0]["args"])

    def parsed(args: list[str]) -> dict[str, Any]:
        # The operator command's own parser: a flag the chart passes and the CLI lacks fails.
        monkeypatch.setenv("SUNDIAL_DSN", "postgresql://unused/sundial")
        flags = [a for a in args if a.startswith("--")]
        return dict(daemons.operator.make_context("operator", flags).params)

    default = parsed(args_of())
    assert (default["fires_per_second"], default["namespace_fires_per_second"]) == (1000.0, None)
    tenants = parsed(
        args_of(
            {"operator": {"fireBudget": {"firesPerSecond": 500, "namespaceFiresPerSecond": 50}}}
        )
    )
    assert (tenants["fires_per_second"], tenants["namespace_fires_per_second"]) == (500.0, 50.0)


def test_namespace_weights_reach_the_runner_as_flags_it_accepts(
    render: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sundial.cli import daemons

    values = {"runner": {"namespaces": ["*"], "namespaceWeights": {"team-a": 3, "team-b": 0.5}}}
    runner = _one(render(values), "Deployment", "runner")["spec"]["template"]["spec"]
    args = [a for a in runner["containers"][0]["args"] if a.startswith("--")]
    monkeypatch.setenv("SUNDIAL_DSN", "postgresql://unused/sundial")
    monkeypatch.setenv("SUNDIAL_HANDLERS", "acme.reports")
    params = daemons.runner.make_context("runner", args).params
    assert params["namespace_weights"] == {"team-a": 3.0, "team-b": 0.5}
    assert params["reserved_slots"] == 1
    default = _one(render(), "Deployment", "runner")["spec"]["template"]["spec"]
    assert not [a for a in default["containers"][0]["args"] if "--namespace-weight" in a]
    none = _one(render({"runner": {"reservedSlots": 0}}), "Deployment", "runner")
    assert "--reserved-slots=0" in none["spec"]["template"]["spec"]["containers"][0]["args"]


def test_pod_namespace_weights_reach_the_operator_as_flags_it_accepts(
    render: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sundial.cli import daemons

    def operator_args(values: dict[str, Any] | None = None) -> list[str]:
        spec = _one(render(values), "Deployment", "operator")["spec"]["template"]["spec"]
        return [a for a in spec["containers"][0]["args"] if a.startswith("--")]

    weights = {"team-a": 3, "team-b": 0.5}
    args = operator_args({"operator": {"podLauncher": {"namespaceWeights": weights}}})
    monkeypatch.setenv("SUNDIAL_DSN", "postgresql://unused/sundial")
    params = daemons.operator.make_context("operator", args).params
    assert params["namespace_weights"] == {"team-a": 3.0, "team-b": 0.5}
    assert params["reserved_pods"] == 1
    assert not [a for a in operator_args() if "--pod-namespace-weight" in a]
    assert "--reserved-pods=0" in operator_args({"operator": {"podLauncher": {"reservedPods": 0}}})


def test_the_operators_metrics_want_a_token_the_pod_monitor_holds(
    render: Callable[..., Any],
) -> None:
    objects = render({"metrics": {"podMonitor": {"enabled": True}}})
    args = _one(objects, "Deployment", "operator")["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]
    assert "--metrics-auth" in args
    reader = _one(objects, "ClusterRole", "metrics-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    delegator = _one(objects, "ClusterRoleBinding", "metrics-auth-delegator")
    assert delegator["roleRef"]["name"] == "system:auth-delegator"
    assert delegator["subjects"][0]["name"].endswith("-operator")
    # The PodMonitor of the operator sends the token of a ServiceAccount bound to the reader.
    [monitor] = [
        o for o in objects
        if o["kind"] == "PodMonitor" and o["metadata"]["name"].endswith("-operator")
    ]  # fmt: skip
    secret_name = monitor["spec"]["podMetricsEndpoints"][0]["authorization"]["credentials"]["name"]
    secret = _one(objects, "Secret", "metrics-reader")
    assert secret["metadata"]["name"] == secret_name
    assert secret["type"] == "kubernetes.io/service-account-token"
    account = secret["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    binding = _one(objects, "ClusterRoleBinding", "metrics-reader")
    assert binding["roleRef"]["name"] == reader["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account, "namespace": secret["metadata"]["namespace"]}
    ]

    open_metrics = render({"operator": {"metricsAuth": False}})
    args = _one(open_metrics, "Deployment", "operator")["spec"]["template"]["spec"]["containers"][
        0
    ]["args"]
    assert "--no-metrics-auth" in args
    assert not [o for o in open_metrics if o["metadata"]["name"].endswith("metrics-reader")]


def test_the_operators_metrics_go_over_https_to_a_pod_monitor_that_verifies_them(
    render: Callable[..., Any], tmp_path: Path
) -> None:
    """The scrape's token crosses the Pod network only inside TLS, to the operator only: the
    certificate names the operator's Service and is signed by the CA the PodMonitor checks."""
    objects = render({"metrics": {"podMonitor": {"enabled": True}}}, namespace="ops")
    spec = _one(objects, "Deployment", "operator")["spec"]["template"]["spec"]
    [container] = spec["containers"]
    assert {"--metrics-tls-cert=/etc/sundial/metrics-tls/tls.crt",
            "--metrics-tls-key=/etc/sundial/metrics-tls/tls.key",
            "--metrics-port=8444"} <= set(container["args"])  # fmt: skip
    assert {"name": "metrics", "containerPort": 8444, "protocol": "TCP"} in container["ports"]
    secret = _one(objects, "Secret", "operator-metrics-tls")
    [volume] = [v for v in spec["volumes"] if v["name"] == "metrics-tls"]
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]
    assert {m["key"] for m in volume["secret"]["items"]} == {"tls.crt", "tls.key"}
    service = _one(objects, "Service", "operator")
    assert {"name": "metrics", "port": 8444, "targetPort": "metrics", "protocol": "TCP"} in (
        service["spec"]["ports"]
    )
    [monitor] = [
        o for o in objects
        if o["kind"] == "PodMonitor" and o["metadata"]["name"].endswith("-operator")
    ]  # fmt: skip
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == "metrics" and endpoint["scheme"] == "https"
    server_name = f"{service['metadata']['name']}.ops.svc"
    assert endpoint["tlsConfig"] == {
        "serverName": server_name,
        "ca": {"secret": {"name": secret["metadata"]["name"], "key": "ca.crt"}},
    }
    assert "credentials" in endpoint["authorization"]
    for name in ("tls.crt", "tls.key", "ca.crt"):
        (tmp_path / name).write_bytes(base64.b64decode(secret["data"][name]))
    verify = ["openssl", "verify", "-CAfile", str(tmp_path / "ca.crt"), str(tmp_path / "tls.crt")]
    assert subprocess.run(verify, capture_output=True, text=True, check=False).returncode == 0
    names = subprocess.run(
        ["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in", str(tmp_path / "tls.crt")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert f"DNS:{server_name}" in names

    theirs = render(
        {"metrics": {"podMonitor": {"enabled": True}},
         "operator": {"metricsTls": {"existingSecret": "from-cert-manager"}}}
    )  # fmt: skip
    assert not [o for o in theirs if o["metadata"]["name"].endswith("operator-metrics-tls")]
    spec = _one(theirs, "Deployment", "operator")["spec"]["template"]["spec"]
    [volume] = [v for v in spec["volumes"] if v["name"] == "metrics-tls"]
    assert volume["secret"]["secretName"] == "from-cert-manager"

    plain = render({"metrics": {"podMonitor": {"enabled": True}},
                    "operator": {"metricsTls": {"enabled": False}}})  # fmt: skip
    spec = _one(plain, "Deployment", "operator")["spec"]["template"]["spec"]
    assert not [a for a in spec["containers"][0]["args"] if a.startswith("--metrics-tls")]
    assert not [v for v in spec["volumes"] if v["name"] == "metrics-tls"]
    [monitor] = [
        o for o in plain
        if o["kind"] == "PodMonitor" and o["metadata"]["name"].endswith("-operator")
    ]  # fmt: skip
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] == "health"


def test_no_port_of_a_runner_but_its_metrics_port_is_open_to_other_pods(
    render: Callable[..., Any],
) -> None:
    objects = render()
    runner = _one(objects, "Deployment", "runner")
    policy = _one(objects, "NetworkPolicy", "runner")
    assert (
        policy["spec"]["podSelector"]["matchLabels"] == (runner["spec"]["selector"]["matchLabels"])
    )
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"] == [{"ports": [{"port": "metrics", "protocol": "TCP"}]}]
    [container] = runner["spec"]["template"]["spec"]["containers"]
    assert [p["name"] for p in container["ports"]] == ["metrics"]

    prometheus = [{"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}]
    kept = render({"runner": {"networkPolicy": {"metricsFrom": prometheus}}})
    [rule] = _one(kept, "NetworkPolicy", "runner")["spec"]["ingress"]
    assert rule["from"] == prometheus
    off = render({"runner": {"networkPolicy": {"enabled": False}}})
    assert not [
        o for o in off if o["kind"] == "NetworkPolicy" and "runner" in o["metadata"]["name"]
    ]


def test_a_release_of_runners_only_renders_nothing_beyond_its_namespace(
    render: Callable[..., Any],
) -> None:
    """One team's runners (its handler image, its database login) from the same chart, by
    someone with rights in that namespace only."""
    objects = render(
        {
            "operator": {"enabled": False},
            "postgresql": {"existingSecret": {"name": "team-a-db", "runnerKey": "runner-dsn"}},
            "runner": {"image": {"repository": "registry.example/team-a/handlers", "tag": "7"}},
            "metrics": {"podMonitor": {"enabled": True}},
        },
        namespace="team-a",
    )
    assert sorted((o["kind"], o["metadata"]["name"]) for o in objects) == [
        ("Deployment", "release-sundial-runner"),
        ("NetworkPolicy", "release-sundial-runner"),
        ("Pod", "release-sundial-test"),
        ("PodMonitor", "release-sundial"),  # the runners'
        ("ServiceAccount", "release-sundial-runner"),
    ]
    assert {o["metadata"]["namespace"] for o in objects} == {"team-a"}
    [runner] = _one(objects, "Deployment", "runner")["spec"]["template"]["spec"]["containers"]
    assert "--namespace=team-a" in runner["args"]
    assert runner["image"] == "registry.example/team-a/handlers:7"
    [dsn] = [e for e in runner["env"] if e["name"] == "SUNDIAL_DSN"]
    assert dsn["valueFrom"]["secretKeyRef"] == {"name": "team-a-db", "key": "runner-dsn"}
    [check] = _pod_specs([_one(objects, "Pod")])
    assert [c["name"] for c in check["containers"]] == ["database"]  # no operator to ask


def test_a_release_of_runners_only_with_a_bundled_database_is_refused_saying_why(
    helm: Callable[..., Any], tmp_path: Any
) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(
        yaml.safe_dump(
            {"operator": {"enabled": False}, "postgresql": {"bundled": {"enabled": True}}}
        )
    )
    result = helm(
        "template", "release", str(CHART), "--values", str(path),
        *RENDER_FOR_THE_TEST_CLUSTER, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "set postgresql.bundled.enabled=false" in result.stderr, result.stderr


def _check_script(objects: list[dict[str, Any]], container: str) -> str:
    [check] = _pod_specs([_one(objects, "Pod")])
    [found] = [c for c in check["containers"] if c["name"] == container]
    return str(found["args"][0])


def test_helm_tests_apiserver_check_answers_against_a_real_api_server(
    render: Callable[..., Any], local_cluster: Any, kubeconfig: Any, tmp_path: Any
) -> None:
    """The ``helm test`` Pod's API server check, run here against the test cluster's API server
    as the Pod runs it (where operator.extraEnv points, the cluster's CA): it passes; with
    another CA it fails, saying it could not reach the API server."""
    if local_cluster.state_dir is None:
        pytest.skip("the cluster's CA is the test cluster's own (hack/cluster)")
    server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    host, port = server.removeprefix("https://").rsplit(":", 1)
    values = {"operator": {"extraEnv": [
        {"name": "KUBERNETES_SERVICE_HOST", "value": host},
        {"name": "KUBERNETES_SERVICE_PORT", "value": port},
    ]}}  # fmt: skip
    objects = render(values)
    [check] = _pod_specs([_one(objects, "Pod")])
    assert check["automountServiceAccountToken"] is False
    assert {"name": "kube-root-ca", "configMap": {"name": "kube-root-ca.crt"}} in check["volumes"]
    [apiserver] = [c for c in check["containers"] if c["name"] == "apiserver"]
    assert apiserver["env"] == values["operator"]["extraEnv"]
    script = _check_script(objects, "apiserver").replace("range(30)", "range(2)")

    def run(ca: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script.replace("/etc/sundial/kube-root-ca/ca.crt", ca)],
            env={"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port},
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    answered = run(str(local_cluster.state_dir / "pki" / "ca.crt"))
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert "/readyz 200" in answered.stdout or " 401 " in answered.stdout, answered.stdout
    stranger = tmp_path / "other-ca.crt"
    stranger.write_text((local_cluster.state_dir / "pki" / "front-proxy-ca.crt").read_text())
    refused = run(str(stranger))
    assert refused.returncode != 0
    assert "the API server did not answer" in refused.stderr, refused.stderr
