//go:build rig

package slurm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	"github.com/sluice-hpc/sluice/internal/relay"
)

// These tests play another user of the compute node (the rig's bob) against
// a reverse-tunnel job of alice's (SPEC S5, S8).
//
//	go test -tags rig -count=1 -run RigReverseHostile ./internal/slurm/

// bobRoot is a fresh path for a socket directory root in the node's /tmp,
// made by bob over SSH on the node, as the first user to come could make
// a site's predictable root; it is removed when the test ends.
func bobRoot(t *testing.T, e *rigEnv, mode string) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	root := "/tmp/sluice-bob-" + hex.EncodeToString(b[:])
	t.Cleanup(func() { os.RemoveAll(e.rig.HostPath(root)) })
	bob := nodeClientAs(t, e, e.rig.Get(t, "RIG_OTHER_USER"), e.rig.Get(t, "RIG_OTHER_KEY"))
	if out, err := onNode(bob, "mkdir -m "+mode+" "+root+" && chmod "+mode+" "+root); err != nil {
		t.Fatalf("bob makes %s: %v: %s", root, err, out)
	}
	return root
}

// TestRigReverseHostileRootRefused: bob made the job's socket directory
// root first, sticky and open to all as /tmp. The job must not use it: as
// its owner, bob could rename alice's socket directory and take the
// relay's address. Then a root of alice's in a directory bob owns.
func TestRigReverseHostileRootRefused(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		relayPath := placeRigRelay(t, e)
		bobUID := e.uidOf(t, e.rig.Get(t, "RIG_OTHER_USER"))
		aliceUID := e.rig.Get(t, "RIG_USER_UID")

		t.Run("root", func(t *testing.T) {
			root := bobRoot(t, e, "1777")
			job := e.reverseJob(t, relayPath, "echo never")
			job.Reverse.SocketDirRoot = root
			out := e.failedJobOut(t, e.submit(t, job))
			want := "sluice: reverse tunnel: socket directory root " + root + " is not safe: the directory " + root +
				" is owned by uid " + bobUID + " (" + e.rig.Get(t, "RIG_OTHER_USER") + "), not by root or uid " + aliceUID
			if !strings.Contains(out, want) {
				t.Errorf("job.out:\n%s\nwant it to hold %q", out, want)
			}
			if _, err := os.Lstat(e.rig.HostPath(job.Reverse.SocketDir(job.UID))); !os.IsNotExist(err) {
				t.Errorf("socket directory made in bob's root: %v", err)
			}
		})
		t.Run("parent", func(t *testing.T) {
			parent := bobRoot(t, e, "755")
			root := path.Join(parent, "sock")
			if err := os.Mkdir(e.rig.HostPath(root), os.ModeSticky|0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(e.rig.HostPath(root), os.ModeSticky|0o777); err != nil {
				t.Fatal(err)
			}
			job := e.reverseJob(t, relayPath, "echo never")
			job.Reverse.SocketDirRoot = root
			out := e.failedJobOut(t, e.submit(t, job))
			want := "is not safe: the directory " + parent + " is owned by uid " + bobUID
			if !strings.Contains(out, want) {
				t.Errorf("job.out:\n%s\nwant it to hold %q", out, want)
			}
		})
	})
}

// uidOf is the uid of user name on e's site, from the site's own passwd.
func (e *rigEnv) uidOf(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(e.rig.HostPath("/etc/passwd"))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		f := strings.Split(l, ":")
		if len(f) > 2 && f[0] == name {
			return f[2]
		}
	}
	t.Fatalf("no user %s", name)
	return ""
}

// upJob submits a job of alice's whose client sleeps for secs seconds, plays
// the tunnel's side once the relay is ready, and returns the job, its
// reference and its socket directory.
func (e *rigEnv) upJob(t *testing.T, secs int) (*jobscript.Job, JobRef, string) {
	t.Helper()
	relayPath := placeRigRelay(t, e)
	node := nodeClient(t, e)
	job := e.reverseJob(t, relayPath, "echo started; sleep "+strconv.Itoa(secs)+"; echo slept")
	ref := e.submit(t, job)
	dir := job.Reverse.SocketDir(job.UID)
	waitOnNode(t, node, "relay ready", "test -f "+dir+"/"+relay.ReadyFile)
	ln, err := node.ListenUnix(path.Join(dir, relay.SocketName(6379)))
	if err != nil {
		t.Fatalf("remote forward: %v", err)
	}
	forwardTo(t, ln, e.rig.Get(t, "RIG_REDIS_ADDR"))
	e.wait(t, ref, "running", func(st Status) bool { return st.State == StateRunning || st.State.Final() })
	return job, ref, dir
}

// TestRigReverseHostileDirRenamed: the job's socket directory is renamed
// away while the job runs, as the owner of a shared root could do. The
// relay must keep its port until the job ends: bob cannot bind the
// address and port the job's names point at, and alice's connections are
// refused, not passed anywhere.
func TestRigReverseHostileDirRenamed(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		job, ref, dir := e.upJob(t, 20)
		alice := nodeClient(t, e)
		bob := nodeClientAs(t, e, e.rig.Get(t, "RIG_OTHER_USER"), e.rig.Get(t, "RIG_OTHER_KEY"))
		addr := relayAddrOf(t, job).String()
		ping := "printf 'PING\\r\\n' | socat -T 3 - TCP:" + addr + ":6379"
		if out := waitOnNode(t, alice, "redis through the relay", ping+" | grep -q PONG && echo ok"); out != "ok\n" {
			t.Fatalf("through the relay before: %q", out)
		}
		if err := os.Rename(e.rig.HostPath(dir), e.rig.HostPath(dir+".away")); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(e.rig.HostPath(dir + ".away")) })
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			out, _ := onNode(alice, ping)
			if !strings.Contains(out, "PONG") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		for i := range 3 {
			if out, _ := onNode(alice, ping); strings.Contains(out, "PONG") {
				t.Errorf("connection %d after the rename reached Redis: %q", i, out)
			}
			// bob tries to take the address and port: the relay holds them.
			out, err := onNode(bob, "timeout 2 socat -u TCP-LISTEN:6379,bind="+addr+",reuseaddr /dev/null; echo status $?")
			if !strings.Contains(out, "Address already in use") || !strings.Contains(out, "status 1") {
				t.Errorf("bob binding %s:6379 while the job runs: %q, %v; want Address already in use", addr, out, err)
			}
		}
		st := e.wait(t, ref, "final", final)
		if st.State != StateCompleted {
			t.Errorf("status %+v; want COMPLETED: the workload ran on", st)
		}
		if got := e.logs(t, ref, "client", LogOptions{Tail: -1}); got != "started\nslept\n" {
			t.Errorf("client log %q", got)
		}
		// The job has ended: its relay, with it, and the port is free.
		waitOnNode(t, bob, "port free after the job", "timeout 1 socat -u TCP-LISTEN:6379,bind="+addr+",reuseaddr /dev/null; test $? = 124")
		if t.Failed() {
			b, _ := e.c.Site.ReadAt(context.Background(), path.Join(ref.Dir, jobscript.JobOutFile), 0, 1<<20)
			t.Logf("job.out:\n%s", b)
		}
	})
}

// TestRigReverseHostileRelayKilled: the relay ends while the workload runs
// (killed here): its address is free for anyone to bind, so the job must
// stop its containers and fail, saying why.
func TestRigReverseHostileRelayKilled(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		_, ref, dir := e.upJob(t, 60)
		waitOnNode(t, nodeClient(t, e), "client started", "grep -q started "+path.Join(ref.Dir, jobscript.LogFile("client")))
		pid := scripttest.RelayPID(t, dir)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		st := e.wait(t, ref, "final", final)
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("the job ended %v after its relay; want at once", d)
		}
		if st.State != StateFailed {
			t.Errorf("status %+v; want FAILED", st)
		}
		out, err := e.c.Site.ReadAt(context.Background(), path.Join(ref.Dir, jobscript.JobOutFile), 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if last := scripttest.LastSluice(string(out)); !scripttest.RelayKilledLine(last) {
			t.Errorf("last sluice line %q; want it to say the relay was killed (%q)\njob.out:\n%s", last, scripttest.RelayKilled[0], out)
		}
		if got := e.logs(t, ref, "client", LogOptions{Tail: -1}); strings.Contains(got, "slept") {
			t.Errorf("the client ran to its end without the relay: %q", got)
		}
	})
}

// TestRigReverseHostilePredictedNames: bob reads the pod UID in squeue, as
// every user of the site can, and takes first what it used to name: he makes
// <SocketDirRoot>/<uid> and binds the address the UID alone hashed to, on
// the port the job asks for. The job's names come from its salt instead, so
// it runs and reaches Redis through its relay all the same.
func TestRigReverseHostilePredictedNames(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		relayPath := placeRigRelay(t, e)
		alice := nodeClient(t, e)
		bob := nodeClientAs(t, e, e.rig.Get(t, "RIG_OTHER_USER"), e.rig.Get(t, "RIG_OTHER_KEY"))
		job := e.reverseJob(t, relayPath, "printf 'PING\\r\\nQUIT\\r\\n' | nc redis 6379")
		guessDir, guessAddr := scripttest.Predictable(job.Reverse.SocketDirRoot, job.UID)

		if out, err := onNode(bob, "mkdir -m 755 "+guessDir); err != nil {
			t.Fatalf("bob makes %s: %v: %s", guessDir, err, out)
		}
		t.Cleanup(func() { os.RemoveAll(e.rig.HostPath(guessDir)) })
		// socat holds the port until the test kills it, by its PID.
		out, err := onNode(bob, "timeout 300 socat -u TCP-LISTEN:6379,bind="+guessAddr+",reuseaddr,fork /dev/null </dev/null >/dev/null 2>&1 & echo $!")
		pid, perr := strconv.Atoi(strings.TrimSpace(out))
		if err != nil || perr != nil {
			t.Fatalf("bob binds %s:6379: %q, %v", guessAddr, out, err)
		}
		t.Cleanup(func() { onNode(bob, "kill "+strconv.Itoa(pid)) })
		// Asked of ss, not by binding: a probe that binds could take the
		// port before bob's socat does, and make it exit.
		waitOnNode(t, bob, "bob's listener on "+guessAddr, "ss -Hltn 'sport = :6379' | grep -qF "+guessAddr+":6379")

		ref := e.submit(t, job)
		dir := job.Reverse.SocketDir(job.UID)
		if dir == guessDir || relayAddrOf(t, job).String() == guessAddr {
			t.Fatalf("the job's names %s, %v are the ones its uid gives", dir, relayAddrOf(t, job))
		}
		waitOnNode(t, alice, "relay ready", "test -f "+dir+"/"+relay.ReadyFile)
		ln, err := alice.ListenUnix(path.Join(dir, relay.SocketName(6379)))
		if err != nil {
			t.Fatalf("remote forward: %v", err)
		}
		forwardTo(t, ln, e.rig.Get(t, "RIG_REDIS_ADDR"))

		st := e.wait(t, ref, "final", final)
		if st.State != StateCompleted || st.Exit == nil || st.Exit.Code != 0 {
			t.Errorf("status %+v; want COMPLETED with 0: bob's directory and address are not the job's", st)
		}
		if got := e.logs(t, ref, "client", LogOptions{Tail: -1}); got != "+PONG\r\n+OK\r\n" {
			t.Errorf("client log %q; want Redis's PONG through the relay", got)
		}
		if t.Failed() {
			b, _ := e.c.Site.ReadAt(context.Background(), path.Join(ref.Dir, jobscript.JobOutFile), 0, 1<<20)
			t.Logf("job.out:\n%s", b)
		}
	})
}
