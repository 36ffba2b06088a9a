package jobscript

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	"github.com/sluice-hpc/sluice/internal/salt"
	"github.com/sluice-hpc/sluice/internal/testrig"
)

// These tests run the SOCKS wait of the reverse snippet for real: the test
// plays the tunnel's SOCKS session with listeners of its own (the same user
// as the script), or of another user.

// socksJob is a job with a SOCKS proxy on port and no forwards; its container
// shows the socket directory's mode.
func socksJob(s *reverseSetup, port uint16, timeout time.Duration) *Job {
	job := testJob()
	job.Reverse = &ReverseJob{SocksPort: port, SocketDirRoot: s.root, Timeout: timeout, Salt: salt.New()}
	job.Containers = []Container{sh("main", "ls -ldn "+s.dir(job)+" | awk '{ print $1 }'")}
	return job
}

// listenPort listens on network and address for the rest of the test and
// returns the port.
func listenPort(t *testing.T, network, address string) uint16 {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		testrig.Unavailable(t, fmt.Sprintf("cannot listen on %s %s: %v", network, address, err))
	}
	t.Cleanup(func() { ln.Close() })
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

// listenMapped listens on ::ffff:127.0.0.1 on an IPv6 socket that takes IPv4
// (as a JVM's does), which /proc/net/tcp6 shows as a v4-mapped address.
func listenMapped(t *testing.T) uint16 {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET6, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		testrig.Unavailable(t, "no IPv6 socket: "+err.Error())
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_IPV6, syscall.IPV6_V6ONLY, 0); err != nil {
		t.Fatal(err)
	}
	mapped := netip.MustParseAddr("::ffff:127.0.0.1").As16()
	if err := syscall.Bind(fd, &syscall.SockaddrInet6{Addr: mapped}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 1); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(sa.(*syscall.SockaddrInet6).Port)
}

// connectedPort holds a connection from 127.0.0.1 for the rest of the test
// and returns its local port: a socket of this user on 127.0.0.1 that is not
// listening.
func connectedPort(t *testing.T) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return uint16(c.LocalAddr().(*net.TCPAddr).Port)
}

// upLine is what the script says when the SOCKS proxy is up.
func upLine(port uint16) string {
	return "sluice: reverse tunnel: the SOCKS proxy is on 127.0.0.1:" + strconv.Itoa(int(port)) + ", open to every user of this node"
}

func TestReverseScriptSocksReady(t *testing.T) {
	tests := []struct {
		name   string
		listen func(t *testing.T) uint16
	}{
		{"127.0.0.1", func(t *testing.T) uint16 { return listenPort(t, "tcp4", "127.0.0.1:0") }},
		{"v4-mapped 127.0.0.1", listenMapped},
		// sshd under GatewayPorts no, asked for a bare port, binds
		// 127.0.0.1 and ::1.
		{"127.0.0.1 and ::1", func(t *testing.T) uint16 {
			p := listenPort(t, "tcp4", "127.0.0.1:0")
			listenPort(t, "tcp6", "[::1]:"+strconv.Itoa(int(p)))
			return p
		}},
	}
	for _, shell := range shells {
		for _, tt := range tests {
			t.Run(shell+"/"+tt.name, func(t *testing.T) {
				s := newReverseSetup(t, "")
				port := tt.listen(t)
				job := socksJob(s, port, 20*time.Second)
				dir := runJob(t, shell, job)
				out := readFile(t, dir, JobOutFile)
				wantFile(t, dir, JobExitFile, "0\n")
				wantLog(t, dir, "main", "drwx------")
				if !strings.Contains(out, upLine(port)) {
					t.Errorf("job.out lacks %q:\n%s", upLine(port), out)
				}
				if strings.Contains(out, "relay") {
					t.Errorf("job.out speaks of a relay, which a SOCKS proxy alone has not:\n%s", out)
				}
				if _, err := os.Lstat(s.dir(job)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("socket directory after the job: %v; want it removed", err)
				}
			})
		}
	}
}

// TestReverseScriptSocksWaits starts the listener once the job waits, as the
// tunnel's session does once the socket directory is there.
func TestReverseScriptSocksWaits(t *testing.T) {
	s := newReverseSetup(t, "")
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	ln.Close() // the job starts with nothing there
	job := socksJob(s, port, 20*time.Second)
	dir, cmd := startJob(t, "sh", job, RuntimeNone)
	waitFor(t, func() bool {
		_, err := os.Stat(s.dir(job))
		return err == nil
	})
	time.Sleep(300 * time.Millisecond) // a few rounds of the wait with nothing there
	listenPort(t, "tcp4", "127.0.0.1:"+strconv.Itoa(int(port)))
	_ = cmd.Wait()
	wantFile(t, dir, JobExitFile, "0\n")
	if out := readFile(t, dir, JobOutFile); !strings.Contains(out, upLine(port)) {
		t.Errorf("job.out lacks %q:\n%s", upLine(port), out)
	}
}

func TestReverseScriptSocksFails(t *testing.T) {
	tests := []struct {
		name    string
		listen  func(t *testing.T) uint16
		timeout time.Duration
		want    func(dir string, port uint16) string // dir: the socket directory
	}{
		{"0.0.0.0", func(t *testing.T) uint16 { return listenPort(t, "tcp4", "0.0.0.0:0") }, 20 * time.Second, gatewayPorts},
		{"[::]", func(t *testing.T) uint16 { return listenPort(t, "tcp6", "[::]:0") }, 20 * time.Second, gatewayPorts},
		// Wildcard and loopback, as sshd under GatewayPorts yes binds
		// 0.0.0.0 and [::] whatever it is asked: the wildcard wins.
		{"[::] and 127.0.0.1", func(t *testing.T) uint16 {
			p := listenPort(t, "tcp4", "127.0.0.1:0")
			listenPort(t, "tcp6", "[::]:"+strconv.Itoa(int(p)))
			return p
		}, 20 * time.Second, gatewayPorts},
		{"another user", func(t *testing.T) uint16 {
			if os.Getuid() != 0 {
				testrig.Unavailable(t, "only root can start a listener as another user (uid 65534)")
			}
			return holdAs(t, 65534, "127.0.0.1:0").Port()
		}, 20 * time.Second, func(_ string, port uint16) string {
			return fmt.Sprintf("sluice: reverse tunnel: port 127.0.0.1:%d, asked for the SOCKS proxy, is taken by uid 65534 on this node", port)
		}},
		// A connection from the port is not a listener.
		{"nothing listening", connectedPort, 2 * time.Second, socksMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newReverseSetup(t, "")
			port := tt.listen(t)
			job := socksJob(s, port, tt.timeout)
			start := time.Now()
			dir := runJob(t, "sh", job)
			took := time.Since(start)
			wantFile(t, dir, JobExitFile, "1\n")
			wantNoFile(t, dir, LogFile("main"))
			out := readFile(t, dir, JobOutFile)
			if want := tt.want(s.dir(job), port); !strings.Contains(out, want) {
				t.Errorf("job.out lacks %q:\n%s", want, out)
			}
			// At once, or at the timeout.
			if limit := min(tt.timeout, 10*time.Second) + 3*time.Second; took > limit {
				t.Errorf("the job took %v to fail; want under %v", took, limit)
			}
			if _, err := os.Lstat(s.dir(job)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("socket directory after the job: %v; want it removed", err)
			}
		})
	}
}

func gatewayPorts(_ string, port uint16) string {
	return fmt.Sprintf("sluice: reverse tunnel: the SOCKS proxy on port %d listens on every address of this node, not on 127.0.0.1 only: "+
		"the node's sshd binds remote forwards on all addresses (GatewayPorts yes in its sshd_config), which would open the proxy to other machines", port)
}

// socksMissing is the message of a job whose SOCKS proxy did not come up in
// its 2s.
func socksMissing(dir string, port uint16) string {
	return fmt.Sprintf("sluice: reverse tunnel not up after 2s in %s: the SOCKS proxy on 127.0.0.1:%d did not come up (the tunnel's session is missing)", dir, port)
}

// TestReverseScriptForwardsAndSocks runs a job with forwards and a SOCKS
// proxy: both are waited for, within the one timeout.
func TestReverseScriptForwardsAndSocks(t *testing.T) {
	relayBin := scripttest.BuildRelay(t)
	t.Run("up", func(t *testing.T) {
		s := newReverseSetup(t, relayBin)
		job := testJob()
		job.Containers = []Container{sh("client", "printf 'PING\\r\\n' | busybox nc "+s.addr.String()+" 6379")}
		job.Reverse = s.reverse("redis")
		job.Reverse.SocksPort = listenPort(t, "tcp4", "127.0.0.1:0")
		startTunnel(t, s.dir(job), job.Reverse.Ports, pong)
		dir := runJob(t, "sh", job)
		out := readFile(t, dir, JobOutFile)
		wantLog(t, dir, "client", "+PONG")
		wantFile(t, dir, JobExitFile, "0\n")
		for _, want := range []string{
			"sluice: reverse tunnel up: relay on " + s.addr.String() + ", ports 6379,9000",
			upLine(job.Reverse.SocksPort),
		} {
			if !strings.Contains(out, want) {
				t.Errorf("job.out lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("no SOCKS proxy", func(t *testing.T) {
		s := newReverseSetup(t, relayBin)
		job := testJob()
		job.Containers = []Container{sh("main", "echo ran")}
		job.Reverse = s.reverse("redis")
		job.Reverse.SocksPort = connectedPort(t)
		job.Reverse.Timeout = 2 * time.Second
		startTunnel(t, s.dir(job), job.Reverse.Ports, idle)
		dir := runJob(t, "sh", job)
		out := readFile(t, dir, JobOutFile)
		wantFile(t, dir, JobExitFile, "1\n")
		wantNoFile(t, dir, LogFile("main"))
		if want := socksMissing(s.dir(job), job.Reverse.SocksPort); !strings.Contains(out, want) {
			t.Errorf("job.out lacks %q:\n%s", want, out)
		}
	})
	t.Run("GatewayPorts", func(t *testing.T) {
		s := newReverseSetup(t, relayBin)
		job := testJob()
		job.Containers = []Container{sh("main", "echo ran")}
		job.Reverse = s.reverse("redis")
		job.Reverse.SocksPort = listenPort(t, "tcp4", "0.0.0.0:0")
		startTunnel(t, s.dir(job), job.Reverse.Ports, idle)
		dir := runJob(t, "sh", job)
		out := readFile(t, dir, JobOutFile)
		wantFile(t, dir, JobExitFile, "1\n")
		if want := gatewayPorts("", job.Reverse.SocksPort); !strings.Contains(out, want) {
			t.Errorf("job.out lacks %q:\n%s", want, out)
		}
	})
}
