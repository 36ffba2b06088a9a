package kubeletstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/pipe"
	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/site"
	"golang.org/x/crypto/ssh"
)

// maxCarried bounds the srun-carried streams open at once: each is a
// session on Conns.Carrier, within the login sshd's MaxSessions (OpenSSH:
// 10). More streams wait for one of them to end.
const maxCarried = 9

// exitRefused is sluice-relay --connect's status when nothing listens at
// its address.
const exitRefused = 4

// SrunCarrier carries port-forward streams into the job with srun instead
// of through the node's sshd, for sites whose nodes take no SSH
// (Reverse.NodeExec: srun): one step per stream, running the relay binary
// with --connect 127.0.0.1:PORT.
type SrunCarrier struct {
	// Relay returns the relay binary's path on the site, placing it there
	// if need be (slurm.Client.PlaceRelay). Required.
	Relay func(ctx context.Context) (string, error)

	mu         sync.Mutex
	held       int
	namespaces map[string]int
	freed      chan struct{} // closed, and made anew, when a slot is given back
}

// acquire waits for one of the maxCarried slots, of which namespace may
// hold share at once, unless ctx ends or abort is closed first; release
// gives it back.
func (c *SrunCarrier) acquire(ctx context.Context, namespace string, share int, abort <-chan struct{}) (release func(), err error) {
	for {
		c.mu.Lock()
		if c.held < maxCarried && c.namespaces[namespace] < share {
			if c.namespaces == nil {
				c.namespaces = map[string]int{}
			}
			c.held++
			c.namespaces[namespace]++
			c.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { c.release(namespace) }) }, nil
		}
		if c.freed == nil {
			c.freed = make(chan struct{})
		}
		freed := c.freed
		c.mu.Unlock()
		select {
		case <-freed:
		case <-abort:
			return nil, fmt.Errorf("wait for a carried stream to end: %w", errReadAheadFull)
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for a carried stream to end: %w", context.Cause(ctx))
		}
	}
}

func (c *SrunCarrier) release(namespace string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held--
	decrement(c.namespaces, namespace)
	if c.freed != nil {
		close(c.freed)
		c.freed = nil
	}
}

// forwardBySrun carries one stream to port on the loopback of job's batch
// host: srun into the job runs the relay, whose standard streams are
// joined to stream, which is read (readAhead) while it waits for a slot
// (namespace's share of them: Limits). It returns when both directions
// ended or ctx did, or at once with the relay's message when nothing
// listens on the port.
func (s *Server) forwardBySrun(ctx context.Context, job provider.RunningJob, namespace string, port int32, stream *readAhead) error {
	relay, err := s.Srun.Relay(ctx)
	if err != nil {
		return fmt.Errorf("port-forward: relay binary: %w", err)
	}
	argv, err := jobscript.ForwardArgv(string(job.Ref.JobID), job.Host, relay, int(port))
	if err != nil {
		return err
	}
	release, err := s.Srun.acquire(ctx, namespace, s.Limits.share(maxCarried), stream.overflow())
	if err != nil {
		return fmt.Errorf("port-forward: %w", err)
	}
	defer release()
	stream.start()
	login, err := s.Conns.Carrier(ctx)
	if err != nil {
		return fmt.Errorf("port-forward: %w", err)
	}
	sess, err := newCarriedSession(ctx, login)
	if err != nil {
		return fmt.Errorf("port-forward: login node session: %w", err)
	}
	defer sess.Close()
	stdin, err := sess.StdinPipe()
	if err != nil {
		return fmt.Errorf("port-forward: %w", err)
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		return fmt.Errorf("port-forward: %w", err)
	}
	stderr := &tailBuffer{max: 2048}
	sess.Stderr = stderr
	if err := sess.Start("exec " + site.Join(argv)); err != nil {
		return fmt.Errorf("port-forward: start srun: %w", err)
	}
	peer := job.Host + ":127.0.0.1:" + strconv.Itoa(int(port))
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	relayed := make(chan error, 1)
	go func() {
		_, err := pipe.Relay(rctx, streamConn{stream}, &pipe.RWConn{R: io.NopCloser(stdout), W: stdin, Name: peer}, "client", peer, nil)
		relayed <- err
	}()
	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()

	select {
	case err = <-waited:
		if err != nil {
			return carriedExit(err, peer, stderr.String())
		}
		// The relay ended: its output reaches the client, then the
		// client's side (which may stay open) is let go.
		t := time.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case err = <-relayed:
		case <-t.C:
			cancel()
			<-relayed
		}
	case err = <-relayed:
		t := time.NewTimer(stopGrace) // srun ends with the relay
		defer t.Stop()
		select {
		case werr := <-waited:
			// The relay's output ended before its exit status came:
			// nothing listening is said by that status.
			if werr != nil && err == nil {
				return carriedExit(werr, peer, stderr.String())
			}
		case <-t.C:
			_ = stop(sess, waited)
		}
	case <-ctx.Done():
		// srun's own end, after the SIGTERM, says nothing of why.
		_ = stop(sess, waited)
		err = context.Cause(ctx)
	}
	if err != nil {
		return fmt.Errorf("port-forward: %w", err)
	}
	return nil
}

// carriedExit is the error of a carrying srun that failed: nothing listens
// on the port (the relay's exitRefused), or srun's or the relay's message.
func carriedExit(err error, peer, stderr string) error {
	msg := strings.TrimSpace(stderr)
	var exit *ssh.ExitError
	if errors.As(err, &exit) && exit.ExitStatus() == exitRefused {
		return fmt.Errorf("port-forward: dial %s: nothing listens there (%s)", peer, msg)
	}
	if msg != "" {
		return fmt.Errorf("port-forward: srun to %s: %w: %s", peer, err, msg)
	}
	return fmt.Errorf("port-forward: srun to %s: %w", peer, err)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// sessionRetry bounds how long a refused session is asked for again: the
// login sshd counts a session until it has seen its channel closed, a
// little after the stream that held the slot ended, and refuses one past
// its MaxSessions meanwhile ("open failed").
const sessionRetry = 5 * time.Second

// newCarriedSession opens a session on the carrier connection, asking
// again for up to sessionRetry while the sshd refuses it.
func newCarriedSession(ctx context.Context, login *ssh.Client) (*ssh.Session, error) {
	deadline := time.Now().Add(sessionRetry)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		sess, err := login.NewSession()
		var refused *ssh.OpenChannelError
		if err == nil || !errors.As(err, &refused) || time.Now().After(deadline) {
			return sess, err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (%w)", err, ctx.Err())
		}
	}
}
