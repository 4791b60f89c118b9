# Shared by hack/cluster/build, up and down. Source it; it defines no commands of its own.
#
# CLUSTER_BIN_DIR is where the pinned binaries live: a cache outside the clone, keyed
# by the pinned versions and a hash of our go.mod/go.sum/main files, so a fresh clone on
# the same machine reuses what an earlier build made and a changed pin builds anew.

CLUSTER_HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
. "$CLUSTER_HACK_DIR/versions.env"

cluster_sources_hash() {
    (cd "$CLUSTER_HACK_DIR" &&
        cat versions.env k8s/go.mod k8s/go.sum etcd/go.mod etcd/go.sum etcd/main.go \
            kwok/go.mod kwok/go.sum helm/go.mod helm/go.sum) | sha256sum | cut -c1-10
}

CLUSTER_CACHE_KEY="k8s-${KUBE_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_helm-${HELM_VERSION}_$(cluster_sources_hash)"
CLUSTER_CACHE_ROOT="${SUNDIAL_CLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sundial/cluster}"
CLUSTER_BIN_DIR="$CLUSTER_CACHE_ROOT/$CLUSTER_CACHE_KEY/bin"
CLUSTER_BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kwokctl helm kubelet)

cluster_binaries_missing() {
    local name
    for name in "${CLUSTER_BINARIES[@]}"; do
        [ -x "$CLUSTER_BIN_DIR/$name" ] || echo "$name"
    done
}
