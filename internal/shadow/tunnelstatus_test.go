package shadow

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// statusServer answers /status for every pod IP and port; the URLs asked
// are recorded.
type statusServer struct {
	mu    sync.Mutex
	asked []string
	snaps map[string]tunnel.Snapshot // by host:port
	srv   *httptest.Server
}

func newStatusServer(t *testing.T) *statusServer {
	s := &statusServer{snaps: map[string]tunnel.Snapshot{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.asked = append(s.asked, r.Host+r.URL.Path)
		snap, ok := s.snaps[r.Host]
		if !ok || r.URL.Path != "/status" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(snap)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// client sends every request to the test server, keeping its Host.
func (s *statusServer) client() *http.Client {
	target, _ := url.Parse(s.srv.URL)
	return &http.Client{Transport: rewrite{target: target.Host}}
}

type rewrite struct{ target string }

func (r rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Host = r.target
	return http.DefaultTransport.RoundTrip(req)
}

// runningShadowPod is the pod the Deployment of pod's shadow would run, at
// ip with every container running.
func runningShadowPod(t *testing.T, s Spec, pod *corev1.Pod, ip string) *corev1.Pod {
	t.Helper()
	o, err := s.Build(pod)
	if err != nil || o == nil {
		t.Fatalf("Build: %v, %v", o, err)
	}
	tmpl := o.Deployment.Spec.Template
	sp := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	sp.Namespace, sp.Name = o.Namespace, o.Name+"-abc"
	sp.Status.PodIP = ip
	sp.Status.Phase = corev1.PodRunning
	for _, c := range sp.Spec.Containers {
		sp.Status.ContainerStatuses = append(sp.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		})
	}
	return sp
}

func TestTunnelStatus(t *testing.T) {
	s := testSpec()
	pod := testPod("ns", "web", withPorts("8080"), withAnnotation(annotations.ReverseForwards, "redis:6379"))
	sp := runningShadowPod(t, s, pod, "10.1.2.3")
	srv := newStatusServer(t)
	srv.snaps["10.1.2.3:9464"] = tunnel.Snapshot{Mode: "forward", State: tunnel.StateUp, Node: "node1", Ups: 1}
	srv.snaps["10.1.2.3:9465"] = tunnel.Snapshot{Mode: "reverse", State: tunnel.StateDown, Node: "node1", Error: "EOF"}
	m, _ := newManager(t, fake.NewClientset(), s)
	m.HTTP = srv.client()

	got, err := m.TunnelStatus(t.Context(), sp)
	if err != nil {
		t.Fatalf("TunnelStatus: %v", err)
	}
	if len(got) != 2 || got[0].Mode != "forward" || got[0].State != tunnel.StateUp || got[1].Mode != "reverse" || got[1].Error != "EOF" {
		t.Errorf("TunnelStatus = %+v; want forward up, reverse down", got)
	}
	if want := []string{"10.1.2.3:9464/status", "10.1.2.3:9465/status"}; !slices.Equal(srv.asked, want) {
		t.Errorf("asked %q; want %q", srv.asked, want)
	}

	// A container that is not running is left out; no IP, nothing asked.
	sp.Status.ContainerStatuses[1].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	if got, err := m.TunnelStatus(t.Context(), sp); err != nil || len(got) != 1 || got[0].Mode != "forward" {
		t.Errorf("with reverse not running: %+v, %v; want forward only", got, err)
	}
	sp.Status.PodIP = ""
	if got, err := m.TunnelStatus(t.Context(), sp); err != nil || got != nil {
		t.Errorf("with no pod IP: %+v, %v; want nothing", got, err)
	}
	if got, err := m.TunnelStatus(t.Context(), nil); err != nil || got != nil {
		t.Errorf("with no pod: %+v, %v; want nothing", got, err)
	}

	// A tunnel that does not answer is an error naming the container.
	sp.Status.PodIP = "10.9.9.9"
	if _, err := m.TunnelStatus(t.Context(), sp); err == nil || !strings.Contains(err.Error(), "container ssh-forward") {
		t.Errorf("unanswered: %v; want an error naming ssh-forward", err)
	}
}

func TestShadowPods(t *testing.T) {
	s := testSpec()
	a := testPod("ns", "a", withPorts("8080"))
	b := testPod("ns", "b", withPorts("8080"), withUID("7d0a1c2e-0000-4000-8000-000000000002"))
	spA := runningShadowPod(t, s, a, "10.1.0.1")
	spB := runningShadowPod(t, s, b, "10.1.0.2")
	old := spB.DeepCopy()
	old.Name += "-old"
	old.Status.Phase = corev1.PodPending
	otherNode := s
	otherNode.NodeName = "other"
	other := runningShadowPod(t, otherNode, testPod("ns", "c", withPorts("80"), withUID("7d0a1c2e-0000-4000-8000-000000000003")), "10.1.0.3")
	m, _ := newManager(t, fake.NewClientset(spA, spB, old, other), s)

	got, err := m.ShadowPods(t.Context())
	if err != nil {
		t.Fatalf("ShadowPods: %v", err)
	}
	if len(got) != 2 || got[PodKey{"ns-shadow", string(a.UID)}].Name != spA.Name || got[PodKey{"ns-shadow", string(b.UID)}].Name != spB.Name {
		names := map[PodKey]string{}
		for key, p := range got {
			names[key] = p.Name
		}
		t.Errorf("ShadowPods = %v; want a's and b's running pods, not another node's", names)
	}
}

func TestStatusPort(t *testing.T) {
	for _, tt := range []struct {
		args []string
		port int
		ok   bool
	}{
		{[]string{"forward", "--metrics=$(POD_IP):9466"}, 9466, true},
		{[]string{"forward"}, 0, false},
		{[]string{"--metrics=$(POD_IP):x"}, 0, false},
		{[]string{"--metrics=9464"}, 0, false},
		{[]string{"--metrics=$(POD_IP):70000"}, 70000, false},
	} {
		port, ok := statusPort(corev1.Container{Args: tt.args})
		if ok != tt.ok || (ok && port != tt.port) {
			t.Errorf("statusPort(%q) = %d, %t; want %d, %t", tt.args, port, ok, tt.port, tt.ok)
		}
	}
}

// TestShadowPodsIgnoresLookalikes: a pod that a user made in a namespace of
// their own with a shadow's labels (the node's, and the UID of someone
// else's pod, which squeue and Events show) is not that pod's shadow, even
// running and newer: its IP would become the pod's, its status would be
// written and its /status read as the tunnels'.
func TestShadowPodsIgnoresLookalikes(t *testing.T) {
	s := testSpec()
	victim := testPod("ns", "web", withPorts("8080"))
	real := runningShadowPod(t, s, victim, "10.1.0.1")
	lookalike := real.DeepCopy()
	lookalike.Namespace, lookalike.Name = "evil", "lookalike"
	lookalike.Status.PodIP = "10.6.6.6"
	lookalike.CreationTimestamp.Time = real.CreationTimestamp.Add(1 << 40)
	m, _ := newManager(t, fake.NewClientset(real, lookalike), s)

	got, err := m.ShadowPods(t.Context())
	if err != nil {
		t.Fatalf("ShadowPods: %v", err)
	}
	if sp := got[PodKey{"ns-shadow", string(victim.UID)}]; sp == nil || sp.Name != real.Name || sp.Status.PodIP != "10.1.0.1" {
		t.Errorf("shadow pod of ns/web in ns-shadow: %v; want %s (10.1.0.1)", sp, real.Name)
	}
}
