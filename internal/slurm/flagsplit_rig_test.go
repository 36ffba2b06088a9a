//go:build rig

package slurm

import (
	"bytes"
	"path"
	"strings"
	"testing"
)

// Flags written as interLink's users write them, split by SplitFlags, are
// taken by the rig's real sbatch (--test-only: nothing is submitted), each
// on its own #SBATCH line of the script sluice renders; and sbatch takes
// the same string, unsplit, on one #SBATCH line of its own, as interLink's
// plugin gives it.
func TestRigSbatchTakesSplitFlags(t *testing.T) {
	e := newRigEnv(t, RuntimeCharliecloud)
	for _, tc := range []struct{ name, annotation string }{
		{"short-with-values", "-p debug -t 00:10:00 --mem=100M"},
		{"nodes-and-tasks", "--partition=debug -N 1 --ntasks-per-node=2"},
		{"cpus-and-switches", "-p debug -c 2 -n 1 --exclusive --requeue"},
		{"long-with-separate-values", "--partition debug --time 10 --time-min=5 --nice=10"},
		{"nodelist-begin-mail", "-w " + e.node + " -b now+1hour --mail-type=END,FAIL --mail-user=alice@example.org"},
		{"quoted-export-hold", `-p "debug" --export=ALL,OMP_NUM_THREADS=4 -H -O`},
		{"attached-values", "-pdebug -t10 -N1 -m block"},
	} {
		annotation := tc.annotation
		t.Run(tc.name, func(t *testing.T) {
			flags, err := SplitFlags(annotation)
			if err != nil {
				t.Fatalf("SplitFlags: %v", err)
			}
			job := e.shJob(t, nil, [][2]string{{"main", "true"}})
			job.Flags = flags
			script, err := Script(job, ScriptOptions{JobDir: path.Join(e.c.DataRoot, "rig", job.UID), Runtime: e.c.Runtime})
			if err != nil {
				t.Fatalf("Script: %v", err)
			}
			if rerr := e.sbatchTestOnly(t, script); rerr != nil {
				t.Fatalf("sbatch refused the flags %q split from %q: %s", flags, annotation, rerr.Message)
			}
			// interLink's plugin writes "#SBATCH <option and its values>"
			raw := bytes.Replace(script, []byte("#SBATCH "+strings.Join(flags, "\n#SBATCH ")), []byte("#SBATCH "+annotation), 1)
			if bytes.Equal(raw, script) {
				t.Fatalf("the flags are not together in the script:\n%s", script)
			}
			if rerr := e.sbatchTestOnly(t, raw); rerr != nil {
				t.Fatalf("sbatch refused %q on one #SBATCH line: %s", annotation, rerr.Message)
			}
			t.Logf("%q → %q", annotation, flags)
		})
	}
}
