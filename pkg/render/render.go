// Package render turns a registry+v1 bundle (a ClusterServiceVersion, CRDs and other
// manifests) into the plain Kubernetes objects that install it, the way OLM v1's
// operator-controller does for ClusterExtensions (registry+v1 "convert" behaviour), with one
// addition: webhook serving certificates come from a CertProvider instead of cert-manager.
//
// Render is a pure function of the bundle, the Options and the certificates the provider
// returns; its output is sorted and ready for server-side apply.
package render

import (
	"encoding/base64"
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Pod template annotations set on every Deployment (OLM operator-group convention).
const (
	AnnotationTargetNamespaces  = "olm.targetNamespaces"
	AnnotationOperatorNamespace = "olm.operatorNamespace"
	// AnnotationCertNotAfter is set on each rendered webhook certificate Secret to the
	// certificate's expiry (RFC 3339, UTC), so a controller can schedule renewal.
	AnnotationCertNotAfter = "olm.operatorframework.io/cert-not-after"
)

// Mount points of the webhook serving certificate in the operator's containers: the
// controller-runtime default webhook certificate directory (files tls.crt, tls.key) and the
// OLM v0 API-service location (files apiserver.crt, apiserver.key).
const (
	WebhookCertMountPath    = "/tmp/k8s-webhook-server/serving-certs"
	APIServiceCertMountPath = "/apiserver.local.config/certificates"
	webhookCertVolume       = "webhook-cert"
	apiServiceCertVolume    = "apiservice-cert"
)

// Options are the install settings of a render.
type Options struct {
	// InstallNamespace is where namespaced objects go (a DNS-1123 label). Required.
	InstallNamespace string
	// Config is the ClusterExtension's spec.config.inline as JSON or YAML (nil: none). It
	// is validated by ParseConfig.
	Config []byte
	// CertProvider issues webhook serving certificates. Required when the CSV has
	// webhookdefinitions; ignored otherwise.
	CertProvider CertProvider
}

// RenderFS is Load followed by Render.
func RenderFS(fsys fs.FS, opts Options) ([]unstructured.Unstructured, error) {
	b, err := Load(fsys)
	if err != nil {
		return nil, err
	}
	return Render(b, opts)
}

// Render returns the objects that install bundle b, sorted by kind, namespace, name and
// apiVersion. The objects carry no status and no creationTimestamp.
//
// It produces:
//   - a ServiceAccount in the install namespace per service account named by the CSV's
//     permissions or clusterPermissions (except "default" and those the bundle ships);
//   - per permission and target namespace a Role and RoleBinding named
//     <csv name>-<hash of the permission>; in AllNamespaces mode a ClusterRole and
//     ClusterRoleBinding instead, with get/list/watch on namespaces added;
//   - per clusterPermission a ClusterRole and ClusterRoleBinding named the same way;
//   - per install-strategy deployment a Deployment in the install namespace, with
//     revisionHistoryLimit 1, the CSV's annotations and olm.targetNamespaces /
//     olm.operatorNamespace on its pod template, and the deploymentConfig applied;
//   - the bundle's CRDs, with conversion webhooks wired into spec.conversion;
//   - the bundle's other manifests, namespaced ones moved to the install namespace;
//   - per webhook deployment a Service <deployment>-service (replacing a bundle Service of
//     that name, whose labels and annotations are kept) and a kubernetes.io/tls Secret
//     <service>-cert holding the provider's certificate, mounted into the Deployment;
//   - per admission webhook definition a Validating/MutatingWebhookConfiguration named by
//     its generateName, with the CA bundle and, unless AllNamespaces, a namespace selector on
//     kubernetes.io/metadata.name for the target namespaces.
//
// Errors: invalid install namespace; invalid configuration (see ParseConfig); bundles owning
// APIServices; install strategies other than "deployment"; no supported install mode among
// AllNamespaces, OwnNamespace, SingleNamespace; webhooks without a CertProvider or naming an
// unknown deployment or CRD; conversion webhooks in a bundle supporting install modes other
// than AllNamespaces (OLM v0's rule: a CRD's conversion webhook serves the whole cluster, so
// there can be only one, cluster-wide installation); duplicate objects.
func Render(b *Bundle, opts Options) ([]unstructured.Unstructured, error) {
	csv := &b.CSV
	ns := opts.InstallNamespace
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return nil, fmt.Errorf("invalid install namespace %q: %s", ns, strings.Join(errs, "; "))
	}
	if owned := csv.Spec.APIServiceDefinitions.Owned; len(owned) > 0 {
		names := make([]string, len(owned))
		for i, o := range owned {
			names[i] = o.Version + "." + o.Group
		}
		return nil, fmt.Errorf("bundle %s owns APIServices (spec.apiservicedefinitions.owned: %s); extensions serving aggregated APIs are not supported", csv.Name, strings.Join(names, ", "))
	}
	if s := csv.Spec.InstallStrategy.StrategyName; s != v1alpha1.InstallStrategyNameDeployment {
		return nil, fmt.Errorf("bundle %s: install strategy %q is not supported (only %q)", csv.Name, s, v1alpha1.InstallStrategyNameDeployment)
	}
	modes := supportedModes(csv)
	if !modes[v1alpha1.InstallModeTypeAllNamespaces] && !modes[v1alpha1.InstallModeTypeOwnNamespace] && !modes[v1alpha1.InstallModeTypeSingleNamespace] {
		return nil, fmt.Errorf("bundle %s supports none of the install modes AllNamespaces, OwnNamespace, SingleNamespace", csv.Name)
	}
	cfg, err := ParseConfig(csv, ns, opts.Config)
	if err != nil {
		return nil, err
	}
	watch := cfg.WatchNamespace
	allNamespaces := watch == ""
	switch {
	case allNamespaces && !modes[v1alpha1.InstallModeTypeAllNamespaces],
		watch == ns && !allNamespaces && !modes[v1alpha1.InstallModeTypeOwnNamespace],
		watch != ns && !allNamespaces && !modes[v1alpha1.InstallModeTypeSingleNamespace]:
		// ConfigSchema already enforces these; this guards against schema drift.
		return nil, fmt.Errorf("invalid configuration: watchNamespace %q is not allowed by the bundle's install modes", watch)
	}

	r := &renderer{b: b, csv: csv, ns: ns, watch: watch, all: allNamespaces, cfg: cfg, certs: opts.CertProvider, objs: map[string]unstructured.Unstructured{}}
	steps := []func() error{r.bundleManifests, r.serviceAccounts, r.rbac, r.webhooks, r.deployments, r.crds}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return r.sorted(), nil
}

type renderer struct {
	b     *Bundle
	csv   *v1alpha1.ClusterServiceVersion
	ns    string
	watch string
	all   bool
	cfg   *Config
	certs CertProvider
	objs  map[string]unstructured.Unstructured

	// certDeployments maps a deployment name to the Secret holding its webhook certificate.
	certDeployments map[string]string
	// conversions maps a CRD name to its conversion webhook settings.
	conversions map[string]map[string]any
}

func objKey(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	return gvk.Group + "/" + gvk.Kind + "/" + u.GetNamespace() + "/" + u.GetName()
}

// add records an object; an identical duplicate is ignored, a different one is an error.
func (r *renderer) add(u unstructured.Unstructured, source string) error {
	k := objKey(&u)
	if prev, ok := r.objs[k]; ok {
		if equalObjects(prev.Object, u.Object) {
			return nil
		}
		return fmt.Errorf("%s: %s %q in namespace %q is defined twice", source, u.GetKind(), u.GetName(), u.GetNamespace())
	}
	r.objs[k] = u
	return nil
}

func (r *renderer) has(group, kind, namespace, name string) bool {
	_, ok := r.objs[group+"/"+kind+"/"+namespace+"/"+name]
	return ok
}

func (r *renderer) sorted() []unstructured.Unstructured {
	out := make([]unstructured.Unstructured, 0, len(r.objs))
	for _, u := range r.objs {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		if a.GetKind() != b.GetKind() {
			return a.GetKind() < b.GetKind()
		}
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		if a.GetName() != b.GetName() {
			return a.GetName() < b.GetName()
		}
		return a.GetAPIVersion() < b.GetAPIVersion()
	})
	return out
}

// toUnstructured converts a typed object and drops the fields a typed zero value adds
// (metadata.creationTimestamp, status).
func toUnstructured(obj runtime.Object, gvk schema.GroupVersionKind) (unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return unstructured.Unstructured{}, fmt.Errorf("converting %s: %w", gvk.Kind, err)
	}
	u := unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	cleanObject(&u)
	return u, nil
}

// cleanObject removes status and null creationTimestamps (which typed encoders and some
// bundle files carry) from an object.
func cleanObject(u *unstructured.Unstructured) {
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "template", "metadata", "creationTimestamp"); ok && v == nil {
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	}
}

// clusterScopedKinds are built-in (and common OpenShift console) kinds without a namespace.
var clusterScopedKinds = map[string]bool{
	"/Namespace": true, "/Node": true, "/PersistentVolume": true, "/ComponentStatus": true,
	"rbac.authorization.k8s.io/ClusterRole": true, "rbac.authorization.k8s.io/ClusterRoleBinding": true,
	"apiextensions.k8s.io/CustomResourceDefinition":                 true,
	"apiregistration.k8s.io/APIService":                             true,
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration":   true,
	"admissionregistration.k8s.io/MutatingWebhookConfiguration":     true,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicy":        true,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding": true,
	"admissionregistration.k8s.io/MutatingAdmissionPolicy":          true,
	"admissionregistration.k8s.io/MutatingAdmissionPolicyBinding":   true,
	"scheduling.k8s.io/PriorityClass":                               true,
	"storage.k8s.io/StorageClass":                                   true,
	"storage.k8s.io/CSIDriver":                                      true,
	"storage.k8s.io/CSINode":                                        true,
	"storage.k8s.io/VolumeAttachment":                               true,
	"networking.k8s.io/IngressClass":                                true,
	"node.k8s.io/RuntimeClass":                                      true,
	"certificates.k8s.io/CertificateSigningRequest":                 true,
	"flowcontrol.apiserver.k8s.io/FlowSchema":                       true,
	"flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration":       true,
	"console.openshift.io/ConsoleYAMLSample":                        true,
	"console.openshift.io/ConsoleQuickStart":                        true,
	"console.openshift.io/ConsoleCLIDownload":                       true,
	"console.openshift.io/ConsoleLink":                              true,
	"console.openshift.io/ConsolePlugin":                            true,
	"security.openshift.io/SecurityContextConstraints":              true,
}

// isClusterScoped reports whether objects of gvk have no namespace: built-in cluster-scoped
// kinds and kinds of the bundle's own CRDs with scope Cluster. Unknown kinds are namespaced.
func (r *renderer) isClusterScoped(gvk schema.GroupVersionKind) bool {
	if clusterScopedKinds[gvk.Group+"/"+gvk.Kind] {
		return true
	}
	for i := range r.b.CRDs {
		crd := &r.b.CRDs[i]
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
		if group == gvk.Group && kind == gvk.Kind {
			return scope == "Cluster"
		}
	}
	return false
}

// bundleManifests adds the bundle's non-CSV, non-CRD manifests.
func (r *renderer) bundleManifests() error {
	for _, o := range r.b.Others {
		u := *o.DeepCopy()
		cleanObject(&u)
		if r.isClusterScoped(u.GroupVersionKind()) {
			u.SetNamespace("")
		} else {
			u.SetNamespace(r.ns)
		}
		if err := r.add(u, "bundle manifest"); err != nil {
			return err
		}
	}
	return nil
}

func (r *renderer) serviceAccounts() error {
	strategy := &r.csv.Spec.InstallStrategy.StrategySpec
	seen := map[string]bool{}
	for _, perms := range [][]v1alpha1.StrategyDeploymentPermissions{strategy.Permissions, strategy.ClusterPermissions} {
		for _, p := range perms {
			name := p.ServiceAccountName
			if name == "" || name == "default" || seen[name] || r.has("", "ServiceAccount", r.ns, name) {
				continue
			}
			seen[name] = true
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				return fmt.Errorf("bundle %s: invalid service account name %q: %s", r.csv.Name, name, strings.Join(errs, "; "))
			}
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns}}
			u, err := toUnstructured(sa, corev1.SchemeGroupVersion.WithKind("ServiceAccount"))
			if err != nil {
				return err
			}
			if err := r.add(u, "service account"); err != nil {
				return err
			}
		}
	}
	return nil
}

// namespacesRule lets an AllNamespaces operator list the namespaces it watches.
var namespacesRule = rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"namespaces"}}

func (r *renderer) rbac() error {
	strategy := &r.csv.Spec.InstallStrategy.StrategySpec
	subject := func(sa string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: r.ns}}
	}
	addCluster := func(p v1alpha1.StrategyDeploymentPermissions) error {
		name, err := hashedName(r.csv.Name, p)
		if err != nil {
			return err
		}
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: p.Rules}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   subject(p.ServiceAccountName),
		}
		return r.addTyped("cluster permission", role, rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), binding, rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"))
	}
	for _, p := range strategy.Permissions {
		if r.all {
			rules := append(append([]rbacv1.PolicyRule{}, p.Rules...), namespacesRule)
			if err := addCluster(v1alpha1.StrategyDeploymentPermissions{ServiceAccountName: p.ServiceAccountName, Rules: rules}); err != nil {
				return err
			}
			continue
		}
		name, err := hashedName(r.csv.Name, p)
		if err != nil {
			return err
		}
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.watch}, Rules: p.Rules}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.watch},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   subject(p.ServiceAccountName),
		}
		if err := r.addTyped("permission", role, rbacv1.SchemeGroupVersion.WithKind("Role"), binding, rbacv1.SchemeGroupVersion.WithKind("RoleBinding")); err != nil {
			return err
		}
	}
	for _, p := range strategy.ClusterPermissions {
		if err := addCluster(p); err != nil {
			return err
		}
	}
	return nil
}

// addTyped converts and adds pairs of (object, kind).
func (r *renderer) addTyped(source string, pairs ...any) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		u, err := toUnstructured(pairs[i].(runtime.Object), pairs[i+1].(schema.GroupVersionKind))
		if err != nil {
			return err
		}
		if err := r.add(u, source); err != nil {
			return err
		}
	}
	return nil
}

func (r *renderer) deployments() error {
	strategy := &r.csv.Spec.InstallStrategy.StrategySpec
	targets := ""
	if !r.all {
		targets = r.watch
	}
	for _, ds := range strategy.DeploymentSpecs {
		if errs := validation.IsDNS1123Subdomain(ds.Name); len(errs) > 0 {
			return fmt.Errorf("bundle %s: invalid deployment name %q: %s", r.csv.Name, ds.Name, strings.Join(errs, "; "))
		}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: ds.Name, Namespace: r.ns},
			Spec:       *ds.Spec.DeepCopy(),
		}
		if len(ds.Label) > 0 {
			d.Labels = map[string]string{}
			for k, v := range ds.Label {
				d.Labels[k] = v
			}
		}
		d.Spec.RevisionHistoryLimit = ptrTo[int32](1)
		tmpl := &d.Spec.Template
		if tmpl.Annotations == nil {
			tmpl.Annotations = map[string]string{}
		}
		for k, v := range r.csv.Annotations {
			tmpl.Annotations[k] = v
		}
		tmpl.Annotations[AnnotationTargetNamespaces] = targets
		tmpl.Annotations[AnnotationOperatorNamespace] = r.ns
		applyDeploymentConfig(&d.Annotations, tmpl, r.cfg.DeploymentConfig)
		if secret, ok := r.certDeployments[ds.Name]; ok {
			mountServingCert(&tmpl.Spec, secret)
		}
		if err := r.addTyped("deployment", d, appsv1.SchemeGroupVersion.WithKind("Deployment")); err != nil {
			return err
		}
	}
	return nil
}

// mountServingCert mounts the certificate Secret at WebhookCertMountPath and
// APIServiceCertMountPath in every container, replacing mounts already at those paths (and
// the volumes only they used).
func mountServingCert(spec *corev1.PodSpec, secret string) {
	ours := map[string]string{webhookCertVolume: WebhookCertMountPath, apiServiceCertVolume: APIServiceCertMountPath}
	displaced := map[string]bool{}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		kept := c.VolumeMounts[:0:0]
		for _, vm := range c.VolumeMounts {
			if vm.MountPath == WebhookCertMountPath || vm.MountPath == APIServiceCertMountPath || ours[vm.Name] != "" {
				displaced[vm.Name] = true
				continue
			}
			kept = append(kept, vm)
		}
		c.VolumeMounts = append(kept,
			corev1.VolumeMount{Name: webhookCertVolume, MountPath: WebhookCertMountPath, ReadOnly: true},
			corev1.VolumeMount{Name: apiServiceCertVolume, MountPath: APIServiceCertMountPath, ReadOnly: true},
		)
	}
	stillUsed := map[string]bool{}
	for _, cs := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for _, c := range cs {
			for _, vm := range c.VolumeMounts {
				stillUsed[vm.Name] = true
			}
		}
	}
	keptVolumes := spec.Volumes[:0:0]
	for _, v := range spec.Volumes {
		if ours[v.Name] != "" || (displaced[v.Name] && !stillUsed[v.Name]) {
			continue
		}
		keptVolumes = append(keptVolumes, v)
	}
	secretVolume := func(name, crt, key string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret,
			Items:      []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: crt}, {Key: corev1.TLSPrivateKeyKey, Path: key}},
		}}}
	}
	spec.Volumes = append(keptVolumes,
		secretVolume(webhookCertVolume, "tls.crt", "tls.key"),
		secretVolume(apiServiceCertVolume, "apiserver.crt", "apiserver.key"),
	)
}

// webhooks renders Services, certificate Secrets and webhook configurations, and records
// the conversion settings and certificate mounts for crds and deployments.
func (r *renderer) webhooks() error {
	defs := r.csv.Spec.WebhookDefinitions
	r.certDeployments = map[string]string{}
	r.conversions = map[string]map[string]any{}
	if len(defs) == 0 {
		return nil
	}
	if r.certs == nil {
		return fmt.Errorf("bundle %s has webhookdefinitions but no certificate provider is configured", r.csv.Name)
	}
	deployments := map[string]*v1alpha1.StrategyDeploymentSpec{}
	for i := range r.csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		ds := &r.csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[i]
		deployments[ds.Name] = ds
	}

	type svcInfo struct {
		name     string
		ports    map[int32]intstr.IntOrString
		selector map[string]string
		caBundle []byte
	}
	services := map[string]*svcInfo{}
	var order []string
	for _, w := range defs {
		ds, ok := deployments[w.DeploymentName]
		if !ok {
			return fmt.Errorf("bundle %s: webhook %q names deployment %q, which is not in the install strategy", r.csv.Name, w.GenerateName, w.DeploymentName)
		}
		svc, ok := services[w.DeploymentName]
		if !ok {
			if ds.Spec.Selector == nil || len(ds.Spec.Selector.MatchLabels) == 0 {
				return fmt.Errorf("bundle %s: deployment %q has no selector matchLabels, so no Service can route to its webhooks", r.csv.Name, ds.Name)
			}
			svc = &svcInfo{name: limitName(w.DeploymentName + "-service"), ports: map[int32]intstr.IntOrString{}, selector: ds.Spec.Selector.MatchLabels}
			services[w.DeploymentName] = svc
			order = append(order, w.DeploymentName)
		}
		port := webhookPort(w)
		target := intstr.FromInt32(port)
		if w.TargetPort != nil {
			target = *w.TargetPort
		}
		if prev, ok := svc.ports[port]; ok && prev != target {
			return fmt.Errorf("bundle %s: webhooks of deployment %q use port %d with different target ports (%s, %s)", r.csv.Name, w.DeploymentName, port, prev.String(), target.String())
		}
		svc.ports[port] = target
	}

	for _, dep := range order {
		svc := services[dep]
		cert, err := r.certs.ServingCert(ServingCertRequest{ServiceName: svc.name, Namespace: r.ns})
		if err != nil {
			return fmt.Errorf("issuing serving certificate for Service %s/%s: %w", r.ns, svc.name, err)
		}
		svc.caBundle = cert.CABundle
		secretName := limitName(svc.name + "-cert")
		r.certDeployments[dep] = secretName

		ports := make([]int32, 0, len(svc.ports))
		for p := range svc.ports {
			ports = append(ports, p)
		}
		sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc.name, Namespace: r.ns}, Spec: corev1.ServiceSpec{Selector: svc.selector}}
		for _, p := range ports {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: strconv.Itoa(int(p)), Port: p, TargetPort: svc.ports[p]})
		}
		// A bundle Service of the same name (common: kubebuilder's webhook-service) is
		// replaced, keeping its labels and annotations: the webhook wiring needs these ports.
		key := "/Service/" + r.ns + "/" + svc.name
		if prev, ok := r.objs[key]; ok {
			s.Labels, s.Annotations = prev.GetLabels(), prev.GetAnnotations()
			delete(r.objs, key)
		}
		if err := r.addTyped("webhook service", s, corev1.SchemeGroupVersion.WithKind("Service")); err != nil {
			return err
		}
		secret := unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1",
			"kind":       "Secret",
			"metadata": map[string]any{
				"name":        secretName,
				"namespace":   r.ns,
				"annotations": map[string]any{AnnotationCertNotAfter: cert.NotAfter.UTC().Format(time.RFC3339)},
			},
			"type": string(corev1.SecretTypeTLS),
			"data": map[string]any{
				corev1.TLSCertKey:       base64.StdEncoding.EncodeToString(cert.CertPEM),
				corev1.TLSPrivateKeyKey: base64.StdEncoding.EncodeToString(cert.KeyPEM),
				"ca.crt":                base64.StdEncoding.EncodeToString(cert.CABundle),
			},
		}}
		if err := r.add(secret, "webhook certificate"); err != nil {
			return err
		}
	}

	var nsSelector *metav1.LabelSelector
	if !r.all {
		nsSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{r.watch},
		}}}
	}
	for _, w := range defs {
		svc := services[w.DeploymentName]
		ref := &admissionregistrationv1.ServiceReference{Namespace: r.ns, Name: svc.name, Path: w.WebhookPath, Port: ptrTo(webhookPort(w))}
		clientConfig := admissionregistrationv1.WebhookClientConfig{Service: ref, CABundle: svc.caBundle}
		switch w.Type {
		case v1alpha1.ValidatingAdmissionWebhook:
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: w.GenerateName},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{
					Name: w.GenerateName, ClientConfig: clientConfig, Rules: w.Rules, FailurePolicy: w.FailurePolicy,
					MatchPolicy: w.MatchPolicy, NamespaceSelector: nsSelector, ObjectSelector: w.ObjectSelector,
					SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
				}},
			}
			if err := r.addTyped("webhook", cfg, admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration")); err != nil {
				return err
			}
		case v1alpha1.MutatingAdmissionWebhook:
			cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: w.GenerateName},
				Webhooks: []admissionregistrationv1.MutatingWebhook{{
					Name: w.GenerateName, ClientConfig: clientConfig, Rules: w.Rules, FailurePolicy: w.FailurePolicy,
					MatchPolicy: w.MatchPolicy, NamespaceSelector: nsSelector, ObjectSelector: w.ObjectSelector,
					SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
					ReinvocationPolicy: w.ReinvocationPolicy,
				}},
			}
			if err := r.addTyped("webhook", cfg, admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration")); err != nil {
				return err
			}
		case v1alpha1.ConversionWebhook:
			if other := nonAllNamespacesModes(r.csv); len(other) > 0 || !r.all {
				return fmt.Errorf("bundle %s: conversion webhook %q applies cluster-wide, so the bundle may support only the AllNamespaces install mode (it also supports %s)", r.csv.Name, w.GenerateName, strings.Join(other, ", "))
			}
			if len(w.ConversionCRDs) == 0 {
				return fmt.Errorf("bundle %s: conversion webhook %q lists no conversionCRDs", r.csv.Name, w.GenerateName)
			}
			service := map[string]any{"namespace": r.ns, "name": svc.name, "port": int64(webhookPort(w))}
			if w.WebhookPath != nil {
				service["path"] = *w.WebhookPath
			}
			clientCfg := map[string]any{"service": service}
			if len(svc.caBundle) > 0 {
				clientCfg["caBundle"] = base64.StdEncoding.EncodeToString(svc.caBundle)
			}
			versions := make([]any, len(w.AdmissionReviewVersions))
			for i, v := range w.AdmissionReviewVersions {
				versions[i] = v
			}
			conv := map[string]any{
				"strategy": "Webhook",
				"webhook":  map[string]any{"clientConfig": clientCfg, "conversionReviewVersions": versions},
			}
			for _, crd := range w.ConversionCRDs {
				if _, dup := r.conversions[crd]; dup {
					return fmt.Errorf("bundle %s: CRD %q has more than one conversion webhook", r.csv.Name, crd)
				}
				r.conversions[crd] = conv
			}
		default:
			return fmt.Errorf("bundle %s: webhook %q has unknown type %q", r.csv.Name, w.GenerateName, w.Type)
		}
	}
	return nil
}

// nonAllNamespacesModes lists the supported install modes other than AllNamespaces.
func nonAllNamespacesModes(csv *v1alpha1.ClusterServiceVersion) []string {
	var out []string
	for _, im := range csv.Spec.InstallModes {
		if im.Supported && im.Type != v1alpha1.InstallModeTypeAllNamespaces {
			out = append(out, string(im.Type))
		}
	}
	return out
}

func webhookPort(w v1alpha1.WebhookDescription) int32 {
	if w.ContainerPort == 0 {
		return 443
	}
	return w.ContainerPort
}

func (r *renderer) crds() error {
	found := map[string]bool{}
	for _, c := range r.b.CRDs {
		u := *c.DeepCopy()
		cleanObject(&u)
		if conv, ok := r.conversions[u.GetName()]; ok {
			found[u.GetName()] = true
			if err := unstructured.SetNestedField(u.Object, runtime.DeepCopyJSONValue(conv), "spec", "conversion"); err != nil {
				return fmt.Errorf("CustomResourceDefinition %q: setting conversion webhook: %w", u.GetName(), err)
			}
		}
		if err := r.add(u, "bundle CRD"); err != nil {
			return err
		}
	}
	var missing []string
	for name := range r.conversions {
		if !found[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("bundle %s: conversion webhooks name CRDs not in the bundle: %s", r.csv.Name, strings.Join(missing, ", "))
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

// equalObjects compares two JSON-like objects.
func equalObjects(a, b map[string]any) bool {
	return reflect.DeepEqual(a, b)
}

// CertificateNotAfter returns the earliest expiry among the webhook certificate Secrets in
// objs (from their AnnotationCertNotAfter annotation), and false when there are none. A
// controller re-renders before this time so the provider can issue fresh certificates.
func CertificateNotAfter(objs []unstructured.Unstructured) (time.Time, bool, error) {
	var earliest time.Time
	found := false
	for i := range objs {
		v, ok := objs[i].GetAnnotations()[AnnotationCertNotAfter]
		if !ok || objs[i].GetKind() != "Secret" {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("Secret %s/%s: annotation %s: %w", objs[i].GetNamespace(), objs[i].GetName(), AnnotationCertNotAfter, err)
		}
		if !found || t.Before(earliest) {
			earliest, found = t, true
		}
	}
	return earliest, found, nil
}
