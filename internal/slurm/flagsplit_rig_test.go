//go:build rig

package slurm

import (
	"bytes"
	"context"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/sbatch"
)

// Flags written as interLink's users write them, split by SplitFlags, are
// taken by the rig's real sbatch (--test-only: nothing is submitted), each
// on its own #SBATCH line of the script sluice renders; and sbatch takes
// the same string, unsplit, on one #SBATCH line of its own, as interLink's
// plugin gives it.
func TestRigSbatchTakesSplitFlags(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		for _, tc := range splitFlagCases(e) {
			t.Run(tc.name, func(t *testing.T) {
				split, raw := e.splitFlagScripts(t, tc.annotation)
				if rerr := e.sbatchTestOnly(t, split); rerr != nil {
					t.Fatalf("sbatch refused the flags split from %q: %s", tc.annotation, rerr.Message)
				}
				if rerr := e.sbatchTestOnly(t, raw); rerr != nil {
					t.Fatalf("sbatch refused %q on one #SBATCH line: %s", tc.annotation, rerr.Message)
				}
			})
		}
	})
}

// The job sbatch makes of the split flags is the job it makes of the same
// string on one #SBATCH line, as interLink's plugin writes it: both are
// submitted held, read back with scontrol and cancelled.
func TestRigSplitFlagsMakeInterLinksJob(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		keys := []string{"Partition", "TimeLimit", "TimeMin", "Nice", "Requeue", "ReqNodeList", "ExcNodeList",
			"NumNodes", "NumCPUs", "NumTasks", "CPUs/Task", "TRES", "NtasksPerN:B:S:C", "MinMemoryNode", "Features",
			"OverSubscribe", "Contiguous", "MailUser", "MailType", "Dependency"}
		for _, tc := range splitFlagCases(e) {
			t.Run(tc.name, func(t *testing.T) {
				split, raw := e.splitFlagScripts(t, tc.annotation)
				got, want := e.heldJob(t, split), e.heldJob(t, raw)
				if got["Partition"] != "debug" || got["TimeLimit"] == "" || got["NumNodes"] == "" {
					t.Fatalf("scontrol shows %v; want the job's fields", got)
				}
				for _, k := range keys {
					if got[k] != want[k] {
						t.Errorf("%s: %q from the split flags; %q from interLink's line", k, got[k], want[k])
					}
				}
			})
		}
	})
}

type splitFlagCase struct{ name, annotation string }

// splitFlagCases are flags written as interLink's users write them, valid
// on the rig (partition debug, node e.node).
func splitFlagCases(e *rigEnv) []splitFlagCase {
	return []splitFlagCase{
		{"short-with-values", "-p debug -t 00:10:00 --mem=100M"},
		{"nodes-and-tasks", "--partition=debug -N 1 --ntasks-per-node=2"},
		{"cpus-and-switches", "-p debug -c 2 -n 1 --exclusive --requeue"},
		{"long-with-separate-values", "--partition debug --time 10 --time-min=5 --nice=10"},
		{"nodelist-begin-mail", "-w " + e.node + " -b now+1hour --mail-type=END,FAIL --mail-user=alice@example.org"},
		{"quoted-export-hold", `-p "debug" --export=ALL,OMP_NUM_THREADS=4 -H -O`},
		{"attached-values", "-pdebug -t10 -N1 -m block"},
	}
}

// splitFlagScripts renders a job with the flags SplitFlags makes of
// annotation, one #SBATCH line each, and the same script with the
// annotation on one #SBATCH line instead, as interLink's plugin writes it.
func (e *rigEnv) splitFlagScripts(t *testing.T, annotation string) (split, raw []byte) {
	t.Helper()
	flags, err := sbatch.SplitFlags(annotation)
	if err != nil {
		t.Fatalf("SplitFlags(%q): %v", annotation, err)
	}
	job := e.shJob(t, nil, [][2]string{{"main", "true"}})
	job.Flags = flags
	split, err = jobscript.Script(job, jobscript.ScriptOptions{JobDir: path.Join(e.c.DataRoot, "rig", job.UID), Runtime: e.c.Runtime})
	if err != nil {
		t.Fatalf("Script: %v", err)
	}
	raw = bytes.Replace(split, []byte("#SBATCH "+strings.Join(flags, "\n#SBATCH ")), []byte("#SBATCH "+annotation), 1)
	if bytes.Equal(raw, split) {
		t.Fatalf("the flags are not together in the script:\n%s", split)
	}
	t.Logf("%q → %q", annotation, flags)
	return split, raw
}

// heldJob submits script held, cancels it when the test ends, and returns
// the fields scontrol shows of it.
func (e *rigEnv) heldJob(t *testing.T, script []byte) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := e.site.Run(ctx, bytes.NewReader(script), "sbatch", "--parsable", "--hold")
	if err != nil {
		t.Fatalf("sbatch --hold: %v", err)
	}
	id, err := parseSbatch(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := e.site.Run(ctx, nil, "scancel", string(id)); err != nil {
			t.Errorf("scancel %s: %v", id, err)
		}
	})
	show, err := e.site.Run(ctx, nil, "scontrol", "show", "job", "-o", string(id))
	if err != nil {
		t.Fatalf("scontrol show job %s: %v", id, err)
	}
	fields := map[string]string{}
	for _, f := range strings.Fields(string(show)) {
		if k, v, ok := strings.Cut(f, "="); ok {
			fields[k] = v
		}
	}
	return fields
}
