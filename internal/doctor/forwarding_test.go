package doctor

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestClassifyForward(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		request bool
		want    forwardOutcome
	}{
		{"made", nil, false, forwardAllowed},
		{"prohibited", &ssh.OpenChannelError{Reason: ssh.Prohibited, Message: "open failed"}, false, forwardRefused},
		{"nothing listens", &ssh.OpenChannelError{Reason: ssh.ConnectionFailed, Message: "connect failed"}, false, forwardAllowed},
		{"request denied", errors.New("ssh: streamlocal-forward@openssh.com request denied by peer"), true, forwardRefused},
		{"connection lost", errors.New("EOF"), false, forwardAllowed},
	} {
		if got := classifyForward(tc.err, tc.request); got != tc.want {
			t.Errorf("%s: got %d; want %d", tc.name, got, tc.want)
		}
	}
}

func TestDecideForwarding(t *testing.T) {
	const sshd = "node1's sshd (SSH-2.0-OpenSSH_10.0)"
	for _, tc := range []struct {
		name        string
		tcp, stream forwardOutcome
		needed      bool
		status      Status
		found, fix  string
	}{
		{"both allowed", forwardAllowed, forwardAllowed, true, OK, "does not refuse TCP forwarding nor unix-socket", ""},
		{"stream not checked", forwardAllowed, forwardNotChecked, true, OK, "does not refuse TCP forwarding", ""},
		{"DisableForwarding", forwardRefused, forwardRefused, true, Fail, "refuses TCP and unix-socket forwarding (DisableForwarding yes", "Reverse.Sshd: userspace"},
		{"AllowTcpForwarding no", forwardRefused, forwardAllowed, false, Warn, "refuses TCP forwarding (AllowTcpForwarding no)", "Reverse.Sshd: userspace"},
		{"AllowStreamLocalForwarding no", forwardAllowed, forwardRefused, true, Fail, "refuses unix-socket forwarding (AllowStreamLocalForwarding no)", "Reverse.NodeExec: srun"},
	} {
		c := decideNodeForwarding(sshd, tc.tcp, tc.stream, tc.needed)
		if c.Name != "node-forwarding" || c.Status != tc.status || !strings.Contains(c.Found, tc.found) || !strings.Contains(c.Fix, tc.fix) || (tc.fix == "") != (c.Fix == "") {
			t.Errorf("%s: got %+v; want %s with %q, fix %q", tc.name, c, tc.status, tc.found, tc.fix)
		}
		if !strings.HasPrefix(c.Found, sshd) {
			t.Errorf("%s: %q does not name the sshd", tc.name, c.Found)
		}
	}
	for _, tc := range []struct {
		tcp    forwardOutcome
		needed bool
		status Status
	}{{forwardAllowed, true, OK}, {forwardRefused, true, Fail}, {forwardRefused, false, Warn}} {
		c := decideLoginForwarding("the login node's sshd", tc.tcp, tc.needed)
		if c.Name != "login-forwarding" || c.Status != tc.status || (c.Status != OK && !strings.Contains(c.Fix, "Reverse.NodeExec: srun with Reverse.Sshd: userspace")) {
			t.Errorf("login, %d needed %v: got %+v; want %s", tc.tcp, tc.needed, c, tc.status)
		}
	}
}

func TestDecideSbatchOptions(t *testing.T) {
	c := decideSbatchOptions(nil, errors.New("learn sbatch options: sbatch --version: \x1b[31mnot found"))
	if c.Status != Warn || !strings.Contains(c.Found, "built-in table of Slurm 22.05") || strings.Contains(c.Found, "\x1b") || c.Fix == "" {
		t.Errorf("fallback: got %+v", c)
	}
}
