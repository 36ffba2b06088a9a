package tunnel

import (
	"context"
	"net"

	"github.com/sluice-hpc/sluice/internal/pipe"
)

// closeWriter is a connection that can end its write side alone: a
// *net.TCPConn, a *net.UnixConn, or an SSH channel's net.Conn.
type closeWriter interface {
	CloseWrite() error
}

// relayed is what a relay carried.
type relayed struct {
	Sent, Received int64 // bytes from a to b, and from b to a
}

// relay copies between a and b both ways (pipe.Relay), counting the bytes
// in m: those from a to b under the direction aToB (BytesIn or BytesOut),
// the others under the other one.
func relay(ctx context.Context, a, b net.Conn, aName, bName string, m *Metrics, aToB string) (relayed, error) {
	var count func(up bool, n int64)
	if m != nil {
		bToA := BytesIn
		if aToB == BytesIn {
			bToA = BytesOut
		}
		count = func(up bool, n int64) {
			if up {
				m.AddBytes(aToB, n)
			} else {
				m.AddBytes(bToA, n)
			}
		}
	}
	c, err := pipe.Relay(ctx, a, b, aName, bName, count)
	return relayed{Sent: c.AToB, Received: c.BToA}, err
}
