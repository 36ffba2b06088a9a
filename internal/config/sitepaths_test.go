package config

import (
	"fmt"
	"strings"
	"testing"
)

// withPaths is the minimal configuration with the site's DataRoot and
// SocketDirRoot set (quoted for YAML).
func withPaths(dataRoot, socketRoot string) string {
	src := strings.Replace(minimal, "  DataRoot: /scratch/alice/.sluice\n", fmt.Sprintf("  DataRoot: %q\n", dataRoot), 1)
	if socketRoot != "" {
		src = strings.Replace(src, "Site:\n", fmt.Sprintf("Site:\n  SocketDirRoot: %q\n", socketRoot), 1)
	}
	return src
}

// A path that every pod would be refused for is refused at start-up,
// naming the key.
func TestSitePathsRefusedAtStart(t *testing.T) {
	long := "/tmp/" + strings.Repeat("s", 51) // 56 bytes: a socket path of 108
	tests := []struct {
		name, dataRoot, socketRoot, key string
	}{
		{"data root with ':'", "/scratch/a:b", "", "Site.DataRoot"},
		{"data root with '%'", "/scratch/a%b", "", "Site.DataRoot"},
		{"data root with '#'", "/scratch/a#b", "", "Site.DataRoot"},
		{"data root not ASCII", "/scratch/é", "", "Site.DataRoot"},
		{"data root '/'", "/", "", "Site.DataRoot"},
		{"data root with '*'", "/scratch/*", "", "Site.DataRoot"},
		{"socket root too long", "/scratch/alice", long, "Site.SocketDirRoot"},
		{"socket root with ':'", "/scratch/alice", "/tmp/a:b", "Site.SocketDirRoot"},
		{"socket root not ASCII", "/scratch/alice", "/tmp/ü", "Site.SocketDirRoot"},
		{"socket root relative", "/scratch/alice", "tmp/s", "Site.SocketDirRoot"},
		{"socket root not clean", "/scratch/alice", "/tmp/s/", "Site.SocketDirRoot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(withPaths(tt.dataRoot, tt.socketRoot)))
			if err == nil || !strings.Contains(err.Error(), tt.key+":") {
				t.Fatalf("Parse = %v; want an error naming %s", err, tt.key)
			}
		})
	}
	// The longest root that fits is taken.
	if _, err := Parse([]byte(withPaths("/scratch/alice", long[:len(long)-1]))); err != nil {
		t.Errorf("Parse of a %d-byte socket root: %v", len(long)-1, err)
	}
}

// NodeName is the node's kubernetes.io/hostname label and the shadows'
// sluice.io/node label: a label value, at most 63 characters.
func TestNodeNameIsALabelValue(t *testing.T) {
	src := strings.Replace(minimal, "NodeName: hpc-a", "NodeName: "+strings.Repeat("a", 64), 1)
	if _, err := Parse([]byte(src)); err == nil || !strings.Contains(err.Error(), "NodeName:") {
		t.Errorf("Parse of a 64-character node name = %v; want an error naming NodeName", err)
	}
}

// A reverse tunnel without a socket directory root would fail every job
// that asks for one: refused at start-up.
func TestReverseNeedsSocketDirRoot(t *testing.T) {
	src := strings.Replace(minimal, "    User: alice\n", "    User: alice\n    Reverse:\n      Enabled: true\n", 1)
	if _, err := Parse([]byte(src)); err == nil || !strings.Contains(err.Error(), "Network.SSH.Reverse.Enabled: needs Site.SocketDirRoot") {
		t.Errorf("Parse = %v; want an error naming Network.SSH.Reverse.Enabled", err)
	}
	src = strings.Replace(src, "Site:\n", "Site:\n  SocketDirRoot: /tmp/sluice\n", 1)
	if _, err := Parse([]byte(src)); err != nil {
		t.Errorf("Parse with a SocketDirRoot: %v", err)
	}
}
