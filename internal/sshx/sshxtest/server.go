// Package sshxtest runs an SSH server in the test process, on 127.0.0.1, for
// tests of SSH clients: it authenticates one client key (and, when told,
// user certificates of a CA), runs exec requests
// with /bin/sh -c, serves the sftp subsystem from the local filesystem and
// answers keepalives. Tests can drop every connection (as a restarted sshd
// would) and make it stop answering keepalives (as a hung link would).
package sshxtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Server is a running test SSH server.
type Server struct {
	// Addr is the server's address, 127.0.0.1:port.
	Addr string
	// HostKey is the server's host key; ClientKey the only key it accepts.
	HostKey, ClientKey ssh.Signer

	ln       net.Listener
	silent   atomic.Bool
	accepted atomic.Int64
	limit    atomic.Int64 // sessions allowed at once per connection; 0 for no limit
	peak     atomic.Int64 // most sessions open at once on one connection
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	userCA   ssh.PublicKey // user certificates it signs are accepted; nil for none
	hostCert ssh.Signer    // offered instead of HostKey; nil for none
	wg       sync.WaitGroup
	logf     func(format string, args ...any)
}

// Start starts a server and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWithHostKey(t, NewSigner(t))
}

// StartWithHostKey starts a server whose host key is hostKey.
func StartWithHostKey(t testing.TB, hostKey ssh.Signer) *Server {
	t.Helper()
	s := &Server{
		HostKey:   hostKey,
		ClientKey: NewSigner(t),
		conns:     make(map[net.Conn]struct{}),
		logf:      t.Logf,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sshxtest: listen: %v", err)
	}
	s.ln = ln
	s.Addr = ln.Addr().String()
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.Close)
	return s
}

// NewSigner makes a fresh ed25519 key.
func NewSigner(t testing.TB) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("sshxtest: generate key: %v", err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatalf("sshxtest: signer: %v", err)
	}
	return s
}

// KnownHosts writes a known_hosts file that pins key for addr and returns
// its path.
func KnownHosts(t testing.TB, addr string, key ssh.PublicKey) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{addr}, key) + "\n"
	if err := os.WriteFile(file, []byte(line), 0o600); err != nil {
		t.Fatalf("sshxtest: write known_hosts: %v", err)
	}
	return file
}

// Accepted returns how many TCP connections the server has accepted.
func (s *Server) Accepted() int { return int(s.accepted.Load()) }

// SetSilent makes the server stop (true) or resume (false) answering
// global requests such as keepalives.
func (s *Server) SetSilent(silent bool) { s.silent.Store(silent) }

// SetMaxSessions makes the server refuse, as "connect failed",
// a session beyond n open at once on one connection, like OpenSSH's
// MaxSessions. Zero lifts the limit.
func (s *Server) SetMaxSessions(n int) { s.limit.Store(int64(n)) }

// PeakSessions returns the most sessions that were open at once on one
// connection.
func (s *Server) PeakSessions() int { return int(s.peak.Load()) }

// Drop closes every open connection, as a restarted sshd would; the server
// keeps accepting new ones.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// Close stops the server, closes its connections and waits for their
// handlers and commands to end.
func (s *Server) Close() {
	s.ln.Close()
	s.Drop()
	s.wg.Wait()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.logf("sshxtest: accept: %v", err)
			}
			return
		}
		s.accepted.Add(1)
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// TrustUserCA makes the server accept, from new connections on, the user
// certificates ca signs (for any principal), as sshd's TrustedUserCAKeys.
func (s *Server) TrustUserCA(ca ssh.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userCA = ca
}

// SetHostCertificate makes the server offer cert, a host certificate of
// HostKey, as its host key from new connections on, as sshd's
// HostCertificate.
func (s *Server) SetHostCertificate(cert *ssh.Certificate) error {
	signer, err := ssh.NewCertSigner(cert, s.HostKey)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hostCert = signer
	return nil
}

func (s *Server) config() *ssh.ServerConfig {
	want := s.ClientKey.PublicKey().Marshal()
	s.mu.Lock()
	ca, hostKey := s.userCA, s.HostKey
	if s.hostCert != nil {
		hostKey = s.hostCert
	}
	s.mu.Unlock()
	plain := func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		if string(key.Marshal()) != string(want) {
			return nil, errors.New("sshxtest: unknown client key")
		}
		return &ssh.Permissions{}, nil
	}
	checker := &ssh.CertChecker{
		IsUserAuthority: func(auth ssh.PublicKey) bool {
			return ca != nil && string(auth.Marshal()) == string(ca.Marshal())
		},
		UserKeyFallback: plain,
	}
	// Authenticate checks the certificate's principals against the user
	// and its validity window, as sshd does.
	cfg := &ssh.ServerConfig{PublicKeyCallback: checker.Authenticate}
	cfg.AddHostKey(hostKey)
	return cfg
}

func (s *Server) serve(c net.Conn) {
	defer c.Close()
	conn, chans, reqs, err := ssh.NewServerConn(c, s.config())
	if err != nil {
		return
	}
	defer conn.Close()
	go s.globalRequests(reqs)
	var sessions sync.WaitGroup
	defer sessions.Wait()
	var open atomic.Int64
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		if limit := s.limit.Load(); limit > 0 && open.Load() >= limit {
			nc.Reject(ssh.ConnectionFailed, "open failed")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			continue
		}
		n := open.Add(1)
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		sessions.Add(1)
		go func() {
			defer sessions.Done()
			defer open.Add(-1)
			s.session(ch, chReqs)
		}()
	}
}

func (s *Server) globalRequests(reqs <-chan *ssh.Request) {
	for req := range reqs {
		if req.WantReply && !s.silent.Load() {
			req.Reply(false, nil)
		}
	}
}
