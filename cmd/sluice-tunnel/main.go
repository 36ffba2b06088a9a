// Command sluice-tunnel is the program of a shadow pod's tunnel containers
// (SPEC S3-S5): it carries connections between the cluster and an offloaded
// job over SSH, through the site's login node, with the host key of every
// hop checked against a pinned known_hosts file.
//
//	sluice-tunnel forward --login=HOST:PORT --user=U --key=FILE
//	    --login-known-hosts=FILE --node-known-hosts=FILE --node-file=FILE
//	    --ports=P[,P...] [--target=node|login] [--listen=ADDR] [--entry-dir-file=FILE]
//	    [--node-port=22] [--metrics=ADDR:PORT] [--log-format=json|text] [--log-level=info]
//	sluice-tunnel reverse --login=HOST:PORT --user=U --key=FILE
//	    --login-known-hosts=FILE --node-known-hosts=FILE --node-file=FILE
//	    --socket-dir=DIR|--socket-dir-file=FILE --forward=LISTENPORT=HOST:PORT [--forward=...]
//	    [--node-port=22] [--metrics=ADDR:PORT] [--log-format=json|text] [--log-level=info]
//	sluice-tunnel forward|reverse --gateway=HOST:PORT --gateway-known-hosts=FILE
//	    --gateway-token=FILE --node-file=FILE [the mode's other flags]
//	sluice-tunnel gateway --host-key=FILE --node=NAME --credentials-namespace=NS
//	    [the site's access flags, as forward's] [--listen=:2222] [--kubeconfig=FILE]
//	    [--tenant-namespace=NS] [--trusted-namespaces=NS,...] [--metrics=ADDR:PORT]
//	sluice-tunnel version | --version
//
// forward listens on each of the job's ports and carries each connection to
// the job's compute node; reverse holds one remote forward per endpoint on
// the compute node, a unix socket rev-LISTENPORT.sock in the socket
// directory, and dials HOST:PORT in the cluster for each connection. Both
// follow the node named in the node file. With --gateway, both connect to a
// sluice gateway with the shadow's ServiceAccount token instead of to the
// login node, and hold no site credential (docs/gateway.md); gateway is
// that gateway, holding the site's access for every shadow of a virtual
// node. A site that cannot be reached or
// a host key that does not match is logged and retried, never fatal.
// --metrics serves /metrics (Prometheus), /status (the tunnel's state as
// JSON), /healthz (200 while the process serves: the liveness probe) and
// /readyz (200 while the tunnel is up, else 503: the readiness probe).
//
// Logs are JSON lines on standard error unless --log-format=text.
//
// Exit status:
//
//	0  stopped by SIGTERM or SIGINT (connections are closed first)
//	1  could not start: a port or the metrics address cannot be listened on
//	2  usage or configuration: a flag missing or malformed, a file missing or unusable
//
// The image is built by `make images` (hack/tools/images): a static binary
// with its version stamped into internal/version, as sluice-vk's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sluice-hpc/sluice/internal/tunnel"
)

const (
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, a second one kills at once.
	context.AfterFunc(ctx, stop)
	code := cli(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cli runs the command line args until ctx ends and returns the exit status.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch cmd := args[0]; cmd {
	case "version", "--version", "-version":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "sluice-tunnel version: unexpected argument %q\n", args[1])
			return exitUsage
		}
		fmt.Fprintln(stdout, versionString())
		return 0
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	case modeForward, modeReverse, modeGateway:
		return runMode(ctx, cmd, args[1:], stdout, stderr)
	case "hold":
		// The container of a shadow that has only kept init containers:
		// it keeps the shadow pod running, and does nothing, until told
		// to stop.
		if len(args) > 1 {
			fmt.Fprintf(stderr, "sluice-tunnel hold: unexpected argument %q\n", args[1])
			return exitUsage
		}
		<-ctx.Done()
		return 0
	default:
		fmt.Fprintf(stderr, "sluice-tunnel: unknown command %q\n\n", cmd)
		usage(stderr)
		return exitUsage
	}
}

// runMode parses the flags of mode, loads its files and runs the tunnel.
func runMode(ctx context.Context, mode string, args []string, stdout, stderr io.Writer) int {
	c, err := parseArgs(mode, args)
	if errors.Is(err, flag.ErrHelp) {
		modeUsage(stdout, mode)
		return 0
	}
	if err != nil {
		printErr(stderr, mode, err)
		fmt.Fprintf(stderr, "run 'sluice-tunnel %s -h' for usage\n", mode)
		return exitUsage
	}
	log := newLogger(stderr, c.logFormat, c.logLevel, mode)
	if soft := setSoftMemoryLimit(); soft > 0 {
		log.Info("soft memory limit set from the cgroup's", "bytes", soft)
	}
	var hop *tunnel.Hop
	if c.gateway.addr != "" {
		hop, err = loadGatewayHop(c)
	} else {
		hop, err = loadHop(c, log)
	}
	if err != nil {
		printErr(stderr, mode, err)
		return exitUsage
	}
	if mode == modeGateway {
		g, err := loadGateway(c, hop, log)
		if err != nil {
			printErr(stderr, mode, err)
			return exitUsage
		}
		if err := serveGateway(ctx, c, g, log); err != nil {
			// An address taken at start, or the listener failing later.
			log.Error("gateway failed", "error", err)
			return exitFailed
		}
		return 0
	}
	if err := run(ctx, c, hop, log); err != nil {
		log.Error("tunnel failed to start", "error", err)
		return exitFailed
	}
	return 0
}

// printErr writes err, one line per joined error, each prefixed with the
// command.
func printErr(w io.Writer, mode string, err error) {
	for line := range strings.SplitSeq(err.Error(), "\n") {
		fmt.Fprintf(w, "sluice-tunnel %s: %s\n", mode, line)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: sluice-tunnel forward|reverse|gateway [flags]
       sluice-tunnel hold | version

  forward  listen on the job's ports and carry each connection to its compute node
  reverse  hold the job's endpoint sockets on its compute node and dial them in the cluster
  gateway  serve the shadows of a virtual node, each its own pod's tunnels, over shared site connections
  hold     do nothing until stopped (the shadow of a pod with only kept init containers)
  version  print the version

Run 'sluice-tunnel MODE -h' (forward, reverse or gateway) for the flags.

Exit status: 0 stopped by SIGTERM or SIGINT; 1 could not start (an address
cannot be listened on); 2 usage or configuration error.
`)
}

func modeUsage(w io.Writer, mode string) {
	switch mode {
	case modeForward:
		fmt.Fprint(w, `usage: sluice-tunnel forward --login=HOST:PORT --user=U --key=FILE
    --login-known-hosts=FILE --node-known-hosts=FILE --node-file=FILE
    --ports=P[,P...] [--target=node|login] [--listen=ADDR] [--entry-dir-file=FILE]
    [--node-port=22] [--metrics=ADDR:PORT] [--log-format=json|text] [--log-level=info]

Listens on each port and carries each connection over SSH through the login
node to the job's compute node (named in --node-file, followed as it changes):
with --entry-dir-file, through the job's relay, which passes it only to a
listener of the job's user.

`)
	case modeGateway:
		fmt.Fprint(w, `usage: sluice-tunnel gateway --host-key=FILE --node=NAME --credentials-namespace=NS
    --login=HOST:PORT --user=U --key=FILE --login-known-hosts=FILE --node-known-hosts=FILE
    [--listen=:2222] [--kubeconfig=FILE] [--tenant-namespace=NS] [--trusted-namespaces=NS,...]
    [--node-port=22] [--metrics=ADDR:PORT] [--log-format=json|text] [--log-level=info]

Serves the shadows of a virtual node (SPEC S14): each logs in with its
pod-bound ServiceAccount token, which the API server reviews, and may carry
only its own pod's tunnels, over one SSH connection to the login node and
one to each compute node with tunnelled jobs, which the gateway holds.

`)
	case modeReverse:
		fmt.Fprint(w, `usage: sluice-tunnel reverse --login=HOST:PORT --user=U --key=FILE
    --login-known-hosts=FILE --node-known-hosts=FILE --node-file=FILE
    --socket-dir=DIR|--socket-dir-file=FILE --forward=LISTENPORT=HOST:PORT [--forward=...]
    [--node-port=22] [--metrics=ADDR:PORT] [--log-format=json|text] [--log-level=info]

Holds a session to the job's compute node (named in --node-file) with one
remote forward per endpoint, the unix socket DIR/rev-LISTENPORT.sock, and
dials HOST:PORT in the cluster for each connection arriving there. With
--socket-dir-file, DIR is read from FILE once it names one (a shadow's node
ConfigMap carries it once the job is submitted).

`)
	}
	fs, _ := flagSet(mode, &config{}, w)
	fs.PrintDefaults()
}
