package slurm

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluice-hpc/sluice/internal/annotations"
)

// reversePod asks for a reverse tunnel to three endpoints, one of them by IP
// and one on localhost, whose names are not mapped.
func reversePod(image string) *corev1.Pod {
	p := simplePod(image)
	p.Spec.Containers[0].Command = []string{"sh", "-c", "printf 'PING\\r\\n' | nc redis 6379"}
	p.Annotations = map[string]string{
		annotations.ReverseForwards: "redis:6379 minio.storage.svc.cluster.local:9000 10.96.0.10:53 5000:localhost:8080 redis:6380",
	}
	return p
}

// reverseGoldenCases render reversePod's job with the reverse snippet, after
// pod edits the pod and rev the ReverseJob made of it.
var reverseGoldenCases = []struct {
	name    string
	runtime Runtime
	pod     func(*corev1.Pod)
	rev     func(*ReverseJob)
}{
	{name: "apptainer-reverse", runtime: RuntimeApptainer},
	// The pod's pre-exec sets the legacy variable: the snippet's bind,
	// composed after the pre-exec, starts from it.
	{name: "apptainer-reverse-singularity-bind", runtime: RuntimeApptainer, pod: func(p *corev1.Pod) {
		p.Annotations[AnnotationPreExec] = "export SINGULARITY_BIND=/shared/data:/data"
	}},
	{name: "singularity-reverse", runtime: RuntimeSingularity},
	{name: "charliecloud-reverse", runtime: RuntimeCharliecloud, pod: func(p *corev1.Pod) {
		p.Spec.Containers[0].Image = "/shared/ch/busybox"
		p.Spec.InitContainers = []corev1.Container{{Name: "show-hosts", Image: "/shared/ch/busybox", Command: []string{"cat", "/etc/hosts"}}}
	}},
	{name: "none-reverse", runtime: RuntimeNone, rev: func(r *ReverseJob) { r.Timeout = 1500 * time.Millisecond }},
	{name: "apptainer-reverse-ip-only", runtime: RuntimeApptainer, pod: func(p *corev1.Pod) {
		p.Annotations[annotations.ReverseForwards] = "10.96.0.10:53"
	}},
	{name: "apptainer-reverse-no-root", runtime: RuntimeApptainer, rev: func(r *ReverseJob) { r.SocketDirRoot = "" }},
}

func TestReverseGolden(t *testing.T) {
	for _, tc := range reverseGoldenCases {
		t.Run(tc.name, func(t *testing.T) {
			pod := reversePod("ghcr.io/org/redis-client:7")
			if tc.pod != nil {
				tc.pod(pod)
			}
			job, err := FromPod(context.Background(), pod, newSources(pod.Namespace), PodOptions{Runtime: tc.runtime})
			if err != nil {
				t.Fatalf("FromPod: %v", err)
			}
			r, err := annotations.Parse(pod.Annotations, pod.Namespace, string(pod.UID))
			if err != nil {
				t.Fatalf("annotations.Parse: %v", err)
			}
			job.Reverse = NewReverseJob(r, "/tmp/sluice", "/scratch/alice/.sluice/.bin/sluice-relay-0123456789abcdef")
			if tc.rev != nil {
				tc.rev(job.Reverse)
			}
			dir := JobDir("/scratch/alice/.sluice", pod.Namespace, string(pod.UID))
			script, err := Script(job, ScriptOptions{JobDir: dir, Runtime: tc.runtime})
			if err != nil {
				t.Fatalf("Script: %v", err)
			}
			checkShell(t, script)
			compareGolden(t, tc.name+".sh", script)
		})
	}
}

func TestNewReverseJob(t *testing.T) {
	r, err := annotations.Parse(map[string]string{
		annotations.ReverseForwards: "redis:6379 minio:9000 7000:minio:9001 10.0.0.1:5432 LocalHost:8080",
	}, "ns", "0a1b2c3d-0000-4000-8000-000000000001")
	if err != nil {
		t.Fatal(err)
	}
	rj := NewReverseJob(r, "/tmp/s", "/bin/relay")
	want := []uint16{6379, 9000, 7000, 5432, 8080}
	if len(rj.Ports) != len(want) {
		t.Fatalf("ports %v; want %v", rj.Ports, want)
	}
	for i := range want {
		if rj.Ports[i] != want[i] {
			t.Fatalf("ports %v; want %v", rj.Ports, want)
		}
	}
	if len(rj.Names) != 2 || rj.Names[0] != "redis" || rj.Names[1] != "minio" {
		t.Errorf("names %q; want [redis minio]", rj.Names)
	}
	if rj.Addr != r.Bind || rj.SocketDirRoot != "/tmp/s" || rj.RelayPath != "/bin/relay" {
		t.Errorf("got %+v", rj)
	}
	if NewReverseJob(nil, "/tmp/s", "/bin/relay") != nil {
		t.Error("NewReverseJob(nil) is not nil")
	}
}

func TestReverseScriptRefuses(t *testing.T) {
	tests := []struct {
		name string
		edit func(*ReverseJob)
		want string
	}{
		{"addr 127.0.0.1", func(r *ReverseJob) { r.Addr = netip.MustParseAddr("127.0.0.1") }, "shared"},
		{"mapped 127.0.0.1", func(r *ReverseJob) { r.Addr = netip.MustParseAddr("::ffff:127.0.0.1") }, "shared"},
		{"addr not loopback", func(r *ReverseJob) { r.Addr = netip.MustParseAddr("10.0.0.1") }, "loopback"},
		{"addr ipv6", func(r *ReverseJob) { r.Addr = netip.MustParseAddr("::1") }, "loopback"},
		{"no addr", func(r *ReverseJob) { r.Addr = netip.Addr{} }, "loopback"},
		{"no ports", func(r *ReverseJob) { r.Ports = nil }, "no ports"},
		{"port twice", func(r *ReverseJob) { r.Ports = []uint16{80, 80} }, "twice"},
		{"port zero", func(r *ReverseJob) { r.Ports = []uint16{0} }, "zero"},
		{"name with space", func(r *ReverseJob) { r.Names = []string{"a b"} }, "DNS name"},
		{"name with newline", func(r *ReverseJob) { r.Names = []string{"a\n127.0.0.1 b"} }, "DNS name"},
		{"localhost", func(r *ReverseJob) { r.Names = []string{"localhost"} }, "cannot be mapped"},
		{"relative root", func(r *ReverseJob) { r.SocketDirRoot = "tmp/s" }, "socket directory root"},
		{"root with colon", func(r *ReverseJob) { r.SocketDirRoot = "/tmp/a:b" }, "socket directory root"},
		{"root with newline", func(r *ReverseJob) { r.SocketDirRoot = "/tmp/s\nx" }, "socket directory root"},
		{"long root", func(r *ReverseJob) {
			r.SocketDirRoot = "/tmp/" + "abcdefghij" + "abcdefghij" + "abcdefghij" + "abcdefghij" + "abcdefghij" + "abcdefghij"
		}, "too long"},
		{"no relay", func(r *ReverseJob) { r.RelayPath = "" }, "relay path"},
		{"relay with space", func(r *ReverseJob) { r.RelayPath = "/a b/relay" }, "relay path"},
		{"negative timeout", func(r *ReverseJob) { r.Timeout = -time.Second }, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := testJob()
			job.Reverse = &ReverseJob{
				Addr: netip.MustParseAddr("127.1.2.3"), Ports: []uint16{6379}, Names: []string{"redis"},
				SocketDirRoot: "/tmp/s", RelayPath: "/bin/relay",
			}
			tt.edit(job.Reverse)
			_, err := Script(job, ScriptOptions{JobDir: "/data/ns-uid", Runtime: RuntimeApptainer})
			if err == nil || !strings.Contains(err.Error(), "reverse tunnel") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}
