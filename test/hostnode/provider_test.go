package hostnode

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
)

// testProvider is a provider with objects in memory, the test binary as
// the init helper and /bin/sh as the image "shell".
type testProvider struct {
	*provider
	events *record.FakeRecorder
	// removed takes "namespace/name uid" of each pod RemovePod removes.
	removed chan string

	mu     sync.Mutex
	latest map[string]*corev1.Pod
}

func newTestProvider(t *testing.T) *testProvider {
	t.Helper()
	needRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tp := &testProvider{events: record.NewFakeRecorder(100), latest: map[string]*corev1.Pod{}, removed: make(chan string, 10)}
	services := []serviceHost{{Namespace: "ns", Name: "redis", Addr: netip.MustParseAddr("127.96.0.20")}}
	tp.provider = newProvider(context.Background(), providerConfig{
		NodeName: "rig-host", HostIP: hostIP, Images: map[string]string{"shell": "/bin/sh"},
		PodsDir: filepath.Join(t.TempDir(), "pods"), InitPath: exe, MaxBackoff: 500 * time.Millisecond,
		Objects: volumeObjects(), Tokens: fakeTokens{}, Recorder: tp.events,
		Services: func() []serviceHost { return services }, Log: slog.New(slog.DiscardHandler),
		RemovePod: func(_ context.Context, ns, name string, uid k8stypes.UID) error {
			tp.removed <- ns + "/" + name + " " + string(uid)
			return nil
		},
	})
	tp.NotifyPods(context.Background(), func(p *corev1.Pod) {
		tp.mu.Lock()
		defer tp.mu.Unlock()
		tp.latest[p.Name] = p
	})
	t.Cleanup(tp.shutdown)
	return tp
}

// waitPod waits until the last status pushed for the pod satisfies cond.
func (tp *testProvider) waitPod(t *testing.T, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	waitFor(t, name+": "+what, func() bool {
		tp.mu.Lock()
		defer tp.mu.Unlock()
		p = tp.latest[name]
		return p != nil && cond(p)
	})
	return p
}

// shellPod runs script in sh with the ConfigMap "node" at $BASE/node and an
// emptyDir at $BASE/scratch (base: a directory of the test, so that the
// mount points it makes on the host go with it).
func shellPod(base, name string, policy corev1.RestartPolicy, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: k8stypes.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName: "rig-host", RestartPolicy: policy, TerminationGracePeriodSeconds: new(int64(5)),
			Containers: []corev1.Container{{
				Name: "main", Image: "shell", Args: []string{"-c", script},
				Env: []corev1.EnvVar{fieldEnv("POD_IP", "status.podIP"), {Name: "LISTEN", Value: "$(POD_IP):9"}, {Name: "BASE", Value: base}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "node", MountPath: base + "/node"},
					{Name: "scratch", MountPath: base + "/scratch"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "node", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "node"}}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

func (tp *testProvider) logs(t *testing.T, pod string, previous bool) string {
	t.Helper()
	rc, err := tp.GetContainerLogs(context.Background(), "ns", pod, "main", api.ContainerLogOpts{Previous: previous})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestProviderRunsRestartsAndDeletes(t *testing.T) {
	tp := newTestProvider(t)
	// each run says what it sees, the first two fail
	script := `trap 'echo term; exit 0' TERM
		echo "run $(cat $BASE/scratch/n 2>/dev/null || echo 0) listen=$LISTEN node=$(cat $BASE/node/node)"
		grep -q redis.ns /etc/hosts && echo hosts-ok
		n=$(( $(cat $BASE/scratch/n 2>/dev/null || echo 0) + 1 )); echo $n > $BASE/scratch/n
		[ $n -ge 3 ] || exit 7
		while :; do sleep 0.05; done`
	if err := tp.CreatePod(context.Background(), shellPod(t.TempDir(), "web", corev1.RestartPolicyOnFailure, script)); err != nil {
		t.Fatal(err)
	}
	p := tp.waitPod(t, "web", "running after two restarts", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount == 2 && cs[0].State.Running != nil && p.Status.Phase == corev1.PodRunning
	})
	ip := p.Status.PodIP
	if !podIPPrefix.Contains(netip.MustParseAddr(ip)) || p.Status.HostIP != "127.0.0.1" {
		t.Errorf("pod IP %s, host IP %s", ip, p.Status.HostIP)
	}
	if last := p.Status.ContainerStatuses[0].LastTerminationState.Terminated; last == nil || last.ExitCode != 7 || last.Reason != "Error" {
		t.Errorf("last termination %+v; want exit 7", last)
	}
	if conds := conditions(p.Status); !strings.Contains(conds, "Ready=True") {
		t.Errorf("conditions %s; want Ready", conds)
	}
	want := fmt.Sprintf("run 2 listen=%s:9 node=node1\nhosts-ok\n", ip)
	var got string
	waitFor(t, "the third run's output", func() bool { got = tp.logs(t, "web", false); return strings.Contains(got, "hosts-ok") })
	if got != want {
		t.Errorf("logs %q; want %q", got, want)
	}
	if got := tp.logs(t, "web", true); !strings.HasPrefix(got, "run 1 ") {
		t.Errorf("previous logs %q; want the second run", got)
	}

	pod, _ := tp.GetPod(context.Background(), "ns", "web")
	if err := tp.DeletePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	p = tp.waitPod(t, "web", "terminal after deletion", func(p *corev1.Pod) bool {
		return p.Status.ContainerStatuses[0].State.Terminated != nil
	})
	if term := p.Status.ContainerStatuses[0].State.Terminated; p.Status.Phase != corev1.PodSucceeded || term.ExitCode != 0 {
		t.Errorf("after deletion: phase %s, container %+v; want Succeeded, exit 0 (its TERM trap)", p.Status.Phase, term)
	}
	if ready := conditions(p.Status); !strings.Contains(ready, "Ready=False") {
		t.Errorf("conditions after deletion %s", ready)
	}
	select {
	case got := <-tp.removed:
		if got != "ns/web uid-web" {
			t.Errorf("removed %q; want ns/web uid-web", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("the deleted pod was not removed from the API server")
	}
	waitFor(t, "the pod to be forgotten", func() bool {
		_, err := tp.GetPod(context.Background(), "ns", "web")
		return errdefs.IsNotFound(err)
	})
	if _, err := os.Stat(tp.podDir("uid-web")); !os.IsNotExist(err) {
		t.Errorf("pod directory after deletion: %v", err)
	}
	if err := tp.DeletePod(context.Background(), pod); !errdefs.IsNotFound(err) {
		t.Errorf("second DeletePod: %v; want not found", err)
	}
}

func TestProviderNeverPolicyFails(t *testing.T) {
	tp := newTestProvider(t)
	if err := tp.CreatePod(context.Background(), shellPod(t.TempDir(), "once", corev1.RestartPolicyNever, "echo bye; exit 4")); err != nil {
		t.Fatal(err)
	}
	p := tp.waitPod(t, "once", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if term := p.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 4 || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("container %+v; want exit 4, no restart", p.Status.ContainerStatuses[0])
	}
}

func TestProviderWaitsForImageAndVolumes(t *testing.T) {
	tp := newTestProvider(t)
	unmapped := shellPod(t.TempDir(), "unmapped", corev1.RestartPolicyAlways, "true")
	unmapped.Spec.Containers[0].Image = "rig.test/nothing:1"
	missing := shellPod(t.TempDir(), "missing", corev1.RestartPolicyAlways, "true")
	missing.Spec.Volumes[0].ConfigMap.Name = "absent"
	refused := shellPod(t.TempDir(), "refused", corev1.RestartPolicyAlways, "true")
	refused.Spec.Volumes = append(refused.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}})
	for _, p := range []*corev1.Pod{unmapped, missing, refused} {
		if err := tp.CreatePod(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	waiting := func(reason string) func(*corev1.Pod) bool {
		return func(p *corev1.Pod) bool {
			w := p.Status.ContainerStatuses[0].State.Waiting
			return w != nil && w.Reason == reason
		}
	}
	p := tp.waitPod(t, "unmapped", "ErrImagePull", waiting("ErrImagePull"))
	if p.Status.Phase != corev1.PodPending || !strings.Contains(p.Status.ContainerStatuses[0].State.Waiting.Message, "--image rig.test/nothing:1=PATH") {
		t.Errorf("unmapped image: %s %+v", p.Status.Phase, p.Status.ContainerStatuses[0].State.Waiting)
	}
	p = tp.waitPod(t, "missing", "waiting for its ConfigMap", func(p *corev1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ContainerCreating" && strings.Contains(w.Message, `configMap absent: configmaps "absent" not found`)
	})
	p = tp.waitPod(t, "refused", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if p.Status.Reason != "UnsupportedByHostNode" || !strings.Contains(p.Status.Message, "volume data: only emptyDir") {
		t.Errorf("refused pod: reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	seen := map[string]bool{}
	for len(tp.events.Events) > 0 {
		seen[strings.SplitN(<-tp.events.Events, " ", 3)[1]] = true
	}
	for _, reason := range []string{"Failed", "FailedMount"} {
		if !seen[reason] {
			t.Errorf("no %s Event among %v", reason, seen)
		}
	}
}
