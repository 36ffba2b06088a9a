//go:build rig

package gateway_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/gateway"
	"github.com/sluice-hpc/sluice/internal/gateway/gatewaytest"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/types"
)

// TestGatewaySocksRig: a pod's SOCKS proxy through the gateway. The
// shadow's SOCKS session asks the gateway for the pod's port; the gateway
// has the node's sshd listen on its 127.0.0.1 (as the site's user) and
// carries each connection back to the shadow, which serves SOCKS5: a
// client on the node reaches, through it, a server the cluster side
// reaches and the node does not. A port the grant does not name is
// refused; the socket directory replaced (a requeue) brings the proxy back
// through a new connection.
func TestGatewaySocksRig(t *testing.T) {
	r := testrig.Load(t)
	port := freeNodePort(t)
	g := &gateway.Grant{
		Pod:       gateway.PodRef{Namespace: "ns", Name: "socks", UID: types.UID(randHex(8))},
		Node:      r.Get(t, "RIG_NODE_NAME"),
		SocketDir: socketDir(t, r),
		SocksPort: int32(port),
	}
	wrong := *g
	wrong.SocksPort = int32(port + 1)
	gw := gatewaytest.Serve(t, gatewaytest.RigSite(t, r, nil), gatewaytest.Grants{"tok": g, "tok-wrong": &wrong})

	// A server in the login node's network: the rig's host (the cluster
	// side) reaches it, and the SOCKS proxy must dial it from there.
	target := loginHTTP(t, r, "socks-ok")

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
	})
	nodeFile := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(nodeFile, []byte(g.Node), 0o644); err != nil {
		t.Fatal(err)
	}
	ups := make(chan bool, 16)
	rev := &tunnel.Reverse{
		Hop: &tunnel.Hop{
			LoginAddr: gw.Addr, LoginHostKeys: ssh.FixedHostKey(gw.HostKey), Gateway: true,
			Token: func() (string, error) { return "tok", nil }, Timeout: 10 * time.Second,
		},
		NodeFile: nodeFile, SocketDir: g.SocketDir, SocksPort: port,
		OnState:    func(up bool) { ups <- up },
		BackoffMin: 100 * time.Millisecond, BackoffMax: time.Second,
	}
	go func() {
		defer close(done)
		rev.Run(ctx)
	}()
	waitUp(t, ups, true)

	out, err := exec.Command("ip", "netns", "exec", nodeNetns, "ss", "-Hltne", "sport = :"+strconv.Itoa(port)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if l := string(out); !strings.Contains(l, "127.0.0.1:"+strconv.Itoa(port)) || !strings.Contains(l, "uid:"+r.Get(t, "RIG_USER_UID")) {
		t.Errorf("the proxy's listener on the node: %q; want 127.0.0.1:%d of uid %s", l, port, r.Get(t, "RIG_USER_UID"))
	}
	if got := viaSocks(t, r, port, target); got != "socks-ok" {
		t.Errorf("%s through the SOCKS proxy from the node: %q; want socks-ok", target, got)
	}

	// Another port than the grant's is refused, on a connection of its own.
	c, err := ssh.Dial("tcp", gw.Addr, &ssh.ClientConfig{User: tunnel.GatewayUser, Auth: []ssh.AuthMethod{ssh.Password("tok-wrong")},
		HostKeyCallback: ssh.FixedHostKey(gw.HostKey), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ln, err := c.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+2)); err == nil {
		ln.Close()
		t.Error("a SOCKS port the grant does not name was forwarded")
	}

	// A requeue: the directory replaced ends the holder; the proxy comes
	// back.
	if err := os.RemoveAll(g.SocketDir); err != nil {
		t.Fatal(err)
	}
	waitUp(t, ups, false)
	waitUp(t, ups, true)
	if got := viaSocks(t, r, port, target); got != "socks-ok" {
		t.Errorf("%s through the SOCKS proxy after a requeue: %q; want socks-ok", target, got)
	}
}

// freeNodePort is a port nothing listens on on the node's loopback.
func freeNodePort(t *testing.T) int {
	t.Helper()
	for range 50 {
		port := 20000 + rand.N(20000)
		out, err := exec.Command("ip", "netns", "exec", nodeNetns, "ss", "-Hltn", fmt.Sprintf("sport = :%d or sport = :%d", port, port+1)).Output()
		if err == nil && len(out) == 0 {
			return port
		}
	}
	t.Fatal("no free port on the node")
	return 0
}

// loginHTTP serves an HTTP answer of body on the login node's address and
// returns its address.
func loginHTTP(t *testing.T, r *testrig.Rig, body string) string {
	t.Helper()
	for range 20 {
		addr := net.JoinHostPort(r.Get(t, "RIG_LOGIN_ADDR"), strconv.Itoa(20000+rand.N(20000)))
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command("ip", "netns", "exec", loginNetns, "socat",
			"TCP-LISTEN:"+port+",bind="+r.Get(t, "RIG_LOGIN_ADDR")+",fork,reuseaddr",
			"SYSTEM:printf 'HTTP/1.0 200 OK\\r\\nContent-Length: "+strconv.Itoa(len(body))+"\\r\\n\\r\\n"+body+"'")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		for range 100 {
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Cleanup(func() {
					syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					<-exited
				})
				return addr
			}
			select {
			case <-exited:
			case <-time.After(20 * time.Millisecond):
				continue
			}
			break
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	t.Fatal("no server on the login node")
	return ""
}

// viaSocks fetches http://target/ with curl as the job's user on the node,
// through the SOCKS proxy on its 127.0.0.1:port, and returns the body.
func viaSocks(t *testing.T, r *testrig.Rig, port int, target string) string {
	t.Helper()
	out, err := asJobUser(r, t, "curl", "-sS", "--max-time", "10", "--socks5", "127.0.0.1:"+strconv.Itoa(port), "http://"+target+"/").CombinedOutput()
	if err != nil {
		t.Logf("curl through the proxy: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}
