package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"path"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/klog/v2"
)

// etcdElectionKey is the etcd key prefix of the controllers' election with
// --storage-backend=etcd3 and no target cluster:
// <etcd-prefix>/leader-election/<namespace>/<name>.
func etcdElectionKey(prefix, namespace, name string) string {
	return path.Join("/", prefix, "leader-election", namespace, name)
}

// campaignEtcd competes for leadership in etcd (the etcd concurrency
// election recipe: a session lease of LeaseDuration seconds, kept alive
// while the process runs) until ctx is done, setting gate to each won
// term. A term ends when the session is lost (the lease expired or etcd
// was unreachable for LeaseDuration); the replica then campaigns again. On
// ctx's end a held leadership is resigned so another replica takes over at
// once.
func (l *LeaderElectionOptions) campaignEtcd(ctx context.Context, cfg storagebackend.TransportConfig, prefix string, gate *leaderGate) error {
	var tlsConfig *tls.Config
	if cfg.CertFile != "" || cfg.KeyFile != "" || cfg.TrustedCAFile != "" {
		info := transport.TLSInfo{CertFile: cfg.CertFile, KeyFile: cfg.KeyFile, TrustedCAFile: cfg.TrustedCAFile}
		c, err := info.ClientConfig()
		if err != nil {
			return fmt.Errorf("leader election: etcd TLS: %w", err)
		}
		tlsConfig = c
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.ServerList, TLS: tlsConfig, DialTimeout: 20 * time.Second})
	if err != nil {
		return fmt.Errorf("leader election: etcd client: %w", err)
	}
	defer cli.Close()
	id := l.Identity
	if id == "" {
		if id, err = defaultIdentity(); err != nil {
			return err
		}
	}
	key := etcdElectionKey(prefix, l.ResourceNamespace, l.ResourceName)
	ttl := max(int(l.LeaseDuration/time.Second), 1)
	for ctx.Err() == nil {
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
		if err != nil {
			klog.ErrorS(err, "leader election: etcd session", "key", key)
			sleepCtx(ctx, l.RetryPeriod)
			continue
		}
		election := concurrency.NewElection(sess, key)
		if err := election.Campaign(ctx, id); err != nil {
			_ = sess.Close()
			if ctx.Err() == nil {
				klog.ErrorS(err, "leader election: campaign", "key", key)
				sleepCtx(ctx, l.RetryPeriod)
			}
			continue
		}
		klog.InfoS("started leading", "etcdKey", key, "identity", id)
		term, endTerm := context.WithCancel(ctx)
		gate.set(term)
		select {
		case <-sess.Done():
			klog.InfoS("lost the etcd session: no longer leading", "etcdKey", key, "identity", id)
		case <-ctx.Done():
		}
		endTerm()
		gate.set(nil)
		resignCtx, cancel := context.WithTimeout(context.Background(), l.RetryPeriod)
		_ = election.Resign(resignCtx)
		cancel()
		_ = sess.Close()
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
