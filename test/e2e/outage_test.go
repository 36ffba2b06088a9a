//go:build e2e

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// loginNetns is the network namespace the rig runs the login node's sshd in.
const loginNetns = "sluice-login"

// cutLogin cuts the virtual kubelet off the login node: it stops the login
// node's sshd and, since OpenSSH keeps established connections when its
// listener stops, kills the login node's per-connection sshd processes of
// the rig's user. It returns the function that starts the sshd again;
// Cleanup calls it if the test did not.
func (e *env) cutLogin() (restore func()) {
	e.t.Helper()
	user := e.rig.Get(e.t, "RIG_USER")
	e.rig.Ctl(e.t, "stop", "sshd-login")
	restored := false
	restore = func() {
		e.t.Helper()
		if !restored {
			restored = true
			e.rig.Ctl(e.t, "start", "sshd-login")
		}
	}
	e.t.Cleanup(restore)
	pids, err := sessionPids(loginNetns, user)
	if err != nil {
		e.t.Fatalf("find the login node's sshd sessions: %v", err)
	}
	if len(pids) == 0 {
		e.t.Fatalf("no sshd session of %s in %s; want the virtual kubelet's", user, loginNetns)
	}
	killAll(e.t, pids)
	e.t.Logf("login sshd stopped, %d session processes of %s killed", len(pids), user)
	return restore
}

// sessionPids are the per-connection sshd processes of user in the network
// namespace ns: "sshd: USER [priv]" and "sshd: USER@notty", and the like.
func sessionPids(ns, user string) ([]int, error) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns pids %s: %w", ns, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("ip netns pids %s: %q is no pid", ns, f)
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue // gone since
		}
		args := string(bytes.TrimRight(cmdline, "\x00"))
		if rest, ok := strings.CutPrefix(args, "sshd: "+user); ok && (rest == "" || rest[0] == ' ' || rest[0] == '@') {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// killAll kills the processes pids; one already gone is fine.
func killAll(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("kill sshd session %d: %v", pid, err)
		}
	}
}
