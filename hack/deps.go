//go:build deps

// Package hack pins tool and library dependencies so that `go mod tidy` keeps them.
package hack

import (
	_ "github.com/Masterminds/semver/v3"
	_ "github.com/google/go-containerregistry/pkg/registry"
	_ "github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/sabhiram/go-gitignore"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/spf13/cobra"
	_ "go.etcd.io/bbolt"
	_ "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	_ "k8s.io/apiserver/pkg/server"
	_ "k8s.io/apiserver/pkg/storage/etcd3"
	_ "k8s.io/apiserver/pkg/storage/testing"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/code-generator"
	_ "k8s.io/component-base/cli"
	_ "k8s.io/kube-openapi/pkg/common"
	_ "sigs.k8s.io/yaml"
)
