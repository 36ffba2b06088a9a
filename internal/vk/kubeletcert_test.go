package vk

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// testCA signs certificates for the fake API server's CSRs.
type testCA struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{key, cert}
}

// sign issues req's certificate, valid for lifetime from now.
func (ca *testCA) sign(t *testing.T, req []byte, serial int64, lifetime time.Duration) []byte {
	t.Helper()
	b, _ := pem.Decode(req)
	cr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: cr.Subject,
		NotBefore: time.Now(), NotAfter: time.Now().Add(lifetime),
		DNSNames: cr.DNSNames, IPAddresses: cr.IPAddresses,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, cr.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// fakeCSRs is a fake clientset whose CSRs get names from generateName and
// whose lists and watches honour the field selector metadata.name, as the
// API server's do. The fake's watches see only what happens after they
// start: watched says whether a CSR's has.
type fakeCSRs struct {
	*fake.Clientset
	mu      sync.Mutex
	watches map[string]int
}

func (c *fakeCSRs) watched(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watches[name] > 0
}

func fakeCSRClient() *fakeCSRs {
	c := &fakeCSRs{Clientset: fake.NewClientset(), watches: map[string]int{}}
	var mu sync.Mutex
	n := 0
	c.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		req := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		mu.Lock()
		n++
		req.Name, req.UID = fmt.Sprintf("%s%d", req.GenerateName, n), types.UID(fmt.Sprintf("uid-%03d", n))
		mu.Unlock()
		return false, nil, nil
	})
	gvr := certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
	matches := func(sel fields.Selector, o runtime.Object) bool {
		return sel == nil || sel.Matches(fields.Set{"metadata.name": o.(*certificatesv1.CertificateSigningRequest).Name})
	}
	c.PrependReactor("list", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		o, err := c.Tracker().List(gvr, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), "")
		if err != nil {
			return true, nil, err
		}
		list := o.(*certificatesv1.CertificateSigningRequestList)
		sel := a.(k8stesting.ListAction).GetListRestrictions().Fields
		list.Items = slices.DeleteFunc(list.Items, func(r certificatesv1.CertificateSigningRequest) bool { return !matches(sel, &r) })
		return true, list, nil
	})
	c.PrependWatchReactor("certificatesigningrequests", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(gvr, "")
		if err != nil {
			return true, nil, err
		}
		sel := a.(k8stesting.WatchAction).GetWatchRestrictions().Fields
		if name, ok := sel.RequiresExactMatch("metadata.name"); ok {
			c.mu.Lock()
			c.watches[name]++
			c.mu.Unlock()
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) { return e, matches(sel, e.Object) }), nil
	})
	return c
}

// csrs lists the fake's CSRs, oldest first.
func csrs(t *testing.T, c *fakeCSRs) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	list, err := c.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b certificatesv1.CertificateSigningRequest) int {
		return strings.Compare(string(a.UID), string(b.UID))
	})
	return list.Items
}

// decide approves (with a certificate valid lifetime) or denies the fake's
// CSR, once it is watched.
func decide(t *testing.T, c *fakeCSRs, ca *testCA, req certificatesv1.CertificateSigningRequest, approve bool, serial int64, lifetime time.Duration) {
	t.Helper()
	waitFor(t, "the watch of "+req.Name, func() bool { return c.watched(req.Name) })
	cond := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied, Status: "True", Reason: "NotOurs", Message: "no such node"}
	if approve {
		cond = certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: "True", Reason: "Test"}
		req.Status.Certificate = ca.sign(t, req.Spec.Request, serial, lifetime)
	}
	req.Status.Conditions = append(req.Status.Conditions, cond)
	if _, err := c.CertificatesV1().CertificateSigningRequests().UpdateStatus(context.Background(), &req, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// events records what csrCertificate tells the node's Events.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(typ, reason, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, typ+" "+reason+" "+msg)
}

func (e *events) reasons() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var rs []string
	for _, l := range e.list {
		rs = append(rs, strings.Fields(l)[1])
	}
	return strings.Join(rs, " ")
}

// waitFor polls cond every 10ms for up to 30s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logWriter writes a test's log lines to t.Logf.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func startCSRCertificate(t *testing.T, c *csrCertificate) {
	t.Helper()
	c.Logger = slog.New(slog.NewTextHandler(logWriter{t}, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func serial(c *csrCertificate) int64 {
	cert, err := c.GetCertificate(nil)
	if err != nil {
		return 0
	}
	return cert.Leaf.SerialNumber.Int64()
}

// TestCSRCertificate: the request is what the kubelet-serving signer
// takes; until it is issued, handshakes fail naming it and the node has a
// Warning; once issued, it is served; before it ends, a new request with a
// new key replaces it.
func TestCSRCertificate(t *testing.T) {
	client, ca, ev := fakeCSRClient(), newTestCA(t), &events{}
	c := &csrCertificate{Client: client, NodeName: "hpc-a", IP: net.ParseIP("10.0.0.7"),
		Lifetime: time.Hour, RenewBefore: 2 * time.Second, Retry: 50 * time.Millisecond, Event: ev.add}
	if _, err := c.GetCertificate(nil); err == nil || !strings.Contains(err.Error(), "no serving certificate yet") {
		t.Errorf("before Run: got %v; want no serving certificate yet", err)
	}
	startCSRCertificate(t, c)
	waitFor(t, "a CSR", func() bool { return len(csrs(t, client)) == 1 })
	req := csrs(t, client)[0]
	if req.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		t.Errorf("got signer %q; want %s", req.Spec.SignerName, certificatesv1.KubeletServingSignerName)
	}
	if got := fmt.Sprint(req.Spec.Usages); got != "[digital signature server auth]" {
		t.Errorf("got usages %s; want [digital signature server auth]", got)
	}
	if e := req.Spec.ExpirationSeconds; e == nil || *e != 3600 {
		t.Errorf("got expirationSeconds %v; want 3600", e)
	}
	b, _ := pem.Decode(req.Spec.Request)
	cr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%s %v %v %v", cr.Subject.CommonName, cr.Subject.Organization, cr.DNSNames, cr.IPAddresses); got != "system:node:hpc-a [system:nodes] [hpc-a] [10.0.0.7]" {
		t.Errorf("got request %s; want system:node:hpc-a [system:nodes] [hpc-a] [10.0.0.7]", got)
	}
	waitFor(t, "the Warning", func() bool { return ev.reasons() == ReasonKubeletCertificatePending })
	if _, err := c.GetCertificate(nil); err == nil || !strings.Contains(err.Error(), "waiting for approval of CertificateSigningRequest "+req.Name) {
		t.Errorf("while pending: got %v; want it to name %s", err, req.Name)
	}
	if msg := ev.list[0]; !strings.Contains(msg, "kubectl certificate approve "+req.Name) {
		t.Errorf("got Event %q; want the command that approves it", msg)
	}

	decide(t, client, ca, req, true, 2, 3*time.Second)
	waitFor(t, "the first certificate", func() bool { return serial(c) == 2 })
	waitFor(t, "the renewal's CSR", func() bool { return len(csrs(t, client)) == 2 })
	if serial(c) != 2 {
		t.Errorf("the first certificate is not served while its renewal waits")
	}
	next := csrs(t, client)[1]
	if string(next.Spec.Request) == string(req.Spec.Request) {
		t.Errorf("the renewal asks for the same key")
	}
	decide(t, client, ca, next, true, 3, time.Hour)
	waitFor(t, "the renewed certificate", func() bool { return serial(c) == 3 })
	want := "KubeletCertificatePending KubeletCertificateIssued KubeletCertificatePending KubeletCertificateIssued"
	waitFor(t, "the Events "+want, func() bool { return ev.reasons() == want })
}

// TestCSRCertificateDenied: a denied request is a Warning naming the
// reason, and a new request follows.
func TestCSRCertificateDenied(t *testing.T) {
	client, ca, ev := fakeCSRClient(), newTestCA(t), &events{}
	c := &csrCertificate{Client: client, NodeName: "hpc-a", IP: net.ParseIP("10.0.0.7"), Retry: 50 * time.Millisecond, Event: ev.add}
	startCSRCertificate(t, c)
	waitFor(t, "a CSR", func() bool { return len(csrs(t, client)) == 1 })
	decide(t, client, ca, csrs(t, client)[0], false, 0, 0)
	waitFor(t, "a second CSR", func() bool { return len(csrs(t, client)) == 2 })
	decide(t, client, ca, csrs(t, client)[1], true, 5, time.Hour)
	waitFor(t, "the certificate", func() bool { return serial(c) == 5 })
	want := "KubeletCertificatePending KubeletCertificateDenied KubeletCertificatePending KubeletCertificateIssued"
	waitFor(t, "the Events "+want, func() bool { return ev.reasons() == want })
	if msg := ev.list[1]; !strings.Contains(msg, "NotOurs: no such node") {
		t.Errorf("got Event %q; want the denial's reason and message", msg)
	}
}

func TestServingPair(t *testing.T) {
	ca := newTestCA(t)
	c := &csrCertificate{NodeName: "hpc-a", IP: net.ParseIP("10.0.0.7")}
	key, req, err := c.request()
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := c.request()
	certPEM := ca.sign(t, req, 9, time.Hour)
	if _, err := servingPair(certPEM, key, c.IP); err != nil {
		t.Errorf("servingPair: %v", err)
	}
	for _, tt := range []struct {
		name    string
		pem     []byte
		key     *ecdsa.PrivateKey
		ip, err string
	}{
		{"another key", certPEM, other, "10.0.0.7", "another key"},
		{"another address", certPEM, key, "10.0.0.8", "not 10.0.0.8"},
		{"nothing", []byte("junk"), key, "10.0.0.7", "issued no certificate"},
	} {
		if _, err := servingPair(tt.pem, tt.key, net.ParseIP(tt.ip)); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: got %v; want %q", tt.name, err, tt.err)
		}
	}
}

func TestRenewalTime(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	leaf := &x509.Certificate{NotBefore: start, NotAfter: start.Add(30 * time.Hour)}
	for _, tt := range []struct {
		before time.Duration
		want   time.Duration // after start
	}{
		{0, 20 * time.Hour},
		{time.Hour, 29 * time.Hour},
		{30 * time.Hour, 20 * time.Hour}, // not less than the lifetime: two thirds
	} {
		if got := renewalTime(leaf, tt.before).Sub(start); got != tt.want {
			t.Errorf("renew before %s: got %s after the start; want %s", tt.before, got, tt.want)
		}
	}
}
