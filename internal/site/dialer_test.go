package site

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
)

func TestDialerSharedAndPaced(t *testing.T) {
	srv := sshxtest.Start(t)
	c := &config.Config{}
	c.Network.SSH.Pacing = config.Pacing{Rate: 20, Burst: 1}
	start := time.Now()
	for range 4 {
		// A Dialer asked again for the same configuration is the same
		// one: the four dials share one bucket.
		dial, err := Dialer(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := dial(context.Background(), "tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	// Burst 1 at 20/s: the 3 dials after the first wait 50 ms each.
	if d := time.Since(start); d < 140*time.Millisecond {
		t.Errorf("4 dials at 20/s, burst 1, took %v; want at least 150ms", d)
	}
	// Another configuration has a bucket of its own.
	other := &config.Config{}
	other.Network.SSH.Pacing = config.Pacing{Rate: 20, Burst: 1}
	dial, err := Dialer(other, nil)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	conn, err := dial(context.Background(), "tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if d := time.Since(start); d > 40*time.Millisecond {
		t.Errorf("first dial of another configuration took %v; want no wait", d)
	}
}

func TestDialerBastionFiles(t *testing.T) {
	dir := t.TempDir()
	srv := sshxtest.Start(t)
	key, _ := writeKey(t)
	c := &config.Config{}
	c.Network.SSH.KeyFile = key
	c.Network.SSH.Bastion = config.Bastion{Host: "10.0.0.9", KnownHostsFile: filepath.Join(dir, "missing")}
	if _, err := Dialer(c, nil); err == nil || !strings.Contains(err.Error(), "Network.SSH.Bastion.KnownHostsFile") {
		t.Errorf("Dialer with a missing bastion known_hosts: %v; want an error naming Network.SSH.Bastion.KnownHostsFile", err)
	}
	c = &config.Config{}
	c.Network.SSH.Bastion = config.Bastion{Host: "10.0.0.9", KeyFile: filepath.Join(dir, "nokey"),
		KnownHostsFile: sshxtest.KnownHosts(t, "10.0.0.9:22", srv.HostKey.PublicKey())}
	if _, err := Dialer(c, nil); err == nil || !strings.Contains(err.Error(), "Network.SSH.Bastion.KeyFile") {
		t.Errorf("Dialer with a missing bastion key: %v; want an error naming Network.SSH.Bastion.KeyFile", err)
	}
}
