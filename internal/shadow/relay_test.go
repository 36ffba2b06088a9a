package shadow

import (
	"slices"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
)

func TestRunsRelay(t *testing.T) {
	kept := func(p *corev1.Pod) { p.Annotations[annotations.DisableOffloadContainers] = "main" }
	for _, tc := range []struct {
		name    string
		opts    []podOpt
		entries bool
		want    bool
	}{
		{"nothing", nil, true, false},
		{"reverse forwards", []podOpt{withAnnotation(annotations.ReverseForwards, "redis:6379")}, false, true},
		{"socks only", []podOpt{withAnnotation(annotations.ReverseSocksPort, "1080")}, true, false},
		{"exposed port", []podOpt{withPorts("8080")}, true, true},
		{"exposed port, no entries", []podOpt{withPorts("8080")}, false, false},
		{"exposed port of a kept container", []podOpt{withPorts("8080"), kept}, true, false},
		{"exposed UDP port", []podOpt{func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 53, Protocol: corev1.ProtocolUDP}}
		}}, true, false},
		{"pod VPN", []podOpt{withPorts("8080"), withAnnotation(annotations.PodVPN, "true")}, true, false},
	} {
		if got := RunsRelay(testPod("ns", "web", tc.opts...), tc.entries); got != tc.want {
			t.Errorf("%s (entries %v): got %v; want %v", tc.name, tc.entries, got, tc.want)
		}
	}
}

// TestBuildForwardOnlyRelayed: the shadow of a pod that exposes a port and
// asks for no reverse tunnel goes through the relay's entry, directly or
// through the gateway (which reads it from the Deployment); without a
// socket directory root it does not.
func TestBuildForwardOnlyRelayed(t *testing.T) {
	const entry = "--entry-dir-file=/etc/sluice/node/socket-dir"
	for _, tc := range []struct {
		name          string
		root, gateway string
		relayed, arg  bool
	}{
		{"direct", "/tmp/sluice-sock", "", true, true},
		{"gateway", "/tmp/sluice-sock", "sluice-gateway.sluice-system.svc:2222", true, false},
		{"no socket root", "", "", false, false},
	} {
		s := testSpec()
		s.SocketDirRoot = tc.root
		if tc.gateway != "" {
			s.GatewayAddress, s.GatewayHostKeys = tc.gateway, "sluice-gateway-host-keys"
		}
		o, err := s.Build(testPod("ns", "web", withPorts("8080")))
		if err != nil {
			t.Fatalf("%s: Build: %v", tc.name, err)
		}
		c, err := CarriedBy(o.Deployment)
		if err != nil {
			t.Fatalf("%s: CarriedBy: %v", tc.name, err)
		}
		if c.Relayed != tc.relayed {
			t.Errorf("%s: carried %+v; want Relayed %v", tc.name, c, tc.relayed)
		}
		var args []string
		for _, ctr := range o.Deployment.Spec.Template.Spec.Containers {
			if ctr.Name == ContainerForward {
				args = ctr.Args
			}
		}
		if got := slices.Contains(args, entry); got != tc.arg {
			t.Errorf("%s: %s in %q is %v; want %v", tc.name, entry, args, got, tc.arg)
		}
	}
	// A Deployment an earlier sluice made for reverse forwards carries no
	// mark, and is relayed all the same.
	o, err := testSpec().Build(testPod("ns", "web", withPorts("8080"), withAnnotation(annotations.ReverseForwards, "redis:6379")))
	if err != nil {
		t.Fatal(err)
	}
	delete(o.Deployment.Spec.Template.Annotations, AnnotationRelayed)
	if c, err := CarriedBy(o.Deployment); err != nil || !c.Relayed {
		t.Errorf("unmarked Deployment with reverse forwards: carried %+v, %v; want Relayed", c, err)
	}
}
