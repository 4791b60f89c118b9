//go:build tools

// Package tools pins the kwok commands we build, so `go mod tidy` keeps every
// module they need in go.mod and go.sum. It is never compiled.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
