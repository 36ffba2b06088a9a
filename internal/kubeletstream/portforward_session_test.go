package kubeletstream

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
)

// silentJob listens like a job's server that accepts connections and
// never answers nor closes them, and returns its port.
func silentJob(t testing.TB) int {
	t.Helper()
	_, port, err := net.SplitHostPort(sshxtest.SilentListener(t))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// srunServer is execServer carrying port-forward with srun; pids lists the
// relays srun started (a wrapper records each one's PID).
func srunServer(t testing.TB) (s *Server, pids func() []int) {
	t.Helper()
	s, _ = execServer(t)
	relay := buildRelay(t)
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "relay")
	script := "#!/bin/sh\necho $$ > " + dir + "/pid.$$\nexec " + relay + ` "$@"` + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s.Srun = &SrunCarrier{Relay: func(context.Context) (string, error) { return wrapper, nil }}
	return s, func() []int {
		files, _ := filepath.Glob(filepath.Join(dir, "pid.*"))
		var out []int
		for _, f := range files {
			if n, err := strconv.Atoi(strings.TrimPrefix(filepath.Ext(f), ".")); err == nil {
				out = append(out, n)
			}
		}
		return out
	}
}

// alive tells whether process pid runs (and is not a zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestPortForwardStreamEndsWithItsSession: a stream to a job's server that
// never closes ends when kubectl's connection does. virtual-kubelet gives
// each stream context.Background(): before, its srun step (and carrier
// slot) stayed for ever.
func TestPortForwardStreamEndsWithItsSession(t *testing.T) {
	s, pids := srunServer(t)
	srv := kubeletAPI(t, s)
	port := silentJob(t)
	conn := forwardConn(t, srv, "ns", "pod")
	data, _ := forwardStream(t, conn, 0, port)
	if _, err := data.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if !waitFor(20*time.Second, func() bool { return len(pids()) == 1 && alive(pids()[0]) }) {
		t.Fatal("the relay did not start within 20s")
	}
	pid := pids()[0]
	conn.Close()
	if !waitFor(10*time.Second, func() bool { return !alive(pid) }) {
		t.Errorf("the relay (pid %d) still runs 10s after kubectl's connection ended", pid)
	}
}

// TestPortForwardStreamsPerSession: a session's stream beyond
// streamsPerSession is refused with a message on its error stream, and
// the session's other streams go on.
func TestPortForwardStreamsPerSession(t *testing.T) {
	s, _ := srunServer(t)
	srv := kubeletAPI(t, s)
	port := silentJob(t)
	conn := forwardConn(t, srv, "ns", "pod")
	for i := range streamsPerSession {
		forwardStream(t, conn, i, port)
	}
	_, errs := forwardStream(t, conn, streamsPerSession, port)
	wantMessage(t, errs, "too many port-forward streams in this session", 10*time.Second)
}

// TestPortForwardStreamIdle: a stream that carried nothing either way for
// Limits.StreamIdle is ended, with a message, and gives its carrier slot
// back.
func TestPortForwardStreamIdle(t *testing.T) {
	s, pids := srunServer(t)
	s.Limits = Limits{StreamIdle: 500 * time.Millisecond}
	srv := kubeletAPI(t, s)
	port := silentJob(t)
	conn := forwardConn(t, srv, "ns", "pod")
	data, errs := forwardStream(t, conn, 0, port)
	if _, err := data.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	wantMessage(t, errs, "the stream carried nothing either way for 500ms", 20*time.Second)
	if !waitFor(10*time.Second, func() bool { p := pids(); return len(p) == 1 && !alive(p[0]) }) {
		t.Errorf("the relay still runs after its stream was ended for idling")
	}
	// The session goes on: another stream is carried.
	data, _ = forwardStream(t, conn, 1, port)
	if _, err := data.Write([]byte("again")); err != nil {
		t.Fatal(err)
	}
	if !waitFor(20*time.Second, func() bool { return len(pids()) == 2 }) {
		t.Error("the session's next stream was not carried after the first one idled out")
	}
}

// chattyJob listens like a job's server that sends without end to each
// connection.
func chattyJob(t *testing.T) int {
	t.Helper()
	addr := sshxtest.ServeLoopback(t, func(c net.Conn) {
		b := make([]byte, 32<<10)
		for {
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	})
	_, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	return n
}

// TestPortForwardStalledClient: a session whose client stops reading is
// closed after Limits.Stall instead of having what the job sends pile up
// in sluice-vk.
func TestPortForwardStalledClient(t *testing.T) {
	s, _ := srunServer(t)
	s.Limits = Limits{Stall: 300 * time.Millisecond}
	srv := kubeletAPI(t, s)
	port := chattyJob(t)
	conn := forwardConn(t, srv, "ns", "pod")
	data, _ := forwardStream(t, conn, 0, port)
	if _, err := data.Write([]byte("GET /big")); err != nil {
		t.Fatal(err)
	}
	// The client reads nothing: its connection's buffers fill, then the
	// server's writes wait. (The client's own SPDY reader is stuck too, so
	// it is sluice-vk's side that tells.)
	if !waitFor(2*time.Second, func() bool { return s.streams.held() == 1 }) {
		t.Fatal("the stream did not start")
	}
	if !waitFor(30*time.Second, func() bool { return s.forwards.held() == 0 && s.streams.held() == 0 }) {
		t.Fatalf("the session of a client that reads nothing still held %d session(s), %d stream(s) after 30s",
			s.forwards.held(), s.streams.held())
	}
}
