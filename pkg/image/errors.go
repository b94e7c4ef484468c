package image

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Kind classifies an Error by what may fix it.
type Kind int

const (
	// Transient errors may go away on their own and are retried: the
	// registry is unreachable, timed out, answered 5xx or 429, refused the
	// credentials (a pull secret may be added), or the TLS certificate is not
	// trusted (a CA bundle may be configured).
	Transient Kind = iota
	// NotFound means the registry does not have the repository, tag or
	// manifest. For a tag ref a later push may fix it; a digest ref never
	// changes.
	NotFound
	// Terminal errors need a change to the reference or to the image: an
	// unparseable reference, an unusable manifest, a hostile or oversized
	// layer, a missing subtree.
	Terminal
)

func (k Kind) String() string {
	switch k {
	case Transient:
		return "transient"
	case NotFound:
		return "not found"
	default:
		return "terminal"
	}
}

// Error is every error returned by this package. Its message is stable
// across attempts: it never contains a resolved IP address or an ephemeral
// port, only the registry host as written in the reference.
type Error struct {
	Kind Kind
	// Msg is the stable message.
	Msg string
	// Err is the underlying error (its text may hold addresses; it is not
	// part of Error()).
	Err error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of err: the Kind of the *Error it wraps, Transient
// for context cancellation and deadlines, Terminal otherwise.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Transient
	}
	return Terminal
}

// IsTransient reports whether err is worth retrying unchanged (see Transient).
func IsTransient(err error) bool { return KindOf(err) == Transient }

// IsNotFound reports whether err says the image or tag does not exist.
func IsNotFound(err error) bool { return KindOf(err) == NotFound }

func terminalf(err error, format string, args ...any) *Error {
	return &Error{Kind: Terminal, Msg: fmt.Sprintf(format, args...), Err: err}
}

// addrPattern matches IPv4 and bracketed IPv6 addresses with a port.
var addrPattern = regexp.MustCompile(`(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[[0-9a-fA-F:.%a-zA-Z]+\]):\d+`)

// scrub removes addresses with ports from s, keeping the registry host as
// written (which is part of the user's reference and stable).
func scrub(s, registry string) string {
	return addrPattern.ReplaceAllStringFunc(s, func(m string) string {
		if m == registry {
			return m
		}
		return "ADDRESS"
	})
}

// classify turns an error from go-containerregistry's remote package into
// an *Error whose message names the operation, the registry and the cause.
func classify(err error, op, registry string) error {
	if err == nil {
		return nil
	}
	var done *Error
	if errors.As(err, &done) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		cause := "canceled"
		if errors.Is(err, context.DeadlineExceeded) {
			cause = "timeout"
		}
		return &Error{Kind: Transient, Msg: fmt.Sprintf("%s: registry %s: %s", op, registry, cause), Err: err}
	}
	var te *transport.Error
	if errors.As(err, &te) {
		return classifyHTTP(te, op, registry)
	}
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	if errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) {
		return &Error{Kind: Transient, Msg: fmt.Sprintf("%s: TLS certificate of registry %s is not trusted: %s", op, registry, scrub(rootCause(err), registry)), Err: err}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return &Error{Kind: Transient, Msg: fmt.Sprintf("%s: registry %s unreachable: cannot resolve host %s", op, registry, dnsErr.Name), Err: err}
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return &Error{Kind: Transient, Msg: fmt.Sprintf("%s: registry %s unreachable: %s", op, registry, netCause(opErr)), Err: err}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &Error{Kind: Transient, Msg: fmt.Sprintf("%s: registry %s unreachable: timeout", op, registry), Err: err}
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "EOF") {
		return &Error{Kind: Transient, Msg: fmt.Sprintf("%s: registry %s unreachable: %s", op, registry, scrub(rootCause(err), registry)), Err: err}
	}
	return &Error{Kind: Terminal, Msg: fmt.Sprintf("%s: %s", op, scrub(err.Error(), registry)), Err: err}
}

func netCause(opErr *net.OpError) string {
	switch {
	case opErr.Timeout():
		return "timeout"
	case errors.Is(opErr, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(opErr, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(opErr, syscall.EHOSTUNREACH), errors.Is(opErr, syscall.ENETUNREACH):
		return "no route to host"
	}
	return opErr.Op + ": " + scrubAll(rootCause(opErr))
}

func scrubAll(s string) string { return addrPattern.ReplaceAllString(s, "ADDRESS") }

func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

func classifyHTTP(te *transport.Error, op, registry string) error {
	var codes []string
	notFound := te.StatusCode == http.StatusNotFound
	for _, d := range te.Errors {
		c := string(d.Code)
		if d.Message != "" {
			c += " (" + d.Message + ")"
		}
		codes = append(codes, c)
		switch d.Code {
		case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode:
			notFound = true
		}
	}
	detail := fmt.Sprintf("registry %s answered %d %s", registry, te.StatusCode, http.StatusText(te.StatusCode))
	if len(codes) > 0 {
		detail += ": " + strings.Join(codes, "; ")
	}
	detail = scrub(detail, registry)
	kind := Terminal
	switch {
	case notFound:
		kind = NotFound
	case te.StatusCode >= 500, te.StatusCode == http.StatusTooManyRequests, te.StatusCode == http.StatusRequestTimeout,
		te.StatusCode == http.StatusUnauthorized, te.StatusCode == http.StatusForbidden:
		kind = Transient
	}
	return &Error{Kind: kind, Msg: op + ": " + detail, Err: te}
}
