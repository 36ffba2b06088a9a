package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodRunsToSucceeded(t *testing.T) {
	pod := testPod("ok")
	h := newHarness(t, nil, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
	got := h.waitPhase(pod, corev1.PodPending)
	if got.Status.HostIP != "10.0.0.9" || got.Status.PodIP != "10.0.0.9" || got.Status.StartTime == nil {
		t.Errorf("got hostIP %q podIP %q startTime %v; want 10.0.0.9, 10.0.0.9 and a start time", got.Status.HostIP, got.Status.PodIP, got.Status.StartTime)
	}
	cur, err := h.client.CoreV1().Pods("ns").Get(context.Background(), "ok", metav1.GetOptions{})
	if err != nil || !hasFinalizer(cur) {
		t.Errorf("got finalizers %v (%v); want %s set before submission", cur.Finalizers, err, Finalizer)
	}

	h.jobs.setState("uid-ok", slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	got = h.waitPhase(pod, corev1.PodRunning)
	h.waitEvent("Slurm job 101 running on node node1")
	if cs := got.Status.ContainerStatuses[0]; cs.State.Running == nil || !cs.Ready {
		t.Errorf("got container state %+v ready %v; want running and ready", cs.State, cs.Ready)
	}
	if !hasFinalizer(got) {
		t.Errorf("got pushed finalizers %v; want %s kept (the status update writes them)", got.Finalizers, Finalizer)
	}

	h.jobs.setState("uid-ok", slurm.Status{State: slurm.StateCompleted, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true, Finished: true}}})
	got = h.waitPhase(pod, corev1.PodSucceeded)
	h.waitEvent("Slurm job 101 completed on node node1")
	if term := got.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Errorf("got terminated %+v; want exit 0, Completed", term)
	}

	// a final job is not polled any more
	_, before, _, _ := h.jobs.counts()
	h.waitFor("more poll rounds", func() bool {
		h.p.mu.Lock()
		defer h.p.mu.Unlock()
		return h.p.pods["ns/ok"].final
	})
	_, after, _, _ := h.jobs.counts()
	if after > before+1 {
		t.Errorf("got %d more Status calls after the job ended; want at most 1", after-before)
	}
	if submits, _, _, _ := h.jobs.counts(); submits != 1 {
		t.Errorf("got %d submissions; want 1", submits)
	}
}

func TestOneStatusCallPerPoll(t *testing.T) {
	pods := []*corev1.Pod{testPod("a"), testPod("b"), testPod("c")}
	h := newHarness(t, nil, pods...)
	for _, pod := range pods {
		if err := h.p.CreatePod(context.Background(), pod); err != nil {
			t.Fatalf("CreatePod: %v", err)
		}
	}
	h.waitFor("a poll of all three jobs", func() bool {
		h.jobs.mu.Lock()
		defer h.jobs.mu.Unlock()
		for _, refs := range h.jobs.statusCalls {
			if len(refs) == 3 {
				return true
			}
		}
		return false
	})
	h.jobs.mu.Lock()
	defer h.jobs.mu.Unlock()
	for i, refs := range h.jobs.statusCalls {
		if len(refs) > 3 {
			t.Errorf("Status call %d got %d refs; want at most 3", i, len(refs))
		}
	}
}

func TestFailedContainerExitCode(t *testing.T) {
	pod := testPod("bad")
	h := newHarness(t, nil, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job")
	h.jobs.setState("uid-bad", slurm.Status{State: slurm.StateFailed, Exit: &slurm.ExitCode{Code: 3},
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true, Finished: true, ExitCode: 3}}})
	got := h.waitPhase(pod, corev1.PodFailed)
	h.waitEvent("Warning Failed Slurm job 101 ended FAILED (Failed), exit code 3:0")
	if term := got.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 3 || term.Reason != "Error" {
		t.Errorf("got terminated %+v; want exit 3, Error", term)
	}
}

func TestRefused(t *testing.T) {
	reverseOn := func(c *Config) {
		c.Reverse = annotations.SiteRules{ReverseEnabled: true, ShadowModeSSH: true, TunnelEnabled: true}
	}
	annotate := func(kv ...string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Annotations = map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				p.Annotations[kv[i]] = kv[i+1]
			}
		}
	}
	forwards := "metadata.annotations[" + annotations.ReverseForwards + "]"
	socks := "metadata.annotations[" + annotations.ReverseSocksPort + "]"
	tests := []struct {
		name   string
		edit   func(*corev1.Pod)
		cfg    func(*Config)
		reason string
		field  string
		rule   string
	}{
		{"renewal without a time limit", func(p *corev1.Pod) {
			annotate(annotations.RenewBefore, "30s")(p)
			p.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}, nil,
			string(annotations.ReasonRenewal), "metadata.annotations[" + annotations.RenewBefore + "]", "sets no time limit"},
		{"renewal as long as the limit", func(p *corev1.Pod) {
			annotate(annotations.RenewBefore, "2m")(p)
			p.Spec.ActiveDeadlineSeconds = func() *int64 { v := int64(120); return &v }()
			p.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}, nil, string(annotations.ReasonRenewal), "metadata.annotations[" + annotations.RenewBefore + "]", "not less than the job's time limit"},
		{"renewal of a pod that is not restarted", func(p *corev1.Pod) {
			annotate(annotations.RenewBefore, "30s", jobscript.AnnotationFlags, "-t 10")(p)
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
		}, nil, string(annotations.ReasonRenewal), "metadata.annotations[" + annotations.RenewBefore + "]", "restartPolicy Never"},
		{"bad flags annotation", annotate(jobscript.AnnotationFlags, "--wrap=x"), nil,
			ReasonRefused, "metadata.annotations[" + jobscript.AnnotationFlags + "]", ""},
		{"host path volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}, nil, ReasonRefused, "spec.volumes[0]", ""},
		{"foreign namespace", nil, func(c *Config) {
			c.TenantNamespace, c.RefuseForeignPods = "team-a", true
		}, ReasonRefused, "metadata.namespace", "Network.RefuseForeignPods"},
		{"reverse not enabled", annotate(annotations.ReverseForwards, "redis:6379"), nil,
			string(annotations.ReasonNotEnabled), forwards, "Reverse.Enabled"},
		{"reverse without ssh shadow", annotate(annotations.ReverseForwards, "redis:6379"), func(c *Config) {
			reverseOn(c)
			c.Reverse.ShadowModeSSH = false
		}, string(annotations.ReasonShadowMode), forwards, "ShadowMode"},
		{"reverse with the tunnel off", annotate(annotations.ReverseForwards, "redis:6379"), func(c *Config) {
			reverseOn(c)
			c.Reverse.TunnelEnabled = false
		}, string(annotations.ReasonTunnelDisabled), forwards, "EnableTunnel"},
		{"reverse with pod-vpn", annotate(annotations.ReverseForwards, "redis:6379", annotations.PodVPN, "true"), reverseOn,
			string(annotations.ReasonPodVPN), "metadata.annotations[" + annotations.PodVPN + "]", "disables the shadow"},
		{"socks not allowed", annotate(annotations.ReverseSocksPort, "1080"), reverseOn,
			string(annotations.ReasonSocksNotAllowed), socks, "AllowSocks"},
		{"malformed entry", annotate(annotations.ReverseForwards, "redis:notaport"), reverseOn,
			string(annotations.ReasonMalformed), forwards, "redis:notaport"},
		{"port repeats", annotate(annotations.ReverseForwards, "redis:6379, 6379:other:6380"), reverseOn,
			string(annotations.ReasonPortRepeats), forwards, "port 6379 repeats"},
		{"socks collides", annotate(annotations.ReverseForwards, "redis:6379", annotations.ReverseSocksPort, "6379"), func(c *Config) {
			reverseOn(c)
			c.Reverse.AllowSocks = true
		}, string(annotations.ReasonSocksCollides), socks, "also a listen port"},
		{"bind is 127.0.0.1 after parsing", annotate(annotations.ReverseForwards, "redis:6379", annotations.ReverseBind, "::ffff:127.0.0.1"), reverseOn,
			string(annotations.ReasonBadBind), "metadata.annotations[" + annotations.ReverseBind + "]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("refused")
			if tt.edit != nil {
				tt.edit(pod)
			}
			h := newHarness(t, tt.cfg, pod)
			if err := h.p.CreatePod(context.Background(), pod); err != nil {
				t.Fatalf("CreatePod: %v", err)
			}
			got := h.waitPhase(pod, corev1.PodFailed)
			if got.Status.Reason != tt.reason || !strings.Contains(got.Status.Message, tt.field) || !strings.Contains(got.Status.Message, tt.rule) {
				t.Errorf("got reason %q message %q; want %s naming %s and %q", got.Status.Reason, got.Status.Message, tt.reason, tt.field, tt.rule)
			}
			h.waitEvent("Warning " + tt.reason + " refused: " + tt.field)
			if submits, _, _, _ := h.jobs.counts(); submits != 0 {
				t.Errorf("got %d submissions; want none", submits)
			}
			cur, _ := h.client.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
			if hasFinalizer(cur) {
				t.Errorf("got finalizer on a refused pod; want none")
			}
		})
	}
}

func TestRetiredAnnotationsAreIgnored(t *testing.T) {
	pod := testPod("retired")
	pod.Annotations = map[string]string{
		annotations.ReverseForwards:       "redis:6379",
		"interlink.eu/reverse-owner-only": "false",
		"interlink.eu/reverse-node-exec":  "srun",
	}
	h := newHarness(t, func(c *Config) {
		c.Reverse = annotations.SiteRules{ReverseEnabled: true, ShadowModeSSH: true, TunnelEnabled: true}
		c.Relay = func(context.Context) (string, error) { return "/data/.bin/sluice-relay-0123", nil }
		c.SocketDirRoot = "/tmp/sluice"
	}, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("Normal Submitted submitted as Slurm job")
	h.jobs.mu.Lock()
	defer h.jobs.mu.Unlock()
	rev := h.jobs.lastJob.Reverse
	if rev == nil || rev.RelayPath != "/data/.bin/sluice-relay-0123" || rev.SocketDirRoot != "/tmp/sluice" || len(rev.Ports) != 1 || rev.Ports[0] != 6379 {
		t.Errorf("got job reverse %+v; want the relay, the socket root and port 6379", rev)
	}
}

func TestSubmitRetriesUntilTheSiteAnswers(t *testing.T) {
	pod := testPod("retry")
	h := newHarness(t, nil, pod)
	h.jobs.submitErrs = []error{errSite, errSite}
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("Warning SubmitWaiting connection to the site lost")
	h.waitEvent("submitted as Slurm job 101")
	if submits, _, _, _ := h.jobs.counts(); submits != 3 {
		t.Errorf("got %d Submit calls; want 3 (two failures, one success)", submits)
	}
}

func TestMissingConfigMapWaits(t *testing.T) {
	pod := testPod("cm")
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "later"}, Key: "k"},
	}}}
	h := newHarness(t, nil, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitFor("a CreateContainerConfigError", func() bool {
		got := h.last(pod)
		if got == nil {
			return false
		}
		w := got.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == reasonConfigError && strings.Contains(w.Message, "later")
	})
	if got := h.last(pod); got.Status.Phase != corev1.PodPending {
		t.Errorf("got phase %s; want Pending while the ConfigMap is missing", got.Status.Phase)
	}
	h.createLater()
	h.waitEvent("submitted as Slurm job 101")
}

func TestRequeuedJobIsToldInAnEvent(t *testing.T) {
	pod := testPod("rq")
	h := newHarness(t, nil, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
	h.jobs.setState("uid-rq", slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	h.waitPhase(pod, corev1.PodRunning)
	// Slurm shows a requeued job PENDING again, held back until its BeginTime.
	h.jobs.setState("uid-rq", slurm.Status{State: slurm.StatePending, Reason: "BeginTime"})
	h.waitEvent("Warning Requeued Slurm job 101 requeued (PENDING: BeginTime)")
	h.waitPhase(pod, corev1.PodPending)
	h.jobs.setState("uid-rq", slurm.Status{State: slurm.StateRunning, BatchHost: "node1",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	h.waitPhase(pod, corev1.PodRunning)
}

func TestFailureBeforeContainersIsExplained(t *testing.T) {
	pod := testPod("early")
	h := newHarness(t, nil, pod)
	h.jobs.mu.Lock()
	h.jobs.failures = map[string]string{"uid-early": "reverse tunnel: port 127.0.0.1:1080, asked for the SOCKS proxy, is taken by uid 1002 on this node"}
	h.jobs.mu.Unlock()
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
	code := 1
	h.jobs.setState("uid-early", slurm.Status{State: slurm.StateFailed, Exit: &slurm.ExitCode{Code: code}})
	h.waitEvent("Warning JobScriptFailed Slurm job 101 failed before its containers started: reverse tunnel: port 127.0.0.1:1080")
	h.waitFor("the message on the pod", func() bool {
		got := h.last(pod)
		return got != nil && got.Status.Phase == corev1.PodFailed && strings.Contains(got.Status.Message, "is taken by uid 1002 on this node")
	})
	// The virtual kubelet sends no status of a pod after its first Failed
	// one: that one must carry the reason.
	h.mu.Lock()
	first := h.firstFailed[keyOf(pod)]
	h.mu.Unlock()
	if first == nil || !strings.Contains(first.Status.Message, "is taken by uid 1002 on this node") {
		t.Errorf("the first Failed status pushed lacks the reason: %+v", first)
	}
}
