package jobscript

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	"github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/salt"
	"github.com/sluice-hpc/sluice/internal/testrig"
)

// These tests run the reverse tunnel's snippet for real: rendered scripts
// under sh and bash, the real relay (built from cmd/sluice-relay), and the
// tunnel's sockets made by the test in the place of the pod's shadow.

// reverseSetup is what a reverse job of a test needs: a socket directory
// root (not made yet), the relay and a loopback address of its own.
type reverseSetup struct {
	root  string
	relay string
	addr  netip.Addr
}

func newReverseSetup(t *testing.T, relayBin string) *reverseSetup {
	t.Helper()
	// Short, as unix socket paths must be.
	base, err := os.MkdirTemp("", "rev")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	addr, err := annotations.DeriveBind(hex.EncodeToString(b[:]), salt.New())
	if err != nil {
		t.Fatal(err)
	}
	return &reverseSetup{root: filepath.Join(base, "sock"), relay: relayBin, addr: addr}
}

// reverse is the ReverseJob of a test job, with a short timeout.
func (s *reverseSetup) reverse(names ...string) *ReverseJob {
	return &ReverseJob{
		Addr: s.addr, Ports: []uint16{6379, 9000}, Names: names,
		SocketDirRoot: s.root, RelayPath: s.relay, Timeout: 20 * time.Second, Salt: salt.New(),
	}
}

func (s *reverseSetup) dir(job *Job) string { return job.Reverse.SocketDir(job.UID) }

// startTunnel plays the pod's shadow: once the relay is ready in dir, it
// listens on rev-<port>.sock for each port and hands every connection to
// serve. The channel gives the socket directory as it was then.
func startTunnel(t *testing.T, dir string, ports []uint16, serve func(net.Conn)) <-chan os.FileInfo {
	t.Helper()
	seen := make(chan os.FileInfo, 1)
	stop := make(chan struct{})
	var mu sync.Mutex
	var listeners []net.Listener
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := os.Stat(filepath.Join(dir, "rev-relay.ready")); err == nil {
				break
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			t.Errorf("tunnel: %v", err)
			return
		}
		seen <- fi
		for _, p := range ports {
			ln, err := net.Listen("unix", filepath.Join(dir, relay.SocketName(p)))
			if err != nil {
				t.Errorf("tunnel: %v", err)
				return
			}
			mu.Lock()
			listeners = append(listeners, ln)
			mu.Unlock()
			wg.Go(func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					wg.Go(func() { defer c.Close(); serve(c) })
				}
			})
		}
	})
	t.Cleanup(func() {
		close(stop)
		mu.Lock()
		for _, ln := range listeners {
			ln.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return seen
}

// pong answers a Redis PING as Redis does.
func pong(c net.Conn) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && strings.TrimSpace(line) == "PING" {
		c.Write([]byte("+PONG\r\n"))
	}
}

func idle(net.Conn) {}

func TestReverseScriptReachesTheTunnel(t *testing.T) {
	relayBin := scripttest.BuildRelay(t)
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			s := newReverseSetup(t, relayBin)
			job := testJob()
			job.Containers = []Container{sh("client", "printf 'PING\\r\\n' | busybox nc "+s.addr.String()+" 6379")}
			job.Reverse = s.reverse("redis")
			seen := startTunnel(t, s.dir(job), job.Reverse.Ports, pong)
			old := syscall.Umask(0) // the modes must not depend on it
			dir := runJob(t, shell, job)
			syscall.Umask(old)
			out := readFile(t, dir, JobOutFile)
			wantLog(t, dir, "client", "+PONG")
			wantFile(t, dir, JobExitFile, "0\n")
			select {
			case fi := <-seen:
				if fi.Mode() != os.ModeDir|0o700 || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
					t.Errorf("socket directory %v, uid %d; want drwx------ of uid %d", fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid, os.Getuid())
				}
			default:
				t.Error("the tunnel never saw the relay ready")
			}
			if fi, err := os.Stat(s.root); err != nil || fi.Mode() != os.ModeDir|os.ModeSticky|0o777 {
				t.Errorf("socket directory root: %v, %v; want drwxrwxrwt", fi.Mode(), err)
			}
			if _, err := os.Lstat(s.dir(job)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("socket directory after the job: %v; want it removed", err)
			}
			for _, want := range []string{
				"sluice: warning: the none runtime cannot remap /etc/hosts: redis do not resolve to the relay; reach them at " + s.addr.String(),
				"sluice: reverse tunnel up: relay on " + s.addr.String() + ", ports 6379,9000",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("job.out lacks %q:\n%s", want, out)
				}
			}
			if t.Failed() {
				t.Logf("job.out:\n%s", out)
			}
		})
	}
}

// fakeApptainer is an apptainer that shows the binds it was given and the
// hosts file bound over /etc/hosts.
const fakeApptainer = `#!/bin/sh
printf 'APPTAINER_BIND=%s\n' "${APPTAINER_BIND-(unset)}"
printf 'SINGULARITY_BIND=%s\n' "${SINGULARITY_BIND-(unset)}"
sluice_last=${APPTAINER_BIND##*,}
printf 'HOSTS=%s\n' "${sluice_last%:/etc/hosts}"
cat "${sluice_last%:/etc/hosts}"
`

func TestReverseScriptApptainerBinds(t *testing.T) {
	relayBin := scripttest.BuildRelay(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "apptainer"), []byte(fakeApptainer), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	nodeHosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	const unset = "<unset>"
	tests := []struct {
		name          string
		apptainer     string // the job's environment
		singularity   string
		preExec       string
		wantPrefix    string // of APPTAINER_BIND, before the hosts bind
		wantSingulary string
	}{
		{"neither", unset, unset, "", "", "(unset)"},
		{"singularity only", unset, "/a:/a,/b", "", "/a:/a,/b,", "/a:/a,/b"},
		{"apptainer only", "/c:/c", unset, "", "/c:/c,", "(unset)"},
		{"both", "/c:/c", "/a:/a", "", "/c:/c,", "/a:/a"},
		{"apptainer empty", "", "/a:/a", "", "/a:/a,", "/a:/a"},
		{"pre-exec sets singularity", unset, unset, "export SINGULARITY_BIND=/p:/p", "/p:/p,", "/p:/p"},
		{"pre-exec sets apptainer", unset, "/a:/a", "export APPTAINER_BIND=/q:/q", "/q:/q,", "/a:/a"},
	}
	for _, shell := range shells {
		for _, tt := range tests {
			t.Run(shell+"/"+tt.name, func(t *testing.T) {
				for name, v := range map[string]string{"APPTAINER_BIND": tt.apptainer, "SINGULARITY_BIND": tt.singularity} {
					t.Setenv(name, v)
					if v == unset {
						os.Unsetenv(name)
					}
				}
				s := newReverseSetup(t, relayBin)
				job := testJob()
				job.PreExec = tt.preExec
				job.Containers[0].EnvFile = envFilePath("main")
				job.Reverse = s.reverse("redis", "minio.storage")
				startTunnel(t, s.dir(job), job.Reverse.Ports, idle)
				dir, cmd := startJob(t, shell, job, RuntimeApptainer)
				_ = cmd.Wait()
				wantFile(t, dir, JobExitFile, "0\n")
				lines := logLines(t, dir, "main")
				if len(lines) < 6 {
					t.Fatalf("log %q; want the binds and the hosts file\njob.out:\n%s", lines, readFile(t, dir, JobOutFile))
				}
				hosts, ok := strings.CutPrefix(lines[2], "HOSTS=")
				if !ok || !strings.HasPrefix(hosts, "/") {
					t.Fatalf("log %q; want HOSTS= on the third line", lines)
				}
				if want := "APPTAINER_BIND=" + tt.wantPrefix + hosts + ":/etc/hosts"; lines[0] != want {
					t.Errorf("%s; want %s", lines[0], want)
				}
				if want := "SINGULARITY_BIND=" + tt.wantSingulary; lines[1] != want {
					t.Errorf("%s; want %s", lines[1], want)
				}
				wantHosts := []string{"# sluice: the reverse tunnel", s.addr.String() + " redis", s.addr.String() + " minio.storage"}
				if got := lines[3:6]; strings.Join(got, "\n") != strings.Join(wantHosts, "\n") {
					t.Errorf("hosts file starts with %q; want %q", got, wantHosts)
				}
				if got, want := strings.Join(lines[6:], "\n"), strings.TrimRight(string(nodeHosts), "\n"); got != want {
					t.Errorf("hosts file goes on with %q; want the node's /etc/hosts %q", got, want)
				}
				if _, err := os.Stat(hosts); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("hosts file %s after the job: %v; want it removed", hosts, err)
				}
			})
		}
	}
}

func TestReverseScriptUnderCharliecloud(t *testing.T) {
	img := chImage(t)
	for _, f := range []string{"etc/hosts"} {
		if err := os.WriteFile(filepath.Join(img, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("busybox", filepath.Join(img, "bin", "nc")); err != nil {
		t.Fatal(err)
	}
	s := newReverseSetup(t, scripttest.BuildRelay(t))
	job := testJob()
	job.Init = []Container{{Name: "show-hosts", Image: img, EnvFile: envFilePath("show-hosts"),
		Command: []string{"sh", "-c", "cat /etc/hosts | head -n 2"}}}
	job.Containers = []Container{{Name: "client", Image: img, EnvFile: envFilePath("client"),
		Command: []string{"sh", "-c", "printf 'PING\\r\\n' | nc redis 6379"}}}
	job.Reverse = s.reverse("redis")
	startTunnel(t, s.dir(job), job.Reverse.Ports, pong)
	dir := runJobWith(t, "sh", job, RuntimeCharliecloud)
	wantLog(t, dir, "show-hosts", "# sluice: the reverse tunnel", s.addr.String()+" redis")
	wantLog(t, dir, "client", "+PONG")
	wantFile(t, dir, JobExitFile, "0\n")
	if t.Failed() {
		t.Logf("job.out:\n%s", readFile(t, dir, JobOutFile))
	}
}

func TestReverseScriptFails(t *testing.T) {
	relayBin := scripttest.BuildRelay(t)
	tests := []struct {
		name    string
		prepare func(t *testing.T, s *reverseSetup, job *Job)
		want    []string
		not     string
	}{
		{"no tunnel", nil, []string{
			"sluice: reverse tunnel not up after 2s in ",
			": the tunnel's sockets are missing: rev-6379.sock rev-9000.sock (the pod's shadow makes them over SSH)",
		}, "relay is not ready"},
		{"relay never ready", func(t *testing.T, s *reverseSetup, job *Job) {
			fake := filepath.Join(t.TempDir(), "relay")
			if err := os.WriteFile(fake, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			job.Reverse.RelayPath = fake
		}, []string{"the relay is not ready (no rev-relay.ready); the tunnel's sockets are missing: rev-6379.sock rev-9000.sock"}, ""},
		{"port taken", func(t *testing.T, s *reverseSetup, job *Job) {
			ln, err := net.Listen("tcp4", netip.AddrPortFrom(s.addr, 9000).String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
		}, []string{"sluice: reverse tunnel: the relay exited with status 3 before the tunnel was up: sluice-relay: port 9000 on "}, ""},
		{"no socket directory root", func(_ *testing.T, _ *reverseSetup, job *Job) {
			job.Reverse.SocketDirRoot = ""
		}, []string{"sluice: reverse tunnel: the site sets no SocketDirRoot"}, ""},
		{"root is a file", func(t *testing.T, s *reverseSetup, _ *Job) {
			if err := os.WriteFile(s.root, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, []string{"is not usable: it is not a directory this job's user can write to"}, ""},
		{"root open to all and not sticky", func(t *testing.T, s *reverseSetup, _ *Job) {
			if err := os.Mkdir(s.root, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(s.root, 0o777); err != nil {
				t.Fatal(err)
			}
		}, []string{"is not safe: " /* the path follows */, "sock is writable by others (drwxrwxrwx) and not sticky"}, ""},
		// A sticky root another user made first: its owner may rename
		// what it holds, this job's socket directory included.
		{"root of another user", func(t *testing.T, s *reverseSetup, _ *Job) {
			if os.Getuid() != 0 {
				testrig.Unavailable(t, "only root can give a directory to another user")
			}
			mkdir(t, s.root)
			if err := os.Chmod(s.root, os.ModeSticky|0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(s.root, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, []string{"reverse tunnel: socket directory root ", "/sock is not safe: the directory ", "/sock is owned by uid 65534 (", "), not by root or uid 0"}, ""},
		{"parent of another user", func(t *testing.T, s *reverseSetup, _ *Job) {
			if os.Getuid() != 0 {
				testrig.Unavailable(t, "only root can give a directory to another user")
			}
			if err := os.Chown(filepath.Dir(s.root), 65534, 65534); err != nil {
				t.Fatal(err)
			}
			mkdir(t, s.root)
		}, []string{"is not safe: the directory " /* the parent */, " is owned by uid 65534 ("}, "/sock is owned"},
		{"root through another user's link", func(t *testing.T, s *reverseSetup, _ *Job) {
			if os.Getuid() != 0 {
				testrig.Unavailable(t, "only root can give a link to another user")
			}
			real := filepath.Join(filepath.Dir(s.root), "real")
			mkdir(t, real)
			if err := os.Symlink(real, s.root); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(s.root, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, []string{"is not safe: the symbolic link ", "/sock is owned by uid 65534 ("}, ""},
		{"relay missing", func(_ *testing.T, _ *reverseSetup, job *Job) {
			job.Reverse.RelayPath = "/nonexistent/sluice-relay"
		}, []string{"the relay /nonexistent/sluice-relay is missing or not executable on this node"}, ""},
		{"socket directory is a symlink", func(t *testing.T, s *reverseSetup, job *Job) {
			mkdir(t, s.root)
			if err := os.Symlink(t.TempDir(), s.dir(job)); err != nil {
				t.Fatal(err)
			}
		}, []string{"exists and is not a directory of this job's user"}, ""},
		{"socket directory of another user", func(t *testing.T, s *reverseSetup, job *Job) {
			if os.Getuid() != 0 {
				testrig.Unavailable(t, "only root can give a directory to another user")
			}
			mkdir(t, s.root)
			mkdir(t, s.dir(job))
			if err := os.Chown(s.dir(job), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, []string{"exists and is not a directory of this job's user"}, ""},
		{"stale sockets of an earlier run", func(t *testing.T, s *reverseSetup, job *Job) {
			mkdir(t, s.root)
			mkdir(t, s.dir(job))
			for _, p := range job.Reverse.Ports {
				ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(s.dir(job), relay.SocketName(p)), Net: "unix"})
				if err != nil {
					t.Fatal(err)
				}
				ln.SetUnlinkOnClose(false)
				ln.Close()
			}
		}, []string{"the tunnel's sockets are missing: rev-6379.sock rev-9000.sock"}, "relay is not ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newReverseSetup(t, relayBin)
			job := testJob()
			job.Containers = []Container{sh("main", "echo ran")}
			job.Reverse = s.reverse("redis")
			job.Reverse.Timeout = 2 * time.Second
			if tt.prepare != nil {
				tt.prepare(t, s, job)
			}
			start := time.Now()
			dir := runJob(t, "sh", job)
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("the job took %v to fail; want about its 2s timeout", d)
			}
			wantFile(t, dir, JobExitFile, "1\n")
			wantNoFile(t, dir, LogFile("main"))
			out := readFile(t, dir, JobOutFile)
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("job.out lacks %q:\n%s", want, out)
				}
			}
			if tt.not != "" && strings.Contains(out, tt.not) {
				t.Errorf("job.out holds %q:\n%s", tt.not, out)
			}
		})
	}
}

func TestReverseScriptStopsOnSIGTERM(t *testing.T) {
	s := newReverseSetup(t, scripttest.BuildRelay(t))
	job := testJob()
	job.Containers = []Container{sh("main", "echo ran")}
	job.Reverse = s.reverse("redis")
	dir, cmd := startJob(t, "sh", job, RuntimeNone)
	waitFor(t, func() bool {
		_, err := os.Stat(filepath.Join(s.dir(job), "rev-relay.ready"))
		return err == nil
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = cmd.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the job took %v to stop while waiting for the tunnel", d)
	}
	wantFile(t, dir, JobExitFile, "143\n")
	wantNoFile(t, dir, LogFile("main"))
	// The relay is gone: its port is free again, its directory removed.
	waitFor(t, func() bool {
		ln, err := net.Listen("tcp4", netip.AddrPortFrom(s.addr, 6379).String())
		if err == nil {
			ln.Close()
		}
		return err == nil
	})
	if _, err := os.Lstat(s.dir(job)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket directory after the job: %v; want it removed", err)
	}
}

// TestReverseScriptFailsWhenTheRelayExits kills the relay once the tunnel
// is up, while the container runs: the job stops its containers and fails,
// saying why, since the names it maps point at an address nobody holds.
func TestReverseScriptFailsWhenTheRelayExits(t *testing.T) {
	for _, shell := range []string{"sh", "bash"} {
		t.Run(shell, func(t *testing.T) {
			s := newReverseSetup(t, scripttest.BuildRelay(t))
			job := testJob()
			job.Containers = []Container{sh("main", "echo started; sleep 20; echo not stopped")}
			job.Reverse = s.reverse("redis")
			startTunnel(t, s.dir(job), job.Reverse.Ports, pong)
			dir, cmd := startJob(t, shell, job, RuntimeNone)
			waitFor(t, func() bool {
				b, _ := os.ReadFile(filepath.Join(dir, LogFile("main")))
				return strings.Contains(string(b), "started")
			})
			pid := scripttest.RelayPID(t, s.dir(job))
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_ = cmd.Wait()
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the job took %v to end after its relay", d)
			}
			wantFile(t, dir, JobExitFile, "1\n")
			out := readFile(t, dir, JobOutFile)
			if last := scripttest.LastSluice(out); !scripttest.RelayKilledLine(last) {
				t.Errorf("last sluice line %q; want it to say the relay was killed (%q)\njob.out:\n%s", last, scripttest.RelayKilled[0], out)
			}
			if log := readFile(t, dir, LogFile("main")); strings.Contains(log, "not stopped") {
				t.Errorf("the container ran on without the relay:\n%s", log)
			}
		})
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}
