// Package server holds the olm-apiserver command's options and the pipeline
// Options → Config → Complete → New → Run of k8s.io/apiserver (as in
// kubernetes' sample-apiserver), in two modes:
//
//   - aggregated (default): behind kube-apiserver's aggregation layer, with
//     delegated authentication (the requestheader client CA from
//     kube-system/extension-apiserver-authentication) and delegated
//     authorization (SubjectAccessReview);
//   - standalone (--standalone): on 127.0.0.1 only, with a self-signed
//     serving certificate and one random bearer token that has every right;
//     everybody else gets 401. A kubeconfig for that token is written to the
//     data directory.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	netutils "k8s.io/utils/net"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/apiserver"
	"github.com/olm-apiserver/olm-apiserver/pkg/content"
	generatedopenapi "github.com/olm-apiserver/olm-apiserver/pkg/generated/openapi"
	"github.com/olm-apiserver/olm-apiserver/pkg/storage/kv"
)

// defaultCertDir is k8s.io/apiserver's default --cert-dir.
var defaultCertDir = genericoptions.NewSecureServingOptions().ServerCert.CertDirectory

// StandaloneUser is the identity of the standalone bearer token.
const StandaloneUser = "olm-admin"

// Options are the command-line options of the server.
type Options struct {
	Recommended *genericoptions.RecommendedOptions

	// Standalone runs without kube-apiserver (see the package doc).
	Standalone bool
	// DataDir holds the bbolt database (olm.db, with the default
	// --storage-backend=bbolt), the catalog content, the extension revision
	// records and, in standalone mode, the serving certificate and the
	// kubeconfig.
	DataDir string
	// Catalogs configure the ClusterCatalog controller (options_controllers.go).
	Catalogs CatalogOptions
	// Extensions configure the ClusterExtension controller (options_extensions.go).
	Extensions ExtensionOptions
	// LeaderElection configures leader election of the controllers
	// (options_leaderelection.go).
	LeaderElection LeaderElectionOptions

	Out io.Writer

	// backend is the --storage-backend chosen (options_storage.go), set by
	// Complete; etcdOnlyFlag names an etcd-only flag given with bbolt;
	// bboltEncryptionConfig is --encryption-provider-config kept for bbolt.
	backend               string
	etcdOnlyFlag          string
	bboltEncryptionConfig string
	// bboltWatchCache is --watch-cache kept for bbolt (default true).
	bboltWatchCache bool
}

// NewOptions returns the defaults: aggregated mode, data in ./data, port 8443.
func NewOptions(out io.Writer) *Options {
	scheme := apiserver.NewScheme()
	codecs := serializer.NewCodecFactory(scheme)
	ro := genericoptions.NewRecommendedOptions("", codecs.LegacyCodec(olmv1.SchemeGroupVersion))
	ro.SecureServing.BindPort = 8443
	o := &Options{Recommended: ro, DataDir: "data", Catalogs: NewCatalogOptions(), Extensions: NewExtensionOptions(),
		LeaderElection: NewLeaderElectionOptions(), Out: out}
	// Objects are stored by our own bbolt backend unless --storage-backend=etcd3.
	defaultStorageBackend(o)
	return o
}

// AddFlags adds every option to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Recommended.AddFlags(fs)
	describeStorageFlags(fs)
	o.Extensions.AddFlags(fs)
	o.LeaderElection.AddFlags(fs)
	fs.BoolVar(&o.Standalone, "standalone", o.Standalone,
		"Run without kube-apiserver: listen on 127.0.0.1 only with a self-signed certificate, admit one random bearer token "+
			"with every right (reject everyone else with 401), and write a kubeconfig for it into --data-dir.")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for the bbolt database, the catalog content and (standalone) the certificate and kubeconfig.")
	o.Catalogs.AddFlags(fs)
}

// Complete fills in what depends on other options: standalone mode binds
// 127.0.0.1 and turns off everything that needs kube-apiserver.
func (o *Options) Complete() error {
	o.completeStorage()
	if o.Standalone {
		o.Recommended.SecureServing.BindAddress = netutils.ParseIPSloppy("127.0.0.1")
		o.Recommended.Authentication = nil
		o.Recommended.Authorization = nil
		o.Recommended.CoreAPI = nil
		o.Recommended.Admission = nil
		o.Recommended.Features.EnablePriorityAndFairness = false
	}
	// Self-signed certificates (when no --tls-cert-file is given) go into the
	// data directory unless --cert-dir says otherwise.
	if cd := &o.Recommended.SecureServing.ServerCert.CertDirectory; *cd == "" || *cd == defaultCertDir {
		*cd = filepath.Join(o.DataDir, "certs")
	}
	return nil
}

// Validate reports invalid combinations of options.
func (o *Options) Validate() error {
	var errs []error
	errs = append(errs, o.Recommended.Validate()...)
	errs = append(errs, o.Extensions.Validate()...)
	errs = append(errs, o.validateStorage()...)
	errs = append(errs, o.LeaderElection.Validate()...)
	if o.DataDir == "" {
		errs = append(errs, fmt.Errorf("--data-dir must not be empty"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid options: %v", errs)
	}
	return nil
}

// Config is the result of Options.Config: the server configuration and
// what must be closed when the server stops.
type Config struct {
	Server *apiserver.Config
	// DB is the bbolt database (nil with --storage-backend=etcd3).
	DB *kv.DB
	// Content is the FBC content store under <data-dir>/content, served by
	// the clustercatalogs/content subresource and filled by the catalog
	// controller.
	Content *content.Store
	// Kubeconfig is the path of the standalone kubeconfig ("" otherwise).
	Kubeconfig string
	// leader gates the controllers with --leader-elect (nil: always run).
	leader *leaderGate
	// runner runs the goroutines of the post-start hooks and stops them
	// before the HTTP server stops (options_shutdown.go).
	runner *controllerRunner
}

// Config opens the storage and builds the server configuration. It fails
// when the data directory cannot be created, the database cannot be opened
// (another process holds it, or it is corrupt or not a bbolt file), or the
// certificates cannot be made.
func (o *Options) Config() (*Config, error) {
	o.completeStorage() // idempotent; for callers that skipped Complete
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	alternateIPs := []net.IP{netutils.ParseIPSloppy("127.0.0.1")}
	if err := o.Recommended.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, alternateIPs); err != nil {
		return nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}

	scheme := apiserver.NewScheme()
	codecs := serializer.NewCodecFactory(scheme)
	gc := genericapiserver.NewRecommendedConfig(codecs)
	namer := openapi.NewDefinitionNamer(scheme)
	gc.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer)
	gc.OpenAPIConfig.Info.Title = "olm-apiserver"
	gc.OpenAPIConfig.Info.Version = olmv1.SchemeGroupVersion.Version
	gc.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	gc.OpenAPIV3Config.Info.Title = "olm-apiserver"
	gc.OpenAPIV3Config.Info.Version = olmv1.SchemeGroupVersion.Version
	gc.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	gc.FeatureGate = utilfeature.DefaultFeatureGate
	// Reading a large catalog's content must not be cut off by the request timeout.
	gc.LongRunningFunc = genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch"), sets.NewString("content"))
	// Out-of-range int32/int64 values get 422 before they reach the decoder.
	gc.BuildHandlerChainFunc = apiserver.BuildHandlerChain

	if err := o.Recommended.ApplyTo(gc); err != nil {
		// The stock delegated authn/authz options do not wrap
		// rest.ErrNotInCluster, so its message is what can be matched.
		if !o.Standalone && strings.Contains(err.Error(), rest.ErrNotInCluster.Error()) {
			return nil, fmt.Errorf("%w\naggregated mode (the default) delegates authentication and authorization to kube-apiserver: "+
				"run olm-apiserver in the cluster, or pass --kubeconfig (with --authentication-kubeconfig and --authorization-kubeconfig), "+
				"or run it on its own with --standalone", err)
		}
		return nil, err
	}

	var kubeconfig string
	if o.Standalone {
		token, err := randomToken()
		if err != nil {
			return nil, err
		}
		admin := &user.DefaultInfo{Name: StandaloneUser, Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
		gc.Authentication.Authenticator = bearertoken.New(tokenfile.New(map[string]*user.DefaultInfo{token: admin}))
		gc.Authorization.Authorizer = authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)
		kubeconfig, err = o.writeKubeconfig(token, gc.SecureServing.Listener.Addr().String())
		if err != nil {
			return nil, err
		}
	}

	restOptions, db, err := o.openStorage(gc, codecs.LegacyCodec(olmv1.SchemeGroupVersion))
	if err != nil {
		return nil, err
	}
	store, err := content.Open(filepath.Join(o.DataDir, "content"), content.Options{})
	if err != nil {
		closeDB(db)
		return nil, err
	}
	runner := newControllerRunner()
	leader, err := o.addLeaderElection(gc, runner)
	if err != nil {
		closeDB(db)
		return nil, err
	}
	if err := o.addExtensionController(gc, store, leader, runner); err != nil {
		closeDB(db)
		return nil, err
	}
	served, err := o.addContentFollower(gc, store, leader, runner)
	if err != nil {
		closeDB(db)
		return nil, err
	}

	return &Config{
		Server: &apiserver.Config{
			GenericConfig: gc,
			Scheme:        scheme,
			Codecs:        codecs,
			ExtraConfig: apiserver.ExtraConfig{
				RESTOptionsGetter: restOptions,
				Content:           served,
			},
		},
		DB:         db,
		Content:    store,
		Kubeconfig: kubeconfig,
		leader:     leader,
		runner:     runner,
	}, nil
}

// closeDB closes the bbolt database, if there is one.
func closeDB(db *kv.DB) {
	if db != nil {
		_ = db.Close()
	}
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating the standalone token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// writeKubeconfig writes <data-dir>/kubeconfig for the standalone token,
// trusting the server's self-signed certificate, and returns its path.
func (o *Options) writeKubeconfig(token, addr string) (string, error) {
	ss := o.Recommended.SecureServing
	ca, err := os.ReadFile(ss.ServerCert.CertKey.CertFile)
	if err != nil {
		return "", fmt.Errorf("reading the serving certificate for the kubeconfig: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["olm-apiserver"] = &clientcmdapi.Cluster{
		Server:                   "https://" + addr,
		CertificateAuthorityData: ca,
	}
	cfg.AuthInfos[StandaloneUser] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["olm-apiserver"] = &clientcmdapi.Context{Cluster: "olm-apiserver", AuthInfo: StandaloneUser}
	cfg.CurrentContext = "olm-apiserver"
	path, err := filepath.Abs(filepath.Join(o.DataDir, "kubeconfig"))
	if err != nil {
		return "", err
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("writing kubeconfig: %w", err)
	}
	return path, nil
}

// Run builds the server from the options and serves until ctx is done.
// When ctx is done the controllers, the content follower and leader
// election are stopped first (the pre-shutdown hook StopControllersHook,
// waiting at most stopControllersTimeout), then the HTTP server; the
// database is closed after both have stopped.
func (o *Options) Run(ctx context.Context) error {
	cfg, err := o.Config()
	if err != nil {
		return err
	}
	defer closeDB(cfg.DB)
	defer cfg.runner.stop(context.Background()) // before the database is closed
	srv, err := cfg.Server.New()
	if err != nil {
		return err
	}
	if err := o.startCatalogController(srv.GenericAPIServer, cfg); err != nil {
		return err
	}
	err = srv.GenericAPIServer.AddPreShutdownHook(StopControllersHook, func() error {
		stopCtx, cancel := context.WithTimeout(context.Background(), stopControllersTimeout)
		defer cancel()
		cfg.runner.stop(stopCtx)
		return nil
	})
	if err != nil {
		return err
	}
	if cfg.Kubeconfig != "" {
		fmt.Fprintf(o.Out, "standalone olm-apiserver on https://%s\nkubeconfig: %s\n",
			cfg.Server.GenericConfig.SecureServing.Listener.Addr(), cfg.Kubeconfig)
	}
	return srv.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}
