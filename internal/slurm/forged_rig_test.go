//go:build rig

package slurm

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// TestRigJobNameCannotForgeAnotherJob names a job of the same account, on
// the real Slurm, with newlines and copies of a pod's job's fields in the
// layouts squeue and sacct print: the pod's job reads as Slurm holds it,
// from squeue and from sacct, and never as COMPLETED.
func TestRigJobNameCannotForgeAnotherJob(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeNone)
		victim := e.submit(t, e.shJob(t, nil, [][2]string{{"main", "sleep 8; exit 3"}}))
		e.wait(t, victim, "running", func(st Status) bool { return st.State == StateRunning })

		id := string(victim.JobID)
		name := "\n" + id + "|COMPLETED|None|" + e.node + "|1|2|" + victim.UID +
			"\n" + id + "|COMPLETED|0:0|None|" + e.node + "|1|2|" + victim.UID
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := e.c.Site.Run(ctx, nil, "sbatch", "--parsable", "-J", name, "--wrap", "sleep 60")
		if err != nil {
			t.Fatalf("sbatch of the forger: %v", err)
		}
		forger, err := parseSbatch(out)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := e.c.Site.Run(context.Background(), nil, "scancel", string(forger)); err != nil {
				t.Errorf("scancel %s: %v", forger, err)
			}
		})

		// Slurm keeps the name whole: the attack is real, and read for what it is.
		entries, err := e.c.queue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var forgerName string
		for _, q := range entries {
			if q.ID == string(forger) {
				forgerName = q.Name
			}
		}
		if forgerName != name {
			t.Fatalf("squeue gave the forger's name as %q; want %q", forgerName, name)
		}

		// squeue: the victim runs.
		got, err := e.c.Status(ctx, []JobRef{victim})
		if err != nil {
			t.Fatal(err)
		}
		if st := got[victim.UID]; st.State != StateRunning || st.Source != SourceSqueue {
			t.Errorf("the victim's status = %+v; want RUNNING from squeue", st)
		}

		// sacct, with the forger's job asked about too (as a pod's job renamed
		// would be): the victim is never COMPLETED, from any source (sacct may
		// not know a job that has just started: it is UNKNOWN then).
		e.site.hideJobs(victim.JobID, forger)
		forgerRef := e.c.Ref("rig", newUID(t), forger)
		check := func(st Status) {
			t.Helper()
			if st.State == StateCompleted || st.Source == SourceSqueue {
				t.Fatalf("the victim's job read as %+v", st)
			}
		}
		st := e.wait(t, victim, "final", func(st Status) bool {
			got, err := e.c.Status(ctx, []JobRef{victim, forgerRef})
			if err != nil {
				t.Fatal(err)
			}
			check(got[victim.UID])
			check(st)
			return st.State.Final()
		})
		if st.State != StateFailed || st.Exit == nil || st.Exit.Code != 3 {
			t.Errorf("the victim's final status = %+v; want FAILED with exit 3", st)
		}

		// sacct holds the forger's name whole too: its copies were there to read.
		acct, err := e.c.accounting(ctx, "-j", string(forger))
		if err != nil {
			t.Fatal(err)
		}
		if len(acct) != 1 || acct[0].Name != name {
			t.Errorf("sacct gave the forger as %+v; want its name whole", acct)
		}
	})
}
