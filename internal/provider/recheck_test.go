package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// reverseSite is a node whose reverse tunnel is on, without SOCKS.
func reverseSite(c *Config) {
	c.Reverse = annotations.SiteRules{ReverseEnabled: true, ShadowModeSSH: true, TunnelEnabled: true}
	c.SocketDirRoot = "/tmp/sluice-sock"
	c.Relay = func(context.Context) (string, error) { return "/x/sluice-relay", nil }
}

// waitingForConfigMap is testPod with an env var from ConfigMap "later",
// which does not exist yet: its submission waits.
func waitingForConfigMap(name string) *corev1.Pod {
	pod := testPod(name)
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "later"}, Key: "k"},
	}}}
	return pod
}

// waitForConfigMap waits until the submission of pod, made by
// waitingForConfigMap, waits for its ConfigMap.
func (h *harness) waitForConfigMap(pod *corev1.Pod) {
	h.t.Helper()
	h.waitFor("the submission to wait for the ConfigMap", func() bool {
		got := h.last(pod)
		if got == nil || len(got.Status.ContainerStatuses) == 0 {
			return false
		}
		w := got.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == reasonConfigError
	})
}

// createLater creates the ConfigMap that waitingForConfigMap's pods wait for.
func (h *harness) createLater() {
	h.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: "ns"}, Data: map[string]string{"k": "v"}}
	if _, err := h.client.CoreV1().ConfigMaps("ns").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		h.t.Fatalf("create configmap: %v", err)
	}
}

// annotate sends the provider pod with its annotations replaced, as the
// pod controller does when someone patches them.
func (h *harness) annotate(pod *corev1.Pod, a map[string]string) *corev1.Pod {
	h.t.Helper()
	changed := pod.DeepCopy()
	changed.Annotations = a
	if err := h.p.UpdatePod(context.Background(), changed); err != nil {
		h.t.Fatalf("UpdatePod: %v", err)
	}
	return changed
}

// start runs pod on a node with shadows, set up by site.
func start(t *testing.T, pod *corev1.Pod, shadows *fakeShadows, site func(*Config)) *harness {
	t.Helper()
	h := newHarness(t, func(c *Config) {
		c.Shadows = shadows
		site(c)
	}, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	return h
}

// waitRefusedOrSubmitted waits until the pod was refused or a job
// submitted, whichever comes first.
func (h *harness) waitRefusedOrSubmitted(pod *corev1.Pod) {
	h.t.Helper()
	h.waitFor("the pod refused or submitted", func() bool {
		submits, _, _, _ := h.jobs.counts()
		got := h.last(pod)
		return submits > 0 || got != nil && got.Status.Phase == corev1.PodFailed
	})
}

// deleteAndForget deletes the pod and waits until the provider forgot it:
// its deletion ran to its end.
func (h *harness) deleteAndForget(pod *corev1.Pod) {
	h.t.Helper()
	h.markDeleted(pod)
	if err := h.p.DeletePod(context.Background(), pod); err != nil {
		h.t.Fatalf("DeletePod: %v", err)
	}
	h.waitFor("the pod to be forgotten", func() bool {
		_, err := h.p.GetPod(context.Background(), pod.Namespace, pod.Name)
		return err != nil
	})
}

// TestChangedAnnotationsCheckedBeforeSubmission: the site's rules hold for
// the annotations a submission uses, not only for those the pod had when
// it was bound: a pod whose annotations break one while it waits is refused
// as at creation, and never submitted.
func TestChangedAnnotationsCheckedBeforeSubmission(t *testing.T) {
	tests := []struct {
		name        string
		site        func(*Config)
		before      map[string]string
		after       map[string]string
		reason      string
		annotation  string
		ruleContain string
	}{
		{
			name: "socks without AllowSocks", site: reverseSite,
			after:  map[string]string{annotations.ReverseSocksPort: "1080"},
			reason: string(annotations.ReasonSocksNotAllowed), annotation: annotations.ReverseSocksPort,
			ruleContain: "Network.SSH.Reverse.AllowSocks",
		},
		{
			name: "pod-vpn beside a reverse tunnel", site: reverseSite,
			before: map[string]string{annotations.ReverseForwards: "redis:6379"},
			after:  map[string]string{annotations.ReverseForwards: "redis:6379", annotations.PodVPN: "true"},
			reason: string(annotations.ReasonPodVPN), annotation: annotations.PodVPN,
			ruleContain: "disables the shadow",
		},
		{
			name: "reverse tunnel where it is off", site: func(*Config) {},
			after:  map[string]string{annotations.ReverseForwards: "redis:6379"},
			reason: string(annotations.ReasonNotEnabled), annotation: annotations.ReverseForwards,
			ruleContain: "Network.SSH.Reverse.Enabled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := waitingForConfigMap("late")
			pod.Annotations = tt.before
			h := start(t, pod, &fakeShadows{}, tt.site)
			h.waitForConfigMap(pod)
			h.annotate(pod, tt.after)
			h.createLater()
			h.waitRefusedOrSubmitted(pod)
			if submits, _, _, _ := h.jobs.counts(); submits != 0 {
				// The attempt in flight when the patch came (checked and
				// prepared with the annotations from before) may finish
				// first: it submits what it checked, and the patch is told
				// as ignored. Nothing unchecked may reach the job.
				h.jobs.mu.Lock()
				rev := h.jobs.lastJob.Reverse
				h.jobs.mu.Unlock()
				var want []uint16
				if r, err := annotations.Parse(tt.before, "ns"); err == nil && r != nil {
					for _, f := range r.Forwards {
						want = append(want, uint16(f.ListenPort))
					}
				}
				if got := reversePorts(rev); rev != nil && rev.SocksPort != 0 || !slices.Equal(got, want) {
					t.Fatalf("submitted with reverse %+v after %s was set; want the pod refused (%s), or the annotations from before it (ports %v, no SOCKS)", rev, tt.annotation, tt.reason, want)
				}
				h.waitEvent("Warning AnnotationChangeIgnored")
				t.Logf("the attempt in flight submitted the annotations it had checked; %s was told as ignored", tt.annotation)
				return
			}
			got := h.last(pod)
			field := "metadata.annotations[" + tt.annotation + "]"
			if got.Status.Reason != tt.reason || !strings.Contains(got.Status.Message, field) || !strings.Contains(got.Status.Message, tt.ruleContain) {
				t.Errorf("got reason %q message %q; want %s naming %s and %q", got.Status.Reason, got.Status.Message, tt.reason, field, tt.ruleContain)
			}
			h.waitEvent("Warning " + tt.reason + " refused: " + field)
		})
	}
}

// TestChangedAnnotationsCheckedAtOnce: a change to a waiting pod's
// annotations is checked when it comes, not at the next attempt of the
// submission's backoff.
func TestChangedAnnotationsCheckedAtOnce(t *testing.T) {
	pod := waitingForConfigMap("soon")
	h := start(t, pod, &fakeShadows{}, func(c *Config) {
		reverseSite(c)
		c.Backoff = time.Hour // only a wake-up makes a second attempt
	})
	h.waitEvent("Warning SubmitWaiting")
	h.annotate(pod, map[string]string{annotations.ReverseSocksPort: "1080"})
	h.waitEvent("Warning " + string(annotations.ReasonSocksNotAllowed))
}

// TestAnnotationsFrozenOnceSubmitted: the job cannot change once
// submitted, and neither may what sluice makes of the annotations it was
// checked and submitted with: the shadow's place and node, its deletion.
// A later change to them is told in one Warning Event and not applied;
// other annotations are.
func TestAnnotationsFrozenOnceSubmitted(t *testing.T) {
	pod := testPod("frozen")
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	pod.Annotations = map[string]string{annotations.ReverseForwards: "redis:6379", "team": "a"}
	shadows := &fakeShadows{}
	h := start(t, pod, shadows, reverseSite)
	h.waitEvent("submitted as Slurm job 101")
	running := func(node string) {
		h.jobs.setState(string(pod.UID), slurm.Status{State: slurm.StateRunning, BatchHost: node,
			Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	}
	running("node1")
	h.waitPhase(pod, corev1.PodRunning)

	changed := map[string]string{
		annotations.ReverseForwards: "db:5432",
		annotations.PodVPN:          "true",
		annotations.ShadowSameNS:    "true",
		"team":                      "b",
	}
	for range 3 { // the pod controller sends it again while it differs
		h.annotate(pod, changed)
	}
	h.waitEvent("Warning AnnotationChangeIgnored " + annotations.PodVPN + ", " + annotations.ReverseForwards + ", " + annotations.ShadowSameNS + " changed after the pod was submitted as Slurm job 101")
	got, err := h.p.GetPod(context.Background(), "ns", "frozen")
	if err != nil {
		t.Fatalf("GetPod: %v", err)
	}
	want := map[string]string{annotations.ReverseForwards: "redis:6379", "team": "b"}
	if !maps.Equal(got.Annotations, want) {
		t.Errorf("got annotations %v; want %v: those under interLink's prefixes as submitted, the others as changed", got.Annotations, want)
	}

	running("node2") // requeued elsewhere: the shadow follows
	h.waitShadowNodes(shadows, 2)
	h.deleteAndForget(pod)
	shadows.mu.Lock()
	defer shadows.mu.Unlock()
	for _, sp := range append(shadows.nodeOf[1:], shadows.deletedOf...) {
		if sp.Annotations[annotations.ReverseForwards] != "redis:6379" || sp.Annotations[annotations.PodVPN] != "" || sp.Annotations[annotations.ShadowSameNS] != "" {
			t.Errorf("the shadow was told of the pod with annotations %v; want those it was made with", sp.Annotations)
		}
	}
	if len(shadows.deletedOf) != 1 {
		t.Errorf("got %d shadow deletions; want 1: a pod-vpn added after submission does not keep the shadow", len(shadows.deletedOf))
	}
	h.drainEvents()
	n := 0
	for _, e := range h.events {
		if strings.Contains(e, "AnnotationChangeIgnored") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("got %d AnnotationChangeIgnored Events; want 1 for one change sent 3 times", n)
	}
}

// waitShadowNodes waits until the shadow was told of n nodes.
func (h *harness) waitShadowNodes(shadows *fakeShadows, n int) {
	h.t.Helper()
	h.waitFor(fmt.Sprintf("the shadow told of %d nodes", n), func() bool {
		shadows.mu.Lock()
		defer shadows.mu.Unlock()
		return len(shadows.nodes) == n
	})
}

// TestShadowGoesWhereTheAnnotationsMoveIt: a shadow made for a waiting pod
// (its kept init container runs) is deleted, where it was made, when the
// pod's annotations no longer want it there; a pod refused meanwhile has
// the shadow it had deleted with it.
func TestShadowGoesWhereTheAnnotationsMoveIt(t *testing.T) {
	// keptInitWaiting starts a pod whose kept init container runs in its
	// shadow for ever: its shadow is made, its submission waits. Then it
	// asks for no shadow.
	keptInitWaiting := func(t *testing.T, name string, a map[string]string, site func(*Config)) (*harness, *fakeShadows, *corev1.Pod) {
		pod := testPod(name)
		pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
		pod.Annotations = a
		pod.Annotations[annotations.DisableOffloadInitContainers] = "setup"
		pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "/images/busybox", Command: []string{"true"}}}
		shadows := &fakeShadows{}
		shadows.setInit(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})
		h := start(t, pod, shadows, site)
		h.waitEvent("Warning SubmitWaiting the kept init containers run in the shadow first")
		vpn := maps.Clone(pod.Annotations)
		vpn[annotations.PodVPN] = "true"
		h.annotate(pod, vpn)
		return h, shadows, pod
	}
	// deletedAsMade fails unless the shadow was deleted once, through the
	// pod as it was when the shadow was made.
	deletedAsMade := func(t *testing.T, shadows *fakeShadows) {
		shadows.mu.Lock()
		defer shadows.mu.Unlock()
		if len(shadows.deletedOf) != 1 || shadows.deletedOf[0].Annotations[annotations.PodVPN] != "" {
			t.Errorf("got shadow deletions of %d pods; want 1, of the pod as the shadow was made", len(shadows.deletedOf))
		}
	}
	t.Run("pod-vpn added", func(t *testing.T) {
		h, shadows, _ := keptInitWaiting(t, "moved", map[string]string{}, func(*Config) {})
		h.waitEvent("submitted as Slurm job")
		deletedAsMade(t, shadows) // before the submission
	})
	t.Run("refused", func(t *testing.T) {
		h, shadows, pod := keptInitWaiting(t, "refused", map[string]string{annotations.ReverseForwards: "redis:6379"}, reverseSite)
		h.waitRefusedOrSubmitted(pod)
		if got := h.last(pod); got.Status.Reason != string(annotations.ReasonPodVPN) {
			t.Fatalf("got phase %s reason %q; want refused %s", got.Status.Phase, got.Status.Reason, annotations.ReasonPodVPN)
		}
		h.deleteAndForget(pod)
		deletedAsMade(t, shadows)
	})
}

// TestApplyMetaTellsEachChangeOnce: a submitted pod's annotations under
// interLink's prefixes stay as submitted whatever the updates say; each
// change is told once, a change undone is told again if it comes back, and
// the other annotations follow the updates.
func TestApplyMetaTellsEachChangeOnce(t *testing.T) {
	st := &podState{pod: testPod("meta")}
	st.pod.Annotations = map[string]string{annotations.Flags: "-p a", "note": "1"}
	if changed := st.freeze(st.pod); changed != nil {
		t.Fatalf("got %v changed at submission; want none", changed)
	}
	steps := []struct {
		set  map[string]string
		want []string
	}{
		{map[string]string{annotations.Flags: "-p b", "note": "2"}, []string{annotations.Flags}},
		{map[string]string{annotations.Flags: "-p b", "note": "3"}, nil}, // told already
		{map[string]string{annotations.Flags: "-p a"}, nil},              // undone
		{map[string]string{annotations.Flags: "-p b"}, []string{annotations.Flags}},
		{map[string]string{annotations.PreExec: "x"}, []string{annotations.Flags, annotations.PreExec}},
		{nil, []string{annotations.Flags}},
	}
	for i, s := range steps {
		meta := st.pod.ObjectMeta
		meta.Annotations = s.set
		changed, recheck := st.applyMeta(meta)
		if !slices.Equal(changed, s.want) || recheck {
			t.Errorf("step %d: got changed %v recheck %t; want %v, false", i, changed, recheck, s.want)
		}
		if got := st.pod.Annotations[annotations.Flags]; got != "-p a" || st.pod.Annotations[annotations.PreExec] != "" {
			t.Errorf("step %d: got annotations %v; want %s as submitted, no %s", i, st.pod.Annotations, annotations.Flags, annotations.PreExec)
		}
		if st.pod.Annotations["note"] != s.set["note"] {
			t.Errorf("step %d: got note %q; want %q, as updated", i, st.pod.Annotations["note"], s.set["note"])
		}
	}
}

// reversePorts are the relay's ports of rev, none when rev is nil.
func reversePorts(rev *jobscript.ReverseJob) []uint16 {
	if rev == nil {
		return nil
	}
	return rev.Ports
}
