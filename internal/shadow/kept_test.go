package shadow

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	corev1 "k8s.io/api/core/v1"
)

// keptPod has init containers fetch (kept), setup; containers main (with
// port 8080), cache (kept, port 6379), and volumes used by each.
func keptPod(ns string, opts ...podOpt) *corev1.Pod {
	base := []podOpt{
		withPorts("8080"),
		withInit(corev1.Container{Name: "fetch", Image: "curl", VolumeMounts: []corev1.VolumeMount{mount("data", "/data"), mount("scratch", "/s")}}),
		withInit(corev1.Container{Name: "setup", Image: "busybox", VolumeMounts: []corev1.VolumeMount{mount("data", "/data")}}),
		withContainer(corev1.Container{Name: "cache", Image: "redis", Ports: []corev1.ContainerPort{{ContainerPort: 6379}},
			VolumeMounts: []corev1.VolumeMount{mount("cache-dir", "/var/cache")}}),
		withVolume(emptyDir("data")),
		withVolume(emptyDir("scratch")),
		withVolume(emptyDir("cache-dir")),
		withVolume(emptyDir("unused")),
		withAnnotation(annotations.DisableOffloadInitContainers, "fetch"),
		withAnnotation(annotations.DisableOffloadContainers, " cache,"),
	}
	return testPod(ns, "p", append(base, opts...)...)
}

func TestKept(t *testing.T) {
	pod := keptPod("science")
	if got := containerNames(KeptInit(pod)); !reflect.DeepEqual(got, []string{"fetch"}) {
		t.Errorf("KeptInit = %v; want fetch", got)
	}
	if got := containerNames(KeptContainers(pod)); !reflect.DeepEqual(got, []string{"cache"}) {
		t.Errorf("KeptContainers = %v; want cache", got)
	}
	before := pod.DeepCopy()
	off := Offloaded(pod)
	if !reflect.DeepEqual(pod, before) {
		t.Errorf("Offloaded changed its argument")
	}
	if got := containerNames(off.Spec.InitContainers); !reflect.DeepEqual(got, []string{"setup"}) {
		t.Errorf("offloaded init containers %v; want setup", got)
	}
	if got := containerNames(off.Spec.Containers); !reflect.DeepEqual(got, []string{"main"}) {
		t.Errorf("offloaded containers %v; want main", got)
	}
	// data is shared with setup, unused is nobody's: both stay; scratch and
	// cache-dir were the kept containers' only.
	if got := volumeNamesOf(off.Spec.Volumes); !reflect.DeepEqual(got, []string{"data", "unused"}) {
		t.Errorf("offloaded volumes %v; want data, unused", got)
	}

	plain := testPod("ns", "p", withVolume(emptyDir("v")))
	if got := Offloaded(plain); !reflect.DeepEqual(got, plain) || got == plain {
		t.Errorf("Offloaded of a pod keeping nothing is not an equal copy")
	}
	for _, v := range []string{"fetch setup", "fetch,setup", "fetch,\tsetup\n", ",,fetch  ,setup,"} {
		p := keptPod("science", withAnnotation(annotations.DisableOffloadInitContainers, v))
		if got := containerNames(KeptInit(p)); !reflect.DeepEqual(got, []string{"fetch", "setup"}) {
			t.Errorf("KeptInit for %q = %v; want fetch, setup", v, got)
		}
	}
}

func TestBuildKept(t *testing.T) {
	pod := keptPod("science")
	objs, err := testSpec().Build(pod)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	ps := objs.Deployment.Spec.Template.Spec
	if got := containerNames(ps.InitContainers); !reflect.DeepEqual(got, []string{"fetch"}) {
		t.Errorf("shadow init containers %v; want fetch", got)
	}
	if got := containerNames(ps.Containers); !reflect.DeepEqual(got, []string{"ssh-forward", "cache"}) {
		t.Errorf("shadow containers %v; want ssh-forward, cache", got)
	}
	if got := volumeNamesOf(ps.Volumes); !reflect.DeepEqual(got, []string{"ssh-key", "login-hosts", "node-hosts", "node", "data", "scratch", "cache-dir"}) {
		t.Errorf("shadow volumes %v", got)
	}
	// The kept container's port is served by the shadow pod itself: in the
	// Service, not forwarded.
	var ports []int32
	for _, p := range objs.Service.Spec.Ports {
		ports = append(ports, p.Port)
	}
	if !reflect.DeepEqual(ports, []int32{6379, 8080}) {
		t.Errorf("service ports %v; want 6379, 8080", ports)
	}
	if args := container(objs, "ssh-forward").Args; !slicesContain(args, "--ports=8080") {
		t.Errorf("forward args %q; want --ports=8080", args)
	}
}

func TestBuildKeptInitOnly(t *testing.T) {
	pod := testPod("science", "p",
		withInit(corev1.Container{Name: "fetch", Image: "curl"}),
		withAnnotation(annotations.DisableOffloadInitContainers, "fetch"))
	objs, err := testSpec().Build(pod)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	ps := objs.Deployment.Spec.Template.Spec
	if got := containerNames(ps.Containers); !reflect.DeepEqual(got, []string{"hold"}) {
		t.Errorf("containers %v; want hold", got)
	}
	if ps.Containers[0].Image != testSpec().TunnelImage || !reflect.DeepEqual(ps.Containers[0].Args, []string{"hold"}) {
		t.Errorf("hold container %+v; want the tunnel image with args hold", ps.Containers[0])
	}
	if len(ps.Volumes) != 0 || objs.Service != nil {
		t.Errorf("a shadow without tunnels has volumes %v, service %v", volumeNamesOf(ps.Volumes), objs.Service != nil)
	}
}

func TestBuildKeptOtherNamespace(t *testing.T) {
	secretEnv := corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}
	fromCM := corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}
	fetch := func(edit func(*corev1.Container)) podOpt {
		c := corev1.Container{Name: "fetch", Image: "curl"}
		edit(&c)
		return func(p *corev1.Pod) {
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
			p.Annotations[annotations.DisableOffloadInitContainers] = "fetch"
		}
	}
	tests := []struct {
		name  string
		opts  []podOpt
		field string
	}{
		{"configmap volume", []podOpt{withVolume(configMapVolume("conf", "settings")),
			fetch(func(c *corev1.Container) { c.VolumeMounts = []corev1.VolumeMount{mount("conf", "/conf")} })}, "spec.volumes[conf]"},
		{"secret env", []podOpt{fetch(func(c *corev1.Container) { c.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, secretEnv} })},
			"spec.initContainers[0].env[1]"},
		{"configmap envFrom", []podOpt{fetch(func(c *corev1.Container) { c.EnvFrom = []corev1.EnvFromSource{fromCM} })},
			"spec.initContainers[0].envFrom[0]"},
		{"hostPath volume", []podOpt{withVolume(corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}),
			fetch(func(c *corev1.Container) { c.VolumeMounts = []corev1.VolumeMount{mount("host", "/host")} })}, "spec.volumes[host]"},
		{"downward API volume", []podOpt{withVolume(corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}}),
			fetch(func(c *corev1.Container) { c.VolumeMounts = []corev1.VolumeMount{mount("info", "/info")} })}, "spec.volumes[info]"},
		{"kept container with a tunnel's name", []podOpt{withPorts("80"), withContainer(corev1.Container{Name: "ssh-forward", Image: "x"}),
			withAnnotation(annotations.DisableOffloadContainers, "ssh-forward")}, "metadata.annotations[" + annotations.DisableOffloadContainers + "]"},
		{"port both kept and offloaded", []podOpt{withPorts("80"), withContainer(corev1.Container{Name: "web", Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}),
			withAnnotation(annotations.DisableOffloadContainers, "web")}, "spec.containers[1].ports"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := testSpec().Build(testPod("science", "p", tt.opts...))
			var perr *jobscript.PodError
			if !errors.As(err, &perr) || perr.Field != tt.field {
				t.Fatalf("Build: %v; want a PodError on %s", err, tt.field)
			}
			if strings.HasPrefix(tt.field, "spec.volumes[conf]") && !strings.Contains(perr.Reason, "science-shadow") {
				t.Errorf("reason %q does not name the shadow namespace", perr.Reason)
			}
		})
	}
}

func TestBuildKeptCarried(t *testing.T) {
	root, user := int64(0), int64(1000)
	yes := true
	token := corev1.Volume{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}
	fetch := corev1.Container{
		Name: "fetch", Image: "curl",
		Env: []corev1.EnvVar{
			{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "TEAM", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['team']"}}},
			{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
		},
		VolumeMounts:    []corev1.VolumeMount{mount("conf", "/conf"), mount("kube-api-access-x7k2p", "/var/run/secrets/kubernetes.io/serviceaccount"), mount("node", "/n")},
		SecurityContext: &corev1.SecurityContext{RunAsUser: &root},
	}
	opts := []podOpt{
		withPorts("80"),
		withInit(fetch),
		withVolume(configMapVolume("conf", "settings")),
		withVolume(token),
		withVolume(emptyDir("node")),
		withAnnotation(annotations.DisableOffloadInitContainers, "fetch"),
		func(p *corev1.Pod) {
			p.Labels = map[string]string{"team": "optics"}
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &user, RunAsNonRoot: &yes}
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
		},
	}
	s := testSpec()
	s.TenantNamespace = "science" // the pod's own namespace
	pod := testPod("science", "p", opts...)
	objs, err := s.Build(pod)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	d := objs.Deployment
	if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].Kind != "Pod" || d.OwnerReferences[0].UID != testUID {
		t.Errorf("deployment owners %+v; want the pod", d.OwnerReferences)
	}
	ps := d.Spec.Template.Spec
	if !reflect.DeepEqual(ps.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}}) {
		t.Errorf("image pull secrets %v; want regcred", ps.ImagePullSecrets)
	}
	// The pod's own volume "node" is renamed so as not to hide the node
	// ConfigMap; the token volume is not carried.
	if got := volumeNamesOf(ps.Volumes); !reflect.DeepEqual(got, []string{"ssh-key", "login-hosts", "node-hosts", "node", "conf", "kept-node"}) {
		t.Errorf("volumes %v", got)
	}
	for _, v := range ps.Volumes {
		if v.Name == "node" && (v.ConfigMap == nil || v.ConfigMap.Name != objs.Name+"-node") {
			t.Errorf("volume node is %+v; want the node ConfigMap", v.VolumeSource)
		}
		if v.Name == "kept-node" && v.EmptyDir == nil {
			t.Errorf("volume kept-node is %+v; want the pod's emptyDir", v.VolumeSource)
		}
	}
	c := ps.InitContainers[0]
	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.Name+"="+m.MountPath)
	}
	if !reflect.DeepEqual(mounts, []string{"conf=/conf", "kept-node=/n"}) {
		t.Errorf("fetch mounts %v; want conf=/conf, kept-node=/n", mounts)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = "field:" + e.ValueFrom.FieldRef.FieldPath
		case e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name
		}
	}
	want := map[string]string{"POD": "p", "TEAM": "optics", "IP": "field:status.podIP", "KEY": "secret:s"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("fetch env %v; want %v", env, want)
	}
	sc := c.SecurityContext
	if sc == nil || *sc.RunAsUser != 0 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("fetch security context %+v; want its own runAsUser 0 and the pod's runAsNonRoot", sc)
	}
	if !reflect.DeepEqual(pod, testPod("science", "p", opts...)) {
		t.Errorf("Build changed the pod")
	}
}

func TestKeptInitDone(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	yes, no := true, false
	spec := corev1.PodSpec{InitContainers: []corev1.Container{{Name: "fetch"}, {Name: "side", RestartPolicy: &always}}}
	status := func(fetch corev1.ContainerStatus, sideStarted *bool) *corev1.Pod {
		fetch.Name = "fetch"
		return &corev1.Pod{Spec: spec, Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{
			fetch, {Name: "side", Started: sideStarted},
		}}}
	}
	done := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	failed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		done    bool
		failure bool
	}{
		{"no pod", nil, false, false},
		{"no status yet", &corev1.Pod{Spec: spec}, false, false},
		{"running", status(corev1.ContainerStatus{State: running}, &no), false, false},
		{"done, sidecar not started", status(corev1.ContainerStatus{State: done}, &no), false, false},
		{"done, sidecar started", status(corev1.ContainerStatus{State: done}, &yes), true, false},
		{"failed", status(corev1.ContainerStatus{State: failed}, nil), false, true},
		{"crash looping", status(corev1.ContainerStatus{State: waiting, LastTerminationState: failed}, nil), false, true},
		{"none kept", &corev1.Pod{}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, err := KeptInitDone(tt.pod)
			if done != tt.done || (err != nil) != tt.failure {
				t.Errorf("KeptInitDone = %v, %v; want %v, failure %v", done, err, tt.done, tt.failure)
			}
			if err != nil && !strings.Contains(err.Error(), "fetch") {
				t.Errorf("error %q does not name the container", err)
			}
		})
	}
}
