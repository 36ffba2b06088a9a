package tunnel

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx"
)

// State is what a tunnel is doing, as its Status tells it.
type State string

const (
	// StateWaiting: no compute node is known yet (the job has not started).
	StateWaiting State = "waiting"
	// StateConnecting: a node is known and the first connection to it is
	// being made.
	StateConnecting State = "connecting"
	// StateUp: the SSH connection to the node is established (forward), or
	// the forwards are held on it (reverse).
	StateUp State = "up"
	// StateDown: the connection failed or was lost; it is being made again
	// with backoff.
	StateDown State = "down"
	// StateHostKeyRejected: a host key did not match its pinned
	// known_hosts; nothing was sent, and the next attempt waits the longest
	// backoff.
	StateHostKeyRejected State = "host-key-rejected"
)

// The modes a Snapshot names.
const (
	ModeForward = "forward"
	ModeReverse = "reverse"
)

// Snapshot is a tunnel's state at one moment, as GET /status of
// sluice-tunnel serves it (JSON) and the virtual kubelet reads it.
type Snapshot struct {
	// Mode is "forward" or "reverse".
	Mode  string `json:"mode"`
	State State  `json:"state"`
	// Node is the compute node the state is about, "" while none is known.
	Node string `json:"node,omitempty"`
	// Error is why the tunnel is down or its host key was rejected.
	Error string `json:"error,omitempty"`
	// Since is when State last changed.
	Since time.Time `json:"since"`
	// Ups counts the times the tunnel came up: above 1, it came back after
	// a loss.
	Ups int `json:"ups"`
	// EntryDir is the pod's socket directory whose relay new forward
	// connections go to (a Forward with an EntryDirFile), as last read: ""
	// while none is known. After a renewal it names the successor's, once
	// the tunnel reads it.
	EntryDir string `json:"entryDir,omitempty"`
	// Refused counts the connections the site refused, since the tunnel
	// started, for a reason the pod's author is to be told of: another
	// user holds the job's port, the job's port file is bad, forwarding is
	// prohibited. LastRefusal is the last one's reason.
	Refused     int    `json:"refused,omitempty"`
	LastRefusal string `json:"lastRefusal,omitempty"`
}

// Status holds a tunnel's Snapshot, updated by the tunnel as it goes. A
// nil *Status records nothing: every method is safe to call on it.
type Status struct {
	now func() time.Time
	mu  sync.Mutex
	cur Snapshot
}

// NewStatus returns the status of a tunnel of mode, waiting for its node.
func NewStatus(mode string) *Status {
	s := &Status{now: time.Now}
	s.cur = Snapshot{Mode: mode, State: StateWaiting, Since: s.now()}
	return s
}

// Snapshot returns the current state.
func (s *Status) Snapshot() Snapshot {
	if s == nil {
		return Snapshot{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// set moves to state for node. An error is kept only for the states that
// have one; a state repeated for the same node keeps its Since but takes
// the newer error.
func (s *Status) set(state State, node string, err error) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.State != state || s.cur.Node != node {
		s.cur.Since = s.now()
		if state == StateUp {
			s.cur.Ups++
		}
	}
	s.cur.State, s.cur.Node, s.cur.Error = state, node, ""
	if err != nil && (state == StateDown || state == StateHostKeyRejected) {
		s.cur.Error = err.Error()
	}
}

// setEntryDir records dir as the socket directory new forward connections
// go to.
func (s *Status) setEntryDir(dir string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.EntryDir = dir
}

// maxRefusalLen bounds a refusal's reason as Status keeps it: it ends in
// an Event's message.
const maxRefusalLen = 300

// siteRefused records a connection the site refused for reason.
func (s *Status) siteRefused(reason string) {
	if s == nil {
		return
	}
	if len(reason) > maxRefusalLen {
		reason = strings.ToValidUTF8(reason[:maxRefusalLen], "") + "…"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.Refused++
	s.cur.LastRefusal = reason
}

// failed records a failed or lost connection to node: rejected when err is
// a host key mismatch, down otherwise.
func (s *Status) failed(node string, err error) {
	var keyErr *sshx.HostKeyError
	if errors.As(err, &keyErr) {
		s.set(StateHostKeyRejected, node, err)
		return
	}
	s.set(StateDown, node, err)
}

// ServeHTTP answers with the Snapshot as JSON.
func (s *Status) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(s.Snapshot())
}
