package jobscript

import (
	"bytes"
	"context"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
)

// reversePod asks for a reverse tunnel to three endpoints, one of them by IP
// and one on localhost, whose names are not mapped.
func reversePod(image string) *corev1.Pod {
	p := scripttest.SimplePod(image)
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
	forward bool // the pod's forward tunnel carries ports to the job: its relay serves the forward entry
}{
	{name: "apptainer-reverse", runtime: RuntimeApptainer},
	// The pod's pre-exec sets the legacy variable: the snippet's bind,
	// composed after the pre-exec, starts from it.
	{name: "apptainer-reverse-singularity-bind", runtime: RuntimeApptainer, pod: func(p *corev1.Pod) {
		p.Annotations[AnnotationPreExec] = "export SINGULARITY_BIND=/shared/data:/data"
	}},
	{name: "singularity-reverse", runtime: RuntimeSingularity},
	{name: "charliecloud-reverse", runtime: RuntimeCharliecloud, pod: chPod},
	{name: "enroot-reverse", runtime: RuntimeEnroot},
	{name: "none-reverse", runtime: RuntimeNone, rev: func(r *ReverseJob) { r.Timeout = 1500 * time.Millisecond }},
	{name: "apptainer-reverse-ip-only", runtime: RuntimeApptainer, pod: func(p *corev1.Pod) {
		p.Annotations[annotations.ReverseForwards] = "10.96.0.10:53"
	}},
	{name: "apptainer-reverse-no-root", runtime: RuntimeApptainer, rev: func(r *ReverseJob) { r.SocketDirRoot = "" }},
	// Forwards and a SOCKS proxy; a SOCKS proxy alone, with no relay, hosts
	// copy or binds.
	{name: "apptainer-reverse-socks", runtime: RuntimeApptainer, pod: withSocks},
	{name: "apptainer-reverse-socks-only", runtime: RuntimeApptainer, pod: socksOnly},
	{name: "singularity-reverse-socks", runtime: RuntimeSingularity, pod: withSocks},
	{name: "singularity-reverse-socks-only", runtime: RuntimeSingularity, pod: socksOnly},
	{name: "charliecloud-reverse-socks", runtime: RuntimeCharliecloud, pod: func(p *corev1.Pod) { chPod(p); withSocks(p) }},
	{name: "charliecloud-reverse-socks-only", runtime: RuntimeCharliecloud, pod: func(p *corev1.Pod) { chPod(p); socksOnly(p) }},
	{name: "none-reverse-socks", runtime: RuntimeNone, pod: withSocks},
	{name: "none-reverse-socks-only", runtime: RuntimeNone, pod: socksOnly},
	// A relay for the forward entry alone (shadow.RunsRelay): no reverse
	// forwards, hosts copy or binds; SLUICE_POD_IP and SLUICE_PORT_FILE.
	{name: "apptainer-forward-only", runtime: RuntimeApptainer, pod: forwardOnly, forward: true},
	{name: "charliecloud-forward-only", runtime: RuntimeCharliecloud, pod: func(p *corev1.Pod) { chPod(p); forwardOnly(p) }, forward: true},
	{name: "enroot-forward-only", runtime: RuntimeEnroot, pod: forwardOnly, forward: true},
}

// forwardOnly exposes port 8080 and asks for no reverse tunnel.
func forwardOnly(p *corev1.Pod) {
	delete(p.Annotations, annotations.ReverseForwards)
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
}

// chPod runs reversePod under Charliecloud, with an init container that
// shows the hosts file.
func chPod(p *corev1.Pod) {
	p.Spec.Containers[0].Image = "/shared/ch/busybox"
	p.Spec.InitContainers = []corev1.Container{{Name: "show-hosts", Image: "/shared/ch/busybox", Command: []string{"cat", "/etc/hosts"}}}
}

// withSocks adds a SOCKS proxy on port 1080 to reversePod's forwards.
func withSocks(p *corev1.Pod) { p.Annotations[annotations.ReverseSocksPort] = "1080" }

// socksOnly asks for a SOCKS proxy on port 1080 and no forwards.
func socksOnly(p *corev1.Pod) {
	delete(p.Annotations, annotations.ReverseForwards)
	p.Annotations[annotations.ReverseSocksPort] = "1080"
}

func TestReverseGolden(t *testing.T) {
	for _, tc := range reverseGoldenCases {
		t.Run(tc.name, func(t *testing.T) {
			pod := reversePod("ghcr.io/org/redis-client:7")
			if tc.pod != nil {
				tc.pod(pod)
			}
			job, err := FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: tc.runtime})
			if err != nil {
				t.Fatalf("FromPod: %v", err)
			}
			r, err := annotations.Parse(pod.Annotations, pod.Namespace)
			if err != nil {
				t.Fatalf("annotations.Parse: %v", err)
			}
			job.Reverse = NewReverseJob(r, tc.forward, "/tmp/sluice", goldenRelay)
			job.Reverse.Salt = scripttest.TestSalt
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
	const uid = "0a1b2c3d-0000-4000-8000-000000000001"
	forwards := "redis:6379 minio:9000 7000:minio:9001 10.0.0.1:5432 LocalHost:8080"
	tests := []struct {
		name        string
		annotations map[string]string // nil: NewReverseJob(nil, …)
		forward     bool              // the pod's forward tunnel carries ports to the job
		want        *ReverseJob       // nil: none
	}{
		{"nil", nil, false, nil},
		// A relay for its forward entry alone: no ports, names or SOCKS.
		{"forward only", nil, true, &ReverseJob{Forward: true, SocketDirRoot: "/tmp/s", RelayPath: "/bin/relay"}},
		{"forward and socks", map[string]string{annotations.ReverseSocksPort: "1080"}, true, &ReverseJob{
			Forward: true, SocksPort: 1080, SocketDirRoot: "/tmp/s", RelayPath: "/bin/relay",
		}},
		{"forwards", map[string]string{annotations.ReverseForwards: forwards}, false, &ReverseJob{
			Ports: []uint16{6379, 9000, 7000, 5432, 8080}, Names: []string{"redis", "minio"},
			SocketDirRoot: "/tmp/s", RelayPath: "/bin/relay",
		}},
		{"forwards and socks", map[string]string{annotations.ReverseForwards: "redis:6379", annotations.ReverseSocksPort: "1080"}, false, &ReverseJob{
			Ports: []uint16{6379}, Names: []string{"redis"}, SocksPort: 1080,
			SocketDirRoot: "/tmp/s", RelayPath: "/bin/relay",
		}},
		// No relay: no address, relay path, ports or names.
		{"socks only", map[string]string{annotations.ReverseSocksPort: "1080"}, false, &ReverseJob{
			SocksPort: 1080, SocketDirRoot: "/tmp/s",
		}},
		{"bind alone asks for nothing", map[string]string{annotations.ReverseBind: "127.1.0.2"}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *annotations.Reverse
			if tt.annotations != nil {
				var err error
				if r, err = annotations.Parse(tt.annotations, "ns"); err != nil {
					t.Fatal(err)
				}
			}
			got := NewReverseJob(r, tt.forward, "/tmp/s", "/bin/relay")
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v; want %+v", got, tt.want)
			}
			if got == nil {
				return
			}
			job := testJob()
			job.UID = uid
			job.Reverse = got
			got.Salt = scripttest.TestSalt
			if _, err := Script(job, ScriptOptions{JobDir: "/data/ns-uid", Runtime: RuntimeApptainer}); err != nil {
				t.Errorf("Script: %v", err)
			}
		})
	}
}

// TestReverseScriptTakes renders jobs that check must take.
func TestReverseScriptTakes(t *testing.T) {
	tests := []struct {
		name string
		rev  ReverseJob
	}{
		{"forwards", ReverseJob{Addr: netip.MustParseAddr("127.1.2.3"), Ports: []uint16{6379}, Names: []string{"redis"}, SocketDirRoot: "/tmp/s", RelayPath: "/bin/relay", Salt: scripttest.TestSalt}},
		{"forwards, address from the salt", ReverseJob{Ports: []uint16{6379}, Names: []string{"redis"}, SocketDirRoot: "/tmp/s", RelayPath: "/bin/relay", Salt: scripttest.TestSalt}},
		{"forwards and socks", ReverseJob{Addr: netip.MustParseAddr("127.1.2.3"), Ports: []uint16{6379}, SocksPort: 1080, SocketDirRoot: "/tmp/s", RelayPath: "/bin/relay", Salt: scripttest.TestSalt}},
		{"socks only", ReverseJob{SocksPort: 1080, SocketDirRoot: "/tmp/s", Salt: scripttest.TestSalt}},
		{"socks only, no root", ReverseJob{SocksPort: 65535, Salt: scripttest.TestSalt}},
		// What only the relay takes is not used without forwards.
		{"socks only ignores the relay", ReverseJob{SocksPort: 1, Addr: netip.MustParseAddr("127.0.0.1"), RelayPath: "relay", SocketDirRoot: "/tmp/s", Salt: scripttest.TestSalt}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := testJob()
			job.Reverse = &tt.rev
			script, err := Script(job, ScriptOptions{JobDir: "/data/ns-uid", Runtime: RuntimeApptainer})
			if err != nil {
				t.Fatalf("Script: %v", err)
			}
			hasRelay := bytes.Contains(script, []byte("sluice_rev_start_relay "))
			hasSocks := bytes.Contains(script, []byte("sluice_rev_socks_port="))
			if hasRelay != (len(tt.rev.Ports) > 0) || hasSocks != (tt.rev.SocksPort != 0) {
				t.Errorf("script starts the relay: %v, waits for SOCKS: %v; want %v, %v", hasRelay, hasSocks, len(tt.rev.Ports) > 0, tt.rev.SocksPort != 0)
			}
		})
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
		{"addr of the node's resolver", func(r *ReverseJob) { r.Addr = netip.MustParseAddr("127.0.0.53") }, "127.0.0.0/16"},
		{"addr not loopback", func(r *ReverseJob) { r.Addr = netip.MustParseAddr("10.0.0.1") }, "loopback"},
		{"addr ipv6", func(r *ReverseJob) { r.Addr = netip.MustParseAddr("::1") }, "loopback"},
		{"no addr and no salt", func(r *ReverseJob) { r.Addr, r.Salt = netip.Addr{}, "" }, "salt has 0 characters"},
		{"no salt", func(r *ReverseJob) { r.Salt = "" }, "salt has 0 characters"},
		{"socks only, no salt", func(r *ReverseJob) { r.Ports, r.Names, r.SocksPort, r.Salt = nil, nil, 1080, "" }, "salt has 0 characters"},
		{"salt not hex", func(r *ReverseJob) { r.Salt = "00112233445566778899aabbccddee'x" }, "salt holds a character"},
		{"no ports", func(r *ReverseJob) { r.Ports = nil }, "no ports"},
		{"port twice", func(r *ReverseJob) { r.Ports = []uint16{80, 80} }, "twice"},
		{"port zero", func(r *ReverseJob) { r.Ports = []uint16{0} }, "zero"},
		{"name with space", func(r *ReverseJob) { r.Names = []string{"a b"} }, "only letters, digits"},
		{"name with newline", func(r *ReverseJob) { r.Names = []string{"a\n127.0.0.1 b"} }, "only letters, digits"},
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
		{"socks port is a forward's", func(r *ReverseJob) { r.SocksPort = 6379 }, "SOCKS port 6379 is also a forward's port"},
		{"no ports and no socks", func(r *ReverseJob) { r.Ports, r.Names = nil, nil }, "no ports, no SOCKS port and no forward entry"},
		{"names without ports", func(r *ReverseJob) { r.Ports, r.SocksPort = nil, 1080 }, "names to map but no ports"},
		{"socks only, bad root", func(r *ReverseJob) { r.Ports, r.Names, r.SocksPort, r.SocketDirRoot = nil, nil, 1080, "/tmp/a b" }, "socket directory root"},
		{"socks only, negative timeout", func(r *ReverseJob) { r.Ports, r.Names, r.SocksPort, r.Timeout = nil, nil, 1080, -1 }, "negative"},
		{"with socks, bad relay", func(r *ReverseJob) { r.SocksPort, r.RelayPath = 1080, "" }, "relay path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := testJob()
			job.Reverse = &ReverseJob{
				Addr: netip.MustParseAddr("127.1.2.3"), Ports: []uint16{6379}, Names: []string{"redis"},
				SocketDirRoot: "/tmp/s", RelayPath: "/bin/relay", Salt: scripttest.TestSalt,
			}
			tt.edit(job.Reverse)
			_, err := Script(job, ScriptOptions{JobDir: "/data/ns-uid", Runtime: RuntimeApptainer})
			if err == nil || !strings.Contains(err.Error(), "reverse tunnel") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}
