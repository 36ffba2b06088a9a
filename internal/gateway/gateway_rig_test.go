//go:build rig

package gateway_test

import (
	"bufio"
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
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

	"github.com/sluice-hpc/sluice/internal/gateway"
	"github.com/sluice-hpc/sluice/internal/gateway/gatewaytest"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/types"
)

const (
	loginNetns = "sluice-login"
	nodeNetns  = "sluice-node"
)

// rigPod is one offloaded pod of the test: its grant, a server on its
// node's loopback, and what its reverse endpoint answers.
type rigPod struct {
	token string
	grant *gateway.Grant
	fwd   *tunnel.Forward
	local string // the Forward's listener
}

// TestGatewayRig carries the forward and reverse tunnels of several pods
// through one gateway, as their shadows do, and checks that the login
// node's sshd and the compute node's each see one connection for all of
// them; that each pod's sockets reach its own shadow; and that a socket
// directory replaced on the node (a requeue) brings the pod's reverse
// tunnel back through a new connection; and that the node connection is
// closed once no shadow uses it.
func TestGatewayRig(t *testing.T) {
	r := testrig.Load(t)
	const pods = 3
	var dials atomic.Int32
	site := gatewaytest.RigSite(t, r, func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	})
	site.Idle = time.Second

	loginBefore := established(t, loginNetns)
	nodeBefore := established(t, nodeNetns)

	auth := gatewaytest.Grants{}
	ps := make([]*rigPod, pods)
	for i := range ps {
		p := &rigPod{token: "tok-" + randHex(8)}
		p.grant = &gateway.Grant{
			Pod:          gateway.PodRef{Namespace: "ns", Name: fmt.Sprintf("pod-%d", i), UID: types.UID(randHex(8))},
			Node:         r.Get(t, "RIG_NODE_NAME"),
			SocketDir:    socketDir(t, r),
			ForwardPorts: []int32{int32(nodeEcho(t, r))},
			SocketNames:  []string{"rev-6379.sock"},
		}
		auth[p.token] = p.grant
		ps[i] = p
	}
	gw := gatewaytest.Serve(t, site, auth)

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	nodeFile := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(nodeFile, []byte(r.Get(t, "RIG_NODE_NAME")), 0o644); err != nil {
		t.Fatal(err)
	}
	ups := make([]chan bool, pods)
	for i, p := range ps {
		hop := &tunnel.Hop{
			LoginAddr:     gw.Addr,
			LoginHostKeys: ssh.FixedHostKey(gw.HostKey),
			Gateway:       true,
			Token:         func() (string, error) { return p.token, nil },
			Timeout:       10 * time.Second,
		}
		lns := make(chan net.Listener, 1)
		p.fwd = &tunnel.Forward{
			Hop: hop, Target: tunnel.TargetNode, Ports: []int{int(p.grant.ForwardPorts[0])}, NodeFile: nodeFile,
			Listener: func(int) (net.Listener, error) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err == nil {
					lns <- ln
				}
				return ln, err
			},
			BackoffMin: 100 * time.Millisecond, BackoffMax: time.Second,
		}
		ups[i] = make(chan bool, 16)
		rev := &tunnel.Reverse{
			Hop: hop, NodeFile: nodeFile, SocketDir: p.grant.SocketDir,
			Endpoints:  []tunnel.Endpoint{{ListenPort: 6379, Host: "127.0.0.1", Port: clusterEcho(t, p.grant.Pod.Name)}},
			OnState:    func(up bool) { ups[i] <- up },
			BackoffMin: 100 * time.Millisecond, BackoffMax: time.Second,
		}
		wg.Go(func() { p.fwd.Run(ctx) })
		wg.Go(func() { rev.Run(ctx) })
		select {
		case ln := <-lns:
			p.local = ln.Addr().String()
		case <-time.After(10 * time.Second):
			t.Fatal("the forward did not listen")
		}
	}
	for i := range ps {
		waitUp(t, ups[i], true)
	}

	for _, p := range ps {
		if got := viaForward(t, p.local, "hello "+p.grant.Pod.Name); got != "hello "+p.grant.Pod.Name {
			t.Errorf("forward of %s: got %q", p.grant.Pod.Name, got)
		}
		sock := filepath.Join(p.grant.SocketDir, "rev-6379.sock")
		if got := viaSocket(t, r, sock, "ping"); got != p.grant.Pod.Name+" ping" {
			t.Errorf("reverse of %s: got %q, want its own endpoint's answer", p.grant.Pod.Name, got)
		}
	}

	if n := dials.Load(); n != 1 {
		t.Errorf("%d connections made to the login node for %d pods; want 1", n, pods)
	}
	if d := established(t, loginNetns) - loginBefore; d != 1 {
		t.Errorf("the login sshd holds %d more connections with %d pods' tunnels up; want 1", d, pods)
	}
	if d := established(t, nodeNetns) - nodeBefore; d != 1 {
		t.Errorf("the node sshd holds %d more connections with %d pods' tunnels up; want 1", d, pods)
	}

	// A requeue replaces the socket directory: the holder ends, the
	// gateway closes the shadow's connection, and the shadow comes back.
	p := ps[0]
	if err := os.RemoveAll(p.grant.SocketDir); err != nil {
		t.Fatal(err)
	}
	waitUp(t, ups[0], false)
	waitUp(t, ups[0], true)
	if got := viaSocket(t, r, filepath.Join(p.grant.SocketDir, "rev-6379.sock"), "again"); got != p.grant.Pod.Name+" again" {
		t.Errorf("reverse of %s after its directory was replaced: got %q", p.grant.Pod.Name, got)
	}
	// The others were not touched.
	if got := viaSocket(t, r, filepath.Join(ps[1].grant.SocketDir, "rev-6379.sock"), "still"); got != ps[1].grant.Pod.Name+" still" {
		t.Errorf("reverse of %s: got %q", ps[1].grant.Pod.Name, got)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d connections made to the login node after a requeue; want 1", n)
	}

	// Once no shadow uses it, the node connection is closed after Idle.
	cancel()
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for established(t, nodeNetns) > nodeBefore {
		if time.Now().After(deadline) {
			t.Fatalf("the node connection is still open 10s after the last shadow left (Idle %v)", site.Idle)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitUp(t *testing.T, ups <-chan bool, want bool) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case up := <-ups:
			if up == want {
				return
			}
		case <-timeout:
			t.Fatalf("reverse tunnel up=%v: not within 20s", want)
		}
	}
}

// established counts the TCP connections established to port 22 (the
// sshd) in netns.
func established(t *testing.T, netns string) int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", netns, "ss", "-Htn", "state", "established", "sport = :22").Output()
	if err != nil {
		t.Fatalf("ss in %s: %v", netns, err)
	}
	return len(strings.Fields(strings.TrimSpace(string(out)))) / 4
}

// socketDir is a fresh socket directory path under the rig's root; it is
// removed when the test ends.
func socketDir(t *testing.T, r *testrig.Rig) string {
	t.Helper()
	dir := filepath.Join(r.Get(t, "RIG_SOCKET_DIR_ROOT"), "test-gw-"+randHex(8))
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func randHex(n int) string {
	b := make([]byte, n)
	cryptorand.Read(b)
	return hex.EncodeToString(b)
}

// asJobUser is the command that runs args as the job's user in the node's
// network namespace.
func asJobUser(r *testrig.Rig, t *testing.T, args ...string) *exec.Cmd {
	user := r.Get(t, "RIG_USER")
	return exec.Command("ip", append([]string{"netns", "exec", nodeNetns, "setpriv", "--reuid", user, "--regid", user, "--init-groups"}, args...)...)
}

// nodeEcho starts a TCP echo server as the job's user on the node's
// loopback and returns its port; it is killed when the test ends.
func nodeEcho(t *testing.T, r *testrig.Rig) int {
	t.Helper()
	for range 20 {
		port := 20000 + rand.N(20000)
		cmd := asJobUser(r, t, "socat", fmt.Sprintf("TCP-LISTEN:%d,bind=127.0.0.1,fork,reuseaddr", port), "EXEC:cat")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		for range 100 {
			out, _ := exec.Command("ip", "netns", "exec", nodeNetns, "ss", "-Hltn", "sport = :"+strconv.Itoa(port)).Output()
			if len(out) > 0 {
				t.Cleanup(func() {
					syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					<-exited
				})
				return port
			}
			select {
			case <-exited:
			case <-time.After(20 * time.Millisecond):
				continue
			}
			break // the port was taken: another
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	t.Fatal("no echo server on the node")
	return 0
}

// clusterEcho serves, in the test's own network (the cluster's side of a
// reverse tunnel), a server that answers each line with name and the line.
func clusterEcho(t *testing.T, name string) int {
	t.Helper()
	addr := sshxtest.ServeLoopback(t, func(c net.Conn) {
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			fmt.Fprintf(c, "%s %s\n", name, sc.Text())
		}
	})
	_, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	return n
}

// viaForward sends a line through the forward's listener and reads the
// line that comes back.
func viaForward(t *testing.T, addr, msg string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintln(c, msg)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Errorf("forward to %s: %v", addr, err)
	}
	return strings.TrimSpace(line)
}

// viaSocket sends a line through the socket on the node, as the job's
// user, and returns the line that comes back.
func viaSocket(t *testing.T, r *testrig.Rig, sock, msg string) string {
	t.Helper()
	cmd := asJobUser(r, t, "socat", "-t", "5", "-", "UNIX-CONNECT:"+sock)
	cmd.Stdin = strings.NewReader(msg + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("socat to %s: %v", sock, err)
	}
	return strings.TrimSpace(string(out))
}
