package tunnel

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
)

// The load of BenchmarkForwardStreams: streams open at once, one in
// stuckEvery never reading.
const (
	loadStreams   = 2000
	stuckEvery    = 10
	readerBytes   = 256 << 10 // what each reading client asks for and reads
	stuckBytes    = 16 << 20  // what each client that never reads asks for
	loadDialers   = 50
	loadSettle    = 6 * time.Second // after the readers, for the stalls to show
	readerTimeout = 90 * time.Second
)

// BenchmarkForwardStreams measures the memory of the shadow's forward under
// 2,000 streams, one in ten from a client that never reads while the job
// sends it 16 MiB, the others reading 256 KiB: all open at once
// ("at-once"), or 50 at a time, each reading client closing once served
// while those that never read stay ("churn"). The forward is the real
// sluice-tunnel binary in a process of its own, so that its figures are its
// own, in a memory cgroup of 256 MiB, as in its container (cgroup v1, as
// root; without one it runs unconfined); the site (login and compute node
// sshd) and the job run in the benchmark's process (fakeSite). With SLUICE_TUNNEL_BASE naming another
// build of sluice-tunnel (today's, say), that one runs first, under the
// same loads:
//
//	git archive BASE | tar -x -C /tmp/base && (cd /tmp/base && go build -o /tmp/sluice-tunnel-base ./cmd/sluice-tunnel)
//	SLUICE_TUNNEL_BASE=/tmp/sluice-tunnel-base go test -run '^$' -bench ForwardStreams -benchtime 1x ./internal/tunnel
func BenchmarkForwardStreams(b *testing.B) {
	type run struct {
		name  string
		bin   string
		flags []string
	}
	bin := buildTunnel(b)
	runs := []run{
		{"bounded", bin, nil},
		{"bounded-no-conn-cap", bin, []string{"--max-conns=0"}},
	}
	if base := os.Getenv("SLUICE_TUNNEL_BASE"); base != "" {
		runs = append([]run{{"base", base, nil}}, runs...)
	}
	for _, churn := range []bool{false, true} {
		for _, r := range runs {
			name := "at-once/" + r.name
			if churn {
				name = "churn/" + r.name
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					res := streamLoad(b, r.bin, r.flags, churn)
					b.Logf("%s: %+v", name, res)
					b.ReportMetric(float64(res.PeakRSS)/(1<<20), "peak-RSS-MiB")
					b.ReportMetric(float64(res.CgroupPeak)/(1<<20), "cgroup-peak-MiB")
					if res.OOMKilled {
						b.ReportMetric(1, "oom-killed")
					}
					b.ReportMetric(float64(res.PeakHeap)/(1<<20), "peak-heap-MiB")
					b.ReportMetric(float64(res.Served), "readers-served")
					b.ReportMetric(float64(res.Refused), "readers-refused")
					b.ReportMetric(float64(res.Failed), "readers-failed")
					b.ReportMetric(res.ReadersTook.Seconds(), "readers-s")
				}
			})
		}
	}
}

// buildTunnel builds cmd/sluice-tunnel into a temporary directory.
func buildTunnel(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "sluice-tunnel")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/sluice-tunnel")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build sluice-tunnel: %v\n%s", err, out)
	}
	return bin
}

// loadResult is what one run of the load measured.
type loadResult struct {
	OOMKilled   bool          // the forward was killed at its cgroup's limit
	CgroupPeak  int64         // memory.max_usage_in_bytes of its cgroup; 0 without one
	PeakRSS     int64         // the forward's VmHWM; 0 if it was killed
	PeakHeap    int64         // the highest go_memstats_heap_inuse_bytes sampled
	Served      int           // reading clients that got all they asked for
	Refused     int           // reading clients closed before their first byte
	Failed      int           // reading clients cut after bytes, or timed out
	ReadersTook time.Duration // from the first dial until every reader ended
	Metrics     string        // the forward's counters at the end
}

// streamLoad runs the forward bin with flags against a fake site and a
// job that sends each client the number of bytes its first line asks for,
// opens the streams, and measures. With churn, each dialer waits for its
// reading client, which then closes.
func streamLoad(b *testing.B, bin string, flags []string, churn bool) loadResult {
	b.Helper()
	dir := b.TempDir()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		b.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		b.Fatal(err)
	}
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		b.Fatal(err)
	}
	site := startFakeSiteFor(b, signer)
	port := startJob(b, sizedJob)
	nodeFile := filepath.Join(dir, "node")
	writeNode(b, nodeFile, site.nodeName)
	metricsAddr := net.JoinHostPort("127.0.0.2", strconv.Itoa(freePort(b, "127.0.0.2")))
	args := append([]string{"forward",
		"--login=" + site.login.addr, "--user=alice", "--key=" + keyFile,
		"--login-known-hosts=" + sshxtest.KnownHosts(b, site.login.addr, site.login.hostKey.PublicKey()),
		"--node-known-hosts=" + sshxtest.KnownHosts(b, site.node.addr, site.node.hostKey.PublicKey()),
		"--node-file=" + nodeFile, "--node-port=" + strconv.Itoa(site.hop.NodePort),
		"--ports=" + strconv.Itoa(port), "--listen=127.0.0.2", "--metrics=" + metricsAddr, "--log-level=warn",
	}, flags...)
	cg := newMemCgroup(b, shadowMemoryLimit)
	cmd := exec.Command(bin, args...)
	if cg != "" {
		// Started inside the cgroup, so that it finds its limit there.
		cmd = exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg, bin}, args...)...)
	}
	logFile, err := os.Create(filepath.Join(dir, "forward.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	var killed atomic.Bool
	go func() {
		err := cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				killed.Store(true)
			}
		}
		close(exited)
	}()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()
	metricsURL := "http://" + metricsAddr + "/metrics"
	waitFor(b, 20*time.Second, "forward up", func() bool {
		text, _ := scrape(metricsURL)
		return metricSum(text, "sluice_tunnel_up{") == 1
	})

	// Sample the heap until the load ends.
	var peakHeap atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			if text, err := scrape(metricsURL); err == nil {
				if h := int64(metricSum(text, "go_memstats_heap_inuse_bytes")); h > peakHeap.Load() {
					peakHeap.Store(h)
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	})

	addr := net.JoinHostPort("127.0.0.2", strconv.Itoa(port))
	var (
		mu                      sync.Mutex
		conns                   []net.Conn
		served, refused, failed atomic.Int32
		readers                 sync.WaitGroup
		next                    atomic.Int32
		dialers                 sync.WaitGroup
		stuckDialer, readDialer = smallBufferDialer(), &net.Dialer{}
		start                   = time.Now()
	)
	for range loadDialers {
		dialers.Go(func() {
			for i := int(next.Add(1)) - 1; i < loadStreams; i = int(next.Add(1)) - 1 {
				stuck := i%stuckEvery == 0
				d, want := readDialer, int64(readerBytes)
				if stuck {
					d, want = stuckDialer, stuckBytes
				}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					if !stuck {
						refused.Add(1)
					}
					continue
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
				fmt.Fprintf(c, "%d\n", want)
				if stuck {
					continue
				}
				read := func() {
					c.SetReadDeadline(time.Now().Add(readerTimeout))
					n, err := io.CopyN(io.Discard, c, want)
					switch {
					case err == nil:
						served.Add(1)
					case n == 0 && !errors.Is(err, os.ErrDeadlineExceeded):
						refused.Add(1)
					default:
						failed.Add(1)
					}
				}
				if churn {
					read()
					c.Close()
				} else {
					readers.Go(read)
				}
			}
		})
	}
	dialers.Wait()
	readers.Wait()
	took := time.Since(start)
	time.Sleep(loadSettle)
	close(stop)
	sampler.Wait()
	text, _ := scrape(metricsURL)
	peakRSS := vmHWM(cmd.Process.Pid)
	for _, c := range conns {
		c.Close()
	}
	return loadResult{
		OOMKilled: killed.Load(), CgroupPeak: cgroupPeak(cg),
		PeakRSS: peakRSS, PeakHeap: peakHeap.Load(),
		Served: int(served.Load()), Refused: int(refused.Load()), Failed: int(failed.Load()), ReadersTook: took,
		Metrics: counters(text),
	}
}

// sizedJob reads a number from its client's first line and sends that many
// bytes, then waits for the client to go.
func sizedJob(c net.Conn) {
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return
	}
	n, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		return
	}
	chunk := bytes.Repeat([]byte{'s'}, 32<<10)
	for n > 0 {
		w, err := c.Write(chunk[:min(n, int64(len(chunk)))])
		if err != nil {
			return
		}
		n -= int64(w)
	}
	io.Copy(io.Discard, r)
}

// smallBufferDialer dials with a 4 KiB receive buffer, so that a client
// that never reads leaves the job's bytes in the forward rather than in
// its own socket.
func smallBufferDialer() *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		return errors.Join(err, serr)
	}}
}

func freePort(b *testing.B, host string) int {
	b.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func scrape(url string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// metricSum adds the values of the samples of text whose line starts with
// prefix.
func metricSum(text, prefix string) float64 {
	var sum float64
	for line := range strings.Lines(text) {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// counters are the forward's refusal and cut counters in text, one line.
func counters(text string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "sluice_tunnel_refused_total{") || strings.HasPrefix(line, "sluice_tunnel_connections_cut_total{") ||
			strings.HasPrefix(line, "sluice_tunnel_connections_total{") || strings.HasPrefix(line, "sluice_tunnel_connections_stalled{") {
			out = append(out, strings.TrimSpace(strings.ReplaceAll(line, `mode="forward",`, "")))
		}
	}
	return strings.Join(out, " ")
}

// vmHWM is the peak resident set size of process pid, 0 if it is gone.
func vmHWM(pid int) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// shadowMemoryLimit is the memory limit of a shadow's tunnel container.
const shadowMemoryLimit = 256 << 20

// newMemCgroup makes a cgroup v1 memory cgroup limited to limit bytes,
// removed when the benchmark ends, and returns its directory; "" where
// none can be made (no cgroup v1 memory hierarchy, not root).
func newMemCgroup(b *testing.B, limit int64) string {
	b.Helper()
	dir := fmt.Sprintf("/sys/fs/cgroup/memory/sluice-bench-%d-%d", os.Getpid(), time.Now().UnixNano())
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Logf("no memory cgroup (%v): the forward runs unconfined", err)
		return ""
	}
	b.Cleanup(func() {
		// The cgroup goes once its last process has.
		for range 50 {
			if os.Remove(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		b.Logf("cgroup %s left behind", dir)
	})
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		b.Fatalf("limit the cgroup: %v", err)
	}
	return dir
}

// cgroupPeak is the highest memory use the cgroup dir saw, 0 without one.
func cgroupPeak(dir string) int64 {
	if dir == "" {
		return 0
	}
	raw, err := os.ReadFile(filepath.Join(dir, "memory.max_usage_in_bytes"))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	return n
}
