package tunnel

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
)

// session reaches node through the login node (its sshd, or srun),
// sets the forwards up and holds them until the holder ends, the
// connection breaks or ctx ends. It calls up once the forwards are held,
// and returns why the session ended (ctx's cause when ctx ended).
func (s *reverseState) session(ctx context.Context, node string, log *slog.Logger, up func()) error {
	r := s.r
	login, err := r.Hop.Login(ctx)
	if err != nil {
		return err
	}
	defer login.Close()
	ex, err := s.reach(ctx, login, node)
	if err != nil {
		return err
	}
	client := ex.client
	log.Info("ssh connected", "hop", "node", "via", ex.via())
	if r.Hop.Gateway {
		return s.gatewaySession(ctx, client, log, up)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel(nil)
		// Closing the connection takes the forwards down with it, and
		// ends every channel still open.
		client.Close()
		login.Close()
		wg.Wait()
	}()
	wg.Go(func() {
		every := orDefault(r.KeepAliveInterval, 15*time.Second)
		timeout := orDefault(r.KeepAliveTimeout, 15*time.Second)
		if err := sshx.KeepAlive(ctx, client, every, timeout); err != nil {
			cancel(fmt.Errorf("ssh connection to the %s lost: %w", ex.via(), err))
		}
	})

	inode, err := s.prepare(ctx, ex)
	if err != nil {
		return err
	}
	// fwd is the sshd asked for the remote forwards: the node's own, or a
	// user-space one started through it (always with srun).
	fwd := client
	if r.Sshd == SshdUserspace || ex.srun != nil {
		if fwd, err = s.userspaceSshd(ctx, ex, inode); err != nil {
			return err
		}
		defer fwd.Close()
		wg.Go(func() {
			every := orDefault(r.KeepAliveInterval, 15*time.Second)
			timeout := orDefault(r.KeepAliveTimeout, 15*time.Second)
			if err := sshx.KeepAlive(ctx, fwd, every, timeout); err != nil {
				cancel(fmt.Errorf("user-space sshd lost: %w", err))
			}
		})
	}
	if s.socks {
		ln, err := s.listenSocks(fwd)
		if err != nil {
			return err
		}
		wg.Go(func() { s.serveSocks(ctx, ln, log) })
	} else {
		lns, err := s.listen(fwd)
		if err != nil {
			return err
		}
		for i, ln := range lns {
			wg.Go(func() { s.serve(ctx, &wg, ln, r.Endpoints[i], log) })
		}
	}
	held := make(chan struct{})
	if err := s.hold(ctx, cancel, &wg, ex, inode, held); err != nil {
		return err
	}
	select {
	case <-held:
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(r.Hop.timeout()):
		return fmt.Errorf("holder: no word within %v", r.Hop.timeout())
	}
	up()
	<-ctx.Done()
	return context.Cause(ctx)
}

// prepare makes sure the socket directory exists, is the user's and no one
// else's to write, and (for the forwards' session) holds none of the
// tunnel's sockets; it returns the directory's inode.
func (s *reverseState) prepare(ctx context.Context, ex nodeExec) (string, error) {
	dir := s.r.SocketDir
	out, err := s.command(ctx, ex, prepareCommand(dir))
	if err != nil {
		return "", fmt.Errorf("socket directory %s: %w", dir, err)
	}
	d, err := parseSocketDir(out)
	if err == nil {
		err = d.check()
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	if s.socks {
		// The forwards' sockets are the other session's.
		return d.inode, nil
	}
	if _, err := s.command(ctx, ex, clearCommand(dir, d.inode, s.r.Endpoints)); err != nil {
		return "", fmt.Errorf("remove stale sockets in %s: %w", dir, err)
	}
	return d.inode, nil
}

// listen asks the node's sshd for the forwards.
func (s *reverseState) listen(client *ssh.Client) ([]net.Listener, error) {
	lns := make([]net.Listener, 0, len(s.r.Endpoints))
	for _, e := range s.r.Endpoints {
		sock := path.Join(s.r.SocketDir, e.socket())
		ln, err := client.ListenUnix(sock)
		if err != nil {
			// The listeners made so far go with the connection.
			return nil, fmt.Errorf("remote forward %s (is AllowStreamLocalForwarding on in the node's sshd?): %w", sock, err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// hold starts the holder on the node. held is closed once it reports the
// forwards held; when it ends, the session is cancelled with the reason.
func (s *reverseState) hold(ctx context.Context, cancel context.CancelCauseFunc, wg *sync.WaitGroup, ex nodeExec, inode string, held chan struct{}) error {
	sess, err := ex.client.NewSession()
	if err != nil {
		return fmt.Errorf("holder: %w", err)
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return fmt.Errorf("holder: %w", err)
	}
	var stderr bytes.Buffer
	sess.Stderr = &limitedBuffer{buf: &stderr, max: 4096}
	eps := s.r.Endpoints
	if s.socks {
		eps = nil // the proxy holds on the directory alone
	}
	if err := sess.Start(ex.command(holdCommand(s.r.SocketDir, inode, eps))); err != nil {
		sess.Close()
		return fmt.Errorf("holder: start: %w", err)
	}
	wg.Go(func() {
		defer sess.Close()
		reason := readHolder(stdout, held)
		err := sess.Wait()
		if reason != "" {
			cancel(fmt.Errorf("%w: %s", errHoldEnded, reason))
			return
		}
		// Cut off with no word: most likely with the connection, which
		// the keepalive reports at once; give it the time to.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
			cancel(holderFailed(err, stderr.String()))
		}
	})
	return nil
}

// holderFailed is why a holder that gave no reason ended: how it exited and
// what it wrote to stderr.
func holderFailed(err error, stderr string) error {
	if err == nil {
		err = errors.New("no reason given")
	}
	if msg := strings.TrimSpace(stderr); msg != "" {
		return fmt.Errorf("%w: %w: %s", errHoldEnded, err, msg)
	}
	return fmt.Errorf("%w: %w", errHoldEnded, err)
}

// readHolder reads the holder's output until it ends: held is closed at
// its first holdLine, and the reason it gives for ending is returned.
func readHolder(r io.Reader, held chan<- struct{}) string {
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		line := sc.Text()
		if line == holdLine && first {
			first = false
			close(held)
		}
		if reason, ok := strings.CutPrefix(line, holdEnd); ok {
			return reason
		}
	}
	return ""
}

// command runs cmd on the node in a session of its own and returns its
// standard output; ctx ending or the hop's timeout passing closes the
// session.
func (s *reverseState) command(ctx context.Context, ex nodeExec, cmd string) (string, error) {
	return s.commandIn(ctx, ex, cmd, nil)
}

// commandIn is command with stdin as the command's standard input.
func (s *reverseState) commandIn(ctx context.Context, ex nodeExec, cmd string, stdin io.Reader) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.r.Hop.timeout())
	defer cancel()
	return runNode(ctx, ex.client, ex.command(cmd), stdin)
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// serve accepts the connections of e's forward until the listener ends,
// handling each in its own goroutine.
func (s *reverseState) serve(ctx context.Context, wg *sync.WaitGroup, ln net.Listener, e Endpoint, log *slog.Logger) {
	log = log.With("port", e.ListenPort, "dest", e.addr())
	for {
		ch, err := ln.Accept()
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return
			}
			// One channel that could not be accepted.
			log.Debug("reverse accept failed", "error", err)
			continue
		}
		wg.Go(func() { s.handle(ctx, ch, e, log) })
	}
}

// handle dials e's destination in the cluster and relays ch to it; a dial
// that fails closes ch alone.
func (s *reverseState) handle(ctx context.Context, ch net.Conn, e Endpoint, log *slog.Logger) {
	defer ch.Close()
	r := s.r
	dial := r.Dial
	if dial == nil {
		dial = (&net.Dialer{Resolver: r.Resolver}).DialContext
	}
	dctx, cancel := context.WithTimeout(ctx, r.Hop.timeout())
	dst, err := dial(dctx, "tcp", e.addr())
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		r.Metrics.Refused(RefusedDial)
		if s.dialFailed(e) {
			log.Warn("reverse dial failed: connection closed", "error", err)
		} else {
			log.Debug("reverse dial failed: connection closed", "error", err)
		}
		return
	}
	defer dst.Close()
	if s.dialWorked(e) {
		log.Info("reverse endpoint reachable again")
	}
	r.Metrics.ConnOpened(e.ListenPort)
	defer r.Metrics.ConnClosed()
	n, err := relay(ctx, ch, dst, "job", e.addr(), r.Metrics, BytesIn)
	if err != nil && ctx.Err() == nil {
		log.Debug("reverse connection failed", "sent", n.Sent, "received", n.Received, "error", err)
		return
	}
	log.Debug("reverse connection closed", "sent", n.Sent, "received", n.Received)
}

// dialFailed records a failed dial to e; it reports whether e was reachable
// before (so that the failure is worth a warning).
func (s *reverseState) dialFailed(e Endpoint) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unreachable == nil {
		s.unreachable = map[int]bool{}
	}
	first := !s.unreachable[e.ListenPort]
	s.unreachable[e.ListenPort] = true
	return first
}

// dialWorked records a dial to e that worked; it reports whether e was
// unreachable before.
func (s *reverseState) dialWorked(e Endpoint) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.unreachable[e.ListenPort]
	delete(s.unreachable, e.ListenPort)
	return was
}
