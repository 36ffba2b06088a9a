package relay

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRelaySurvivesEMFILE lowers the running relay's file limit until accept
// fails with EMFILE, and checks that the listener logs it, backs off and
// serves the waiting connection once descriptors are free again.
func TestRelaySurvivesEMFILE(t *testing.T) {
	s := startSetup(t, 1, true)
	pid := s.proc.cmd.Process.Pid
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	// prlimit runs as the relay's user: lowering a process's limit needs
	// the same uid, or CAP_SYS_RESOURCE, which a container's root may lack.
	limit := len(fds) + 8
	cmd := exec.Command("prlimit", "--pid", strconv.Itoa(pid), fmt.Sprintf("--nofile=%d:%d", limit, limit))
	asUser(cmd, s.users.alice)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("prlimit: %v\n%s", err, out)
	}
	// Hold relayed connections open until the relay runs out of
	// descriptors and accept fails.
	var held []*net.TCPConn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for !strings.Contains(s.proc.log(t), failureMessages[acceptError]) {
		if len(held) == limit {
			t.Fatalf("no accept error after %d held connections:\n%s", len(held), s.proc.log(t))
		}
		c, err := dialAs(s.users.alice.uid, s.server(0), false)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		roundTrip(c, "held") // the last ones may fail: the relay is out of descriptors
	}
	t.Logf("accept failed with %d connections held", len(held))
	for _, c := range held {
		c.Close()
	}
	held = nil
	// The listener lives on: once descriptors are free, it serves again.
	c, err := dialAs(s.users.alice.uid, s.server(0), false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "after EMFILE"); got != "after EMFILE" || err != nil {
		t.Errorf("after EMFILE: got %q, %v; want %q", got, err, "after EMFILE")
	}
	log := s.proc.log(t)
	if !strings.Contains(log, "too many open files") {
		t.Errorf("accept error does not say EMFILE:\n%s", log)
	}
	if n := countLines(log, failureMessages[acceptError]); n != 1 {
		t.Errorf("accept errors logged: got %d lines; want 1 (then every 1000th)\n%s", n, log)
	}
}

// roundTrip writes msg on c and reads as many bytes back.
func roundTrip(c *net.TCPConn, msg string) (string, error) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	buf := make([]byte, len(msg))
	n, err := io.ReadFull(c, buf)
	return string(buf[:n]), err
}
