package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/gateway"
	"github.com/sluice-hpc/sluice/internal/gateway/gatewaytest"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/types"
)

// closedWithin reports whether c's connection ends within d.
func closedWithin(c *ssh.Client, d time.Duration) bool {
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// placedGrant is a grant read from the node ConfigMap ns/name.
func placedGrant(uid, ns, name string) *gateway.Grant {
	g := gateway.TestGrant()
	g.Pod.UID = types.UID(uid)
	g.Job = "4242"
	g.NodeConfigMap = types.NamespacedName{Namespace: ns, Name: name}
	return g
}

func TestPlacementChanged(t *testing.T) {
	moving := placedGrant("u1", "team-shadow", "s1-node")
	other := placedGrant("u2", "team-shadow", "s2-node")
	srv, addr, key := startServer(t, gatewaytest.Grants{"tok-a": moving, "tok-b": other})
	dial := func(tok string) *ssh.Client {
		t.Helper()
		c, err := dialShadow(addr, key, tunnel.GatewayUser, tok)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ca, cb := dial("tok-a"), dial("tok-b")

	// The placement the grant holds, reported again (a ConfigMap update
	// that changed another key): nothing is closed.
	same := gateway.Placement{Node: moving.Node, Job: moving.Job, SocketDir: moving.SocketDir}
	srv.PlacementChanged(moving.NodeConfigMap, &same)
	if closedWithin(ca, 300*time.Millisecond) {
		t.Fatal("a connection was closed when its job's placement was reported unchanged")
	}
	// Requeued: the same node, a new socket directory.
	to := same
	to.SocketDir = "/run/sluice/u1-second"
	srv.PlacementChanged(moving.NodeConfigMap, &to)
	if !closedWithin(ca, 5*time.Second) {
		t.Fatal("the connection of a pod whose job moved was not closed")
	}
	if closedWithin(cb, 300*time.Millisecond) {
		t.Error("another pod's connection was closed when one pod's job moved")
	}
	// The node ConfigMap gone (the pod deleted).
	srv.PlacementChanged(other.NodeConfigMap, nil)
	if !closedWithin(cb, 5*time.Second) {
		t.Error("the connection of a pod whose node ConfigMap went was not closed")
	}
}

// reportingAuth reports a move of its grant's placement while the shadow
// logs in, after the grant was read: the server, which knows no
// connection of the pod yet when the report comes, must still close it.
type reportingAuth struct {
	grant *gateway.Grant
	srv   func() *gateway.Server
	to    *gateway.Placement
}

func (a *reportingAuth) Authenticate(context.Context, string) (*gateway.Grant, error) {
	g := *a.grant
	a.srv().PlacementChanged(g.NodeConfigMap, a.to)
	return &g, nil
}

func TestPlacementChangedDuringLogin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		to     *gateway.Placement
		closed bool
	}{
		{"moved", &gateway.Placement{Node: "c2", Job: "4242", SocketDir: "/run/sluice/u1"}, true},
		{"gone", nil, true},
		// Reported as the grant has it: the grant was read after the move.
		{"unchanged", &gateway.Placement{Node: "c1", Job: "4242", SocketDir: "/run/sluice/u1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var srv *gateway.Server
			auth := &reportingAuth{grant: placedGrant("u1", "team-shadow", "s1-node"), srv: func() *gateway.Server { return srv }, to: tc.to}
			srv, addr, key := startServer(t, auth)
			c, err := dialShadow(addr, key, tunnel.GatewayUser, "tok")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := closedWithin(c, 2*time.Second); got != tc.closed {
				t.Errorf("connection closed: %v; want %v", got, tc.closed)
			}
		})
	}
}
