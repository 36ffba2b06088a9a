package tunnel

import (
	"errors"
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"

	"github.com/sluice-hpc/sluice/internal/hostname"
	"github.com/sluice-hpc/sluice/internal/sitepath"
)

// Endpoint is one reverse forward: connections the job makes to ListenPort
// (through its relay and the socket rev-<ListenPort>.sock) are carried to
// Host:Port in the cluster.
type Endpoint struct {
	// ListenPort is the port the job connects to; it names the socket.
	ListenPort int
	// Host and Port are the destination in the cluster, dialled by the
	// tunnel: a DNS name (already qualified for the shadow's namespace)
	// or an IP literal.
	Host string
	Port int
}

// String gives e as the --forward flag writes it: "6379=redis.default:6379".
func (e Endpoint) String() string {
	return strconv.Itoa(e.ListenPort) + "=" + e.addr()
}

func (e Endpoint) addr() string {
	return net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
}

// socket is the name of e's socket in the socket directory.
func (e Endpoint) socket() string {
	return "rev-" + strconv.Itoa(e.ListenPort) + ".sock"
}

// maxSocketPath is the longest path a unix socket can be bound on: the
// limit the configuration and the job check SocketDirRoot against.
const maxSocketPath = sitepath.MaxSocketPath

func (e Endpoint) check() error {
	if e.ListenPort < 1 || e.ListenPort > 65535 {
		return fmt.Errorf("endpoint %s: listen port %d out of range", e, e.ListenPort)
	}
	if e.Port < 1 || e.Port > 65535 {
		return fmt.Errorf("endpoint %s: port %d out of range", e, e.Port)
	}
	if err := hostname.CheckHost(e.Host); err != nil {
		return fmt.Errorf("endpoint %s: %w", e, err)
	}
	return nil
}

// checkSocketDir accepts an absolute, clean path short enough for the
// sockets of every endpoint to be bound in it.
func checkSocketDir(dir string, eps []Endpoint) error {
	switch {
	case dir == "":
		return errors.New("no socket directory")
	case !path.IsAbs(dir) || path.Clean(dir) != dir || dir == "/":
		return fmt.Errorf("socket directory %q: want an absolute, clean path below /", dir)
	case strings.ContainsFunc(dir, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("socket directory %q: control characters", dir)
	}
	for _, e := range eps {
		if p := path.Join(dir, e.socket()); len(p) > maxSocketPath {
			return fmt.Errorf("socket %q: longer than the %d bytes a unix socket path may have", p, maxSocketPath)
		}
	}
	return nil
}
