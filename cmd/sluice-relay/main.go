// Command sluice-relay is the job-side relay of the tunnels. The job starts
// it before the workload; it listens on a loopback address and passes on the
// job user's connections to each port to the tunnel's unix socket
// <dir>/rev-<port>.sock, closing everyone else's. With --forward it also
// serves <dir>/fwd.sock, the forward tunnel's entry: each connection names a
// port of the pod (relay.ForwardHeader) and is joined to the job user's
// listener for it, on --addr, 127.0.0.1 or [::1], never another user's; with
// --port-file, to the port the job wrote there for it.
//
//	sluice-relay --addr 127.4.5.6 --dir /tmp/sluice/<pod uid> --ports 9000,6379 --parent-pid $$ [--uid N]
//	sluice-relay --addr 127.4.5.6 --dir DIR --forward [--port-file FILE] [--ports ...] --parent-pid $$
//	sluice-relay --connect 127.0.0.1:PORT
//	sluice-relay --probe URL [--header 'Name: value']... [--entry DIR/fwd.sock]
//	sluice-relay --version
//
// With --connect it joins its standard input and output to a connection
// to that loopback address, until the far side ended it: one stream of
// kubectl port-forward, carried by srun into the job (Reverse.NodeExec:
// srun).
//
// It binds every port before anything else and then writes
// <dir>/rev-relay.ready. It stops when the parent process is gone, or on
// SIGTERM or SIGINT. When the directory is gone (removed, renamed away or
// replaced) it refuses every connection but keeps its ports until then, so
// that no other user can take its address. Messages go to standard error.
//
// Exit status:
//
//	0  stopped: parent gone, SIGTERM or SIGINT
//	1  failed: the socket directory is unusable or the readiness file cannot be written
//	2  usage: a flag is missing or malformed
//	3  a port is taken (the message names it); nothing was served
//	4  --connect, --probe: nothing listens at the address, or only another user does
//	5  --probe: the listener answered, and the check failed (a status of 400 or more)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/sluice-hpc/sluice/internal/relay"
)

const (
	exitFailed    = 1
	exitUsage     = 2
	exitPortTaken = 3
)

// portList collects --port and --ports.
type portList []uint16

func (p *portList) String() string { return fmt.Sprint([]uint16(*p)) }

func (p *portList) Set(s string) error {
	ports, err := relay.ParsePorts(s)
	if err != nil {
		return err
	}
	*p = append(*p, ports...)
	return nil
}

func main() {
	var ports portList
	addr := flag.String("addr", "", "IPv4 loopback address to listen on, in 127.0.0.0/8 but not 127.0.0.1 (required)")
	dir := flag.String("dir", "", "the pod's socket directory, holding rev-<port>.sock (required)")
	flag.Var(&ports, "port", "a port to listen on (repeatable)")
	flag.Var(&ports, "ports", "ports to listen on, separated by commas")
	parent := flag.Int("parent-pid", 0, "pid of the job's shell; the relay stops when it is gone (0: do not watch)")
	uid := flag.String("uid", "", "uid whose connections are passed on (default: the relay's own uid)")
	forward := flag.Bool("forward", false, "serve the forward entry DIR/"+relay.ForwardSocket)
	portFile := flag.String("port-file", "", "with --forward: the file where the job writes containerPort=actualPort lines")
	printVersion := flag.Bool("version", false, "print the version and exit")
	connectTo := flag.String("connect", "", "join standard input and output to a connection to this loopback address and port, then exit")
	var headers headerList
	probeURL := flag.String("probe", "", "check this tcp://, http:// or https:// target on the node's loopback once, then exit")
	flag.Var(&headers, "header", "with --probe: a header of the GET, 'Name: value' (repeatable)")
	entry := flag.String("entry", "", "with --probe: the job's forward entry, through which a target on 127.0.0.1 is reached")
	flag.Usage = usage
	flag.Parse()
	if *printVersion {
		if flag.NArg() > 0 {
			fmt.Fprintf(os.Stderr, "sluice-relay: unexpected arguments %q\n", flag.Args())
			os.Exit(exitUsage)
		}
		fmt.Println(versionString())
		return
	}

	if *probeURL != "" {
		if flag.NArg() > 0 || *connectTo != "" || *addr != "" || *dir != "" || len(ports) > 0 || *parent != 0 || *uid != "" || *forward || *portFile != "" {
			fmt.Fprintln(os.Stderr, "sluice-relay: --probe takes no flag but --header and --entry")
			os.Exit(exitUsage)
		}
		os.Exit(probe(&relay.Probe{Target: *probeURL, Headers: headers, Entry: *entry, UID: uint32(os.Getuid())}, os.Stderr))
	}
	if len(headers) > 0 || *entry != "" {
		fmt.Fprintln(os.Stderr, "sluice-relay: --header and --entry come with --probe only")
		os.Exit(exitUsage)
	}
	if *connectTo != "" {
		a, err := connectAddr(*connectTo)
		if err == nil && (flag.NArg() > 0 || *addr != "" || *dir != "" || len(ports) > 0 || *parent != 0 || *uid != "" || *forward || *portFile != "") {
			err = errors.New("--connect takes no other flag or argument")
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "sluice-relay:", err)
			os.Exit(exitUsage)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := connect(ctx, a, uint32(os.Getuid()), os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	cfg, err := config(*addr, *dir, ports, *parent, *uid)
	if err == nil {
		cfg.Forward, cfg.PortFile = *forward, *portFile
		err = validate(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice-relay:", err)
		os.Exit(exitUsage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, cfg))
}

func usage() {
	fmt.Fprint(flag.CommandLine.Output(), `usage: sluice-relay --addr 127.x.y.z --dir DIR [--ports P[,P...]] [--forward [--port-file FILE]] [--parent-pid PID] [--uid UID]
       sluice-relay --connect 127.0.0.1:PORT
       sluice-relay --probe URL [--header 'Name: value']... [--entry DIR/fwd.sock]
       sluice-relay --version

Passes the connections of one user to each port on to DIR/rev-<port>.sock,
after binding every port and writing DIR/rev-relay.ready. With --forward,
serves DIR/fwd.sock: each connection names a port and is joined to the
listener of UID for it (on 127.x.y.z, 127.0.0.1 or [::1]), never to another
user's.

Once DIR is gone every connection is refused; the ports stay bound until
the parent is gone.

Exit status: 0 stopped (parent gone, SIGTERM or SIGINT);
1 failed (socket directory unusable, readiness file not written);
2 usage; 3 a port is taken; 4 (--connect, --probe) nothing listens there,
or another user does; 5 (--probe) the check failed.

`)
	flag.PrintDefaults()
}

func config(addr, dir string, ports []uint16, parent int, uid string) (relay.Config, error) {
	if flag.NArg() > 0 {
		return relay.Config{}, fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	cfg := relay.Config{Dir: dir, Ports: ports, ParentPID: parent, UID: uint32(os.Getuid())}
	if addr == "" {
		return relay.Config{}, errors.New("--addr is required")
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return relay.Config{}, fmt.Errorf("--addr: %w", err)
	}
	cfg.Addr = a
	if uid != "" {
		n, err := strconv.ParseUint(uid, 10, 32)
		if err != nil {
			return relay.Config{}, fmt.Errorf("--uid %q is not a number", uid)
		}
		cfg.UID = uint32(n)
	}
	return cfg, nil
}

// validate checks the configuration, naming the flag at fault.
func validate(cfg relay.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	return nil
}

func run(ctx context.Context, cfg relay.Config) int {
	cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "sluice-relay")
	r, err := relay.Listen(cfg)
	var perr *relay.PortError
	if errors.As(err, &perr) {
		fmt.Fprintln(os.Stderr, "sluice-relay:", err)
		return exitPortTaken
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice-relay:", err)
		return exitFailed
	}
	if err := r.Serve(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-relay:", err)
		return exitFailed
	}
	return 0
}
