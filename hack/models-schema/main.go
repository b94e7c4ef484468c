// Command models-schema prints the OpenAPI v2 document of every definition in
// pkg/generated/openapi. hack/update-codegen.sh feeds it to applyconfiguration-gen
// so that the generated apply configurations know the structure of our types
// (list types, map keys) for server-side apply.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/olm-apiserver/olm-apiserver/pkg/generated/openapi"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "models-schema: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + name) }
	definitions := map[string]spec.Schema{}
	for name, def := range openapi.GetOpenAPIDefinitions(ref) {
		schema := def.Schema
		// Types with a separate v2 form (e.g. int-or-string) carry it here.
		if v2, ok := def.Schema.Extensions[common.ExtensionV2Schema].(spec.Schema); ok {
			schema = v2
		}
		definitions[name] = schema
	}
	doc := spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "olm-apiserver", Version: "unversioned"}},
		Definitions: definitions,
	}}
	return json.NewEncoder(os.Stdout).Encode(&doc)
}
