package relay

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Probe is one check of a container's httpGet or tcpSocket probe (or
// hook) on the node's loopback, run by the batch script as the job's user
// (sluice-relay --probe): it passes only when a listener of the job's user
// answers, never another user's that holds the port.
type Probe struct {
	// Target is what is checked: tcp://HOST:PORT (a connection),
	// http://HOST:PORT/PATH or https://… (a GET whose status is 200 to
	// 399; certificates are checked). HOST is a loopback address or
	// localhost (127.0.0.1).
	Target string
	// Headers are the GET's extra headers, "Name: value" each; a Host,
	// User-Agent or Accept among them replaces sluice's own.
	Headers []string
	// Entry is the job's forward entry (<socket dir>/fwd.sock), "" for
	// none. With one, a target on 127.0.0.1 is reached through it, as the
	// forward tunnel reaches the job: on the job's own address, 127.0.0.1
	// or [::1], through its port file (see Relay's forward entry).
	// Otherwise the relay connects to the target itself and checks who
	// accepted the connection.
	Entry string
	// UID is the job's user.
	UID uint32
	// TLSConfig is the base of an https target's TLS configuration (its
	// roots); ServerName is the target's host. If nil, the system's roots.
	TLSConfig *tls.Config
}

// ProbeError is a check that did not pass because no listener of the
// job's user answered: nothing listens, another user does, or the
// forward entry refused.
type ProbeError struct{ Reason string }

func (e *ProbeError) Error() string { return e.Reason }

// probeTimeout bounds a check that its caller does not bound.
const probeTimeout = 30 * time.Second

// maxStatusLine bounds the status line read back.
const maxStatusLine = 4096

// Run runs the check. A listener that is not the job user's is a
// *ProbeError; any other failure (a status of 400 or more, a TLS or I/O
// error) is another error. A Probe that is not valid is an error too.
func (p *Probe) Run(ctx context.Context) error {
	t, err := parseProbeTarget(p.Target)
	if err != nil {
		return err
	}
	for _, h := range p.Headers {
		if _, _, err := splitHeader(h); err != nil {
			return err
		}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, probeTimeout)
		defer cancel()
	}
	conn, err := p.dial(ctx, t)
	if err != nil {
		return err
	}
	defer conn.Close()
	if t.scheme == "tcp" {
		return nil
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if t.scheme == "https" {
		cfg := &tls.Config{ServerName: t.host}
		if p.TLSConfig != nil {
			cfg = p.TLSConfig.Clone()
			cfg.ServerName = t.host
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("probe %s: tls: %w", p.Target, err)
		}
		conn = tc
	}
	return p.get(conn, t)
}

// probeTarget is a parsed Probe.Target.
type probeTarget struct {
	scheme string // tcp, http or https
	host   string // as written: the Host header and the TLS server name
	addr   netip.AddrPort
	uri    string // the request URI of a GET
}

// parseProbeTarget checks and parses a Probe.Target.
func parseProbeTarget(s string) (probeTarget, error) {
	u, err := url.Parse(s)
	if err != nil {
		return probeTarget{}, fmt.Errorf("probe target: %w", err)
	}
	t := probeTarget{scheme: u.Scheme, host: u.Hostname(), uri: u.RequestURI()}
	def := ""
	switch u.Scheme {
	case "http":
		def = "80"
	case "https":
		def = "443"
	case "tcp":
	default:
		return probeTarget{}, fmt.Errorf("probe target %q: scheme %q is not tcp, http or https", s, u.Scheme)
	}
	if u.User != nil || u.Fragment != "" || (t.scheme == "tcp" && u.Path != "") {
		return probeTarget{}, fmt.Errorf("probe target %q: want SCHEME://HOST:PORT[/PATH]", s)
	}
	port := u.Port()
	if port == "" {
		port = def
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return probeTarget{}, fmt.Errorf("probe target %q: port %q is not from 1 to 65535", s, port)
	}
	ip := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	if !strings.EqualFold(t.host, "localhost") {
		if ip, err = netip.ParseAddr(t.host); err != nil || !ip.Unmap().IsLoopback() || ip.Zone() != "" {
			return probeTarget{}, fmt.Errorf("probe target %q: %q is not a loopback address of the node", s, t.host)
		}
	}
	t.addr = netip.AddrPortFrom(ip.Unmap(), uint16(n))
	return t, nil
}

// dial opens the connection to the job's listener for t: through the
// forward entry for 127.0.0.1, else straight to t's address, checking who
// accepted it.
func (p *Probe) dial(ctx context.Context, t probeTarget) (net.Conn, error) {
	if p.Entry != "" && t.addr.Addr() == netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", p.Entry)
		if err != nil {
			return nil, fmt.Errorf("probe %s: forward entry: %w", p.Target, err)
		}
		err = OpenForwardContext(ctx, c, t.addr.Port())
		var rerr *RefusedError
		if errors.As(err, &rerr) {
			return nil, &ProbeError{Reason: "probe " + p.Target + ": " + rerr.Reason}
		}
		if err != nil {
			return nil, fmt.Errorf("probe %s: %w", p.Target, err)
		}
		return c, nil
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", t.addr.String())
	if err != nil {
		return nil, &ProbeError{Reason: fmt.Sprintf("probe %s: %v", p.Target, err)}
	}
	if err := CheckAccepted(ctx, c.(*net.TCPConn), p.UID); err != nil {
		c.Close()
		return nil, &ProbeError{Reason: fmt.Sprintf("probe %s: %v", p.Target, err)}
	}
	return c, nil
}

// get asks for t's URI over c and reads back the status.
func (p *Probe) get(c net.Conn, t probeTarget) error {
	host := t.host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	own := map[string]string{
		"host":       host + ":" + strconv.Itoa(int(t.addr.Port())),
		"user-agent": "sluice-probe",
		"accept":     "*/*",
	}
	var extra strings.Builder
	for _, h := range p.Headers {
		name, value, _ := splitHeader(h) // checked in Run
		delete(own, strings.ToLower(name))
		fmt.Fprintf(&extra, "%s: %s\r\n", name, value)
	}
	var req strings.Builder
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\n", t.uri)
	for _, name := range []string{"host", "user-agent", "accept"} {
		if v, ok := own[name]; ok {
			fmt.Fprintf(&req, "%s: %s\r\n", headerCase(name), v)
		}
	}
	req.WriteString(extra.String())
	req.WriteString("Connection: close\r\n\r\n")
	if _, err := io.WriteString(c, req.String()); err != nil {
		return fmt.Errorf("probe %s: write request: %w", p.Target, err)
	}
	line, err := bufio.NewReaderSize(io.LimitReader(c, maxStatusLine), maxStatusLine).ReadString('\n')
	if err != nil {
		return fmt.Errorf("probe %s: read status: %w", p.Target, err)
	}
	code, err := statusCode(line)
	if err != nil {
		return fmt.Errorf("probe %s: %w", p.Target, err)
	}
	if code < 200 || code > 399 {
		return fmt.Errorf("probe %s: status %d", p.Target, code)
	}
	return nil
}

// statusCode reads the code of an HTTP/1.x status line.
func statusCode(line string) (int, error) {
	proto, rest, ok := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/1.") {
		return 0, fmt.Errorf("not an HTTP/1 status line: %q", truncate(line, 64))
	}
	code, _, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(code)
	if err != nil || len(code) != 3 {
		return 0, fmt.Errorf("not an HTTP/1 status line: %q", truncate(line, 64))
	}
	return n, nil
}

// splitHeader checks a "Name: value" header: a name of token characters
// and a value of printable ASCII.
func splitHeader(h string) (name, value string, err error) {
	name, value, ok := strings.Cut(h, ":")
	value = strings.TrimSpace(value)
	if !ok || name == "" || strings.IndexFunc(name, notToken) >= 0 || strings.IndexFunc(value, notPrintable) >= 0 {
		return "", "", fmt.Errorf("probe header %q: want a name of token characters, ':' and a value of printable ASCII", truncate(h, 64))
	}
	return name, value, nil
}

func notToken(r rune) bool {
	return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
}

func notPrintable(r rune) bool { return r < ' ' || r >= 0x7f }

// headerCase writes a header name of sluice's own as it is usually seen.
func headerCase(name string) string {
	switch name {
	case "user-agent":
		return "User-Agent"
	case "accept":
		return "Accept"
	}
	return "Host"
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
