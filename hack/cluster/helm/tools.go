//go:build tools

// Package tools pins the helm command we build, so `go mod tidy` keeps every
// module it needs in go.mod and go.sum. It is never compiled.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
