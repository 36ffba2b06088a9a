package provider

import (
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"k8s.io/client-go/tools/record"
)

// TestReadinessEvents: a probe that passes gives ProbeReady, one that
// fails after it passed gives Unhealthy; no change, no Event.
func TestReadinessEvents(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	p := &Provider{cfg: Config{Recorder: rec}}
	pod := testPod("p")
	no, yes := false, true
	status := func(r *bool) slurm.Status {
		return slurm.Status{Containers: map[string]slurm.ContainerStatus{"main": {Started: true, Ready: r}, "plain": {Started: true}}}
	}
	steps := []struct {
		ready *bool
		want  string
	}{
		{&no, ""},
		{&yes, "Normal ProbeReady Readiness probe of container main passed: the container is ready"},
		{&yes, ""},
		{&no, "Warning Unhealthy Readiness probe of container main failed: the container is not ready"},
	}
	prev := status(nil)
	for i, s := range steps {
		cur := status(s.ready)
		p.readinessEvents(pod, prev, cur)
		prev = cur
		var got string
		select {
		case got = <-rec.Events:
		default:
		}
		if got != s.want {
			t.Errorf("step %d: got Event %q; want %q", i, got, s.want)
		}
	}
}

func TestPreStopGrace(t *testing.T) {
	pod := testPod("p")
	hooked := []jobscript.Container{{Name: "a"}, {Name: "b", PreStop: &jobscript.Probe{Kind: jobscript.ProbeExec}}}
	if g := preStopGrace(pod, hooked[:1]); g != 0 {
		t.Errorf("without hooks: got %v; want 0", g)
	}
	if g := preStopGrace(pod, hooked); g != 30*time.Second+preStopSlack {
		t.Errorf("default grace: got %v; want 30s and the slack", g)
	}
	ten, zero := int64(10), int64(0)
	pod.Spec.TerminationGracePeriodSeconds = &ten
	if g := preStopGrace(pod, hooked); g != 10*time.Second+preStopSlack {
		t.Errorf("grace 10: got %v; want 10s and the slack", g)
	}
	pod.Spec.TerminationGracePeriodSeconds = &zero
	if g := preStopGrace(pod, hooked); g != time.Second+preStopSlack {
		t.Errorf("grace 0: got %v; want 1s and the slack", g)
	}
}
