package vk

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// candidate is one replica in elect: run blocks until its context ends and
// says when it started.
type candidate struct {
	name    string
	started chan struct{}
	done    chan error // elect's result
	cancel  context.CancelFunc
	health  *Health
}

func startCandidate(t *testing.T, client *fake.Clientset, name string) *candidate {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{name: name, started: make(chan struct{}), done: make(chan error, 1), cancel: cancel, health: &Health{}}
	el := Election{Namespace: "sluice", Identity: name, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
	go func() {
		c.done <- elect(ctx, client, el, LeaseName("hpc"), slog.New(slog.DiscardHandler), c.health, func(ctx context.Context) error {
			close(c.started)
			<-ctx.Done()
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

// waitUntil polls cond until it holds, failing the test after 5s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func leads(c *candidate, within time.Duration) bool {
	select {
	case <-c.started:
		return true
	case <-time.After(within):
		return false
	}
}

// TestElectOneLeaderAndHandover: of two replicas only one runs the node; when
// it stops it releases the Lease, and the standby runs the node within a
// retry period or so, not a lease duration.
func TestElectOneLeaderAndHandover(t *testing.T) {
	client := fake.NewClientset()
	a := startCandidate(t, client, "a")
	if !leads(a, 5*time.Second) {
		t.Fatal("a does not lead with no one else there")
	}
	b := startCandidate(t, client, "b")
	if leads(b, time.Second) {
		t.Fatal("b runs the node while a holds the lease")
	}
	lease, err := client.CoordinationV1().Leases("sluice").Get(context.Background(), "sluice-vk-hpc", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "a" {
		t.Fatalf("lease %v, %v; want held by a", lease, err)
	}
	// the leader is live and leads; the standby is live, and ready once it
	// knows its leader
	if err := a.health.Live(); err != nil || !a.health.Leading() {
		t.Errorf("leader a: live %v, leading %v; want live and leading", err, a.health.Leading())
	}
	waitUntil(t, func() bool { return b.health.Ready() == nil })
	if err := b.health.Live(); err != nil || b.health.Leading() {
		t.Errorf("standby b: live %v, leading %v; want live, not leading", err, b.health.Leading())
	}

	start := time.Now()
	a.cancel()
	if err := <-a.done; err != nil {
		t.Errorf("a stopped with %v; want nil", err)
	}
	a.done <- nil // for the cleanup
	if !leads(b, 2*time.Second) {
		t.Fatal("b does not take over within 2s of a's release")
	}
	t.Logf("takeover after a released the lease: %s", time.Since(start).Round(time.Millisecond))
	// client-go calls OnNewLeader in a goroutine of its own, which may run
	// after OnStartedLeading: the count of changes can lag the takeover
	waitUntil(t, func() bool { return b.health.LeaderChanges() > 0 })
	if !b.health.Leading() || b.health.LeaderChanges() != 1 {
		t.Errorf("b after the takeover: leading %v, %d leader changes; want leading, 1", b.health.Leading(), b.health.LeaderChanges())
	}
}

// TestElectLostLease: a leader that cannot renew its Lease (the API server
// out of reach) stops its node within the renew
// deadline and returns errLostLease, so that it restarts as a standby.
func TestElectLostLease(t *testing.T) {
	client := fake.NewClientset()
	var failing atomic.Bool
	// installed first: reactors cannot be added while the client is used
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !failing.Load() {
			return false, nil, nil
		}
		// not a conflict: client-go retries a conflicting release without end
		return true, nil, apierrors.NewServiceUnavailable("the API server is unreachable")
	})
	a := startCandidate(t, client, "a")
	if !leads(a, 5*time.Second) {
		t.Fatal("a does not lead")
	}
	failing.Store(true)
	start := time.Now()
	select {
	case err := <-a.done:
		if !errors.Is(err, errLostLease) {
			t.Errorf("got %v; want errLostLease", err)
		}
		a.done <- nil
		t.Logf("leader stopped %s after its renewals began to fail", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("a still runs 10s after its lease could no longer be renewed")
	}
}
