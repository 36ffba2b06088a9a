package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
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

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cli(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCLI(t *testing.T) {
	f := writeSiteFiles(t)
	files := []string{"--login=127.0.0.1:2222", "--user=alice", "--key=" + f.key,
		"--login-known-hosts=" + f.loginHosts, "--node-known-hosts=" + f.nodeHosts, "--node-file=" + f.node}
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     []string
		stderr     []string
		quietOther bool // nothing on the other stream
	}{
		{"no command", nil, 2, nil, []string{"usage: sluice-tunnel forward|reverse"}, true},
		{"unknown command", []string{"forwards"}, 2, nil, []string{`unknown command "forwards"`, "usage:"}, true},
		{"version", []string{"version"}, 0, []string{"sluice-tunnel ", "go1."}, nil, true},
		{"--version", []string{"--version"}, 0, []string{"sluice-tunnel v", "go1."}, nil, true},
		{"version argument", []string{"version", "x"}, 2, nil, []string{`unexpected argument "x"`}, true},
		{"hold argument", []string{"hold", "x"}, 2, nil, []string{`sluice-tunnel hold: unexpected argument "x"`}, true},
		{"help", []string{"help"}, 0, []string{"usage: sluice-tunnel forward|reverse", "Exit status"}, nil, true},
		{"--help", []string{"--help"}, 0, []string{"usage: sluice-tunnel forward|reverse"}, nil, true},
		{"forward help", []string{"forward", "-h"}, 0, []string{"usage: sluice-tunnel forward", "-ports P[,P...]", "-target string", "-login string"}, nil, true},
		{"reverse help", []string{"reverse", "--help"}, 0, []string{"usage: sluice-tunnel reverse", "-socket-dir string", "-forward LISTENPORT=HOST:PORT"}, nil, true},
		{"usage error", []string{"forward", "--ports=80"}, 2, nil, []string{"sluice-tunnel forward: --login is required", "run 'sluice-tunnel forward -h'"}, true},
		{"bad value", append([]string{"reverse", "--forward=6379"}, files...), 2, nil, []string{`sluice-tunnel reverse: invalid value "6379" for flag -forward`}, true},
		{"several usage errors", []string{"forward", "--ports=80", "--login=x"}, 2, nil, []string{"sluice-tunnel forward: --user is required\n", "sluice-tunnel forward: --node-file is required\n"}, true},
		{"configuration error", append(append([]string{"forward", "--ports=80"}, files...), "--key=/nonexistent/key"), 2, nil, []string{"sluice-tunnel forward: --key: ssh key:"}, true},
		{"file error", append(append([]string{"forward", "--ports=80"}, files...), "--node-file=/nonexistent/node"), 2, nil, []string{"sluice-tunnel forward: --node-file:"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit status %d; want %d (stderr %q)", code, tc.code, stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout %q; want it to contain %q", stdout, w)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q; want it to contain %q", stderr, w)
				}
			}
			if tc.quietOther && len(tc.stdout) > 0 && stderr != "" {
				t.Errorf("stderr %q; want nothing", stderr)
			}
			if tc.quietOther && len(tc.stderr) > 0 && stdout != "" {
				t.Errorf("stdout %q; want nothing", stdout)
			}
		})
	}
}

// holdPort listens on 127.0.0.1:0 for the test and returns the port. The
// same port on another loopback address (127.0.0.2, ...) is then free for
// the code under test: nothing else may take it there.
func holdPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func TestCLIPortTaken(t *testing.T) {
	f := writeSiteFiles(t)
	port := holdPort(t)
	code, _, stderr := runCLI(t, "forward", "--login=127.0.0.1:2222", "--user=alice", "--key="+f.key,
		"--login-known-hosts="+f.loginHosts, "--node-known-hosts="+f.nodeHosts, "--node-file="+f.node,
		"--listen=127.0.0.1", "--ports="+strconv.Itoa(port))
	if code != exitFailed {
		t.Errorf("exit status %d; want %d", code, exitFailed)
	}
	line := lastLogLine(t, stderr)
	if line["level"] != "ERROR" || line["msg"] != "tunnel failed to start" || !strings.Contains(line["error"].(string), "listen on port "+strconv.Itoa(port)) {
		t.Errorf("last log line %v; want the listen error", line)
	}
}

func TestCLIMetricsAddressTaken(t *testing.T) {
	f := writeSiteFiles(t)
	port := holdPort(t)
	code, _, stderr := runCLI(t, "reverse", "--login=127.0.0.1:2222", "--user=alice", "--key="+f.key,
		"--login-known-hosts="+f.loginHosts, "--node-known-hosts="+f.nodeHosts, "--node-file="+f.node,
		"--socket-dir=/tmp/sluice-sock/x", "--forward=6379=127.0.0.1:6379", "--metrics=127.0.0.1:"+strconv.Itoa(port))
	if code != exitFailed {
		t.Errorf("exit status %d; want %d", code, exitFailed)
	}
	if line := lastLogLine(t, stderr); line["msg"] != "tunnel failed to start" || !strings.Contains(line["error"].(string), "metrics:") {
		t.Errorf("last log line %v; want the metrics listen error", line)
	}
}

// TestCLIForwardServes runs a forward with no node known yet: it serves its
// port (refusing clients) and its metrics, and stops with status 0 when its
// context ends.
func TestCLIForwardServes(t *testing.T) {
	f := writeSiteFiles(t)
	write(t, f.node, "", 0o644)
	port := holdPort(t)
	mport := holdPort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli(ctx, []string{"forward", "--login=127.0.0.1:2222", "--user=alice", "--key=" + f.key,
			"--login-known-hosts=" + f.loginHosts, "--node-known-hosts=" + f.nodeHosts, "--node-file=" + f.node,
			"--listen=127.0.0.2", "--ports=" + strconv.Itoa(port), "--metrics=127.0.0.3:" + strconv.Itoa(mport)}, io.Discard, &stderr)
	}()
	base := "http://127.0.0.3:" + strconv.Itoa(mport)
	waitFor(t, 5*time.Second, "/healthz answering and the forward listening", func() bool {
		body, code := get(base + "/healthz")
		return code == http.StatusOK && body == "ok\n" && strings.Contains(stderr.String(), `"msg":"forward listening"`)
	})

	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("client with no node known read %d bytes, %v; want EOF", n, err)
	}
	c.Close()

	body, code := get(base + "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: status %d", code)
	}
	for _, want := range []string{
		`sluice_tunnel_up{mode="forward"} 0`,
		`sluice_tunnel_refused_total{mode="forward",reason="no_node"} 1`,
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if _, code := get(base + "/"); code != http.StatusNotFound {
		t.Errorf("/: status %d; want 404", code)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit status %d; want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the forward did not stop within 10s of its context ending")
	}
	logs := stderr.String()
	sc := bufio.NewScanner(strings.NewReader(logs))
	var msgs []string
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		if line["component"] != "sluice-tunnel" || line["mode"] != "forward" {
			t.Errorf("log line %q lacks component and mode", sc.Text())
		}
		msgs = append(msgs, line["msg"].(string))
	}
	for _, want := range []string{"tunnel starting", "metrics listening", "tunnel stopped"} {
		if !contains(msgs, want) {
			t.Errorf("logs lack %q: %q", want, msgs)
		}
	}
	if _, err := net.Dial("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(port))); err == nil {
		t.Error("the forward still listens after stopping")
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func get(url string) (string, int) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body), resp.StatusCode
}

func lastLogLine(t *testing.T, logs string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	var line map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil {
		t.Fatalf("last log line %q is not JSON: %v", lines[len(lines)-1], err)
	}
	return line
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHoldUntilStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- cli(ctx, []string{"hold"}, io.Discard, io.Discard) }()
	select {
	case code := <-done:
		t.Fatalf("hold returned %d before it was stopped", code)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("hold: exit status %d after the stop; want 0", code)
	}
}
