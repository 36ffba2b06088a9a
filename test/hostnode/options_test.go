package hostnode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseBackend(t *testing.T) {
	for _, tc := range []struct {
		in   string
		key  ServicePortKey
		addr string
	}{
		{"default/kubernetes:443=127.0.0.1:6443", ServicePortKey{"default", "kubernetes", 443}, "127.0.0.1:6443"},
		{"default/redis:6379=127.0.0.1:6379", ServicePortKey{"default", "redis", 6379}, "127.0.0.1:6379"},
		{"ns/s3:9000=[::1]:9000", ServicePortKey{"ns", "s3", 9000}, "[::1]:9000"},
		{"ns/db:5432=localhost:5432", ServicePortKey{"ns", "db", 5432}, "localhost:5432"},
	} {
		key, addr, err := ParseBackend(tc.in)
		if err != nil || key != tc.key || addr != tc.addr {
			t.Errorf("ParseBackend(%q) = %+v, %q, %v; want %+v, %q", tc.in, key, addr, err, tc.key, tc.addr)
		}
	}
	for _, in := range []string{
		"", "default/redis:6379", "redis:6379=127.0.0.1:6379", "default/redis=127.0.0.1:6379",
		"default/redis:0=127.0.0.1:6379", "default/redis:70000=127.0.0.1:6379", "default/redis:6379=127.0.0.1",
		"default/redis:6379=:6379", "default/redis:6379=bad_host:1", "/redis:6379=127.0.0.1:6379",
	} {
		if _, _, err := ParseBackend(in); err == nil {
			t.Errorf("ParseBackend(%q) succeeded", in)
		} else if !strings.HasPrefix(err.Error(), "backend ") {
			t.Errorf("ParseBackend(%q): %v; want it to name the flag's value", in, err)
		}
	}
}

func TestParseImage(t *testing.T) {
	image, path, err := ParseImage("ghcr.io/sluice-hpc/sluice-tunnel:latest=/tmp/x/sluice-tunnel")
	if err != nil || image != "ghcr.io/sluice-hpc/sluice-tunnel:latest" || path != "/tmp/x/sluice-tunnel" {
		t.Errorf("ParseImage = %q, %q, %v", image, path, err)
	}
	for _, in := range []string{"", "image", "=/bin/x", "image="} {
		if _, _, err := ParseImage(in); err == nil {
			t.Errorf("ParseImage(%q) succeeded", in)
		}
	}
}

func TestOptionsDefaults(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o, err := Options{Kubeconfig: "/k", Images: map[string]string{"img": exe}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.NodeName != "rig-host" || o.StateDir != "/var/lib/sluice-hostnode/rig-host" || o.KubeletListen != "127.0.0.1:0" ||
		o.MaxBackoff != 10*time.Second || o.InitPath == "" || o.Logger == nil {
		t.Errorf("defaults: %+v", o)
	}
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no kubeconfig", Options{}, "kubeconfig: required"},
		{"bad node name", Options{NodeName: "Rig_Host", Kubeconfig: "/k"}, `node name "Rig_Host"`},
		{"relative image path", Options{Kubeconfig: "/k", Images: map[string]string{"img": "bin/x"}}, "image img: bin/x: not an absolute path"},
		{"missing image binary", Options{Kubeconfig: "/k", Images: map[string]string{"img": "/nonexistent/x"}}, "image img: stat /nonexistent/x"},
		{"image is a directory", Options{Kubeconfig: "/k", Images: map[string]string{"img": "/tmp"}}, "image img: /tmp: not an executable file"},
	} {
		if _, err := tc.o.withDefaults(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want %q", tc.name, err, tc.want)
		}
	}
}

func TestProviderImage(t *testing.T) {
	p := &provider{cfg: providerConfig{Images: map[string]string{
		"ghcr.io/sluice-hpc/sluice-tunnel:latest": "/bin/tunnel",
		"busybox":            "/bin/busybox",
		"localhost:5000/app": "/bin/app",
	}}}
	for _, tc := range []struct {
		image, want string
	}{
		{"ghcr.io/sluice-hpc/sluice-tunnel:latest", "/bin/tunnel"},
		{"ghcr.io/sluice-hpc/sluice-tunnel", "/bin/tunnel"},
		{"ghcr.io/sluice-hpc/sluice-tunnel:v1", ""},
		{"busybox:latest", "/bin/busybox"},
		{"busybox:1.36", ""},
		{"localhost:5000/app:latest", "/bin/app"},
		{"localhost:5000/app@sha256:abc", ""},
	} {
		got, ok := p.image(tc.image)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("image(%s) = %q, %v; want %q", tc.image, got, ok, tc.want)
		}
	}
}
