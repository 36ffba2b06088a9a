package jobscript

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	"github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/salt"
)

// TestForwardOnlyScript runs two jobs whose pods expose the same port and
// ask for no reverse tunnel, on one node where another user (uid 65534,
// as root) holds 127.0.0.1 at that port first: each job's relay serves
// the forward entry alone, which refuses naming the other user's listener
// until the job listens, and then reaches each job's own server on its
// SLUICE_POD_IP; each job's readiness probe on 127.0.0.1, through its
// entry, passes on its own listener, not on the other user's.
func TestForwardOnlyScript(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to listen as another user")
	}
	if _, err := exec.LookPath("socat"); err != nil {
		t.Skip("no socat, the jobs' server")
	}
	relayBin := scripttest.BuildRelay(t)
	port := serveAs(t, 65534, "127.0.0.1:0").Port()
	var entries []string
	for _, name := range []string{"one", "two"} {
		s := newReverseSetup(t, relayBin)
		job := testJob()
		job.UID = strings.Replace(job.UID, "1111", map[string]string{"one": "aaaa", "two": "bbbb"}[name], 1)
		// The server starts once the test has seen the entry refuse.
		job.Containers = []Container{sh("web", `while [ ! -e go ]; do sleep 0.05; done
exec socat TCP-LISTEN:`+strconv.Itoa(int(port))+`,bind="$SLUICE_POD_IP",reuseaddr,fork SYSTEM:'echo `+name+`'`)}
		job.Containers[0].Readiness = &Probe{Kind: ProbeTCP, Host: "127.0.0.1", Port: int32(port), Period: 1, Timeout: 2, Success: 1, Failure: 1}
		job.Relay = relayBin
		job.Reverse = &ReverseJob{Addr: s.addr, Forward: true, SocketDirRoot: s.root, RelayPath: relayBin, Timeout: 20 * time.Second, Salt: salt.New()}
		dir, cmd := startJob(t, "sh", job, RuntimeNone)
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("job %s, job.out:\n%s", name, readFile(t, dir, JobOutFile))
			}
		})
		sock := s.dir(job)
		waitFor(t, func() bool {
			_, err := os.Stat(filepath.Join(sock, relay.ReadyFile))
			return err == nil
		})
		entry := filepath.Join(sock, relay.ForwardSocket)
		_, err := viaEntry(entry, port)
		var rf *relay.RefusedError
		if !errors.As(err, &rf) || !strings.Contains(rf.Reason, "owned by uid 65534") {
			t.Fatalf("job %s: before its server listens, the entry gave %v; want a refusal naming uid 65534's listener", name, err)
		}
		// Its probe fails meanwhile, saying why, and it is not ready.
		why := "sluice: readiness probe of container web failed: sluice-relay: probe tcp://127.0.0.1:" + strconv.Itoa(int(port)) +
			": port " + strconv.Itoa(int(port)) + ": listener 127.0.0.1:" + strconv.Itoa(int(port)) + " owned by uid 65534, not the job's uid 0"
		waitFor(t, func() bool { return strings.Contains(readFile(t, dir, JobOutFile), why) })
		if s := readyState(dir, "web"); s != "0" {
			t.Errorf("job %s: web.ready = %q before its server listens; want 0: uid 65534's listener passed its probe", name, s)
		}
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return readyState(dir, "web") == "1" })
		entries = append(entries, entry)
	}
	for i, name := range []string{"one", "two"} {
		got, err := viaEntry(entries[i], port)
		if err != nil || strings.TrimSpace(got) != name {
			t.Errorf("through job %s's entry: got %q, %v; want %q", name, got, err, name)
		}
	}
}

// viaEntry asks the forward entry for port and returns what the job's
// server wrote before closing.
func viaEntry(entry string, port uint16) (string, error) {
	c, err := net.DialTimeout("unix", entry, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	if err := relay.OpenForward(c, port); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}
