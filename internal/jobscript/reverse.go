package jobscript

import (
	"errors"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/hostname"
	"github.com/sluice-hpc/sluice/internal/relay"
	"github.com/sluice-hpc/sluice/internal/salt"
	"github.com/sluice-hpc/sluice/internal/sitepath"
)

// ReverseJob is the job's side of a reverse tunnel (SPEC S5): forwards
// (Ports), a SOCKS proxy (SocksPort), or both. The batch script of a job that
// has one (templates/reverse.sh.tmpl), before the pod's pre-exec snippet:
//
//   - fails at once, with a message saying so, when SocketDirRoot is empty
//     or not a directory the job's user can use, or when another user could
//     change it: it and every directory above it must be owned by root or
//     the job's user, and not writable by others unless sticky (the message
//     names the path and its owner; see relay.RootCheckScript);
//   - makes the pod's socket directory (SocketDir: under SocketDirRoot, named
//     from the pod's Salt), drwx------ and owned by the job's user, afresh (one left by an earlier run on the
//     node, as after a requeue, is removed first, so that no stale socket
//     stands for the tunnel);
//   - with forwards, writes a copy of the node's /etc/hosts that maps Names
//     to the relay's address (Addr, or one derived from Salt), in node-local
//     temporary space (mktemp in ${TMPDIR:-/tmp}), and starts the relay
//     (RelayPath) on that address and Ports;
//   - waits up to Timeout for the relay's rev-relay.ready and every
//     rev-<port>.sock of the tunnel, and for the SOCKS proxy's listener on
//     127.0.0.1:SocksPort owned by the job's user (read in /proc/net/tcp and
//     tcp6), failing the job with a message naming what is missing, with the
//     relay's own message when it exits first (a port taken), or at once when
//     the SOCKS port is held on a wildcard address by the job's user (the
//     node's sshd has GatewayPorts yes, which opens the proxy to other
//     machines) or on 127.0.0.1 by another user.
//
// After the pre-exec snippet, so that binds it sets are kept, the hosts copy
// is bound over the containers' /etc/hosts: through APPTAINER_BIND (which
// starts from SINGULARITY_BIND when only that is set), or ch-run's -b; the
// none runtime cannot remap /etc/hosts and writes a warning instead. A relay
// that exits while the job runs stops the containers and fails the job,
// saying so: the names the job maps point at its address. When the job ends
// the relay is stopped and the socket directory removed.
type ReverseJob struct {
	// Addr is the IPv4 loopback address the relay holds, not 127.0.0.1,
	// as the pod's ReverseBind sets it; the zero Addr derives one from
	// Salt (annotations.DeriveBind). Unused unless the job runs the relay.
	Addr netip.Addr
	// Ports are the ports the relay listens on: the listen ports of the
	// pod's reverse forwards, each once. Empty for a job with a SOCKS
	// proxy only, which has no relay, and for one whose relay serves the
	// forward entry alone.
	Ports []uint16
	// Names are the host names the job asked for, mapped to Addr in its
	// /etc/hosts. localhost and IP addresses have no place here. Empty
	// without Ports.
	Names []string
	// SocksPort is the port of the SOCKS5 proxy that the tunnel serves on
	// 127.0.0.1 of the node; 0 for none. It is none of Ports.
	SocksPort uint16
	// Forward is set for a job whose pod's forward tunnel carries ports to
	// it: the relay runs for its forward entry (fwd.sock), through which
	// the tunnel reaches only the job user's listeners, without Ports too.
	// A relay always serves the entry.
	Forward bool
	// SocketDirRoot is the site's node-local directory of socket
	// directories. If empty, the job fails at start saying so.
	SocketDirRoot string
	// RelayPath is the relay binary on the site (see Client.PlaceRelay).
	// Unused unless the job runs the relay (RunsRelay).
	RelayPath string
	// Timeout bounds the wait for the relay, the tunnel and the SOCKS
	// proxy. If zero, 120s.
	Timeout time.Duration
	// Salt is the pod's secret (package salt) that names its socket
	// directory and derives the relay's address: another user of the node,
	// who sees the pod's UID in squeue, cannot take either before the job.
	// Submit draws it for a new job and keeps it in the job directory, and
	// reads it back from there for a job it adopts ("" for one submitted
	// before salts); a script is rendered only with one.
	Salt string
}

// RunsRelay reports whether the job runs the relay: for reverse forwards
// (Ports), or for the forward entry alone (Forward).
func (r *ReverseJob) RunsRelay() bool { return len(r.Ports) > 0 || r.Forward }

// SocketDir is the socket directory of the pod uid's job on the node: see
// sitepath.SocketDir.
func (r *ReverseJob) SocketDir(uid string) string {
	return sitepath.SocketDir(r.SocketDirRoot, uid, r.Salt)
}

// RelayAddr is the address the relay holds: Addr, or the one Salt derives.
func (r *ReverseJob) RelayAddr(uid string) (netip.Addr, error) {
	if r.Addr.IsValid() {
		return r.Addr, nil
	}
	return annotations.DeriveBind(uid, r.Salt)
}

// DefaultReverseTimeout is how long a job waits for its relay and tunnel
// when ReverseJob.Timeout is zero.
const DefaultReverseTimeout = 120 * time.Second

// NewReverseJob is the job side of the tunnels of a pod whose shadow
// carries r, its reverse tunnel (nil for none), and, with forward, ports
// of its forward tunnel to the job (shadow.RunsRelay decides): its SOCKS
// port, and, when it has reverse forwards or forward, the relay address it
// sets (none: one is derived from the salt Submit draws) and relayPath;
// the listen ports of its forwards and the names to map (its forwards'
// hosts but for IP addresses and localhost, once each). A job with a
// SOCKS proxy only has no relay: relayPath is not kept. It returns nil
// when the job needs no socket directory: neither forwards, SOCKS nor
// forward.
func NewReverseJob(r *annotations.Reverse, forward bool, socketDirRoot, relayPath string) *ReverseJob {
	if r == nil {
		r = &annotations.Reverse{}
	}
	if len(r.Forwards) == 0 && r.SocksPort == 0 && !forward {
		return nil
	}
	rj := &ReverseJob{SocketDirRoot: socketDirRoot, SocksPort: uint16(r.SocksPort), Forward: forward}
	if len(r.Forwards) == 0 && !forward {
		return rj // a SOCKS proxy alone
	}
	rj.Addr, rj.RelayPath = r.Bind, relayPath
	for _, f := range r.Forwards {
		rj.Ports = append(rj.Ports, uint16(f.ListenPort))
		if !f.IsIP() && !isLocalhost(f.Host) && !slices.Contains(rj.Names, f.Host) {
			rj.Names = append(rj.Names, f.Host)
		}
	}
	return rj
}

func isLocalhost(name string) bool { return strings.EqualFold(name, "localhost") }

// CheckSocketDirRoot checks a site's SocketDirRoot for the pod uid by the
// rule the configuration checks it by at start-up (sitepath.CheckSocketRoot).
// An empty root passes: the job then fails at start, saying so.
func CheckSocketDirRoot(root, uid string) error {
	if root == "" {
		return nil
	}
	if err := sitepath.CheckSocketRoot(root, uid); err != nil {
		return fmt.Errorf("socket directory root %w", err)
	}
	return nil
}

// check checks everything of r that reaches the batch script.
func (r *ReverseJob) check(uid string) error {
	switch {
	case !r.RunsRelay() && r.SocksPort == 0:
		return errors.New("reverse tunnel: no ports, no SOCKS port and no forward entry")
	case len(r.Ports) == 0 && len(r.Names) > 0:
		return errors.New("reverse tunnel: names to map but no ports")
	case r.SocksPort != 0 && slices.Contains(r.Ports, r.SocksPort):
		return fmt.Errorf("reverse tunnel: SOCKS port %d is also a forward's port", r.SocksPort)
	case r.Timeout < 0:
		return fmt.Errorf("reverse tunnel: negative timeout %v", r.Timeout)
	}
	if err := salt.Check(r.Salt); err != nil {
		return fmt.Errorf("reverse tunnel: %w", err)
	}
	if err := CheckSocketDirRoot(r.SocketDirRoot, uid); err != nil {
		return fmt.Errorf("reverse tunnel: %w", err)
	}
	if !r.RunsRelay() {
		return nil
	}
	return r.checkForwards(uid)
}

// checkForwards checks what the relay and the hosts copy take: the relay's
// address and path, the ports and the names.
func (r *ReverseJob) checkForwards(uid string) error {
	addr, err := r.RelayAddr(uid)
	if err != nil {
		return fmt.Errorf("reverse tunnel: %w", err)
	}
	if err := annotations.CheckRelayAddr(addr); err != nil {
		return fmt.Errorf("reverse tunnel: %w", err)
	}
	seen := make(map[uint16]bool, len(r.Ports))
	for _, p := range r.Ports {
		if p == 0 || seen[p] {
			return fmt.Errorf("reverse tunnel: port %d is zero or given twice", p)
		}
		seen[p] = true
	}
	for _, n := range r.Names {
		if err := checkHostName(n); err != nil {
			return fmt.Errorf("reverse tunnel: %w", err)
		}
	}
	if err := checkRelayPath(r.RelayPath); err != nil {
		return fmt.Errorf("reverse tunnel: %w", err)
	}
	return nil
}

// checkRelayPath checks the relay binary's path on the site.
func checkRelayPath(p string) error {
	if !safePath.MatchString(p) || path.Clean(p) != p {
		return fmt.Errorf("relay path %q must be a clean absolute path of letters, digits and ._/@+=_-", p)
	}
	return nil
}

// checkHostName checks a name for /etc/hosts: a host name
// (hostname.Check), and not localhost (which stays the node's).
func checkHostName(n string) error {
	if isLocalhost(n) {
		return fmt.Errorf("host name %q cannot be mapped", n)
	}
	return hostname.Check(n)
}

// reverseData fills templates/reverse.sh.tmpl.
type reverseData struct {
	// RootCheck defines sluice_root_check (relay.RootCheckScript).
	RootCheck string
	Root      string // may be empty: the script then fails at start
	Dir       string // the socket directory's name in Root
	Timeout   int64  // seconds
	// The relay, for forwards and the forward entry; all empty for a
	// SOCKS proxy only.
	Relay   string
	Addr    string
	Ports   string   // comma-separated, as --ports takes them; empty for the forward entry alone
	Sockets []string // rev-<port>.sock, in the order of Ports
	Ready   string
	// PortFile is the port file's name in the job directory.
	PortFile string
	// The SOCKS proxy's port, 0 for none, and the same in hex as
	// /proc/net/tcp shows it (four upper-case digits).
	Socks    uint16
	SocksHex string
	// Hosts are the lines added to the hosts copy, "ADDR name"; empty when
	// the job asked for no names (or the runtime cannot bind the copy).
	Hosts []string
	Names string // the names, for messages
	// How the hosts copy reaches the containers (at most one is set).
	BindEnv  bool // APPTAINER_BIND
	BindLine bool // on each container line (ch-run -b, enroot --mount)
	NoRemap  bool // the none runtime: a warning
	// ExecHostsFile names, in the job directory, the file that holds the
	// hosts copy's path, for kubectl exec (ExecArgv).
	ExecHostsFile string
}

// newReverseData fills reverseData from r, which check has passed.
func newReverseData(r *ReverseJob, uid string, rt Runtime) *reverseData {
	if r == nil {
		return nil
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = DefaultReverseTimeout
	}
	d := &reverseData{
		RootCheck: relay.RootCheckScript,
		Root:      r.SocketDirRoot, Dir: path.Base(r.SocketDir(uid)), ExecHostsFile: execHostsFile,
		Timeout: int64((timeout + time.Second - 1) / time.Second),
	}
	if r.SocksPort != 0 {
		d.Socks, d.SocksHex = r.SocksPort, fmt.Sprintf("%04X", r.SocksPort)
	}
	if !r.RunsRelay() {
		return d
	}
	relayAddr, _ := r.RelayAddr(uid) // checked
	addr := relayAddr.Unmap().String()
	d.Relay, d.Addr, d.Ready, d.PortFile = r.RelayPath, addr, relay.ReadyFile, PortFile
	ports := make([]string, 0, len(r.Ports))
	for _, p := range r.Ports {
		ports = append(ports, strconv.Itoa(int(p)))
		d.Sockets = append(d.Sockets, relay.SocketName(p))
	}
	d.Ports = strings.Join(ports, ",")
	var names []string
	for _, n := range r.Names {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return d
	}
	d.Names = strings.Join(names, " ")
	switch rt {
	case RuntimeApptainer, RuntimeSingularity:
		d.BindEnv = true
	case RuntimeCharliecloud, RuntimeEnroot:
		d.BindLine = true
	default:
		d.NoRemap = true
		return d
	}
	for _, n := range names {
		d.Hosts = append(d.Hosts, addr+" "+n)
	}
	return d
}
