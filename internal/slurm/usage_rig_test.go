//go:build rig

package slurm

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// The usage of a busy job's batch step, read from the site's own sstat
// while it runs (one call for two jobs), grows with the CPU it burns and
// holds its resident memory; once the job ended, sacct gives its final
// figures. The rig's slurm.conf gathers with jobacct_gather/linux.
func TestRigUsage(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeNone)
		busy := e.submit(t, e.shJob(t, nil, [][2]string{{"spin", "timeout 25 sh -c 'while :; do :; done' || true"}}))
		idle := e.submit(t, e.shJob(t, nil, [][2]string{{"nap", "sleep 25"}}))
		running := func(st Status) bool { return st.State == StateRunning || st.State.Final() }
		e.wait(t, busy, "running", running)
		e.wait(t, idle, "running", running)

		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var first Usage
		for first.CPU < 2*time.Second {
			e.site.reset()
			got, err := e.c.Usage(ctx, []JobID{busy.JobID, idle.JobID})
			if err != nil {
				t.Fatal(err)
			}
			if runs := e.site.reset(); runs["sstat"] != 1 {
				t.Fatalf("Usage ran %v; want one sstat for both jobs", runs)
			}
			first = got[busy.JobID]
			if nap, ok := got[idle.JobID]; ok && nap.CPU > time.Second {
				t.Errorf("the sleeping job used %v of CPU", nap.CPU)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("the busy job's usage is still %+v", first)
			case <-time.After(time.Second):
			}
		}
		if first.Memory <= 0 || first.Memory > 1<<30 {
			t.Errorf("the busy job's memory is %d bytes; want a shell's", first.Memory)
		}
		if st := e.wait(t, busy, "final", final); st.State != StateCompleted {
			t.Fatalf("state %s; want COMPLETED", st.State)
		}
		var last Usage
		for last.CPU < first.CPU {
			got, err := e.c.Usage(ctx, []JobID{busy.JobID})
			if err != nil {
				t.Fatal(err)
			}
			last = got[busy.JobID]
			select {
			case <-ctx.Done():
				t.Fatalf("sacct gives %+v for the ended job; want at least the %v sstat saw", last, first.CPU)
			case <-time.After(time.Second):
			}
		}
		if last.Memory <= 0 {
			t.Errorf("sacct gives %+v for the ended job; want its memory", last)
		}
	})
}
