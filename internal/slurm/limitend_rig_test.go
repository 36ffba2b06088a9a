//go:build rig

package slurm

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// A running job's LimitEnd is its start plus its time limit, as the rig's
// Slurm tells it, and moves when the limit is changed under it: sluice reads
// the time left, it does not work it out from what it asked for.
func TestRigLimitEndFollowsTheTimeLimit(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		job := e.shJob(t, nil, [][2]string{{"main", "sleep 300"}})
		job.Resources.TimeLimit = 3 * time.Minute
		ref := e.submit(t, job)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := e.c.Cancel(ctx, ref); err != nil {
				t.Errorf("Cancel: %v", err)
			}
		})
		st := e.wait(t, ref, "running", func(st Status) bool { return st.State == StateRunning })
		if got := st.LimitEnd.Sub(st.StartTime); got != 3*time.Minute {
			t.Fatalf("LimitEnd %v is %v after the start %v; want the 3m limit", st.LimitEnd, got, st.StartTime)
		}
		// A user may lower the limit of a job of theirs.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := e.c.Site.Run(ctx, nil, "scontrol", "update", "JobId="+string(ref.JobID), "TimeLimit=2"); err != nil {
			t.Fatalf("scontrol update TimeLimit: %v", err)
		}
		st = e.wait(t, ref, "given a 2m limit", func(st Status) bool { return st.LimitEnd.Sub(st.StartTime) == 2*time.Minute })
		t.Logf("job %s started %v, reaches its limit at %v", ref.JobID, st.StartTime, st.LimitEnd)
	})
}
