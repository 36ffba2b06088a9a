//go:build rig

package tunnel

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// rigSocketDir is a fresh socket directory path under the rig's root, as
// for a pod of a random uid; it is removed when the test ends. The node
// shares the host's filesystem, so the test can look at it directly.
func rigSocketDir(t *testing.T, r *testrig.Rig) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	dir := filepath.Join(r.Get(t, "RIG_SOCKET_DIR_ROOT"), "test-"+hex.EncodeToString(b))
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// nodeClient connects to the node as user with key, through the login
// node, for running commands there as that user.
func nodeClient(t *testing.T, r *testrig.Rig, user, key string) *ssh.Client {
	t.Helper()
	hop := rigHop(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), &loginDialer{})
	signer, err := sshx.Signer(key)
	if err != nil {
		t.Fatal(err)
	}
	hop.User, hop.Auth = user, []ssh.AuthMethod{ssh.PublicKeys(signer)}
	login, err := hop.Login(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	node, err := hop.Node(t.Context(), login, r.Get(t, "RIG_NODE_NAME"))
	if err != nil {
		login.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		node.Close()
		login.Close()
	})
	return node
}

// onNode runs args on the node over c with stdin, and returns its output
// and error, which holds what it wrote to stderr.
func onNode(c *ssh.Client, stdin string, args ...string) (string, error) {
	sess, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer sess.Close()
	var stdout, stderr bytes.Buffer
	sess.Stdin = strings.NewReader(stdin)
	sess.Stdout, sess.Stderr = &stdout, &stderr
	if err := sess.Run(site.Join(args)); err != nil {
		return stdout.String(), fmt.Errorf("%s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// viaSocket sends msg through the socket at path from the node with socat,
// half-closing after it, and returns what came back.
func viaSocket(c *ssh.Client, path, msg string) (string, error) {
	return onNode(c, msg, "socat", "-t", "5", "-", "UNIX-CONNECT:"+path)
}

// holderPIDs lists the holders running for dir on the node (the rig's
// namespaces share /proc).
func holderPIDs(t *testing.T, dir string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 4 && args[3] == "sluice-reverse" && args[4] == dir && strings.Contains(args[2], "echo held") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// parentPID is the parent of pid.
func parentPID(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			ppid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return ppid
		}
	}
	t.Fatalf("no parent for %d", pid)
	return 0
}

func gone(pid int) bool {
	return syscall.Kill(pid, 0) != nil
}

func TestReverseRig(t *testing.T) {
	r := testrig.Load(t)
	uid, err := strconv.Atoi(r.Get(t, "RIG_USER_UID"))
	if err != nil {
		t.Fatal(err)
	}
	redisHost, redisPort, err := net.SplitHostPort(r.Get(t, "RIG_REDIS_ADDR"))
	if err != nil {
		t.Fatal(err)
	}
	redisPortN, _ := strconv.Atoi(redisPort)
	d := &loginDialer{}
	states := &stateRecorder{}
	rec := newLogRecorder(t)
	rv := &Reverse{
		Hop:       rigHop(t, r, r.Get(t, "RIG_NODE_KNOWN_HOSTS"), d),
		NodeFile:  nodeFile(t, r.Get(t, "RIG_NODE_NAME")),
		SocketDir: rigSocketDir(t, r),
		Endpoints: []Endpoint{
			{ListenPort: 6379, Host: redisHost, Port: redisPortN},
			{ListenPort: 7000, Host: "127.0.0.1", Port: startTCPEcho(t)},
			{ListenPort: 7001, Host: "127.0.0.1", Port: closedPort(t)},
		},
		Log:               slog.New(rec),
		Metrics:           NewMetrics(nil, "reverse"),
		BackoffMin:        50 * time.Millisecond,
		BackoffMax:        time.Second,
		PollInterval:      20 * time.Millisecond,
		KeepAliveInterval: 2 * time.Second,
		KeepAliveTimeout:  2 * time.Second,
		OnState:           states.record,
	}
	startReverse(t, rv)
	waitFor(t, 20*time.Second, "tunnel up", func() bool { return states.ups() == 1 })
	redisSock := filepath.Join(rv.SocketDir, "rev-6379.sock")
	echoSock := filepath.Join(rv.SocketDir, "rev-7000.sock")
	alice := nodeClient(t, r, r.Get(t, "RIG_USER"), r.Get(t, "RIG_KEY"))

	t.Run("permissions", func(t *testing.T) {
		fi, err := os.Lstat(rv.SocketDir)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || fi.Mode().Perm() != 0o700 || int(st.Uid) != uid {
			t.Errorf("socket directory %v uid %d; want drwx------ uid %d", fi.Mode(), st.Uid, uid)
		}
		for _, e := range rv.Endpoints {
			fi, err := os.Lstat(filepath.Join(rv.SocketDir, e.socket()))
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 || int(st.Uid) != uid {
				t.Errorf("%s: %v uid %d; want srw------- uid %d", e.socket(), fi.Mode(), st.Uid, uid)
			}
		}
	})

	t.Run("redis from the node", func(t *testing.T) {
		out, err := viaSocket(alice, redisSock, "PING\r\n")
		if err != nil || out != "+PONG\r\n" {
			t.Errorf("PING through the tunnel = %q, %v; want +PONG", out, err)
		}
	})

	t.Run("echo from the node", func(t *testing.T) {
		msg := strings.Repeat("through the node and back\n", 4000)
		out, err := viaSocket(alice, echoSock, msg)
		if err != nil || out != msg {
			t.Errorf("echo = %d bytes, %v; want the %d sent", len(out), err, len(msg))
		}
	})

	t.Run("another user is refused", func(t *testing.T) {
		bob := nodeClient(t, r, r.Get(t, "RIG_OTHER_USER"), r.Get(t, "RIG_OTHER_KEY"))
		out, err := viaSocket(bob, redisSock, "PING\r\n")
		if err == nil || strings.Contains(out, "PONG") || !strings.Contains(err.Error(), "denied") {
			t.Errorf("bob through the socket = %q, %v; want permission denied", out, err)
		}
	})

	t.Run("dial failure closes one channel", func(t *testing.T) {
		out, _ := viaSocket(alice, filepath.Join(rv.SocketDir, "rev-7001.sock"), "x")
		if out != "" {
			t.Errorf("through a socket whose destination refuses = %q; want nothing", out)
		}
		if got := testutil.ToFloat64(rv.Metrics.refused.WithLabelValues(RefusedDial)); got != 1 {
			t.Errorf("refused{dial} = %v; want 1", got)
		}
		if out, err := viaSocket(alice, echoSock, "still up"); err != nil || out != "still up" {
			t.Errorf("echo after = %q, %v", out, err)
		}
	})

	// Each way the session can end, and the tunnel coming back.
	var holder int
	ends := []struct {
		name  string
		end   func(t *testing.T)
		cause string
	}{
		{"socket removed", func(t *testing.T) { os.Remove(echoSock) }, "socket rev-7000.sock removed"},
		{"directory removed", func(t *testing.T) { os.RemoveAll(rv.SocketDir) }, "socket directory removed"},
		{"directory recreated", func(t *testing.T) {
			// As a requeue would: a new directory under the same path,
			// made before the old one goes so that its inode is new, and
			// sockets of the same names in it.
			old := rv.SocketDir + ".old"
			if err := os.Rename(rv.SocketDir, old); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(rv.SocketDir, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, e := range rv.Endpoints {
				listenStale(t, filepath.Join(rv.SocketDir, e.socket()))
			}
			if err := chownAll(rv.SocketDir, uid); err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(old)
		}, "socket directory replaced"},
		{"node sshd session killed", func(t *testing.T) {
			// The sshd process serving the tunnel's connection on the
			// node, the holder's parent.
			sshd := parentPID(t, holder)
			comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(sshd), "comm"))
			if !strings.HasPrefix(string(comm), "sshd") {
				t.Fatalf("the holder's parent is %q; want sshd", comm)
			}
			if err := syscall.Kill(sshd, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}, "ssh connection to the node lost"},
		{"login connection cut", func(t *testing.T) { d.cut() }, "ssh connection to the node lost"},
	}
	for i, end := range ends {
		t.Run(end.name, func(t *testing.T) {
			pids := holderPIDs(t, rv.SocketDir)
			if len(pids) != 1 {
				t.Fatalf("holders on the node = %v; want one", pids)
			}
			holder = pids[0]
			start := time.Now()
			end.end(t)
			waitFor(t, 15*time.Second, "tunnel back", func() bool { return states.ups() == i+2 })
			t.Logf("back in %v", time.Since(start).Round(time.Millisecond))
			if got := lastAttr(rec, "reverse tunnel down", "error"); !strings.Contains(got, end.cause) {
				t.Errorf("tunnel down because %q; want %q", got, end.cause)
			}
			// The old holder ends on the node, whatever ended the session.
			waitFor(t, 5*time.Second, "old holder gone", func() bool { return gone(holder) })
			if out, err := viaSocket(alice, redisSock, "PING\r\n"); err != nil || out != "+PONG\r\n" {
				t.Errorf("PING after = %q, %v; want +PONG", out, err)
			}
			if got := testutil.ToFloat64(rv.Metrics.reconnects); got != float64(i+1) {
				t.Errorf("reconnects = %v; want %d", got, i+1)
			}
		})
	}
}

// chownAll gives dir and what it holds to uid.
func chownAll(dir string, uid int) error {
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

func TestReverseNodeHostKeyMismatchRig(t *testing.T) {
	r := testrig.Load(t)
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
	var mu sync.Mutex
	var hooked []error
	states := &stateRecorder{}
	rec := newLogRecorder(t)
	rv := &Reverse{
		Hop:          rigHop(t, r, wrong, &loginDialer{}),
		NodeFile:     nodeFile(t, node),
		SocketDir:    rigSocketDir(t, r),
		Endpoints:    []Endpoint{{ListenPort: 7000, Host: "127.0.0.1", Port: startTCPEcho(t)}},
		Log:          slog.New(rec),
		PollInterval: 20 * time.Millisecond,
		BackoffMin:   50 * time.Millisecond,
		BackoffMax:   300 * time.Millisecond,
		OnState:      states.record,
		OnHostKeyError: func(err error) {
			mu.Lock()
			hooked = append(hooked, err)
			mu.Unlock()
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rv.Run(ctx) }()
	waitFor(t, 15*time.Second, "two attempts", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(hooked) >= 2
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	mu.Lock()
	var keyErr *sshx.HostKeyError
	if !errors.As(hooked[0], &keyErr) {
		t.Errorf("OnHostKeyError got %v; want an *sshx.HostKeyError", hooked[0])
	}
	mu.Unlock()
	if n := rec.count("host key rejected: not connecting (a man-in-the-middle, or wrong pinned host keys)", nil); n != 1 {
		t.Errorf("host key errors logged at error level = %d; want 1 for the series", n)
	}
	if len(states.get()) != 0 {
		t.Errorf("states = %v; want never up", states.get())
	}
	if _, err := os.Lstat(rv.SocketDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket directory made on a node with a wrong host key: %v", err)
	}
}
