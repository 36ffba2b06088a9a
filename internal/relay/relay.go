// Package relay is the job-side end of the tunnels: an owner-checked relay
// from TCP ports on a loopback address to the unix sockets of the reverse
// tunnel in the pod's socket directory, and the forward entry, a unix socket
// there through which the forward tunnel reaches the job's listeners, and no
// other user's (forward.go).
//
// The relay binds every port first, then writes rev-relay.ready, then serves.
// For each connection it finds the user owning the connecting socket (through
// sock_diag, or /proc/net/tcp{,6} where netlink is not available) and passes
// on only the job user's connections, to <dir>/rev-<port>.sock; others are
// closed at once, as are connections while the tunnel is down. It stops when
// the job's shell is gone or its context ends; a socket directory that goes
// makes it refuse every connection, not give up its ports.
package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PortError is returned by Listen when a port cannot be bound, usually
// because another socket holds it.
type PortError struct {
	Addr netip.Addr
	Port uint16
	Err  error
}

func (e *PortError) Error() string {
	if errors.Is(e.Err, syscall.EACCES) {
		return fmt.Sprintf("port %d on %v is privileged on this node (below net.ipv4.ip_unprivileged_port_start): "+
			"listen on a higher port with the form listenport:host:%d in interlink.eu/reverse-forwards (%v)", e.Port, e.Addr, e.Port, e.Err)
	}
	return fmt.Sprintf("port %d on %v is taken: %v", e.Port, e.Addr, e.Err)
}

func (e *PortError) Unwrap() error { return e.Err }

// Relay holds the bound listeners of a configuration.
type Relay struct {
	cfg       Config
	owners    Owners
	lookup    Listeners
	log       *slog.Logger
	fails     failureLog
	dir       *os.File // the socket directory, held open
	dirGone   atomic.Bool
	listeners []*net.TCPListener
	fwd       *net.UnixListener // the forward entry; nil without Config.Forward
}

// Listen validates cfg, checks the socket directory, binds every port and
// makes the forward entry. If one port cannot be bound it closes the others
// and returns a *PortError naming it: nothing is served unless every port
// is.
func Listen(cfg Config) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := openDir(cfg.Dir, cfg.UID)
	if err != nil {
		return nil, err
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	r := &Relay{cfg: cfg, log: log, dir: dir}
	r.fails.log = log
	addr := cfg.Addr.Unmap()
	for _, port := range cfg.Ports {
		ln, err := net.ListenTCP("tcp4", net.TCPAddrFromAddrPort(netip.AddrPortFrom(addr, port)))
		if err != nil {
			r.Close()
			return nil, &PortError{Addr: addr, Port: port, Err: err}
		}
		r.listeners = append(r.listeners, ln)
	}
	if cfg.Forward {
		if err := r.listenForward(); err != nil {
			r.Close()
			return nil, err
		}
	}
	if err := r.detectLookups(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// listenForward makes the forward entry, owner-only in the socket
// directory. A socket left there is not the relay's: the batch script makes
// the directory afresh.
func (r *Relay) listenForward() error {
	path := filepath.Join(r.cfg.Dir, ForwardSocket)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("forward entry: %w", err)
	}
	// Closing must not remove the path by name: after a requeue it may be a
	// new relay's (Close removes it from the directory held open).
	ln.SetUnlinkOnClose(false)
	r.fwd = ln
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("forward entry: %w", err)
	}
	return nil
}

// detectLookups picks how owners are found, unless the configuration says.
// Without a port of its own the relay probes with a listener bound for the
// moment on its address.
func (r *Relay) detectLookups() error {
	r.owners, r.lookup = r.cfg.Owners, r.cfg.Listeners
	if r.owners != nil && (r.lookup != nil || !r.cfg.Forward) {
		return nil
	}
	var probe netip.AddrPort
	if len(r.listeners) > 0 {
		probe = r.Addrs()[0]
	} else {
		ln, err := net.ListenTCP("tcp4", net.TCPAddrFromAddrPort(netip.AddrPortFrom(r.cfg.Addr.Unmap(), 0)))
		if err != nil {
			return fmt.Errorf("probe owner lookup: %w", err)
		}
		defer ln.Close()
		probe = ln.Addr().(*net.TCPAddr).AddrPort()
	}
	found, how := DetectOwners(probe)
	r.log.Info("owner lookup", "method", how)
	if r.owners == nil {
		r.owners = found
	}
	if r.lookup == nil {
		r.lookup = found
	}
	return nil
}

// Addrs returns the bound addresses, in the order of Config.Ports.
func (r *Relay) Addrs() []netip.AddrPort {
	out := make([]netip.AddrPort, len(r.listeners))
	for i, ln := range r.listeners {
		out[i] = ln.Addr().(*net.TCPAddr).AddrPort()
	}
	return out
}

// Close closes the listeners of a relay that is not served, and removes
// the forward entry.
func (r *Relay) Close() error {
	err := r.closeListeners()
	if r.fwd != nil {
		unix.Unlinkat(int(r.dir.Fd()), ForwardSocket, 0)
	}
	r.dir.Close()
	return err
}

func (r *Relay) closeListeners() error {
	var errs []error
	for _, ln := range r.listeners {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if r.fwd != nil {
		if err := r.fwd.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Serve writes the readiness file, then passes connections on until ctx ends
// or the parent process is gone. It then closes the listeners and every open
// connection, removes the readiness file and returns nil. Once the socket
// directory is removed or replaced it refuses every connection, logging it
// once, but keeps its ports: the job's names still point at its address,
// which another user could otherwise bind. It returns an error only when it
// cannot start (the readiness file cannot be written).
func (r *Relay) Serve(ctx context.Context) error {
	defer r.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if err := writeFileAt(r.dir, ReadyFile, []byte(readyContent(r.Addrs()))); err != nil {
		return fmt.Errorf("write readiness file: %w", err)
	}
	// Remove it from the directory held open, not by path: a directory
	// recreated at the path belongs to a new relay.
	defer unix.Unlinkat(int(r.dir.Fd()), ReadyFile, 0)

	var wg sync.WaitGroup
	wg.Go(func() { cancel(watch(ctx, r.cfg, r.dir, r.loseDir)) })
	for _, ln := range r.listeners {
		port := ln.Addr().(*net.TCPAddr).AddrPort().Port()
		wg.Go(func() {
			r.acceptLoop(ctx, ln, func(c net.Conn) { r.handle(ctx, c.(*net.TCPConn), port) }, "port", port)
		})
	}
	if r.fwd != nil {
		wg.Go(func() {
			r.acceptLoop(ctx, r.fwd, func(c net.Conn) { r.handleForward(ctx, c.(*net.UnixConn)) }, "entry", ForwardSocket)
		})
	}
	r.log.Info("relay ready", "addr", r.cfg.Addr.Unmap(), "ports", r.cfg.Ports, "forward", r.cfg.Forward, "uid", r.cfg.UID)
	<-ctx.Done()
	r.log.Info("relay stopping", "reason", context.Cause(ctx))
	r.closeListeners()
	wg.Wait()
	return nil
}

// loseDir makes the relay refuse every connection from now on, its socket
// directory being gone; it keeps its ports.
func (r *Relay) loseDir() {
	r.dirGone.Store(true)
	r.log.Warn("socket directory gone: every connection is refused until the job ends; the ports stay bound so that no other user can take them",
		"dir", r.cfg.Dir, "addr", r.cfg.Addr.Unmap(), "ports", r.cfg.Ports)
}

// readyContent lists the bound addresses, one a line.
func readyContent(addrs []netip.AddrPort) string {
	var b strings.Builder
	for _, a := range addrs {
		b.WriteString(a.String() + "\n")
	}
	return b.String()
}

// acceptLoop accepts connections on ln and hands each to handle, in a
// goroutine of its own, until ctx ends; it returns once they all have.
// Accept errors never end it: it backs off (5ms doubling to 1s) and tries
// again. what names the listener in the log.
func (r *Relay) acceptLoop(ctx context.Context, ln net.Listener, handle func(net.Conn), what ...any) {
	var conns sync.WaitGroup
	defer conns.Wait()
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			r.fails.record(acceptError, append(what, "error", err)...)
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			continue
		}
		delay = 0
		conns.Go(func() { handle(c) })
	}
}

// writeFileAt writes data to the file name in the directory dir, held
// open, through a temporary file renamed over it, so that readers see all of
// it or nothing. It works on the directory itself, not on its path: the
// relay writes nowhere but in the directory whose owner and mode it checked.
func writeFileAt(dir *os.File, name string, data []byte) error {
	dfd := int(dir.Fd())
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	tmp := "." + name + "." + hex.EncodeToString(b[:])
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return err
	}
	if err := unix.Renameat(dfd, tmp, dfd, name); err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("rename %s to %s: %w", tmp, name, err)
	}
	return nil
}
