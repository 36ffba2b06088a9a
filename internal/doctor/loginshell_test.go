package doctor

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/site"
)

func TestLoginShellCheck(t *testing.T) {
	// ran answers for an account whose passwd entry names field as its
	// shell, which runs as shell and answers res to shellLine.
	ran := func(field, shell string, res cmdResult) map[string]cmdResult {
		return map[string]cmdResult{"id -un": {out: []byte("alice\n")},
			"getent passwd alice":      {out: []byte("alice:x:1000:1000:Alice:/home/alice:" + field + "\n")},
			shell + " -c " + shellLine: res}
	}
	unmatched := cmdResult{err: &site.ExitError{Args: []string{"/bin/tcsh"}, Code: 1, Stderr: "Unmatched '''."}}
	fish := cmdResult{out: []byte(`it's|a\b|sub|`)}
	noPasswd := map[string]cmdResult{"id -un": {out: []byte("alice\n")}, "printenv SHELL": {out: []byte("/bin/dash\n")},
		"/bin/dash -c " + shellLine: {out: []byte(shellWant)}}
	for _, tc := range []struct {
		name    string
		answers map[string]cmdResult
		status  Status
		found   string
	}{
		{"bash", ran("/bin/bash", "/bin/bash", cmdResult{out: []byte(shellWant)}), OK, "the login shell of alice is /bin/bash (passwd)"},
		{"empty field is sh", ran("", "/bin/sh", cmdResult{out: []byte(shellWant)}), OK, "/bin/sh"},
		{"tcsh", ran("/bin/tcsh", "/bin/tcsh", unmatched), Fail, "alice is /bin/tcsh (passwd): it does not run a POSIX sh test line: /bin/tcsh: exit status 1: Unmatched"},
		{"fish", ran("/usr/bin/fish", "/usr/bin/fish", fish), Fail, `/usr/bin/fish (passwd): it does not run a POSIX sh test line: printed "it's|a\\b|sub|"`},
		{"nologin", ran("/usr/sbin/nologin", "/usr/sbin/nologin", cmdResult{err: &site.ExitError{Code: 1, Stderr: "This account is currently not available."}}), Fail, "not available"},
		{"relative", ran("bash", "bash", cmdResult{out: []byte(shellWant)}), Fail, `is "bash", not a clean absolute path`},
		{"no passwd entry", noPasswd, OK, "/bin/dash ($SHELL)"},
		{"nothing", map[string]cmdResult{}, Warn, "cannot tell the login shell of the site account"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := loginShellCheck(context.Background(), &fakeRunner{answers: tc.answers})
			if got.Name != "login-shell" || got.Status != tc.status || !strings.Contains(got.Found, tc.found) {
				t.Errorf("got %s %q; want %s containing %q", got.Status, got.Found, tc.status, tc.found)
			}
			if (got.Status != OK) != (got.Fix != "") || (got.Status == Fail && !strings.Contains(got.Fix, "chsh -s /bin/bash")) {
				t.Errorf("status %s with fix %q", got.Status, got.Fix)
			}
		})
	}
}

// TestShellLineRealShells: the POSIX shells of this machine print
// shellWant for shellLine, run as sshd runs a command (SHELL -c LINE).
func TestShellLineRealShells(t *testing.T) {
	for _, shell := range []string{"/bin/sh", "/bin/dash", "/bin/bash"} {
		got := decideLoginShell("alice", shell, "passwd", run(context.Background(), &site.Local{}, shell, "-c", shellLine))
		if got.Status != OK {
			t.Errorf("%s: got %s %q; want OK", shell, got.Status, got.Found)
		}
	}
}
