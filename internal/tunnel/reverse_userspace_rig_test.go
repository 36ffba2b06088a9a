//go:build rig

package tunnel

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestReverseUserspaceRig: with the node's sshd refusing forwarding, the
// node mode fails naming AllowStreamLocalForwarding, and Sshd userspace
// serves the same forwards and SOCKS proxy through an sshd -i of the job's
// user, whose files are owner-only in the socket directory.
func TestReverseUserspaceRig(t *testing.T) {
	r := testrig.Load(t)
	r.OverrideNodeSSHD(t, "AllowStreamLocalForwarding no\nAllowTcpForwarding no\n")
	redisHost, redisPort, err := net.SplitHostPort(r.Get(t, "RIG_REDIS_ADDR"))
	if err != nil {
		t.Fatal(err)
	}
	redisPortN, _ := strconv.Atoi(redisPort)
	newReverse := func(sshd string, rec *logRecorder, states *stateRecorder) *Reverse {
		return &Reverse{
			Hop:          rigHop(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), &loginDialer{}),
			NodeFile:     nodeFile(t, r.Get(t, "RIG_NODE_NAME")),
			SocketDir:    rigSocketDir(t, r),
			Endpoints:    []Endpoint{{ListenPort: 6379, Host: redisHost, Port: redisPortN}},
			Sshd:         sshd,
			Log:          slog.New(rec),
			BackoffMin:   50 * time.Millisecond,
			BackoffMax:   500 * time.Millisecond,
			PollInterval: 20 * time.Millisecond,
			OnState:      states.record,
		}
	}

	t.Run("node mode refused", func(t *testing.T) {
		rec, states := newLogRecorder(t), &stateRecorder{}
		startReverse(t, newReverse(SshdNode, rec, states))
		waitFor(t, 10*time.Second, "refused", func() bool {
			return countWith(rec, "reverse tunnel connect failed", "error", "AllowStreamLocalForwarding") >= 1
		})
		if states.ups() != 0 {
			t.Errorf("the node mode came up on a node sshd without forwarding")
		}
	})

	t.Run("userspace", func(t *testing.T) {
		rec, states := newLogRecorder(t), &stateRecorder{}
		rv := newReverse(SshdUserspace, rec, states)
		rv.SocksPort = freeNodePort(t)
		rv.Dial = nil
		startReverse(t, rv)
		waitFor(t, 20*time.Second, "tunnel up", func() bool { return states.ups() == 1 })
		alice := nodeClient(t, r, r.Get(t, "RIG_USER"), r.Get(t, "RIG_KEY"))
		if got, err := viaSocket(alice, filepath.Join(rv.SocketDir, "rev-6379.sock"), "PING\r\n"); err != nil || !strings.Contains(got, "+PONG") {
			t.Errorf("redis through the user-space sshd's forward: %q, %v", got, err)
		}
		uid := r.Get(t, "RIG_USER_UID")
		// The sshd's configuration is on its command line, not in a file
		// of the socket directory that could be swapped after the check.
		if configs, _ := filepath.Glob(filepath.Join(rv.SocketDir, "sshd-*config*")); len(configs) != 0 {
			t.Errorf("sshd configuration files in the socket directory: %v", configs)
		}
		for _, name := range []string{"rev-6379.sock", "sshd-forwards-host_key", "sshd-forwards-authorized_keys", "sshd-socks-host_key"} {
			fi, err := os.Lstat(filepath.Join(rv.SocketDir, name))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if fi.Mode().Perm() != 0o600 || strconv.Itoa(int(statUID(fi))) != uid {
				t.Errorf("%s: %v uid %d; want -rw------- (or srw-------) of uid %s", name, fi.Mode(), statUID(fi), uid)
			}
		}
		waitFor(t, 10*time.Second, "SOCKS proxy up", func() bool { return countWith(rec, "SOCKS proxy up: open to every user of the node", "", "") == 1 })
		probe := filepath.Join(r.Get(t, "RIG_IMAGE"), "usr", "local", "bin", "sluice-probe")
		// The destination is the shadow's: Redis on its loopback is refused
		// by policy, so a name the shadow resolves to a reachable address is
		// asked for instead.
		if got, _ := onNode(alice, "", probe, "redis", "--addr", "127.0.0.1:"+redisPort, "--socks", "127.0.0.1:"+strconv.Itoa(rv.SocksPort)); !strings.Contains(got, "not allowed") {
			t.Errorf("through the user-space sshd's SOCKS proxy: %q; want the proxy to answer (not allowed)", got)
		}
	})
}

func statUID(fi os.FileInfo) uint32 { return fi.Sys().(*syscall.Stat_t).Uid }
