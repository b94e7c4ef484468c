package server

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/olm-apiserver/olm-apiserver/pkg/content"
	"github.com/olm-apiserver/olm-apiserver/pkg/controllers/extension"
	"github.com/olm-apiserver/olm-apiserver/pkg/image"
	"github.com/olm-apiserver/olm-apiserver/pkg/resolve"
	"github.com/olm-apiserver/olm-apiserver/pkg/revision"
)

// ExtensionControllerHook is the name of the post-start hook that runs the
// ClusterExtension controller.
const ExtensionControllerHook = "olm-extension-controller"

// ExtensionOptions configure the ClusterExtension controller (issue 8).
type ExtensionOptions struct {
	// Enabled runs the controller (default true).
	Enabled bool
	// TargetKubeconfig is the cluster extensions are installed on. Empty
	// means: in aggregated mode the kube-apiserver the server is aggregated
	// into (--kubeconfig, or the in-cluster configuration); in standalone
	// mode none, and ClusterExtensions report Progressing False/Blocked
	// "no target cluster configured".
	TargetKubeconfig string
	// ResyncPeriod is how often installed extensions are reconciled again to
	// correct drift.
	ResyncPeriod time.Duration
	// RecordNamespace is the namespace of the target cluster where the
	// revision record of each ClusterExtension is kept (a Secret, shared by
	// every replica; pkg/revision.SecretStore): the namespace the server
	// runs in, default olmv1-system. It must exist.
	RecordNamespace string
}

// NewExtensionOptions returns the defaults.
func NewExtensionOptions() ExtensionOptions {
	return ExtensionOptions{Enabled: true, ResyncPeriod: extension.DefaultResyncPeriod, RecordNamespace: revision.DefaultNamespace}
}

// AddFlags adds the controller's flags to fs.
func (e *ExtensionOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&e.Enabled, "extension-controller", e.Enabled,
		"Run the ClusterExtension controller, which installs, upgrades and uninstalls extensions on the target cluster.")
	fs.StringVar(&e.TargetKubeconfig, "target-kubeconfig", e.TargetKubeconfig,
		"Kubeconfig of the cluster ClusterExtensions are installed on. Default: the kube-apiserver this server is aggregated into "+
			"(--kubeconfig or in-cluster); in --standalone mode there is none unless this flag is set.")
	fs.DurationVar(&e.ResyncPeriod, "extension-resync-period", e.ResyncPeriod,
		"How often each installed ClusterExtension is reconciled again, correcting objects edited or deleted by hand.")
	fs.StringVar(&e.RecordNamespace, "extension-record-namespace", e.RecordNamespace,
		"Namespace of the target cluster holding the installed revision of each ClusterExtension (a Secret olm-revision-<name>, "+
			"read by whichever replica leads); normally the namespace the server runs in. It must exist.")
}

// Validate reports invalid extension options.
func (e *ExtensionOptions) Validate() []error {
	var errs []error
	if e.ResyncPeriod < time.Second {
		errs = append(errs, fmt.Errorf("--extension-resync-period must be at least 1s"))
	}
	if msgs := validation.IsDNS1123Label(e.RecordNamespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--extension-record-namespace %q: %s", e.RecordNamespace, strings.Join(msgs, "; ")))
	}
	return errs
}

// addExtensionController registers the post-start hook that runs the
// ClusterExtension controller with the loopback client, the content store
// and the target cluster (see ExtensionOptions.TargetKubeconfig; in
// aggregated mode gc.ClientConfig, set from --kubeconfig by CoreAPI options),
// run and stopped by runner.
func (o *Options) addExtensionController(gc *genericapiserver.RecommendedConfig, store *content.Store, leader *leaderGate, runner *controllerRunner) error {
	e := o.Extensions
	if !e.Enabled {
		return nil
	}
	target, err := o.targetCluster(gc)
	if err != nil {
		return err
	}
	dataDir := o.DataDir
	coreAPI := gc.ClientConfig
	// Bundle images are pulled with the registry settings and extraction
	// limits of the catalog controller (--insecure-registry,
	// --pull-secret-file, --registry-ca-file, --unpack-max-*).
	puller, err := image.NewPuller(image.Options{
		InsecureRegistries: o.Catalogs.InsecureRegistries, PullSecretFile: o.Catalogs.PullSecretFile, CAFile: o.Catalogs.RegistryCAFile,
	})
	if err != nil {
		return err
	}
	unpacker := &extension.ImageUnpacker{Puller: puller, Dir: filepath.Join(dataDir, "bundles"), Limits: o.Catalogs.Limits}
	return gc.AddPostStartHook(ExtensionControllerHook, func(hc genericapiserver.PostStartHookContext) error {
		client, err := runner.loopbackClient(hc.LoopbackClientConfig)
		if err != nil {
			return err
		}
		// Events go to the kube-apiserver the server is aggregated into
		// (none in standalone mode).
		recorder, stopEvents, err := eventRecorder(hc, coreAPI)
		if err != nil {
			return err
		}
		// A fresh controller for every leadership term (one, without --leader-elect).
		run, err := leader.prepare("extension", func() (controller, error) {
			return extension.New(extension.Config{
				Client:       client,
				Target:       target,
				Content:      resolve.SeqSource(store.PackageBlobs),
				DataDir:      dataDir,
				Unpacker:     unpacker,
				ResyncPeriod: e.ResyncPeriod,
				Recorder:     recorder,
				// The revision records live in the target cluster, so a new
				// leader knows what the previous one installed.
				RecordNamespace: e.RecordNamespace,
			})
		})
		if err != nil {
			stopEvents()
			return err
		}
		runner.start(hc, func(ctx context.Context) {
			defer stopEvents()
			run(ctx)
		})
		return nil
	})
}

// targetCluster returns the cluster extensions are installed on (see
// ExtensionOptions.TargetKubeconfig), nil when there is none. It fails when
// --target-kubeconfig cannot be loaded.
func (o *Options) targetCluster(gc *genericapiserver.RecommendedConfig) (*rest.Config, error) {
	switch {
	case o.Extensions.TargetKubeconfig != "":
		cfg, err := clientcmd.BuildConfigFromFlags("", o.Extensions.TargetKubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--target-kubeconfig: %w", err)
		}
		return cfg, nil
	case !o.Standalone && gc.ClientConfig != nil:
		return rest.CopyConfig(gc.ClientConfig), nil
	}
	return nil, nil
}
