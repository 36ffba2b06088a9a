package shadow

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const testUID = "0b5c5d1e-8f3a-4c7e-9d2b-6a1f0e3c4b5a"

// testSpec is a complete Spec, as a site on the rig would give it.
func testSpec() Spec {
	return Spec{
		NodeName:             "hpc-a",
		LoginHost:            "10.251.1.2",
		LoginPort:            2222,
		User:                 "alice",
		KeySecret:            "hpc-ssh-key",
		LoginHostKeys:        "hpc-known-hosts",
		NodeHostKeys:         "hpc-node-keys",
		ForwardTarget:        "node",
		TunnelImage:          "ghcr.io/sluice-hpc/sluice-tunnel:v1",
		SocketDirRoot:        "/tmp/sluice-sock",
		CredentialsNamespace: "sluice-system",
	}
}

// podOpt changes a test pod.
type podOpt func(*corev1.Pod)

// testPod is a pod of namespace ns named name with one container "main";
// opts change it.
func testPod(ns, name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: testUID, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			NodeName:   "hpc-a",
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withUID(uid string) podOpt { return func(p *corev1.Pod) { p.UID = types.UID(uid) } }

func withAnnotation(k, v string) podOpt { return func(p *corev1.Pod) { p.Annotations[k] = v } }

// withPorts adds ports to the container "main": "8080", "8080/UDP",
// "http=8080".
func withPorts(ports ...string) podOpt {
	return func(p *corev1.Pod) {
		for _, s := range ports {
			var cp corev1.ContainerPort
			if name, rest, ok := strings.Cut(s, "="); ok {
				cp.Name, s = name, rest
			}
			num, proto, _ := strings.Cut(s, "/")
			cp.Protocol = corev1.Protocol(proto)
			cp.ContainerPort = int32(atoi(num))
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, cp)
		}
	}
}

func withContainer(c corev1.Container) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, c) }
}

func withInit(c corev1.Container) podOpt {
	return func(p *corev1.Pod) { p.Spec.InitContainers = append(p.Spec.InitContainers, c) }
}

func withVolume(v corev1.Volume) podOpt {
	return func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, v) }
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func emptyDir(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

func configMapVolume(name, cm string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm},
	}}}
}

func mount(name, path string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: name, MountPath: path}
}

func containerNames(cs []corev1.Container) []string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return names
}

func volumeNamesOf(vs []corev1.Volume) []string {
	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
	}
	return names
}

func container(objs *Objects, name string) *corev1.Container {
	for i, c := range objs.Deployment.Spec.Template.Spec.Containers {
		if c.Name == name {
			return &objs.Deployment.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

// hasArgs reports the args of objs' container name that are not in want.
func hasArgs(t *testing.T, objs *Objects, name string, want []string) *corev1.Container {
	t.Helper()
	c := container(objs, name)
	if c == nil {
		t.Fatalf("no container %s", name)
	}
	for _, w := range want {
		if !slices.Contains(c.Args, w) {
			t.Errorf("%s args %v lack %s", name, c.Args, w)
		}
	}
	return c
}

// mountsOf maps c's volume mounts' names to their paths.
func mountsOf(c *corev1.Container) map[string]string {
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	return mounts
}
