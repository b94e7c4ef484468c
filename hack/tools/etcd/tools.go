//go:build tools

// Package tools pins the etcd server module used by hack/build-etcd.sh so that
// `go mod` keeps it (and its exact version) in this module's go.sum.
package tools

import _ "go.etcd.io/etcd/server/v3/etcdmain"
