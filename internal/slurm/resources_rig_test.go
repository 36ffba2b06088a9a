//go:build rig

package slurm

import (
	"path"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// A pod whose flags ask for memory per CPU, as interLink's tutorial pod
// does (--mem-per-cpu=2000), runs where its containers' limits or a
// flavor's default give it memory per node: sbatch refuses the two
// together, so the flags' line replaces the resources'. The held job shows
// the memory per CPU and the CPUs of the resources.
func TestRigFlagsPerCPUReplaceTheMemoryLine(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		job := e.shJob(t, nil, [][2]string{{"main", "true"}})
		job.Resources.CPUs, job.Resources.MemoryMiB = 2, 100
		job.Flags = []string{"--partition=debug", "--mem-per-cpu=50M"}
		script, err := jobscript.Script(job, jobscript.ScriptOptions{JobDir: path.Join(e.c.DataRoot, "rig", job.UID), Runtime: e.c.Runtime})
		if err != nil {
			t.Fatalf("Script: %v", err)
		}
		if rerr := e.sbatchTestOnly(t, script); rerr != nil {
			t.Fatalf("sbatch refused the script: %s\n%s", rerr.Message, script)
		}
		got := e.heldJob(t, script)
		if got["MinMemoryCPU"] != "50M" || got["CPUs/Task"] != "2" {
			t.Errorf("scontrol shows MinMemoryCPU=%q CPUs/Task=%q; want 50M and 2", got["MinMemoryCPU"], got["CPUs/Task"])
		}
	})
}
