package shadow

import (
	"reflect"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
)

// TestProbes: each tunnel's liveness asks /healthz of its own metrics
// server (the --metrics port); only the forward tunnel's readiness asks
// /readyz; the hold container has neither; a kept container keeps its own.
func TestProbes(t *testing.T) {
	keptReady := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}}
	pod := testPod("science", "p", withPorts("8080", "9464"), withAnnotation(annotations.ReverseForwards, "redis:6379"),
		withContainer(corev1.Container{Name: "cache", Image: "redis", ReadinessProbe: keptReady}),
		withAnnotation(annotations.DisableOffloadContainers, "cache"))
	objs, err := testSpec().Build(pod)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	for _, tc := range []struct {
		container    string
		live, readyz bool
	}{
		{ContainerForward, true, true},
		{ContainerReverse, true, false},
	} {
		c := container(objs, tc.container)
		port, ok := statusPort(*c)
		if !ok {
			t.Fatalf("%s has no --metrics port: %q", c.Name, c.Args)
		}
		checkProbe(t, c.Name+" liveness", c.LivenessProbe, "/healthz", port)
		if tc.readyz {
			checkProbe(t, c.Name+" readiness", c.ReadinessProbe, "/readyz", port)
		} else if c.ReadinessProbe != nil {
			t.Errorf("%s readiness probe %v; want none", c.Name, c.ReadinessProbe)
		}
	}
	// 9464 is the pod's: the forward's metrics port moved up.
	if port, _ := statusPort(*container(objs, ContainerForward)); port == 9464 {
		t.Errorf("forward metrics port %d collides with the pod's port", port)
	}
	if c := container(objs, "cache"); !reflect.DeepEqual(c.ReadinessProbe, keptReady) || c.LivenessProbe != nil {
		t.Errorf("kept container probes %v, %v; want its own readiness only", c.ReadinessProbe, c.LivenessProbe)
	}

	hold, err := testSpec().Build(shadowShapes()["hold"])
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if c := container(hold, ContainerHold); c.LivenessProbe != nil || c.ReadinessProbe != nil {
		t.Errorf("hold probes %v, %v; want none (it serves nothing)", c.LivenessProbe, c.ReadinessProbe)
	}
}

func checkProbe(t *testing.T, what string, p *corev1.Probe, path string, port int) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("%s probe %v; want httpGet %s", what, p, path)
		return
	}
	g := p.HTTPGet
	if g.Path != path || g.Port.IntValue() != port || g.Host != "" || g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP {
		t.Errorf("%s probe httpGet %+v; want %s on port %d of the pod's IP, http", what, g, path, port)
	}
	if p.PeriodSeconds <= 0 || p.TimeoutSeconds <= 0 || p.TimeoutSeconds >= p.PeriodSeconds || p.FailureThreshold < 2 {
		t.Errorf("%s probe period %ds timeout %ds failures %d; want a timeout within the period, 2 failures or more",
			what, p.PeriodSeconds, p.TimeoutSeconds, p.FailureThreshold)
	}
}
