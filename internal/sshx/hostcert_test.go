package sshx

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// authorizedLine is key in authorized_keys form, without the newline.
func authorizedLine(key ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
}

// dialPinned dials srv with the known_hosts content kh and the algorithms
// HostKeyAlgorithms picks from it.
func dialPinned(t *testing.T, srv *sshxtest.Server, kh string) error {
	t.Helper()
	cb, err := HostKeys(writeFile(t, "known_hosts", kh))
	if err != nil {
		t.Fatalf("HostKeys: %v", err)
	}
	cfg := &ssh.ClientConfig{
		User:              "alice",
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(srv.ClientKey)},
		HostKeyCallback:   cb,
		HostKeyAlgorithms: HostKeyAlgorithms(cb, srv.Addr),
	}
	return dialClose(srv.Addr, cfg)
}

func TestHostCertificate(t *testing.T) {
	ca := sshxtest.NewSigner(t)
	now := time.Now()
	const host = "127.0.0.1"
	// hostCert starts a server whose host key is certified by signer for
	// principals, valid from after to before.
	hostCert := func(signer ssh.Signer, principals []string, after, before time.Time) *sshxtest.Server {
		srv := sshxtest.Start(t)
		cert := sshxtest.Certificate(t, signer, srv.HostKey.PublicKey(), ssh.HostCert, principals, after, before)
		if err := srv.SetHostCertificate(cert); err != nil {
			t.Fatal(err)
		}
		return srv
	}
	caLine := func(srv *sshxtest.Server) string {
		_, p, _ := net.SplitHostPort(srv.Addr)
		return "@cert-authority [" + host + "]:" + p + " " + authorizedLine(ca.PublicKey()) + "\n"
	}
	valid := []string{host}

	t.Run("accepted through @cert-authority", func(t *testing.T) {
		srv := hostCert(ca, valid, now.Add(-time.Hour), now.Add(time.Hour))
		if err := dialPinned(t, srv, caLine(srv)); err != nil {
			t.Fatalf("dial a host certified by the pinned CA: %v", err)
		}
	})
	t.Run("wildcard @cert-authority", func(t *testing.T) {
		srv := hostCert(ca, valid, now.Add(-time.Hour), now.Add(time.Hour))
		_, p, _ := net.SplitHostPort(srv.Addr)
		if err := dialPinned(t, srv, "@cert-authority [127.0.0.*]:"+p+" "+authorizedLine(ca.PublicKey())+"\n"); err != nil {
			t.Fatalf("dial a host certified by a CA pinned for *: %v", err)
		}
	})
	t.Run("plain unknown key refused", func(t *testing.T) {
		srv := sshxtest.Start(t) // no certificate
		err := dialPinned(t, srv, caLine(srv))
		var hke *HostKeyError
		if !errors.As(err, &hke) || !strings.Contains(err.Error(), "not a host certificate of the certificate authority") {
			t.Fatalf("dial a host showing a plain unpinned key = %v; want a HostKeyError naming the CA", err)
		}
	})
	t.Run("plain key pinned beside the CA", func(t *testing.T) {
		srv := sshxtest.Start(t)
		kh := caLine(srv) + knownhosts.Line([]string{srv.Addr}, srv.HostKey.PublicKey()) + "\n"
		if err := dialPinned(t, srv, kh); err != nil {
			t.Fatalf("dial a host whose plain key is pinned beside a CA line: %v", err)
		}
	})
	t.Run("another CA refused", func(t *testing.T) {
		srv := hostCert(sshxtest.NewSigner(t), valid, now.Add(-time.Hour), now.Add(time.Hour))
		if err := dialPinned(t, srv, caLine(srv)); err == nil || !strings.Contains(err.Error(), "no authorities") {
			t.Fatalf("dial a host certified by another CA = %v; want refused", err)
		}
	})
	t.Run("other principal refused", func(t *testing.T) {
		srv := hostCert(ca, []string{"login.example.org"}, now.Add(-time.Hour), now.Add(time.Hour))
		if err := dialPinned(t, srv, caLine(srv)); err == nil || !strings.Contains(err.Error(), "principal") {
			t.Fatalf("dial a host certified for another name = %v; want refused", err)
		}
	})
	t.Run("expired refused", func(t *testing.T) {
		srv := hostCert(ca, valid, now.Add(-2*time.Hour), now.Add(-time.Hour))
		if err := dialPinned(t, srv, caLine(srv)); err == nil || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("dial a host with an expired certificate = %v; want refused", err)
		}
	})
	t.Run("revoked host key refused", func(t *testing.T) {
		srv := hostCert(ca, valid, now.Add(-time.Hour), now.Add(time.Hour))
		kh := caLine(srv) + "@revoked * " + authorizedLine(srv.HostKey.PublicKey()) + "\n"
		if err := dialPinned(t, srv, kh); err == nil || !strings.Contains(err.Error(), "revoked") {
			t.Fatalf("dial a host whose certified key is revoked = %v; want refused", err)
		}
	})
	t.Run("revoked CA refused", func(t *testing.T) {
		srv := hostCert(ca, valid, now.Add(-time.Hour), now.Add(time.Hour))
		kh := caLine(srv) + "@revoked * " + authorizedLine(ca.PublicKey()) + "\n"
		if err := dialPinned(t, srv, kh); err == nil || !strings.Contains(err.Error(), "revoked") {
			t.Fatalf("dial a host certified by a revoked CA = %v; want refused", err)
		}
	})
	t.Run("CA key as plain host key refused", func(t *testing.T) {
		srv := sshxtest.StartWithHostKey(t, ca)
		err := dialPinned(t, srv, caLine(srv))
		if !errors.Is(err, errAuthorityAsHostKey) {
			t.Fatalf("dial a host showing the CA's own key = %v; want errAuthorityAsHostKey", err)
		}
	})
}

func TestHostKeyAlgorithmsAuthority(t *testing.T) {
	ca := sshxtest.NewSigner(t)
	rsaPub := rsaKey(t)
	kh := "@cert-authority *.cluster " + authorizedLine(ca.PublicKey()) + "\n" +
		knownhosts.Line([]string{"n1.cluster"}, rsaPub) + "\n"
	cb, err := HostKeys(writeFile(t, "known_hosts", kh))
	if err != nil {
		t.Fatalf("HostKeys: %v", err)
	}
	certs := slices.Clone(hostCertAlgorithms)
	tests := []struct {
		addr string
		want []string
	}{
		// Only the CA covers n2: certificates first, then any plain key
		// (refused by the check, with a clear error).
		{"n2.cluster:22", append(slices.Clone(certs), plainHostKeyAlgorithms...)},
		{"n1.cluster:22", append(slices.Clone(certs), ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256)},
		{"login.example.org:22", nil},
	}
	for _, tt := range tests {
		if got := HostKeyAlgorithms(cb, tt.addr); !slices.Equal(got, tt.want) {
			t.Errorf("HostKeyAlgorithms(%q) = %q; want %q", tt.addr, got, tt.want)
		}
	}
}
