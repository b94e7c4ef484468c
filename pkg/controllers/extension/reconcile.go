package extension

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/applier"
	"github.com/olm-apiserver/olm-apiserver/pkg/image"
	"github.com/olm-apiserver/olm-apiserver/pkg/preflight"
	"github.com/olm-apiserver/olm-apiserver/pkg/render"
	"github.com/olm-apiserver/olm-apiserver/pkg/render/certs"
	"github.com/olm-apiserver/olm-apiserver/pkg/resolve"
	"github.com/olm-apiserver/olm-apiserver/pkg/revision"
)

func everything() labels.Selector { return labels.Everything() }

// errRetry makes the worker re-queue with backoff after status was written.
var errRetry = errors.New("retry")

// sync reconciles the ClusterExtension name. It returns when to look again
// (0: only on events) and errRetry (or another error) to retry with backoff.
func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	cached, err := c.exts.Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	ce := cached.DeepCopy()
	if ce.DeletionTimestamp != nil {
		return c.uninstall(ctx, ce)
	}
	if !slices.Contains(ce.Finalizers, Finalizer) {
		ce.Finalizers = append(ce.Finalizers, Finalizer)
		if _, err := c.cfg.Client.OlmV1().ClusterExtensions().Update(ctx, ce, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("adding finalizer: %w", err)
		}
		// The update event brings us back.
		return 0, nil
	}

	o, after := c.install(ctx, ce)
	deadline := setStatusCopy(ce, o, c.cfg.Now())
	c.recordEvents(cached, ce, o)
	if err := c.writeStatus(ctx, cached, ce); err != nil {
		return 0, err
	}
	if o.reason == olmv1.ReasonRetrying {
		if !deadline.IsZero() {
			// Look again when the deadline passes, whatever the backoff.
			c.queue.AddAfter(name, deadline.Sub(c.cfg.Now())+time.Second)
		}
		return 0, errRetry
	}
	if after == 0 {
		// Blocked: a human fixes what blocks it (e.g. removes a conflicting
		// object) without an event reaching us, so look again periodically.
		after = c.cfg.ResyncPeriod
	}
	return after, nil
}

func setStatusCopy(ce *olmv1.ClusterExtension, o outcome, now time.Time) time.Time {
	return setStatus(&ce.Status, ce.Generation, ce.Spec.ProgressDeadlineMinutes, o, now)
}

// writeStatus updates status when it differs from what the cache holds.
func (c *Controller) writeStatus(ctx context.Context, cached, ce *olmv1.ClusterExtension) error {
	if equality.Semantic.DeepEqual(cached.Status, ce.Status) {
		return nil
	}
	_, err := c.cfg.Client.OlmV1().ClusterExtensions().UpdateStatus(ctx, ce, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		// The cache was behind: put the same status on the current object,
		// unless its spec changed meanwhile (then reconcile again).
		fresh, gerr := c.cfg.Client.OlmV1().ClusterExtensions().Get(ctx, ce.Name, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("updating status: %w", gerr)
		}
		if fresh.Generation != ce.Generation || fresh.UID != ce.UID {
			return fmt.Errorf("updating status: %w", err)
		}
		fresh.Status = ce.Status
		_, err = c.cfg.Client.OlmV1().ClusterExtensions().UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	return nil
}

// install runs steps 2-8 of the package doc and says what happened, and
// after how long to reconcile again when it succeeded.
func (c *Controller) install(ctx context.Context, ce *olmv1.ClusterExtension) (outcome, time.Duration) {
	log := klog.FromContext(ctx).WithValues("clusterExtension", ce.Name)
	rec, err := c.records.Get(ctx, ce.Name)
	if err != nil {
		o := retrying("reading the installed revision: %v", err)
		o.deprecation = deprecationUnknown("installed revision unreadable")
		return o, 0
	}
	if rec == nil || rec.UID != string(ce.UID) {
		// A ClusterExtension of the same name whose uninstall never finished
		// may have left objects: keep them to prune, but install afresh.
		prev := rec
		rec = &revision.Record{Extension: ce.Name, UID: string(ce.UID)}
		if prev != nil {
			rec.Objects = prev.Objects
		}
	}
	installed := rec.Installed

	// Resolve.
	if ce.Spec.Source.Catalog == nil {
		o := blocked("spec.source.catalog is required for sourceType %q", ce.Spec.Source.SourceType)
		o.installed = installed
		o.deprecation = deprecationUnknown("no catalog source")
		return o, 0
	}
	res, err := resolve.Resolve(ctx, c.catalogInfos(), c.cfg.Content, c.request(ctx, ce, installed))
	fail := func(o outcome) (outcome, time.Duration) {
		o.installed = installed
		o.deprecation = res.Deprecation
		return o, 0
	}
	if err != nil {
		var ref *resolve.Refusal
		if errors.As(err, &ref) {
			if ref.ProgressingReason() == olmv1.ReasonBlocked {
				return fail(blocked("%s", ref.Message))
			}
			return fail(retrying("%s", ref.Message))
		}
		return fail(retrying("resolving package %q: %v", ce.Spec.Source.Catalog.PackageName, err))
	}
	b := res.Bundle
	label := "bundle " + bundleLabel(b.Name, b.Version)
	if c.applier == nil {
		return fail(blocked("%s", NoTargetMessage))
	}

	// Pull and unpack.
	known := ""
	if installed != nil && installed.Image == b.Image {
		known = installed.Digest
	}
	ub, err := c.unpacker.Unpack(ctx, b.Image, known)
	if err != nil {
		if image.KindOf(err) == image.Terminal {
			return fail(blocked("%s: unpacking image %s: %v", label, b.Image, err))
		}
		return fail(retrying("%s: unpacking image %s: %v", label, b.Image, err))
	}

	// Render, keeping the webhook certificates already on the cluster.
	c.rememberCerts(ctx, rec.Objects)
	bundle, err := render.Load(os.DirFS(ub.Dir))
	if err != nil {
		return fail(blocked("%s: %v", label, err))
	}
	var cfgJSON []byte
	if ce.Spec.Config != nil && ce.Spec.Config.Inline != nil {
		if cfgJSON, err = ce.Spec.Config.Inline.MarshalJSON(); err != nil {
			return fail(blocked("%s: spec.config.inline: %v", label, err))
		}
	}
	objs, err := render.Render(bundle, render.Options{InstallNamespace: ce.Spec.Namespace, Config: cfgJSON, CertProvider: c.certs})
	if err != nil {
		return fail(blocked("%s: %v", label, err))
	}

	// Preflight.
	if msg, err := c.preflight(ctx, enforcement(ce), objs); err != nil {
		return fail(retrying("%s: CRD upgrade-safety preflight: %v", label, err))
	} else if msg != "" {
		return fail(blocked("%s: CRD upgrade safety preflight failed:\n%s", label, msg))
	}

	// Record what may be on the cluster before touching it.
	newRefs := make([]applier.Ref, len(objs))
	for i := range objs {
		newRefs[i] = applier.RefOf(&objs[i])
	}
	pending := *rec
	pending.Objects = applier.Union(rec.Objects, newRefs)
	if err := c.putRecord(ctx, rec, pending); err != nil {
		return fail(retrying("%s: %v", label, err))
	}
	*rec = pending

	// Apply and prune.
	if _, err := c.applier.Apply(ctx, ce.Name, objs); err != nil {
		var conflict *applier.ConflictError
		if errors.As(err, &conflict) {
			return fail(blocked("%s: %v", label, err))
		}
		return fail(retrying("%s: %v", label, err))
	}
	skipped, err := c.applier.Delete(ctx, ce.Name, applier.PruneSet(rec.Objects, newRefs))
	if err != nil {
		return fail(retrying("%s: pruning objects of the previous revision: %v", label, err))
	}
	if len(skipped) > 0 {
		log.Info("not pruning objects that another owner took over", "objects", skipped)
	}
	done := revision.Record{
		Extension: ce.Name,
		UID:       string(ce.UID),
		Installed: &revision.Bundle{
			Name: b.Name, Package: b.Package, Version: b.Version, Release: b.Release,
			Image: b.Image, Digest: ub.Digest, ProvidedGVKs: b.ProvidedGVKs,
		},
		Objects: newRefs,
	}
	if err := c.putRecord(ctx, rec, done); err != nil {
		return fail(retrying("%s: %v", label, err))
	}
	o := outcome{installed: done.Installed, reason: olmv1.ReasonSucceeded, deprecation: res.Deprecation}
	if installed == nil || installed.Name != b.Name || installed.Digest != ub.Digest {
		log.Info("installed bundle", "bundle", b.Name, "version", b.Version, "digest", ub.Digest)
		o.event, o.eventMessage = "Installed", "Installed "+label
		if installed != nil {
			o.event, o.eventMessage = "Upgraded", fmt.Sprintf("Moved from bundle %s to %s", bundleLabel(installed.Name, installed.Version), label[len("bundle "):])
		}
	}
	if installed == nil || installed.Name != b.Name {
		// BundleDeprecated is about the installed bundle, which just changed.
		again, _ := resolve.Resolve(ctx, c.catalogInfos(), c.cfg.Content, c.request(ctx, ce, done.Installed))
		o.deprecation = again.Deprecation
	}
	after := c.cfg.ResyncPeriod
	if notAfter, ok, _ := render.CertificateNotAfter(objs); ok {
		// Re-render well before a webhook certificate expires; the provider
		// renews it within its renewal window.
		if d := notAfter.Sub(c.cfg.Now()) / 3; d < after {
			after = max(d, time.Minute)
		}
	}
	return o, after
}

// putRecord writes next unless it equals cur (no fsync for a no-op resync).
func (c *Controller) putRecord(ctx context.Context, cur *revision.Record, next revision.Record) error {
	if reflect.DeepEqual(cur.Installed, next.Installed) && slices.Equal(cur.Objects, next.Objects) && cur.UID == next.UID {
		return nil
	}
	if err := c.records.Put(ctx, next); err != nil {
		return fmt.Errorf("recording the installed revision: %w", err)
	}
	return nil
}

// preflight runs the CRD upgrade-safety check of every CRD in objs against
// the live CRD and returns the report ("" when safe).
func (c *Controller) preflight(ctx context.Context, enf preflight.Enforcement, objs []unstructured.Unstructured) (string, error) {
	if enf == preflight.EnforcementNone {
		return "", nil
	}
	var findings []preflight.Finding
	for i := range objs {
		ref := applier.RefOf(&objs[i])
		if !ref.IsCRD() {
			continue
		}
		live, err := c.applier.Get(ctx, ref)
		if err != nil {
			return "", err
		}
		if live == nil {
			continue
		}
		var oldCRD, newCRD apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &oldCRD); err != nil {
			return "", fmt.Errorf("reading live %s: %w", ref, err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[i].Object, &newCRD); err != nil {
			return "", fmt.Errorf("reading bundle %s: %w", ref, err)
		}
		f, err := preflight.Run(enf, &oldCRD, &newCRD)
		if err != nil {
			return "", err
		}
		findings = append(findings, f...)
	}
	// Leave room for the message prefix within the condition limit.
	return preflight.Report(findings, preflight.MaxConditionMessageBytes-1024), nil
}

func enforcement(ce *olmv1.ClusterExtension) preflight.Enforcement {
	if i := ce.Spec.Install; i != nil && i.Preflight != nil && i.Preflight.CRDUpgradeSafety != nil {
		return preflight.Enforcement(i.Preflight.CRDUpgradeSafety.Enforcement)
	}
	return preflight.EnforcementStrict
}

// catalogInfo is what resolution reads of a ClusterCatalog.
func catalogInfo(cc *olmv1.ClusterCatalog) resolve.CatalogInfo {
	serving := false
	if cond := findCondition(cc.Status.Conditions, olmv1.TypeServing); cond != nil {
		serving = cond.Status == metav1.ConditionTrue
	}
	return resolve.CatalogInfo{
		Name:        cc.Name,
		Priority:    cc.Spec.Priority,
		Serving:     serving,
		Unavailable: cc.Spec.AvailabilityMode == olmv1.AvailabilityModeUnavailable,
	}
}

func (c *Controller) catalogInfos() []resolve.CatalogInfo {
	list, err := c.catalogs.List(everything())
	if err != nil {
		return nil
	}
	out := make([]resolve.CatalogInfo, 0, len(list))
	for _, cc := range list {
		info := catalogInfo(cc)
		info.Labels = cc.Labels
		out = append(out, info)
	}
	return out
}

// request builds the resolution request of ce.
func (c *Controller) request(ctx context.Context, ce *olmv1.ClusterExtension, installed *revision.Bundle) resolve.Request {
	f := ce.Spec.Source.Catalog
	req := resolve.Request{
		PackageName:             f.PackageName,
		VersionRange:            f.Version,
		Channels:                f.Channels,
		Selector:                f.Selector,
		UpgradeConstraintPolicy: resolve.UpgradeConstraintPolicy(f.UpgradeConstraintPolicy),
	}
	if installed != nil {
		req.Installed = &resolve.InstalledBundle{Name: installed.Name, Version: installed.Version, Release: installed.Release}
	}
	others, err := c.records.List(ctx)
	if err == nil {
		for _, r := range others {
			if r.Extension == ce.Name || r.Installed == nil {
				continue
			}
			req.OtherExtensions = append(req.OtherExtensions, resolve.InstalledExtension{
				Name: r.Extension, Package: r.Installed.Package, Version: r.Installed.Version, ProvidedGVKs: r.Installed.ProvidedGVKs,
			})
		}
	}
	return req
}

// uninstall deletes every recorded object, waits until they are gone, then
// deletes the record and removes the finalizer.
func (c *Controller) uninstall(ctx context.Context, ce *olmv1.ClusterExtension) (time.Duration, error) {
	if !slices.Contains(ce.Finalizers, Finalizer) {
		return 0, nil
	}
	rec, err := c.records.Get(ctx, ce.Name)
	if err != nil {
		return 0, err
	}
	if rec != nil && len(rec.Objects) > 0 {
		if c.applier == nil {
			return 0, c.uninstallStatus(ctx, ce, "cannot uninstall: "+NoTargetMessage)
		}
		refs := applier.PruneSet(rec.Objects, nil)
		if _, err := c.applier.Delete(ctx, ce.Name, refs); err != nil {
			_ = c.uninstallStatus(ctx, ce, "uninstalling: "+err.Error())
			return 0, err
		}
		var left []string
		for _, r := range refs {
			u, err := c.applier.Get(ctx, r)
			if err != nil {
				return 0, err
			}
			if u != nil && u.GetLabels()[applier.OwnerLabel] == ce.Name {
				left = append(left, r.String())
			}
		}
		if len(left) > 0 {
			_ = c.uninstallStatus(ctx, ce, "uninstalling: waiting for deletion of "+strings.Join(left, ", "))
			return time.Second, nil
		}
		if err := c.records.Delete(ctx, ce.Name); err != nil {
			return 0, err
		}
	} else if rec != nil {
		if err := c.records.Delete(ctx, ce.Name); err != nil {
			return 0, err
		}
	}
	ce.Finalizers = slices.DeleteFunc(ce.Finalizers, func(f string) bool { return f == Finalizer })
	if _, err := c.cfg.Client.OlmV1().ClusterExtensions().Update(ctx, ce, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("removing finalizer: %w", err)
	}
	klog.FromContext(ctx).Info("uninstalled", "clusterExtension", ce.Name)
	if c.cfg.Recorder != nil {
		c.cfg.Recorder.Event(ce, corev1.EventTypeNormal, "Uninstalled", "Deleted every object of the extension")
	}
	return 0, nil
}

// uninstallStatus reports an uninstall in progress or stuck as Progressing
// True/Retrying.
func (c *Controller) uninstallStatus(ctx context.Context, ce *olmv1.ClusterExtension, msg string) error {
	cp := ce.DeepCopy()
	setCondition(&cp.Status, metav1.Condition{Type: olmv1.TypeProgressing, Status: metav1.ConditionTrue, Reason: olmv1.ReasonRetrying, Message: msg},
		ce.Generation, metav1.NewTime(c.cfg.Now()))
	if err := c.writeStatus(ctx, ce, cp); err != nil {
		return err
	}
	return errRetry
}

// recordEvents records a Normal event for an install or upgrade, and a
// Warning when Progressing turns Blocked or Retrying or its message changes.
func (c *Controller) recordEvents(old, ce *olmv1.ClusterExtension, o outcome) {
	if c.cfg.Recorder == nil {
		return
	}
	if o.event != "" {
		c.cfg.Recorder.Event(ce, corev1.EventTypeNormal, o.event, o.eventMessage)
	}
	if o.reason == olmv1.ReasonSucceeded {
		return
	}
	prev, cur := findCondition(old.Status.Conditions, olmv1.TypeProgressing), findCondition(ce.Status.Conditions, olmv1.TypeProgressing)
	if cur != nil && (prev == nil || prev.Reason != cur.Reason || prev.Message != cur.Message) {
		c.cfg.Recorder.Event(ce, corev1.EventTypeWarning, cur.Reason, cur.Message)
	}
}

// rememberCerts gives the certificate provider the webhook serving
// certificates of a previous render that are still on the cluster (Secrets
// "<service>-cert" carrying render.AnnotationCertNotAfter), so that after a
// restart the same certificates are rendered again instead of new ones.
// Certificates it cannot read or that the provider refuses are skipped: a
// new one is issued then.
func (c *Controller) rememberCerts(ctx context.Context, refs []applier.Ref) {
	p, ok := c.certs.(*certs.Provider)
	if !ok {
		return
	}
	for _, r := range refs {
		if r.Group != "" || r.Kind != "Secret" || !strings.HasSuffix(r.Name, "-cert") {
			continue
		}
		req := render.ServingCertRequest{ServiceName: strings.TrimSuffix(r.Name, "-cert"), Namespace: r.Namespace}
		if _, cached := p.RenewAt(req); cached {
			continue
		}
		u, err := c.applier.Get(ctx, r)
		if err != nil || u == nil || u.GetAnnotations()[render.AnnotationCertNotAfter] == "" {
			continue
		}
		crt, _, _ := unstructured.NestedString(u.Object, "data", "tls.crt")
		key, _, _ := unstructured.NestedString(u.Object, "data", "tls.key")
		crtPEM, err1 := base64.StdEncoding.DecodeString(crt)
		keyPEM, err2 := base64.StdEncoding.DecodeString(key)
		if err1 != nil || err2 != nil {
			continue
		}
		if err := p.Remember(req, crtPEM, keyPEM); err != nil {
			klog.FromContext(ctx).V(2).Info("not reusing webhook certificate", "secret", r.String(), "err", err)
		}
	}
}
