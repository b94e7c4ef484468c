package bboltstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"
)

// errKMSUnsupported is returned by LoadEncryptionConfig for a kms provider.
var errKMSUnsupported = errors.New("kms providers are not supported with the bbolt storage backend " +
	"(use aescbc, aesgcm or secretbox, or --storage-backend=etcd3 for kms)")

// LoadEncryptionConfig reads the encryption-at-rest configuration at path,
// the file format of kube-apiserver's --encryption-provider-config
// (apiserver.config.k8s.io/v1 EncryptionConfiguration), with the loader of
// k8s.io/apiserver/pkg/server/options/encryptionconfig (v0.37.2, without
// automatic reload), and returns its per-resource transformers for
// NewResourceRESTOptionsGetter.
//
// Semantics are the library's: a resource listed under resources[].resources
// (e.g. "clustercatalogs.olm.operatorframework.io", or a wildcard such as
// "*.olm.operatorframework.io") is written with its first provider and read
// with whichever of its providers matches the stored prefix; a value read
// through another than the first provider (e.g. plaintext through a trailing
// identity provider, after encryption was turned on) is reported stale and
// rewritten encrypted on its next update. Resources not listed use the
// identity transformer, which refuses to read encrypted ("k8s:enc:") values.
//
// Providers: aescbc, aesgcm, secretbox and identity work with bbolt. kms
// (v1 and v2) is refused: bbolt has no KMS plugin health checks, and the
// loader runs with an already cancelled context so that a kms provider in the
// file leaves no plugin connection or probe running.
//
// Errors name path: the file cannot be read or is empty, it does not decode
// as an EncryptionConfiguration, it fails the library's validation (e.g. a
// key of the wrong length, no providers), or it uses kms.
func LoadEncryptionConfig(path string) (value.ResourceTransformers, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // only kms providers use the context; they are refused below
	cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, "")
	if err != nil {
		if strings.Contains(err.Error(), path) { // read and decode errors do
			return nil, err
		}
		return nil, fmt.Errorf("encryption provider configuration file %q: %w", path, err)
	}
	// Without reload the loader returns health checks for kms probes only.
	if len(cfg.HealthChecks) > 0 || cfg.KMSCloseGracePeriod > 0 {
		return nil, fmt.Errorf("encryption provider configuration file %q: %w", path, errKMSUnsupported)
	}
	return encryptionconfig.StaticTransformers(cfg.Transformers), nil
}
