package provider

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/sitepath"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// fakeShadows is a shadow manager whose shadow pod the test moves on.
type fakeShadows struct {
	mu      sync.Mutex
	pod     *corev1.Pod // the shadow pod; nil until set
	nodes   []string
	dirs    []string // the socket directory of each SetNode
	deleted int
	// nodeOf and deletedOf are the pods SetNode and Delete were given, in
	// order: where the shadow is follows from their annotations.
	nodeOf    []*corev1.Pod
	deletedOf []*corev1.Pod
	tunnels   []tunnel.Snapshot // what TunnelStatus answers
	gated     []bool            // each SetOffloadedReady, in order
}

// SetOffloadedReady records ready and sets the condition on the shadow pod
// when it is the one the fake holds.
func (f *fakeShadows) SetOffloadedReady(_ context.Context, sp *corev1.Pod, ready bool, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gated = append(f.gated, ready)
	if f.pod != nil && f.pod.Name == sp.Name {
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		f.pod.Status.Conditions = []corev1.PodCondition{{Type: shadow.ConditionOffloadedReady, Status: st}}
	}
	return nil
}

func (f *fakeShadows) Ensure(_ context.Context, pod *corev1.Pod) (*shadow.Ref, error) {
	return &shadow.Ref{Namespace: pod.Namespace + "-shadow", Name: "s", PodUID: string(pod.UID), Service: true, Forward: true}, nil
}

func (f *fakeShadows) SetNode(_ context.Context, pod *corev1.Pod, node, _, socketDir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes = append(f.nodes, node)
	f.nodeOf = append(f.nodeOf, pod.DeepCopy())
	f.dirs = append(f.dirs, socketDir)
	return nil
}

func (f *fakeShadows) PodIP(context.Context, *corev1.Pod) (string, error) { return "10.96.0.42", nil }

func (f *fakeShadows) ShadowPod(context.Context, *corev1.Pod) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pod.DeepCopy(), nil
}

func (f *fakeShadows) Delete(_ context.Context, pod *corev1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted++
	f.deletedOf = append(f.deletedOf, pod.DeepCopy())
	return nil
}

func (f *fakeShadows) CleanOrphans(context.Context, func(string) bool) (int, error) { return 0, nil }

func (f *fakeShadows) ShadowPods(context.Context) (map[shadow.PodKey]*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pod == nil {
		return nil, nil
	}
	return map[shadow.PodKey]*corev1.Pod{{Namespace: f.pod.Namespace, PodUID: f.pod.Labels[shadow.LabelPodUID]}: f.pod.DeepCopy()}, nil
}

func (f *fakeShadows) TunnelStatus(_ context.Context, sp *corev1.Pod) ([]tunnel.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sp == nil {
		return nil, nil
	}
	return slices.Clone(f.tunnels), nil
}

func (f *fakeShadows) setTunnels(snaps ...tunnel.Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tunnels = snaps
}

func (f *fakeShadows) setInit(state corev1.ContainerState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pod = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns-shadow", Name: "s-abc"},
		Spec:       corev1.PodSpec{InitContainers: []corev1.Container{{Name: "setup"}}},
		Status:     corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{{Name: "setup", State: state}}},
	}
}

func TestShadowKeptInitContainerRunsFirst(t *testing.T) {
	pod := testPod("kept")
	pod.Annotations = map[string]string{annotations.DisableOffloadInitContainers: "setup"}
	pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "/images/busybox", Command: []string{"true"}}}
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	shadows := &fakeShadows{}
	shadows.setInit(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})
	h := newHarness(t, func(c *Config) { c.Shadows = shadows }, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("Normal ShadowCreated")
	h.waitEvent("Warning SubmitWaiting the kept init containers run in the shadow first")
	if submits, _, _, _ := h.jobs.counts(); submits != 0 {
		t.Fatalf("got %d submissions while the kept init container runs; want none", submits)
	}

	shadows.setInit(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}})
	h.waitEvent("submitted as Slurm job")
	h.jobs.mu.Lock()
	job := h.jobs.lastJob
	h.jobs.mu.Unlock()
	if len(job.Init) != 0 || len(job.Containers) != 1 || job.Containers[0].Name != "main" {
		t.Errorf("got job init %v containers %v; want no init container and main", job.Init, job.Containers)
	}
	got := h.waitPhase(pod, corev1.PodPending)
	if got.Status.PodIP != "10.96.0.42" {
		t.Errorf("got pod IP %q; want the shadow's 10.96.0.42", got.Status.PodIP)
	}

	h.jobs.setState(string(pod.UID), slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	got = h.waitPhase(pod, corev1.PodRunning)
	if len(got.Status.InitContainerStatuses) != 1 || got.Status.InitContainerStatuses[0].State.Terminated == nil {
		t.Errorf("got init statuses %+v; want setup terminated, from the shadow", got.Status.InitContainerStatuses)
	}
	h.waitFor("the shadow told of node1", func() bool {
		shadows.mu.Lock()
		defer shadows.mu.Unlock()
		return len(shadows.nodes) == 1 && shadows.nodes[0] == "node1"
	})

	rc, err := h.p.GetContainerLogs(context.Background(), pod.Namespace, pod.Name, "setup", api.ContainerLogOpts{})
	if err != nil {
		t.Fatalf("logs of the kept init container: %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "fake logs" { // what the fake clientset answers for the shadow pod
		t.Errorf("got logs %q; want the shadow pod's", b)
	}
}

func TestShadowKeptContainerStatus(t *testing.T) {
	pod := testPod("sidecar")
	pod.Annotations = map[string]string{annotations.DisableOffloadContainers: "proxy"}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "proxy", Image: "/images/busybox", Command: []string{"sleep", "600"}})
	shadows := &fakeShadows{}
	h := newHarness(t, func(c *Config) { c.Shadows = shadows }, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job")
	h.jobs.mu.Lock()
	job := h.jobs.lastJob
	h.jobs.mu.Unlock()
	if len(job.Containers) != 1 || job.Containers[0].Name != "main" {
		t.Fatalf("job containers %v; want main only", job.Containers)
	}
	h.jobs.setState(string(pod.UID), slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	proxyState := func() *corev1.ContainerStatus {
		got := h.last(pod)
		if got == nil {
			return nil
		}
		for _, cs := range got.Status.ContainerStatuses {
			if cs.Name == "proxy" {
				return &cs
			}
		}
		return nil
	}
	h.waitFor("proxy waiting for the shadow", func() bool {
		cs := proxyState()
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "ShadowPodPending"
	})

	started := metav1.Now()
	shadows.mu.Lock()
	shadows.pod = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns-shadow", Name: "s-abc", Labels: map[string]string{shadow.LabelPodUID: string(pod.UID)}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "proxy", Ready: true, RestartCount: 2, ContainerID: "containerd://0a1b2c",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		}}},
	}
	shadows.mu.Unlock()
	h.waitFor("proxy running as in the shadow", func() bool {
		cs := proxyState()
		return cs != nil && cs.State.Running != nil && cs.RestartCount == 2 && cs.ContainerID == "containerd://0a1b2c"
	})
	got := h.waitPhase(pod, corev1.PodRunning)
	for _, c := range got.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
			t.Errorf("Ready %s with main and proxy running; want True", c.Status)
		}
	}
}

func TestShadowSocksProxyWarns(t *testing.T) {
	pod := testPod("socks")
	pod.Annotations = map[string]string{annotations.ReverseForwards: "redis:6379", annotations.ReverseSocksPort: "1080"}
	shadows := &fakeShadows{}
	logs := &syncBuffer{}
	h := newHarness(t, func(c *Config) {
		c.Shadows = shadows
		c.Reverse = annotations.SiteRules{ReverseEnabled: true, ShadowModeSSH: true, TunnelEnabled: true, AllowSocks: true}
		c.SocketDirRoot = "/tmp/sluice-sock"
		c.Relay = func(context.Context) (string, error) {
			return "/home/alice/.sluice/.bin/sluice-relay-0123456789abcdef", nil
		}
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("Warning ReverseSocksProxy SOCKS5 proxy on 127.0.0.1:1080 of the job's node: every user of that node can reach the cluster through it")
	h.waitEvent("submitted as Slurm job")
	want := `level=WARN msg="provider: pod asks for a SOCKS5 proxy open to every user of its node" pod=ns/socks port=1080`
	if got := logs.String(); !strings.Contains(got, want) {
		t.Errorf("sluice-vk's log lacks %s:\n%s", want, got)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestShadowSocksOnlyJob(t *testing.T) {
	pod := testPod("socksonly")
	pod.Annotations = map[string]string{annotations.ReverseSocksPort: "1080"}
	var placed atomic.Bool
	h := newHarness(t, func(c *Config) {
		c.Shadows = &fakeShadows{}
		c.Reverse = annotations.SiteRules{ReverseEnabled: true, ShadowModeSSH: true, TunnelEnabled: true, AllowSocks: true}
		c.SocketDirRoot = "/tmp/sluice-sock"
		c.Relay = func(context.Context) (string, error) { placed.Store(true); return "/x/sluice-relay", nil }
	}, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job")
	h.jobs.mu.Lock()
	job := h.jobs.lastJob
	h.jobs.mu.Unlock()
	if job.Reverse == nil || job.Reverse.SocksPort != 1080 || job.Reverse.RelayPath != "" || len(job.Reverse.Ports) != 0 {
		t.Errorf("job reverse %+v; want the SOCKS port alone, no relay", job.Reverse)
	}
	if placed.Load() {
		t.Error("the relay was placed for a pod with no forwards")
	}
}

// TestShadowLearnsSaltedSocketDir: the shadow of a pod with a reverse tunnel
// is told the socket directory that the job's salt names, with the node,
// and the same one after a restart of sluice-vk (the job adopted): never
// <SocketDirRoot>/<pod uid>, which any user of the site can work out.
func TestShadowLearnsSaltedSocketDir(t *testing.T) {
	pod := testPod("salted")
	pod.Annotations = map[string]string{annotations.ReverseForwards: "redis:6379"}
	shadows := &fakeShadows{}
	config := func(c *Config) {
		c.Shadows = shadows
		c.Reverse = annotations.SiteRules{ReverseEnabled: true, ShadowModeSSH: true, TunnelEnabled: true}
		c.Relay = func(context.Context) (string, error) { return "/data/.bin/sluice-relay-0123", nil }
		c.SocketDirRoot = "/tmp/sluice"
	}
	h := newHarness(t, config, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job")
	h.jobs.mu.Lock()
	want := sitepath.SocketDir("/tmp/sluice", string(pod.UID), h.jobs.salts[string(pod.UID)])
	id := h.jobs.jobs[string(pod.UID)]
	h.jobs.mu.Unlock()
	if want == path.Join("/tmp/sluice", string(pod.UID)) {
		t.Fatalf("the fake drew no salt")
	}
	h.jobs.setState(string(pod.UID), slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	h.waitFor("the shadow told of node1 and the socket directory", func() bool {
		shadows.mu.Lock()
		defer shadows.mu.Unlock()
		return len(shadows.dirs) == 1 && shadows.dirs[0] == want
	})
	// kubectl port-forward goes through the relay's forward entry there.
	job, err := h.p.RunningJob(pod.Namespace, pod.Name)
	if wantEntry := path.Join(want, relay.ForwardSocket); err != nil || job.ForwardEntry != wantEntry {
		t.Errorf("RunningJob: forward entry %q, %v; want %q", job.ForwardEntry, err, wantEntry)
	}

	// sluice-vk restarts: the job is adopted, with the salt it had.
	again := newHarness(t, func(c *Config) { config(c); c.Jobs = h.jobs }, h.last(pod))
	if err := again.p.CreatePod(context.Background(), h.last(pod)); err != nil {
		t.Fatalf("CreatePod after the restart: %v", err)
	}
	again.waitEvent("Slurm job " + string(id))
	again.waitFor("the shadow told the same socket directory", func() bool {
		shadows.mu.Lock()
		defer shadows.mu.Unlock()
		return len(shadows.dirs) == 2 && shadows.dirs[1] == want
	})
}

// TestForwardOnlyJobRunsRelay: a pod that exposes a port and asks for no
// reverse tunnel gets a relay for its forward entry (shadow.RunsRelay),
// and its probe on the node's loopback the relay binary that checks it,
// where the site has a socket directory root; without one, neither.
func TestForwardOnlyJobRunsRelay(t *testing.T) {
	for _, tc := range []struct {
		name, root string
		relayed    bool
	}{
		{"socket root", "/tmp/sluice", true},
		{"no socket root", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("fwd")
			pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
			pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}}
			h := newHarness(t, func(c *Config) {
				c.Shadows = &fakeShadows{}
				c.Site.Probes = true
				c.Relay = func(context.Context) (string, error) { return "/data/.bin/sluice-relay-0123", nil }
				c.SocketDirRoot = tc.root
			}, pod)
			if err := h.p.CreatePod(context.Background(), pod); err != nil {
				t.Fatalf("CreatePod: %v", err)
			}
			h.waitEvent("Normal Submitted submitted as Slurm job")
			h.jobs.mu.Lock()
			job := h.jobs.lastJob
			h.jobs.mu.Unlock()
			if job.Relay != "/data/.bin/sluice-relay-0123" {
				t.Errorf("got the probes' relay %q; want the placed relay", job.Relay)
			}
			rev := job.Reverse
			if !tc.relayed {
				if rev != nil {
					t.Errorf("got job tunnels %+v; want none without a socket root", rev)
				}
				return
			}
			if rev == nil || !rev.Forward || !rev.RunsRelay() || rev.RelayPath != "/data/.bin/sluice-relay-0123" || len(rev.Ports) != 0 {
				t.Fatalf("got job tunnels %+v; want the relay for the forward entry alone", rev)
			}
			_, _, _, entry := jobSide(job)
			if want := path.Join(rev.SocketDir(job.UID), relay.ForwardSocket); entry != want {
				t.Errorf("got forward entry %q; want %q", entry, want)
			}
		})
	}
}
