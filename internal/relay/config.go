package relay

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ReadyFile is the name of the file the relay writes in its socket directory
// once every port is bound.
const ReadyFile = "rev-relay.ready"

// SocketName returns the name of the unix socket, in the socket directory,
// that connections to port are passed on to.
func SocketName(port uint16) string { return "rev-" + strconv.Itoa(int(port)) + ".sock" }

// Config is what a relay serves.
type Config struct {
	// Addr is the IPv4 loopback address to listen on, not 127.0.0.1.
	Addr netip.Addr
	// Ports are the TCP ports to listen on; connections to each go to
	// Dir/rev-<port>.sock. None is allowed with Forward.
	Ports []uint16
	// Forward serves the forward entry, Dir/fwd.sock: connections to the
	// job's listeners of the user UID, asked for by port (ForwardHeader).
	Forward bool
	// PortFile is the file where the job reports the ports it picked at
	// run time (ParsePortFile); "" for none. Only with Forward.
	PortFile string
	// Dir is the pod's socket directory. It must be owned by UID and not
	// writable by group or others.
	Dir string
	// UID is the job's user: only its connections are passed on.
	UID uint32
	// ParentPID is the job's shell; the relay stops when it is gone. If 0,
	// the relay does not watch a parent.
	ParentPID int
	// Owners finds a client's user. If nil, Listen picks SockDiag when the
	// kernel answers it and ProcNet otherwise.
	Owners Owners
	// Listeners finds the owner of a listener, for Forward. If nil, as
	// Owners.
	Listeners Listeners
	// Log receives the relay's messages. If nil, slog.Default().
	Log *slog.Logger
	// WatchInterval is how often the parent and the directory are checked.
	// If zero, 500ms.
	WatchInterval time.Duration
}

// Validate checks the configuration, naming the field at fault.
func (c *Config) Validate() error {
	if !c.Addr.IsValid() {
		return errors.New("addr: missing")
	}
	a := c.Addr.Unmap()
	if !a.Is4() || !a.IsLoopback() {
		return fmt.Errorf("addr: %v is not an IPv4 loopback address (127.0.0.0/8)", c.Addr)
	}
	if a == netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
		return errors.New("addr: 127.0.0.1 is shared by every user of the node; use another 127.0.0.0/8 address")
	}
	if len(c.Ports) == 0 && !c.Forward {
		return errors.New("ports: none given, and no forward entry")
	}
	if c.PortFile != "" && (!c.Forward || !filepath.IsAbs(c.PortFile)) {
		return fmt.Errorf("port-file: %q is not an absolute path, or comes without the forward entry", c.PortFile)
	}
	seen := make(map[uint16]bool, len(c.Ports))
	for _, p := range c.Ports {
		if p == 0 {
			return errors.New("ports: port 0 is not a port")
		}
		if seen[p] {
			return fmt.Errorf("ports: port %d given twice", p)
		}
		seen[p] = true
	}
	if c.Dir == "" {
		return errors.New("dir: missing")
	}
	if c.ParentPID < 0 {
		return fmt.Errorf("parent-pid: %d is negative", c.ParentPID)
	}
	if c.WatchInterval < 0 {
		return fmt.Errorf("watch interval: %v is negative", c.WatchInterval)
	}
	return nil
}

// openDir opens the socket directory and checks that it is a directory
// owned by the job's user and writable by nobody else, so that nobody else
// can put a socket there. The relay holds it open to notice its removal.
func openDir(dir string, uid uint32) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("socket directory: %w", err)
	case !fi.IsDir():
		err = fmt.Errorf("socket directory: %s is not a directory", dir)
	default:
		if owner, ok := fileOwner(fi); !ok || owner != uid {
			err = fmt.Errorf("socket directory: %s is owned by uid %d, not the job's uid %d", dir, owner, uid)
		} else if fi.Mode().Perm()&0o022 != 0 {
			err = fmt.Errorf("socket directory: %s has mode %04o, writable by group or others", dir, fi.Mode().Perm())
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ParsePorts parses a list of TCP ports separated by commas, as given to
// --ports ("9000,6379"). Empty items are refused.
func ParsePorts(s string) ([]uint16, error) {
	var ports []uint16
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		p, err := strconv.ParseUint(item, 10, 16)
		if err != nil || p == 0 {
			return nil, fmt.Errorf("port %q is not a number from 1 to 65535", item)
		}
		ports = append(ports, uint16(p))
	}
	return ports, nil
}
