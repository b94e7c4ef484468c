package render

import "time"

// ServingCertRequest names the webhook Service a serving certificate is wanted for.
type ServingCertRequest struct {
	// ServiceName and Namespace identify the Service; the certificate must be valid for
	// <ServiceName>.<Namespace>.svc and <ServiceName>.<Namespace>.svc.cluster.local.
	ServiceName string
	Namespace   string
}

// ServingCert is a PEM-encoded serving certificate, its private key and the CA bundle
// that verifies it.
type ServingCert struct {
	CertPEM  []byte
	KeyPEM   []byte
	CABundle []byte
	// NotAfter is when the certificate expires; a controller re-renders before then.
	NotAfter time.Time
}

// CertProvider issues serving certificates for webhook Services. Implementations should
// return the same certificate for the same request until it is due for renewal, so that
// renders stay stable. pkg/render/certs holds a self-signed-CA implementation.
type CertProvider interface {
	ServingCert(req ServingCertRequest) (ServingCert, error)
}
