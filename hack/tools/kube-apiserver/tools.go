//go:build tools

// Package tools pins k8s.io/kubernetes/cmd/kube-apiserver so that
// hack/build-kube-apiserver.sh can build it from this module.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
