package server

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/olm-apiserver/olm-apiserver/pkg/apiserver"
	catalogcontroller "github.com/olm-apiserver/olm-apiserver/pkg/controllers/catalog"
	"github.com/olm-apiserver/olm-apiserver/pkg/image"
)

// CatalogOptions configure the ClusterCatalog controller (issue 5), started
// in the post-start hook CatalogControllerHook in both modes.
type CatalogOptions struct {
	// InsecureRegistries, PullSecretFile and RegistryCAFile configure image
	// pulls (see image.Options).
	InsecureRegistries []string
	PullSecretFile     string
	RegistryCAFile     string
	// ExternalAddress is the host[:port] in status.urls.base.
	ExternalAddress string
	// CatalogWorkers is the number of catalogs reconciled at once.
	CatalogWorkers int
	// Limits bound each image extraction.
	Limits image.Limits
}

// CatalogControllerHook is the name of the post-start hook that runs the
// ClusterCatalog controller.
const CatalogControllerHook = "olm-catalog-controller"

// NewCatalogOptions returns the defaults: two workers, image.DefaultLimits.
func NewCatalogOptions() CatalogOptions {
	return CatalogOptions{CatalogWorkers: 2, Limits: image.DefaultLimits()}
}

// AddFlags adds the controller flags to fs.
func (c *CatalogOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&c.InsecureRegistries, "insecure-registry", c.InsecureRegistries,
		"Registry host[:port] reached over plain HTTP (repeatable). localhost, loopback and RFC 1918 addresses are plain HTTP anyway.")
	fs.StringVar(&c.PullSecretFile, "pull-secret-file", c.PullSecretFile,
		"Docker config.json with registry credentials, consulted before the default keychain; re-read on every pull.")
	fs.StringVar(&c.RegistryCAFile, "registry-ca-file", c.RegistryCAFile,
		"PEM bundle of CA certificates trusted for registries, in addition to the system roots.")
	fs.StringVar(&c.ExternalAddress, "external-address", c.ExternalAddress,
		"host[:port] clients reach the catalog content at: status.urls.base is https://ADDRESS/apis/olm.operatorframework.io/v1/clustercatalogs/NAME/content. "+
			"Default: the listen address in standalone mode, kubernetes.default.svc otherwise.")
	fs.IntVar(&c.CatalogWorkers, "catalog-workers", c.CatalogWorkers, "ClusterCatalogs unpacked at the same time.")
	fs.Int64Var(&c.Limits.MaxFileBytes, "unpack-max-file-bytes", c.Limits.MaxFileBytes, "Largest file accepted in an image layer.")
	fs.Int64Var(&c.Limits.MaxLayerBytes, "unpack-max-layer-bytes", c.Limits.MaxLayerBytes, "Largest uncompressed image layer accepted.")
	fs.Int64Var(&c.Limits.MaxTotalBytes, "unpack-max-total-bytes", c.Limits.MaxTotalBytes, "Most bytes written when extracting one image.")
}

// startCatalogController registers the post-start hook that runs the catalog
// controller in cfg.runner, which stops it.
func (o *Options) startCatalogController(srv *genericapiserver.GenericAPIServer, cfg *Config) error {
	c := o.Catalogs
	puller, err := image.NewPuller(image.Options{
		InsecureRegistries: c.InsecureRegistries, PullSecretFile: c.PullSecretFile, CAFile: c.RegistryCAFile,
	})
	if err != nil {
		return err
	}
	external := c.ExternalAddress
	if external == "" {
		external = "kubernetes.default.svc"
		if o.Standalone {
			external = cfg.Server.GenericConfig.SecureServing.Listener.Addr().String()
		}
	}
	kubeConfig := cfg.Server.GenericConfig.ClientConfig // kube-apiserver, nil in standalone mode
	err = srv.AddPostStartHook(CatalogControllerHook, func(hookCtx genericapiserver.PostStartHookContext) error {
		client, err := cfg.runner.loopbackClient(hookCtx.LoopbackClientConfig)
		if err != nil {
			return err
		}
		recorder, stopEvents, err := eventRecorder(hookCtx, kubeConfig)
		if err != nil {
			return err
		}
		// A fresh controller for every leadership term (one, without --leader-elect).
		run, err := cfg.leader.prepare("catalog", func() (controller, error) {
			return catalogcontroller.New(catalogcontroller.Options{
				Client: client, Store: cfg.Content, Puller: puller,
				TempDir:         filepath.Join(o.DataDir, "catalog-unpack"),
				ExternalAddress: external, Limits: c.Limits, Workers: c.CatalogWorkers, Recorder: recorder,
			})
		})
		if err != nil {
			stopEvents()
			return err
		}
		cfg.runner.start(hookCtx, func(ctx context.Context) {
			defer stopEvents()
			run(ctx)
		})
		return nil
	})
	if err != nil {
		return fmt.Errorf("adding the catalog controller hook: %w", err)
	}
	return nil
}

// eventRecorder records core/v1 events in kube-apiserver (kubeConfig);
// with no kube-apiserver (standalone mode) it returns a nil recorder: no
// events. The returned function stops the broadcaster.
func eventRecorder(ctx context.Context, kubeConfig *rest.Config) (record.EventRecorder, func(), error) {
	if kubeConfig == nil {
		return nil, func() {}, nil
	}
	kc, err := kubernetes.NewForConfig(kubeConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("kube-apiserver client for events: %w", err)
	}
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kc.CoreV1().Events("")})
	return b.NewRecorder(apiserver.NewScheme(), corev1.EventSource{Component: "olm-apiserver"}), b.Shutdown, nil
}
