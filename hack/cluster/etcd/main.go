// Command etcd is upstream etcd's server entry point, built from its Go module.
//
// etcd publishes no `go install`-able main for the server at a module root that
// resolves cleanly, so this tiny main calls the same etcdmain.Main the official
// binary runs; flags and behaviour are upstream's.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
