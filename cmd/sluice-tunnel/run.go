package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/sluice-hpc/sluice/internal/tunnel"
	"github.com/sluice-hpc/sluice/internal/version"
)

// run serves the tunnel of c through hop until ctx ends, with its metrics
// server when c asks for one. It returns an error only when the tunnel
// cannot start (a port it cannot listen on); a site that cannot be reached
// or a host key that does not match is logged and retried by the tunnel.
func run(ctx context.Context, c *config, hop *tunnel.Hop, log *slog.Logger) error {
	var metrics *tunnel.Metrics
	status := tunnel.NewStatus(string(c.mode))
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		wg.Wait()
	}()
	if c.metrics != "" {
		reg := newRegistry()
		metrics = tunnel.NewMetrics(reg, c.mode)
		srv, err := listenMetrics(c.metrics, metricsHandler(reg, status), log)
		if err != nil {
			return err
		}
		wg.Go(func() { srv.Run(ctx) })
	}
	start := []any{"version", version.String(), "login", c.login, "user", c.user, "node_file", c.nodeFile}
	var err error
	switch c.mode {
	case modeForward:
		log.Info("tunnel starting", append(start, "target", string(c.target), "ports", (*portList)(&c.ports).String())...)
		err = newForward(c, hop, log, metrics, status).Run(ctx)
	case modeReverse:
		log.Info("tunnel starting", append(start, "endpoints", (*endpointList)(&c.endpoints).String(), "socks_port", c.socksPort)...)
		if c.socketDirFile != "" {
			dir, werr := waitSocketDir(ctx, c.socketDirFile, socketDirPoll, log)
			if werr != nil {
				// ctx ended, which is no failure
				log.Info("tunnel stopped before its socket directory was known")
				return nil
			}
			c.socketDir = dir
			log.Info("socket directory known", "socket_dir", dir)
		}
		err = newReverse(c, hop, log, metrics, status).Run(ctx)
	}
	if err == nil {
		log.Info("tunnel stopped")
	}
	return err
}

// newForward returns the forward c describes. A host key that does not
// match is logged by the tunnel, once per series of failures, naming the
// host.
func newForward(c *config, hop *tunnel.Hop, log *slog.Logger, m *tunnel.Metrics, st *tunnel.Status) *tunnel.Forward {
	f := &tunnel.Forward{
		Hop:          hop,
		Target:       c.target,
		Ports:        c.ports,
		NodeFile:     c.nodeFile,
		EntryDirFile: c.entry,
		Listen:       c.listen,
		Log:          log,
		Metrics:      m,
		Status:       st,
	}
	c.bounds.apply(f)
	return f
}

// newReverse returns the reverse tunnel c describes.
func newReverse(c *config, hop *tunnel.Hop, log *slog.Logger, m *tunnel.Metrics, st *tunnel.Status) *tunnel.Reverse {
	return &tunnel.Reverse{
		Hop:       hop,
		NodeFile:  c.nodeFile,
		SocketDir: c.socketDir,
		Endpoints: c.endpoints,
		SocksPort: c.socksPort,
		Sshd:      c.sshd,
		SshdPath:  c.sshdPath,
		NodeExec:  c.nodeExec,
		JobFile:   c.jobFile,
		Log:       log,
		Metrics:   m,
		Status:    st,
	}
}
