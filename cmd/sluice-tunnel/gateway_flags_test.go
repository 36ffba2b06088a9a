package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestGatewayServeFlags(t *testing.T) {
	site := []string{"--login=login.hpc:2222", "--user=svc", "--key=/k", "--login-known-hosts=/lkh", "--node-known-hosts=/nkh"}
	own := []string{"--host-key=/hk", "--node=vk1", "--credentials-namespace=sluice"}
	ok := slices.Concat(site, own)
	for _, tc := range []struct {
		name string
		args []string
		want []string // nil for accepted
	}{
		{"accepted", ok, nil},
		{"tenant node", slices.Concat(site, []string{"--host-key=/hk", "--node=vk1", "--tenant-namespace=team-a"}), nil},
		{"trusted", append(slices.Clone(ok), "--trusted-namespaces=a-shadow,b-shadow", "--listen=127.0.0.1:2022", "--metrics=:9090"), nil},
		{"no site", own, []string{"--login is required", "--user is required", "--key is required", "--login-known-hosts is required", "--node-known-hosts is required"}},
		{"nothing of its own", site, []string{"--host-key is required", "--node is required", "--credentials-namespace is required, unless --tenant-namespace"}},
		{"bad node", append(slices.Clone(ok), "--node=not a label"), []string{"--node:", "is not a label value"}},
		{"bad namespace", append(slices.Clone(ok), "--credentials-namespace=Sluice_NS"), []string{"--credentials-namespace:", "is not a namespace"}},
		{"bad trusted", append(slices.Clone(ok), "--trusted-namespaces=ok,,x"), []string{"-trusted-namespaces", `"" is not a namespace`}},
		{"bad listen", append(slices.Clone(ok), "--listen=gateway:2222"), []string{"--listen:"}},
		{"no node file", append(slices.Clone(ok), "--node-file=/n"), []string{"flag provided but not defined: -node-file"}},
		{"not a client", append(slices.Clone(ok), "--gateway=gw:2222"), []string{"flag provided but not defined: -gateway"}},
		{"argument", append(slices.Clone(ok), "extra"), []string{`unexpected argument "extra"`}},
		{"key kept in a secret", slices.Concat(site, []string{"--host-key-secret=sluice/gw-key", "--publish-host-keys=sluice/gw-keys",
			"--advertise=gw.sluice.svc:2222", "--node=vk1", "--credentials-namespace=sluice"}), nil},
		{"two host keys", append(slices.Clone(ok), "--host-key-secret=sluice/gw-key"), []string{"--host-key and --host-key-secret: give one"}},
		{"bad secret", append(slices.Clone(own[1:]), slices.Concat(site, []string{"--host-key-secret=gw-key"})...), []string{"-host-key-secret", "want NAMESPACE/NAME"}},
		{"bad secret name", append(slices.Clone(ok), "--publish-host-keys=sluice/Not_A_Name", "--advertise=gw:2222"), []string{"-publish-host-keys", "is not a name"}},
		{"publish without address", append(slices.Clone(ok), "--publish-host-keys=sluice/gw-keys"), []string{"--advertise is required with --publish-host-keys"}},
		{"address without publish", append(slices.Clone(ok), "--advertise=gw:2222"), []string{"--advertise is only for --publish-host-keys"}},
		{"bad address", append(slices.Clone(ok), "--publish-host-keys=sluice/gw-keys", "--advertise=gw"), []string{"--advertise:", "is not HOST:PORT"}},
	} {
		c, err := parseArgs(modeGateway, tc.args)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			} else if c.serve.listen == "" || c.login != "login.hpc:2222" {
				t.Errorf("%s: listen %q, login %q", tc.name, c.serve.listen, c.login)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted; want %q", tc.name, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", tc.name, err, w)
			}
		}
	}
	c, err := parseArgs(modeGateway, ok)
	if err != nil {
		t.Fatal(err)
	}
	if c.serve.listen != ":2222" {
		t.Errorf("default listen %q; want :2222, the port shadows dial by default", c.serve.listen)
	}
}

// TestGatewayServeConfigErrors: a host key or kubeconfig that cannot be
// used is a configuration error (status 2) naming its flag, before
// anything is listened on.
func TestGatewayServeConfigErrors(t *testing.T) {
	f := writeSiteFiles(t)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("not: [a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"gateway", "--login=127.0.0.1:22", "--user=svc", "--key=" + f.key,
		"--login-known-hosts=" + f.loginHosts, "--node-known-hosts=" + f.nodeHosts,
		"--node=vk1", "--credentials-namespace=sluice", "--listen=127.0.0.1:1"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"host key missing", []string{"--host-key=" + filepath.Join(dir, "missing"), "--kubeconfig=" + kubeconfig}, "--host-key:"},
		{"host key not a key", []string{"--host-key=" + f.loginHosts, "--kubeconfig=" + kubeconfig}, "--host-key:"},
		{"kubeconfig unusable", []string{"--host-key=" + f.key, "--kubeconfig=" + kubeconfig}, "kubeconfig " + kubeconfig + ":"},
	} {
		var stderr bytes.Buffer
		code := cli(context.Background(), append(slices.Clone(args), tc.args...), &bytes.Buffer{}, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "sluice-tunnel gateway: "+tc.want) {
			t.Errorf("%s: status %d, %q; want %d saying %q", tc.name, code, stderr.String(), exitUsage, tc.want)
		}
	}
}
