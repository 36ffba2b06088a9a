package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestProblemsOneALine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	bad := "NodeName: Bad_Name\nSite:\n  DataRoot: relative\n  ContainerRuntime: docker\nNetwork:\n  SSH:\n    Port: 70000\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil {
		t.Fatal("got no error; want the problems of the file")
	}
	got := Problems(err)
	for _, key := range []string{"NodeName", "Site.DataRoot", "Site.ContainerRuntime", "Network.SSH.Port"} {
		prefix := "config " + path + ": " + key + ": "
		if !slices.ContainsFunc(got, func(l string) bool { return len(l) > len(prefix) && l[:len(prefix)] == prefix }) {
			t.Errorf("no line starting %q in %q", prefix, got)
		}
	}
	for _, l := range got {
		if slices.Contains([]byte(l), '\n') {
			t.Errorf("line %q holds a newline", l)
		}
	}
}

func TestProblemsOfOneError(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	got := Problems(err)
	if len(got) != 1 || got[0] != err.Error() {
		t.Errorf("got %q; want the error as one line", got)
	}
	if Problems(nil) != nil {
		t.Error("Problems(nil) is not empty")
	}
}

func TestLoadSetBeforeDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal), func(c *Config) { c.Node.InternalIP = "10.1.2.3" })
	if err != nil {
		t.Fatal(err)
	}
	if c.Node.InternalIP != "10.1.2.3" || c.Node.KubeletAPI.Listen != "10.1.2.3:10250" {
		t.Errorf("got InternalIP %s, Listen %s; want 10.1.2.3 and 10.1.2.3:10250", c.Node.InternalIP, c.Node.KubeletAPI.Listen)
	}
}
