//go:build rig

package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/relay"
)

// TestRigForwardEntry runs a job on the compute node that listens on its own
// address, SLUICE_POD_IP, on a port bob holds on the node's 127.0.0.1, and
// reports a second port in SLUICE_PORT_FILE. Through the node's sshd, as a
// tunnel does (a direct-streamlocal channel to the relay's fwd.sock), both
// reach the job; a port only bob listens on is refused naming bob's uid;
// bob's listeners receive nothing.
func TestRigForwardEntry(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeNone)
		relayPath := placeRigRelay(t, e)
		alice := nodeClient(t, e)
		bob := nodeClientAs(t, e, e.rig.Get(t, "RIG_OTHER_USER"), e.rig.Get(t, "RIG_OTHER_KEY"))
		shared, only := bobListens(t, bob), bobListens(t, bob)
		mapped := uint16(20000 + rand.IntN(10000))
		job := e.reverseJob(t, relayPath, fmt.Sprintf(
			`printf '# picked at run time\n%d=%d\n' >"$SLUICE_PORT_FILE.new" && mv "$SLUICE_PORT_FILE.new" "$SLUICE_PORT_FILE" || exit 1
exec socat TCP-LISTEN:%d,bind="$SLUICE_POD_IP",fork,reuseaddr SYSTEM:'echo job; cat'`, mapped, shared.port, shared.port))
		ref := e.submit(t, job)
		dir := job.Reverse.SocketDir(job.UID)
		waitOnNode(t, alice, "relay ready", "test -f "+dir+"/"+relay.ReadyFile)
		// The reverse tunnel the job waits for.
		if _, err := alice.ListenUnix(path.Join(dir, relay.SocketName(6379))); err != nil {
			t.Fatalf("remote forward: %v", err)
		}
		e.wait(t, ref, "running", func(st Status) bool { return st.State == StateRunning || st.State.Final() })
		addr := relayAddrOf(t, job).String()
		waitOnNode(t, alice, "the job's listener", fmt.Sprintf("socat -T 2 -u TCP:%s:%d - | grep -q job", addr, shared.port))
		waitOnNode(t, alice, "the port file", "test -s "+path.Join(ref.Dir, jobscript.PortFile))

		entry := path.Join(dir, relay.ForwardSocket)
		for _, port := range []uint16{shared.port, mapped} {
			got, err := forwardThrough(alice, entry, port, "ping\n")
			if err != nil || got != "job\nping\n" {
				t.Errorf("port %d: got %q, %v; want the job's answer", port, got, err)
			}
		}
		_, err := forwardThrough(alice, entry, only.port, "ping\n")
		var rf *relay.RefusedError
		want := fmt.Sprintf("port %d: listener 127.0.0.1:%d owned by uid %s, not the job's uid %s",
			only.port, only.port, e.uidOf(t, e.rig.Get(t, "RIG_OTHER_USER")), e.uidOf(t, e.rig.Get(t, "RIG_USER")))
		if !errors.As(err, &rf) || rf.Reason != want {
			t.Errorf("port only bob listens on: got %v; want the refusal %q", err, want)
		}
		for _, l := range []*bobListener{shared, only} {
			if n := l.conns.Load(); n != 0 {
				t.Errorf("bob's listener on 127.0.0.1:%d received %d connections", l.port, n)
			}
		}
		if t.Failed() {
			b, _ := e.c.Site.ReadAt(context.Background(), path.Join(ref.Dir, jobscript.JobOutFile), 0, 1<<20)
			t.Logf("job.out:\n%s", b)
		}
	})
}

// TestRigForwardOnly runs two jobs of pods that expose the same port and
// ask for no reverse tunnel (their relay serves the forward entry alone,
// shadow.RunsRelay), on the node where bob holds 127.0.0.1 at that port:
// each serves it on its own SLUICE_POD_IP after a while, with a readiness
// probe on 127.0.0.1 checked through its entry. Through the node's sshd
// each entry reaches its own job; a port only bob listens on is refused
// naming bob's uid; each probe fails, saying so, while only bob listens,
// and passes once its job does; bob's listeners receive nothing, neither
// forward nor probe.
func TestRigForwardOnly(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeNone)
		relayPath := placeRigRelay(t, e)
		alice := nodeClient(t, e)
		bob := nodeClientAs(t, e, e.rig.Get(t, "RIG_OTHER_USER"), e.rig.Get(t, "RIG_OTHER_KEY"))
		shared, only := bobListens(t, bob), bobListens(t, bob)
		bobUID, aliceUID := e.uidOf(t, e.rig.Get(t, "RIG_OTHER_USER")), e.uidOf(t, e.rig.Get(t, "RIG_USER"))
		type started struct {
			job *jobscript.Job
			ref JobRef
		}
		var jobs []started
		for _, name := range []string{"one", "two"} {
			job := e.shJob(t, nil, [][2]string{{"web", fmt.Sprintf(
				`sleep 3; exec socat TCP-LISTEN:%d,bind="$SLUICE_POD_IP",fork,reuseaddr SYSTEM:'echo %s; cat'`, shared.port, name)}})
			job.Containers[0].Readiness = &jobscript.Probe{Kind: jobscript.ProbeTCP, Host: "127.0.0.1", Port: int32(shared.port),
				Period: 1, Timeout: 5, Success: 1, Failure: 1}
			job.Relay = relayPath
			job.Reverse = &jobscript.ReverseJob{Forward: true, SocketDirRoot: e.rig.Get(t, "RIG_SOCKET_DIR_ROOT"), RelayPath: relayPath, Timeout: time.Minute}
			jobs = append(jobs, started{job, e.submit(t, job)})
		}
		for i, name := range []string{"one", "two"} {
			job, ref := jobs[i].job, jobs[i].ref
			e.wait(t, ref, "running", func(st Status) bool { return st.State == StateRunning || st.State.Final() })
			waitOnNode(t, alice, "job "+name+" ready", "grep -qx 1 "+path.Join(ref.Dir, jobscript.ReadyFile("web")))
			entry := path.Join(job.Reverse.SocketDir(job.UID), relay.ForwardSocket)
			if got, err := forwardThrough(alice, entry, shared.port, "ping\n"); err != nil || got != name+"\nping\n" {
				t.Errorf("job %s, port %d: got %q, %v; want its own answer", name, shared.port, got, err)
			}
			_, err := forwardThrough(alice, entry, only.port, "ping\n")
			var rf *relay.RefusedError
			want := fmt.Sprintf("port %d: listener 127.0.0.1:%d owned by uid %s, not the job's uid %s", only.port, only.port, bobUID, aliceUID)
			if !errors.As(err, &rf) || rf.Reason != want {
				t.Errorf("job %s, port only bob listens on: got %v; want the refusal %q", name, err, want)
			}
			b, _ := e.c.Site.ReadAt(context.Background(), path.Join(ref.Dir, jobscript.JobOutFile), 0, 1<<20)
			why := fmt.Sprintf("sluice: readiness probe of container web failed: sluice-relay: probe tcp://127.0.0.1:%d: port %d: listener 127.0.0.1:%d owned by uid %s, not the job's uid %s",
				shared.port, shared.port, shared.port, bobUID, aliceUID)
			if !strings.Contains(string(b), why) {
				t.Errorf("job %s's output does not say %q", name, why)
			}
			if t.Failed() {
				t.Logf("job %s, job.out:\n%s", name, b)
			}
		}
		for _, l := range []*bobListener{shared, only} {
			if n := l.conns.Load(); n != 0 {
				t.Errorf("bob's listener on 127.0.0.1:%d received %d connections", l.port, n)
			}
		}
	})
}

// bobListener is a listener of bob's on the node's 127.0.0.1: a remote
// forward, which bob's sshd binds as bob.
type bobListener struct {
	port  uint16
	conns atomic.Int64
}

func bobListens(t *testing.T, bob *ssh.Client) *bobListener {
	t.Helper()
	for range 5 {
		l := &bobListener{port: uint16(30000 + rand.IntN(30000))}
		ln, err := bob.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(l.port))))
		if err != nil {
			t.Logf("bob listening on 127.0.0.1:%d: %v", l.port, err)
			continue
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				l.conns.Add(1)
				io.WriteString(c, "bob\n")
				c.Close()
			}
		}()
		return l
	}
	t.Fatal("bob could not listen on the node's 127.0.0.1")
	return nil
}

// forwardThrough opens the relay's forward entry through the node's sshd,
// asks for port, sends msg and reads the answer to its end.
func forwardThrough(c *ssh.Client, entry string, port uint16, msg string) (string, error) {
	conn, err := c.Dial("unix", entry)
	if err != nil {
		return "", fmt.Errorf("direct-streamlocal to %s: %w", entry, err)
	}
	defer conn.Close()
	if err := relay.OpenForward(conn, port); err != nil {
		return "", err
	}
	if _, err := io.WriteString(conn, msg); err != nil {
		return "", err
	}
	if err := conn.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}
