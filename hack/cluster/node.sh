# Shared by hack/cluster/node-up and node-down (source it after lib.sh, with STATE_DIR set
# to the absolute state directory). Defines names only, and one function.
#
# Every name a real node uses on the machine derives from its state directory, so the nodes
# of several clusters never share a socket, cgroup, bridge or subnet.

NODE_DIR=$STATE_DIR/node
NODE_ID=$(printf '%s' "$STATE_DIR" | sha256sum | cut -c1-8)
# The apiserver dials a node's Hostname address first; an IP literal needs no DNS entry, and
# each cluster has its own apiserver, so every cluster's node may carry the same name.
NODE_NAME=127.0.0.1
CONTAINERD_SOCKET=$NODE_DIR/containerd/containerd.sock
CGROUP_ROOT=sundial-$NODE_ID
BRIDGE=sdbr-$NODE_ID
# Machine-wide: one file per real node (<id>.node), and machine.before, what the first node
# found before its kubelet changed anything; the last node to go puts that back.
NODE_REGISTRY=/run/sundial-real-nodes
# The sysctls a kubelet sets at start (protectKernelDefaults: false means "set them").
NODE_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
    kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

# The registry's lock is /run itself (a lock file would outlive the last node).
node_registry_lock() { exec 8</run && flock 8; }
node_registry_unlock() { flock -u 8 && exec 8<&-; }

node_registry_prune() { # drop the entries of nodes whose state directory has gone
    local entry dir
    for entry in "$NODE_REGISTRY"/*.node; do
        [ -f "$entry" ] || continue
        dir=$(sed -n 's/^STATE_DIR=//p' "$entry")
        [ -d "$dir/node" ] || rm -f "$entry"
    done
}
