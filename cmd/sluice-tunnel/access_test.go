package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/tunnel"
)

func TestAccessFlags(t *testing.T) {
	c, err := parseArgs(modeForward, argv(forwardFlags, map[string]string{
		"bastion": "bastion.example", "bastion-user": "alice2", "bastion-known-hosts": "/etc/sluice/bastion-hosts/known_hosts",
		"reconnect-spread": "100ms", "reconnect-window-max": "10s", "tunnels-file": "/etc/sluice/node/tunnels",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := accessFlags{
		bastion: "bastion.example:22", bastionUser: "alice2", bastionKnownHosts: "/etc/sluice/bastion-hosts/known_hosts",
		spread: 100 * time.Millisecond, windowMax: 10 * time.Second, tunnelFile: "/etc/sluice/node/tunnels",
	}
	if c.access != want {
		t.Errorf("access = %+v; want %+v", c.access, want)
	}
}

func TestAccessFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		changes map[string]string
		want    string
	}{
		{map[string]string{"bastion": "bastion.example"}, "--bastion-known-hosts is required with --bastion"},
		{map[string]string{"bastion": "bastion.example:0", "bastion-known-hosts": "/k"}, "--bastion:"},
		{map[string]string{"bastion": "-oProxyCommand=x", "bastion-known-hosts": "/k"}, "--bastion:"},
		{map[string]string{"bastion": "b.example", "bastion-known-hosts": "/k", "bastion-user": "-x"}, "--bastion-user:"},
		{map[string]string{"bastion-known-hosts": "/k"}, "need --bastion"},
		{map[string]string{"bastion-key": "/k"}, "need --bastion"},
		{map[string]string{"reconnect-spread": "-1s"}, "--reconnect-spread: -1s is negative"},
		{map[string]string{"reconnect-window-max": "0s"}, "--reconnect-window-max: 0s"},
		{map[string]string{"tunnels-file": "/t"}, "--tunnels-file needs --reconnect-spread"},
	} {
		_, err := parseArgs(modeForward, argv(forwardFlags, tc.changes))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseArgs with %v: err = %v; want one containing %q", tc.changes, err, tc.want)
		}
	}
}

func TestParseTunnels(t *testing.T) {
	for in, want := range map[string]int{"50\n": 50, "": 0, " 0 ": 0, "100000": 100000} {
		if got, err := parseTunnels(in); err != nil || got != want {
			t.Errorf("parseTunnels(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "100001", "5x", "0x10", "1e3", "99999999999999999999"} {
		if got, err := parseTunnels(in); err == nil {
			t.Errorf("parseTunnels(%q) = %d; want an error", in, got)
		}
	}
}

func FuzzParseTunnels(f *testing.F) {
	for _, s := range []string{"50", "", "-1", "1e3", " 7\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseTunnels(s)
		if err == nil && (n < 0 || n > maxTunnels) {
			t.Errorf("parseTunnels(%q) = %d; want 0..%d", s, n, maxTunnels)
		}
	})
}

func TestReconnectWindow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tunnels")
	a := accessFlags{spread: 100 * time.Millisecond, windowMax: 3 * time.Second, tunnelFile: file}
	window := a.window(slog.New(slog.DiscardHandler))
	if got := window(); got != 3*time.Second {
		t.Errorf("window with no file = %v; want the widest, 3s", got)
	}
	for content, want := range map[string]time.Duration{"5": 500 * time.Millisecond, "500": 3 * time.Second, "bad": 3 * time.Second, "": 100 * time.Millisecond} {
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := window(); got != want {
			t.Errorf("window with %q tunnels = %v; want %v", content, got, want)
		}
	}
	a.tunnelFile = ""
	if got := a.window(slog.New(slog.DiscardHandler))(); got != 3*time.Second {
		t.Errorf("window without --tunnels-file = %v; want 3s", got)
	}
}

func TestAccessLoad(t *testing.T) {
	hop := &tunnel.Hop{}
	a := accessFlags{windowMax: time.Second}
	if errs := a.load(hop, "alice", nil, slog.New(slog.DiscardHandler)); len(errs) > 0 || hop.Dial != nil || hop.BeforeLogin != nil {
		t.Fatalf("load without bastion or spread: errs %v, Dial set %v, BeforeLogin set %v; want nothing set", errs, hop.Dial != nil, hop.BeforeLogin != nil)
	}
	a = accessFlags{bastion: "10.0.0.9:22", bastionKnownHosts: filepath.Join(t.TempDir(), "missing"), spread: time.Millisecond, windowMax: time.Second}
	errs := a.load(hop, "alice", nil, slog.New(slog.DiscardHandler))
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "--bastion-known-hosts: ") {
		t.Fatalf("load with a missing bastion known_hosts: %v; want one --bastion-known-hosts error", errs)
	}
	if hop.BeforeLogin == nil {
		t.Fatal("load with --reconnect-spread set no BeforeLogin")
	}
	// The first login is not delayed.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := hop.BeforeLogin(ctx); err != nil {
		t.Errorf("first BeforeLogin = %v; want nil", err)
	}
}
