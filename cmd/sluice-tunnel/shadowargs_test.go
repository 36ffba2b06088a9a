package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestShadowGatewayArgsParse: the tunnel containers internal/shadow builds
// with the gateway on, pacing set, start: their arguments are accepted by
// this command, which refuses any site flag with --gateway.
func TestShadowGatewayArgsParse(t *testing.T) {
	spec := shadow.Spec{
		NodeName: "vk1", LoginHost: "login.hpc", LoginPort: 22, User: "alice",
		KeySecret: "hpc-ssh-key", LoginHostKeys: "hpc-known-hosts", NodeHostKeys: "hpc-node-keys",
		ForwardTarget: "node", TunnelImage: "ghcr.io/sluice-hpc/sluice-tunnel:v1", SocketDirRoot: "/tmp/sluice-sock",
		CredentialsNamespace: "sluice", ReconnectSpread: 200 * time.Millisecond,
		GatewayAddress: "sluice-gateway.sluice.svc:2222", GatewayHostKeys: "sluice-gateway-host-keys",
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "0f6c7d8e-1a2b-4c3d-9e8f-000000000001",
			Annotations: map[string]string{annotations.ReverseForwards: "redis:6379"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
	}
	objs, err := spec.Build(pod)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	modes := map[string]string{shadow.ContainerForward: modeForward, shadow.ContainerReverse: modeReverse}
	seen := 0
	for _, c := range objs.Deployment.Spec.Template.Spec.Containers {
		mode, ok := modes[c.Name]
		if !ok {
			continue
		}
		seen++
		if len(c.Args) == 0 || c.Args[0] != mode {
			t.Errorf("container %s: args %q; want them to start with %s", c.Name, c.Args, mode)
			continue
		}
		// The kubelet expands $(POD_IP) from the container's environment.
		args := make([]string, len(c.Args)-1)
		for i, a := range c.Args[1:] {
			args[i] = strings.ReplaceAll(a, "$(POD_IP)", "10.244.1.7")
		}
		if _, err := parseArgs(mode, args); err != nil {
			t.Errorf("container %s: sluice-tunnel %q: %v", c.Name, c.Args, err)
		}
	}
	if seen != 2 {
		t.Errorf("%d tunnel containers built; want the forward and the reverse", seen)
	}
}
