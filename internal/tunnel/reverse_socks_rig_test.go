//go:build rig

package tunnel

import (
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"log/slog"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestReverseSocksRig: the SOCKS proxy runs in a session of its own on the
// node's 127.0.0.1, as alice: a port bob holds keeps it down but not the
// forwards; once free, the job reaches a destination it did not list
// through it, and loopback destinations are refused; a forward's socket
// removed ends the forwards' session, not the proxy's.
func TestReverseSocksRig(t *testing.T) {
	r := testrig.Load(t)
	redisHost, redisPort, err := net.SplitHostPort(r.Get(t, "RIG_REDIS_ADDR"))
	if err != nil {
		t.Fatal(err)
	}
	redisPortN, _ := strconv.Atoi(redisPort)
	port := freeNodePort(t)
	socksAddr := "127.0.0.1:" + strconv.Itoa(port)

	// bob holds the proxy's port on the node before the tunnel comes.
	bob := exec.Command("ip", "netns", "exec", nodeNetns, "runuser", "-u", r.Get(t, "RIG_OTHER_USER"), "--",
		"socat", "-u", "TCP-LISTEN:"+strconv.Itoa(port)+",bind=127.0.0.1,reuseaddr,fork", "/dev/null")
	bob.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // runuser forks socat: kill the group
	if err := bob.Start(); err != nil {
		t.Fatal(err)
	}
	bobDone := make(chan struct{})
	go func() { bob.Wait(); close(bobDone) }()
	killBob := func() {
		syscall.Kill(-bob.Process.Pid, syscall.SIGKILL)
		<-bobDone
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(killBob) })
	waitFor(t, 5*time.Second, "bob listening", func() bool { return nodeListening(t, port) })

	redisOther := forwardFromOtherAddr(t, r.Get(t, "RIG_REDIS_ADDR"))
	states := &stateRecorder{}
	rec := newLogRecorder(t)
	rv := &Reverse{
		Hop:       rigHop(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), &loginDialer{}),
		NodeFile:  nodeFile(t, r.Get(t, "RIG_NODE_NAME")),
		SocketDir: rigSocketDir(t, r),
		Endpoints: []Endpoint{{ListenPort: 6379, Host: redisHost, Port: redisPortN}},
		SocksPort: port,
		// redis.test is a Service name the job did not list: a name for
		// Redis, reached at an address of this machine other than
		// loopback (which the proxy refuses).
		Resolver:          fakeDNS(t, map[string][]netip.Addr{"redis.test": {redisOther.Addr()}}),
		Log:               slog.New(rec),
		Metrics:           NewMetrics(nil, "reverse"),
		Status:            NewStatus("reverse"),
		BackoffMin:        50 * time.Millisecond,
		BackoffMax:        500 * time.Millisecond,
		PollInterval:      20 * time.Millisecond,
		KeepAliveInterval: 2 * time.Second,
		KeepAliveTimeout:  2 * time.Second,
		OnState:           states.record,
	}
	// The test's tunnel runs on the rig's host, every address of which is
	// its own: none is the pod's here but loopback.
	rv.socksGuard.localAddrs = func() ([]net.Addr, error) { return nil, nil }
	startReverse(t, rv)
	alice := nodeClient(t, r, r.Get(t, "RIG_USER"), r.Get(t, "RIG_KEY"))
	redisSock := filepath.Join(rv.SocketDir, "rev-6379.sock")

	waitFor(t, 20*time.Second, "forwards up", func() bool { return states.ups() == 1 })
	waitFor(t, 10*time.Second, "the proxy refused its port", func() bool {
		return countWith(rec, "SOCKS proxy connect failed", "error", "remote forward "+socksAddr) >= 1
	})
	if got, err := viaSocket(alice, redisSock, "PING\r\n"); err != nil || !strings.Contains(got, "+PONG") {
		t.Errorf("redis through its forward while bob holds the proxy's port: %q, %v", got, err)
	}

	once.Do(killBob)
	waitFor(t, 5*time.Second, "bob's port free", func() bool { return !nodeListening(t, port) })
	waitFor(t, 10*time.Second, "SOCKS proxy up", func() bool { return countWith(rec, "SOCKS proxy up: open to every user of the node", "", "") == 1 })
	out, err := exec.Command("ip", "netns", "exec", nodeNetns, "ss", "-Hltne", "sport = :"+strconv.Itoa(port)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if l := string(out); !strings.Contains(l, socksAddr) || !strings.Contains(l, "uid:"+r.Get(t, "RIG_USER_UID")) {
		t.Errorf("listener on the node: %q; want %s owned by uid %s", l, socksAddr, r.Get(t, "RIG_USER_UID"))
	}

	probe := filepath.Join(r.Get(t, "RIG_IMAGE"), "usr", "local", "bin", "sluice-probe")
	if _, err := os.Stat(probe); err != nil {
		t.Fatalf("the rig's probe: %v (run hack/rig/rig.sh up)", err)
	}
	got, err := onNode(alice, "", probe, "redis", "--addr", "redis.test:"+strconv.Itoa(int(redisOther.Port())), "--socks", socksAddr)
	if err != nil || !strings.Contains(got, "+PONG") {
		t.Errorf("redis.test through the proxy: %q, %v; want +PONG", got, err)
	}
	got, _ = onNode(alice, "", probe, "redis", "--addr", "127.0.0.1:"+redisPort, "--socks", socksAddr)
	if !strings.Contains(got, "failed:") || !strings.Contains(got, "not allowed") {
		t.Errorf("a loopback destination through the proxy: %q; want refused, not allowed", got)
	}

	// A forward's socket removed ends the forwards' session; the proxy's
	// session holds on the directory alone and stays.
	if err := os.Remove(redisSock); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "forwards back", func() bool { return states.ups() == 2 })
	if n := countWith(rec, "SOCKS proxy down", "", ""); n != 0 {
		t.Errorf("the proxy went down %d times with a forward's socket; want 0", n)
	}
	if got, err := onNode(alice, "", probe, "redis", "--addr", "redis.test:"+strconv.Itoa(int(redisOther.Port())), "--socks", socksAddr); err != nil || !strings.Contains(got, "+PONG") {
		t.Errorf("through the proxy after the forwards came back: %q, %v", got, err)
	}
	if st := rv.Status.Snapshot(); st.State != StateUp || st.Ups != 2 {
		t.Errorf("status %+v; want up twice, the forwards' session", st)
	}
}

// forwardFromOtherAddr listens on an address of this machine other than
// loopback and carries each connection to addr; it returns where it listens.
func forwardFromOtherAddr(t *testing.T, addr string) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", netip.AddrPortFrom(nonLoopbackAddr(t), 0).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				d, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer d.Close()
				go func() { io.Copy(d, c); d.(*net.TCPConn).CloseWrite() }()
				io.Copy(c, d)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).AddrPort()
}
