package doctor

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/site"
)

// fakeRunner answers Run from a table keyed by the command line; the other
// calls are the real local runner's.
type fakeRunner struct {
	site.Local
	answers map[string]cmdResult
}

func (f *fakeRunner) Run(_ context.Context, _ io.Reader, args ...string) ([]byte, error) {
	a, ok := f.answers[strings.Join(args, " ")]
	if !ok {
		return nil, &site.ExitError{Args: args, Code: 127, Stderr: "not found"}
	}
	return a.out, a.err
}

func slurmAnswers(version string, skip ...string) map[string]cmdResult {
	m := map[string]cmdResult{}
	for _, name := range slurmCommands {
		m[name+" --version"] = cmdResult{out: []byte(version + "\n")}
	}
	for _, name := range skip {
		delete(m, name+" --version")
	}
	return m
}

func TestSlurmCheck(t *testing.T) {
	mixed := slurmAnswers("slurm 23.02.1")
	mixed["srun --version"] = cmdResult{out: []byte("slurm 22.05.8\n")}
	hostile := slurmAnswers("slurm 22.05.8")
	hostile["sbatch --version"] = cmdResult{out: []byte("slurm 22.05.8\x1b]0;pwned\x07\n")}
	for _, tc := range []struct {
		name     string
		answers  map[string]cmdResult
		needSrun bool
		status   Status
		found    string
	}{
		{"all", slurmAnswers("slurm-wlm 22.05.8"), false, OK, "sbatch, squeue, scancel, sacct, srun: Slurm 22.05.8"},
		{"no sbatch", slurmAnswers("slurm 22.05.8", "sbatch"), false, Fail, "sbatch (not found)"},
		{"no srun, not needed", slurmAnswers("slurm 22.05.8", "srun"), false, Warn, "srun (not found)"},
		{"no srun, needed", slurmAnswers("slurm 22.05.8", "srun"), true, Fail, "srun (not found)"},
		{"no sacct", slurmAnswers("slurm 22.05.8", "sacct"), false, Warn, "sacct (not found)"},
		{"two versions", mixed, false, Warn, "srun: Slurm 22.05.8"},
		{"hostile version", hostile, false, Fail, `sbatch (unexpected version "slurm 22.05.8 ]0;pwned")`},
		{"failing", map[string]cmdResult{"sbatch --version": {err: errors.New("boom")}}, false, Fail, "sbatch (boom)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &config.Config{}
			if tc.needSrun {
				c.Network.SSH.Reverse.NodeExec = "srun"
			}
			got := slurmCheck(context.Background(), &fakeRunner{answers: tc.answers}, c)
			if got.Status != tc.status || !strings.Contains(clean(got.Found), tc.found) {
				t.Errorf("got %s %q; want %s containing %q", got.Status, got.Found, tc.status, tc.found)
			}
			if (got.Status != OK) != (got.Fix != "") {
				t.Errorf("status %s with fix %q", got.Status, got.Fix)
			}
		})
	}
}

func TestDataRootCheck(t *testing.T) {
	dir := t.TempDir()
	got := dataRootCheck(context.Background(), &site.Local{}, filepath.Join(dir, "data"), "alice")
	if got.Status != OK {
		t.Errorf("writable data root: got %+v", got)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "data")); len(left) != 0 {
		t.Errorf("the check left %v behind", left)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got = dataRootCheck(context.Background(), &site.Local{}, filepath.Join(file, "data"), "alice")
	if got.Status != Fail || !strings.Contains(got.Found, "not writable by alice") || !strings.Contains(got.Fix, "Site.DataRoot") {
		t.Errorf("data root under a file: got %+v", got)
	}
}

func TestSpaceCheck(t *testing.T) {
	// The real df, on a directory that does not exist yet: its parent is
	// measured.
	dir := t.TempDir()
	got := spaceCheck(context.Background(), &site.Local{}, filepath.Join(dir, "not", "yet"))
	if got.Status == Fail || !strings.Contains(got.Found, "seen by df on "+dir) {
		t.Errorf("got %+v", got)
	}
}

func TestDecideSpace(t *testing.T) {
	const header = "Filesystem 1024-blocks Used Available Capacity Mounted on\n"
	for _, tc := range []struct {
		name   string
		res    cmdResult
		status Status
		found  string
	}{
		{"plenty", cmdResult{out: []byte(header + "/dev/vda 264212084 44292120 51209144 47% /\n")}, OK, "48.8 GiB free on / (47% used)"},
		{"low", cmdResult{out: []byte(header + "/dev/vda 264212084 44292120 51209 47% /scratch\n")}, Warn, "50.0 MiB free on /scratch"},
		{"full", cmdResult{out: []byte(header + "/dev/vda 264212084 44292120 99999999 96% /\n")}, Warn, "(96% used)"},
		{"spaces in the filesystem", cmdResult{out: []byte(header + "srv:/a b 100 50 2097152 50% /home\n")}, OK, "2.0 GiB free on /home"},
		{"garbage", cmdResult{out: []byte("hello\n")}, Warn, "unexpected output"},
		{"negative", cmdResult{out: []byte(header + "/dev/vda 1 1 -5 47% /\n")}, Warn, "unexpected output"},
		{"error", cmdResult{err: errors.New("df: no such file")}, Warn, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decideSpace("/d", tc.res)
			if got.Status != tc.status || !strings.Contains(got.Found, tc.found) {
				t.Errorf("got %s %q; want %s containing %q", got.Status, got.Found, tc.status, tc.found)
			}
		})
	}
}

func TestDecideSHA256(t *testing.T) {
	ok := cmdResult{out: []byte(emptySHA256 + "  /dev/null\n")}
	if got := decideSHA256(ok, true); got.Status != OK {
		t.Errorf("working sha256sum: %+v", got)
	}
	missing := cmdResult{name: "sha256sum", err: &site.ExitError{Code: 127}}
	if got := decideSHA256(missing, true); got.Status != Fail || !strings.Contains(got.Found, "not found") {
		t.Errorf("missing, reverse on: %+v", got)
	}
	if got := decideSHA256(missing, false); got.Status != Warn {
		t.Errorf("missing, reverse off: %+v", got)
	}
	wrong := cmdResult{out: []byte("0000  /dev/null\n")}
	if got := decideSHA256(wrong, true); got.Status != Fail {
		t.Errorf("wrong sum: %+v", got)
	}
}
