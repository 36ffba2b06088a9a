package site

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
)

// Stats counts connections made, failures by reason, and the sessions open
// while a command runs (none once it has ended).
func TestSSHStats(t *testing.T) {
	srv := sshxtest.Start(t)
	r := newSSH(t, testSSHConfig(t, srv))
	ctx := ctxFor(t)
	out, err := r.Run(ctx, nil, "sh", "-c", "sleep 0.3; echo ok")
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("Run = %q, %v", out, err)
	}
	done := make(chan error, 1)
	go func() { _, err := r.Run(ctx, nil, "sleep", "1"); done <- err }()
	waitFor(t, func() bool { return r.Stats().Sessions == 1 && len(r.Activity().InFlight()) == 1 })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	srv.Drop()
	if _, err := r.Run(ctx, nil, "true"); err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	if st.Connects != 2 || st.Sessions != 0 || len(st.Failures) != 0 {
		t.Errorf("stats %+v; want 2 connects, no session open, no failure", st)
	}
	if n := len(r.Activity().InFlight()); n != 0 {
		t.Errorf("%d commands in flight after all ended; want 0", n)
	}
}

func TestSSHStatsFailures(t *testing.T) {
	srv := sshxtest.Start(t)
	wrongHost := testSSHConfig(t, srv)
	check, err := sshx.HostKeys(sshxtest.KnownHosts(t, srv.Addr, sshxtest.NewSigner(t).PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	wrongHost.HostKeyCallback = check
	wrongKey := testSSHConfig(t, srv)
	wrongKey.Auth = []ssh.AuthMethod{ssh.PublicKeys(sshxtest.NewSigner(t))}
	for _, tt := range []struct {
		cfg  SSHConfig
		want string
	}{{wrongHost, FailHostKey}, {wrongKey, FailAuth}} {
		r := newSSH(t, tt.cfg)
		if _, err := r.Run(ctxFor(t), nil, "true"); err == nil {
			t.Fatalf("%s: Run succeeded", tt.want)
		}
		if st := r.Stats(); st.Failures[tt.want] != 1 || st.Connects != 0 {
			t.Errorf("stats %+v; want one %s failure, no connection", st, tt.want)
		}
	}
}

func TestFailureReason(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("ssh handshake x: %w", &sshx.HostKeyError{Err: errors.New("mismatch")}), FailHostKey},
		{fmt.Errorf("ssh handshake x: %w", context.DeadlineExceeded), FailTimeout},
		{errors.New("ssh handshake x: ssh: unable to authenticate, attempted methods [none publickey]"), FailAuth},
		{fmt.Errorf("ssh dial x: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), FailNetwork},
		{errors.New("something else"), FailOther},
	} {
		if got := failure(tt.err); got != tt.want {
			t.Errorf("failure(%v) = %s; want %s", tt.err, got, tt.want)
		}
	}
}
