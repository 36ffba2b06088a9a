//go:build rig

package vk

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// TestRigKubeletCSR: against the rig's API server and controller manager,
// the serving certificate is asked for as the kubelet-serving signer takes
// it, waits for approval (handshakes fail naming the request), is issued
// by the rig CA once approved, for the node's address, and is renewed
// before it ends with a new request, the first certificate served until
// the second is issued. The rig's signer backdates by 5 minutes: a 10m
// certificate renewed 9m50s before its end is renewed 10s after it is
// issued.
func TestRigKubeletCSR(t *testing.T) {
	rig := testrig.Load(t)
	client := rig.Kube(t)
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(rig.Get(t, "RIG_KUBE_CA"))
	if err != nil || !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("the rig CA: %v", err)
	}
	b := make([]byte, 3)
	rand.Read(b)
	node := fmt.Sprintf("rig-csr-%x", b)
	ev := &events{}
	c := &csrCertificate{Client: client, NodeName: node, IP: net.ParseIP("127.0.0.1"),
		Lifetime: 10 * time.Minute, RenewBefore: 9*time.Minute + 50*time.Second, Retry: time.Second, Event: ev.add}
	t.Cleanup(func() { deleteNodeCSRs(t, client, node) })
	startCSRCertificate(t, c)

	first := waitNodeCSR(t, client, node, 1)
	if _, err := c.GetCertificate(nil); err == nil || !strings.Contains(err.Error(), first.Name) {
		t.Errorf("while pending: got %v; want an error naming %s", err, first.Name)
	}
	waitFor(t, "the Warning", func() bool { return ev.reasons() == ReasonKubeletCertificatePending })
	approve(t, client, first)
	waitFor(t, "the first certificate", func() bool { _, err := c.GetCertificate(nil); return err == nil })
	cert, _ := c.GetCertificate(nil)
	leaf := cert.Leaf
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the issued certificate does not verify against the rig CA for 127.0.0.1: %v", err)
	}
	if leaf.Subject.CommonName != "system:node:"+node {
		t.Errorf("got subject %s; want system:node:%s", leaf.Subject, node)
	}
	if life := leaf.NotAfter.Sub(leaf.NotBefore); life > 16*time.Minute {
		t.Errorf("got a certificate of %s; want the 10m asked for (and the signer's 5m backdating)", life)
	}

	second := waitNodeCSR(t, client, node, 2)
	if got, _ := c.GetCertificate(nil); got == nil || !got.Leaf.Equal(leaf) {
		t.Errorf("the first certificate is not served while the renewal waits")
	}
	if string(second.Spec.Request) == string(first.Spec.Request) {
		t.Errorf("the renewal asks for the same key")
	}
	approve(t, client, second)
	waitFor(t, "the renewed certificate", func() bool {
		got, err := c.GetCertificate(nil)
		return err == nil && !got.Leaf.Equal(leaf)
	})
	want := "KubeletCertificatePending KubeletCertificateIssued KubeletCertificatePending KubeletCertificateIssued"
	waitFor(t, "the Events "+want, func() bool { return strings.HasPrefix(ev.reasons(), want) })
}

// nodeCSRs are the kubelet-serving requests for node, oldest first.
func nodeCSRs(t *testing.T, client kubernetes.Interface, node string) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	list, err := client.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String(),
	})
	if err != nil {
		t.Fatalf("list certificate signing requests: %v", err)
	}
	var out []certificatesv1.CertificateSigningRequest
	for _, r := range list.Items {
		b, _ := pem.Decode(r.Spec.Request)
		if b == nil {
			continue
		}
		if cr, err := x509.ParseCertificateRequest(b.Bytes); err == nil && cr.Subject.CommonName == "system:node:"+node {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b certificatesv1.CertificateSigningRequest) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return out
}

// waitNodeCSR waits for node's nth request (1-based) and returns it.
func waitNodeCSR(t *testing.T, client kubernetes.Interface, node string, n int) certificatesv1.CertificateSigningRequest {
	t.Helper()
	var got []certificatesv1.CertificateSigningRequest
	waitFor(t, fmt.Sprintf("request %d of %s", n, node), func() bool {
		got = nodeCSRs(t, client, node)
		return len(got) >= n
	})
	return got[n-1]
}

func approve(t *testing.T, client kubernetes.Interface, req certificatesv1.CertificateSigningRequest) {
	t.Helper()
	req.Status.Conditions = append(req.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "RigTest", Message: "TestRigKubeletCSR",
	})
	if _, err := client.CertificatesV1().CertificateSigningRequests().UpdateApproval(context.Background(), req.Name, &req, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("approve %s: %v", req.Name, err)
	}
}

func deleteNodeCSRs(t *testing.T, client kubernetes.Interface, node string) {
	for _, r := range nodeCSRs(t, client, node) {
		if err := client.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), r.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete %s: %v", r.Name, err)
		}
	}
}
