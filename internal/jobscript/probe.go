package jobscript

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"

	"github.com/sluice-hpc/sluice/internal/hostname"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ProbeKind names how a probe checks its container.
type ProbeKind string

// The kinds of probe the batch script runs.
const (
	ProbeExec ProbeKind = "exec" // a command in the container's image
	ProbeHTTP ProbeKind = "http" // an HTTP GET (curl, else wget)
	ProbeTCP  ProbeKind = "tcp"  // a TCP connection (bash's /dev/tcp, else nc -z)
)

// Probe is a container's probe, run on the node by the batch script: the
// containers share the node's network, so that the pod's address is the
// node's loopback. Every field is checked (newProbe): what reaches the
// script is quoted.
type Probe struct {
	Kind ProbeKind
	// Command is an exec probe's command, run in the container's image
	// with its environment, as the container's own command is.
	Command []string
	// URL and Headers ("Name: value") are an HTTP probe's.
	URL     string
	Headers []string
	// Host and Port are a TCP probe's.
	Host string
	Port int32
	// The timings (seconds) and thresholds of Kubernetes' probes.
	InitialDelay, Period, Timeout int32
	Success, Failure              int32
}

// Bounds of a probe's timings: the API server fills in defaults, which
// are kept here for a pod that reached sluice without them.
const (
	maxProbeSeconds   = 86400
	maxProbeThreshold = 1000
	maxProbeText      = 1024 // a header value, a path
)

var (
	headerName = regexp.MustCompile(`^[A-Za-z0-9!#$%&'*+.^_|~-]{1,128}$`)
	// headerValue is printable ASCII: no control character reaches curl.
	headerValue = regexp.MustCompile(`^[\x20-\x7e]*$`)
	// probePath is what may follow the authority in a probe's URL.
	probePath = regexp.MustCompile(`^/[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*$`)
)

// Owned reports whether the check of p is owner-checked: an httpGet or
// tcpSocket on the node's loopback (an IP literal or localhost), where
// any user of the node may listen, runs through the relay (sluice-relay
// --probe), which passes it only when a listener of the job's user
// answers. A check of another host goes there as it is (curl, wget, bash
// or nc).
func (p *Probe) Owned() bool {
	switch p.Kind {
	case ProbeTCP:
		return isLoopbackHost(p.Host)
	case ProbeHTTP:
		u, err := url.Parse(p.URL)
		return err == nil && isLoopbackHost(u.Hostname())
	}
	return false
}

// Target is what the relay checks for an owned probe (sluice-relay
// --probe): the URL of an httpGet, tcp://HOST:PORT for a tcpSocket.
func (p *Probe) Target() string {
	if p.Kind == ProbeTCP {
		return "tcp://" + net.JoinHostPort(p.Host, strconv.Itoa(int(p.Port)))
	}
	return p.URL
}

// isLoopbackHost reports whether h, a probe's host, is the node's
// loopback: localhost, or a loopback IP address.
func isLoopbackHost(h string) bool {
	if isLocalhost(h) {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// newProbe turns a Kubernetes probe of container c into a Probe. A grpc
// probe, or one with no handler, is refused with the reason.
func newProbe(p *corev1.Probe, c *corev1.Container) (*Probe, error) {
	out := &Probe{
		InitialDelay: bounded(p.InitialDelaySeconds, 0, maxProbeSeconds, 0),
		Period:       bounded(p.PeriodSeconds, 1, maxProbeSeconds, 10),
		Timeout:      bounded(p.TimeoutSeconds, 1, maxProbeSeconds, 1),
		Success:      bounded(p.SuccessThreshold, 1, maxProbeThreshold, 1),
		Failure:      bounded(p.FailureThreshold, 1, maxProbeThreshold, 3),
	}
	h := p.ProbeHandler
	switch {
	case h.Exec != nil:
		if len(h.Exec.Command) == 0 {
			return nil, errors.New("exec probe without a command")
		}
		if i, err := checkArgv(h.Exec.Command); err != nil {
			return nil, fmt.Errorf("exec.command[%d] %w", i, err)
		}
		out.Kind, out.Command = ProbeExec, h.Exec.Command
	case h.HTTPGet != nil:
		u, err := httpProbeURL(h.HTTPGet, c)
		if err != nil {
			return nil, fmt.Errorf("httpGet: %w", err)
		}
		out.Kind, out.URL = ProbeHTTP, u
		for _, hd := range h.HTTPGet.HTTPHeaders {
			if !headerName.MatchString(hd.Name) || !headerValue.MatchString(hd.Value) || len(hd.Value) > maxProbeText {
				return nil, fmt.Errorf("httpGet.httpHeaders: header %q: a name of token characters and a value of printable ASCII", hd.Name)
			}
			out.Headers = append(out.Headers, hd.Name+": "+hd.Value)
		}
	case h.TCPSocket != nil:
		host, err := probeHost(h.TCPSocket.Host)
		if err != nil {
			return nil, fmt.Errorf("tcpSocket.host: %w", err)
		}
		port, err := probePort(h.TCPSocket.Port, c)
		if err != nil {
			return nil, fmt.Errorf("tcpSocket.port: %w", err)
		}
		out.Kind, out.Host, out.Port = ProbeTCP, host, port
	case h.GRPC != nil:
		return nil, errors.New("grpc probes are not supported: the node has no grpc client to run them with")
	default:
		return nil, errors.New("a probe with no handler")
	}
	return out, nil
}

// httpProbeURL is the URL an httpGet probe asks: its host (the node's
// loopback if none), port and path, each checked.
func httpProbeURL(g *corev1.HTTPGetAction, c *corev1.Container) (string, error) {
	scheme := "http"
	switch g.Scheme {
	case "", corev1.URISchemeHTTP:
	case corev1.URISchemeHTTPS:
		scheme = "https" // verified: sluice never skips a certificate check (S8)
	default:
		return "", fmt.Errorf("scheme %q is neither HTTP nor HTTPS", g.Scheme)
	}
	host, err := probeHost(g.Host)
	if err != nil {
		return "", fmt.Errorf("host: %w", err)
	}
	port, err := probePort(g.Port, c)
	if err != nil {
		return "", fmt.Errorf("port: %w", err)
	}
	path := g.Path
	if path == "" {
		path = "/"
	}
	if !probePath.MatchString(path) || len(path) > maxProbeText {
		return "", fmt.Errorf("path %q: must start with / and hold URL characters only", path)
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(int(port)))}
	return u.String() + path, nil
}

// probeHost is a probe's host: the node's loopback when empty, else a
// host name or an IP literal.
func probeHost(h string) (string, error) {
	if h == "" {
		return "127.0.0.1", nil
	}
	if err := hostname.CheckHost(h); err != nil {
		return "", err
	}
	return h, nil
}

// probePort resolves a probe's port: a number, or the name of one of the
// container's ports.
func probePort(p intstr.IntOrString, c *corev1.Container) (int32, error) {
	if p.Type == intstr.Int {
		if p.IntVal < 1 || p.IntVal > 65535 {
			return 0, fmt.Errorf("port %d out of range", p.IntVal)
		}
		return p.IntVal, nil
	}
	for _, cp := range c.Ports {
		if cp.Name != "" && cp.Name == p.StrVal && cp.ContainerPort > 0 && cp.ContainerPort <= 65535 {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("the container has no port named %q", p.StrVal)
}

// bounded is v within [lo, hi], or def when v is zero.
func bounded(v, lo, hi, def int32) int32 {
	switch {
	case v == 0:
		return def
	case v < lo:
		return lo
	case v > hi:
		return hi
	}
	return v
}

// check checks a probe that did not come from newProbe; nil passes.
func (p *Probe) check() error {
	if p == nil {
		return nil
	}
	for _, v := range []int32{p.InitialDelay, p.Period, p.Timeout, p.Success, p.Failure} {
		if v < 0 || v > maxProbeSeconds {
			return fmt.Errorf("timing %d out of range", v)
		}
	}
	if p.Period < 1 || p.Timeout < 1 || p.Success < 1 || p.Failure < 1 {
		return errors.New("a period, timeout or threshold below 1")
	}
	switch p.Kind {
	case ProbeExec:
		if len(p.Command) == 0 {
			return errors.New("exec probe without a command")
		}
		if i, err := checkArgv(p.Command); err != nil {
			return fmt.Errorf("command[%d] %w", i, err)
		}
	case ProbeHTTP:
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || checkScriptText(p.URL) != nil {
			return fmt.Errorf("url %q is not an http(s) URL", p.URL)
		}
		for _, h := range p.Headers {
			if !headerValue.MatchString(h) {
				return fmt.Errorf("header %q is not printable ASCII", h)
			}
		}
	case ProbeTCP:
		if err := hostname.CheckHost(p.Host); err != nil {
			return err
		}
		if p.Port < 1 || p.Port > 65535 {
			return fmt.Errorf("port %d out of range", p.Port)
		}
	default:
		return fmt.Errorf("unknown probe kind %q", p.Kind)
	}
	return nil
}
