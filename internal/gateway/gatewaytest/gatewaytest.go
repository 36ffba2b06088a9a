// Package gatewaytest serves a gateway for tests, with grants given by
// the test in place of the TokenReview authenticator.
package gatewaytest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-hpc/sluice/internal/gateway"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Grants is an Authenticator that grants by token.
type Grants map[string]*gateway.Grant

// Authenticate returns the grant of token, or an error wrapping
// gateway.ErrRefused.
func (a Grants) Authenticate(_ context.Context, token string) (*gateway.Grant, error) {
	if g, ok := a[token]; ok {
		return g, nil
	}
	return nil, fmt.Errorf("token: %w", gateway.ErrRefused)
}

// Gateway is a gateway served on a local port.
type Gateway struct {
	*gateway.Server
	Addr string
	// HostKey is the gateway's host key; KnownHosts a file pinning it.
	HostKey    ssh.PublicKey
	KnownHosts string
}

// Serve serves a gateway for site and auth on a local port, with a fresh
// host key, until the test ends; each of set is called with the server
// before it starts.
func Serve(t testing.TB, site *gateway.Site, auth gateway.Authenticator, set ...func(*gateway.Server)) *Gateway {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{
		Server:     &gateway.Server{HostKey: signer, Auth: auth, Site: site},
		Addr:       ln.Addr().String(),
		HostKey:    signer.PublicKey(),
		KnownHosts: filepath.Join(t.TempDir(), "gateway_known_hosts"),
	}
	for _, f := range set {
		f(g.Server)
	}
	if err := os.WriteFile(g.KnownHosts, []byte(knownhosts.Line([]string{g.Addr}, g.HostKey)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Server.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gateway: %v", err)
		}
		site.Close()
	})
	return g
}
