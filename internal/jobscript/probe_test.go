package jobscript

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestNewProbe(t *testing.T) {
	c := &corev1.Container{Name: "web", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	http := func(g corev1.HTTPGetAction) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &g}}
	}
	tcp := func(host string, port intstr.IntOrString) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: host, Port: port}}}
	}
	for _, tc := range []struct {
		name  string
		probe *corev1.Probe
		want  string // "<kind> <url|host:port|command>", or the error
	}{
		{"http named port", http(corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}), "http http://127.0.0.1:8080/healthz"},
		{"http no path", http(corev1.HTTPGetAction{Port: intstr.FromInt32(80)}), "http http://127.0.0.1:80/"},
		{"https host", http(corev1.HTTPGetAction{Scheme: corev1.URISchemeHTTPS, Host: "::1", Path: "/a?b=c", Port: intstr.FromInt32(443)}), "http https://[::1]:443/a?b=c"},
		{"http bad scheme", http(corev1.HTTPGetAction{Scheme: "FTP", Port: intstr.FromInt32(80)}), "scheme"},
		{"http path with a space", http(corev1.HTTPGetAction{Path: "/a b", Port: intstr.FromInt32(80)}), "path"},
		{"http path with a newline", http(corev1.HTTPGetAction{Path: "/a\nb", Port: intstr.FromInt32(80)}), "path"},
		{"http relative path", http(corev1.HTTPGetAction{Path: "a", Port: intstr.FromInt32(80)}), "path"},
		{"http host with a slash", http(corev1.HTTPGetAction{Host: "a/b", Port: intstr.FromInt32(80)}), "host"},
		{"http unknown port name", http(corev1.HTTPGetAction{Port: intstr.FromString("grpc")}), "no port named"},
		{"http port 0", http(corev1.HTTPGetAction{Port: intstr.FromInt32(0)}), "out of range"},
		{"http header with a newline", http(corev1.HTTPGetAction{Port: intstr.FromInt32(80), HTTPHeaders: []corev1.HTTPHeader{{Name: "X", Value: "a\r\nb"}}}), "header"},
		{"http header name with a colon", http(corev1.HTTPGetAction{Port: intstr.FromInt32(80), HTTPHeaders: []corev1.HTTPHeader{{Name: "X:", Value: "a"}}}), "header"},
		{"tcp", tcp("", intstr.FromInt32(5432)), "tcp 127.0.0.1:5432"},
		{"tcp host", tcp("db.example.org", intstr.FromString("http")), "tcp db.example.org:8080"},
		{"tcp bad host", tcp("-oProxyCommand=x", intstr.FromInt32(1)), "tcpSocket.host"},
		{"tcp port too big", tcp("", intstr.FromInt32(70000)), "out of range"},
		{"exec", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}}, "exec cat /tmp/ready"},
		{"exec empty", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{}}}, "without a command"},
		{"exec NUL", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"a\x00b"}}}}, "exec.command[0]"},
		{"grpc", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000}}}, "grpc probes are not supported"},
		{"none", &corev1.Probe{}, "no handler"},
	} {
		p, err := newProbe(tc.probe, c)
		var got string
		switch {
		case err != nil:
			got = err.Error()
		case p.Kind == ProbeHTTP:
			got = "http " + p.URL
		case p.Kind == ProbeTCP:
			got = "tcp " + p.Host + ":" + strconv.Itoa(int(p.Port))
		default:
			got = "exec " + strings.Join(p.Command, " ")
		}
		if err != nil && !strings.Contains(got, tc.want) || err == nil && got != tc.want {
			t.Errorf("%s: got %q; want %q", tc.name, got, tc.want)
		}
		if err == nil {
			if cerr := p.check(); cerr != nil {
				t.Errorf("%s: the probe made fails its own check: %v", tc.name, cerr)
			}
		}
	}
}

// TestProbeTimings: Kubernetes' defaults fill what a pod leaves at zero,
// and values past the bounds are brought within them.
func TestProbeTimings(t *testing.T) {
	c := &corev1.Container{Name: "c"}
	p, err := newProbe(&corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		PeriodSeconds: 1 << 30, SuccessThreshold: -5,
	}, c)
	if err != nil {
		t.Fatal(err)
	}
	got := []int32{p.InitialDelay, p.Period, p.Timeout, p.Success, p.Failure}
	want := []int32{0, maxProbeSeconds, 1, 1, 3}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("got timings %v; want %v", got, want)
			break
		}
	}
}

// TestProbesFromPod: probes and hooks reach the job only when the site
// runs probes; whatever a container's probes and hooks the job leaves out
// is named in a Warning.
func TestProbesFromPod(t *testing.T) {
	withAll := func() *corev1.Pod {
		p := probedPod()
		p.Spec.Containers[3].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		p.Spec.Containers[3].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		return p
	}
	for _, tc := range []struct {
		name     string
		probes   bool
		ready    int
		warnings []string
	}{
		{"probes off", false, 0, []string{
			"spec.containers[0]: not run: readinessProbe, lifecycle.preStop; sluice runs probes and lifecycle hooks only when the site sets Site.EnableProbes",
			"spec.containers[1]: not run: readinessProbe;",
			"spec.containers[2]: not run: readinessProbe, lifecycle.preStop;",
			"spec.containers[3]: not run: livenessProbe, lifecycle.preStop;",
		}},
		{"probes on", true, 3, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := withAll()
			job, err := FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeApptainer, Site: SiteOptions{Probes: tc.probes}})
			if err != nil {
				t.Fatal(err)
			}
			ready := 0
			for _, c := range job.Containers {
				if c.Readiness != nil {
					ready++
				}
			}
			if ready != tc.ready {
				t.Errorf("got %d readiness probes; want %d", ready, tc.ready)
			}
			if len(job.Warnings) != len(tc.warnings) {
				t.Fatalf("got warnings %v; want %d", job.Warnings, len(tc.warnings))
			}
			for i, w := range job.Warnings {
				if w.Reason != ReasonProbesNotRun || !strings.HasPrefix(w.Message, tc.warnings[i]) {
					t.Errorf("warning %d: got %s %q; want %s %q...", i, w.Reason, w.Message, ReasonProbesNotRun, tc.warnings[i])
				}
			}
		})
	}
}

// TestKeptProbesFromPod: liveness and startup probes and postStart hooks
// reach the job, with the pod's restart policy and grace period, when the
// site runs probes; those of a kind the node cannot run are named in a
// Warning.
func TestKeptProbesFromPod(t *testing.T) {
	exec := corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
	grpc := corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000}}
	for _, tc := range []struct {
		name    string
		probes  bool
		edit    func(p *corev1.Pod)
		want    string // "<liveness> <startup> <postStart> <restart> <grace>" of container 0, each probe's kind or -
		warning string // the Warning's start, "" for none
	}{
		{"all three", true, func(p *corev1.Pod) {}, "exec http exec OnFailure 15", ""},
		{"probes off", false, func(p *corev1.Pod) {}, "- - - - 0",
			"spec.containers[0]: not run: readinessProbe, livenessProbe, startupProbe, lifecycle.postStart, lifecycle.preStop; sluice runs probes and lifecycle hooks only when"},
		{"restartPolicy unset", true, func(p *corev1.Pod) { p.Spec.RestartPolicy = "" }, "exec http exec Always 15", ""},
		{"restartPolicy Never", true, func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever }, "exec http exec Never 15", ""},
		{"default grace", true, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = nil }, "exec http exec OnFailure 30", ""},
		{"grpc liveness", true, func(p *corev1.Pod) { p.Spec.Containers[0].LivenessProbe.ProbeHandler = grpc }, "- http exec OnFailure 15",
			"spec.containers[0]: not run: livenessProbe (grpc probes are not supported"},
		{"grpc startup", true, func(p *corev1.Pod) { p.Spec.Containers[0].StartupProbe.ProbeHandler = grpc }, "exec - exec OnFailure 15",
			"spec.containers[0]: not run: startupProbe (grpc probes"},
		{"sleep postStart", true, func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle.PostStart = &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}
		}, "exec http - OnFailure 15", "spec.containers[0]: not run: lifecycle.postStart (sleep hooks are not supported)"},
		{"tcpSocket postStart", true, func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle.PostStart = &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(1)}}
		}, "exec http - OnFailure 15", "spec.containers[0]: not run: lifecycle.postStart (tcpSocket hooks are deprecated"},
		{"postStart only", true, func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.LivenessProbe, c.StartupProbe, c.ReadinessProbe = nil, nil, nil
		}, "- - exec OnFailure 15", ""},
		{"readiness only", true, func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.LivenessProbe, c.StartupProbe, c.Lifecycle.PostStart = nil, nil, nil
			p.Spec.Containers[1].LivenessProbe = nil
		}, "- - - - 0", ""},
		{"liveness exec", true, func(p *corev1.Pod) { p.Spec.Containers[0].StartupProbe.ProbeHandler = exec }, "exec exec exec OnFailure 15", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := livePod()
			tc.edit(pod)
			job, err := FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeApptainer, Site: SiteOptions{Probes: tc.probes}})
			if err != nil {
				t.Fatal(err)
			}
			kind := func(p *Probe) string {
				if p == nil {
					return "-"
				}
				return string(p.Kind)
			}
			c := job.Containers[0]
			restart := string(job.Restart)
			if restart == "" {
				restart = "-"
			}
			got := fmt.Sprintf("%s %s %s %s %d", kind(c.Liveness), kind(c.Startup), kind(c.PostStart), restart, job.Grace)
			if got != tc.want {
				t.Errorf("got %q; want %q", got, tc.want)
			}
			if c.PostStart != nil && c.PostStart.Timeout != job.Grace {
				t.Errorf("postStart timeout %d; want the grace period %d", c.PostStart.Timeout, job.Grace)
			}
			var warned string
			for _, w := range job.Warnings {
				if w.Reason == ReasonProbesNotRun && strings.HasPrefix(w.Message, "spec.containers[0]") {
					warned = w.Message
				}
			}
			if tc.warning == "" && warned != "" || !strings.HasPrefix(warned, tc.warning) {
				t.Errorf("warning %q; want %q...", warned, tc.warning)
			}
			job.Relay = goldenRelay
			if _, err := Script(job, ScriptOptions{JobDir: "/scratch/job", Runtime: RuntimeApptainer}); err != nil {
				t.Errorf("Script: %v", err)
			}
		})
	}
}

// TestScriptRefusesBadRestart: a job with a container its probes can kill
// must carry a restart policy and a grace period the script can use.
func TestScriptRefusesBadRestart(t *testing.T) {
	live := &Probe{Kind: ProbeExec, Command: []string{"true"}, Period: 1, Timeout: 1, Success: 1, Failure: 1}
	for _, tc := range []struct {
		restart RestartPolicy
		grace   int32
		want    string
	}{
		{"", 30, "restart policy"},
		{"always; id", 30, "restart policy"},
		{RestartAlways, 0, "grace period"},
		{RestartNever, maxGrace + 1, "grace period"},
		{RestartOnFailure, 30, ""},
	} {
		job := testJob()
		job.Containers[0].Liveness = live
		job.Restart, job.Grace = tc.restart, tc.grace
		_, err := Script(job, ScriptOptions{JobDir: "/scratch/job", Runtime: RuntimeApptainer})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("restart %q grace %d: got %v; want %q", tc.restart, tc.grace, err, tc.want)
		}
	}
}

// FuzzNewProbe: a probe newProbe accepts passes its own check and renders
// into a script; nothing it holds reaches the script unquoted (Script's
// last check would refuse a NUL or CR LF).
func FuzzNewProbe(f *testing.F) {
	f.Add("/healthz", "", "X-A", "v", "cat")
	f.Add("/a?b='c'&d=$(id)", "db.example.org", "X", `it's "me"`, "a\nb")
	f.Fuzz(func(t *testing.T, path, host, hname, hvalue, word string) {
		c := &corev1.Container{Name: "c"}
		probes := []*corev1.Probe{
			{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Host: host, Port: intstr.FromInt32(80),
				HTTPHeaders: []corev1.HTTPHeader{{Name: hname, Value: hvalue}}}}},
			{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: host, Port: intstr.FromInt32(80)}}},
			{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{word}}}},
		}
		for _, kp := range probes {
			p, err := newProbe(kp, c)
			if err != nil {
				continue
			}
			if err := p.check(); err != nil {
				t.Fatalf("newProbe gave %+v, which fails its check: %v", p, err)
			}
			job := testJob()
			job.Containers[0].Readiness = p
			job.Relay = goldenRelay
			if _, err := Script(job, ScriptOptions{JobDir: "/scratch/job", Runtime: RuntimeApptainer}); err != nil {
				t.Fatalf("probe %+v: %v", p, err)
			}
		}
	})
}
