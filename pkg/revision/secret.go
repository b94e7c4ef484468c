package revision

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/olm-apiserver/olm-apiserver/pkg/applier"
)

// Records is where the controller keeps revision records: Store (files in
// the data directory) or SecretStore (Secrets in the target cluster).
type Records interface {
	// Get returns the record of the ClusterExtension name, nil (and no
	// error) when there is none.
	Get(ctx context.Context, name string) (*Record, error)
	// Put writes r as the record of r.Extension.
	Put(ctx context.Context, r Record) error
	// Delete removes the record of name; a missing record is not an error.
	Delete(ctx context.Context, name string) error
	// List returns every record.
	List(ctx context.Context) ([]Record, error)
}

var (
	_ Records = (*Store)(nil)
	_ Records = (*SecretStore)(nil)
)

// Names used by SecretStore.
const (
	// DefaultNamespace is the namespace the server runs in by default
	// (artifacts/00-namespace.yaml), where the record Secrets live.
	DefaultNamespace = "olmv1-system"
	// SecretType is the type of a record Secret.
	SecretType corev1.SecretType = "olm.operatorframework.io/revision-record"
	// RecordLabel (value "true") marks record Secrets, for List.
	RecordLabel = "olm.operatorframework.io/revision-record"
	// SecretPrefix starts every record Secret's name.
	SecretPrefix = "olm-revision-"
	// DataKey is the Secret data key holding the record as JSON.
	DataKey = "record.json"
)

// ErrConflict is returned (wrapped) by SecretStore.Put and Delete when the
// Secret changed since this store last read or wrote it: another replica
// (a previous leader) wrote it. Read the record again and retry.
var ErrConflict = errors.New("revision record changed by another writer")

// SecretStore keeps each record in a Secret of the target cluster,
// <Namespace>/SecretName(extension), labelled RecordLabel=true and
// applier.OwnerLabel=<extension>, so that every replica of the server (in
// high availability, whichever is the leader) sees what was installed.
//
// Writes use optimistic concurrency: Put and Delete send the
// resourceVersion this store last saw for the Secret (from Get or its own
// Put), and Put creates the Secret only when Get found none, so a replica
// that lost the leadership cannot overwrite what the new leader wrote: it
// gets an error wrapping ErrConflict. A fresh SecretStore (one per
// leadership term) has seen nothing; Get first.
//
// Fallback, when set, is the file Store of earlier versions: Get of a record
// with no Secret reads the file, creates the Secret from it and removes the
// file (migration); a file whose Secret exists is stale and removed. List
// includes (and so migrates) file records without a Secret.
type SecretStore struct {
	client    kubernetes.Interface
	namespace string
	fallback  *Store

	mu sync.Mutex
	// seen maps a Secret name to the resourceVersion last read or written,
	// "" when Get found no Secret.
	seen map[string]string
}

// NewSecretStore returns the store of records in namespace of the cluster
// client reaches; fallback may be nil. The namespace must exist.
func NewSecretStore(client kubernetes.Interface, namespace string, fallback *Store) (*SecretStore, error) {
	if client == nil {
		return nil, fmt.Errorf("revision secret store: a client is required")
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("revision secret store: invalid namespace %q: %v", namespace, errs)
	}
	return &SecretStore{client: client, namespace: namespace, fallback: fallback, seen: map[string]string{}}, nil
}

// SecretName returns the name of the Secret holding the record of the
// ClusterExtension name: SecretPrefix+name, or, when that exceeds 253
// characters, SecretPrefix and the hex SHA-256 of name.
func SecretName(name string) string {
	if n := SecretPrefix + name; len(n) <= validation.DNS1123SubdomainMaxLength {
		return n
	}
	sum := sha256.Sum256([]byte(name))
	return SecretPrefix + hex.EncodeToString(sum[:])
}

func checkName(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("invalid ClusterExtension name %q: %v", name, errs)
	}
	return nil
}

func (s *SecretStore) remember(secret, rv string) {
	s.mu.Lock()
	s.seen[secret] = rv
	s.mu.Unlock()
}

func (s *SecretStore) lastSeen(secret string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rv, ok := s.seen[secret]
	return rv, ok
}

// decode returns the record in sec; one that does not parse or, when want
// is set, names another extension is an error naming the Secret.
func (s *SecretStore) decode(sec *corev1.Secret, want string) (*Record, error) {
	var r Record
	if err := json.Unmarshal(sec.Data[DataKey], &r); err != nil {
		return nil, fmt.Errorf("revision record Secret %s/%s does not parse: %w", sec.Namespace, sec.Name, err)
	}
	if want != "" && r.Extension != want {
		return nil, fmt.Errorf("revision record Secret %s/%s is the record of %q, not of %q", sec.Namespace, sec.Name, r.Extension, want)
	}
	return &r, nil
}

func (s *SecretStore) secret(r Record) (*corev1.Secret, error) {
	if r.Updated.IsZero() {
		r.Updated = time.Now().UTC()
	}
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      SecretName(r.Extension),
			Namespace: s.namespace,
			Labels:    map[string]string{RecordLabel: "true", applier.OwnerLabel: labelValue(r.Extension)},
		},
		Type: SecretType,
		Data: map[string][]byte{DataKey: data},
	}, nil
}

// labelValue is name when it is a valid label value, else its hash (names
// may be 253 characters, label values 63).
func labelValue(name string) string {
	if len(validation.IsValidLabelValue(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])[:63]
}

// Get returns the record of name from its Secret, migrating it from the
// fallback file when there is no Secret. Errors: an invalid name, an API
// error other than NotFound, a record that does not parse.
func (s *SecretStore) Get(ctx context.Context, name string) (*Record, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	sn := SecretName(name)
	sec, err := s.client.CoreV1().Secrets(s.namespace).Get(ctx, sn, metav1.GetOptions{})
	switch {
	case err == nil:
		r, err := s.decode(sec, name)
		if err != nil {
			return nil, err
		}
		s.remember(sn, sec.ResourceVersion)
		if s.fallback != nil {
			if err := s.fallback.Delete(ctx, name); err != nil {
				return nil, err
			}
		}
		return r, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading revision record Secret %s/%s: %w", s.namespace, sn, err)
	}
	if s.fallback == nil {
		s.remember(sn, "")
		return nil, nil
	}
	r, err := s.fallback.Get(ctx, name)
	if err != nil || r == nil {
		if err == nil {
			s.remember(sn, "")
		}
		return nil, err
	}
	// Migrate: the Secret first, then remove the file.
	want, err := s.secret(*r)
	if err != nil {
		return nil, err
	}
	created, err := s.client.CoreV1().Secrets(s.namespace).Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Another replica migrated or wrote it meanwhile: that one wins.
		return s.Get(ctx, name)
	}
	if err != nil {
		return nil, fmt.Errorf("migrating revision record of %s to Secret %s/%s: %w", name, s.namespace, sn, err)
	}
	s.remember(sn, created.ResourceVersion)
	if err := s.fallback.Delete(ctx, name); err != nil {
		return nil, err
	}
	return r, nil
}

// Put writes r into the Secret of r.Extension: an update with the
// resourceVersion last seen, or a create when Get found no Secret (or
// nothing was seen). It sets r.Updated when it is zero. A Secret changed
// (or created) by someone else since is an error wrapping ErrConflict.
func (s *SecretStore) Put(ctx context.Context, r Record) error {
	if err := checkName(r.Extension); err != nil {
		return err
	}
	sec, err := s.secret(r)
	if err != nil {
		return err
	}
	secrets := s.client.CoreV1().Secrets(s.namespace)
	var out *corev1.Secret
	if rv, _ := s.lastSeen(sec.Name); rv == "" {
		out, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = fmt.Errorf("%w: %w", ErrConflict, err)
		}
	} else {
		sec.ResourceVersion = rv
		out, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			err = fmt.Errorf("%w: %w", ErrConflict, err)
		}
	}
	if err != nil {
		s.forget(sec.Name)
		return fmt.Errorf("writing revision record Secret %s/%s: %w", s.namespace, sec.Name, err)
	}
	s.remember(sec.Name, out.ResourceVersion)
	return nil
}

func (s *SecretStore) forget(secret string) {
	s.mu.Lock()
	delete(s.seen, secret)
	s.mu.Unlock()
}

// Delete removes the Secret of name (with the resourceVersion last seen as
// precondition, when any) and the fallback file. A missing record is not
// an error; a Secret changed since it was read is one wrapping ErrConflict.
func (s *SecretStore) Delete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	sn := SecretName(name)
	var opts metav1.DeleteOptions
	if rv, _ := s.lastSeen(sn); rv != "" {
		opts.Preconditions = &metav1.Preconditions{ResourceVersion: &rv}
	}
	err := s.client.CoreV1().Secrets(s.namespace).Delete(ctx, sn, opts)
	switch {
	case apierrors.IsConflict(err):
		s.forget(sn)
		return fmt.Errorf("deleting revision record Secret %s/%s: %w: %w", s.namespace, sn, ErrConflict, err)
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("deleting revision record Secret %s/%s: %w", s.namespace, sn, err)
	}
	s.remember(sn, "")
	if s.fallback != nil {
		return s.fallback.Delete(ctx, name)
	}
	return nil
}

// List returns the records of every record Secret and, migrating them, of
// every fallback file without a Secret, in no particular order.
func (s *SecretStore) List(ctx context.Context) ([]Record, error) {
	list, err := s.client.CoreV1().Secrets(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: RecordLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing revision record Secrets in %s: %w", s.namespace, err)
	}
	var out []Record
	have := map[string]bool{}
	for i := range list.Items {
		r, err := s.decode(&list.Items[i], "")
		if err != nil {
			return nil, err
		}
		have[r.Extension] = true
		out = append(out, *r)
	}
	if s.fallback == nil {
		return out, nil
	}
	files, err := s.fallback.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if have[f.Extension] {
			continue
		}
		r, err := s.Get(ctx, f.Extension)
		if err != nil {
			return nil, err
		}
		if r != nil {
			out = append(out, *r)
		}
	}
	return out, nil
}
