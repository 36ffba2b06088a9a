package tunnel

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	jobrelay "github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
)

func TestStatusTransitions(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	s := NewStatus("forward")
	s.now = func() time.Time { return now }
	tick := func() { now = now.Add(time.Second) }
	keyErr := fmt.Errorf("node node1: %w", &sshx.HostKeyError{Host: "node1:22", Err: errors.New("key mismatch")})

	steps := []struct {
		do    func()
		state State
		node  string
		error bool
		ups   int
		moved bool // Since changed
	}{
		{func() {}, StateWaiting, "", false, 0, false},
		{func() { s.set(StateConnecting, "node1", nil) }, StateConnecting, "node1", false, 0, true},
		{func() { s.failed("node1", errors.New("dial: refused")) }, StateDown, "node1", true, 0, true},
		{func() { s.failed("node1", errors.New("dial: refused again")) }, StateDown, "node1", true, 0, false},
		{func() { s.set(StateUp, "node1", errors.New("ignored")) }, StateUp, "node1", false, 1, true},
		{func() { s.set(StateUp, "node1", nil) }, StateUp, "node1", false, 1, false},
		{func() { s.failed("node1", errors.New("lost")) }, StateDown, "node1", true, 1, true},
		{func() { s.set(StateUp, "node1", nil) }, StateUp, "node1", false, 2, true},
		{func() { s.set(StateConnecting, "node2", nil) }, StateConnecting, "node2", false, 2, true},
		{func() { s.failed("node2", keyErr) }, StateHostKeyRejected, "node2", true, 2, true},
		{func() { s.set(StateWaiting, "", nil) }, StateWaiting, "", false, 2, true},
	}
	for i, st := range steps {
		before := s.Snapshot().Since
		tick()
		st.do()
		got := s.Snapshot()
		if got.State != st.state || got.Node != st.node || (got.Error != "") != st.error || got.Ups != st.ups || got.Mode != "forward" {
			t.Errorf("step %d: %+v; want state %s node %q error %t ups %d", i, got, st.state, st.node, st.error, st.ups)
		}
		if moved := !got.Since.Equal(before); moved != st.moved {
			t.Errorf("step %d: Since moved %t; want %t", i, moved, st.moved)
		}
	}
}

func TestStatusNil(t *testing.T) {
	var s *Status
	s.set(StateUp, "node1", nil)
	s.failed("node1", errors.New("x"))
	if got := s.Snapshot(); got != (Snapshot{}) {
		t.Errorf("nil status snapshot = %+v; want zero", got)
	}
}

func TestStatusServeHTTP(t *testing.T) {
	s := NewStatus("reverse")
	s.failed("node1", errors.New("ssh: handshake failed"))
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("GET", "/status", nil))
	var got Snapshot
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("body %q: %v", w.Body, err)
	}
	if got.Mode != "reverse" || got.State != StateDown || got.Node != "node1" || got.Error != "ssh: handshake failed" {
		t.Errorf("served %+v", got)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

// TestSiteRefusal: what the pod's author is told of, and what not.
func TestSiteRefusal(t *testing.T) {
	owner := &jobrelay.RefusedError{Reason: "port 8080: listener 127.0.0.1:8080 owned by uid 1002, not the job's uid 1001", Report: true}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"the relay's reported refusal, wrapped", fmt.Errorf("dial fwd.sock via login: %w", &entryError{owner}), owner.Error()},
		{"the relay's usual refusal", &entryError{&jobrelay.RefusedError{Reason: "port 8080: nothing listens"}}, ""},
		{"the gateway's prohibition", fmt.Errorf("dial: %w", &ssh.OpenChannelError{Reason: ssh.Prohibited, Message: "forward to port 8080 on node n1: " + owner.Error()}),
			"forward to port 8080 on node n1: " + owner.Error()},
		{"an sshd's prohibition, no message", &ssh.OpenChannelError{Reason: ssh.Prohibited}, "administratively prohibited"},
		{"a failed connect", &ssh.OpenChannelError{Reason: ssh.ConnectionFailed, Message: "connect failed"}, ""},
		{"no node", errNoNode, ""},
	}
	for _, tc := range cases {
		got, ok := siteRefusal(tc.err)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
	s := NewStatus(ModeForward)
	s.siteRefused("short")
	s.siteRefused(strings.Repeat("é", 400))
	snap := s.Snapshot()
	if snap.Refused != 2 || len(snap.LastRefusal) > maxRefusalLen+len("…") || !utf8.ValidString(snap.LastRefusal) {
		t.Errorf("after two refusals: %d, %q; want 2 and a valid reason of at most %d bytes", snap.Refused, snap.LastRefusal, maxRefusalLen)
	}
	var none *Status
	none.siteRefused("nothing kept") // a nil Status records nothing
}
