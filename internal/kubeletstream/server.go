package kubeletstream

import (
	"errors"
	"log/slog"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/provider"
)

// Jobs finds the running job of a pod; *provider.Provider implements it.
type Jobs interface {
	RunningJob(namespace, name string) (provider.RunningJob, error)
}

var _ Jobs = (*provider.Provider)(nil)

// Server is the site's end of the kubelet API's streams. Jobs is required.
type Server struct {
	Jobs Jobs
	// Conns reaches the nodes. If nil, port-forward answers
	// ErrNoNodeHostKeys.
	Conns *Conns
	// Srun carries port-forward streams with srun, over Conns' login
	// node. If nil, they go through the node's sshd (Conns.Node).
	Srun *SrunCarrier
	// Runtime is the site's container runtime, the way exec enters a
	// container.
	Runtime jobscript.Runtime
	// Site gives exec the runtime's program and the site's runtime
	// options, as the jobs have them. The zero value has none.
	Site jobscript.SiteOptions
	// Output follows the containers' output, for attach. If nil, attach
	// answers errNoAttach.
	Output Output
	// Limits bound the sessions and streams open at once, and how long
	// they last.
	Limits Limits
	// Logger. If nil, slog.Default().
	Logger *slog.Logger

	// the sessions of each kind, and the port-forward streams
	execs, attaches, forwards, streams pool
}

// ErrNoNodeHostKeys is port-forward's answer on a node without pinned
// compute node host keys.
var ErrNoNodeHostKeys = errors.New("port-forward needs the compute nodes' pinned host keys: set Network.SSH.NodeKnownHostsFile")

func (s *Server) log() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}
