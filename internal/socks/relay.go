package socks

import (
	"context"
	"net"

	"github.com/sluice-hpc/sluice/internal/pipe"
)

// relay copies between client and dest both ways until both directions
// have ended (pipe.Relay). It returns the bytes sent (client to
// destination) and received, and the error of the directions that failed;
// the error is nil when both ended with EOF, or when ctx ended.
func relay(ctx context.Context, client, dest net.Conn) (sent, received int64, err error) {
	c, err := pipe.Relay(ctx, client, dest, "client", "destination", nil)
	if ctx.Err() != nil {
		err = nil
	}
	return c.AToB, c.BToA, err
}
