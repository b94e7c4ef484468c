package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// LeaderElectionHook is the name of the post-start hook that campaigns for
// the controllers' Lease when --leader-elect is set.
const LeaderElectionHook = "olm-leader-election"

// LeaderElectionOptions configure leader election of the ClusterCatalog and
// ClusterExtension controllers. With Enabled, several replicas may run:
// every replica serves the API (and the content it has), but only the
// replica holding the coordination.k8s.io/v1 Lease
// <ResourceNamespace>/<ResourceName> in the target cluster runs the
// controllers (client-go tools/leaderelection); with no target cluster and
// --storage-backend=etcd3 the election is held in etcd instead (see
// campaignEtcd). Without it (the default)
// the controllers always run: one replica only.
type LeaderElectionOptions struct {
	// Enabled turns leader election on (--leader-elect, default false).
	Enabled bool
	// ResourceName and ResourceNamespace name the Lease.
	ResourceName      string
	ResourceNamespace string
	// LeaseDuration is how long a non-leader waits after the last renewal
	// before taking the Lease over; RenewDeadline is how long the leader
	// keeps retrying a renewal before it gives up leading; RetryPeriod is
	// the interval between attempts.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// Identity is this replica's holder identity ("" = <hostname>_<random>).
	Identity string
}

// NewLeaderElectionOptions returns the defaults: off; Lease
// olmv1-system/olm-apiserver; 15 s lease, 10 s renew deadline, 2 s retry
// (the kube-controller-manager defaults).
func NewLeaderElectionOptions() LeaderElectionOptions {
	return LeaderElectionOptions{
		ResourceName:      "olm-apiserver",
		ResourceNamespace: "olmv1-system",
		LeaseDuration:     15 * time.Second,
		RenewDeadline:     10 * time.Second,
		RetryPeriod:       2 * time.Second,
	}
}

// AddFlags adds the leader election flags to fs.
func (l *LeaderElectionOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&l.Enabled, "leader-elect", l.Enabled,
		"Run the catalog and extension controllers only while holding a coordination.k8s.io Lease in the target cluster, "+
			"so that several replicas can run (every replica serves the API). Needs --storage-backend=etcd3 for shared objects; "+
			"without a target cluster the election is held in etcd (key <etcd-prefix>/leader-election/<namespace>/<name>).")
	fs.StringVar(&l.ResourceName, "leader-elect-resource-name", l.ResourceName, "Name of the Lease used for leader election.")
	fs.StringVar(&l.ResourceNamespace, "leader-elect-resource-namespace", l.ResourceNamespace, "Namespace of the Lease used for leader election.")
	fs.DurationVar(&l.LeaseDuration, "leader-elect-lease-duration", l.LeaseDuration,
		"How long the other replicas wait after the leader's last renewal before taking over.")
	fs.DurationVar(&l.RenewDeadline, "leader-elect-renew-deadline", l.RenewDeadline,
		"How long the leader retries renewing before it stops its controllers; less than the lease duration.")
	fs.DurationVar(&l.RetryPeriod, "leader-elect-retry-period", l.RetryPeriod, "Interval between attempts to acquire or renew the Lease.")
	fs.StringVar(&l.Identity, "leader-elect-identity", l.Identity, "Holder identity of this replica (default <hostname>_<random>).")
}

// Validate reports inconsistent durations and an empty Lease name.
func (l *LeaderElectionOptions) Validate() []error {
	if !l.Enabled {
		return nil
	}
	var errs []error
	if l.ResourceName == "" || l.ResourceNamespace == "" {
		errs = append(errs, fmt.Errorf("--leader-elect-resource-name and --leader-elect-resource-namespace must not be empty"))
	}
	if l.RetryPeriod <= 0 || l.RenewDeadline <= l.RetryPeriod || l.LeaseDuration <= l.RenewDeadline {
		errs = append(errs, fmt.Errorf("leader election needs 0 < --leader-elect-retry-period < --leader-elect-renew-deadline < --leader-elect-lease-duration"))
	}
	return errs
}

// leaderGate tells the controllers when this replica leads. Without leader
// election it is nil and the controllers always run.
type leaderGate struct {
	mu      sync.Mutex
	term    context.Context // the current term; nil when not leading
	changed chan struct{}   // closed (and replaced) when term changes
}

func newLeaderGate() *leaderGate { return &leaderGate{changed: make(chan struct{})} }

func (g *leaderGate) set(term context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.term = term
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *leaderGate) current() (context.Context, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.term, g.changed
}

// isLeading reports whether this replica holds the Lease now (false for a
// nil gate).
func (g *leaderGate) isLeading() bool {
	if g == nil {
		return false
	}
	term, _ := g.current()
	return term != nil && term.Err() == nil
}

// restartDelay is how long runWhileLeading waits before starting a
// controller again that failed while this replica still leads.
const restartDelay = 5 * time.Second

// controller is what the catalog and extension controllers have in common.
type controller interface {
	Run(ctx context.Context) error
}

// prepare returns the function that runs the controller made by build.
// Without leader election (nil gate) build is called now, its error is
// returned, and the function runs that controller until its context is
// done. With leader election build is called for every term in which this
// replica leads (a fresh controller per term; see runWhileLeading).
func (g *leaderGate) prepare(name string, build func() (controller, error)) (func(context.Context), error) {
	if g == nil {
		ctrl, err := build()
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) {
			if err := ctrl.Run(ctx); err != nil {
				klog.ErrorS(err, "controller stopped", "controller", name)
			}
		}, nil
	}
	return func(ctx context.Context) {
		g.runWhileLeading(ctx, name, func(ctx context.Context) error {
			ctrl, err := build()
			if err != nil {
				return err
			}
			return ctrl.Run(ctx)
		})
	}, nil
}

// runWhileLeading calls start for every term in which this replica leads,
// with a context cancelled when the term or ctx ends, until ctx is done.
// When start fails while the term goes on it is called again after
// restartDelay.
func (g *leaderGate) runWhileLeading(ctx context.Context, name string, start func(context.Context) error) {
	for ctx.Err() == nil {
		term, changed := g.current()
		if term == nil || term.Err() != nil {
			select {
			case <-ctx.Done():
			case <-changed:
			}
			continue
		}
		klog.InfoS("leading: starting controller", "controller", name)
		runCtx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(term, cancel)
		err := start(runCtx)
		stop()
		cancel()
		if err != nil {
			klog.ErrorS(err, "controller stopped", "controller", name)
		}
		if term.Err() == nil && ctx.Err() == nil {
			// Failed while still leading: try again later in this term.
			select {
			case <-ctx.Done():
			case <-term.Done():
			case <-time.After(restartDelay):
			}
			continue
		}
		klog.InfoS("no longer leading: controller stopped", "controller", name)
	}
}

// campaign competes for the Lease in the cluster of target until ctx is
// done, setting gate to each won term. A term ends when a renewal fails
// within RenewDeadline; the replica then campaigns again. On ctx's end a
// held Lease is released so another replica takes over at once.
func (l *LeaderElectionOptions) campaign(ctx context.Context, target *rest.Config, gate *leaderGate) error {
	kc, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(target), "olm-apiserver-leader-election"))
	if err != nil {
		return fmt.Errorf("leader election client: %w", err)
	}
	id := l.Identity
	if id == "" {
		if id, err = defaultIdentity(); err != nil {
			return err
		}
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, l.ResourceNamespace, l.ResourceName,
		kc.CoreV1(), kc.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   l.LeaseDuration,
			RenewDeadline:   l.RenewDeadline,
			RetryPeriod:     l.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            l.ResourceNamespace + "/" + l.ResourceName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(term context.Context) {
					klog.InfoS("started leading", "lease", l.ResourceNamespace+"/"+l.ResourceName, "identity", id)
					gate.set(term)
				},
				OnStoppedLeading: func() { gate.set(nil) },
				OnNewLeader: func(holder string) {
					klog.InfoS("controllers' leader", "lease", l.ResourceNamespace+"/"+l.ResourceName, "holder", holder)
				},
			},
		})
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		le.Run(ctx)
	}
	return nil
}

func defaultIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("leader election identity: %w", err)
	}
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("leader election identity: %w", err)
	}
	return host + "_" + hex.EncodeToString(b), nil
}

// addLeaderElection, with --leader-elect, registers the post-start hook
// that campaigns for the Lease in the target cluster (or, without a target
// cluster and with --storage-backend=etcd3, for the etcd election key
// <etcd-prefix>/leader-election/<namespace>/<name>) and returns the gate the
// controllers wait on; without --leader-elect, nil. It fails when there is
// neither a target cluster nor etcd. runner runs and stops the campaign (a
// held Lease is released when it stops).
func (o *Options) addLeaderElection(gc *genericapiserver.RecommendedConfig, runner *controllerRunner) (*leaderGate, error) {
	if !o.LeaderElection.Enabled {
		return nil, nil
	}
	target, err := o.targetCluster(gc)
	if err != nil {
		return nil, err
	}
	gate := newLeaderGate()
	l := o.LeaderElection
	var campaign func(context.Context) error
	switch {
	case target != nil:
		campaign = func(ctx context.Context) error { return l.campaign(ctx, target, gate) }
	case o.backend == BackendEtcd3 && o.Recommended.Etcd != nil:
		storage := o.Recommended.Etcd.StorageConfig
		campaign = func(ctx context.Context) error { return l.campaignEtcd(ctx, storage.Transport, storage.Prefix, gate) }
	default:
		return nil, fmt.Errorf("--leader-elect needs a target cluster for its Lease (--target-kubeconfig, or aggregated mode) or --storage-backend=etcd3")
	}
	return gate, gc.AddPostStartHook(LeaderElectionHook, func(hc genericapiserver.PostStartHookContext) error {
		runner.start(hc, func(ctx context.Context) {
			if err := campaign(ctx); err != nil {
				klog.ErrorS(err, "leader election stopped: the controllers do not run on this replica")
			}
		})
		return nil
	})
}
