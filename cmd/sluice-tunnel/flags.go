package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/sluice-hpc/sluice/internal/sitepath"
	"github.com/sluice-hpc/sluice/internal/tunnel"
)

// Modes, the subcommands that run a tunnel.
const (
	modeForward = "forward"
	modeReverse = "reverse"
	modeGateway = "gateway" // serves shadows, not one tunnel
)

// config is a tunnel's command line, parsed and checked, before any file is
// read (load reads them).
type config struct {
	mode string

	login           string // host:port of the login node's sshd
	user            string
	keyFile         string
	certFile        string
	kerberos        kerberosFlags
	loginKnownHosts string
	nodeKnownHosts  string
	nodeFile        string
	nodePort        int
	metrics         string // host:port to serve /metrics on; "" for none
	logFormat       string // "json" or "text"
	logLevel        slog.Level
	access          accessFlags  // bastion, reconnection jitter
	gateway         gatewayFlags // a sluice gateway instead of the site
	serve           serveFlags   // the gateway's own, in modeGateway

	// forward
	target tunnel.Target
	ports  []int
	listen string // IP address; "" for all
	bounds forwardBounds
	entry  string // names the socket directory of the relay's forward entry; "" for none

	// reverse
	socketDir     string
	socketDirFile string // names socketDir once sluice-vk knows it
	endpoints     []tunnel.Endpoint
	socksPort     int    // 0 for no SOCKS proxy
	sshd          string // tunnel.SshdNode or tunnel.SshdUserspace
	sshdPath      string // the user-space sshd on the node
	nodeExec      string // tunnel.NodeExecSSH or tunnel.NodeExecSrun
	jobFile       string // the job's Slurm id, for srun
}

// maxSocketPath is the longest path of a unix socket: the limit the
// configuration and the job check SocketDirRoot against.
const maxSocketPath = sitepath.MaxSocketPath

// parseArgs parses the flags of mode (modeForward, modeReverse or modeGateway) and checks
// them. It returns flag.ErrHelp for -h and --help.
func parseArgs(mode string, args []string) (*config, error) {
	c := &config{mode: mode, nodePort: 22}
	fs, raw := flagSet(mode, c, io.Discard)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (all settings are --flags)", fs.Arg(0))
	}
	if err := c.check(raw); err != nil {
		return nil, err
	}
	return c, nil
}

// rawFlags holds the flags that are checked after parsing, as given.
type rawFlags struct {
	login, metrics, target, listen, level string
	nodePort, socksPort                   portValue
	ports                                 portList
	endpoints                             endpointList
}

// flagSet defines the flags of mode, filling c and raw, writing its usage to
// out.
func flagSet(mode string, c *config, out io.Writer) (*flag.FlagSet, *rawFlags) {
	fs := flag.NewFlagSet("sluice-tunnel "+mode, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {}
	raw := &rawFlags{nodePort: 22}
	fs.StringVar(&raw.login, "login", "", "the login node's sshd, HOST:PORT (PORT defaults to 22) (required)")
	fs.StringVar(&c.user, "user", "", "the site account to log in as, on the login node and the compute node (required)")
	fs.StringVar(&c.keyFile, "key", "", "the account's private key file, unencrypted (required, unless --keytab)")
	fs.StringVar(&c.certFile, "certificate", "", "an OpenSSH user certificate of the key, offered with it and read again at each connection (default: the plain key)")
	c.kerberos.define(fs)
	fs.StringVar(&c.loginKnownHosts, "login-known-hosts", "", "known_hosts file pinning the login node's host key (required)")
	fs.StringVar(&c.nodeKnownHosts, "node-known-hosts", "", "known_hosts file pinning the compute nodes' host keys (required)")
	fs.Var(&raw.nodePort, "node-port", "`PORT` of the compute nodes' sshd")
	fs.StringVar(&raw.metrics, "metrics", "", "ADDR:PORT to serve /metrics and /healthz on, ADDR an IP address or empty for all (default: no metrics)")
	fs.StringVar(&c.logFormat, "log-format", "json", "log format: json or text")
	fs.StringVar(&raw.level, "log-level", "info", "log level: debug, info, warn or error")
	c.access.define(fs)
	if mode != modeGateway {
		// A tunnel follows its one job's node; the gateway each shadow's
		// grant, and it is never a gateway's client.
		fs.StringVar(&c.nodeFile, "node-file", "", "file naming the job's compute node, empty until it is known; read again every second (required)")
		c.gateway.define(fs)
	}
	switch mode {
	case modeGateway:
		c.serve.define(fs)
	case modeForward:
		fs.StringVar(&raw.target, "target", string(tunnel.TargetNode), "where the ports are dialed: node (the node's sshd dials its loopback) or login (the login node dials NODE:PORT)")
		fs.Var(&raw.ports, "ports", "the job's TCP ports to forward, `P[,P...]` (required)")
		fs.StringVar(&raw.listen, "listen", "", "IP address to listen on (default: all addresses)")
		fs.StringVar(&c.entry, "entry-dir-file", "", "file naming the pod's socket directory, whose relay serves the forward entry: each connection goes through it, to a listener of the job's user only; read at each connection (default: none, the node's 127.0.0.1:PORT)")
		c.bounds.define(fs)
	case modeReverse:
		fs.StringVar(&c.socketDir, "socket-dir", "", "the pod's socket directory on the compute node, an absolute path (required, unless --socket-dir-file)")
		fs.StringVar(&c.socketDirFile, "socket-dir-file", "", "file naming the pod's socket directory, empty until the job is submitted; read every second until it names one")
		fs.Var(&raw.endpoints, "forward", "a cluster endpoint, `LISTENPORT=HOST:PORT`: the job's rev-LISTENPORT.sock leads to HOST:PORT (repeatable; at least one, or --socks-port)")
		fs.StringVar(&c.sshd, "sshd", tunnel.SshdNode, "where the forwards are asked: node (the node's own sshd) or userspace (an sshd -i started as the user for each session)")
		fs.StringVar(&c.sshdPath, "sshd-path", tunnel.DefaultSshdPath, "the sshd binary on the compute node, for --sshd=userspace")
		fs.StringVar(&c.nodeExec, "node-exec", tunnel.NodeExecSSH, "how the compute node is reached: ssh (its sshd, through the login node) or srun (srun --jobid JOB --overlap from the login node, with a user-space sshd)")
		fs.StringVar(&c.jobFile, "job-file", "", "file holding the job's Slurm id, read again at each session (required with --node-exec=srun)")
		fs.Var(&raw.socksPort, "socks-port", "`PORT` of a SOCKS5 proxy on the compute node's 127.0.0.1, open to every user of the node (default: none)")
	}
	return fs, raw
}

// check fills c from raw and checks every flag, naming the flag that is
// wrong.
func (c *config) check(raw *rawFlags) error {
	var fe flagErrs
	fail, required := fe.fail, fe.required

	switch {
	case c.mode == modeGateway:
		fe = append(fe, c.checkSite(raw)...)
		fe = append(fe, c.serve.check()...)
	case c.gateway.addr != "":
		fe = append(fe, c.checkGateway(raw)...)
		required("node-file", c.nodeFile)
	default:
		fe = append(fe, c.checkSite(raw)...)
		required("node-file", c.nodeFile)
	}
	c.nodePort = int(raw.nodePort)
	if raw.metrics != "" {
		addr, err := parseListenAddr(raw.metrics)
		if err != nil {
			fail("metrics", err)
		}
		c.metrics = addr
	}
	if c.logFormat != "json" && c.logFormat != "text" {
		fail("log-format", fmt.Errorf("%q: want json or text", c.logFormat))
	}
	if err := c.logLevel.UnmarshalText([]byte(raw.level)); err != nil {
		fail("log-level", fmt.Errorf("%q: want debug, info, warn or error", raw.level))
	}

	switch c.mode {
	case modeForward:
		fe = append(fe, c.checkForward(raw)...)
	case modeReverse:
		fe = append(fe, c.checkReverse(raw)...)
	}
	return errors.Join(fe...)
}

// checkSite checks the flags of the way to the site's login node.
func (c *config) checkSite(raw *rawFlags) []error {
	var fe flagErrs
	fail, required := fe.fail, fe.required
	if required("login", raw.login) {
		login, err := parseHostPort(raw.login, 22)
		if err != nil {
			fail("login", err)
		}
		c.login = login
	}
	if required("user", c.user) {
		if err := checkUser(c.user); err != nil {
			fail("user", err)
		}
	}
	if c.kerberos.keytab == "" {
		required("key", c.keyFile)
	}
	fe = append(fe, c.kerberos.check()...)
	required("login-known-hosts", c.loginKnownHosts)
	required("node-known-hosts", c.nodeKnownHosts)
	return append(fe, c.access.check()...)
}

// flagErrs collects the errors of a command line, each naming its flag.
type flagErrs []error

func (fe *flagErrs) fail(flag string, err error) {
	*fe = append(*fe, fmt.Errorf("--%s: %w", flag, err))
}

// required reports whether v, the value of flag, was given, and records
// the error when not.
func (fe *flagErrs) required(flag, v string) bool {
	if v == "" {
		*fe = append(*fe, fmt.Errorf("--%s is required", flag))
		return false
	}
	return true
}

func (c *config) checkForward(raw *rawFlags) []error {
	var errs []error
	switch t := tunnel.Target(raw.target); t {
	case tunnel.TargetNode, tunnel.TargetLogin:
		c.target = t
	default:
		errs = append(errs, fmt.Errorf("--target: %q: want node or login", raw.target))
	}
	c.ports = raw.ports
	if len(c.ports) == 0 {
		errs = append(errs, errors.New("--ports is required"))
	} else if err := distinct(c.ports); err != nil {
		errs = append(errs, fmt.Errorf("--ports: %w", err))
	}
	if raw.listen != "" {
		if err := checkListenIP(raw.listen); err != nil {
			errs = append(errs, fmt.Errorf("--listen: %w", err))
		}
		c.listen = raw.listen
	}
	if c.entry != "" && c.target == tunnel.TargetLogin {
		errs = append(errs, errors.New("--entry-dir-file: the relay's entry is reached through the node's sshd, not with --target=login"))
	}
	errs = append(errs, c.bounds.check()...)
	if port, clash := c.metricsClash(); clash {
		errs = append(errs, fmt.Errorf("--metrics: port %d is also a forwarded port (--ports)", port))
	}
	return errs
}

// metricsClash reports whether the metrics server would listen on a port
// and address the forward listens on too.
func (c *config) metricsClash() (int, bool) {
	if c.metrics == "" {
		return 0, false
	}
	host, port, err := net.SplitHostPort(c.metrics)
	if err != nil {
		return 0, false
	}
	p, _ := strconv.Atoi(port)
	for _, fp := range c.ports {
		if fp == p && overlap(host, c.listen) {
			return p, true
		}
	}
	return 0, false
}

// overlap reports whether listening on a and on b (IP addresses, "" for
// all) would take the same address.
func overlap(a, b string) bool {
	all := func(s string) bool {
		ip, err := netip.ParseAddr(s)
		return s == "" || err == nil && ip.IsUnspecified()
	}
	if all(a) || all(b) {
		return true
	}
	ia, _ := netip.ParseAddr(a)
	ib, _ := netip.ParseAddr(b)
	return ia.Unmap() == ib.Unmap()
}

func (c *config) checkReverse(raw *rawFlags) []error {
	var errs []error
	switch {
	case c.socketDir == "" && c.socketDirFile == "":
		errs = append(errs, errors.New("--socket-dir or --socket-dir-file is required"))
	case c.socketDir != "" && c.socketDirFile != "":
		errs = append(errs, errors.New("--socket-dir and --socket-dir-file exclude each other"))
	case c.socketDir != "":
		if err := checkSocketDir(c.socketDir); err != nil {
			errs = append(errs, fmt.Errorf("--socket-dir: %w", err))
		}
	}
	if c.sshd != tunnel.SshdNode && c.sshd != tunnel.SshdUserspace {
		errs = append(errs, fmt.Errorf("--sshd: %q: want %s or %s", c.sshd, tunnel.SshdNode, tunnel.SshdUserspace))
	}
	if !filepath.IsAbs(c.sshdPath) || filepath.Clean(c.sshdPath) != c.sshdPath || strings.ContainsFunc(c.sshdPath, unicode.IsSpace) {
		errs = append(errs, fmt.Errorf("--sshd-path: %q is not a clean absolute path", c.sshdPath))
	}
	switch {
	case c.nodeExec != tunnel.NodeExecSSH && c.nodeExec != tunnel.NodeExecSrun:
		errs = append(errs, fmt.Errorf("--node-exec: %q: want %s or %s", c.nodeExec, tunnel.NodeExecSSH, tunnel.NodeExecSrun))
	case c.nodeExec == tunnel.NodeExecSrun && c.jobFile == "":
		errs = append(errs, errors.New("--job-file is required with --node-exec=srun"))
	}
	c.endpoints = raw.endpoints
	c.socksPort = int(raw.socksPort)
	if len(c.endpoints) == 0 && c.socksPort == 0 {
		errs = append(errs, errors.New("--forward is required (at least one LISTENPORT=HOST:PORT), or --socks-port"))
	}
	listen := make([]int, len(c.endpoints))
	for i, e := range c.endpoints {
		listen[i] = e.ListenPort
		if e.ListenPort == c.socksPort {
			errs = append(errs, fmt.Errorf("--socks-port: %d is also the listen port of --forward %s", c.socksPort, e))
		}
	}
	if err := distinct(listen); err != nil {
		errs = append(errs, fmt.Errorf("--forward: listen %w", err))
	}
	return errs
}

// checkSocketDir accepts an absolute, clean path of printable characters
// short enough for the sockets rev-<port>.sock in it.
func checkSocketDir(dir string) error {
	switch {
	case !filepath.IsAbs(dir):
		return fmt.Errorf("%q is not an absolute path", dir)
	case filepath.Clean(dir) != dir:
		return fmt.Errorf("%q is not a clean path (want %q)", dir, filepath.Clean(dir))
	case dir == "/":
		return errors.New("the root directory is not a socket directory")
	case strings.IndexFunc(dir, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) >= 0:
		return fmt.Errorf("%q holds a space or a control character", dir)
	case len(dir)+len("/"+sitepath.LongestSocketName) > maxSocketPath:
		return fmt.Errorf("%q is too long: the socket paths in it would pass the %d-byte limit of unix sockets", dir, maxSocketPath)
	}
	return nil
}

// checkUser accepts a user name for SSH: printable, no spaces, not starting
// with '-', at most 256 bytes.
func checkUser(u string) error {
	switch {
	case len(u) > 256:
		return errors.New("longer than 256 bytes")
	case strings.HasPrefix(u, "-"):
		return fmt.Errorf("%q starts with '-'", u)
	case strings.IndexFunc(u, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) >= 0:
		return fmt.Errorf("%q holds a space or a control character", u)
	}
	return nil
}
