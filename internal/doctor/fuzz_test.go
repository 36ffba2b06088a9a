package doctor

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// checkLine fails when a decision made from site output could not be
// printed as one bounded line.
func checkLine(t *testing.T, c Check) {
	t.Helper()
	if c.Name == "" || (c.Status != OK && c.Status != Warn && c.Status != Fail) {
		t.Fatalf("check %+v", c)
	}
	for _, s := range []string{clean(c.Found), clean(c.Fix)} {
		if len(s) > maxText+len("…") || strings.ContainsAny(s, "\n\r\x1b") || !utf8.ValidString(s) {
			t.Fatalf("printed text %q", s)
		}
	}
}

func FuzzDecideSpace(f *testing.F) {
	f.Add("Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/vda 264212084 44292120 51209144 47% /\n")
	f.Add("Filesystem 1024-blocks Used Available Capacity Mounted on\nx 1 1 99999999999999999999 101% /\n")
	f.Fuzz(func(t *testing.T, out string) {
		checkLine(t, decideSpace("/d", cmdResult{out: []byte(out)}))
	})
}

func FuzzDecideSlurm(f *testing.F) {
	f.Add("slurm 22.05.8\n", "slurm-wlm 23.11.1\n")
	f.Add("slurm 22.05.8\x1b[0m", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		results := []cmdResult{{name: "sbatch", out: []byte(a)}, {name: "squeue", out: []byte(b)},
			{name: "scancel", out: []byte(a)}, {name: "sacct", out: []byte(b)}, {name: "srun", out: []byte(a)}}
		checkLine(t, decideSlurm(results, true))
	})
}

// FuzzLoginShell: whatever the site answers to id, getent and the login
// shell, the login-shell line is one bounded line.
func FuzzLoginShell(f *testing.F) {
	f.Add("alice\n", "alice:x:1000:1000::/home/alice:/bin/bash\n", shellWant)
	f.Add("al\x1bice", "a:b:c:d:e:f:/bin/t csh\n", "it's|")
	f.Add("", "::::::", "")
	f.Fuzz(func(t *testing.T, id, passwd, out string) {
		r := &fakeRunner{answers: map[string]cmdResult{
			"id -un": {out: []byte(id)},
			"getent passwd " + clean(strings.TrimSpace(id)):  {out: []byte(passwd)},
			passwdShell([]byte(passwd)) + " -c " + shellLine: {out: []byte(out)},
		}}
		checkLine(t, loginShellCheck(t.Context(), r))
	})
}
