//go:build rig

package tunnel

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
	"golang.org/x/crypto/ssh"
)

// TestReverseSrunRig: with ssh from the login node to the compute node
// refused to alice, NodeExec srun carries the session (its commands and a
// user-space sshd) inside her running job, and the job's side reaches
// Redis through its socket.
func TestReverseSrunRig(t *testing.T) {
	r := testrig.Load(t)
	alice := loginClient(t, r)
	out, err := onNode(alice, "", "sbatch", "--parsable", "--job-name=sluice-srun-test", "--output=/dev/null", "--wrap=sleep 300")
	if err != nil {
		t.Fatalf("sbatch: %v", err)
	}
	job := strings.TrimSpace(out)
	t.Cleanup(func() { onNode(alice, "", "scancel", job) })
	waitFor(t, 30*time.Second, "the job running", func() bool {
		out, _ := onNode(alice, "", "squeue", "-h", "-j", job, "-o", "%T")
		return strings.TrimSpace(out) == "RUNNING"
	})
	r.OverrideNodeSSHD(t, "DenyUsers "+r.Get(t, "RIG_USER")+"\n")

	redisHost, redisPort, err := net.SplitHostPort(r.Get(t, "RIG_REDIS_ADDR"))
	if err != nil {
		t.Fatal(err)
	}
	redisPortN, _ := strconv.Atoi(redisPort)
	jobFile := filepath.Join(t.TempDir(), "job")
	if err := os.WriteFile(jobFile, []byte(job+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	states, rec := &stateRecorder{}, newLogRecorder(t)
	rv := &Reverse{
		Hop:          rigHop(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), &loginDialer{}),
		NodeFile:     nodeFile(t, r.Get(t, "RIG_NODE_NAME")),
		SocketDir:    rigSocketDir(t, r),
		Endpoints:    []Endpoint{{ListenPort: 6379, Host: redisHost, Port: redisPortN}},
		NodeExec:     NodeExecSrun,
		JobFile:      jobFile,
		Log:          slog.New(rec),
		BackoffMin:   50 * time.Millisecond,
		BackoffMax:   500 * time.Millisecond,
		PollInterval: 20 * time.Millisecond,
		OnState:      states.record,
	}
	startReverse(t, rv)
	waitFor(t, 30*time.Second, "tunnel up over srun", func() bool { return states.ups() == 1 })

	// alice's client on the node, outside any ssh session of hers.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", nodeNetns, "runuser", "-u", r.Get(t, "RIG_USER"), "--",
		"socat", "-t", "5", "-", "UNIX-CONNECT:"+filepath.Join(rv.SocketDir, "rev-6379.sock"))
	cmd.Stdin = strings.NewReader("PING\r\n")
	got, err := cmd.Output()
	if err != nil || !strings.Contains(string(got), "+PONG") {
		t.Errorf("redis through the srun-carried tunnel: %q, %v", got, err)
	}
	if n := countWith(rec, "ssh connected", "via", "srun"); n == 0 {
		t.Errorf("no session logged as carried by srun")
	}
}

// loginClient connects to the login node as alice.
func loginClient(t *testing.T, r *testrig.Rig) *ssh.Client {
	t.Helper()
	login, err := rigHop(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), &loginDialer{}).Login(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { login.Close() })
	return login
}
