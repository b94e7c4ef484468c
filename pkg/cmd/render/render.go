// Package render holds the `olm-apiserver render` command, which prints the plain
// Kubernetes objects a registry+v1 bundle installs (see pkg/render).
package render

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/olm-apiserver/olm-apiserver/pkg/render"
	"github.com/olm-apiserver/olm-apiserver/pkg/render/certs"
)

// NewCommand returns `render BUNDLE_DIR --namespace NS [--watch-namespace W] [--config FILE]`.
//
// It loads the unpacked registry+v1 bundle in BUNDLE_DIR, renders it for install namespace
// NS (watch namespace W, or all namespaces when unset; FILE is a YAML/JSON
// spec.config.inline document whose watchNamespace the flag overrides) and writes the
// objects to stdout as a YAML stream ("---" separated), sorted as render.Render returns
// them. Webhook serving certificates come from a throw-away self-signed CA created for the
// run. Errors (unreadable bundle, invalid configuration, unsupported bundle) are returned
// unchanged and nothing is printed.
func NewCommand() *cobra.Command {
	var namespace, watchNamespace, configFile string
	cmd := &cobra.Command{
		Use:   "render BUNDLE_DIR --namespace NS [--watch-namespace W]",
		Short: "Print the Kubernetes objects a registry+v1 bundle installs, as YAML",
		Args:  cobra.ExactArgs(1),
		// Errors are about the bundle or configuration, not about how the command is used.
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var cfg map[string]any
			if configFile != "" {
				data, err := os.ReadFile(configFile)
				if err != nil {
					return err
				}
				if err := yaml.Unmarshal(data, &cfg); err != nil {
					return fmt.Errorf("%s: %w", configFile, err)
				}
			}
			if cmd.Flags().Changed("watch-namespace") {
				if cfg == nil {
					cfg = map[string]any{}
				}
				cfg["watchNamespace"] = watchNamespace
			}
			var raw []byte
			if cfg != nil {
				var err error
				if raw, err = yaml.Marshal(cfg); err != nil {
					return err
				}
			}
			return run(cmd.OutOrStdout(), args[0], namespace, raw)
		},
	}
	cmd.Flags().StringVar(&namespace, "namespace", "", "install namespace (required)")
	cmd.Flags().StringVar(&watchNamespace, "watch-namespace", "", "namespace the operator watches (default: all namespaces)")
	cmd.Flags().StringVar(&configFile, "config", "", "file with the spec.config.inline document (YAML or JSON)")
	_ = cmd.MarkFlagRequired("namespace")
	return cmd
}

func run(w io.Writer, dir, namespace string, config []byte) error {
	ca, err := certs.NewCA("olm-apiserver render", 365*24*time.Hour, time.Now())
	if err != nil {
		return err
	}
	objs, err := render.RenderFS(os.DirFS(dir), render.Options{InstallNamespace: namespace, Config: config, CertProvider: certs.NewProvider(ca)})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for i := range objs {
		data, err := yaml.Marshal(objs[i].Object)
		if err != nil {
			return fmt.Errorf("encoding %s %q: %w", objs[i].GetKind(), objs[i].GetName(), err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	_, err = w.Write(buf.Bytes())
	return err
}
