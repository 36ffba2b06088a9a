//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// The rig's API server verifies kubelet certificates, and sluice-vk asks
// for its own with a CertificateSigningRequest (Node.KubeletAPI.Certificate
// csr, the default) that someone must approve: each test approves its own
// node's, as an operator would, after checking them.

// approveKubeletCSRs approves, until the test ends, the pending
// kubelet-serving CertificateSigningRequests for node (subject
// system:node:<node> in system:nodes, naming the node) whose requester
// passes requester; it leaves every other request alone, other tests'
// nodes' among them. The requests it approved are deleted at the end.
func approveKubeletCSRs(t *testing.T, client kubernetes.Interface, node string, requester func(user string) bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := &csrApprover{t: t, client: client, node: node, requester: requester}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for {
			a.approvePending(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		a.deleteApproved()
	})
}

type csrApprover struct {
	t         *testing.T
	client    kubernetes.Interface
	node      string
	requester func(string) bool

	mu       sync.Mutex
	approved []string
}

func (a *csrApprover) approvePending(ctx context.Context) {
	csrs := a.client.CertificatesV1().CertificateSigningRequests()
	list, err := csrs.List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String(),
	})
	if err != nil {
		if ctx.Err() == nil {
			a.t.Logf("list certificate signing requests: %v", err)
		}
		return
	}
	for i := range list.Items {
		req := &list.Items[i]
		if len(req.Status.Conditions) > 0 || !a.requester(req.Spec.Username) || !forNode(req, a.node) {
			continue
		}
		req.Status.Conditions = append(req.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
			Reason: "SluiceE2E", Message: "approved by the e2e test of node " + a.node,
		})
		if _, err := csrs.UpdateApproval(ctx, req.Name, req, metav1.UpdateOptions{}); err != nil {
			if ctx.Err() == nil && !apierrors.IsConflict(err) {
				a.t.Errorf("approve certificate signing request %s: %v", req.Name, err)
			}
			continue
		}
		a.mu.Lock()
		a.approved = append(a.approved, req.Name)
		a.mu.Unlock()
		a.t.Logf("approved certificate signing request %s of node %s (requester %s)", req.Name, a.node, req.Spec.Username)
	}
}

// forNode says whether req asks for node's serving certificate: subject
// system:node:<node> in system:nodes, and the node's name among its names.
func forNode(req *certificatesv1.CertificateSigningRequest, node string) bool {
	b, _ := pem.Decode(req.Spec.Request)
	if b == nil || b.Type != "CERTIFICATE REQUEST" {
		return false
	}
	cr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		return false
	}
	return cr.Subject.CommonName == "system:node:"+node && slices.Equal(cr.Subject.Organization, []string{"system:nodes"}) &&
		slices.Contains(cr.DNSNames, node)
}

func (a *csrApprover) deleteApproved() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, name := range a.approved {
		err := a.client.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			a.t.Errorf("delete certificate signing request %s: %v", name, err)
		}
	}
}

// isUser is a requester check for one user.
func isUser(user string) func(string) bool {
	return func(u string) bool { return u == user }
}

// inNamespace is a requester check for the service accounts of ns.
func inNamespace(ns string) func(string) bool {
	prefix := fmt.Sprintf("system:serviceaccount:%s:", ns)
	return func(u string) bool { return strings.HasPrefix(u, prefix) }
}

// whoAmI is the user client authenticates as.
func whoAmI(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	r, err := client.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("self subject review: %v", err)
	}
	return r.Status.UserInfo.Username
}

// TestKubeletAPICertificate: the node's CertificateSigningRequest, once
// approved, gives the kubelet API a certificate that verifies against the
// rig's CA for the node's address, as the rig's API server checks it
// (--kubelet-certificate-authority), and the node has the Events that say
// so.
func TestKubeletAPICertificate(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	ctx := context.Background()
	var reasons []string
	e.waitFor("the node's Event KubeletCertificateIssued", 60*time.Second, func() bool {
		list, err := e.client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.kind": "Node", "involvedObject.name": e.node}.String(),
		})
		if err != nil {
			return false
		}
		reasons = reasons[:0]
		for _, ev := range list.Items {
			reasons = append(reasons, ev.Reason)
		}
		return slices.Contains(reasons, "KubeletCertificateIssued")
	})
	if !slices.Contains(reasons, "KubeletCertificatePending") {
		t.Errorf("got node Events %v; want KubeletCertificatePending before KubeletCertificateIssued", reasons)
	}
	n, err := e.client.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(e.rig.Get(t, "RIG_KUBE_CA"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(n.Status.DaemonEndpoints.KubeletEndpoint.Port)))
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS to the kubelet API at %s, verified against the rig CA: %v", addr, err)
	}
	defer conn.Close()
	if cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "system:node:"+e.node {
		t.Errorf("got the kubelet API's certificate for %s; want system:node:%s", cn, e.node)
	}
}
