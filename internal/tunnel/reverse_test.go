package tunnel

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestReverseCheck(t *testing.T) {
	hop := &Hop{}
	ep := []Endpoint{{ListenPort: 6379, Host: "redis.default", Port: 6379}}
	long := "/" + strings.Repeat("d", 100)
	tests := []struct {
		name string
		r    Reverse
		want string
	}{
		{"no hop", Reverse{NodeFile: "n", SocketDir: "/tmp/s/u", Endpoints: ep}, "no hop"},
		{"no node file", Reverse{Hop: hop, SocketDir: "/tmp/s/u", Endpoints: ep}, "no node file"},
		{"no endpoint", Reverse{Hop: hop, NodeFile: "n", SocketDir: "/tmp/s/u"}, "no endpoint"},
		{"no socket dir", Reverse{Hop: hop, NodeFile: "n", Endpoints: ep}, "no socket directory"},
		{"relative socket dir", Reverse{Hop: hop, NodeFile: "n", SocketDir: "tmp/s", Endpoints: ep}, "absolute, clean"},
		{"unclean socket dir", Reverse{Hop: hop, NodeFile: "n", SocketDir: "/tmp/s/../u", Endpoints: ep}, "absolute, clean"},
		{"root socket dir", Reverse{Hop: hop, NodeFile: "n", SocketDir: "/", Endpoints: ep}, "absolute, clean"},
		{"newline in socket dir", Reverse{Hop: hop, NodeFile: "n", SocketDir: "/tmp/a\nb", Endpoints: ep}, "control characters"},
		{"socket path too long", Reverse{Hop: hop, NodeFile: "n", SocketDir: long, Endpoints: ep}, "longer than the 107 bytes"},
		{"listen port 0", Reverse{Hop: hop, NodeFile: "n", SocketDir: "/s", Endpoints: []Endpoint{{0, "redis", 6379}}}, "listen port 0 out of range"},
		{"port too high", Reverse{Hop: hop, NodeFile: "n", SocketDir: "/s", Endpoints: []Endpoint{{1, "redis", 65536}}}, "port 65536 out of range"},
		{"bad host", Reverse{Hop: hop, NodeFile: "n", SocketDir: "/s", Endpoints: []Endpoint{{1, "re dis;id", 1}}}, `host name "re dis;id": only letters`},
		{"empty host", Reverse{Hop: hop, NodeFile: "n", SocketDir: "/s", Endpoints: []Endpoint{{1, "", 1}}}, `host name "": empty`},
		{"zoned host", Reverse{Hop: hop, NodeFile: "n", SocketDir: "/s", Endpoints: []Endpoint{{1, "fe80::1%eth0", 1}}}, "must not have a zone"},
		{"listen port twice", Reverse{Hop: hop, NodeFile: "n", SocketDir: "/s", Endpoints: []Endpoint{{1, "a", 1}, {1, "b", 2}}}, "listen port 1 listed twice"},
		{"negative", Reverse{Hop: hop, NodeFile: "n", SocketDir: "/s", Endpoints: ep, KeepAliveTimeout: -1}, "negative"},
		{"backoff", Reverse{Hop: hop, NodeFile: "n", SocketDir: "/s", Endpoints: ep, BackoffMin: time.Second, BackoffMax: time.Millisecond}, "backoff max"},
		{"ok", Reverse{Hop: hop, NodeFile: "n", SocketDir: "/tmp/sluice/0b5c-uid", Endpoints: []Endpoint{
			{6379, "redis.default", 6379}, {443, "kubernetes.default.svc.cluster.local", 443}, {9000, "10.96.0.10", 9000}, {8080, "fd00::1", 80},
		}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.check()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("check = %v; want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("check = %v; want an error with %q", err, tt.want)
			}
		})
	}
}

func TestReverseRunInvalid(t *testing.T) {
	err := (&Reverse{}).Run(t.Context())
	if err == nil || !strings.HasPrefix(err.Error(), "reverse: ") {
		t.Errorf("Run = %v; want a reverse: configuration error", err)
	}
}

func TestEndpointString(t *testing.T) {
	e := Endpoint{ListenPort: 8443, Host: "fd00::1", Port: 443}
	if got, want := e.String(), "8443=[fd00::1]:443"; got != want {
		t.Errorf("String = %q; want %q", got, want)
	}
	if got, want := e.socket(), "rev-8443.sock"; got != want {
		t.Errorf("socket = %q; want %q", got, want)
	}
}

func TestParseSocketDir(t *testing.T) {
	tests := []struct {
		name  string
		out   string
		want  socketDir
		parse string // error from parseSocketDir
		check string // error from check
	}{
		{"ok", "uid 1001\ndir 1234 drwx------ 2 1001 1001 40 Jan  1 00:00 /tmp/s/u\n",
			socketDir{uid: "1001", inode: "1234", mode: "drwx------", owner: "1001"}, "", ""},
		{"padded inode, ACL mark", "uid 1001\ndir   77 drwxr-x---+ 2 1001 100 40 Jan 1 00:00 /tmp/s/u\n",
			socketDir{uid: "1001", inode: "77", mode: "drwxr-x---+", owner: "1001"}, "", ""},
		{"chatty start-up file", "Welcome to node1\nuid 0\nmotd\ndir 5 drwx------ 2 0 0 40 Jan 1 00:00 /s\n",
			socketDir{uid: "0", inode: "5", mode: "drwx------", owner: "0"}, "", ""},
		{"other owner", "uid 1001\ndir 1 drwx------ 2 1002 1002 40 Jan 1 00:00 /s\n",
			socketDir{uid: "1001", inode: "1", mode: "drwx------", owner: "1002"}, "", "owned by uid 1002"},
		{"group writable", "uid 1001\ndir 1 drwxrwx--- 2 1001 1001 40 Jan 1 00:00 /s\n",
			socketDir{uid: "1001", inode: "1", mode: "drwxrwx---", owner: "1001"}, "", "writable by group or others"},
		{"world writable", "uid 1001\ndir 1 drwx---rwt 2 1001 1001 40 Jan 1 00:00 /s\n",
			socketDir{uid: "1001", inode: "1", mode: "drwx---rwt", owner: "1001"}, "", "writable by group or others"},
		{"symlink", "uid 1001\ndir 1 lrwxrwxrwx 1 1001 1001 4 Jan 1 00:00 /s -> /x\n",
			socketDir{uid: "1001", inode: "1", mode: "lrwxrwxrwx", owner: "1001"}, "", "not a directory"},
		{"no uid", "dir 1 drwx------ 2 1001 1001 40 Jan 1 00:00 /s\n", socketDir{}, "unexpected description", ""},
		{"no dir", "uid 1001\n", socketDir{}, "unexpected description", ""},
		{"names for ids", "uid 1001\ndir 1 drwx------ 2 alice alice 40 Jan 1 00:00 /s\n", socketDir{}, "unexpected description", ""},
		{"short mode", "uid 1001\ndir 1 drwx 2 1001 1001 40 Jan 1 00:00 /s\n", socketDir{}, "unexpected description", ""},
		{"empty", "", socketDir{}, "unexpected description", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSocketDir(tt.out)
			if tt.parse != "" {
				if err == nil || !strings.Contains(err.Error(), tt.parse) {
					t.Fatalf("parseSocketDir = %+v, %v; want an error with %q", got, err, tt.parse)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseSocketDir = %+v, %v; want %+v", got, err, tt.want)
			}
			err = got.check()
			switch {
			case tt.check == "" && err != nil:
				t.Errorf("check = %v; want nil", err)
			case tt.check != "" && (err == nil || !strings.Contains(err.Error(), tt.check)):
				t.Errorf("check = %v; want an error with %q", err, tt.check)
			}
		})
	}
}

func TestReadHolder(t *testing.T) {
	held := make(chan struct{})
	reason := readHolder(strings.NewReader("motd\nheld\nheld\nended socket rev-1.sock removed\n"), held)
	if reason != "socket rev-1.sock removed" {
		t.Errorf("reason = %q; want the socket", reason)
	}
	select {
	case <-held:
	default:
		t.Error("held not closed after a held line")
	}
	held = make(chan struct{})
	if reason := readHolder(strings.NewReader("ended socket directory removed\n"), held); reason != "socket directory removed" {
		t.Errorf("reason = %q", reason)
	}
	select {
	case <-held:
		t.Error("held closed with no held line")
	default:
	}
}

func TestHolderFailed(t *testing.T) {
	err := holderFailed(errors.New("exit status 2"), "sh: 1: syntax error\n")
	if !errors.Is(err, errHoldEnded) || err.Error() != "holder ended: exit status 2: sh: 1: syntax error" {
		t.Errorf("holderFailed = %q", err)
	}
	if err := holderFailed(nil, ""); err.Error() != "holder ended: no reason given" {
		t.Errorf("holderFailed(nil) = %q", err)
	}
}

// shells are the POSIX shells of this machine to run the scripts with.
func shells(t *testing.T) [][]string {
	t.Helper()
	var found [][]string
	for _, sh := range [][]string{{"/bin/sh"}, {"dash"}, {"bash", "--posix"}, {"busybox", "sh"}} {
		if p, err := exec.LookPath(sh[0]); err == nil {
			found = append(found, append([]string{p}, sh[1:]...))
		}
	}
	return found
}

// shellCmd runs a command line built by shellCommand the way the node's
// login shell would, with sh -c, the script under shell instead of
// /bin/sh.
func shellCmd(shell []string, line string) *exec.Cmd {
	line = strings.Replace(line, "exec /bin/sh ", "exec "+strings.Join(shell, " ")+" ", 1)
	return exec.Command("/bin/sh", "-c", line)
}

func TestReverseScriptsSyntax(t *testing.T) {
	for _, sh := range shells(t) {
		for name, script := range map[string]string{"prepare": prepareScript, "clear": clearScript, "hold": holdScript} {
			cmd := exec.Command(sh[0], append(sh[1:], "-n", "-c", script)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%v -n %s: %v\n%s", sh, name, err, out)
			}
		}
	}
}

func TestReverseScripts(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(filepath.Base(sh[0]), func(t *testing.T) {
			t.Parallel()
			testScripts(t, sh)
		})
	}
}

func testScripts(t *testing.T, sh []string) {
	// A directory name a shell would split and expand, were it not quoted.
	dir := filepath.Join(t.TempDir(), "root $(touch pwned) *", "uid'x")
	eps := []Endpoint{{ListenPort: 6379, Host: "redis", Port: 6379}, {ListenPort: 9000, Host: "minio", Port: 9000}}

	out, err := shellCmd(sh, prepareCommand(dir)).Output()
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	d, err := parseSocketDir(string(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.check(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory = %v, %v; want a directory 0700", fi, err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if d.inode != strconv.FormatUint(st.Ino, 10) || d.owner != strconv.Itoa(os.Getuid()) {
		t.Errorf("described inode %s owner %s; want %d and %d", d.inode, d.owner, st.Ino, os.Getuid())
	}
	if _, err := os.Stat("pwned"); err == nil {
		t.Fatal("a value reached the shell unquoted")
	}
	// The missing root was made every user's and sticky, as /tmp.
	if fi, err := os.Stat(filepath.Dir(dir)); err != nil || fi.Mode().Perm() != 0o777 || fi.Mode()&os.ModeSticky == 0 {
		t.Errorf("socket directory root = %v, %v; want drwxrwxrwt", fi.Mode(), err)
	}
	// Again on the directory that exists: the same one.
	out, err = shellCmd(sh, prepareCommand(dir)).Output()
	if again, perr := parseSocketDir(string(out)); err != nil || perr != nil || again.inode != d.inode {
		t.Fatalf("prepare again = %+v, %v, %v; want inode %s", again, err, perr, d.inode)
	}

	// clear removes stale sockets of the tunnel, and nothing else.
	stale := listenStale(t, filepath.Join(dir, "rev-6379.sock"))
	other := listenStale(t, filepath.Join(dir, "rev-1.sock"))
	if out, err := shellCmd(sh, clearCommand(dir, d.inode, eps)).CombinedOutput(); err != nil {
		t.Fatalf("clear: %v\n%s", err, out)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale socket still there: %v", err)
	}
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("a socket not the tunnel's was removed: %v", err)
	}
	// A file that is not a socket is left, and clear fails.
	regular := filepath.Join(dir, "rev-9000.sock")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := shellCmd(sh, clearCommand(dir, d.inode, eps)).CombinedOutput(); err == nil || !strings.Contains(string(out), "not a socket") {
		t.Errorf("clear over a regular file = %v, %s; want it refused", err, out)
	}
	os.Remove(regular)
	// clear refuses a directory replaced since it was checked.
	if out, err := shellCmd(sh, clearCommand(dir, "1", eps)).CombinedOutput(); err == nil || !strings.Contains(string(out), "replaced") {
		t.Errorf("clear with another inode = %v, %s; want it refused", err, out)
	}

	socks := func() {
		for _, e := range eps {
			if p := filepath.Join(dir, e.socket()); !exists(p) {
				listenStale(t, p)
			}
		}
	}
	t.Run("socket removed", func(t *testing.T) {
		socks()
		h := startHolder(t, sh, dir, d.inode, eps)
		os.Remove(filepath.Join(dir, "rev-9000.sock"))
		h.wantEnd(t, "socket rev-9000.sock removed")
	})
	t.Run("directory replaced", func(t *testing.T) {
		socks()
		h := startHolder(t, sh, dir, d.inode, eps)
		// A requeue recreated the directory, and something made sockets
		// of the same names in it: only the inode tells. (The old one is
		// removed after the new one is made, so that the file system
		// cannot hand its inode on.)
		if err := os.Rename(dir, dir+".old"); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(dir + ".old"); err != nil {
			t.Fatal(err)
		}
		socks()
		h.wantEnd(t, "socket directory replaced")
		// The new directory is described with its new inode.
		out, err := shellCmd(sh, prepareCommand(dir)).Output()
		nd, perr := parseSocketDir(string(out))
		if err != nil || perr != nil || nd.inode == d.inode {
			t.Fatalf("prepare of the new directory = %+v, %v, %v; want a new inode", nd, err, perr)
		}
		d = nd
	})
	t.Run("directory removed", func(t *testing.T) {
		socks()
		h := startHolder(t, sh, dir, d.inode, eps)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		h.wantEnd(t, "socket directory removed")
	})
	t.Run("output closed", func(t *testing.T) {
		out, err := shellCmd(sh, prepareCommand(dir)).Output()
		if err != nil {
			t.Fatal(err)
		}
		if d, err = parseSocketDir(string(out)); err != nil {
			t.Fatal(err)
		}
		socks()
		h := startHolder(t, sh, dir, d.inode, eps)
		// The connection is gone: the holder's next write kills it.
		h.out.Close()
		select {
		case <-h.exited:
		case <-time.After(5 * time.Second):
			t.Fatal("holder still running 5s after its output was closed")
		}
	})
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// listenStale leaves a socket file at path with no listener behind it, as
// a dead sshd session does.
func listenStale(t *testing.T, path string) string {
	t.Helper()
	ln, err := listenUnixKeep(path)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	return path
}

type holder struct {
	out    io.ReadCloser
	lines  chan string
	exited chan struct{}
}

// startHolder starts the holder and waits for its first line, which must
// say it holds.
func startHolder(t *testing.T, sh []string, dir, inode string, eps []Endpoint) *holder {
	t.Helper()
	cmd := shellCmd(sh, holdCommand(dir, inode, eps))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{out: out, lines: make(chan string, 100), exited: make(chan struct{})}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(h.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	go func() {
		<-read
		cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-h.exited
		if stderr.Len() > 0 {
			t.Logf("holder stderr: %s", stderr.String())
		}
	})
	select {
	case l := <-h.lines:
		if l != holdLine {
			t.Fatalf("holder's first line = %q; want %q", l, holdLine)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("holder said nothing within 5s")
	}
	return h
}

// wantEnd waits for the holder to end and checks why it says it ended.
func (h *holder) wantEnd(t *testing.T, reason string) {
	t.Helper()
	select {
	case <-h.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("holder still running 5s after the change")
	}
	last := ""
	for l := range h.lines {
		if l != holdLine {
			last = l
		}
	}
	if last != holdEnd+reason {
		t.Errorf("holder ended saying %q; want %q", last, holdEnd+reason)
	}
}

// startReverse runs r until the test ends.
func startReverse(t *testing.T, r *Reverse) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v; want nil after cancel", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return within 10s of cancel")
		}
	})
}

// stateRecorder records OnState calls.
type stateRecorder struct {
	mu     sync.Mutex
	states []bool
}

func (s *stateRecorder) record(up bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states = append(s.states, up)
}

func (s *stateRecorder) get() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.states...)
}

// ups is how many times the tunnel came up.
func (s *stateRecorder) ups() int {
	n := 0
	for _, up := range s.get() {
		if up {
			n++
		}
	}
	return n
}

// startTCPEcho starts an echo server on 127.0.0.1, standing for a cluster
// endpoint, and returns its port.
func startTCPEcho(t *testing.T) int {
	t.Helper()
	return startJob(t, echoJob)
}

// echoUnix sends payload to the socket at path, half-closes, and checks
// the same bytes come back followed by EOF.
func echoUnix(t *testing.T, path string, payload []byte) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	sent := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		if err == nil {
			err = c.(*net.UnixConn).CloseWrite()
		}
		sent <- err
	}()
	got, err := io.ReadAll(c)
	if err := <-sent; err != nil {
		t.Fatalf("send: %v", err)
	}
	if err != nil {
		t.Fatalf("read echo: %v", err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatalf("echo gave %d bytes (%.20q); want the %d sent (%.20q)", len(got), got, len(payload), payload)
	}
}

func FuzzParseSocketDir(f *testing.F) {
	f.Add("uid 1001\ndir 1234 drwx------ 2 1001 1001 40 Jan  1 00:00 /tmp/s/u\n")
	f.Add("uid 0\ndir 1 d 2 0 0\n")
	f.Add("dir \nuid \n")
	f.Fuzz(func(t *testing.T, out string) {
		d, err := parseSocketDir(out)
		if err != nil {
			return
		}
		if !allDigits(d.uid) || !allDigits(d.inode) || !allDigits(d.owner) || len(d.mode) < 10 {
			t.Fatalf("parseSocketDir(%q) = %+v", out, d)
		}
		d.check() // must not panic
	})
}
