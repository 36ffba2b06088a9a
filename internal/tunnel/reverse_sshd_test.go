package tunnel

import (
	"errors"
	"io"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/pipe"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"golang.org/x/crypto/ssh"
)

// fakeSSHD is an SSH server in the test process that does what a reverse
// tunnel asks of the login node's and the compute node's sshd: exec
// requests run with /bin/sh -c as the test's user, direct-tcpip to another
// fakeSSHD, and streamlocal forwards bound on the local filesystem. Like
// OpenSSH with StreamLocalBindUnlink no, it will not bind over an existing
// file and leaves the socket file behind when the forward ends; like
// OpenSSH, it does not kill a session's command when the connection drops
// (the command sees its output closed).
type fakeSSHD struct {
	t       testing.TB
	addr    string
	hostKey ssh.Signer
	client  ssh.PublicKey
	ln      net.Listener

	mu    sync.Mutex
	conns map[net.Conn]bool
	procs map[int]bool // commands started and not yet reaped
	wg    sync.WaitGroup
}

func startFakeSSHD(t testing.TB, addr string, client ssh.PublicKey) *fakeSSHD {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("fake sshd: %v", err)
	}
	s := &fakeSSHD{t: t, addr: ln.Addr().String(), hostKey: sshxtest.NewSigner(t), client: client, ln: ln,
		conns: map[net.Conn]bool{}, procs: map[int]bool{}}
	s.wg.Go(s.accept)
	t.Cleanup(s.close)
	return s
}

func (s *fakeSSHD) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Go(func() {
			s.serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		})
	}
}

// drop closes every connection, as a restarted sshd or a cut link would.
func (s *fakeSSHD) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

func (s *fakeSSHD) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// running is the number of commands started that have not ended.
func (s *fakeSSHD) running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.procs)
}

func (s *fakeSSHD) close() {
	s.ln.Close()
	s.drop()
	s.wg.Wait()
}

func (s *fakeSSHD) serve(c net.Conn) {
	defer c.Close()
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if string(key.Marshal()) != string(s.client.Marshal()) {
				return nil, errors.New("unknown key")
			}
			return &ssh.Permissions{}, nil
		},
	}
	cfg.AddHostKey(s.hostKey)
	conn, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	defer conn.Close()
	var lnMu sync.Mutex
	lns := map[string]net.Listener{}
	defer func() {
		lnMu.Lock()
		defer lnMu.Unlock()
		for _, ln := range lns {
			ln.Close()
		}
	}()
	s.wg.Go(func() {
		for req := range reqs {
			switch req.Type {
			case "streamlocal-forward@openssh.com":
				var p struct{ Path string }
				if ssh.Unmarshal(req.Payload, &p) != nil {
					req.Reply(false, nil)
					continue
				}
				ln, err := listenUnixKeep(p.Path)
				if err != nil {
					s.t.Logf("fake sshd: bind %s: %v", p.Path, err)
					req.Reply(false, nil)
					continue
				}
				lnMu.Lock()
				lns[p.Path] = ln
				lnMu.Unlock()
				req.Reply(true, nil)
				s.wg.Go(func() { s.forwardUnix(conn, ln, p.Path) })
			case "cancel-streamlocal-forward@openssh.com":
				var p struct{ Path string }
				ssh.Unmarshal(req.Payload, &p)
				lnMu.Lock()
				if ln := lns[p.Path]; ln != nil {
					ln.Close()
				}
				lnMu.Unlock()
				req.Reply(true, nil)
			default:
				if req.WantReply {
					req.Reply(false, nil)
				}
			}
		}
	})
	for nc := range chans {
		switch nc.ChannelType() {
		case "session":
			ch, creqs, err := nc.Accept()
			if err != nil {
				continue
			}
			s.wg.Go(func() { s.session(ch, creqs) })
		case "direct-tcpip":
			var p struct {
				Host     string
				Port     uint32
				OrigHost string
				OrigPort uint32
			}
			if ssh.Unmarshal(nc.ExtraData(), &p) != nil {
				nc.Reject(ssh.ConnectionFailed, "bad payload")
				continue
			}
			far, err := net.Dial("tcp", net.JoinHostPort(p.Host, strconv.Itoa(int(p.Port))))
			if err != nil {
				nc.Reject(ssh.ConnectionFailed, err.Error())
				continue
			}
			ch, creqs, err := nc.Accept()
			if err != nil {
				far.Close()
				continue
			}
			go ssh.DiscardRequests(creqs)
			s.wg.Go(func() { copyBoth(ch, far) })
		default:
			nc.Reject(ssh.UnknownChannelType, "not here")
		}
	}
}

// listenUnixKeep listens on a unix socket at path, mode 0600, and leaves
// the file behind when closed.
func listenUnixKeep(path string) (net.Listener, error) {
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	return ln, nil
}

func (s *fakeSSHD) forwardUnix(conn *ssh.ServerConn, ln net.Listener, path string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		payload := ssh.Marshal(struct{ Path, Reserved string }{path, ""})
		ch, reqs, err := conn.OpenChannel("forwarded-streamlocal@openssh.com", payload)
		if err != nil {
			c.Close()
			continue
		}
		go ssh.DiscardRequests(reqs)
		s.wg.Go(func() { copyBoth(ch, c) })
	}
}

// copyBoth copies between an SSH channel and a connection, half-closing
// each way, until both directions end.
func copyBoth(ch ssh.Channel, c net.Conn) {
	defer ch.Close()
	defer c.Close()
	done := make(chan struct{})
	go func() {
		io.Copy(ch, c)
		ch.CloseWrite()
		close(done)
	}()
	io.Copy(c, ch)
	pipe.CloseWrite(c)
	<-done
}

// session runs the exec request of a session channel; the channel is
// closed when the command ends.
func (s *fakeSSHD) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	for req := range reqs {
		if req.Type != "exec" {
			if req.WantReply {
				req.Reply(false, nil)
			}
			continue
		}
		var p struct{ Command string }
		if ssh.Unmarshal(req.Payload, &p) != nil {
			req.Reply(false, nil)
			continue
		}
		cmd := exec.Command("/bin/sh", "-c", p.Command)
		cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			req.Reply(false, nil)
			ch.Close()
			return
		}
		req.Reply(true, nil)
		s.mu.Lock()
		s.procs[cmd.Process.Pid] = true
		s.mu.Unlock()
		s.wg.Go(func() {
			err := cmd.Wait()
			s.mu.Lock()
			delete(s.procs, cmd.Process.Pid)
			s.mu.Unlock()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			}
			ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
			ch.Close()
		})
		go ssh.DiscardRequests(reqs)
		return
	}
	ch.Close()
}

// fakeSite is a login node and a compute node, both fakeSSHDs on loopback,
// and a Hop reaching the node through the login node.
type fakeSite struct {
	login, node *fakeSSHD
	hop         *Hop
	nodeName    string
}

func startFakeSite(t testing.TB) *fakeSite {
	t.Helper()
	return startFakeSiteFor(t, sshxtest.NewSigner(t))
}

// startFakeSiteFor starts a fakeSite that lets in the holder of key.
func startFakeSiteFor(t testing.TB, key ssh.Signer) *fakeSite {
	t.Helper()
	login := startFakeSSHD(t, "127.0.0.1:0", key.PublicKey())
	node := startFakeSSHD(t, "127.0.0.1:0", key.PublicKey())
	_, portText, _ := net.SplitHostPort(node.addr)
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	loginKeys := hostKeysFor(t, login.addr, login.hostKey.PublicKey())
	nodeKeys := hostKeysFor(t, node.addr, node.hostKey.PublicKey())
	return &fakeSite{
		login: login,
		node:  node,
		hop: &Hop{
			LoginAddr:     login.addr,
			User:          "alice",
			Auth:          []ssh.AuthMethod{ssh.PublicKeys(key)},
			LoginHostKeys: loginKeys,
			NodeHostKeys:  nodeKeys,
			NodePort:      port,
			Timeout:       5 * time.Second,
		},
		nodeName: "127.0.0.1",
	}
}

func hostKeysFor(t testing.TB, addr string, key ssh.PublicKey) ssh.HostKeyCallback {
	t.Helper()
	cb, err := sshx.HostKeys(sshxtest.KnownHosts(t, addr, key))
	if err != nil {
		t.Fatal(err)
	}
	return cb
}
