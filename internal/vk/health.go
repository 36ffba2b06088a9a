package vk

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/site"
)

// Bounds of the liveness judgement. They are far above what a working
// sluice-vk takes, so that only a stuck one is restarted.
const (
	// syncGrace is how long the pod informer may take to sync after the
	// node starts.
	syncGrace = 2 * time.Minute
	// wedgeGrace is how long a site command may stay in flight past its
	// context's deadline: the runner kills a command at its deadline, so
	// one still there a minute later is stuck with its session.
	wedgeGrace = time.Minute
	// maxCommandAge bounds a site command without a deadline (status
	// polls run under the node's context): twice the longest bounded one
	// (a submission's 5 minutes).
	maxCommandAge = 10 * time.Minute
	// leaseTolerance is how long a leader may go past its Lease's expiry
	// before it is no longer live: client-go's own health adaptor value.
	leaseTolerance = 20 * time.Second
)

// Health is what sluice-vk's /healthz and /readyz judge, told by the
// parts that know: the leader election and the running node. The zero
// value is a process that runs its node without an election and has not
// started it yet. Its methods are safe for concurrent use.
type Health struct {
	// Now tells the time. If nil, time.Now.
	Now func() time.Time

	mu       sync.Mutex
	elected  bool         // the node runs under leader election
	leading  bool         // this replica holds the Lease
	leader   string       // the leader a standby knows of
	lease    func() error // the leader's Lease check; nil if none
	started  time.Time    // when this replica started its node; zero if it did not
	synced   func() bool  // the pod informer's HasSynced
	ready    <-chan struct{}
	commands func() []site.Command
	changes  int // leaders seen after the first
}

// health is a snapshot of Health, judged by live and ready.
type health struct {
	elected, leading bool
	leader           string
	leaseErr         error
	started          time.Time
	synced           bool
	registered       bool
	commands         []site.Command
}

func (h *Health) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Health) snapshot() health {
	h.mu.Lock()
	s := health{elected: h.elected, leading: h.leading, leader: h.leader, started: h.started}
	lease, synced, ready, commands := h.lease, h.synced, h.ready, h.commands
	h.mu.Unlock()
	if s.leading && lease != nil {
		s.leaseErr = lease()
	}
	s.synced = synced != nil && synced()
	if ready != nil {
		select {
		case <-ready:
			s.registered = true
		default:
		}
	}
	if commands != nil {
		s.commands = commands()
	}
	return s
}

// Live reports why the process should be restarted, or nil.
func (h *Health) Live() error {
	if h == nil {
		return nil
	}
	return h.snapshot().live(h.now())
}

// Ready reports why the process cannot serve yet, or nil.
func (h *Health) Ready() error {
	if h == nil {
		return nil
	}
	return h.snapshot().ready(h.now())
}

// live: the Lease held (or standing by), the pod informer synced, and no
// site command stuck.
func (s health) live(now time.Time) error {
	var errs []error
	if s.leaseErr != nil {
		errs = append(errs, fmt.Errorf("leader election: %w", s.leaseErr))
	}
	if !s.started.IsZero() && !s.synced && now.Sub(s.started) > syncGrace {
		errs = append(errs, fmt.Errorf("pod informer not synced %v after the node started", now.Sub(s.started).Round(time.Second)))
	}
	if c, late, ok := site.Overdue(s.commands, now, wedgeGrace, maxCommandAge); ok {
		errs = append(errs, fmt.Errorf("site runner wedged: %s in flight for %v, %v past its bound", c.Name, now.Sub(c.Started).Round(time.Second), late.Round(time.Second)))
	}
	return errors.Join(errs...)
}

// ready: live, and either running the node with the node registered, or a
// standby that knows its leader (it reaches the API server and can take
// over).
func (s health) ready(now time.Time) error {
	if err := s.live(now); err != nil {
		return err
	}
	switch {
	case s.elected && !s.leading && s.leader != "":
		return nil
	case s.elected && !s.leading:
		return errors.New("standby: no leader seen yet")
	case s.started.IsZero():
		return errors.New("node not started")
	case !s.registered:
		return errors.New("node not registered yet")
	}
	return nil
}

// electing records that the node runs under leader election.
func (h *Health) electing() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.elected = true
	h.mu.Unlock()
}

// newLeader records the leader this replica saw.
func (h *Health) newLeader(id string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.leader != "" && h.leader != id {
		h.changes++
	}
	h.leader = id
	h.mu.Unlock()
}

// setLeading records whether this replica leads, and its Lease check.
func (h *Health) setLeading(leading bool, lease func() error) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.leading, h.lease = leading, lease
	h.mu.Unlock()
}

// nodeStarted records the node starting, with what tells its informer
// synced, its registration, and the site commands in flight.
func (h *Health) nodeStarted(synced func() bool, registered <-chan struct{}, commands func() []site.Command) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.started, h.synced, h.ready, h.commands = h.now(), synced, registered, commands
	h.mu.Unlock()
}

// Leading reports whether this replica holds the Lease.
func (h *Health) Leading() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leading
}

// LeaderChanges is how many times this replica saw the leader change.
func (h *Health) LeaderChanges() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changes
}
