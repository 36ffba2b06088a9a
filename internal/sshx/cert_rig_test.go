//go:build rig

package sshx

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"golang.org/x/crypto/ssh"
)

// TestRigNodeCertificates runs the node hop against the rig's real node
// sshd with TrustedUserCAKeys and HostCertificate set (through the node's
// override file, restored when the test ends): a key the node does not
// know logs in with its certificate, replacing the certificate on disk is
// used by the next connection, an expired one is refused before it is
// offered, and the node is accepted through @cert-authority only, another
// CA's line refusing it. Run it holding the rig lock:
//
//	flock /tmp/sluice-rig.lock go test -tags rig -run TestRigNodeCertificates ./internal/sshx/
func TestRigNodeCertificates(t *testing.T) {
	r := testrig.Load(t)
	user, nodeName, nodeAddr := r.Get(t, "RIG_USER"), r.Get(t, "RIG_NODE_NAME"), r.Get(t, "RIG_NODE_ADDR")
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	userCA, hostCA := sshxtest.NewSigner(t), sshxtest.NewSigner(t)
	caFile := filepath.Join(dir, "user_ca.pub")
	if err := os.WriteFile(caFile, ssh.MarshalAuthorizedKey(userCA.PublicKey()), 0o644); err != nil {
		t.Fatal(err)
	}
	// The node's host key, as hack/rig/lib/sshd.sh keeps it.
	hostPubData, err := os.ReadFile(filepath.Join(r.Get(t, "RIG_DIR"), "keys", "ssh_host_node_ed25519_key.pub"))
	if err != nil {
		t.Fatalf("node host key: %v", err)
	}
	hostPub, _, _, _, err := ssh.ParseAuthorizedKey(hostPubData)
	if err != nil {
		t.Fatalf("node host key: %v", err)
	}
	now := time.Now()
	hostCertFile := filepath.Join(dir, "ssh_host_node_ed25519_key-cert.pub")
	sshxtest.WriteCertificate(t, hostCertFile, sshxtest.Certificate(t, hostCA, hostPub, ssh.HostCert,
		[]string{nodeName, nodeAddr}, now.Add(-time.Hour), now.Add(24*time.Hour)))
	r.OverrideNodeSSHD(t, "TrustedUserCAKeys "+caFile+"\nHostCertificate "+hostCertFile+"\n")

	// The login hop, as ever: the rig's key, the pinned login key.
	loginKey, err := Signer(r.Get(t, "RIG_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	loginHosts, err := HostKeys(r.Get(t, "RIG_KNOWN_HOSTS"))
	if err != nil {
		t.Fatal(err)
	}
	loginAddr := net.JoinHostPort(r.Get(t, "RIG_LOGIN_ADDR"), r.Get(t, "RIG_LOGIN_PORT"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	login, err := Dial(ctx, dialer(), loginAddr, &ssh.ClientConfig{
		User: user, Auth: []ssh.AuthMethod{ssh.PublicKeys(loginKey)},
		HostKeyCallback: loginHosts, HostKeyAlgorithms: HostKeyAlgorithms(loginHosts, loginAddr),
	})
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	defer login.Close()

	// A key the node has never seen, with a certificate of the user CA.
	key := sshxtest.NewSigner(t)
	certFile := filepath.Join(dir, "id-cert.pub")
	certify := func(ca ssh.Signer, after, before time.Time) {
		sshxtest.WriteCertificate(t, certFile, sshxtest.Certificate(t, ca, key.PublicKey(), ssh.UserCert, []string{user}, after, before))
	}
	certify(userCA, now.Add(-time.Hour), now.Add(24*time.Hour))
	cs, err := NewCertSigner(key, certFile)
	if err != nil {
		t.Fatal(err)
	}
	nodeAddrPort := net.JoinHostPort(nodeName, "22")
	caLine := "@cert-authority " + nodeName + "," + nodeAddr + " " + authorizedLine(hostCA.PublicKey()) + "\n"
	node := func(kh string, auth ssh.AuthMethod) error {
		t.Helper()
		hk, err := HostKeys(writeFile(t, "node_known_hosts", kh))
		if err != nil {
			t.Fatal(err)
		}
		c, err := Dial(ctx, login.DialContext, nodeAddrPort, &ssh.ClientConfig{
			User: user, Auth: []ssh.AuthMethod{auth},
			HostKeyCallback: hk, HostKeyAlgorithms: HostKeyAlgorithms(hk, nodeAddrPort),
		})
		if err != nil {
			return err
		}
		defer c.Close()
		sess, err := c.NewSession()
		if err != nil {
			return err
		}
		defer sess.Close()
		out, err := sess.Output("id -un")
		if err == nil && strings.TrimSpace(string(out)) != user {
			t.Errorf("id -un on the node = %q; want %s", out, user)
		}
		return err
	}

	if err := node(caLine, cs.AuthMethod()); err != nil {
		t.Fatalf("node hop with a user certificate and a host certificate: %v", err)
	}
	if err := node(caLine, ssh.PublicKeys(key)); err == nil {
		t.Fatal("node hop with the plain, unknown key succeeded; want refused")
	}
	other := "@cert-authority " + nodeName + "," + nodeAddr + " " + authorizedLine(sshxtest.NewSigner(t).PublicKey()) + "\n"
	if err := node(other, cs.AuthMethod()); err == nil || !strings.Contains(err.Error(), "host key check") {
		t.Fatalf("node hop with another CA pinned = %v; want refused by the host key check", err)
	}
	// Replaced by a certificate of another CA: the next connection offers
	// it, and the node refuses it.
	certify(sshxtest.NewSigner(t), now.Add(-time.Hour), now.Add(24*time.Hour))
	if err := node(caLine, cs.AuthMethod()); err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
		t.Fatalf("node hop with an untrusted certificate = %v; want refused by the node", err)
	}
	// Renewed by the user CA: accepted again, no new signer.
	certify(userCA, now.Add(-time.Hour), now.Add(24*time.Hour))
	if err := node(caLine, cs.AuthMethod()); err != nil {
		t.Fatalf("node hop after the renewal: %v", err)
	}
	// Expired: refused before it is offered, naming the file.
	certify(userCA, now.Add(-48*time.Hour), now.Add(-time.Hour))
	if err := node(caLine, cs.AuthMethod()); err == nil || !strings.Contains(err.Error(), certFile+": expired") {
		t.Fatalf("node hop with an expired certificate = %v; want the expiry error", err)
	}
}
