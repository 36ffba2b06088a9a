package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain runs main itself when the test binary is started as sluice-vk
// by runVK.
func TestMain(m *testing.M) {
	if os.Getenv("SLUICE_VK_TEST_MAIN") == "1" {
		os.Args = append([]string{"sluice-vk"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runVK runs this test binary as sluice-vk with args; it returns stderr and
// the exit status.
func runVK(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SLUICE_VK_TEST_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stderr.String(), 0
	case errors.As(err, &exit):
		return stderr.String(), exit.ExitCode()
	}
	t.Fatalf("run sluice-vk: %v", err)
	return "", 0
}

func TestConfigErrorOneProblemALine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "site.yaml")
	bad := "NodeName: hpc\nSite:\n  DataRoot: relative\n  ContainerRuntime: docker\nNetwork:\n  SSH:\n    LoginHost: login\n    User: alice\n    Port: 70000\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr, code := runVK(t, "--config", path, "--log-format", "json")
	if code != 2 {
		t.Errorf("exit status %d; want 2 (stderr %q)", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, key := range []string{"Site.DataRoot", "Site.ContainerRuntime", "Network.SSH.Port", "Network.SSH.KeyFile"} {
		want := "sluice-vk: config " + path + ": " + key + ": "
		found := false
		for _, l := range lines {
			found = found || strings.HasPrefix(l, want)
		}
		if !found {
			t.Errorf("no line starting %q in:\n%s", want, stderr)
		}
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "sluice-vk: config ") {
			t.Errorf("line %q is not one problem of the file", l)
		}
	}
}

func TestBadLogFormat(t *testing.T) {
	stderr, code := runVK(t, "--config", "x.yaml", "--log-format", "xml")
	if code != 2 || !strings.Contains(stderr, `--log-format: log format "xml"`) {
		t.Errorf("got status %d, %q; want 2 and the format named", code, stderr)
	}
}

// TestHelpListsSubcommands: --help names every subcommand, then the flags.
func TestHelpListsSubcommands(t *testing.T) {
	out, code := runVK(t, "--help")
	if code != 0 {
		t.Errorf("--help exited %d; want 0", code)
	}
	for _, want := range []string{"sluice-vk config import", "sluice-vk doctor", "sluice-vk uninstall", "sluice-vk --version", "-health-listen"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not name %q:\n%s", want, out)
		}
	}
}
