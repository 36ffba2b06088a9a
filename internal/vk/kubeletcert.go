package vk

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate/csr"
)

// Reasons of the node's Events about the kubelet API's certificate.
const (
	ReasonKubeletCertificatePending = "KubeletCertificatePending"
	ReasonKubeletCertificateIssued  = "KubeletCertificateIssued"
	ReasonKubeletCertificateDenied  = "KubeletCertificateDenied"
	ReasonKubeletCertificateFailed  = "KubeletCertificateFailed"
)

// maxCSRRetry bounds the pause between two failed requests.
const maxCSRRetry = 5 * time.Minute

// csrCertificate is the kubelet API's serving certificate from
// CertificateSigningRequests (Node.KubeletAPI.Certificate: csr), for the
// signer kubernetes.io/kubelet-serving: asked for when Run starts and
// again before it ends, each time with a new key. GetCertificate serves
// the current one; before the first is issued, and once it has ended,
// handshakes fail saying why.
type csrCertificate struct {
	Client   kubernetes.Interface
	NodeName string
	IP       net.IP
	// Lifetime is asked of the signer. If zero, the signer's own.
	Lifetime time.Duration
	// RenewBefore: a new certificate is asked for once less than this is
	// left. If zero, once two thirds of the lifetime have passed.
	RenewBefore time.Duration
	// Logger. If nil, slog.Default().
	Logger *slog.Logger
	// Event, if set, is told what the node's Events say: a request
	// waiting for approval, issued, denied, failed.
	Event func(eventType, reason, msg string)
	// Retry is the pause after a request that failed, doubled after each
	// until maxCSRRetry. If zero, 10s.
	Retry time.Duration

	mu      sync.RWMutex
	cert    *tls.Certificate
	waiting string // the request waited for
}

// GetCertificate is the TLS server's: the current certificate, or why
// there is none.
func (c *csrCertificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch {
	case c.cert != nil && time.Now().Before(c.cert.Leaf.NotAfter):
		return c.cert, nil
	case c.waiting != "":
		return nil, fmt.Errorf("kubelet API: no serving certificate: waiting for approval of CertificateSigningRequest %s", c.waiting)
	case c.cert != nil:
		return nil, fmt.Errorf("kubelet API: the serving certificate ended at %s", c.cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil, errors.New("kubelet API: no serving certificate yet")
}

// Run asks for a certificate, then for the next one before it ends,
// until ctx ends.
func (c *csrCertificate) Run(ctx context.Context) {
	pause := c.retry()
	var earliest time.Time // a certificate is kept at least Retry
	for {
		at := c.renewAt()
		if at.Before(earliest) {
			at = earliest
		}
		if !sleepUntil(ctx, at) {
			return
		}
		err := c.renew(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			pause = c.retry()
			earliest = time.Now().Add(pause)
			continue
		}
		c.logger().Warn("kubelet API: serving certificate not renewed", "error", err, "retry", pause)
		if !sleepUntil(ctx, time.Now().Add(pause)) {
			return
		}
		pause = min(2*pause, maxCSRRetry)
	}
}

func (c *csrCertificate) retry() time.Duration {
	if c.Retry <= 0 {
		return 10 * time.Second
	}
	return c.Retry
}

func (c *csrCertificate) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.Default()
	}
	return c.Logger
}

func (c *csrCertificate) event(eventType, reason, msg string) {
	if c.Event != nil {
		c.Event(eventType, reason, msg)
	}
}

// renewAt is when the next certificate is asked for: now without one.
func (c *csrCertificate) renewAt() time.Time {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.cert == nil {
		return time.Time{}
	}
	return renewalTime(c.cert.Leaf, c.RenewBefore)
}

// renewalTime is when a certificate leaf is renewed: renewBefore its end,
// or, if zero or not less than its lifetime (the signer gave less than
// asked), once two thirds of its lifetime have passed.
func renewalTime(leaf *x509.Certificate, renewBefore time.Duration) time.Time {
	lifetime := leaf.NotAfter.Sub(leaf.NotBefore)
	if renewBefore > 0 && renewBefore < lifetime {
		return leaf.NotAfter.Add(-renewBefore)
	}
	return leaf.NotBefore.Add(lifetime * 2 / 3)
}

// sleepUntil waits until t and reports whether ctx is still alive.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// renew asks for a certificate with a new key, waits until it is issued
// and serves it.
func (c *csrCertificate) renew(ctx context.Context) error {
	key, req, err := c.request()
	if err != nil {
		return err
	}
	var lifetime *time.Duration
	if c.Lifetime > 0 {
		lifetime = &c.Lifetime
	}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	name, uid, err := csr.RequestCertificateWithContext(ctx, c.Client, req, "", certificatesv1.KubeletServingSignerName, lifetime, usages, key)
	if err != nil {
		return fmt.Errorf("create certificate signing request: %w", err)
	}
	c.setWaiting(name)
	defer c.setWaiting("")
	c.logger().Warn("kubelet API: certificate signing request waiting for approval", "csr", name,
		"signer", certificatesv1.KubeletServingSignerName, "approve", "kubectl certificate approve "+name)
	c.event(corev1.EventTypeWarning, ReasonKubeletCertificatePending, fmt.Sprintf(
		"waiting for approval of CertificateSigningRequest %s (the kubelet API's serving certificate, for %s): kubectl certificate approve %s",
		name, c.IP, name))
	certPEM, err := csr.WaitForCertificate(ctx, c.Client, name, uid)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return c.failed(ctx, name, err)
	}
	cert, err := servingPair(certPEM, key, c.IP)
	if err != nil {
		c.event(corev1.EventTypeWarning, ReasonKubeletCertificateFailed, fmt.Sprintf("CertificateSigningRequest %s: %v", name, err))
		return fmt.Errorf("certificate signing request %s: %w", name, err)
	}
	c.mu.Lock()
	c.cert = cert
	c.mu.Unlock()
	end := cert.Leaf.NotAfter.UTC().Format(time.RFC3339)
	c.logger().Info("kubelet API: serving certificate issued", "csr", name, "issuer", cert.Leaf.Issuer.String(), "notAfter", end)
	c.event(corev1.EventTypeNormal, ReasonKubeletCertificateIssued, fmt.Sprintf(
		"CertificateSigningRequest %s issued: the kubelet API serves it until %s", name, end))
	return nil
}

func (c *csrCertificate) setWaiting(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting = name
}

// failed tells why the request name gave no certificate: denied (its
// condition's reason and message), or err.
func (c *csrCertificate) failed(ctx context.Context, name string, err error) error {
	req, gerr := c.Client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if gerr == nil {
		for _, cond := range req.Status.Conditions {
			if cond.Type == certificatesv1.CertificateDenied {
				msg := fmt.Sprintf("CertificateSigningRequest %s was denied (%s: %s); a new one follows in %s at the most",
					name, cond.Reason, cond.Message, maxCSRRetry)
				c.event(corev1.EventTypeWarning, ReasonKubeletCertificateDenied, msg)
				return fmt.Errorf("certificate signing request %s denied: %s: %s", name, cond.Reason, cond.Message)
			}
		}
	}
	c.event(corev1.EventTypeWarning, ReasonKubeletCertificateFailed, fmt.Sprintf("CertificateSigningRequest %s: %v", name, err))
	return fmt.Errorf("certificate signing request %s: %w", name, err)
}

// request makes a key and the request for it, as the kubelet-serving
// signer takes one: subject system:node:<name> in system:nodes, the node's
// name and address as its names.
func (c *csrCertificate) request() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate signing request: %w", err)
	}
	tmpl := &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "system:node:" + c.NodeName, Organization: []string{"system:nodes"}},
		DNSNames:    []string{c.NodeName},
		IPAddresses: []net.IP{c.IP},
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate signing request: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// servingPair is the issued chain certPEM with key, checked: the first
// certificate is key's, for server auth, and names ip.
func servingPair(certPEM []byte, key *ecdsa.PrivateKey, ip net.IP) (*tls.Certificate, error) {
	cert := &tls.Certificate{PrivateKey: key}
	for rest := certPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			cert.Certificate = append(cert.Certificate, b.Bytes)
		}
	}
	if len(cert.Certificate) == 0 {
		return nil, errors.New("issued no certificate")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("issued certificate: %w", err)
	}
	if pub, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, errors.New("issued a certificate of another key")
	}
	if err := leaf.VerifyHostname(ip.String()); err != nil {
		return nil, fmt.Errorf("issued certificate: %w", err)
	}
	cert.Leaf = leaf
	return cert, nil
}
