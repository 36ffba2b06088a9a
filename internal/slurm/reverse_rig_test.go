//go:build rig

package slurm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"os"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	"github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/tunnel"
)

// These tests run reverse-tunnel jobs on the rig: the relay placed over the
// real SSH site, real Slurm jobs under Charliecloud, and the tunnel's side
// played by the test through the checked login → node hop, with a remote
// unix-socket forward to the rig's Redis.
//
//	go test -tags rig -count=1 -run Reverse ./internal/slurm/

// placeRigRelay builds cmd/sluice-relay and places it on the rig's site.
func placeRigRelay(t *testing.T, e *rigEnv) string {
	t.Helper()
	data, err := os.ReadFile(scripttest.BuildRelay(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := e.c.PlaceRelay(ctx, data)
	if err != nil {
		t.Fatalf("PlaceRelay: %v", err)
	}
	return p
}

func TestRigReversePlaceRelay(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		data, err := os.ReadFile(scripttest.BuildRelay(t))
		if err != nil {
			t.Fatal(err)
		}
		cc := &callCounter{Runner: e.c.Site}
		c := &Client{Site: cc, DataRoot: e.c.DataRoot, Logger: slog.New(&testLog{t: t})}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()

		p, err := c.PlaceRelay(ctx, data)
		if err != nil {
			t.Fatalf("PlaceRelay: %v", err)
		}
		sum := sha256.Sum256(data)
		if want := path.Join(e.c.DataRoot, ".bin", "sluice-relay-"+hex.EncodeToString(sum[:])[:16]); p != want {
			t.Errorf("PlaceRelay = %s; want %s", p, want)
		}
		t.Logf("first PlaceRelay: %v", cc.take())

		again, err := c.PlaceRelay(ctx, data)
		if err != nil || again != p {
			t.Fatalf("second PlaceRelay = %s, %v; want %s", again, err, p)
		}
		if calls := cc.take(); len(calls) != 0 {
			t.Errorf("second PlaceRelay made remote calls %v; want none", calls)
		}

		// What is on the site, asked directly.
		out, err := e.c.Site.Run(ctx, nil, "stat", "-c", "%A %U", path.Dir(p), p)
		if err != nil {
			t.Fatal(err)
		}
		user := e.rig.Get(t, "RIG_USER")
		if want := "drwx------ " + user + "\n-r-x------ " + user + "\n"; string(out) != want {
			t.Errorf("on the site:\n%s\nwant:\n%s", out, want)
		}
		out, err = e.c.Site.Run(ctx, nil, "sha256sum", p)
		if err != nil || !strings.HasPrefix(string(out), hex.EncodeToString(sum[:])+" ") {
			t.Errorf("sha256sum on the site: %q, %v; want %x", out, err, sum)
		}
	})
}

// nodeClient connects to the rig's compute node as the job's user, through
// the login node, both host keys checked.
func nodeClient(t *testing.T, e *rigEnv) *ssh.Client {
	t.Helper()
	return nodeClientAs(t, e, e.rig.Get(t, "RIG_USER"), e.rig.Get(t, "RIG_KEY"))
}

// nodeClientAs connects to the rig's compute node as user with key.
func nodeClientAs(t *testing.T, e *rigEnv, user, key string) *ssh.Client {
	t.Helper()
	signer, err := sshx.Signer(key)
	if err != nil {
		t.Fatal(err)
	}
	login, err := sshx.HostKeys(e.rig.Get(t, "RIG_KNOWN_HOSTS"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := sshx.HostKeys(e.rig.Get(t, "RIG_NODE_KNOWN_HOSTS"))
	if err != nil {
		t.Fatal(err)
	}
	hop := &tunnel.Hop{
		LoginAddr:     net.JoinHostPort(e.rig.Get(t, "RIG_LOGIN_ADDR"), e.rig.Get(t, "RIG_LOGIN_PORT")),
		User:          user,
		Auth:          []ssh.AuthMethod{ssh.PublicKeys(signer)},
		LoginHostKeys: login,
		NodeHostKeys:  node,
		Timeout:       20 * time.Second,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lc, err := hop.Login(ctx)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	t.Cleanup(func() { lc.Close() })
	nc, err := hop.Node(ctx, lc, e.node)
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// onNode runs a command on the node and returns its output.
func onNode(c *ssh.Client, cmd string) (string, error) {
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	return string(out), err
}

// waitOnNode runs cmd on the node until it succeeds, failing the test after
// a minute, and returns its output.
func waitOnNode(t *testing.T, c *ssh.Client, what, cmd string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := onNode(c, cmd)
		if err == nil {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s still fails after a minute: %v: %s", what, cmd, err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// forwardTo accepts connections on ln and carries each to addr.
func forwardTo(t *testing.T, ln net.Listener, addr string) {
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				d, err := net.Dial("tcp", addr)
				if err != nil {
					t.Errorf("dial %s: %v", addr, err)
					return
				}
				defer d.Close()
				done := make(chan struct{})
				go func() { io.Copy(d, c); d.(*net.TCPConn).CloseWrite(); close(done) }()
				io.Copy(c, d)
				<-done
			})
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
}

func (e *rigEnv) reverseJob(t *testing.T, relayPath string, client string) *jobscript.Job {
	t.Helper()
	job := e.shJob(t, nil, [][2]string{{"client", client}})
	// No Addr: Submit draws the pod's salt, which derives it.
	job.Reverse = &jobscript.ReverseJob{
		Ports: []uint16{6379}, Names: []string{"redis"},
		SocketDirRoot: e.rig.Get(t, "RIG_SOCKET_DIR_ROOT"), RelayPath: relayPath, Timeout: time.Minute,
	}
	return job
}

func TestRigReverseReachesRedisByName(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		relayPath := placeRigRelay(t, e)
		node := nodeClient(t, e)
		job := e.reverseJob(t, relayPath, "head -n 2 /etc/hosts; printf 'PING\\r\\nQUIT\\r\\n' | nc redis 6379")
		ref := e.submit(t, job)
		dir := job.Reverse.SocketDir(job.UID)

		// The shadow's part: once the job has made the socket directory, a
		// remote forward from its socket to Redis.
		waitOnNode(t, node, "socket directory", "test -f "+dir+"/"+relay.ReadyFile)
		ln, err := node.ListenUnix(path.Join(dir, relay.SocketName(6379)))
		if err != nil {
			t.Fatalf("remote forward: %v", err)
		}
		forwardTo(t, ln, e.rig.Get(t, "RIG_REDIS_ADDR"))
		user := e.rig.Get(t, "RIG_USER")
		modes, err := onNode(node, "stat -c '%A %U' "+dir+" "+dir+"/"+relay.SocketName(6379))
		if want := "drwx------ " + user + "\nsrw------- " + user + "\n"; err != nil || modes != want {
			t.Errorf("on the node: %q, %v; want %q", modes, err, want)
		}

		st := e.wait(t, ref, "final", final)
		if st.State != StateCompleted || st.Exit == nil || st.Exit.Code != 0 {
			t.Errorf("status %+v; want COMPLETED with 0", st)
		}
		want := "# sluice: the reverse tunnel\n" + relayAddrOf(t, job).String() + " redis\n+PONG\r\n+OK\r\n"
		if got := e.logs(t, ref, "client", LogOptions{Tail: -1}); got != want {
			t.Errorf("client log %q; want %q", got, want)
		}
		if out, err := onNode(node, "test -e "+dir); err == nil {
			t.Errorf("socket directory %s is still there after the job: %s", dir, out)
		}
		if t.Failed() {
			out, _ := e.c.Site.ReadAt(context.Background(), path.Join(ref.Dir, jobscript.JobOutFile), 0, 1<<20)
			t.Logf("job.out:\n%s", out)
		}
	})
}

// failedJobOut waits for ref to fail and returns its job.out.
func (e *rigEnv) failedJobOut(t *testing.T, ref JobRef) string {
	t.Helper()
	st := e.wait(t, ref, "final", final)
	if st.State != StateFailed || st.Exit == nil || st.Exit.Code != 1 {
		t.Errorf("status %+v; want FAILED with 1", st)
	}
	if _, ok := st.Containers["client"]; ok {
		t.Errorf("container client ran: %+v", st.Containers["client"])
	}
	out, err := e.c.Site.ReadAt(context.Background(), path.Join(ref.Dir, jobscript.JobOutFile), 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestRigReverseWithoutTunnelFails(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		job := e.reverseJob(t, placeRigRelay(t, e), "echo never")
		job.Reverse.Timeout = 3 * time.Second
		ref := e.submit(t, job)
		out := e.failedJobOut(t, ref)
		want := "sluice: reverse tunnel not up after 3s in " + job.Reverse.SocketDir(job.UID) +
			": the tunnel's sockets are missing: rev-6379.sock"
		if !strings.Contains(out, want) || strings.Contains(out, "relay is not ready") {
			t.Errorf("job.out:\n%s\nwant it to hold %q, and not that the relay is not ready", out, want)
		}
	})
}

func TestRigReverseWithoutSocketDirRootFails(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		job := e.reverseJob(t, placeRigRelay(t, e), "echo never")
		job.Reverse.SocketDirRoot = ""
		ref := e.submit(t, job)
		out := e.failedJobOut(t, ref)
		if want := "sluice: reverse tunnel: the site sets no SocketDirRoot"; !strings.Contains(out, want) {
			t.Errorf("job.out:\n%s\nwant it to hold %q", out, want)
		}
	})
}
