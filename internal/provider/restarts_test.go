package provider

import (
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// TestRestartStatus: a container its probes killed and its job ran again
// shows the kubelet's restart count and last termination; while it waits
// for its restart it is in CrashLoopBackOff, with the restart to come not
// counted yet; until its startup probe passes it is neither started nor
// ready.
func TestRestartStatus(t *testing.T) {
	pod := testPod("p")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	start, end := now.Add(-time.Minute), now.Add(-30*time.Second)
	last := &slurm.Termination{ExitCode: 143, StartedAt: start, FinishedAt: end, Reason: slurm.KilledByLiveness}
	no, yes := false, true
	for _, tc := range []struct {
		name           string
		c              slurm.ContainerStatus
		state          string
		restarts       int32
		started, ready bool
	}{
		{"running again", slurm.ContainerStatus{Started: true, StartedAt: now, RestartCount: 2, LastTermination: last},
			"running", 2, true, true},
		{"back-off", slurm.ContainerStatus{Started: true, StartedAt: start, FinishedAt: end, RestartCount: 2, LastTermination: last, BackOff: true},
			"waiting:CrashLoopBackOff", 1, false, false},
		{"startup not passed", slurm.ContainerStatus{Started: true, StartedAt: now, StartupPassed: &no, RestartCount: 1, LastTermination: last},
			"running", 1, false, false},
		{"startup passed", slurm.ContainerStatus{Started: true, StartedAt: now, StartupPassed: &yes, Ready: &yes},
			"running", 0, true, true},
		{"ended", slurm.ContainerStatus{Started: true, Finished: true, ExitCode: 143, RestartCount: 3, LastTermination: last},
			"terminated:143:Error", 3, false, false},
		{"killed for good", slurm.ContainerStatus{Started: true, Finished: true, ExitCode: 137, KilledBy: slurm.KilledByStartup},
			"terminated:137:Error", 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := slurm.Status{JobID: "7", State: slurm.StateRunning, StartTime: start, Containers: map[string]slurm.ContainerStatus{"main": tc.c}}
			st := jobStatus(pod, initialStatus(pod, "10.0.0.1", now), js, nil, now)
			cs := st.ContainerStatuses[0]
			if got := state(cs); got != tc.state {
				t.Errorf("state %s; want %s", got, tc.state)
			}
			if st.Phase != corev1.PodRunning {
				t.Errorf("pod phase %s; want Running", st.Phase)
			}
			if cs.RestartCount != tc.restarts || *cs.Started != tc.started || cs.Ready != tc.ready {
				t.Errorf("restarts %d, started %v, ready %v; want %d, %v, %v", cs.RestartCount, *cs.Started, cs.Ready, tc.restarts, tc.started, tc.ready)
			}
			if term := cs.State.Terminated; tc.c.KilledBy != "" && (term == nil || term.Message != "killed by its failing startup probe") {
				t.Errorf("terminated %+v; want it killed by its startup probe", term)
			}
			lt := cs.LastTerminationState.Terminated
			if tc.c.LastTermination == nil {
				if lt != nil {
					t.Errorf("last termination %+v; want none", lt)
				}
				return
			}
			if lt == nil || lt.ExitCode != 143 || lt.Reason != "Error" || lt.Message != "killed by its failing liveness probe" ||
				!lt.StartedAt.Time.Equal(start) || !lt.FinishedAt.Time.Equal(end) || lt.ContainerID != "slurm://7/main" {
				t.Errorf("last termination %+v; want 143 Error, killed by its liveness probe, %v to %v", lt, start, end)
			}
		})
	}
}

// TestRestartEvents: each new kill the job counted gives the kubelet's
// Events, the probe's Warning then Killing; no new kill, no Event.
func TestRestartEvents(t *testing.T) {
	rec := record.NewFakeRecorder(20)
	p := &Provider{cfg: Config{Recorder: rec}}
	pod := testPod("p")
	status := func(n int, r slurm.KillReason) slurm.Status {
		c := slurm.ContainerStatus{Started: true}
		if n > 0 {
			c.RestartCount, c.LastTermination = n, &slurm.Termination{ExitCode: 143, Reason: r}
		}
		return slurm.Status{Containers: map[string]slurm.ContainerStatus{"main": c, "plain": {Started: true}}}
	}
	// killed: the last kill was for good (restartPolicy Never).
	killed := func(n int, r slurm.KillReason) slurm.Status {
		s := status(n, slurm.KilledByPostStart)
		c := s.Containers["main"]
		c.Finished, c.ExitCode, c.KilledBy = true, 143, r
		s.Containers["main"] = c
		return s
	}
	steps := []struct {
		cur  slurm.Status
		want []string
	}{
		{status(0, ""), nil},
		{status(1, slurm.KilledByLiveness), []string{
			"Warning Unhealthy Liveness probe of container main failed",
			"Normal Killing Container main failed liveness probe, will be restarted"}},
		{status(1, slurm.KilledByLiveness), nil},
		{status(3, slurm.KilledByStartup), []string{
			"Warning Unhealthy Startup probe of container main failed (2 times since the last status)",
			"Normal Killing Container main failed startup probe, will be restarted"}},
		{status(4, slurm.KilledByPostStart), []string{
			"Warning FailedPostStartHook PostStartHook of container main failed",
			"Normal Killing Container main failed its postStart hook, will be restarted"}},
		{killed(4, slurm.KilledByLiveness), []string{
			"Warning Unhealthy Liveness probe of container main failed",
			"Normal Killing Container main failed liveness probe"}},
		{killed(4, slurm.KilledByLiveness), nil},
	}
	prev := slurm.Status{}
	for i, s := range steps {
		p.restartEvents(pod, prev, s.cur)
		prev = s.cur
		var got []string
		for len(rec.Events) > 0 {
			got = append(got, <-rec.Events)
		}
		if len(got) != len(s.want) {
			t.Errorf("step %d: got Events %q; want %q", i, got, s.want)
			continue
		}
		for j := range got {
			if got[j] != s.want[j] {
				t.Errorf("step %d: got Event %q; want %q", i, got[j], s.want[j])
			}
		}
	}
}
