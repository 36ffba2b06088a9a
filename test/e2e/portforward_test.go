//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// newStreamEnv is an env whose sluice-vk pins the node's host keys, so
// that kubectl port-forward reaches the job's node.
func newStreamEnv(t *testing.T) *env {
	t.Helper()
	return newStreamEnvOn(t, testrig.Load(t))
}

// newStreamEnvOn is newStreamEnv against site, one of the rig's sites.
func newStreamEnvOn(t *testing.T, site *testrig.Rig) *env {
	t.Helper()
	return newEnvOn(t, site, "    NodeKnownHostsFile: "+site.Get(t, "RIG_NODE_KNOWN_HOSTS")+"\n", nil)
}

// restConfig is the rig's admin configuration.
func (e *env) restConfig() *rest.Config {
	e.t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		e.t.Fatalf("kubeconfig: %v", err)
	}
	return rc
}

// portForward forwards a local port of 127.0.0.1 to port of pod, over
// websocket (as kubectl does first) or SPDY, and returns the local address
// and the function that stops forwarding (also called at cleanup).
func (e *env) portForward(rc *rest.Config, pod string, port int, websocket bool) (string, func()) {
	e.t.Helper()
	u := e.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(e.ns).Name(pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(rc)
	if err != nil {
		e.t.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	if websocket {
		if dialer, err = portforward.NewSPDYOverWebsocketDialer(u, rc); err != nil {
			e.t.Fatal(err)
		}
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	var errOut strings.Builder
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stop, ready, io.Discard, &errOut)
	if err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	var once sync.Once
	end := func() { once.Do(func() { close(stop); <-done }) }
	e.t.Cleanup(end)
	select {
	case <-ready:
	case err := <-done:
		e.t.Fatalf("port-forward %s:%d: %v (%s)", pod, port, err, errOut.String())
	case <-time.After(30 * time.Second):
		e.t.Fatalf("port-forward %s:%d not ready within 30s", pod, port)
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		e.t.Fatalf("port-forward ports: %v, %v", ports, err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))), end
}

// TestPortForwardToTheJobsLoopback: kubectl port-forward (client-go's, over
// websocket and over SPDY) reaches a server the job runs on the node's
// 127.0.0.1: 16 requests at once, 64 MiB intact, and a port nobody listens
// on ends the connection with an error instead of a hang.
func TestPortForwardToTheJobsLoopback(t *testing.T) {
	e := newStreamEnv(t)
	e.waitNoNodeSessions()
	port := e.httpdPod("pf")
	rc := e.restConfig()

	for _, ws := range []bool{true, false} {
		t.Run(map[bool]string{true: "websocket", false: "spdy"}[ws], func(t *testing.T) {
			addr, end := e.forwardToServer(rc, "pf", port, ws)
			getConcurrently(t, addr, 16)
			downloadIntact(t, addr)
			// Forwarding stopped, the node keeps no session of it.
			user := e.rig.Get(t, "RIG_USER")
			// A stream open mid-transfer holds the node's session.
			open := openTransfer(t, addr)
			if pids, err := sessionPids(nodeNetns, user); err != nil || len(pids) == 0 {
				t.Errorf("got sshd sessions %v (%v) on the node mid-transfer; want the port-forward's", pids, err)
			}
			open.Close()
			end()
			e.waitFor("no sshd session of the port-forward on the node", 20*time.Second, func() bool {
				pids, err := sessionPids(nodeNetns, user)
				return err == nil && len(pids) == 0
			})
		})
	}

	t.Run("closed port", func(t *testing.T) {
		addr, _ := e.portForward(rc, "pf", port+1, true)
		closedPortEnds(t, addr)
	})
}

// forwardToServer forwards to the httpdPod's server, once it answers: a
// first connection before httpd listens ends the session (client-go stops
// forwarding on an error), and forwarding starts again.
func (e *env) forwardToServer(rc *rest.Config, pod string, port int, ws bool) (string, func()) {
	e.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		addr, end := e.portForward(rc, pod, port, ws)
		body, err := httpGet(addr, "/hello")
		if err == nil && strings.Contains(body, "served-by-the-job") {
			return addr, end
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the job's server not reached through port-forward: %v", err)
		}
		time.Sleep(time.Second)
	}
}

// getConcurrently asks the httpdPod's server at addr for /hello n times at
// once.
func getConcurrently(t *testing.T, addr string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, err := httpGet(addr, "/hello")
			if err == nil && !strings.Contains(body, "served-by-the-job") {
				err = fmt.Errorf("body %q", body)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("one of %d concurrent requests: %v", n, err)
		}
	}
}

// openTransfer starts a download of the httpdPod's /big from addr and
// reads its first MiB: a stream open mid-transfer, for 20s at most.
func openTransfer(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /big HTTP/1.0\r\n\r\n")
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 1<<20)); err != nil {
		c.Close()
		t.Fatalf("first MiB: %v", err)
	}
	return c
}

// closedPortEnds checks that a connection to addr, forwarded to a port
// nobody listens on, ends without a byte instead of hanging.
func closedPortEnds(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
	start := time.Now()
	n, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a connection to a closed port hung for 20s; want it ended")
	}
	if n != 0 {
		t.Errorf("got %d bytes from a closed port", n)
	}
	t.Logf("closed port: connection ended after %v (%v)", time.Since(start).Round(time.Millisecond), err)
}

// downloadIntact downloads the httpdPod's /big from addr and checks it
// against /big.sum.
func downloadIntact(t *testing.T, addr string) {
	t.Helper()
	sum, err := httpGet(addr, "/big.sum")
	if err != nil {
		t.Fatalf("big.sum: %v", err)
	}
	start := time.Now()
	got, n := download(t, addr, "/big")
	t.Logf("64 MiB through port-forward in %v", time.Since(start).Round(time.Millisecond))
	if n != 64<<20 || !strings.Contains(sum, got) {
		t.Errorf("got %d bytes with sha256 %s; want %d bytes and the job's sum (%q)", n, got, 64<<20, sum)
	}
}

// httpdPod runs pod name, an HTTP server on the node's 127.0.0.1 serving
// /hello (served-by-the-job), /big (64 MiB) and /big.sum, and returns its
// port once the files are ready.
func (e *env) httpdPod(name string) int {
	e.t.Helper()
	port := httpdPort()
	e.create(e.pod(name, httpdScript(port)+"wait\n"))
	e.waitPod(name, "running", 120*time.Second, phaseIs(corev1.PodRunning))
	e.waitFor("the job's files", 60*time.Second, func() bool {
		return slices.Contains(e.logs(name, corev1.PodLogOptions{}), "files-ready")
	})
	return port
}

// waitNoNodeSessions waits until the site account has no sshd session on
// the node: a test that counts them must not count those of the serial
// tests before it, which can outlive their test by a while (a session
// forwarded by a login sshd that the outage test stopped ends only when
// its connection times out).
func (e *env) waitNoNodeSessions() {
	e.t.Helper()
	user := e.rig.Get(e.t, "RIG_USER")
	start := time.Now()
	e.waitFor("no sshd session of the site account left on the node by earlier tests", 2*time.Minute, func() bool {
		pids, err := sessionPids(nodeNetns, user)
		return err == nil && len(pids) == 0
	})
	if d := time.Since(start); d > time.Second {
		e.t.Logf("waited %v for earlier tests' sshd sessions on the node to end", d.Round(100*time.Millisecond))
	}
}

// httpdPort is a port for an httpdScript: one of 20,000, drawn by the
// clock, so that two tests' jobs on a node hardly ever pick the same.
func httpdPort() int { return 20000 + int(time.Now().UnixNano()%20000) }

// httpdScript starts a job's script: it writes /hello, /big and /big.sum,
// logs files-ready, and serves them on the node's 127.0.0.1:port in the
// background.
func httpdScript(port int) string {
	return fmt.Sprintf(`mkdir -p /tmp/pf-$$ && cd /tmp/pf-$$ && echo served-by-the-job > hello
head -c 67108864 /dev/urandom > big && sha256sum big > big.sum
echo files-ready
busybox httpd -f -p 127.0.0.1:%d -h /tmp/pf-$$ &
`, port)
}

// download reads path from the HTTP server at addr and returns the sha256
// of the body and its length.
func download(t *testing.T, addr, path string) (string, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}
