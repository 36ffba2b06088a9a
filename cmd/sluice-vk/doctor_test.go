package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDoctorCommandUsage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("NodeName: x\nSite:\n  Nope: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{nil, "usage: sluice-vk doctor --config FILE"},
		{[]string{"--config", bad, "extra"}, "usage:"},
		{[]string{"--nope"}, "flag provided but not defined"},
		{[]string{"--config", bad}, "Nope"},
	} {
		var stdout, stderr bytes.Buffer
		if code := doctorCommand(tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.stderr) || stdout.Len() != 0 {
			t.Errorf("doctor %q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, stdout.String(), stderr.String(), tc.stderr)
		}
	}
}
