//go:build rig

package site

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"net"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"golang.org/x/crypto/ssh"
)

// cuttableDial dials TCP, counts the dials and can cut the connections it
// made, as a broken network would.
type cuttableDial struct {
	mu    sync.Mutex
	n     int
	conns []net.Conn
}

func (d *cuttableDial) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cuttableDial) dials() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

func (d *cuttableDial) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

// rigConfig is a runner config for alice on the rig's login node.
func rigConfig(t *testing.T, rig *testrig.Rig, knownHosts string) SSHConfig {
	t.Helper()
	signer, err := sshx.Signer(rig.Get(t, "RIG_KEY"))
	if err != nil {
		t.Fatalf("Signer: %v", err)
	}
	check, err := sshx.HostKeys(knownHosts)
	if err != nil {
		t.Fatalf("HostKeys: %v", err)
	}
	return SSHConfig{
		Addr:            net.JoinHostPort(rig.Get(t, "RIG_LOGIN_ADDR"), rig.Get(t, "RIG_LOGIN_PORT")),
		User:            rig.Get(t, "RIG_USER"),
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: check,
		MaxStdout:       suiteMaxStdout,
		BackoffMin:      100 * time.Millisecond,
		BackoffMax:      time.Second,
		Logger:          testLogger(t),
	}
}

// rigDir makes a fresh directory under the rig's data root and removes it
// when the test ends.
func rigDir(t *testing.T, rig *testrig.Rig, r Runner) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	dir := path.Join(rig.Get(t, "RIG_DATA_ROOT"), "site-test-"+hex.EncodeToString(b[:]))
	if err := r.MkdirAll(ctxFor(t), dir, 0o700); err != nil {
		t.Fatalf("MkdirAll(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.RemoveAll(ctx, dir); err != nil {
			t.Errorf("RemoveAll(%s): %v", dir, err)
		}
	})
	return dir
}

func TestRigSSH(t *testing.T) {
	rig := testrig.Load(t)
	var dial cuttableDial
	cfg := rigConfig(t, rig, rig.Get(t, "RIG_KNOWN_HOSTS"))
	cfg.Dial = dial.Dial
	r := newSSH(t, cfg)
	ctx := ctxFor(t)

	out, err := r.Run(ctx, nil, "id", "-un")
	if got, want := strings.TrimSpace(string(out)), rig.Get(t, "RIG_USER"); err != nil || got != want {
		t.Fatalf("id -un = %q, %v; want %q", got, err, want)
	}
	testRunner(t, r, rigDir(t, rig, r))
	if got := dial.dials(); got != 1 {
		t.Errorf("dialed the login node %d times; want one connection for everything", got)
	}
	if err := r.Healthy(ctx); err != nil {
		t.Errorf("Healthy: %v", err)
	}
}

func TestRigSSHReconnect(t *testing.T) {
	rig := testrig.Load(t)
	var dial cuttableDial
	cfg := rigConfig(t, rig, rig.Get(t, "RIG_KNOWN_HOSTS"))
	cfg.Dial = dial.Dial
	r := newSSH(t, cfg)
	ctx := ctxFor(t)
	echo := func(word string) {
		t.Helper()
		if out, err := r.Run(ctx, nil, "echo", word); err != nil || string(out) != word+"\n" {
			t.Fatalf("echo %s = %q, %v; want %q", word, out, err, word+"\n")
		}
	}
	echo("before")

	// OpenSSH keeps established sessions when the listening sshd restarts:
	// the connection survives and needs no reconnect.
	rig.Ctl(t, "restart", "sshd-login")
	echo("after-restart")
	if got := dial.dials(); got != 1 {
		t.Errorf("dialed %d times across an sshd restart; want 1 (sessions survive it)", got)
	}

	// A command running when the connection breaks reports the loss...
	marker := path.Join(rigDir(t, rig, r), "started")
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, nil, "sh", "-c", `touch "$1" && exec sleep 10`, "sh", marker)
		done <- err
	}()
	waitFor(t, func() bool { _, err := r.Stat(ctx, marker); return err == nil })
	dial.cut()
	select {
	case err := <-done:
		if !errors.Is(err, ErrConnLost) {
			t.Errorf("sleep cut by a broken connection = %v; want ErrConnLost", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return within 15s of the connection breaking")
	}
	// ...and the next command reconnects, to the restarted sshd, once.
	echo("after-cut")
	if got := dial.dials(); got != 2 {
		t.Errorf("dialed %d times after one broken connection; want 2", got)
	}
	if err := r.WriteFile(ctx, path.Join(rigDir(t, rig, r), "f"), []byte("x"), 0o600); err != nil {
		t.Errorf("WriteFile after reconnecting: %v", err)
	}
}

func TestRigSSHUnpinnedHostKey(t *testing.T) {
	rig := testrig.Load(t)
	good := newSSH(t, rigConfig(t, rig, rig.Get(t, "RIG_KNOWN_HOSTS")))
	marker := path.Join(rigDir(t, rig, good), "ran")

	// known_hosts pinning a fresh key for the login node's own address.
	addr := net.JoinHostPort(rig.Get(t, "RIG_LOGIN_ADDR"), rig.Get(t, "RIG_LOGIN_PORT"))
	stranger := sshxtest.KnownHosts(t, addr, sshxtest.NewSigner(t).PublicKey())
	r := newSSH(t, rigConfig(t, rig, stranger))
	_, err := r.Run(ctxFor(t), nil, "touch", marker)
	var hke *sshx.HostKeyError
	if !errors.As(err, &hke) || !strings.Contains(err.Error(), "host key mismatch") {
		t.Fatalf("Run with an unpinned host key = %v; want a host key mismatch", err)
	}
	t.Logf("refused as expected: %v", err)
	if _, err := good.Stat(ctxFor(t), marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(%s) = %v; want ErrNotExist: the command must not run", marker, err)
	}
}
