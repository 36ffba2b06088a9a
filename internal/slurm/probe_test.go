package slurm

import (
	"context"
	"strconv"
	"strings"
	"testing"

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

// TestProbesFromPod: a readiness probe reaches the job only when the site
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
			"spec.containers[0]: not run: readinessProbe, lifecycle.preStop; sluice runs readiness probes and preStop hooks only, and only when the site sets Site.EnableProbes",
			"spec.containers[1]: not run: readinessProbe;",
			"spec.containers[2]: not run: readinessProbe, lifecycle.preStop;",
			"spec.containers[3]: not run: livenessProbe, lifecycle.preStop;",
		}},
		{"probes on", true, 3, []string{
			"spec.containers[3]: not run: livenessProbe; sluice runs readiness probes (exec, httpGet, tcpSocket) and preStop hooks (exec, httpGet) only",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := withAll()
			job, err := FromPod(context.Background(), pod, newSources(pod.Namespace), PodOptions{Runtime: RuntimeApptainer, Site: SiteOptions{Probes: tc.probes}})
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
			if _, err := Script(job, ScriptOptions{JobDir: "/scratch/job", Runtime: RuntimeApptainer}); err != nil {
				t.Fatalf("probe %+v: %v", p, err)
			}
		}
	})
}
