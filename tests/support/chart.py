"""Where the chart is, and values that turn all of it on, for the chart's tests."""

from __future__ import annotations

import pathlib
from typing import Any

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
CHART = REPOSITORY / "charts" / "sundial"


def _cluster_version() -> str:
    for line in (REPOSITORY / "hack" / "cluster" / "versions.env").read_text().splitlines():
        if line.startswith("KUBE_VERSION="):
            return line.partition("=")[2].strip()
    raise AssertionError("hack/cluster/versions.env names no KUBE_VERSION")


#: ``helm template`` renders for Kubernetes 1.20 unless told otherwise, which the chart's
#: kubeVersion refuses; the tests render for the test cluster's version, as Argo CD renders
#: for its cluster's.
RENDER_FOR_THE_TEST_CLUSTER = ("--kube-version", _cluster_version())

#: Non-default values that turn every optional part on.
EVERYTHING: dict[str, Any] = {
    "watchNamespaces": ["team-a", "team-b"],
    "crds": {"keep": False},
    "commonLabels": {"team": "platform"},
    "postgresql": {"bundled": {"enabled": True, "storageSize": "2Gi"}},
    "hotQueue": {"enabled": True, "bundled": {"enabled": True, "storageSize": "1Gi"}},
    "operator": {
        "image": {"repository": "registry.example/sundial/operator", "tag": "1.2.3"},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "sundial"}],
        "priorityClassName": "system-cluster-critical",
        "podLauncher": {"queues": ["default", "batch"], "maxPods": 50},
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
            }
        ],
        "extraVolumes": [{"name": "pg-ca", "configMap": {"name": "pg-ca", "optional": True}}],
        "extraVolumeMounts": [{"name": "pg-ca", "mountPath": "/etc/pg-ca", "readOnly": True}],
        "extraEnvFrom": [{"configMapRef": {"name": "pg-settings", "optional": True}}],
    },
    "migrations": {
        "extraVolumes": [{"name": "pg-ca", "configMap": {"name": "pg-ca", "optional": True}}],
        "extraVolumeMounts": [{"name": "pg-ca", "mountPath": "/etc/pg-ca", "readOnly": True}],
    },
    "runner": {
        "image": {
            "repository": "registry.example/acme/handlers",
            "tag": "7",
            "pullPolicy": "Always",
        },
        "handlers": ["acme.reports", "acme.cleanup"],
        "updateStrategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
        "concurrency": {"async": 200, "thread": 8},
        "autoscaling": {"enabled": True, "metricSelector": {"queue": "default"}},
        "podDisruptionBudget": {"enabled": True},
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {
                                "matchLabels": {"app.kubernetes.io/component": "runner"}
                            },
                        },
                    }
                ]
            }
        },
    },
    "metrics": {
        "podMonitor": {"enabled": True},
        "prometheusRule": {"enabled": True},
        "grafanaDashboard": {"enabled": True},
    },
    "argocd": {"resourceCustomizations": {"enabled": True}},
    "extraObjects": [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "{{ .Release.Name }}-pg-settings"},
            "data": {"PGCONNECT_TIMEOUT": "5"},
        }
    ],
}
