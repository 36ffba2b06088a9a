package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/test/hostnode"
)

func TestParseFlags(t *testing.T) {
	opts, level, err := parseFlags([]string{
		"--node-name=host2", "--kubeconfig=/k",
		"--image=ghcr.io/sluice-hpc/sluice-tunnel:latest=/tmp/x/sluice-tunnel",
		"--image=busybox=/bin/busybox",
		"--backend=default/kubernetes:443=127.0.0.1:6443",
		"--backend=default/redis:6379=127.0.0.1:6379",
		"--hosts-file=/tmp/h", "--proxy-namespace=a", "--proxy-namespace=b", "--max-backoff=3s", "--log-level=debug",
	})
	if err != nil {
		t.Fatal(err)
	}
	if opts.NodeName != "host2" || opts.Kubeconfig != "/k" || opts.HostsFile != "/tmp/h" || opts.MaxBackoff != 3*time.Second || level != slog.LevelDebug {
		t.Errorf("options %+v, level %v", opts, level)
	}
	if got := opts.Images["ghcr.io/sluice-hpc/sluice-tunnel:latest"]; got != "/tmp/x/sluice-tunnel" {
		t.Errorf("tunnel image → %q", got)
	}
	if got := opts.Backends[hostnode.ServicePortKey{Namespace: "default", Name: "redis", Port: 6379}]; got != "127.0.0.1:6379" {
		t.Errorf("redis backend → %q", got)
	}
	if len(opts.ProxyNamespaces) != 2 || opts.ProxyNamespaces[1] != "b" {
		t.Errorf("proxy namespaces %v", opts.ProxyNamespaces)
	}
	if len(opts.Images) != 2 || len(opts.Backends) != 2 {
		t.Errorf("images %v, backends %v", opts.Images, opts.Backends)
	}
}

func TestParseFlagsErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--image=nopath"},
		{"--backend=default/redis=127.0.0.1:6379"},
		{"extra"},
	} {
		if _, _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) succeeded", args)
		}
	}
}
