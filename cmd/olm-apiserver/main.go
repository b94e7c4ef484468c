// Command olm-apiserver serves the olm.operatorframework.io/v1 API
// (ClusterCatalog, ClusterExtension) as a Kubernetes aggregated API server,
// or standalone with --standalone. Subcommands: validate-catalog, render.
package main

import (
	"os"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/olm-apiserver/olm-apiserver/pkg/cmd/render"
	"github.com/olm-apiserver/olm-apiserver/pkg/cmd/server"
	"github.com/olm-apiserver/olm-apiserver/pkg/cmd/validatecatalog"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	o := server.NewOptions(os.Stdout)
	root := &cobra.Command{
		Use:   "olm-apiserver",
		Short: "OLM v1 (ClusterCatalog, ClusterExtension) as a Kubernetes aggregated API server",
		Long: "olm-apiserver serves the olm.operatorframework.io/v1 API group behind kube-apiserver's aggregation layer, " +
			"or on its own with --standalone. Objects are stored in an embedded bbolt database under --data-dir (the default, " +
			"one replica) or in etcd (--storage-backend=etcd3, for several replicas with --leader-elect); catalog content is " +
			"kept under --data-dir by every replica.",
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	root.SetContext(ctx)
	o.AddFlags(root.Flags())
	root.AddCommand(validatecatalog.NewCommand(), render.NewCommand())
	os.Exit(cli.Run(root))
}
