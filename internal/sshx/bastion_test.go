package sshx

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
)

func TestBastionHostKeyChecked(t *testing.T) {
	srv := sshxtest.Start(t)
	other := sshxtest.NewSigner(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	b := &Bastion{Addr: srv.Addr, Config: clientConfig(t, srv, other.PublicKey())}
	conn, err := b.DialContext(ctx, "tcp", "10.0.0.1:22")
	if err == nil {
		conn.Close()
		t.Fatal("a bastion showing an unpinned key was used; want a host key error")
	}
	var keyErr *HostKeyError
	if !errors.As(err, &keyErr) {
		t.Fatalf("err = %v; want a *HostKeyError", err)
	}
	if !strings.HasPrefix(err.Error(), "bastion "+srv.Addr+": ") {
		t.Errorf("err = %q; want it to name the bastion %s", err, srv.Addr)
	}
}

func TestBastionChannelRefused(t *testing.T) {
	// The test server opens no direct-tcpip channel: the bastion is
	// reached and its key accepted, then the hop is refused.
	srv := sshxtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	b := &Bastion{Addr: srv.Addr, Config: clientConfig(t, srv, srv.HostKey.PublicKey())}
	conn, err := b.DialContext(ctx, "tcp", "10.0.0.1:22")
	if err == nil {
		conn.Close()
		t.Fatal("DialContext through a bastion that refuses the channel succeeded")
	}
	if !strings.Contains(err.Error(), "open a channel to 10.0.0.1:22") {
		t.Errorf("err = %q; want it to say the channel to 10.0.0.1:22 was refused", err)
	}
	if srv.Accepted() != 1 {
		t.Errorf("bastion accepted %d connections; want 1", srv.Accepted())
	}
}

func TestBastionNotConfigured(t *testing.T) {
	var b *Bastion
	if _, err := b.DialContext(context.Background(), "tcp", "10.0.0.1:22"); err == nil {
		t.Error("a nil bastion dialed; want an error")
	}
	if _, err := (&Bastion{Addr: "10.0.0.2:22"}).DialContext(context.Background(), "tcp", "10.0.0.1:22"); err == nil {
		t.Error("a bastion without a config dialed; want an error")
	}
}
