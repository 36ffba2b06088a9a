package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
)

// gatewaySession holds the forwards through a sluice gateway (Hop.Gateway)
// until the gateway closes the connection or ctx ends. The gateway
// prepares and holds the socket directory itself: a shadow runs no
// command on the site, it only asks for the remote forwards, by the same
// paths as on the node's sshd. The gateway closes the connection when the
// holder ends (a requeue) or the pod's grant changes, and the session is
// made again.
func (s *reverseState) gatewaySession(ctx context.Context, client *ssh.Client, log *slog.Logger, up func()) error {
	if s.socks {
		return errors.New("the SOCKS proxy is not carried by the gateway yet")
	}
	r := s.r
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel(nil)
		client.Close()
		wg.Wait()
	}()
	wg.Go(func() {
		every := orDefault(r.KeepAliveInterval, 15*time.Second)
		timeout := orDefault(r.KeepAliveTimeout, 15*time.Second)
		if err := sshx.KeepAlive(ctx, client, every, timeout); err != nil {
			cancel(fmt.Errorf("ssh connection to the gateway lost: %w", err))
		}
	})
	lns, err := s.listen(client)
	if err != nil {
		return err
	}
	for i, ln := range lns {
		wg.Go(func() { s.serve(ctx, &wg, ln, r.Endpoints[i], log) })
	}
	up()
	<-ctx.Done()
	return context.Cause(ctx)
}
