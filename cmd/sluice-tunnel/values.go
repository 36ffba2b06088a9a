package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/sluice-hpc/sluice/internal/hostname"
	"github.com/sluice-hpc/sluice/internal/tunnel"
)

// parsePort parses a TCP port: decimal digits only, no sign, no leading
// zero, 1-65535. Each port has one spelling, since it also names the socket
// rev-<port>.sock of a reverse endpoint.
func parsePort(s string) (int, error) {
	if s == "" {
		return 0, errors.New("port is empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("port %q is not a decimal number", s)
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("port %q has a leading zero", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || len(s) > 5 {
		return 0, fmt.Errorf("port %q is not in 1-65535", s)
	}
	return n, nil
}

// parsePorts parses a comma-separated list of distinct ports, "8080,9090".
func parsePorts(s string) ([]int, error) {
	if s == "" {
		return nil, errors.New("no port given")
	}
	var ports []int
	for p := range strings.SplitSeq(s, ",") {
		n, err := parsePort(p)
		if err != nil {
			return nil, err
		}
		ports = append(ports, n)
	}
	if err := distinct(ports); err != nil {
		return nil, err
	}
	return ports, nil
}

func distinct(ports []int) error {
	seen := make(map[int]bool, len(ports))
	for _, p := range ports {
		if seen[p] {
			return fmt.Errorf("port %d is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

// parseEndpoint parses a reverse endpoint, LISTENPORT=HOST:PORT, as
// tunnel.Endpoint.String writes it: the job connects to its relay on
// LISTENPORT (and the tunnel's socket is rev-LISTENPORT.sock), and the
// tunnel dials HOST:PORT in the cluster. HOST is a host name or an IP
// address, IPv6 in brackets: "6379=redis.ns:6379", "8443=[fd00::1]:443".
func parseEndpoint(s string) (tunnel.Endpoint, error) {
	listen, dest, ok := strings.Cut(s, "=")
	if !ok {
		return tunnel.Endpoint{}, fmt.Errorf("%q: want LISTENPORT=HOST:PORT", s)
	}
	lp, err := parsePort(listen)
	if err != nil {
		return tunnel.Endpoint{}, fmt.Errorf("%q: listen %w", s, err)
	}
	host, port, err := net.SplitHostPort(dest)
	if err != nil {
		return tunnel.Endpoint{}, fmt.Errorf("%q: want LISTENPORT=HOST:PORT (IPv6 addresses in brackets)", s)
	}
	if err := checkHost(host); err != nil {
		return tunnel.Endpoint{}, fmt.Errorf("%q: %w", s, err)
	}
	p, err := parsePort(port)
	if err != nil {
		return tunnel.Endpoint{}, fmt.Errorf("%q: destination %w", s, err)
	}
	return tunnel.Endpoint{ListenPort: lp, Host: host, Port: p}, nil
}

// checkHost accepts a host to connect to: an IP address that is neither
// unspecified, multicast nor zoned, or a host name (hostname.Check).
func checkHost(h string) error {
	if a, err := netip.ParseAddr(h); err == nil {
		switch {
		case a.Zone() != "":
			return fmt.Errorf("host %q: zoned addresses are not accepted", h)
		case a.IsUnspecified(), a.IsMulticast(), a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
			return fmt.Errorf("host %q: not a unicast address", h)
		}
		return nil
	}
	var he *hostname.Error
	if err := hostname.Check(h); errors.As(err, &he) {
		return fmt.Errorf("host %q is not a host name or an IP address: %s", h, he.Rule)
	}
	return nil
}

// parseHostPort parses HOST:PORT, or HOST alone when defPort is not 0.
// HOST is checked with checkHost; IPv6 addresses go in brackets.
func parseHostPort(s string, defPort int) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if defPort == 0 || strings.Contains(s, ":") && !isIPv6(s) {
			return "", fmt.Errorf("%q: want HOST:PORT (IPv6 addresses in brackets)", s)
		}
		host, port = s, strconv.Itoa(defPort)
	}
	if err := checkHost(host); err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	p, err := parsePort(port)
	if err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

func isIPv6(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6()
}

// parseListenAddr parses the address of a listener, ADDR:PORT, where ADDR is
// an IP address or empty for all addresses. Since --metrics is written as
// $(POD_IP):PORT, an IPv6 address without brackets is read up to the last
// colon: "fd00::5:9464" is [fd00::5]:9464.
func parseListenAddr(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		i := strings.LastIndexByte(s, ':')
		if i < 0 || !isIPv6(s[:i]) {
			return "", fmt.Errorf("%q: want ADDR:PORT, ADDR an IP address or empty for all", s)
		}
		host, port = s[:i], s[i+1:]
	}
	if host != "" {
		if err := checkListenIP(host); err != nil {
			return "", fmt.Errorf("%q: %w", s, err)
		}
	}
	p, err := parsePort(port)
	if err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// checkListenIP accepts an address to listen on: an IP address without a
// zone, unspecified meaning all addresses.
func checkListenIP(s string) error {
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return fmt.Errorf("address %q is not an IP address", s)
	case a.Zone() != "":
		return fmt.Errorf("address %q: zoned addresses are not accepted", s)
	case a.IsMulticast():
		return fmt.Errorf("address %q is a multicast address", s)
	}
	return nil
}

// portList is a flag.Value collecting --ports, which may be repeated.
type portList []int

func (p *portList) String() string {
	s := make([]string, len(*p))
	for i, n := range *p {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (p *portList) Set(s string) error {
	ports, err := parsePorts(s)
	if err != nil {
		return err
	}
	*p = append(*p, ports...)
	return nil
}

// endpointList is a flag.Value collecting the repeatable --forward.
type endpointList []tunnel.Endpoint

func (l *endpointList) String() string {
	s := make([]string, len(*l))
	for i, e := range *l {
		s[i] = e.String()
	}
	return strings.Join(s, " ")
}

func (l *endpointList) Set(s string) error {
	e, err := parseEndpoint(s)
	if err != nil {
		return err
	}
	*l = append(*l, e)
	return nil
}

// portValue is a flag.Value holding one port, parsed with parsePort.
type portValue int

func (p *portValue) String() string { return strconv.Itoa(int(*p)) }

func (p *portValue) Set(s string) error {
	n, err := parsePort(s)
	if err != nil {
		return err
	}
	*p = portValue(n)
	return nil
}
