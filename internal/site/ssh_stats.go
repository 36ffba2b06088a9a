package site

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/sluice-hpc/sluice/internal/sshx"
)

// Reasons a connection to the login node failed, as SSHStats.Failures
// counts them.
const (
	FailHostKey = "host_key" // the login node's host key is not the pinned one
	FailAuth    = "auth"     // the login node refused every way to log in
	FailTimeout = "timeout"  // connecting or the handshake took too long
	FailNetwork = "network"  // the connection could not be made or broke
	FailOther   = "other"
)

// SSHStats are counts of an SSH runner's connections and sessions, for its
// metrics.
type SSHStats struct {
	// Connects is how many connections were made.
	Connects uint64
	// Failures counts failed connection attempts by reason (Fail…).
	Failures map[string]uint64
	// Sessions is how many sessions are open now: commands, and SFTP.
	Sessions int64
}

// Stats returns the runner's counts so far.
func (s *SSH) Stats() SSHStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := make(map[string]uint64, len(s.failed))
	for k, v := range s.failed {
		f[k] = v
	}
	return SSHStats{Connects: s.connects, Failures: f, Sessions: s.open.Load()}
}

// Activity returns the runner's commands in flight.
func (s *SSH) Activity() *Activity { return &s.activity }

// failure is the reason a dial failed with err.
func failure(err error) string {
	var hk *sshx.HostKeyError
	var ne net.Error
	switch {
	case errors.As(err, &hk):
		return FailHostKey
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return FailTimeout
	// x/crypto/ssh gives no type for a refused login, only this text.
	case strings.Contains(err.Error(), "unable to authenticate"):
		return FailAuth
	case errors.As(err, &ne):
		return FailNetwork
	}
	return FailOther
}
