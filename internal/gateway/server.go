package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/types"
)

// Server is the gateway's SSH server for shadows. A shadow logs in as
// tunnel.GatewayUser with its ServiceAccount token as the password; the
// Authenticator turns the token into a Grant, judged again at each
// connection. A shadow may then open direct-tcpip channels to its pod's
// forward ports on the job's node and ask for remote forwards of its
// pod's sockets there (streamlocal-forward@openssh.com); nothing else,
// sessions least of all: a shadow never runs a command as the site's
// account.
type Server struct {
	// HostKey is the gateway's host key, which shadows pin. Required.
	HostKey ssh.Signer
	// Auth judges the shadows' tokens. Required.
	Auth Authenticator
	// Site holds the connections to the site. Required.
	Site *Site
	// Log receives the server's events. If nil, slog.Default().
	Log *slog.Logger
	// HandshakeTimeout bounds a shadow's handshake and authentication.
	// If zero, 20s.
	HandshakeTimeout time.Duration
	// KeepAliveInterval and KeepAliveTimeout pace the keepalives sent to
	// each shadow and bound their answer; a shadow that does not answer
	// is disconnected. If zero, 15s and 15s.
	KeepAliveInterval, KeepAliveTimeout time.Duration
	// MaxConns bounds the authenticated shadow connections served at
	// once; more are closed once authenticated. If zero, 4096.
	MaxConns int
	// MaxStartups bounds the connections still in their handshake, apart
	// from MaxConns; past half of it, new ones are dropped at random, more
	// often as it fills, and at it, all are. If zero, 256.
	MaxStartups int
	// MaxStartupsPerSource bounds the connections still in their
	// handshake from one source address; more are closed. If zero, 8.
	MaxStartupsPerSource int
	// MaxChannels bounds the forward channels open at once on one shadow
	// connection; more are refused. If zero, 512.
	MaxChannels int

	mu      sync.Mutex
	conns   map[types.UID]map[*shadowConn]struct{}
	sockets map[string]*socketForward // by path on the node
	moves   map[types.NamespacedName]move
	seq     uint64 // of the latest move
}

// maxToken bounds the password a shadow sends: a projected token is a few
// kilobytes.
const maxToken = 16 << 10

// Serve serves shadows on ln until ctx ends, then closes ln and every
// shadow connection and returns nil; an error of ln is returned.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.HostKey == nil || s.Auth == nil || s.Site == nil {
		return errors.New("gateway: a host key, an authenticator and a site are required")
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	adm := newAdmission(orDefault(s.MaxStartups, 256), orDefault(s.MaxStartupsPerSource, 8))
	slots := make(chan struct{}, orDefault(s.MaxConns, 4096))
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("gateway: accept: %w", err)
		}
		// Refused at once, before any goroutine or handshake: a flood costs
		// the gateway an accept and a close per connection.
		src := sourceOf(nc.RemoteAddr())
		if ok, why := adm.admit(src); !ok {
			s.log().Debug("shadow connection refused", "remote", nc.RemoteAddr().String(), "reason", why)
			nc.Close()
			continue
		}
		wg.Go(func() { s.serveConn(ctx, nc, adm, src, slots) })
	}
}

// serveConn authenticates a shadow, admitted by adm as from src, and,
// given one of slots, serves its connection until it ends, ctx ends or
// the shadow's grant is withdrawn.
func (s *Server) serveConn(ctx context.Context, nc net.Conn, adm *admission, src string, slots chan struct{}) {
	defer nc.Close()
	log := s.log().With("remote", nc.RemoteAddr().String())
	seq := s.placementSeq()
	var grant *Grant
	handshake := orDefault(s.HandshakeTimeout, 20*time.Second)
	cfg := &ssh.ServerConfig{
		ServerVersion: "SSH-2.0-sluice-gateway",
		MaxAuthTries:  1,
		PasswordCallback: func(meta ssh.ConnMetadata, token []byte) (*ssh.Permissions, error) {
			if meta.User() != tunnel.GatewayUser {
				return nil, fmt.Errorf("user %.64q: shadows log in as %q", meta.User(), tunnel.GatewayUser)
			}
			if len(token) > maxToken {
				return nil, fmt.Errorf("token of %d bytes", len(token))
			}
			actx, cancel := context.WithTimeout(ctx, handshake)
			defer cancel()
			g, err := s.Auth.Authenticate(actx, string(token))
			if err != nil {
				return nil, err
			}
			grant = g
			return nil, nil
		},
		AuthLogCallback: func(meta ssh.ConnMetadata, method string, err error) {
			if method != "none" && err != nil {
				log.Warn("shadow refused", "user", meta.User(), "method", method, "error", err)
			}
		},
	}
	cfg.AddHostKey(s.HostKey)
	nc.SetDeadline(time.Now().Add(handshake))
	sconn, chans, reqs, err := ssh.NewServerConn(nc, cfg)
	adm.done(src, err == nil)
	if err != nil {
		log.Debug("shadow handshake failed", "error", err)
		return
	}
	defer sconn.Close()
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
	default:
		log.Warn("shadow refused: too many shadow connections", "max", cap(slots))
		return
	}
	nc.SetDeadline(time.Time{})
	// Made before the server knows sc, so that GrantChanged and
	// PlacementChanged may close it at once.
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sc := &shadowConn{
		ctx:    sctx,
		cancel: cancel,
		srv:    s,
		conn:   sconn,
		grant:  grant,
		log:    log.With("namespace", grant.Pod.Namespace, "pod", grant.Pod.Name, "pod_uid", string(grant.Pod.UID), "shadow", grant.Shadow.Name, "node", grant.Node),
		slots:  make(chan struct{}, s.maxChannels()),
	}
	s.add(sc)
	defer s.remove(sc)
	if why := s.movedSince(seq, grant); why != "" {
		sc.log.Info("shadow disconnected", "reason", "grant changed while it logged in: "+why)
		return
	}
	sc.serve(chans, reqs)
}

// GrantChanged closes the connections of the shadows of pod, with reason:
// its job moved (a requeue, another node) or it is gone. Each shadow that
// still has a grant reconnects and is judged again.
func (s *Server) GrantChanged(pod types.UID, reason string) {
	s.mu.Lock()
	var conns []*shadowConn
	for sc := range s.conns[pod] {
		conns = append(conns, sc)
	}
	s.mu.Unlock()
	for _, sc := range conns {
		sc.close(errors.New(reason))
	}
}

func (s *Server) add(sc *shadowConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		s.conns = make(map[types.UID]map[*shadowConn]struct{})
	}
	uid := sc.grant.Pod.UID
	if s.conns[uid] == nil {
		s.conns[uid] = make(map[*shadowConn]struct{})
	}
	s.conns[uid][sc] = struct{}{}
}

func (s *Server) remove(sc *shadowConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uid := sc.grant.Pod.UID
	delete(s.conns[uid], sc)
	if len(s.conns[uid]) == 0 {
		delete(s.conns, uid)
	}
}

func (s *Server) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

func (s *Server) maxChannels() int {
	if s.MaxChannels <= 0 {
		return 512
	}
	return s.MaxChannels
}
