package gateway_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/gateway"
	"github.com/sluice-hpc/sluice/internal/gateway/gatewaytest"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/types"
)

// startServer serves the gateway for auth with a site that cannot be
// reached: what these tests check is refused before it.
func startServer(t *testing.T, auth gateway.Authenticator, set ...func(*gateway.Server)) (*gateway.Server, string, ssh.PublicKey) {
	t.Helper()
	unreachable := func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("site unreachable (test)")
	}
	g := gatewaytest.Serve(t, &gateway.Site{Hop: &tunnel.Hop{
		LoginAddr:     "login.test:22",
		LoginHostKeys: ssh.InsecureIgnoreHostKey(),
		NodeHostKeys:  ssh.InsecureIgnoreHostKey(),
		Dial:          unreachable,
	}}, auth, set...)
	return g.Server, g.Addr, g.HostKey
}

func dialShadow(addr string, key ssh.PublicKey, user, token string) (*ssh.Client, error) {
	return ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{ssh.Password(token)},
		HostKeyCallback: ssh.FixedHostKey(key),
		Timeout:         5 * time.Second,
	})
}

func TestServerRefuses(t *testing.T) {
	g := gateway.TestGrant()
	_, addr, key := startServer(t, gatewaytest.Grants{"tok-a": g})

	if _, err := dialShadow(addr, key, tunnel.GatewayUser, "tok-b"); err == nil {
		t.Error("a token the authenticator refuses was let in")
	}
	if _, err := dialShadow(addr, key, "root", "tok-a"); err == nil {
		t.Error("a user other than pod was let in")
	}
	c, err := dialShadow(addr, key, tunnel.GatewayUser, "tok-a")
	if err != nil {
		t.Fatalf("the pod's own token: %v", err)
	}
	defer c.Close()

	if _, err := c.NewSession(); err == nil || !strings.Contains(err.Error(), "direct-tcpip channels only") {
		t.Errorf("session channel: %v; want refused, saying why", err)
	}
	for _, a := range []string{"127.0.0.1:22", "10.0.0.1:8080", "localhost:8080"} {
		if _, err := c.Dial("tcp", a); err == nil || !strings.Contains(err.Error(), "prohibited") {
			t.Errorf("direct-tcpip to %s: %v; want prohibited", a, err)
		}
	}
	// Allowed by the policy, the node unreachable: refused as a failure
	// to connect, not as prohibited.
	if _, err := c.Dial("tcp", "127.0.0.1:8080"); err == nil || strings.Contains(err.Error(), "prohibited") {
		t.Errorf("direct-tcpip to the pod's port, site down: %v; want a connection failure", err)
	}
	for _, p := range []string{"/run/sluice/u2/rev-6379.sock", "/tmp/x.sock", "rev-1.sock"} {
		if _, err := c.ListenUnix(p); err == nil {
			t.Errorf("remote forward of %s allowed", p)
		}
	}
	if _, err := c.Listen("tcp", "127.0.0.1:6000"); err == nil {
		t.Error("a TCP remote forward was allowed")
	}
	// The connection is still served after every refusal.
	if _, _, err := c.SendRequest("keepalive@openssh.com", true, nil); err != nil {
		t.Errorf("keepalive after refusals: %v", err)
	}
}

func TestServerNoNode(t *testing.T) {
	g := gateway.TestGrant()
	g.Node = ""
	_, addr, key := startServer(t, gatewaytest.Grants{"tok-a": g})
	c, err := dialShadow(addr, key, tunnel.GatewayUser, "tok-a")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Dial("tcp", "127.0.0.1:8080"); err == nil || !strings.Contains(err.Error(), gateway.ErrNoNode.Error()) {
		t.Errorf("direct-tcpip with no node: %v; want %q", err, gateway.ErrNoNode)
	}
}

func TestGrantChanged(t *testing.T) {
	a, b := gateway.TestGrant(), gateway.TestGrant()
	b.Pod.UID = types.UID("u2")
	srv, addr, key := startServer(t, gatewaytest.Grants{"tok-a": a, "tok-b": b})
	ca, err := dialShadow(addr, key, tunnel.GatewayUser, "tok-a")
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	cb, err := dialShadow(addr, key, tunnel.GatewayUser, "tok-b")
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()

	srv.GrantChanged(a.Pod.UID, "job requeued")
	closed := make(chan error, 1)
	go func() { closed <- ca.Wait() }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the pod's connection was not closed when its grant changed")
	}
	if _, _, err := cb.SendRequest("keepalive@openssh.com", true, nil); err != nil {
		t.Errorf("another pod's connection was closed too: %v", err)
	}
}

func TestServeNeedsConfig(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := (&gateway.Server{}).Serve(context.Background(), ln); err == nil {
		t.Error("a server with no host key, authenticator or site served")
	}
}

// freezable is a shadow's connection that stops taking the gateway's
// packets once frozen, as a shadow gone without closing; closed is closed
// when the gateway closes its side.
type freezable struct {
	net.Conn
	frozen atomic.Bool
	once   sync.Once
	closed chan struct{}
}

func (f *freezable) Read(p []byte) (int, error) {
	if f.frozen.Load() {
		io.Copy(io.Discard, f.Conn)
		f.once.Do(func() { close(f.closed) })
		return 0, io.EOF
	}
	n, err := f.Conn.Read(p)
	if err != nil {
		f.once.Do(func() { close(f.closed) })
	}
	return n, err
}

func TestServerDropsSilentShadow(t *testing.T) {
	_, addr, key := startServer(t, gatewaytest.Grants{"tok-a": gateway.TestGrant()}, func(s *gateway.Server) {
		s.KeepAliveInterval, s.KeepAliveTimeout = 100*time.Millisecond, 200*time.Millisecond
	})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	f := &freezable{Conn: nc, closed: make(chan struct{})}
	c, chans, reqs, err := ssh.NewClientConn(f, addr, &ssh.ClientConfig{
		User:            tunnel.GatewayUser,
		Auth:            []ssh.AuthMethod{ssh.Password("tok-a")},
		HostKeyCallback: ssh.FixedHostKey(key),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go ssh.DiscardRequests(reqs)
	go func() {
		for nch := range chans {
			nch.Reject(ssh.Prohibited, "test")
		}
	}()
	// Answered keepalives keep it connected.
	time.Sleep(500 * time.Millisecond)
	select {
	case <-f.closed:
		t.Fatal("a shadow that answers keepalives was disconnected")
	default:
	}
	f.frozen.Store(true)
	select {
	case <-f.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("a shadow that stopped answering keepalives is still connected")
	}
}

// TestServerIdleFloodLeavesShadowsIn opens as many idle TCP connections
// as the gateway serves shadows, from another address: they must not keep
// a real shadow out.
func TestServerIdleFloodLeavesShadowsIn(t *testing.T) {
	const maxConns = 4
	_, addr, key := startServer(t, gatewaytest.Grants{"tok-a": gateway.TestGrant()}, func(s *gateway.Server) {
		s.MaxConns = maxConns
		s.MaxStartupsPerSource = 2
		s.HandshakeTimeout = 30 * time.Second
	})
	attacker := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	var idle []net.Conn
	for range maxConns {
		c, err := attacker.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	// ssh.Dial's timeout bounds the TCP connect only; what is refused
	// here is a handshake left waiting for the idle ones to time out.
	type result struct {
		c   *ssh.Client
		err error
	}
	dialed := make(chan result, 1)
	go func() {
		c, err := dialShadow(addr, key, tunnel.GatewayUser, "tok-a")
		dialed <- result{c, err}
	}()
	select {
	case r := <-dialed:
		if r.err != nil {
			t.Fatalf("a shadow with %d idle connections open from another address: %v", maxConns, r.err)
		}
		r.c.Close()
	case <-time.After(5 * time.Second):
		t.Fatalf("a shadow with %d idle connections open from another address was kept waiting", maxConns)
	}
	closed := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := io.ReadAll(c); err == nil {
			closed++
		}
	}
	if closed != maxConns-2 {
		t.Errorf("%d of %d idle connections from one address closed; want those past its cap of 2", closed, maxConns)
	}
}

func TestServerMaxConns(t *testing.T) {
	_, addr, key := startServer(t, gatewaytest.Grants{"tok-a": gateway.TestGrant()}, func(s *gateway.Server) {
		s.MaxConns = 1
	})
	c, err := dialShadow(addr, key, tunnel.GatewayUser, "tok-a")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c2, err := dialShadow(addr, key, tunnel.GatewayUser, "tok-a")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c2.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a shadow past MaxConns was served")
	}
	if _, _, err := c.SendRequest("keepalive@openssh.com", true, nil); err != nil {
		t.Errorf("the shadow within MaxConns was closed too: %v", err)
	}
}
