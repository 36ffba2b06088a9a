package tunnel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckNode(t *testing.T) {
	good := []string{"node1", "gpu-01.cluster.example.org", "gpu_01", "10.251.2.2", "fd00::2", strings.Repeat("a", 63)}
	for _, n := range good {
		if err := CheckNode(n); err != nil {
			t.Errorf("CheckNode(%q) = %v; want nil", n, err)
		}
	}
	bad := []string{"", "-oProxyCommand=sh", "node1;id", "node 1", "node1\n", "a..b", "fe80::1%eth0",
		strings.Repeat("a", 64), strings.Repeat("a.", 127) + "a", "$(id)", "_node", "10.1"}
	for _, n := range bad {
		if err := CheckNode(n); err == nil {
			t.Errorf("CheckNode(%q) = nil; want an error", n)
		}
	}
}

func TestReadNode(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		f := filepath.Join(dir, "node")
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	if got, err := ReadNode(write("node1\n")); got != "node1" || err != nil {
		t.Errorf("ReadNode = %q, %v; want node1, nil", got, err)
	}
	if got, err := ReadNode(write("")); got != "" || err != nil {
		t.Errorf("ReadNode(empty) = %q, %v; want \"\", nil", got, err)
	}
	if _, err := ReadNode(write("node1 -R x")); err == nil {
		t.Error("ReadNode accepted a node name with spaces")
	}
	if _, err := ReadNode(filepath.Join(dir, "missing")); err == nil {
		t.Error("ReadNode of a missing file gave no error")
	}
}

func FuzzCheckNode(f *testing.F) {
	for _, s := range []string{"node1", "10.0.0.1", "::1", "a.b-c", "-x", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckNode(s) != nil {
			return
		}
		if strings.ContainsAny(s, " \t\n;$`'\"\\|&<>(){}*?!#~") || strings.HasPrefix(s, "-") {
			t.Errorf("CheckNode accepted %q", s)
		}
	})
}
