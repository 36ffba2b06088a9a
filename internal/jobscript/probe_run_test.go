package jobscript

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
)

// readyState reads a container's readiness file: "0", "1", or "" when
// it is not there.
func readyState(dir, container string) string {
	b, err := os.ReadFile(filepath.Join(dir, ReadyFile(container)))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// TestScriptRunsReadinessProbes runs the three kinds of readiness probe
// for real: an exec probe that passes once its container made a file, an
// HTTP probe of a server that answers (with the header it was given) and
// one that answers 500, a TCP probe of a closed port, and an HTTP probe
// that another user's listener would answer with a 200 (as root, the
// listener of uid 65534): the relay checks the probes on the loopback, and
// the job's output says why each failed.
func TestScriptRunsReadinessProbes(t *testing.T) {
	for _, tool := range []string{"curl", "bash"} {
		if _, err := os.Stat("/usr/bin/" + tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ok" || r.Header.Get("X-Probe") != `it's "$HOME"` {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := int32(closed.Addr().(*net.TCPAddr).Port)
	closed.Close()
	other := ""
	if os.Geteuid() == 0 {
		other = serveAs(t, 65534, "127.0.0.1:0").String()
	}

	fast := func(p Probe) *Probe {
		p.Period, p.Timeout, p.Success, p.Failure = 1, 1, 1, 1
		return &p
	}
	job := testJob()
	job.Containers = []Container{
		sh("slow", "sleep 2; touch flag; sleep 4"),
		sh("web", "sleep 6"),
		sh("broken", "sleep 6"),
		sh("tcp", "sleep 6"),
	}
	job.Relay = scripttest.BuildRelay(t)
	job.Containers[0].Readiness = fast(Probe{Kind: ProbeExec, Command: []string{"test", "-e", "flag"}})
	job.Containers[1].Readiness = fast(Probe{Kind: ProbeHTTP, URL: srv.URL + "/ok", Headers: []string{`X-Probe: it's "$HOME"`}})
	job.Containers[2].Readiness = fast(Probe{Kind: ProbeHTTP, URL: srv.URL + "/fails"})
	job.Containers[3].Readiness = fast(Probe{Kind: ProbeTCP, Host: "127.0.0.1", Port: closedPort})
	if other != "" {
		job.Containers = append(job.Containers, sh("other", "sleep 6"))
		job.Containers[4].Readiness = fast(Probe{Kind: ProbeHTTP, URL: "http://" + other + "/"})
	}
	start := time.Now()
	dir, cmd := startJob(t, "sh", job, RuntimeNone)
	defer func() { _ = cmd.Wait() }()

	waitFor(t, func() bool { return readyState(dir, "slow") != "" })
	var readyAt time.Duration
	waitFor(t, func() bool {
		if readyState(dir, "slow") == "1" {
			readyAt = time.Since(start)
			return true
		}
		if _, err := os.Stat(filepath.Join(dir, "flag")); err == nil {
			return false
		}
		if s := readyState(dir, "slow"); s != "0" {
			t.Fatalf("slow.ready = %q before its flag exists; want 0", s)
		}
		return false
	})
	if readyAt < 2*time.Second {
		t.Errorf("slow was ready after %v; want it after its flag, 2 s in", readyAt)
	}
	waitFor(t, func() bool { return readyState(dir, "web") == "1" })
	failed := []string{"broken", "tcp"}
	if other != "" {
		failed = append(failed, "other")
	}
	for _, c := range failed {
		if s := readyState(dir, c); s != "0" {
			t.Errorf("%s.ready = %q; want 0", c, s)
		}
	}
	_ = cmd.Wait()
	wantFile(t, dir, JobExitFile, "0\n")
	out := readFile(t, dir, JobOutFile)
	whys := []string{
		"sluice: readiness probe of container broken failed: sluice-relay: probe " + srv.URL + "/fails: status 500",
		fmt.Sprintf("sluice: readiness probe of container tcp failed: sluice-relay: probe tcp://127.0.0.1:%d: dial tcp 127.0.0.1:%d: connect: connection refused", closedPort, closedPort),
	}
	if other != "" {
		whys = append(whys, "sluice: readiness probe of container other failed: sluice-relay: probe http://"+other+"/: connect: connection to "+other+" accepted by uid 65534, not the job's uid 0")
	}
	for _, why := range whys {
		if n := strings.Count(out, why); n != 1 {
			t.Errorf("job.out says %q %d times; want once (the reason does not change)", why, n)
		}
	}
	if t.Failed() {
		t.Logf("job.out:\n%s", readFile(t, dir, JobOutFile))
	}
}

// TestScriptRunsPreStopHooks: told to stop (SIGTERM, as scancel --batch
// sends it), the script runs the preStop hook to its end, and only then
// stops the container; a hook that outlives its grace period is killed.
func TestScriptRunsPreStopHooks(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			job := testJob()
			job.Containers = []Container{
				sh("main", `trap 'if [ -e hooked ]; then echo after the hook; else echo before the hook; fi; exit 0' TERM; echo ready; while :; do sleep 0.05; done`),
				sh("slow", "echo ready; exec sleep 600"),
			}
			job.Containers[0].PreStop = &Probe{Kind: ProbeExec, Command: []string{"sh", "-c", "sleep 1; echo bye > hooked"}, Period: 1, Timeout: 5, Success: 1, Failure: 1}
			job.Containers[1].PreStop = &Probe{Kind: ProbeExec, Command: []string{"sleep", "600"}, Period: 1, Timeout: 2, Success: 1, Failure: 1}
			dir, cmd := startJob(t, shell, job, RuntimeNone)
			waitFor(t, func() bool {
				a, _ := os.ReadFile(filepath.Join(dir, LogFile("main")))
				b, _ := os.ReadFile(filepath.Join(dir, LogFile("slow")))
				return strings.Contains(string(a), "ready") && strings.Contains(string(b), "ready")
			})
			start := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if d := time.Since(start); d < 2*time.Second || d > 10*time.Second {
				t.Errorf("the job took %v to stop; want the slow hook's 2 s, not more", d)
			}
			wantLog(t, dir, "main", "ready", "after the hook")
			wantFile(t, dir, "hooked", "bye\n")
			out := readFile(t, dir, JobOutFile)
			if !strings.Contains(out, "preStop hook of container main ran") || !strings.Contains(out, "preStop hook of container slow failed") {
				t.Errorf("job.out = %q; want the hooks' ends", out)
			}
		})
	}
}
