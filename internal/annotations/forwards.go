package annotations

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Forward is one entry of ReverseForwards: the job connects to Host on
// ListenPort (through /etc/hosts and the relay), and the shadow dials Dial.
type Forward struct {
	// ListenPort is the port the relay listens on in the job, and the
	// number in the socket name rev-<port>.sock. It defaults to Port.
	ListenPort int
	// Host is the host as the job asked for it: the name it keeps in
	// /etc/hosts, or an IP address (see IsIP).
	Host string
	// Port is the destination port.
	Port int
	// Dial is the host:port the shadow dials in the cluster. A bare Service
	// name is qualified with the pod's namespace ("minio" becomes
	// "minio.<namespace>:9000", since the shadow runs in another namespace);
	// localhost, dotted names and IP addresses are kept. IPv6 addresses are
	// in brackets. Dial holds only letters, digits, '.', '-', ':', '[' and
	// ']', so it is safe in a shell line and an ssh request.
	Dial string
}

// IsIP reports whether Host is an IP address rather than a name. An address
// cannot be mapped in /etc/hosts: the workload reaches it on the relay
// address and ListenPort.
func (f Forward) IsIP() bool {
	_, err := netip.ParseAddr(f.Host)
	return err == nil
}

// String returns the entry in its canonical form, listenport:host:port,
// which ParseForwards reads back to f.
func (f Forward) String() string {
	return strconv.Itoa(f.ListenPort) + ":" + net.JoinHostPort(f.Host, strconv.Itoa(f.Port))
}

// ParseForwards parses the value of ReverseForwards for a pod of podNamespace.
//
// Entries are separated by any mix of spaces, tabs, newlines and commas;
// repeated separators are fine, and a value without entries asks for none.
// Each entry is host:port or listenport:host:port. Hosts are DNS names (see
// checkName: the project's host-name rule, case-insensitive, at most 253
// characters, no trailing dot) or IP addresses, IPv6 in brackets: "[fd00::1]:443",
// "8443:[::1]:443". Ports are decimal 1-65535 without sign or leading zeros.
// No two entries may listen on the same port, and there are at most
// MaxForwards.
//
// Errors are *Refusal, naming the annotation, the entry and the rule.
// podNamespace must be a DNS label when the value holds any entry; it
// qualifies bare Service names in Dial.
func ParseForwards(value, podNamespace string) ([]Forward, error) {
	entries := splitEntries(value)
	if len(entries) == 0 {
		return nil, nil
	}
	if len(entries) > MaxForwards {
		return nil, tooManyForwards(len(entries))
	}
	if errs := validation.IsDNS1123Label(podNamespace); len(errs) > 0 {
		return nil, fmt.Errorf("parse %s: pod namespace %s is not a DNS label", ReverseForwards, quoted(podNamespace))
	}
	forwards := make([]Forward, 0, len(entries))
	seen := make(map[int]bool, len(entries))
	for _, e := range entries {
		f, rule := parseEntry(e, podNamespace)
		if rule != "" {
			return nil, refuseEntry(ReasonMalformed, ReverseForwards, e, "%s", rule)
		}
		if seen[f.ListenPort] {
			return nil, refuseEntry(ReasonPortRepeats, ReverseForwards, e, "port %d repeats", f.ListenPort)
		}
		seen[f.ListenPort] = true
		forwards = append(forwards, f)
	}
	return forwards, nil
}

// splitEntries splits value on ASCII whitespace and commas, dropping empty
// fields.
func splitEntries(value string) []string {
	return strings.FieldsFunc(value, func(r rune) bool {
		switch r {
		case ' ', '\t', '\n', '\r', '\v', '\f', ',':
			return true
		}
		return false
	})
}

// parseEntry parses one entry, returning the rule broken or "".
func parseEntry(e, namespace string) (Forward, string) {
	listen, host, port, bracketed, rule := splitEntry(e)
	if rule != "" {
		return Forward{}, rule
	}
	var f Forward
	if f.Port, rule = parsePort(port); rule != "" {
		return Forward{}, rule
	}
	f.ListenPort = f.Port
	if listen != nil {
		if f.ListenPort, rule = parsePort(*listen); rule != "" {
			return Forward{}, "listen " + rule
		}
	}
	dialHost, rule := checkHost(host, bracketed, namespace)
	if rule != "" {
		return Forward{}, rule
	}
	f.Host = host
	f.Dial = net.JoinHostPort(dialHost, strconv.Itoa(f.Port))
	return f, ""
}

// splitEntry cuts an entry into its optional listen port, host and port.
// bracketed tells that the host was written in brackets.
func splitEntry(e string) (listen *string, host, port string, bracketed bool, rule string) {
	const syntax = "want host:port or listenport:host:port"
	if i := strings.IndexByte(e, '['); i >= 0 {
		if i > 0 {
			if e[i-1] != ':' {
				return nil, "", "", false, syntax + " (IPv6 in brackets)"
			}
			l := e[:i-1]
			listen = &l
		}
		rest := e[i+1:]
		j := strings.IndexByte(rest, ']')
		if j < 0 || !strings.HasPrefix(rest[j+1:], ":") {
			return nil, "", "", false, syntax + " (IPv6 in brackets)"
		}
		return listen, rest[:j], rest[j+2:], true, ""
	}
	parts := strings.Split(e, ":")
	if len(parts) > 3 || strings.Contains(e, "::") {
		return nil, "", "", false, syntax + "; IPv6 addresses go in brackets: [fd00::1]:443"
	}
	switch len(parts) {
	case 2:
		return nil, parts[0], parts[1], false, ""
	case 3:
		return &parts[0], parts[1], parts[2], false, ""
	}
	return nil, "", "", false, syntax
}

// checkHost checks host and returns the host the shadow dials.
func checkHost(host string, bracketed bool, namespace string) (string, string) {
	if bracketed {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return "", "brackets must hold an IPv6 address"
		}
		if rule := checkIP(a); rule != "" {
			return "", rule
		}
		return host, ""
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return host, checkIP(a)
	}
	if rule := checkName(host); rule != "" {
		return "", rule
	}
	if isBareName(host) {
		return host + "." + namespace, ""
	}
	return host, ""
}
