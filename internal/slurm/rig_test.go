//go:build rig

package slurm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// These tests run real jobs on the rig's Slurm, through one SSH connection
// to its login node as alice: go test -tags rig ./internal/slurm

func TestRigJobRuns(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		for _, runtime := range []jobscript.Runtime{jobscript.RuntimeCharliecloud, jobscript.RuntimeNone} {
			t.Run(string(runtime), func(t *testing.T) {
				e := newRigEnv(t, on, runtime)
				job := e.shJob(t,
					[][2]string{{"setup", "echo setup ran"}},
					[][2]string{{"alpha", "echo hello from alpha"}, {"beta", "echo beta to stderr >&2; exit 0"}})
				ref := e.submit(t, job)
				st := e.wait(t, ref, "final", final)
				if phase, _ := PodPhase(st.State); st.State != StateCompleted || phase != PhaseSucceeded {
					t.Fatalf("state %s (phase %s); want COMPLETED, Succeeded: %+v", st.State, phase, st)
				}
				if st.BatchHost != e.node || st.StartTime.IsZero() || st.EndTime.Before(st.StartTime) {
					t.Errorf("status %+v; want batch host %s and start/end times", st, e.node)
				}
				if st.Exit == nil || st.Exit.Code != 0 {
					t.Errorf("job exit = %v; want 0", st.Exit)
				}
				for _, name := range []string{"setup", "alpha", "beta"} {
					if cs := st.Containers[name]; !cs.Started || !cs.Finished || cs.ExitCode != 0 {
						t.Errorf("container %s = %+v; want finished with 0", name, cs)
					}
				}
				for name, want := range map[string]string{
					"setup": "setup ran\n", "alpha": "hello from alpha\n", "beta": "beta to stderr\n",
				} {
					if got := e.logs(t, ref, name, LogOptions{Tail: -1}); got != want {
						t.Errorf("logs of %s = %q; want %q", name, got, want)
					}
				}
				stamped := e.logs(t, ref, "alpha", LogOptions{Tail: -1, Timestamps: true})
				if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ hello from alpha\n$`).MatchString(stamped) {
					t.Errorf("logs with timestamps = %q", stamped)
				}
			})
		}
	})
}

func TestRigContainerExitCodes(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		job := e.shJob(t, nil, [][2]string{{"good", "exit 0"}, {"bad", "echo failing; exit 3"}})
		ref := e.submit(t, job)
		st := e.wait(t, ref, "final", final)
		if phase, reason := PodPhase(st.State); st.State != StateFailed || phase != PhaseFailed || reason != ReasonFailed {
			t.Errorf("state %s (%s, %s); want FAILED", st.State, phase, reason)
		}
		if st.Containers["good"].ExitCode != 0 || !st.Containers["good"].Finished ||
			st.Containers["bad"].ExitCode != 3 || !st.Containers["bad"].Finished {
			t.Errorf("containers %+v; want good 0 and bad 3", st.Containers)
		}
		if st.Exit == nil || st.Exit.Code != 3 {
			t.Errorf("job exit = %v; want 3", st.Exit)
		}
	})
}

func TestRigFailingInitStopsTheJob(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		job := e.shJob(t,
			[][2]string{{"first", "echo first"}, {"broken", "echo broken; exit 7"}, {"never", "echo never"}},
			[][2]string{{"alpha", "echo alpha"}, {"beta", "echo beta"}})
		ref := e.submit(t, job)
		st := e.wait(t, ref, "final", final)
		if st.State != StateFailed || st.Exit == nil || st.Exit.Code != 7 {
			t.Errorf("status %+v; want FAILED with exit 7", st)
		}
		if cs := st.Containers["broken"]; !cs.Finished || cs.ExitCode != 7 {
			t.Errorf("init container broken = %+v; want finished with 7", cs)
		}
		for _, name := range []string{"never", "alpha", "beta"} {
			if cs, ok := st.Containers[name]; ok {
				t.Errorf("container %s = %+v; want it never started", name, cs)
			}
			for _, f := range []string{jobscript.LogFile(name), jobscript.ExitFile(name)} {
				if _, err := e.c.Site.Stat(context.Background(), path.Join(ref.Dir, f)); err == nil {
					t.Errorf("%s exists; the container must not have started", f)
				}
			}
		}
	})
}

func TestRigCancelRunningJob(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		ref := e.submit(t, e.shJob(t, nil, [][2]string{{"sleeper", "echo started; sleep 300"}}))
		e.wait(t, ref, "running", func(st Status) bool {
			return st.State == StateRunning && st.Containers["sleeper"].Started
		})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		start := time.Now()
		if err := e.c.Cancel(ctx, ref); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		t.Logf("cancel confirmed after %v", time.Since(start))
		got, err := e.c.Status(ctx, []JobRef{ref})
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		st := got[ref.UID]
		if phase, reason := PodPhase(st.State); st.State != StateCancelled || phase != PhaseFailed || reason != ReasonCancelled {
			t.Errorf("after Cancel: %+v (%s, %s); want CANCELLED", st, phase, reason)
		}
		// Slurm's own word, asked directly.
		e2, found, err := e.c.queueJob(ctx, ref.JobID)
		if err != nil || found && !e2.State.Final() {
			t.Errorf("squeue after Cancel: %+v, found %v, %v; want final or gone", e2, found, err)
		}
		if err := e.c.Cancel(ctx, ref); err != nil {
			t.Errorf("Cancel of a cancelled job: %v", err)
		}
	})
}

func TestRigFollowLogs(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		ref := e.submit(t, e.shJob(t, nil, [][2]string{
			{"talker", "for i in 1 2 3 4 5; do echo line $i; sleep 1; done"},
		}))
		e.wait(t, ref, "started", func(st Status) bool { return st.Containers["talker"].Started || st.State.Final() })
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		r, err := e.c.Logs(ctx, ref, "talker", LogOptions{Tail: -1, Follow: true})
		if err != nil {
			t.Fatalf("Logs: %v", err)
		}
		defer r.Close()
		lines := bufio.NewReader(r)
		first, err := lines.ReadString('\n')
		if err != nil || first != "line 1\n" {
			t.Fatalf("first line %q, %v; want line 1", first, err)
		}
		if _, err := e.c.Site.Stat(ctx, path.Join(ref.Dir, jobscript.ExitFile("talker"))); err == nil {
			t.Errorf("the container had already ended when its first line arrived")
		}
		go func() {
			// the provider's status poll, which ends the followed logs
			for ctx.Err() == nil {
				got, err := e.c.Status(ctx, []JobRef{ref})
				if st := got[ref.UID]; err == nil && (st.Containers["talker"].Finished || st.State.Final()) {
					e.c.EndLogs(ref.UID, "talker")
					return
				}
				time.Sleep(500 * time.Millisecond)
			}
		}()
		rest, err := io.ReadAll(lines)
		if err != nil {
			t.Fatalf("following: %v", err)
		}
		if want := "line 2\nline 3\nline 4\nline 5\n"; string(rest) != want {
			t.Errorf("followed %q; want %q", rest, want)
		}
		if _, err := e.c.Site.Stat(ctx, path.Join(ref.Dir, jobscript.ExitFile("talker"))); err != nil {
			t.Errorf("Follow returned before the container ended: %v", err)
		}
	})
}

func TestRigStatusOfTwentyJobsIsOneSqueue(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeNone)
		var refs []JobRef
		for i := range 20 {
			refs = append(refs, e.submit(t, e.shJob(t, nil, [][2]string{{"main", fmt.Sprintf("echo %d; sleep 2", i)}})))
		}
		e.site.reset()
		got, err := e.c.Status(context.Background(), refs)
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		runs := e.site.reset()
		if runs["squeue"] != 1 || runs["sacct"] != 0 || runs["find"] > 1 || len(runs) > 2 {
			t.Errorf("Status of 20 jobs ran %v; want one squeue and at most one find", runs)
		}
		for _, ref := range refs {
			if st := got[ref.UID]; st.JobID != ref.JobID || st.Source != SourceSqueue || st.State == StateUnknown {
				t.Errorf("status of job %s = %+v", ref.JobID, st)
			}
		}
	})
}

func TestRigSubmitIsIdempotent(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeNone)
		job := e.shJob(t, nil, [][2]string{{"main", "sleep 5"}})
		job.Annotations = map[string]string{"interlink.eu/reverse-forwards": "redis:6379"}
		ref := e.submit(t, job)
		ctx := context.Background()
		// what a restarted sluice-vk reads back, over the site's SSH
		if got, err := e.c.Submitted(ctx, ref); err != nil || !maps.Equal(got, job.Annotations) {
			t.Errorf("Submitted = %v, %v; want %v", got, err, job.Annotations)
		}
		again, err := e.c.Submit(ctx, job)
		if err != nil || again != ref.JobID {
			t.Fatalf("second Submit = %s, %v; want %s", again, err, ref.JobID)
		}
		if err := e.c.Site.RemoveAll(ctx, path.Join(ref.Dir, jobscript.JobIDFile)); err != nil {
			t.Fatal(err)
		}
		e.site.reset()
		adopted, err := e.c.Submit(ctx, job)
		if err != nil || adopted != ref.JobID {
			t.Fatalf("Submit without job.id = %s, %v; want %s", adopted, err, ref.JobID)
		}
		if runs := e.site.reset(); runs["sbatch"] != 0 || runs["squeue"] != 1 {
			t.Errorf("Submit without job.id ran %v; want one squeue and no sbatch", runs)
		}
		var named []queueEntry
		entries, err := e.c.queue(ctx, "--name="+job.UID)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range entries {
			if q.Name == job.UID {
				named = append(named, q)
			}
		}
		if len(named) != 1 {
			t.Errorf("Slurm holds %d jobs named %s; want 1", len(named), job.UID)
		}
	})
}

func TestRigSacctAnswersForJobsSqueueForgot(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		job := e.shJob(t, nil, [][2]string{{"main", "echo done; exit 0"}})
		ref := e.submit(t, job)
		e.wait(t, ref, "final", final)
		e.site.hideJobs(ref.JobID)

		// sacct writes a job's end shortly after squeue shows it.
		st := e.wait(t, ref, "in sacct", func(st Status) bool { return st.Source == SourceSacct && st.State.Final() })
		if st.State != StateCompleted || st.Exit == nil || *st.Exit != (ExitCode{}) || st.BatchHost != e.node ||
			!st.Containers["main"].Finished || st.EndTime.IsZero() {
			t.Errorf("status from sacct %+v; want COMPLETED 0:0 on %s with main finished", st, e.node)
		}

		// Adoption goes to sacct too, once squeue has forgotten the job.
		ctx := context.Background()
		if err := e.c.Site.RemoveAll(ctx, path.Join(ref.Dir, jobscript.JobIDFile)); err != nil {
			t.Fatal(err)
		}
		e.site.reset()
		id, err := e.c.Submit(ctx, job)
		if err != nil || id != ref.JobID {
			t.Errorf("Submit of a job squeue forgot = %s, %v; want %s", id, err, ref.JobID)
		}
		if runs := e.site.reset(); runs["sbatch"] != 0 || runs["sacct"] != 1 {
			t.Errorf("adoption ran %v; want one sacct and no sbatch", runs)
		}
	})
}
