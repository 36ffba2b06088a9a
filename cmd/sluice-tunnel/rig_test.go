//go:build rig

package main

import (
	"crypto/ed25519"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// TestForwardRig runs `sluice-tunnel forward` against the rig: a client on
// the cluster side reaches an echo server listening on the compute node's
// loopback only, and the metrics show the connection and the tunnel up.
func TestForwardRig(t *testing.T) {
	r := testrig.Load(t)
	port := portPair(t)
	mport := holdPort(t)
	startNodeEcho(t, r, port)
	nodeFile := writeNodeFile(t, r.Get(t, "RIG_NODE_NAME"))

	p := startTunnel(t, "forward", append(siteArgs(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), nodeFile),
		"--target=node", "--ports="+strconv.Itoa(port), "--listen=127.0.0.2",
		"--metrics=127.0.0.2:"+strconv.Itoa(mport))...)
	metrics := "http://127.0.0.2:" + strconv.Itoa(mport) + "/metrics"
	waitFor(t, 10*time.Second, "/healthz and the forward listening", func() bool {
		_, code := get("http://127.0.0.2:" + strconv.Itoa(mport) + "/healthz")
		return code == 200 && p.count("forward listening", nil) == 1
	})

	addr := net.JoinHostPort("127.0.0.2", strconv.Itoa(port))
	echo(t, addr, []byte("hello through the node\n"))
	echo(t, addr, randomBytes(256<<10))

	if v := metric(t, metrics, `sluice_tunnel_connections_total\{mode="forward",port="`+strconv.Itoa(port)+`"\}`); v != 2 {
		t.Errorf("sluice_tunnel_connections_total = %v; want 2", v)
	}
	if v := metric(t, metrics, `sluice_tunnel_up\{mode="forward"\}`); v != 1 {
		t.Errorf("sluice_tunnel_up = %v; want 1", v)
	}
	if n := p.count("ssh connected", map[string]string{"hop": "node", "node": r.Get(t, "RIG_NODE_NAME")}); n != 1 {
		t.Errorf("connections to the node's sshd = %d; want 1", n)
	}
	if errs := p.linesAt("ERROR"); len(errs) > 0 {
		t.Errorf("error lines logged: %v", errs)
	}
	p.stop()
}

// TestForwardWrongNodeKeyRig pins another host key for the compute node: a
// client gets nothing through, the mismatch is logged once, naming the
// node, and the process keeps running until SIGTERM.
func TestForwardWrongNodeKeyRig(t *testing.T) {
	r := testrig.Load(t)
	port := portPair(t)
	mport := holdPort(t)
	startNodeEcho(t, r, port)
	node := r.Get(t, "RIG_NODE_NAME")

	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{node, r.Get(t, "RIG_NODE_ADDR")}, key) + "\n"
	if err := os.WriteFile(wrong, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}

	p := startTunnel(t, "forward", append(siteArgs(t, r, wrong, writeNodeFile(t, node)),
		"--ports="+strconv.Itoa(port), "--listen=127.0.0.2", "--metrics=127.0.0.2:"+strconv.Itoa(mport))...)
	metrics := "http://127.0.0.2:" + strconv.Itoa(mport) + "/metrics"
	addr := net.JoinHostPort("127.0.0.2", strconv.Itoa(port))
	waitFor(t, 10*time.Second, "/healthz and the forward listening", func() bool {
		_, code := get("http://127.0.0.2:" + strconv.Itoa(mport) + "/healthz")
		return code == 200 && p.count("forward listening", nil) == 1
	})

	for range 3 {
		expectNothing(t, addr)
	}
	waitFor(t, 5*time.Second, "the host key error logged", func() bool { return len(p.linesAt("ERROR")) > 0 })
	time.Sleep(time.Second) // room for a wrong second line
	errs := p.linesAt("ERROR")
	if len(errs) != 1 {
		t.Fatalf("error lines = %d; want 1: %v", len(errs), errs)
	}
	e := errs[0]
	if !strings.Contains(e["msg"].(string), "host key") || e["node"] != node ||
		!strings.Contains(e["host"].(string), node) || !strings.Contains(e["error"].(string), "host key mismatch") {
		t.Errorf("error line %v; want a host key mismatch naming %s", e, node)
	}
	if n := p.count("ssh connected", map[string]string{"hop": "node"}); n != 0 {
		t.Errorf("connected to the node %d times with a wrong host key", n)
	}
	if v := metric(t, metrics, `sluice_tunnel_up\{mode="forward"\}`); v != 0 {
		t.Errorf("sluice_tunnel_up = %v; want 0", v)
	}
	if v := metric(t, metrics, `sluice_tunnel_refused_total\{mode="forward",reason="host_key"\}`); v < 1 {
		t.Errorf("sluice_tunnel_refused_total{reason=host_key} = %v; want at least 1", v)
	}
	if v := metric(t, metrics, `sluice_tunnel_connections_total\{mode="forward",port="`+strconv.Itoa(port)+`"\}`); v > 0 {
		t.Errorf("sluice_tunnel_connections_total = %v; want none", v)
	}
	if !p.running() {
		t.Fatal("sluice-tunnel exited on a host key mismatch")
	}
	p.stop()
}

// expectNothing connects to addr, sends a byte and checks that the
// connection is closed with nothing coming back.
func expectNothing(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	c.Write([]byte("x"))
	got, err := io.ReadAll(c)
	if len(got) > 0 {
		t.Fatalf("got %q through a tunnel with a wrong host key", got)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("connection held open instead of refused")
	}
}

// TestReverseRig runs `sluice-tunnel reverse` against the rig: the tunnel
// makes the pod's socket directory and socket, owner-only, and the job user
// on the compute node connects to the socket and reaches an echo server on
// the cluster side.
func TestReverseRig(t *testing.T) {
	r := testrig.Load(t)
	echoAddr := startLocalEcho(t)
	mport := holdPort(t)
	dir := socketDir(t)
	listen := 16379

	p := startTunnel(t, "reverse", append(siteArgs(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), writeNodeFile(t, r.Get(t, "RIG_NODE_NAME"))),
		"--socket-dir="+dir, "--forward="+strconv.Itoa(listen)+"="+echoAddr,
		"--metrics=127.0.0.2:"+strconv.Itoa(mport))...)
	metrics := "http://127.0.0.2:" + strconv.Itoa(mport) + "/metrics"
	sock := filepath.Join(dir, "rev-"+strconv.Itoa(listen)+".sock")
	waitFor(t, 20*time.Second, sock, func() bool {
		fi, err := os.Stat(sock)
		return err == nil && fi.Mode().Type() == os.ModeSocket
	})
	waitFor(t, 10*time.Second, "sluice_tunnel_up 1", func() bool {
		return metric(t, metrics, `sluice_tunnel_up\{mode="reverse"\}`) == 1
	})

	uid, err := strconv.Atoi(r.Get(t, "RIG_USER_UID"))
	if err != nil {
		t.Fatal(err)
	}
	checkOwner(t, dir, uid, 0o700)
	checkOwner(t, sock, uid, 0o600)

	payload := "hello from the job\n" + strings.Repeat("0123456789", 10000)
	if out := throughSocket(t, r, sock, payload); out != payload {
		t.Fatalf("echo through the reverse tunnel gave %d bytes; want the %d sent", len(out), len(payload))
	}
	if v := metric(t, metrics, `sluice_tunnel_connections_total\{mode="reverse",port="`+strconv.Itoa(listen)+`"\}`); v != 1 {
		t.Errorf("sluice_tunnel_connections_total = %v; want 1", v)
	}
	if errs := p.linesAt("ERROR"); len(errs) > 0 {
		t.Errorf("error lines logged: %v", errs)
	}
	p.stop()
}

// socketDir returns a fresh path for a pod's socket directory, in /tmp
// (writable by the job user, like the rig's socket directory root, which
// the test leaves alone). The tunnel makes the directory; it is removed
// when the test ends.
func socketDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("/tmp", "sluice-tunnel-test-"+strconv.FormatUint(rand.Uint64(), 36))
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// checkOwner checks that file belongs to uid and has mode perm.
func checkOwner(t *testing.T, file string, uid int, perm os.FileMode) {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid || fi.Mode().Perm() != perm {
		t.Errorf("%s: owner %d mode %v; want owner %d mode %v", file, st.Uid, fi.Mode().Perm(), uid, perm)
	}
}
