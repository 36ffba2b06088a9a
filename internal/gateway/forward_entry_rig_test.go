//go:build rig

package gateway_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
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
	"github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/types"
)

// TestGatewayForwardEntryRig: a shadow's forward to a pod whose job runs a
// relay goes through the relay's forward entry. bob, another user of the
// node, listens on the node's 127.0.0.1 at the pod's port before the job,
// which listens on its own address: the shadow reaches the job, never bob.
// A port only bob listens on, and one nobody does, are refused with the
// relay's reason.
func TestGatewayForwardEntryRig(t *testing.T) {
	r := testrig.Load(t)
	alice, bob := r.Get(t, "RIG_USER"), r.Get(t, "RIG_OTHER_USER")
	dir := socketDir(t, r)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, testrig.UID(t, alice), -1); err != nil {
		t.Fatal(err)
	}
	addr := netip.AddrFrom4([4]byte{127, byte(16 + rand.IntN(230)), byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
	startOnNode(t, alice, testrig.RelayBinary(t), "--addr", addr.String(), "--dir", dir, "--forward")
	waitRig(t, "relay ready", func() bool {
		_, err := os.Stat(filepath.Join(dir, relay.ReadyFile))
		return err == nil
	})
	none, only := 20000+rand.N(20000), 20000+rand.N(20000)
	serveOnNode(t, bob, "127.0.0.1", only, "SYSTEM:echo bob")
	job := 20000 + rand.N(20000)
	serveOnNode(t, bob, "127.0.0.1", job, "SYSTEM:echo bob")
	serveOnNode(t, alice, addr.String(), job, "EXEC:cat")

	g := &gateway.Grant{
		Pod:          gateway.PodRef{Namespace: "ns", Name: "relayed", UID: types.UID(randHex(8))},
		Node:         r.Get(t, "RIG_NODE_NAME"),
		SocketDir:    dir,
		ForwardPorts: []int32{int32(job), int32(only), int32(none)},
		SocketNames:  []string{"rev-6379.sock"},
		Relayed:      true,
	}
	gw := gatewaytest.Serve(t, gatewaytest.RigSite(t, r, nil), gatewaytest.Grants{"tok-relayed": g})
	c, err := ssh.Dial("tcp", gw.Addr, &ssh.ClientConfig{
		User: tunnel.GatewayUser, Auth: []ssh.AuthMethod{ssh.Password("tok-relayed")},
		HostKeyCallback: ssh.FixedHostKey(gw.HostKey), Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ch, err := c.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(job)))
	if err != nil {
		t.Fatalf("forward to port %d: %v", job, err)
	}
	ch.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintln(ch, "to the job, not to bob")
	line, err := bufio.NewReader(ch).ReadString('\n')
	ch.Close()
	if got := strings.TrimSpace(line); got != "to the job, not to bob" {
		t.Errorf("forward to port %d: got %q (%v); want the job's echo", job, got, err)
	}

	for _, port := range []int{only, none} {
		_, err = c.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		want := fmt.Sprintf("owned by uid %d, not the job's uid %d", testrig.UID(t, bob), testrig.UID(t, alice))
		if port == none {
			want = "nothing listens on"
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("forward to port %d: %v; want refused, saying %q", port, err, want)
		}
	}
}

// serveOnNode serves, as user in the node's network namespace, socat's
// answer on host:port; it is killed when the test ends.
func serveOnNode(t *testing.T, user, host string, port int, answer string) {
	t.Helper()
	startOnNode(t, user, "socat", fmt.Sprintf("TCP-LISTEN:%d,bind=%s,fork,reuseaddr", port, host), answer)
	waitRig(t, "socat listening", func() bool {
		out, _ := exec.Command("ip", "netns", "exec", nodeNetns, "ss", "-Hltn", "src", host, "sport = :"+strconv.Itoa(port)).Output()
		return len(out) > 0
	})
}

// startOnNode starts bin with args as user in the node's network
// namespace; it is killed when the test ends.
func startOnNode(t *testing.T, user, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", nodeNetns, "setpriv", "--reuid", user, "--regid", user, "--init-groups", bin}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
}

func waitRig(t *testing.T, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !done(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
